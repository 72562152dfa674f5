// The sub-commands of `sgmcmc`. Each returns the process exit code; errors the user can fix are
// thrown as sgmcmc::Error and printed by main.
#pragma once
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <limits>
#include <stdexcept>
#include <vector>
#include <CLI/CLI.hpp>

namespace CLI {
class App;
}

/// A sub-command on the command line. Each command's file declares it and its options in
/// add_<name>_command, so a new command is a new file and a line of main.cpp; `run` runs it with
/// the options parsed.
struct Command {
  CLI::App* subcommand;
  std::function<int()> run;
};

Command add_run_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);
Command add_plot_command(CLI::App& app);
Command add_list_command(CLI::App& app);
Command add_presets_command(CLI::App& app);
Command add_check_model_command(CLI::App& app);
Command add_summary_command(CLI::App& app);
Command add_zv_command(CLI::App& app);
Command add_topics_command(CLI::App& app);
Command add_new_model_command(CLI::App& app);
Command add_sbc_command(CLI::App& app);
Command add_tune_command(CLI::App& app);
Command add_gradient_variance_command(CLI::App& app);
Command add_predict_command(CLI::App& app);
Command add_convert_command(CLI::App& app);

/// Exit codes: 0 done, 1 a chain diverged (its draws up to then are kept), 2 bad input, 3 a bug,
/// 130 (128 + SIGINT, as shells report Ctrl-C) a run stopped by SIGINT or SIGTERM, resumable.
/// A check of an option that counts things: a whole number >= `minimum`, said so when it is not
/// (CLI::PositiveNumber names its range up to the largest double, 309 digits, and CLI::Range
/// calls a word "not in range").
inline CLI::Validator whole_number_at_least(long long minimum) {
  return CLI::Validator(
      [minimum](std::string& text) -> std::string {
        std::size_t used = 0;
        long long value = 0;
        try {
          value = std::stoll(text, &used);
        } catch (const std::out_of_range&) {  // the number would otherwise be clamped without a word
          return "expected a whole number below 2^63, found " + text;
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size()) return "expected a whole number, found '" + text + "'";
        if (value < minimum) return "expected a whole number >= " + std::to_string(minimum) + ", found " + text;
        return "";
      },
      "INT >= " + std::to_string(minimum));
}
inline const CLI::Validator at_least_one = whole_number_at_least(1);
inline const CLI::Validator at_least_zero = whole_number_at_least(0);

inline constexpr int exit_diverged = 1;
inline constexpr int exit_bad_input = 2;
inline constexpr int exit_internal_error = 3;
inline constexpr int exit_interrupted = 130;

/// Prints `error` to stderr as every command reports a failure: "sgmcmc: error: …" for an
/// sgmcmc::Error (input the user can fix), "sgmcmc: internal error: …" for anything else;
/// `where` (" on rank 1") follows the label. Flushes, and returns the exit code (2 or 3).
int report_error(const std::exception& error, const std::string& where = "");

/// `--plugin-dir DIR`, which every command that loads a model plugin takes.
inline void add_plugin_dir_option(CLI::App& command, std::optional<std::filesystem::path>& plugin_dir) {
  command.add_option("--plugin-dir", plugin_dir, "search this folder for model plugins first");
}

/// Where a command's configuration comes from: `--preset NAME` or `--config FILE` (one of the
/// two), then the `--set section.key=value` overrides. `run`, `sbc`, `tune` and
/// `gradient-variance` take it; add_configuration_options (configuration.hpp) registers it.
struct ConfigurationSource {
  std::optional<std::string> preset;
  std::optional<std::filesystem::path> config_file;
  std::vector<std::string> overrides;  // --set section.key=value
};

/// The options of the commands that run a grid of runs at once, each in its own folder under
/// `out`: sweep's cells, sbc's replications, tune's pilots.
struct GridOptions {
  unsigned jobs = 0;  // runs at once; 0: the number of cores
  std::optional<std::filesystem::path> out;
  bool resume = false;
  bool quiet = false;
  std::optional<std::filesystem::path> plugin_dir;
};

/// Registers GridOptions. `runs` names the grid's runs ("cells"), `default_out` the output folder
/// when --out is not given, `quiet` what --quiet leaves out.
inline void add_grid_options(CLI::App& command, GridOptions& options, const std::string& runs,
                             const std::string& default_out, const std::string& quiet) {
  command.add_option("--jobs", options.jobs, runs + " run at once (default: the number of cores)")->check(at_least_one);
  command.add_option("--out", options.out, "output folder (default: " + default_out + ")");
  command.add_flag("--resume", options.resume, "keep the " + runs + " this folder already finished, run the rest");
  command.add_flag("--quiet", options.quiet, quiet);
  add_plugin_dir_option(command, options.plugin_dir);
}

struct RunOptions : ConfigurationSource {
  std::optional<std::int64_t> seed;
  std::optional<std::int64_t> chains;
  unsigned threads = 0;  // 0: one per chain, at most the number of cores
  std::optional<std::filesystem::path> out;
  bool replace = false;
  bool quiet = false;
  std::optional<std::filesystem::path> plugin_dir;
  std::optional<std::int64_t> checkpoint_every;  // run.checkpoint_every
  std::uint64_t stop_after = 0;                  // stop after this iteration's checkpoint (0: never)
  std::optional<std::filesystem::path> resume;   // continue the run in this folder
  bool allow_changed_data = false;               // resume even though a data file changed
};

