// `sgmcmc zv DIR` (also printed at the end of a run with [output] zv = true): zero-variance
// control-variate estimates (sgmcmc.zero_variance; Baker et al. 2019, §4) of the posterior mean of every
// parameter and of every model quantity recorded in chain-<k>.csv, from the gradients of log π
// recorded in gradients-<k>.csv; and the kernel Stein discrepancy of each chain's draws.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "recorded_draws.hpp"
#include "run_folder.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

/// Second-order ZV forms the covariance of d(d+3)/2 controls (draws × controls² work); beyond
/// this many controls (d = 30) the default is first order.
constexpr std::size_t default_second_order_limit = 500;
/// The draws of one quantity back in chains × draws, for the MCSE.
sgmcmc::ChainDraws as_chains(const std::vector<double>& values, std::size_t chains, std::size_t draws) {
  sgmcmc::ChainDraws out(chains);
  for (std::size_t k = 0; k < chains; ++k)
    out[k].assign(values.begin() + static_cast<std::ptrdiff_t>(k * draws), values.begin() + static_cast<std::ptrdiff_t>((k + 1) * draws));
  return out;
}

std::string number(double x) { return std::isfinite(x) ? fmt::format("{:.6g}", x) : (std::isnan(x) ? "—" : "inf"); }

double mcse(const std::vector<double>& values, std::size_t chains, std::size_t draws) {
  const auto shaped = as_chains(values, chains, draws);
  return sgmcmc::diagnostics_undefined(shaped) ? std::nan("") : sgmcmc::mcse_mean(shaped);
}

std::string gradient_source(const fs::path& folder) {
  const nlohmann::json manifest = manifest_if_any(folder);
  if (manifest.is_object() && manifest.contains("config") && manifest["config"].contains("output") &&
      manifest["config"]["output"].contains("gradients"))
    return manifest["config"]["output"]["gradients"].get<std::string>();
  return "unknown (no manifest.json)";
}

/// Per chain, the KSD of at most ksd_max_draws evenly spaced draws, standardised by the pooled
/// draws' mean and sd (standardised_ksd).
void print_ksd(const Recorded& recorded, const Pooled& pooled, const std::string& source) {
  const Spread standard = spread_of(pooled.points);
  for (std::size_t j = 0; j < standard.sd.size(); ++j)
    if (!(standard.sd[j] > 0.0)) return fmt::print("kernel Stein discrepancy: undefined ({} does not move)\n", recorded.parameters[j]);
  const std::size_t draws = recorded.chains.draws;
  std::vector<std::string> values;
  for (std::size_t k = 0; k < recorded.chains.files.size(); ++k) {
    std::size_t used = 0;
    const double ksd = standardised_ksd(pooled, k * draws, (k + 1) * draws, standard, ksd_max_draws, used);
    values.push_back(fmt::format("chain {} {:.4g} ({} draws)", k + 1, ksd, used));
  }
  fmt::print("kernel Stein discrepancy (IMQ kernel c = 1, β = -1/2, standardised coordinates): {}\n", fmt::join(values, ", "));
  if (source != "exact")
    fmt::print("  (from '{}' gradient estimates: their noise adds to the KSD; record exact gradients to compare samplers)\n", source);
}

/// The target the controls and the KSD are built for: π^{1/T} when the run was tempered.
void print_target(const Recorded& recorded) {
  if (!recorded.temperature_from_manifest)
    fmt::print("no manifest.json: the draws are taken to sample π itself (integrator.temperature = 1)\n");
  else if (recorded.temperature != 1.0)
    fmt::print("target π^(1/T) at integrator.temperature T = {}: its score z/T (z the recorded ∇log π) builds the controls "
               "and the KSD\n",
               number(recorded.temperature));
}

/// Controls left out as constant or collinear over the draws (sgmcmc::ZvResult::dropped).
void print_dropped(const sgmcmc::ZvResult& result, int order) {
  if (result.dropped.empty()) return;
  constexpr std::size_t listed = 8;
  const std::vector<std::string> some(result.dropped.begin(), result.dropped.begin() + std::min(listed, result.dropped.size()));
  fmt::print("order {}: {} control(s) left out as constant or a linear combination of others over these draws (collinear "
             "features?), which changes no estimate: {}{}\n",
             order, result.dropped.size(), fmt::join(some, ", "), result.dropped.size() > listed ? ", ..." : "");
}

