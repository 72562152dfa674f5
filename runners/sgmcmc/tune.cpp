// `sgmcmc tune`: the step size of a chain without an acceptance signal, chosen by the kernel Stein
// discrepancy (KSD) of pilot chains: among step sizes run at the same computational budget, the
// one whose draws have the smallest Stein discrepancy to the posterior (the criterion of Coullon,
// South & Nemeth 2023, by plain grid search rather than their bandit scheme; KSD as Gorham &
// Mackey 2017).
//
// Each step size h_k = h·factor^(k - (points - 1)/2) of a geometric grid around the configuration's
// own h (or the --steps given) is one cell of a sweep, so threads, MPI and --resume come from the
// sweep machinery. Every pilot is the configuration with one chain, the same seed (common random
// numbers: the grid points differ only by their step) and the same iterations, so each costs the
// same item gradients and "lowest KSD" is "lowest KSD for this budget". Each records the exact
// ∇log π (a full data pass) at about --draws evenly spaced draws: the KSD must see the posterior's
// score, not the estimator's noise. The KSDs are computed in one set of standardised coordinates
// for all pilots (per coordinate, the median over pilots of their draws' mean and sd), so they are
// comparable.
//
// Output folder:
//   tune-sweep.toml  the generated sweep (the pilots' configuration, the grid as an axis)
//   pilots/          the sweep's folder: one run per step size, results.csv, summary.csv
//   tune.csv         step_size, status, ksd, draws, item_gradients, seconds: one row per pilot
//   tune.json        the grid, the KSDs, the choice and how it was made
//   tuned.toml       the configuration given, with integrator.step_size set to the choice
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cluster.hpp"
#include "commands.hpp"
#include "configuration.hpp"
#include "files.hpp"
#include "generated_sweep.hpp"
#include "recorded_draws.hpp"
#include "run.hpp"
#include "run_folder.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

constexpr const char* sweep_file_name = "tune-sweep.toml";
constexpr const char* pilots_folder = "pilots";

/// The grid: --steps as given, or `points` steps spaced by `factor` around the configuration's own.
std::vector<double> step_grid(const sgmcmc::RunConfig& config, const TuneOptions& options) {
  if (!options.steps.empty()) {
    for (double h : options.steps)
      if (!(h > 0.0 && std::isfinite(h))) throw sgmcmc::Error(fmt::format("tune: --steps: {} is not a positive step size", h));
    std::vector<double> steps = options.steps;
    std::sort(steps.begin(), steps.end());
    if (std::adjacent_find(steps.begin(), steps.end()) != steps.end()) throw sgmcmc::Error("tune: --steps lists a step twice");
    return steps;
  }
  if (!(options.factor > 1.0 && std::isfinite(options.factor))) throw sgmcmc::Error("tune: --factor must be a number above 1");
  if (options.points < 2) throw sgmcmc::Error("tune: --points must be at least 2");
  const auto centre = sgmcmc::SectionReader(config["integrator"]).optional_number("step_size");
  if (!centre)
    throw sgmcmc::Error("tune: the configuration sets no integrator.step_size to centre the grid on; set one, or give --steps");
  if (!(*centre > 0.0)) throw sgmcmc::Error(fmt::format("tune: {} must be positive", config["integrator"].describe("step_size")));
  std::vector<double> steps;
  for (std::size_t k = 0; k < options.points; ++k)
    steps.push_back(*centre * std::pow(options.factor, static_cast<double>(k) - static_cast<double>(options.points - 1) / 2.0));
  return steps;
}

/// The configuration every pilot runs (its step aside): one chain, exact gradients recorded at
/// about `draws` draws, every parameter written.
sgmcmc::RunConfig pilot_config(sgmcmc::RunConfig config, const TuneOptions& options) {
  const std::string origin = "sgmcmc tune";
  if (sgmcmc::SectionReader(config["integrator"]).flag("adapt_step_size", sgmcmc::StepAdaptation{}.adapt))
    throw sgmcmc::Error(fmt::format("tune: {} = true: this chain adapts its own step to an MH acceptance rate; `tune` is "
                                    "for chains without one",
                                    config["integrator"].describe("adapt_step_size")));
  auto& run = config["run"];
  if (options.iterations) run.set("iterations", {static_cast<std::int64_t>(*options.iterations), origin});
  if (options.warmup) run.set("warmup", {static_cast<std::int64_t>(*options.warmup), origin});
  const auto schedule = sgmcmc::read_fields(sgmcmc::run_fields(), sgmcmc::SectionReader(run)).chain;
  const std::uint64_t iterations = schedule.iterations, thin = schedule.thin;
  // A multiple of the configuration's thin, which an MH block length may constrain.
  const std::uint64_t blocks = std::max<std::uint64_t>(1, iterations / (thin * options.draws));
  run.set("thin", {static_cast<std::int64_t>(thin * blocks), origin});
  run.set("chains", {std::int64_t{1}, origin});
  auto& output = config["output"];
  output.set("gradients", {std::string("exact"), origin});
  output.set("parameters", {std::vector<std::string>{"*"}, origin});
  output.set("draws", {true, origin});
  output.set("quantities", {false, origin});
  output.set("zv", {false, origin});
  return config;
}