int run_command(const RunOptions& options);

struct SweepOptions : GridOptions {
  std::filesystem::path file;
  std::size_t max_cells = 200;  // a larger grid is refused unless `yes`
  bool yes = false;
};

/// `sgmcmc sweep FILE.toml`: a grid of runs; 1 when a cell failed or diverged.
int sweep_command(const SweepOptions& options);

struct PlotOptions {
  std::filesystem::path folder;  // a sweep's output folder
  std::string panel;             // an axis: one panel per value (empty: one panel)
  std::string metric;            // empty: the first metric
  std::string seed_axis;         // empty: the script's default, run.seed
  std::filesystem::path out;     // empty: the sweep's folder
  std::string name;              // empty: the sweep folder's name
};

struct SbcOptions : ConfigurationSource, GridOptions {
  std::size_t replications = 100;      // R
  std::size_t draws = 99;              // L: ranks 0..L
  std::size_t bins = 20;               // of the χ² test
  double alpha = 0.05;                 // level of each test
  std::size_t simulations = 10000;     // uniform rank sets for the ECDF band
  std::int64_t seed = 1;               // replication r: run.seed = run.data_seed = r + R·(seed - 1)
  std::vector<std::string> quantities;  // --quantities: lp__ and model quantities ranked beside θ
  bool no_plot = false;
};

/// `sgmcmc sbc`: simulation-based calibration through a sweep of replications; 1 when one failed.
int sbc_command(const SbcOptions& options);

struct TuneOptions : ConfigurationSource, GridOptions {
  std::vector<double> steps;           // --steps: the grid as given; empty: factor and points
  double factor = 3.0;                 // neighbouring steps of the grid differ by this ratio
  std::size_t points = 7;              // steps in the grid, centred on integrator.step_size
  std::optional<std::uint64_t> iterations;  // each pilot's run.iterations (default: the configuration's)
  std::optional<std::uint64_t> warmup;      // each pilot's run.warmup (default: the configuration's)
  std::size_t draws = 500;             // about this many draws per pilot, each with a full-data gradient
};

/// `sgmcmc tune`: pilot chains over a grid of step sizes, the one whose draws have the lowest
/// kernel Stein discrepancy chosen and written as tuned.toml.
int tune_command(const TuneOptions& options);

/// `sgmcmc plot DIR`: runs runners/figures/sweep_plot.py; its exit code.
int plot_command(const PlotOptions& options);

/// Runs the figure script `name` of runners/figures (found beside the installed binary or in the
/// source tree) with python3 and `arguments`; its exit code. Throws sgmcmc::Error when the script
/// or the interpreter cannot be found or run, or the script is killed.
int run_figure_script(const std::string& name, const std::vector<std::string>& arguments);
int list_command(const std::optional<std::filesystem::path>& plugin_dir);
int presets_command();

/// `sgmcmc check-model NAME|PATH [--set model.key=value ...]`: 0 when every check passes.
int check_model_command(const std::string& plugin, const std::vector<std::string>& overrides,
                        const std::optional<std::filesystem::path>& plugin_dir);

/// `sgmcmc summary DIR`: diagnostics of the chains in a run's folder; `wanted` empty: the first
/// `max_parameters` parameters.
int summary_command(const std::filesystem::path& folder, const std::vector<std::string>& wanted, std::size_t max_parameters);

struct ZvOptions {
  int order = 0;  // 1 or 2; 0: 2 when d(d+3)/2 <= 500 (d <= 30), else 1
  std::size_t max_parameters = 20;
  std::filesystem::path csv;  // also write every row of the table (all parameters) here, if set
  bool cross_fit = false;     // coefficients fitted on one half of each chain, applied to the other
};

/// `sgmcmc zv DIR`: zero-variance estimates from recorded gradients, and the KSD of the draws.
int zv_command(const std::filesystem::path& folder, const ZvOptions& options);

/// For `sgmcmc summary`: when the run recorded gradients, prints the configurational temperature
/// <θ·∇U>/d and the KSD of the draws; false when there are no gradients-<k>.csv files.
bool gradient_diagnostics(const std::filesystem::path& folder);

/// `sgmcmc topics DIR [--top N] [--vocab FILE]`: the top words of each topic of an `lda` run.
int topics_command(const std::filesystem::path& folder, std::size_t top,
                   const std::optional<std::filesystem::path>& vocabulary_file);

/// `sgmcmc new-model NAME DIR --kind manual|autodiff|glm`: writes a model project that builds (glm:
/// runs) against the installed SDK.
int new_model_command(const std::string& name, const std::filesystem::path& folder, const std::string& kind);

/// --plugin-dir, SGMCMC_PLUGIN_PATH, the build tree, the install prefix.
std::vector<std::filesystem::path> plugin_folders(const std::optional<std::filesystem::path>& plugin_dir);
