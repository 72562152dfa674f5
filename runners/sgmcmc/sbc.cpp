// `sgmcmc sbc`: simulation-based calibration (Talts, Betancourt, Simpson, Vehtari & Gelman 2018,
// Algorithm 2). Each replication r = 1..R is one cell of a sweep (so threads, MPI and --resume come
// from the sweep machinery): the model draws θ* from its prior and simulates a data set from it
// (model.simulate_from_prior = true, from the data stream of run.data_seed), the configured sampler
// runs on that data, and the rank of θ*_j among L draws of θ_j (evenly spaced over all chains'
// draws, so near-independent when the ESS is at least L; ties with θ* broken at random) is recorded.
// Uniform ranks are tested by χ² and by the ECDF test with simultaneous bands, and the verdict
// adjusts all their p-values by Holm's procedure (sgmcmc.calibration says how).
//
// Output folder:
//   sbc-sweep.toml   the generated sweep (the configuration as `config = '''...'''`, R seeds zipped)
//   replications/    the sweep's folder: one run per replication, results.csv, summary.csv
//   ranks.csv        replication, run_seed, parameter, truth, rank, draws, ess_bulk (parameter: also
//                    a quantity of --quantities, lp__ or the model's, with truth its value at θ*)
//   tests.csv        per parameter: both tests' statistics, p-values, Holm-adjusted p-values and the verdict
//   ecdf.csv         per parameter and point z_k: ECDF - z and the band's limits (for the plot)
//   sbc_ecdf.png     the ECDF-difference plots (runners/figures/sbc_plot.py)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "configuration.hpp"
#include "files.hpp"
#include "generated_sweep.hpp"
#include "run_folder.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

constexpr const char* sweep_file_name = "sbc-sweep.toml";
constexpr const char* replications_folder = "replications";
/// The stream of a replication's run seed that breaks ties between θ* and its draws: far from the
/// streams its chains (2k + 1), recorders (2k + 2) and data (0) draw from, so reproducible and
/// independent of them.
constexpr std::uint64_t tie_breaking_stream = 0xFFFF'FFFF'FFFF'FF00;

struct Replication {
  std::int64_t seed = 0;
  fs::path folder;
};

/// The configuration with --set applied and model.simulate_from_prior set; its label names the
/// default output folder.
std::pair<sgmcmc::RunConfig, std::string> load_sbc_config(const SbcOptions& options) {
  auto [config, label, source] = load_config(options);
  config["model"].set("simulate_from_prior", {true, "sgmcmc sbc"});
  // --quantities: lp__ needs run.lp, a model quantity output.quantities, in every replication's draws.
  for (const auto& name : options.quantities) {
    if (name == "lp__") config["run"].set("lp", {true, "sgmcmc sbc --quantities"});
    else config["output"].set("quantities", {true, "sgmcmc sbc --quantities"});
  }
  return {config, label};
}

/// Refuses, with the plugin's reason, a model that cannot simulate data from a prior draw.
void check_model(const sgmcmc::RunConfig& config, const SbcOptions& options) {
  const auto& entries = config["model"].entries();
  const auto name = entries.find("name");
  if (name == entries.end() || !std::holds_alternative<std::string>(name->second.value))
    throw sgmcmc::Error("sbc: the configuration has no model.name");
  const auto plugin = sgmcmc::load_plugin(std::get<std::string>(name->second.value), plugin_folders(options.plugin_dir));
  const auto& info = plugin.info();
  if (!info.capabilities.prior_simulation)
    throw sgmcmc::Error(fmt::format("sbc: model {} cannot be calibrated by simulation: {}", info.name,
                                    info.no_prior_simulation.empty() ? "it cannot simulate data from a prior draw "
                                                                       "(no prior-simulation capability)"
                                                                     : info.no_prior_simulation));
}

std::string sweep_axes(const SbcOptions& options) {
  std::vector<std::int64_t> seeds;
  for (std::int64_t r = 1; r <= static_cast<std::int64_t>(options.replications); ++r)
    seeds.push_back(r + static_cast<std::int64_t>(options.replications) * (options.seed - 1));
  return fmt::format("zip = [[\"run.seed\", \"run.data_seed\"]]\n\n[axes]\n\"run.seed\" = [{}]\n\"run.data_seed\" = [{}]\n",
                     fmt::join(seeds, ", "), fmt::join(seeds, ", "));
}