/// Builds the pilot at the grid's first step as a run would, so a configuration that cannot run
/// (a misspelt key, a model without exact gradients) is refused now with the run's message.
void check_pilot(sgmcmc::RunConfig pilot, double step, const TuneOptions& options) {
  pilot["integrator"].set("step_size", {step, "sgmcmc tune"});
  auto prepared = prepare_run(std::move(pilot), "sgmcmc tune", options.plugin_dir);
  check_keys(*prepared);
  check_run(*prepared);
}

std::string sweep_axes(const std::vector<double>& steps) {
  std::vector<std::string> values;
  for (double h : steps) values.push_back(fmt::format("{:.17g}", h));
  return fmt::format("\n[axes]\n\"integrator.step_size\" = [{}]\n", fmt::join(values, ", "));
}

struct Pilot {
  double step = 0.0;
  std::string status;  // complete, diverged, or missing (the cell did not run)
  fs::path folder;
  std::optional<Pooled> draws;
  std::uint64_t item_gradients = 0;
  double seconds = std::nan("");
  double ksd = std::numeric_limits<double>::infinity();
  std::size_t ksd_draws = 0;
};

/// Every pilot of the sweep folder, by step.
std::vector<Pilot> read_pilots(const fs::path& folder, const std::vector<double>& steps) {
  std::vector<Pilot> pilots;
  for (double h : steps) {
    pilots.emplace_back();
    pilots.back().step = h;
    pilots.back().status = "missing";
  }
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (!entry.is_directory()) continue;
    const auto manifest = manifest_if_any(entry.path());
    if (!manifest.is_object() || !manifest.contains("config")) continue;
    const double h = manifest["config"]["integrator"]["step_size"].get<double>();
    const auto found = std::find_if(pilots.begin(), pilots.end(), [h](const Pilot& p) { return p.step == h; });
    if (found == pilots.end()) continue;
    found->status = manifest.value("status", "unknown");
    found->folder = entry.path();
    found->seconds = manifest["timings"]["total_seconds"].get<double>();
    for (const auto& chain : manifest["chains"]) found->item_gradients += chain["item_gradients"].get<std::uint64_t>();
    if (found->status == "complete") found->draws = pool(read_recorded(entry.path(), "tune"), "tune");
  }
  return pilots;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// One standardisation for all pilots: per coordinate, the median over pilots of their mean and sd.
Spread common_standard(const std::vector<Pilot>& pilots, const std::vector<std::string>& names) {
  std::vector<Spread> spreads;
  for (const auto& pilot : pilots)
    if (pilot.draws) spreads.push_back(spread_of(pilot.draws->points));
  Spread standard;
  for (std::size_t j = 0; j < names.size(); ++j) {
    std::vector<double> means, sds;
    for (const auto& spread : spreads) {
      means.push_back(spread.mean[j]);
      sds.push_back(spread.sd[j]);
    }
    standard.mean.push_back(median(means));
    standard.sd.push_back(median(sds));
    if (!(standard.sd.back() > 0.0))
      throw sgmcmc::Error(fmt::format("tune: {} does not move in most pilots (median sd 0), so no KSD can compare them; "
                                      "try larger steps or more iterations",
                                      names[j]));
  }
  return standard;
}

std::string csv_number(double x) { return std::isfinite(x) ? fmt::format("{:.17g}", x) : (std::isnan(x) ? "" : "inf"); }

