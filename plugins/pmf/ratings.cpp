#include "ratings.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>
#include <fmt/format.h>

#include "../regression/npy.hpp"

import sgmcmc.sdk;

namespace pmf {
namespace {

/// The fields of a line split on tabs, commas, semicolons and spaces (runs of spaces are one
/// separator; MovieLens' u.data is tab-separated, ml-latest's ratings.csv comma-separated).
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  constexpr std::string_view separators = "\t,; ";
  std::size_t start = 0;
  while (start <= line.size()) {
    const auto end = std::min(line.find_first_of(separators, start), line.size());
    const auto field = line.substr(start, end - start);
    if (!field.empty() || (end < line.size() && line[end] != ' ')) fields.push_back(field);
    start = end + 1;
  }
  return fields;
}

bool blank(std::string_view line) { return line.find_first_not_of(" \t") == std::string_view::npos; }

std::int64_t parse_id(std::string_view text, const char* what, const sgmcmc::TextLines& in) {
  std::int64_t id = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (error != std::errc() || end != text.data() + text.size() || id < 0)
    throw sgmcmc::Error(fmt::format("{}: {} id '{}' is not a non-negative integer", in.where(), what, text));
  return id;
}

double parse_rating(std::string_view text, RatingRange range, const sgmcmc::TextLines& in) {
  double rating = 0.0;
  if (const auto kind = sgmcmc::read_number_field(text, rating); kind != sgmcmc::NumberField::finite)
    throw sgmcmc::Error(fmt::format("{}: rating {}", in.where(), sgmcmc::number_field_problem(kind, text)));
  if (rating < range.min || rating > range.max)
    throw sgmcmc::Error(fmt::format("{}: rating {} is outside the declared range [{}, {}] (model.rating_min, "
                                    "model.rating_max)",
                                    in.where(), text, range.min, range.max));
  return rating;
}

/// `sgmcmc convert --ratings`'s layout: one 2-D NumPy array, ratings × (user, item, rating), float64
/// or float32 (../regression/npy.hpp): its header, checked.
regression::npy::Header triples_npy_header(const std::string& path) {
  const auto header = regression::npy::read_header(path);
  if (header.shape.size() != 2 || header.columns() != 3 ||
      (header.dtype != regression::npy::Dtype::float64 && header.dtype != regression::npy::Dtype::float32))
    throw sgmcmc::Error(fmt::format("{}: a {}-D '{}' array of {} column(s); expected 2-D '<f8' or '<f4', rows × (user, "
                                    "item, rating)",
                                    path, header.shape.size(), regression::npy::descr(header.dtype), header.columns()));
  return header;
}

/// Row i of that layout, checked: ids whole numbers ≥ 0 and below 2^53 (where float64 holds every
/// integer), the rating finite and in `range`; each refusal names the file and the array element.
void check_triple(const std::string& path, std::size_t i, const double* row, RatingRange range) {
  for (int j = 0; j < 2; ++j)
    if (!(row[j] >= 0.0 && row[j] < 0x1p53 && row[j] == std::floor(row[j])))
      throw sgmcmc::Error(fmt::format("{}: a[{}, {}] = {}: the {} id is not a non-negative integer", path, i, j, row[j],
                                      j == 0 ? "user" : "item"));
  if (!std::isfinite(row[2]) || row[2] < range.min || row[2] > range.max)
    throw sgmcmc::Error(fmt::format("{}: a[{}, 2] = {}: the rating is {}", path, i, row[2],
                                    std::isfinite(row[2]) ? fmt::format("outside the declared range [{}, {}] (model.rating_min, "
                                                                        "model.rating_max)", range.min, range.max)
                                                          : std::string("not finite")));
}

/// The layout read by mapping it, every row kept.
RatingTriples read_triples_npy(const std::string& path, RatingRange range) {
  triples_npy_header(path);
  const regression::npy::MappedArray array(path);
  RatingTriples triples;
  double row[3];
  for (std::size_t i = 0; i < array.rows(); ++i) {
    array.row_as_double(i, row);
    check_triple(path, i, row, range);
    triples.push_back(static_cast<std::int64_t>(row[0]), static_cast<std::int64_t>(row[1]), row[2], i + 1);
  }
  if (triples.size() == 0) throw sgmcmc::Error(fmt::format("{}: no ratings in the file", path));
  sgmcmc::note_rows_read(path, triples.size(), false);
  return triples;
}

}  // namespace