int choose_order(int requested, std::size_t dimension) {
  if (requested != 0) return requested;
  return sgmcmc::zv_control_count(dimension, 2) <= default_second_order_limit ? 2 : 1;
}

/// `rows` draws in all, or in each half with --cross-fit.
void check_enough_draws(std::size_t rows, std::size_t dimension, int order, bool cross_fit) {
  const std::size_t controls = sgmcmc::zv_control_count(dimension, order);
  if (rows <= controls)
    throw sgmcmc::Error(fmt::format("zv: {} draws {}, but order {} has {} control variates (d = {}) and needs more "
                                    "draws than controls, at least {}{}",
                                    rows, cross_fit ? "in a half (--cross-fit)" : "in all", order, controls, dimension,
                                    controls + 1, order == 2 ? fmt::format("; --order 1 needs {}", dimension + 1) : ""));
}

/// Fold 1: the first half of every chain's draws (rows: chain 1's draws, then chain 2's, ...).
std::vector<bool> first_halves(std::size_t chains, std::size_t draws) {
  std::vector<bool> in_first(chains * draws);
  for (std::size_t k = 0; k < chains; ++k)
    for (std::size_t t = 0; t < draws; ++t) in_first[k * draws + t] = t < draws / 2;
  return in_first;
}

sgmcmc::ZvResult estimate(const Pooled& pooled, int order, const std::vector<bool>& folds) {
  return folds.empty() ? sgmcmc::zero_variance(pooled.points, pooled.scores, pooled.quantities, order)
                       : sgmcmc::zero_variance_cross_fitted(pooled.points, pooled.scores, pooled.quantities, order, folds);
}

}  // namespace

bool gradient_diagnostics(const fs::path& folder) {
  if (numbered_files(folder, run_folder::gradients_prefix, "summary").empty()) return false;
  const Recorded recorded = read_recorded(folder, "zv");
  const Pooled pooled = pool(recorded, "zv");
  const std::size_t d = recorded.parameters.size(), chains = recorded.chains.files.size(), draws = recorded.chains.draws;
  // Configurational temperature: for π ∝ exp(-U/T), integration by parts gives E[θ_j ∂_j U] = T
  // for every coordinate j (the equipartition theorem's configurational form; Leimkuhler &
  // Matthews 2015, §6.1), so ⟨θ·∇U⟩/d = -⟨θ·z⟩/d is T for an exact sampler. Over the written
  // coordinates only, which holds coordinate by coordinate. z = T × the pooled score of π^{1/T}.
  const double temperature = recorded.temperature;
  std::vector<double> per_draw;
  for (std::size_t row = 0; row < pooled.points.size(); ++row) {
    double sum = 0.0;
    for (std::size_t j = 0; j < d; ++j) sum -= pooled.points[row][j] * temperature * pooled.scores[row][j];
    per_draw.push_back(sum / static_cast<double>(d));
  }
  double mean = 0.0;
  for (double x : per_draw) mean += x / static_cast<double>(per_draw.size());
  const std::string source = gradient_source(folder);
  fmt::print("configurational temperature <θ·∇U>/d = {} (mcse {}; T = {} for an exact sampler; {} coordinates, "
             "gradients '{}')\n",
             number(mean), number(mcse(per_draw, chains, draws)), number(temperature), d, source);
  // KSD costs O(n² d) per chain: summary leaves it to `sgmcmc zv` beyond 100 coordinates.
  if (d <= 100) print_ksd(recorded, pooled, source);
  else fmt::print("kernel Stein discrepancy: not computed for {} coordinates here (O(n² d)); `sgmcmc zv` computes it\n", d);
  return true;
}

