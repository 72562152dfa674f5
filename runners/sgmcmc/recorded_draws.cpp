// Reading a run's draws with their recorded gradients of log π, and their kernel Stein discrepancy.
#include "recorded_draws.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

std::vector<std::string> parameters_of(const sgmcmc::StanCsv& gradients, const fs::path& path, const std::string& command) {
  std::vector<std::string> names;
  for (const auto& column : gradients.columns) {
    if (!column.starts_with(sgmcmc::gradient_column_prefix))
      throw sgmcmc::Error(fmt::format("{}: {}: column '{}' is not a gradient column ({}<parameter>)", command, path.string(), column,
                                      sgmcmc::gradient_column_prefix));
    names.push_back(column.substr(sgmcmc::gradient_column_prefix.size()));
  }
  return names;
}

/// Which chain columns are the gradient files' parameters, and which are quantities.
void locate_columns(Recorded& recorded, const fs::path& gradient_path, const std::string& command) {
  const auto& columns = recorded.chains.columns;
  for (const auto& name : recorded.parameters) {
    const auto at = std::find(columns.begin(), columns.end(), name);
    if (at == columns.end())
      throw sgmcmc::Error(fmt::format("{}: {} has a gradient of '{}', but {} has no such column; the files are not of the "
                                      "same run",
                                      command, gradient_path.string(), name, recorded.chains.paths.front().string()));
    recorded.parameter_columns.push_back(static_cast<std::size_t>(at - columns.begin()));
  }
  for (std::size_t index = 0; index < columns.size(); ++index)
    if (!columns[index].ends_with("__") &&
        std::find(recorded.parameter_columns.begin(), recorded.parameter_columns.end(), index) == recorded.parameter_columns.end())
      recorded.quantity_columns.push_back(index);
}

}  // namespace

namespace {

/// integrator.temperature of the manifest's resolved configuration; 1 when it holds none (a run
/// resolves every key it reads, so an absent key is the default).
void read_temperature(Recorded& recorded, const fs::path& folder, const std::string& command) {
  const nlohmann::json manifest = manifest_if_any(folder);
  if (!manifest.is_object() || !manifest.contains("config")) return;
  recorded.temperature_from_manifest = true;
  const auto& config = manifest["config"];
  if (!config.contains("integrator") || !config["integrator"].contains("temperature")) return;
  const auto& value = config["integrator"]["temperature"];
  if (!value.is_number() || !(value.get<double>() > 0.0) || !std::isfinite(value.get<double>()))
    throw sgmcmc::Error(fmt::format("{}: {}: config.integrator.temperature is {}; expected a positive number",
                                    command, (folder / run_folder::manifest).string(), value.dump()));
  recorded.temperature = value.get<double>();
}

}  // namespace

Recorded read_recorded(const fs::path& folder, const std::string& command) {
  Recorded recorded;
  recorded.chains = read_chains(folder, command, 1);
  read_temperature(recorded, folder, command);
  const auto chain_paths = numbered_files(folder, run_folder::chain_prefix, command);
  const auto gradient_paths = numbered_files(folder, run_folder::gradients_prefix, command);
  if (gradient_paths.empty())
    throw sgmcmc::Error(fmt::format("{}: '{}' has no gradients-<k>.csv files; record them with [output] gradients = "
                                    "\"cv\" (or \"exact\", \"estimator\") in the run's configuration",
                                    command, folder.string()));
  std::size_t chain = 0;
  for (const auto& [k, chain_path] : chain_paths) {
    const auto found = gradient_paths.find(k);
    if (found == gradient_paths.end())
      throw sgmcmc::Error(fmt::format("{}: {} has no gradients-{}.csv beside it", command, chain_path.string(), k));
    auto gradients = sgmcmc::read_stan_csv(found->second);
    const auto names = parameters_of(gradients, found->second, command);
    if (recorded.gradients.empty()) {
      recorded.parameters = names;
      locate_columns(recorded, found->second, command);
    } else if (names != recorded.parameters) {
      throw sgmcmc::Error(fmt::format("{}: {} has other columns than gradients-{}.csv", command, found->second.string(),
                                      gradient_paths.begin()->first));
    }
    const std::size_t draws = recorded.chains.files[chain].rows.size();
    if (gradients.rows.size() != draws)
      throw sgmcmc::Error(fmt::format("{}: {} has {} rows but {} has {} draws; each row must be the gradient at the draw "
                                      "of the same row",
                                      command, found->second.string(), gradients.rows.size(), chain_path.string(), draws));
    recorded.gradients.push_back(std::move(gradients));
    recorded.gradient_paths.push_back(found->second);
    ++chain;
  }
  return recorded;
}

