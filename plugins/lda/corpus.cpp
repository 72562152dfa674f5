#include "corpus.hpp"

#include <charconv>
#include <cstdint>
#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>
#include <fmt/format.h>

#include "../regression/npy.hpp"

import sgmcmc.sdk;

namespace lda {
namespace {

/// The whitespace-separated fields of a line.
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = line.find_first_not_of(" \t");
  while (start != std::string_view::npos) {
    const std::size_t end = std::min(line.find_first_of(" \t", start), line.size());
    fields.push_back(line.substr(start, end - start));
    start = line.find_first_not_of(" \t", end);
  }
  return fields;
}

bool parse_integer(std::string_view text, std::int64_t& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

/// One header line: a single positive integer (what it counts is `what`).
std::size_t header_count(sgmcmc::TextLines& in, std::string& line, const char* what) {
  if (!in.next(line))
    throw sgmcmc::Error(fmt::format("{}: the file ends in the header; expected three lines D, W, NNZ, then "
                                    "`docID wordID count` lines (UCI bag of words)",
                                    in.where()));
  const auto fields = fields_of(line);
  std::int64_t value = 0;
  if (fields.size() != 1 || !parse_integer(fields[0], value) || value < 1)
    throw sgmcmc::Error(fmt::format("{}: expected {} (a positive integer) on this header line, found '{}'", in.where(), what,
                                    line));
  return static_cast<std::size_t>(value);
}

std::int64_t body_field(std::string_view text, const char* what, std::int64_t low, std::int64_t high,
                        const sgmcmc::TextLines& in) {
  std::int64_t value = 0;
  if (!parse_integer(text, value))
    throw sgmcmc::Error(fmt::format("{}: {} '{}' is not an integer", in.where(), what, text));
  if (value < low || value > high)
    throw sgmcmc::Error(fmt::format("{}: {} {} is outside {}..{}{}", in.where(), what, value, low, high,
                                    high == INT64_MAX ? "" : " (declared in the header)"));
  return value;
}

/// The corpus's tokens as they are read. Every token is held as a word id in the training set, and
/// a document's tokens are listed again with a topic each while the Gibbs step sweeps it: 12 bytes
/// a token. A count no memory can hold is refused where it is read, before anything of that size
/// is allocated.
class TokenBudget {
public:
  /// Adds `count` tokens; beyond the memory budget, throws naming where() (called then only).
  template <class Where>
  void add(std::uint64_t count, Where where) {
    tokens_ += count;
    if (limit_ != 0 && tokens_ > limit_)
      throw sgmcmc::Error(fmt::format("{}: count {} brings the corpus to {} tokens, which need {:.3g} GB ({} bytes a "
                                      "token), more than {}",
                                      where(), count, tokens_, static_cast<double>(tokens_) * bytes_per_token / 1e9,
                                      bytes_per_token, sgmcmc::memory_budget_description()));
  }

private:
  static constexpr std::size_t bytes_per_token = 3 * sizeof(std::uint32_t);
  std::size_t limit_ = sgmcmc::memory_budget_bytes() / bytes_per_token, tokens_ = 0;
};

/// Declared documents ids from..to-1 have no word: counted, and the first few kept for the note.
void note_empty(Corpus& corpus, std::size_t from, std::size_t to) {
  corpus.empty_documents += to - from;
  for (std::size_t id = from; id < to && corpus.first_empty_ids.size() < 5; ++id) corpus.first_empty_ids.push_back(id);
}

/// The file of the 1-D array `name` of a .csr folder, which messages name.
std::string array_path(const std::string& folder, const char* name) {
  return (std::filesystem::path(folder) / (std::string(name) + ".npy")).string();
}

/// `sgmcmc convert --docword`'s layout (corpus.hpp): documents × words counts as a CSR folder.
Corpus read_bag_of_words_csr(const std::string& folder) {
  namespace npy = regression::npy;
  if (!std::filesystem::is_directory(folder))
    throw sgmcmc::Error(fmt::format("{}: not a folder; a .csr corpus is a folder of indptr.npy, indices.npy, data.npy and "
                                    "shape.npy (sgmcmc convert --docword)",
                                    folder));
  const auto file = [&](const char* name) { return array_path(folder, name); };
  const auto integers = [&](const char* name, std::size_t entries, const char* what) {
    npy::MappedArray array(file(name));
    if (array.dimensions() != 1 || (array.dtype() != npy::Dtype::int64 && array.dtype() != npy::Dtype::int32))
      throw sgmcmc::Error(fmt::format("{}: a {}-D '{}' array; expected a 1-D array of '<i8' or '<i4' whole numbers ({})",
                                      file(name), array.dimensions(), npy::descr(array.dtype()), what));
    if (entries != SIZE_MAX && array.rows() != entries)
      throw sgmcmc::Error(fmt::format("{}: {} entries; expected {} ({})", file(name), array.rows(), entries, what));
    return array;
  };
  const auto shape = integers("shape", 2, "D documents, W words");
  if (shape.integer(0) < 1 || shape.integer(1) < 1 || shape.integer(1) > static_cast<std::int64_t>(UINT32_MAX))
    throw sgmcmc::Error(fmt::format("{}: ({}, {}); expected D ≥ 1 documents and 1 ≤ W ≤ {} words", file("shape"),
                                    shape.integer(0), shape.integer(1), std::uint64_t{UINT32_MAX}));
  const auto documents = static_cast<std::size_t>(shape.integer(0));
  const auto words = static_cast<std::int64_t>(shape.integer(1));
  const auto indptr = integers("indptr", documents + 1, "D + 1 offsets");
  const auto indices = integers("indices", SIZE_MAX, "each count's word, 0-based");
  const auto counts = integers("data", indices.rows(), "one count per word index");
  const auto nonzeros = static_cast<std::int64_t>(indices.rows());
  if (indptr.integer(0) != 0 || indptr.integer(documents) != nonzeros)
    throw sgmcmc::Error(fmt::format("{}: from {} to {}; expected from 0 to {}, the entries of {}", file("indptr"),
                                    indptr.integer(0), indptr.integer(documents), nonzeros, file("indices")));
  Corpus corpus;
  corpus.words = static_cast<std::size_t>(words);
  TokenBudget tokens;
  for (std::size_t d = 0; d < documents; ++d) {
    const std::int64_t from = indptr.integer(d), to = indptr.integer(d + 1);
    if (to < from || to > nonzeros)
      throw sgmcmc::Error(fmt::format("{}: indptr[{}] = {} after indptr[{}] = {}; expected a non-decreasing sequence", file("indptr"),
                                      d + 1, to, d, from));
    if (from == to) {
      note_empty(corpus, d + 1, d + 2);
      continue;
    }
    std::vector<WordCount> document;
    for (std::int64_t k = from; k < to; ++k) {
      const std::int64_t word = indices.integer(static_cast<std::size_t>(k)), count = counts.integer(static_cast<std::size_t>(k));
      if (word < 0 || word >= words || (!document.empty() && word <= static_cast<std::int64_t>(document.back().word)))
        throw sgmcmc::Error(fmt::format("{}: indices[{}] = {} (document {}); expected a word in 0..{}, increasing along a "
                                        "document",
                                        file("indices"), k, word, d + 1, words - 1));
      if (count < 1 || count > static_cast<std::int64_t>(UINT32_MAX))
        throw sgmcmc::Error(fmt::format("{}: data[{}] = {}; expected a count in 1..{}", file("data"), k, count,
                                        std::uint64_t{UINT32_MAX}));
      tokens.add(static_cast<std::uint64_t>(count), [&] { return fmt::format("{}: data[{}]", file("data"), k); });
      document.push_back({static_cast<std::uint32_t>(word), static_cast<std::uint32_t>(count)});
    }
    corpus.documents.push_back(std::move(document));
    corpus.ids.push_back(d + 1);
  }
  if (corpus.documents.empty()) throw sgmcmc::Error(fmt::format("{}: no document has any word", folder));
  return corpus;
}

}  // namespace

Corpus read_bag_of_words(const std::string& path) {
  if (regression::binary_layout(path) == regression::BinaryLayout::sparse_csr) return read_bag_of_words_csr(path);
  sgmcmc::TextLines in(path);
  std::string line;
  const std::size_t documents = header_count(in, line, "D, the number of documents");
  const std::size_t words = header_count(in, line, "W, the number of words");
  if (words > UINT32_MAX)  // word ids are held in 32 bits: a larger one would be cut and merged into another
    throw sgmcmc::Error(fmt::format("{}: W = {} words; at most {} word ids can be told apart", in.where(), words,
                                    std::uint64_t{UINT32_MAX}));
  const std::size_t declared_entries = header_count(in, line, "NNZ, the number of `docID wordID count` lines");
  struct Entry {
    std::size_t document;
    std::uint32_t word;
    std::uint32_t count;
    std::size_t line;
  };
  std::vector<Entry> entries;  // as many as the file has lines, whatever the header declares
  TokenBudget tokens;
  while (in.next(line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // a trailing blank line
    if (entries.size() == declared_entries)
      throw sgmcmc::Error(fmt::format("{}: more `docID wordID count` lines than the {} declared on line 3 (NNZ)",
                                      in.where(), declared_entries));
    const auto fields = fields_of(line);
    if (fields.size() != 3)
      throw sgmcmc::Error(fmt::format("{}: {} field(s); expected `docID wordID count`", in.where(), fields.size()));
    const auto doc = body_field(fields[0], "document id", 1, static_cast<std::int64_t>(documents), in);
    const auto word = body_field(fields[1], "word id", 1, static_cast<std::int64_t>(words), in);
    const auto count = body_field(fields[2], "count", 1, INT64_MAX, in);
    if (count > UINT32_MAX) throw sgmcmc::Error(fmt::format("{}: count {} is too large", in.where(), count));
    tokens.add(static_cast<std::uint64_t>(count), [&] { return in.where(); });
    entries.push_back({static_cast<std::size_t>(doc), static_cast<std::uint32_t>(word - 1),
                       static_cast<std::uint32_t>(count), in.line_number()});
  }
  if (entries.size() != declared_entries)
    throw sgmcmc::Error(fmt::format("{}: {} `docID wordID count` line(s), but line 3 declares NNZ = {} (a truncated "
                                    "file?)",
                                    in.where(), entries.size(), declared_entries));

  // Documents in id order, words in id order within each; a (doc, word) pair on two lines adds.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.document, a.word, a.line) < std::tie(b.document, b.word, b.line);
  });
  Corpus corpus;
  corpus.words = words;
  std::size_t previous_id = 0;  // ids between two listed documents are declared but empty
  for (const Entry& entry : entries) {
    if (entry.document != previous_id) {
      note_empty(corpus, previous_id + 1, entry.document);
      corpus.documents.emplace_back();
      corpus.ids.push_back(entry.document);
      previous_id = entry.document;
    }
    auto& document = corpus.documents.back();
    if (!document.empty() && document.back().word == entry.word) {
      if (entry.count > UINT32_MAX - document.back().count)
        throw sgmcmc::Error(fmt::format("{}:{}: word {} of document {} reaches more than {} tokens over its lines", path,
                                        entry.line, entry.word + 1, entry.document, UINT32_MAX));
      document.back().count += entry.count;
    } else {
      document.push_back({entry.word, entry.count});
    }
  }
  note_empty(corpus, previous_id + 1, documents + 1);
  if (corpus.documents.empty()) throw sgmcmc::Error(fmt::format("{}: no document has any word", path));
  return corpus;
}