int zv_command(const fs::path& folder, const ZvOptions& options) {
  const Recorded recorded = read_recorded(folder, "zv");
  const Pooled pooled = pool(recorded, "zv");
  const std::size_t d = recorded.parameters.size(), chains = recorded.chains.files.size(), draws = recorded.chains.draws;
  const int order = choose_order(options.order, d);
  check_enough_draws(options.cross_fit ? chains * (draws / 2) : pooled.points.size(), d, order, options.cross_fit);
  const auto folds = options.cross_fit ? first_halves(chains, draws) : std::vector<bool>{};
  const auto first_result = estimate(pooled, 1, folds);
  const auto second_result = order == 2 ? estimate(pooled, 2, folds) : sgmcmc::ZvResult{};
  const auto& first = first_result.estimates;
  const auto& second = second_result.estimates;
  const std::string source = gradient_source(folder);

  fmt::print("zero-variance control variates (Mira et al. 2013; Baker et al. 2019, §4): {} chains × {} draws, gradients '{}'{}\n", chains,
             draws, source, order == 1 ? fmt::format("; first order only (d = {}: --order 2 for second)", d) : "");
  print_target(recorded);
  fmt::print("{}\n", options.cross_fit ? "coefficients cross-fitted: each half of every chain is corrected by the fit on the "
                                         "other half, so var_ratio is honest (below 1 when the controls do not help)"
                                       : "coefficients fitted in sample: var_ratio >= 1 by construction (--cross-fit for an "
                                         "out-of-sample ratio)");
  fmt::print("{:<22} {:>12} {:>10} {:>12} {:>10} {:>10} {:>12} {:>10} {:>10}\n", "quantity", "mean", "mcse", "zv1_mean",
             "zv1_mcse", "var_ratio1", "zv2_mean", "zv2_mcse", "var_ratio2");
  std::vector<std::string> names(recorded.parameters);
  for (std::size_t index : recorded.quantity_columns) names.push_back(recorded.chains.columns[index]);
  std::optional<sgmcmc::OutputFile> csv;
  if (!options.csv.empty()) {
    csv.emplace(options.csv);
    csv->write("quantity,mean,mcse,zv1_mean,zv1_mcse,var_ratio1,zv2_mean,zv2_mcse,var_ratio2\n");
  }
  for (std::size_t q = 0; q < names.size(); ++q) {
    std::vector<double> plain;
    for (const auto& row : pooled.quantities) plain.push_back(row[q]);
    const double nan = std::nan("");
    const double values[] = {first[q].mean, mcse(plain, chains, draws), first[q].zv_mean,
                             mcse(first[q].corrected, chains, draws), first[q].variance_ratio(),
                             second.empty() ? nan : second[q].zv_mean,
                             second.empty() ? nan : mcse(second[q].corrected, chains, draws),
                             second.empty() ? nan : second[q].variance_ratio()};
    if (csv) csv->write(fmt::format("{},{}\n", names[q], fmt::join(values, ",")));
    if (q < d && q >= options.max_parameters) continue;
    fmt::print("{:<22} {:>12} {:>10} {:>12} {:>10} {:>10} {:>12} {:>10} {:>10}\n", names[q], number(values[0]),
               number(values[1]), number(values[2]), number(values[3]), number(values[4]), number(values[5]),
               number(values[6]), number(values[7]));
  }
  if (csv) csv->close();
  if (d > options.max_parameters) fmt::print("({} of {} parameters shown; --max-parameters to see more)\n", options.max_parameters, d);
  print_dropped(first_result, 1);
  print_dropped(second_result, 2);
  print_ksd(recorded, pooled, source);
  return 0;
}

Command add_zv_command(CLI::App& app) {
  struct Options {
    fs::path folder;
    ZvOptions zv;
  };
  const auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand("zv", "zero-variance control-variate estimates from recorded gradients; kernel Stein discrepancy");
  command->footer("Example: sgmcmc zv runs/demo-zv --order 2");
  command->add_option("folder", options->folder, "a run's output folder with gradients-<k>.csv files")->required();
  command->add_option("--order", options->zv.order, "1 (linear) or 2 (quadratic) polynomials (default 2 when d <= 30)")
      ->check(CLI::IsMember({1, 2}));
  command->add_option("--max-parameters", options->zv.max_parameters, "show the first this many parameters (20); quantities always");
  command->add_option("--csv", options->zv.csv, "also write the table, every parameter and quantity, as CSV to this file");
  command->add_flag("--cross-fit", options->zv.cross_fit,
                    "fit the coefficients on one half of each chain and apply them to the other (out of sample)");
  return {command, [options] { return zv_command(options->folder, options->zv); }};
}