namespace {

/// ZV and KSD need finite numbers; a NaN or Inf is named by its file, draw and column.
void check_finite(const std::vector<double>& row, const std::vector<std::string>& columns, const fs::path& path,
                  std::size_t draw, const std::string& command) {
  for (std::size_t j = 0; j < row.size(); ++j)
    if (!std::isfinite(row[j]))
      throw sgmcmc::Error(fmt::format("{}: {}: draw {} has {} = {}; zero variance and the kernel Stein discrepancy need finite "
                                      "values (did the chain diverge?)",
                                      command, path.string(), draw, columns[j], row[j]));
}

}  // namespace

Pooled pool(const Recorded& recorded, const std::string& command) {
  Pooled pooled;
  for (std::size_t k = 0; k < recorded.chains.files.size(); ++k)
    for (std::size_t t = 0; t < recorded.chains.draws; ++t) {
      const auto& row = recorded.chains.files[k].rows[t];
      std::vector<double> theta, quantities;
      std::vector<std::string> names;
      for (std::size_t index : recorded.parameter_columns) theta.push_back(row[index]);
      quantities = theta;
      for (std::size_t index : recorded.quantity_columns) quantities.push_back(row[index]);
      for (std::size_t index : recorded.parameter_columns) names.push_back(recorded.chains.columns[index]);
      for (std::size_t index : recorded.quantity_columns) names.push_back(recorded.chains.columns[index]);
      check_finite(quantities, names, recorded.chains.paths[k], t + 1, command);
      check_finite(recorded.gradients[k].rows[t], recorded.gradients[k].columns, recorded.gradient_paths[k], t + 1, command);
      std::vector<double> score = recorded.gradients[k].rows[t];
      for (double& s : score) s /= recorded.temperature;  // ∇log π^{1/T} = z/T
      pooled.points.push_back(std::move(theta));
      pooled.scores.push_back(std::move(score));
      pooled.quantities.push_back(std::move(quantities));
    }
  return pooled;
}


Spread spread_of(const sgmcmc::DrawMatrix& points) {
  const std::size_t rows = points.size(), d = rows ? points.front().size() : 0;
  Spread spread{std::vector<double>(d, 0.0), std::vector<double>(d, 0.0)};
  for (const auto& theta : points)
    for (std::size_t j = 0; j < d; ++j) spread.mean[j] += theta[j] / static_cast<double>(rows);
  for (const auto& theta : points)
    for (std::size_t j = 0; j < d; ++j)
      spread.sd[j] += (theta[j] - spread.mean[j]) * (theta[j] - spread.mean[j]) / static_cast<double>(rows - 1);
  for (double& sd : spread.sd) sd = std::sqrt(sd);
  return spread;
}

double standardised_ksd(const Pooled& pooled, std::size_t begin, std::size_t end, const Spread& standard,
                        std::size_t max_draws, std::size_t& used) {
  const std::size_t d = standard.mean.size(), step = std::max<std::size_t>(1, (end - begin + max_draws - 1) / max_draws);
  std::vector<std::vector<double>> points, scores;
  for (std::size_t row = begin; row < end; row += step) {
    std::vector<double> x(d), s(d);
    for (std::size_t j = 0; j < d; ++j) {
      x[j] = (pooled.points[row][j] - standard.mean[j]) / standard.sd[j];
      s[j] = pooled.scores[row][j] * standard.sd[j];
    }
    points.push_back(std::move(x));
    scores.push_back(std::move(s));
  }
  used = points.size();
  return sgmcmc::kernel_stein_discrepancy(points, scores);
}