void write_bag_of_words_csr(const Corpus& corpus, const std::string& folder) {
  namespace npy = regression::npy;
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) throw sgmcmc::Error(fmt::format("{}: cannot create the folder ({})", folder, error.message()));
  const std::size_t documents = corpus.documents.size() + corpus.empty_documents;  // every declared id 1..D
  std::vector<double> indptr{0.0}, indices, counts;
  std::size_t next = 0;  // the next listed document
  for (std::size_t id = 1; id <= documents; ++id) {
    if (next < corpus.ids.size() && corpus.ids[next] == id) {
      for (const auto& entry : corpus.documents[next]) {
        indices.push_back(entry.word);
        counts.push_back(entry.count);
      }
      ++next;
    }
    indptr.push_back(static_cast<double>(indices.size()));
  }
  const auto file = [&](const char* name) { return array_path(folder, name); };
  const std::size_t pair[] = {2}, offsets[] = {indptr.size()}, entries[] = {indices.size()};
  const double shape[] = {static_cast<double>(documents), static_cast<double>(corpus.words)};
  npy::write(file("shape"), npy::Dtype::int64, pair, shape);
  npy::write(file("indptr"), npy::Dtype::int64, offsets, indptr);
  // scipy's own choice: 32-bit word indices while the vocabulary fits.
  npy::write(file("indices"), corpus.words <= std::size_t{INT32_MAX} ? npy::Dtype::int32 : npy::Dtype::int64, entries, indices);
  npy::write(file("data"), npy::Dtype::int64, entries, counts);
}

