// run.init (start_points.hpp).
#include <cmath>
#include <filesystem>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <fmt/format.h>

#include "run_folder.hpp"
#include "start_points.hpp"

namespace fs = std::filesystem;

namespace {

using Choice = sgmcmc::StartChoice;  // run.init's keys (sgmcmc.run_section)

/// Rows [first, last) of `path`: the chosen draw, or every draw for the mean.
std::pair<std::size_t, std::size_t> chosen_rows(const sgmcmc::StanCsv& csv, Choice choice, const std::string& file) {
  if (csv.rows.empty()) throw sgmcmc::Error(fmt::format("{}: no draws (only a header)", file));
  if (choice.mean) return {0, csv.rows.size()};
  if (choice.draw > csv.rows.size())
    throw sgmcmc::Error(fmt::format("{}: run.init_draw = {}, but the file holds {} draws", file, choice.draw, csv.rows.size()));
  const std::size_t row = choice.draw == 0 ? csv.rows.size() - 1 : static_cast<std::size_t>(choice.draw) - 1;
  return {row, row + 1};
}

/// The chosen draw (or mean) of `path`, one value per parameter of `model`, checked.
StartPoint read_start(const fs::path& path, Choice choice, const sgmcmc::Model& model, const std::string& key) {
  const auto csv = sgmcmc::read_stan_csv(path);
  const std::string file = fmt::format("{}: {}", key, path.string());
  const auto [first, last] = chosen_rows(csv, choice, file);

  const auto columns = parameter_columns(csv, model, file);
  StartPoint start{std::vector<double>(columns.size(), 0.0),
                   choice.mean ? fmt::format("{}, mean of its {} draws", path.string(), csv.rows.size())
                               : fmt::format("{}, draw {} of {}", path.string(), first + 1, csv.rows.size())};
  std::vector<double> theta;
  for (std::size_t row = first; row < last; ++row) {
    parameter_values(csv, row, columns, model, file, theta);
    for (std::size_t j = 0; j < theta.size(); ++j) start.theta[j] += theta[j] / static_cast<double>(last - first);
  }
  return start;
}

}  // namespace

std::vector<fs::path> draw_files(const fs::path& source, const std::string& key) {
  if (!fs::exists(source))
    throw sgmcmc::Error(fmt::format("{}: '{}' does not exist; expected a run folder or a CSV file of parameter values", key,
                                    source.string()));
  if (!fs::is_directory(source)) return {source};
  std::vector<fs::path> files;
  for (const auto& [k, path] : numbered_files(source, run_folder::chain_prefix, key)) files.push_back(path);
  if (files.empty())
    throw sgmcmc::Error(fmt::format("{}: the folder '{}' holds no chain-<k>.csv; expected a run folder or a CSV file", key,
                                    source.string()));
  return files;
}

std::vector<std::size_t> parameter_columns(const sgmcmc::StanCsv& csv, const sgmcmc::Model& model, const std::string& file) {
  const auto names = model.parameter_names();
  std::unordered_map<std::string_view, std::size_t> by_name;  // lda has 10⁵ parameters: no linear search each
  for (std::size_t c = 0; c < csv.columns.size(); ++c) by_name.emplace(csv.columns[c], c);
  std::vector<std::size_t> columns;
  std::vector<std::string> missing;
  for (const auto& name : names) {
    const auto column = by_name.find(name);
    if (column == by_name.end()) missing.push_back(name);
    else columns.push_back(column->second);
  }
  if (!missing.empty())
    throw sgmcmc::Error(fmt::format("{}: no column for the parameter '{}'{}; every one of the model's {} parameters is "
                                    "needed (a run written with [output] parameters holds only some)",
                                    file, missing.front(),
                                    missing.size() > 1 ? fmt::format(" (nor for {} more)", missing.size() - 1) : "",
                                    names.size()));
  return columns;
}

void parameter_values(const sgmcmc::StanCsv& csv, std::size_t row, const std::vector<std::size_t>& columns,
                      const sgmcmc::Model& model, const std::string& file, std::vector<double>& theta) {
  theta.resize(columns.size());
  const bool positive = model.capabilities().positive_parameters;
  for (std::size_t j = 0; j < columns.size(); ++j) {
    theta[j] = csv.rows[row][columns[j]];
    if (!std::isfinite(theta[j]) || (positive && theta[j] <= 0.0))
      throw sgmcmc::Error(fmt::format("{}: draw {}, column '{}' is {}; the model's parameters must be finite{}", file, row + 1,
                                      csv.columns[columns[j]], theta[j], positive ? " and > 0" : ""));
  }
}

std::vector<StartPoint> read_start_points(sgmcmc::SectionReader run, const sgmcmc::Model& model, std::uint64_t chains) {
  const auto choice = sgmcmc::read_start_choice(run);
  if (!choice) return {};
  const std::string key = run.describe("init");
  const fs::path init = choice->init;
  if (init.empty()) throw sgmcmc::Error(fmt::format("{}: expected a run folder or a CSV file, found \"\"", key));
  const auto files = draw_files(init, key);
  // Each file is read once; chains beyond the folder's count cycle over its chains.
  std::map<std::size_t, StartPoint> read;
  std::vector<StartPoint> starts;
  for (std::uint64_t k = 0; k < chains; ++k) {
    const std::size_t f = k % files.size();
    if (!read.contains(f)) read.emplace(f, read_start(files[f], *choice, model, key));
    starts.push_back(read.at(f));
  }
  return starts;
}