/// Writes tune.csv, tune.json and tuned.toml; prints the grid and the choice.
int choose(const fs::path& out, const sgmcmc::RunConfig& config, const std::vector<double>& steps) {
  auto pilots = read_pilots(out / pilots_folder, steps);
  const auto first = std::find_if(pilots.begin(), pilots.end(), [](const Pilot& p) { return p.draws.has_value(); });
  if (first == pilots.end())
    throw sgmcmc::Error(fmt::format("tune: no pilot in {} finished (each diverged or did not run); try smaller steps",
                                    (out / pilots_folder).string()));
  const auto names = read_recorded(first->folder, "tune").parameters;
  const Spread standard = common_standard(pilots, names);
  for (auto& pilot : pilots)
    if (pilot.draws)
      pilot.ksd = standardised_ksd(*pilot.draws, 0, pilot.draws->points.size(), standard, ksd_max_draws, pilot.ksd_draws);
  const auto best = std::min_element(pilots.begin(), pilots.end(), [](const Pilot& a, const Pilot& b) { return a.ksd < b.ksd; });

  std::string table = "step_size,status,ksd,draws,item_gradients,seconds\n";
  nlohmann::json grid = nlohmann::json::array();
  fmt::print("{:>14} {:>10} {:>12} {:>7} {:>15} {:>9}\n", "step_size", "status", "KSD", "draws", "item_gradients", "seconds");
  for (const auto& pilot : pilots) {
    table += fmt::format("{},{},{},{},{},{}\n", csv_number(pilot.step), pilot.status, csv_number(pilot.ksd), pilot.ksd_draws,
                         pilot.item_gradients, csv_number(pilot.seconds));
    grid.push_back({{"step_size", pilot.step}, {"status", pilot.status}, {"ksd", std::isfinite(pilot.ksd) ? nlohmann::json(pilot.ksd) : nlohmann::json()},
                    {"draws", pilot.ksd_draws}, {"item_gradients", pilot.item_gradients}});
    fmt::print("{:>14.6g} {:>10} {:>12.5g} {:>7} {:>15} {:>9.3g}{}\n", pilot.step, pilot.status, pilot.ksd, pilot.ksd_draws,
               pilot.item_gradients, pilot.seconds, &pilot == &*best ? "  <- lowest KSD" : "");
  }
  write_atomically(out / "tune.csv", table);

  sgmcmc::RunConfig tuned = config;
  tuned["integrator"].set("step_size", {best->step, "sgmcmc tune"});
  // tuned.toml's own relative file names would be read from its folder (load_config): write them
  // absolute, as they were found from here.
  resolve_file_names(tuned, fs::current_path());
  write_atomically(out / "tuned.toml",
                   fmt::format("# Written by `sgmcmc tune`: integrator.step_size = {:.17g}, the lowest kernel Stein discrepancy of\n"
                               "# {} pilot chains at the same budget (tune.csv beside this file). Run it with\n"
                               "#   sgmcmc run --config tuned.toml\n{}",
                               best->step, pilots.size(), sgmcmc::format_config(tuned)));
  const bool at_edge = best == pilots.begin() || best == pilots.end() - 1;
  nlohmann::json record = {{"method", "lowest kernel Stein discrepancy (IMQ kernel c = 1, β = -1/2) of pilot chains at the same "
                                      "budget, exact gradients, coordinates standardised by the pilots' median mean and sd "
                                      "(Coullon, South & Nemeth 2023)"},
                           {"step_size", best->step},
                           {"ksd", best->ksd},
                           {"at_grid_edge", at_edge},
                           {"standardisation", {{"mean", standard.mean}, {"sd", standard.sd}}},
                           {"grid", grid}};
  write_atomically(out / "tune.json", record.dump(2) + "\n");
  fmt::print("chosen: integrator.step_size = {:.6g} (KSD {:.5g}); written to {}\n", best->step, best->ksd,
             (out / "tuned.toml").string());
  if (at_edge)
    fmt::print("warning: the lowest KSD is at the {} step of the grid, so a better step may lie beyond it; widen the grid "
               "(--factor, --points or --steps)\n",
               best == pilots.begin() ? "smallest" : "largest");
  return 0;
}

}  // namespace

int tune_command(const TuneOptions& options) {
  if (options.draws < 10) throw sgmcmc::Error("tune: --draws must be at least 10");
  const auto [config, label, source] = load_config(options);
  const auto steps = step_grid(config, options);
  const auto pilot = pilot_config(config, options);
  if (launcher_rank() == 0) check_pilot(pilot, steps.front(), options);
  GeneratedSweep sweep{.command = "tune",
                       .kind = "tuning",
                       .out = options.out.value_or(fs::path("runs") / ("tune-" + label)),
                       .file_name = sweep_file_name,
                       .cells = pilots_folder,
                       .text = "",  // written below, from the sweep's other fields
                       .cell_count = steps.size(),
                       .grid = options};
  sweep.text = generated_sweep_text(sweep, "Written by `sgmcmc tune`: one pilot chain per step size, scored by the KSD of its draws.",
                                    pilot, sweep_axes(steps));
  bool ran = false;
  const int code = run_generated_sweep(sweep, ran);
  if (!ran) return code;
  // A diverged pilot is a result (its step is too large), not a failure of the tuning.
  return choose(sweep.out, config, steps);
}

Command add_tune_command(CLI::App& app) {
  const auto tune = std::make_shared<TuneOptions>();
  auto* command = app.add_subcommand("tune", "choose the step size by the kernel Stein discrepancy of pilot chains");
  command->footer("Example: sgmcmc tune --preset demo --factor 3 --points 7 --jobs 2");
  add_configuration_options(*command, *tune);
  command->add_option("--steps", tune->steps, "the step sizes to try (default: a grid around integrator.step_size)")
      ->delimiter(',');
  command->add_option("--factor", tune->factor, "ratio of neighbouring steps of the grid (3)");
  command->add_option("--points", tune->points, "steps in the grid (7), centred on integrator.step_size");
  command->add_option("--iterations", tune->iterations, "each pilot's run.iterations (default: the configuration's)");
  command->add_option("--warmup", tune->warmup, "each pilot's run.warmup (default: the configuration's)");
  command->add_option("--draws", tune->draws, "about this many draws per pilot, each with a full-data gradient, score it (500)");
  add_grid_options(*command, *tune, "pilots", "runs/tune-<preset>",
                   "no line per pilot (the table and the choice are printed)");
  return {command, [tune] {
            require_configuration(*tune, "tune");
            return tune_command(*tune);
          }};
}