std::vector<std::size_t> most_frequent_words(const Corpus& corpus, std::size_t size) {
  std::unordered_map<std::uint32_t, std::uint64_t> totals;  // present words only: W may be far larger
  for (const auto& document : corpus.documents)
    for (const auto& entry : document) totals[entry.word] += entry.count;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> ranked(totals.begin(), totals.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  });
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < std::min(size, ranked.size()); ++i) kept.push_back(ranked[i].first + std::size_t{1});
  for (std::uint32_t word = 0; kept.size() < size; ++word)
    if (!totals.contains(word)) kept.push_back(word + std::size_t{1});
  std::sort(kept.begin(), kept.end());
  return kept;
}

std::size_t keep_words(Corpus& corpus, const std::vector<std::size_t>& word_ids) {
  std::unordered_map<std::uint32_t, std::uint32_t> column;
  for (std::size_t v = 0; v < word_ids.size(); ++v) column[static_cast<std::uint32_t>(word_ids[v] - 1)] = static_cast<std::uint32_t>(v);
  std::size_t kept_documents = 0;
  for (std::size_t d = 0; d < corpus.documents.size(); ++d) {
    std::vector<WordCount> kept;
    for (const auto& entry : corpus.documents[d])
      if (const auto found = column.find(entry.word); found != column.end()) kept.push_back({found->second, entry.count});
    if (kept.empty()) continue;
    corpus.documents[kept_documents] = std::move(kept);
    corpus.ids[kept_documents++] = corpus.ids[d];
  }
  const std::size_t removed = corpus.documents.size() - kept_documents;
  corpus.documents.resize(kept_documents);
  corpus.ids.resize(kept_documents);
  corpus.words = word_ids.size();
  return removed;
}

}  // namespace lda
