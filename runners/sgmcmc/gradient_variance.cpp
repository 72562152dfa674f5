// `sgmcmc gradient-variance`: how noisy a configuration's gradient estimator is along a chain,
// against plain minibatch SGLD's at the same batch size. The estimate's variance is the error an
// SG-MCMC step adds to the Langevin diffusion, and what control variates reduce: Baker et al.
// (2019)'s Lemma 1 bounds SGLD-CV's by the squared distance to the centre, E‖θ − θ̂‖² times
// L²N²/n, where SGLD's grows like N²/n wherever the data's gradients disagree. Whether SGLD-CV pays
// on a model is this ratio, measured here rather than assumed: at each chosen point θ (draws of a
// run, or rows of a CSV file), R independent estimates by each estimator, the per-coordinate sample
// variance, and their sum tr Cov[ĝ(θ)].
//
// The configuration's estimator is prepared as a chain's is (from run.init or the model's starting
// point: cv's SGD phase and full pass at θ̂, svrg's snapshot, saga's table) and then kept fixed, so
// the variance at θ is that of the estimator as the chain had it after its preparation.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "configuration.hpp"
#include "prepared_run.hpp"
#include "run.hpp"
#include "start_points.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

struct Options : ConfigurationSource {
  fs::path at;                 // a run folder (its chain-1.csv) or a CSV file of parameter values
  std::size_t points = 10;     // evenly spaced rows of that file
  std::size_t repeats = 200;   // R estimates per estimator and point
  std::optional<fs::path> csv;
  std::optional<fs::path> plugin_dir;
};

/// Per coordinate, the sample variance of `repeats` estimates of ∇U(θ).
std::vector<double> variances(sgmcmc::Estimator& estimator, std::span<const double> theta, std::size_t repeats,
                              sgmcmc::ChainContext& context) {
  const std::size_t d = theta.size();
  std::vector<double> gradient(d), mean(d, 0.0), squares(d, 0.0);
  for (std::size_t r = 1; r <= repeats; ++r) {  // Welford's running mean and sum of squares
    estimator.estimate(theta, gradient, context);  // overwrites `gradient`
    for (std::size_t j = 0; j < d; ++j) {
      const double delta = gradient[j] - mean[j];
      mean[j] += delta / static_cast<double>(r);
      squares[j] += delta * (gradient[j] - mean[j]);
    }
  }
  for (double& s : squares) s /= static_cast<double>(repeats - 1);
  return squares;
}

double sum(const std::vector<double>& values) { return std::accumulate(values.begin(), values.end(), 0.0); }

/// The median over coordinates of plain[j] / reduced[j]: unlike the ratio of the traces, not
/// decided by the few coordinates with the largest gradients.
double median_ratio(const std::vector<double>& plain, const std::vector<double>& reduced) {
  std::vector<double> ratios(plain.size());
  for (std::size_t j = 0; j < plain.size(); ++j) ratios[j] = plain[j] / reduced[j];
  const auto middle = ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2);
  std::nth_element(ratios.begin(), middle, ratios.end());
  return *middle;
}

