// `sgmcmc topics DIR`: the top words of each topic of an `lda` run, from the posterior mean of
// π_k = θ_k / θ_k· over every draw of every chain (the mean of the normalised draws, not the
// normalised mean of θ: π is what the model's likelihood reads).
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "run_folder.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

/// The model's name from the run's manifest.json; a folder without one is not a finished run.
std::string model_of(const fs::path& folder) {
  std::ifstream in(folder / run_folder::manifest);
  if (!in) throw sgmcmc::Error(fmt::format("topics: {}: no manifest.json (not a finished run folder)", folder.string()));
  try {
    return nlohmann::json::parse(in).at("model").at("name").get<std::string>();
  } catch (const nlohmann::json::exception& error) {
    throw sgmcmc::Error(fmt::format("topics: {}: unreadable manifest.json ({})", (folder / run_folder::manifest).string(), error.what()));
  }
}

/// (k, w) of a column "theta.<k>.<w>", both 1-based; nothing for any other column.
std::optional<std::pair<std::size_t, std::size_t>> topic_word(std::string_view name) {
  if (!name.starts_with("theta.")) return std::nullopt;
  name.remove_prefix(6);
  const auto dot = name.find('.');
  std::size_t k = 0, w = 0;
  const auto parse = [](std::string_view text, std::size_t& value) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    return error == std::errc() && end == text.data() + text.size() && value > 0;
  };
  if (dot == std::string_view::npos || !parse(name.substr(0, dot), k) || !parse(name.substr(dot + 1), w)) return std::nullopt;
  return std::pair{k, w};
}

/// The vocabulary file: one line per word id of the data file. A run of every word (ids 1..W) needs
/// exactly W lines; a run of the most frequent words (model.vocabulary_size) at least its highest id.
std::vector<std::string> read_vocabulary(const fs::path& path, std::size_t highest_id, bool every_word) {
  sgmcmc::TextLines in(path);
  std::vector<std::string> vocabulary;
  for (std::string line; in.next(line);) vocabulary.push_back(line);
  while (!vocabulary.empty() && vocabulary.back().empty()) vocabulary.pop_back();
  if (every_word ? vocabulary.size() != highest_id : vocabulary.size() < highest_id)
    throw sgmcmc::Error(fmt::format("topics: {}: {} word(s), one per line; the run's model has {} {} words", path.string(),
                                    vocabulary.size(), every_word ? "W =" : "word ids up to", highest_id));
  return vocabulary;
}

}  // namespace

int topics_command(const fs::path& folder, std::size_t top, const std::optional<fs::path>& vocabulary_file) {
  if (const auto model = model_of(folder); model != "lda")
    throw sgmcmc::Error(fmt::format("topics: {} is a run of model '{}'; topics are shown for 'lda' runs only", folder.string(), model));
  const Chains chains = read_chains(folder, "topics", 1);
  std::size_t topics = 0, words = 0;
  std::vector<std::pair<std::size_t, std::size_t>> cell(chains.columns.size());  // (k, w), 0-based; k = -1: not θ
  for (std::size_t c = 0; c < chains.columns.size(); ++c) {
    const auto kw = topic_word(chains.columns[c]);
    cell[c] = kw ? std::pair{kw->first - 1, kw->second - 1} : std::pair{SIZE_MAX, SIZE_MAX};
    if (kw) topics = std::max(topics, kw->first), words = std::max(words, kw->second);
  }
  if (topics == 0) throw sgmcmc::Error(fmt::format("topics: {}: no theta.<k>.<w> columns in the chain files", folder.string()));
  // model.vocabulary_size keeps some word ids only: the others' π stays 0 and is never shown.
  const auto kept_words = static_cast<std::size_t>(std::count_if(cell.begin(), cell.end(), [](const auto& kw) { return kw.first == 0; }));

  // mean_pi[k·W + w] = mean over draws of θ_kw / θ_k·.
  std::vector<double> mean_pi(topics * words, 0.0), theta(topics * words), row_sum(topics);
  std::size_t draws = 0;
  for (const auto& file : chains.files)
    for (const auto& row : file.rows) {
      std::fill(row_sum.begin(), row_sum.end(), 0.0);
      for (std::size_t c = 0; c < row.size(); ++c)
        if (cell[c].first != SIZE_MAX) {
          theta[cell[c].first * words + cell[c].second] = row[c];
          row_sum[cell[c].first] += row[c];
        }
      for (std::size_t k = 0; k < topics; ++k)
        for (std::size_t w = 0; w < words; ++w) mean_pi[k * words + w] += theta[k * words + w] / row_sum[k];
      ++draws;
    }
  for (double& p : mean_pi) p /= static_cast<double>(draws);

  const auto vocabulary =
      vocabulary_file ? read_vocabulary(*vocabulary_file, words, kept_words == words) : std::vector<std::string>{};
  fmt::print("{} topics over {} words: posterior mean of π from {} draw(s){}\n", topics, kept_words, draws,
             vocabulary.empty() ? "; word ids as in the data file (--vocab FILE shows words)" : "");
  std::vector<std::size_t> order(words);
  for (std::size_t k = 0; k < topics; ++k) {
    const double* pi = &mean_pi[k * words];
    std::iota(order.begin(), order.end(), std::size_t{0});
    const std::size_t shown = std::min(top, kept_words);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(),
                      [&](std::size_t a, std::size_t b) { return pi[a] > pi[b] || (pi[a] == pi[b] && a < b); });
    std::string line;
    for (std::size_t i = 0; i < shown; ++i)
      line += fmt::format("{}{} ({:.3f})", i ? ", " : "", vocabulary.empty() ? std::to_string(order[i] + 1) : vocabulary[order[i]],
                          pi[order[i]]);
    fmt::print("topic {}: {}\n", k + 1, line);
  }
  return 0;
}

Command add_topics_command(CLI::App& app) {
  struct Options {
    fs::path folder;
    std::size_t top = 10;
    std::optional<fs::path> vocabulary;
  };
  const auto topics = std::make_shared<Options>();
  auto* command = app.add_subcommand("topics", "the top words of each topic of an lda run (posterior mean of π)");
  command->footer("Example: sgmcmc topics runs/kos --top 10 --vocab vocab.kos.txt");
  command->add_option("folder", topics->folder, "an lda run's output folder")->required();
  command->add_option("--top", topics->top, "words per topic (10)")->check(at_least_one);
  command->add_option("--vocab", topics->vocabulary, "a vocabulary file, word k on line k (UCI vocab.<name>.txt)");
  return {command, [topics] { return topics_command(topics->folder, topics->top, topics->vocabulary); }};
}