/// The finished replications of the sweep folder, by seed.
std::vector<Replication> finished_replications(const fs::path& folder, std::size_t& unfinished) {
  std::vector<Replication> found;
  unfinished = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (!entry.is_directory()) continue;
    const auto manifest = manifest_if_any(entry.path());
    if (!manifest.is_object() || manifest.value("status", "") != "complete") {
      ++unfinished;
      continue;
    }
    found.push_back({manifest["config"]["run"]["seed"].get<std::int64_t>(), entry.path()});
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.seed < b.seed; });
  return found;
}

std::string csv_number(double x) { return fmt::format("{:.17g}", x); }

/// Runs runners/figures/sbc_plot.py on the folder; false (with a warning printed) when it fails:
/// the tables are the result, the figure a view of them.
bool draw_plot(const fs::path& out) {
  try {
    if (run_figure_script("sbc_plot.py", {out.string()}) == 0) return true;
    fmt::print(stderr, "sgmcmc sbc: warning: sbc_plot.py failed; no PNG\n");
  } catch (const sgmcmc::Error& error) {
    fmt::print(stderr, "sgmcmc sbc: warning: {}; no PNG\n", error.what());
  }
  return false;
}

/// Ranks, tests, verdicts, tables and the figure, from the finished replications.
int analyse(const fs::path& out, const SbcOptions& options) {
  std::size_t unfinished = 0;
  const auto replications = finished_replications(out / replications_folder, unfinished);
  if (replications.size() < 2)
    throw sgmcmc::Error(fmt::format("sbc: {} replication(s) finished in {}; the tests need at least 2",
                                    replications.size(), (out / replications_folder).string()));
  const std::size_t L = options.draws;
  std::map<std::string, std::vector<std::size_t>> ranks;  // by parameter
  std::vector<std::string> order;
  std::map<std::string, std::size_t> low_ess;
  std::string rows = "replication,run_seed,parameter,truth,rank,draws,ess_bulk\n";
  std::size_t index = 0;
  for (const auto& replication : replications) {
    ++index;
    const auto manifest = manifest_if_any(replication.folder);
    if (!manifest["model"].contains("simulated_parameters"))
      throw sgmcmc::Error(fmt::format("sbc: {} records no simulated_parameters (θ*) in its manifest.json",
                                      replication.folder.string()));
    const auto& parameters = manifest["model"]["simulated_parameters"];
    const auto quantities = manifest["model"].value("simulated_quantities", nlohmann::json::object());
    const Chains chains = read_chains(replication.folder, "sbc");
    sgmcmc::Rng ties(static_cast<std::uint64_t>(replication.seed), tie_breaking_stream);
    std::vector<std::pair<std::size_t, double>> ranked;  // column and its value at θ*
    for (std::size_t c = 0; c < chains.columns.size(); ++c)
      if (parameters.contains(chains.columns[c])) ranked.emplace_back(c, parameters[chains.columns[c]].get<double>());
    for (const auto& name : options.quantities) {
      const auto found = std::find(chains.columns.begin(), chains.columns.end(), name);
      if (found == chains.columns.end() || !quantities.contains(name) || !quantities[name].is_number())
        throw sgmcmc::Error(fmt::format("sbc: --quantities {}: {} holds no such column with a value at θ* ({}); the model's "
                                        "quantities are in `sgmcmc list`, and lp__ needs a model with an exact "
                                        "log-likelihood",
                                        name, replication.folder.string(),
                                        found == chains.columns.end() ? "no column in the draws" : "none in manifest.json"));
      ranked.emplace_back(static_cast<std::size_t>(found - chains.columns.begin()), quantities[name].get<double>());
    }
    for (const auto& [c, star] : ranked) {
      const auto& name = chains.columns[c];
      if (index == 1) order.push_back(name);
      const auto draws = column(chains, c);
      std::vector<double> all;
      for (const auto& chain : draws) all.insert(all.end(), chain.begin(), chain.end());
      if (all.size() < L)
        throw sgmcmc::Error(fmt::format("sbc: {} holds {} draws of {}, fewer than --draws {}; raise run.iterations",
                                        replication.folder.string(), all.size(), name, L));
      std::vector<double> spaced(L);
      for (std::size_t l = 0; l < L; ++l) {
        // Draw l of L evenly spaced over the S draws: floor((l + 1/2)·S/L).
        const auto at = static_cast<std::size_t>((static_cast<double>(l) + 0.5) * static_cast<double>(all.size()) / static_cast<double>(L));
        spaced[l] = all[at];
      }
      const std::size_t rank = sgmcmc::rank_among(spaced, star, ties);
      const double ess = sgmcmc::ess_bulk(draws);
      if (!(ess >= static_cast<double>(L))) ++low_ess[name];
      ranks[name].push_back(rank);
      rows += fmt::format("{},{},{},{},{},{},{}\n", index, replication.seed, name, csv_number(star), rank, L, csv_number(ess));
    }
  }
  write_atomically(out / "ranks.csv", rows);
  for (const auto& name : options.quantities)
    if (name != "lp__")
      fmt::print("note: {} is ranked as a function of θ and the data: its rank is uniform for an exact sampler only if it "
                 "reads no data that were simulated from θ* but not conditioned on, such as held-out rows (the shipped models' "
                 "held_out_log_density reads them)\n",
                 name);

  std::string tests = "parameter,replications,max_rank,bins,chi_square,degrees_of_freedom,chi_square_p,ecdf_gamma,"
                      "ecdf_statistic,ecdf_p,ecdf_rejected,alpha,low_ess_replications,chi_square_p_holm,ecdf_p_holm,verdict\n";
  std::string ecdf = "parameter,z,ecdf_difference,lower,upper\n";
  const std::size_t bins = std::min(options.bins, L + 1);
  fmt::print("SBC: {} replications, ranks among {} draws{}\n", replications.size(), L,
                                 unfinished ? fmt::format(" ({} replication(s) not complete, left out)", unfinished) : "");
  // Both tests of every parameter, then one verdict over all of them: Holm's adjustment of the
  // 2 × (parameters) p-values keeps the chance of any false alarm at most alpha.
  std::vector<sgmcmc::ChiSquareTest> chi_tests;
  std::vector<sgmcmc::EcdfBandTest> band_tests;
  std::vector<double> p_values;  // parameter by parameter: χ², then ECDF
  for (const auto& name : order) {
    const auto& r = ranks[name];
    if (r.size() != replications.size())
      throw sgmcmc::Error(fmt::format("sbc: parameter {} is missing from some replications", name));
    chi_tests.push_back(sgmcmc::rank_chi_square(r, L, bins));
    band_tests.push_back(sgmcmc::rank_ecdf_test(r, L, options.alpha, options.simulations, 1));
    p_values.push_back(chi_tests.back().p_value);
    p_values.push_back(band_tests.back().p_value);
  }
  const auto adjusted = sgmcmc::holm_adjusted(p_values);
  for (std::size_t index = 0; index < order.size(); ++index) {
    const auto& name = order[index];
    const auto& r = ranks[name];
    const auto& chi = chi_tests[index];
    const auto& band = band_tests[index];
    const double chi_holm = adjusted[2 * index], ecdf_holm = adjusted[2 * index + 1];
    const bool calibrated = chi_holm >= options.alpha && ecdf_holm >= options.alpha;
    const std::string verdict = calibrated ? "calibrated" : "miscalibrated";
    tests += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", name, r.size(), L, bins, csv_number(chi.statistic),
                         chi.degrees_of_freedom, csv_number(chi.p_value), csv_number(band.gamma), csv_number(band.statistic),
                         csv_number(band.p_value), band.rejected, csv_number(options.alpha), low_ess[name],
                         csv_number(chi_holm), csv_number(ecdf_holm), verdict);
    const double n = static_cast<double>(r.size());
    for (std::size_t k = 0; k < band.z.size(); ++k)
      ecdf += fmt::format("{},{},{},{},{}\n", name, csv_number(band.z[k]), csv_number(static_cast<double>(band.count[k]) / n - band.z[k]),
                          csv_number(static_cast<double>(band.lower[k]) / n - band.z[k]),
                          csv_number(static_cast<double>(band.upper[k]) / n - band.z[k]));
    fmt::print("{}: {} (ECDF {} the {:.0f}% simultaneous band, p = {:.3g}, Holm {:.3g}; χ² = {:.1f} on {} df, p = {:.3g}, "
               "Holm {:.3g}){}\n",
               name, verdict, band.rejected ? "leaves" : "stays inside", 100 * (1 - options.alpha), band.p_value, ecdf_holm,
               chi.statistic, chi.degrees_of_freedom, chi.p_value, chi_holm,
               low_ess[name] ? fmt::format("; {} replication(s) with bulk ESS < {}", low_ess[name], L) : "");
  }
  fmt::print("verdict: miscalibrated where a Holm-adjusted p-value is below --alpha {} ({} tests: χ² and ECDF for each of {} "
             "parameters)\n",
             options.alpha, p_values.size(), order.size());
  write_atomically(out / "tests.csv", tests);
  write_atomically(out / "ecdf.csv", ecdf);
  std::size_t low = 0;
  for (const auto& [name, count] : low_ess) low = std::max(low, count);
  if (low)
    fmt::print("warning: in some replications the bulk ESS is below --draws {}: those draws are autocorrelated, which "
               "alone bends the ranks; raise run.iterations (or lower --draws)\n",
               L);
  if (!options.no_plot && draw_plot(out) && !options.quiet) fmt::print("figure: {}\n", (out / "sbc_ecdf.png").string());
  return unfinished ? exit_diverged : 0;
}

}  // namespace