int gradient_variance_command(const Options& options) {
  if (options.repeats < 2) throw sgmcmc::Error("gradient-variance: --repeats must be at least 2 (a variance needs two estimates)");
  if (options.points < 1) throw sgmcmc::Error("gradient-variance: --points must be at least 1");
  auto loaded = load_config(options);
  loaded.config["run"].set("chains", {std::int64_t{1}, "gradient-variance"});
  const auto prepared = prepare_run(loaded.config, loaded.source, options.plugin_dir);
  check_keys(*prepared);  // a misspelt key is refused, as `run` refuses it
  const auto model = model_of(*prepared)->model;
  const auto seed = prepared->plan.schedule.seed;
  const sgmcmc::SectionReader section(loaded.config["estimator"]);  // read again: prepare_run checked its keys
  const std::string name = section.text("name", sgmcmc::default_estimator);

  // The estimator as chain 1 prepares it: from its start, on its own stream.
  auto estimator = sgmcmc::make_estimator(section, *model);
  auto workspace = model->make_workspace();
  sgmcmc::Rng rng(seed, sgmcmc::chain_stream(0));
  sgmcmc::Cost cost;
  sgmcmc::ChainContext context{*model, *workspace, rng, cost};
  std::vector<double> centre(model->dimension());
  if (const auto starts = read_start_points(sgmcmc::SectionReader(loaded.config["run"]), *model, 1); !starts.empty())
    centre = starts.front().theta;
  else
    model->initial_point(centre, rng);
  estimator->prepare(centre, context);  // cv moves it to θ̂; the distance column is to this point

  // Plain SGLD's estimate with the configuration's batch_size and replacement (their defaults too).
  const auto baseline = sgmcmc::MinibatchParameters::from_settings(section, *model);
  auto minibatch = sgmcmc::make_estimator(baseline, *model);
  auto baseline_workspace = model->make_workspace();
  sgmcmc::Rng baseline_rng(seed, sgmcmc::chain_stream(1));
  sgmcmc::ChainContext baseline_context{*model, *baseline_workspace, baseline_rng, cost};

  const auto file = draw_files(options.at, "gradient-variance: --at").front();
  const auto csv = sgmcmc::read_stan_csv(file);
  const std::string where = fmt::format("gradient-variance: {}", file.string());
  if (csv.rows.empty()) throw sgmcmc::Error(fmt::format("{}: no draws (only a header)", where));
  const auto columns = parameter_columns(csv, *model, where);
  const std::size_t points = std::min(options.points, csv.rows.size());

  std::vector<std::string> lines = {"draw,distance_to_centre,minibatch_trace,estimator_trace,ratio,median_coordinate_ratio"};
  fmt::print("tr Cov of the gradient estimate ({} estimates each) at {} draws of {}; estimator '{}' prepared as chain 1's, "
             "against minibatch SGLD at batch size {}\n",
             options.repeats, points, file.string(), name, *baseline.batch_size);
  fmt::print("{:>6} {:>16} {:>16} {:>16} {:>12} {:>12}\n", "draw", "|θ - centre|", "minibatch", name, "ratio", "median ratio");
  std::vector<double> theta;
  for (std::size_t p = 0; p < points; ++p) {
    const std::size_t row = points == 1 ? csv.rows.size() - 1 : p * (csv.rows.size() - 1) / (points - 1);
    parameter_values(csv, row, columns, *model, where, theta);
    double distance = 0.0;
    for (std::size_t j = 0; j < theta.size(); ++j) distance += (theta[j] - centre[j]) * (theta[j] - centre[j]);
    distance = std::sqrt(distance);
    const auto plain = variances(*minibatch, theta, options.repeats, baseline_context);
    const auto reduced = variances(*estimator, theta, options.repeats, context);
    const double ratio = sum(plain) / sum(reduced), median = median_ratio(plain, reduced);
    fmt::print("{:>6} {:>16.6g} {:>16.6g} {:>16.6g} {:>12.4g} {:>12.4g}\n", row + 1, distance, sum(plain), sum(reduced), ratio,
               median);
    lines.push_back(fmt::format("{},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g}", row + 1, distance, sum(plain), sum(reduced), ratio,
                                median));
  }
  if (options.csv) {
    std::ofstream out(*options.csv);
    for (const auto& line : lines) out << line << '\n';
    if (!out) throw sgmcmc::Error(fmt::format("gradient-variance: --csv {}: cannot write", options.csv->string()));
  }
  return 0;
}

}  // namespace

Command add_gradient_variance_command(CLI::App& app) {
  const auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand(
      "gradient-variance", "the variance of a configuration's gradient estimator at a run's draws, against minibatch SGLD's");
  command->footer("Example: sgmcmc gradient-variance --preset lda-sgldcv --at runs/lda-sgld --points 5 --repeats 50");
  add_configuration_options(*command, *options);
  command->add_option("--at", options->at, "a run folder (its chain-1.csv) or a CSV file with a column per parameter")
      ->required();
  command->add_option("--points", options->points, "evenly spaced draws of that file, first and last included (10)");
  command->add_option("--repeats", options->repeats, "estimates per estimator and draw (200)");
  command->add_option("--csv", options->csv, "also write the table as CSV to this file");
  add_plugin_dir_option(*command, options->plugin_dir);
  return {command, [options] {
            require_configuration(*options, "gradient-variance");
            return gradient_variance_command(*options);
          }};
}
