// run.init (start_points.hpp).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <utility>
#include <fmt/format.h>

#include "run_folder.hpp"
#include "start_points.hpp"

namespace fs = std::filesystem;

namespace {

/// The files the chains start from: a run folder's chain-<k>.csv in order, or the one file named.
std::vector<fs::path> start_files(const fs::path& init, const std::string& key) {
  if (!fs::exists(init))
    throw sgmcmc::Error(fmt::format("{}: '{}' does not exist; expected a run folder or a CSV file of parameter values", key,
                                    init.string()));
  if (!fs::is_directory(init)) return {init};
  std::vector<fs::path> files;
  for (const auto& [k, path] : numbered_files(init, run_folder::chain_prefix, key)) files.push_back(path);
  if (files.empty())
    throw sgmcmc::Error(fmt::format("{}: the folder '{}' holds no chain-<k>.csv; expected a run folder or a CSV file", key,
                                    init.string()));
  return files;
}

/// Which row of a file a chain starts from: one draw (1-based, 0 = the last), or the mean of all.
struct Choice {
  std::int64_t draw = 0;
  bool mean = false;
};

/// Rows [first, last) of `path`: the chosen draw, or every draw for the mean.
std::pair<std::size_t, std::size_t> chosen_rows(const sgmcmc::StanCsv& csv, Choice choice, const std::string& file) {
  if (csv.rows.empty()) throw sgmcmc::Error(fmt::format("{}: no draws (only a header)", file));
  if (choice.mean) return {0, csv.rows.size()};
  if (static_cast<std::size_t>(choice.draw) > csv.rows.size())
    throw sgmcmc::Error(fmt::format("{}: run.init_draw = {}, but the file holds {} draws", file, choice.draw, csv.rows.size()));
  const std::size_t row = choice.draw == 0 ? csv.rows.size() - 1 : static_cast<std::size_t>(choice.draw) - 1;
  return {row, row + 1};
}

/// The chosen draw (or mean) of `path`, one value per parameter of `model`, checked.
StartPoint read_start(const fs::path& path, Choice choice, const sgmcmc::Model& model, const std::string& key) {
  const auto csv = sgmcmc::read_stan_csv(path);
  const std::string file = fmt::format("{}: {}", key, path.string());
  const auto [first, last] = chosen_rows(csv, choice, file);

  const auto names = model.parameter_names();
  std::vector<std::string> missing;
  StartPoint start{std::vector<double>(names.size()),
                   choice.mean ? fmt::format("{}, mean of its {} draws", path.string(), csv.rows.size())
                               : fmt::format("{}, draw {} of {}", path.string(), first + 1, csv.rows.size())};
  for (std::size_t j = 0; j < names.size(); ++j) {
    const auto column = std::find(csv.columns.begin(), csv.columns.end(), names[j]);
    if (column == csv.columns.end()) {
      missing.push_back(names[j]);
      continue;
    }
    double sum = 0.0;
    for (std::size_t row = first; row < last; ++row) {
      const double value = csv.rows[row][static_cast<std::size_t>(column - csv.columns.begin())];
      if (!std::isfinite(value) || (model.capabilities().positive_parameters && value <= 0.0))
        throw sgmcmc::Error(fmt::format("{}: draw {}, column '{}' is {}; the model's parameters must be finite{}", file, row + 1,
                                        names[j], value, model.capabilities().positive_parameters ? " and > 0" : ""));
      sum += value;
    }
    start.theta[j] = sum / static_cast<double>(last - first);
  }
  if (!missing.empty())
    throw sgmcmc::Error(fmt::format("{}: no column for the parameter '{}'{}; a start needs every one of the model's {} "
                                    "parameters (a run written with [output] parameters holds only some)",
                                    file, missing.front(),
                                    missing.size() > 1 ? fmt::format(" (nor for {} more)", missing.size() - 1) : "",
                                    names.size()));
  return start;
}

}  // namespace

std::vector<StartPoint> read_start_points(const sgmcmc::Settings& run, const sgmcmc::Model& model, std::uint64_t chains) {
  if (!run.contains("init")) return {};
  const std::string key = run.describe("init");
  const fs::path init = run.text("init", "");
  Choice choice;
  if (run.contains("init_mean")) choice.mean = run.flag("init_mean", false);
  if (choice.mean && run.contains("init_draw"))
    throw sgmcmc::Error(fmt::format("{}: a start is one draw or the mean of all (run.init_mean = true); remove one of the two",
                                    run.describe("init_draw")));
  if (!choice.mean) choice.draw = run.integer_at_least("init_draw", 0, 0);
  if (init.empty()) throw sgmcmc::Error(fmt::format("{}: expected a run folder or a CSV file, found \"\"", key));
  const auto files = start_files(init, key);
  // Each file is read once; chains beyond the folder's count cycle over its chains.
  std::map<std::size_t, StartPoint> read;
  std::vector<StartPoint> starts;
  for (std::uint64_t k = 0; k < chains; ++k) {
    const std::size_t f = k % files.size();
    if (!read.contains(f)) read.emplace(f, read_start(files[f], choice, model, key));
    starts.push_back(read.at(f));
  }
  return starts;
}