int sbc_command(const SbcOptions& options) {
  if (options.draws < 1) throw sgmcmc::Error("sbc: --draws must be at least 1");
  if (options.bins < 2) throw sgmcmc::Error("sbc: --bins must be at least 2");
  if (!(options.alpha > 0.0 && options.alpha < 1.0)) throw sgmcmc::Error("sbc: --alpha must be in (0, 1)");
  if (options.replications < 2) throw sgmcmc::Error("sbc: --replications must be at least 2");
  // Each replication is a cell of the generated sweep: its two seeds in the sweep file, its name,
  // its cell and its rows of the tables hold at least 100 bytes, before any of its runs.
  if (const double budget = static_cast<double>(sgmcmc::memory_budget_bytes());
      budget > 0 && 100.0 * static_cast<double>(options.replications) > budget)
    throw sgmcmc::Error(fmt::format("sbc: --replications {}: the replications' bookkeeping alone (at least 100 bytes "
                                    "each) needs more than {}",
                                    options.replications, sgmcmc::memory_budget_description()));
  if (options.seed < 1) throw sgmcmc::Error("sbc: --seed must be at least 1");
  const auto [config, label] = load_sbc_config(options);
  check_model(config, options);
  GeneratedSweep sweep{.command = "sbc",
                       .kind = "SBC",
                       .out = options.out.value_or(fs::path("runs") / ("sbc-" + label)),
                       .file_name = sweep_file_name,
                       .cells = replications_folder,
                       .text = "",  // written below, from the sweep's other fields
                       .cell_count = options.replications,
                       .grid = options};
  sweep.text = generated_sweep_text(
      sweep, fmt::format("Written by `sgmcmc sbc`: {} replications, each data simulated from a prior draw and sampled.", options.replications),
      config, sweep_axes(options));
  bool ran = false;
  const int code = run_generated_sweep(sweep, ran);
  if (!ran) return code;
  return std::max(code, analyse(sweep.out, options));
}