RatingTriples read_triples(const std::string& path, RatingRange range) {
  if (regression::binary_layout(path) == regression::BinaryLayout::dense_npy) return read_triples_npy(path, range);
  sgmcmc::TextLines in(path);
  RatingTriples triples;
  bool header = false;
  std::string line;
  while (in.next(line)) {
    if (blank(line))
      throw sgmcmc::Error(fmt::format("{}: empty line; every line must be `user item rating` (then anything)", in.where()));
    const auto fields = fields_of(line);
    if (in.line_number() == 1 && sgmcmc::is_header(fields)) {
      header = true;
      continue;
    }
    if (fields.size() < 3)
      throw sgmcmc::Error(fmt::format("{}: a short row of {} field{}; expected `user item rating`", in.where(),
                                      fields.size(), fields.size() == 1 ? "" : "s"));
    const auto user = parse_id(fields[0], "user", in);
    const auto item = parse_id(fields[1], "item", in);
    triples.push_back(user, item, parse_rating(fields[2], range, in), in.line_number());
  }
  if (triples.size() == 0) throw sgmcmc::Error(fmt::format("{}: no ratings in the file", path));
  sgmcmc::note_rows_read(path, triples.size(), header);
  return triples;
}

std::size_t triples_npy_rows(const std::string& path) { return triples_npy_header(path).rows(); }

void for_each_triple_npy(const std::string& path, RatingRange range, const TripleVisitor& visit) {
  triples_npy_header(path);
  regression::npy::RowReader reader(path);
  const std::size_t rows = reader.header().rows();
  constexpr std::size_t block_rows = 1 << 16;  // 1.5 MB of float64 triples a read
  std::vector<double> block;
  for (std::size_t first = 0; first < rows; first += block_rows) {
    const std::size_t count = std::min(block_rows, rows - first);
    reader.read(first, count, block);
    for (std::size_t k = 0; k < count; ++k) {
      const double* row = &block[3 * k];
      check_triple(path, first + k, row, range);
      visit(first + k, static_cast<std::int64_t>(row[0]), static_cast<std::int64_t>(row[1]), row[2]);
    }
  }
  sgmcmc::note_rows_read(path, rows, false);
}

void write_triples_npy(const RatingTriples& triples, const std::string& path) {
  std::vector<double> values;
  values.reserve(3 * triples.size());
  for (std::size_t k = 0; k < triples.size(); ++k)
    values.insert(values.end(), {static_cast<double>(triples.user[k]), static_cast<double>(triples.item[k]), triples.rating[k]});
  const std::size_t shape[] = {triples.size(), 3};
  regression::npy::write(path, regression::npy::Dtype::float64, shape, values);
}

std::vector<std::int64_t> first_users(const RatingTriples& triples, std::size_t count) {
  const std::set<std::int64_t> all(triples.user.begin(), triples.user.end());
  std::vector<std::int64_t> ids(all.begin(), all.end());
  if (ids.size() > count) ids.resize(count);
  return ids;
}

RatingTriples keep_users(const RatingTriples& triples, const std::vector<std::int64_t>& ids) {
  RatingTriples kept;
  for (std::size_t k = 0; k < triples.size(); ++k)
    if (std::binary_search(ids.begin(), ids.end(), triples.user[k]))
      kept.push_back(triples.user[k], triples.item[k], triples.rating[k], triples.line[k]);
  return kept;
}

}  // namespace pmf