Command add_sbc_command(CLI::App& app) {
  const auto sbc = std::make_shared<SbcOptions>();
  auto* command = app.add_subcommand("sbc", "simulation-based calibration: ranks of prior draws among the sampler's draws");
  command->footer("Example: sgmcmc sbc --preset demo --set model.n=200 --replications 100 --jobs 2");
  add_configuration_options(*command, *sbc);
  command->add_option("--replications", sbc->replications, "R, the number of prior draws (100)");
  command->add_option("--draws", sbc->draws, "L, the draws each θ* is ranked among (99: ranks 0..99)");
  command->add_option("--bins", sbc->bins, "bins of the χ² test (20)");
  command->add_option("--alpha", sbc->alpha, "level of each test (0.05)");
  command->add_option("--simulations", sbc->simulations, "uniform rank sets simulated for the ECDF band (10000)")->check(at_least_one);
  command->add_option("--quantities", sbc->quantities,
                      "also rank these at θ* among their draws: lp__ (sets run.lp) or the model's quantities (sets "
                      "output.quantities)")
      ->delimiter(',');
  command->add_option("--seed", sbc->seed, "replication r uses run.seed = run.data_seed = r + R·(seed - 1) (1)")
      ->check(at_least_one);
  add_grid_options(*command, *sbc, "replications", "runs/sbc-<preset>",
                   "no line per replication (the verdicts are printed)");
  command->add_flag("--no-plot", sbc->no_plot, "no PNG");
  return {command, [sbc] {
            require_configuration(*sbc, "sbc");
            return sbc_command(*sbc);
          }};
}
