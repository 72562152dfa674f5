// sgmcmc: run stochastic-gradient MCMC chains from presets or TOML files, with model plugins
// loaded at run time.
#include <cstdio>
#include <exception>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cluster.hpp"
#include "commands.hpp"

import sgmcmc;

int main(int argc, char** argv) {
  CLI::App app{"sgmcmc: stochastic-gradient MCMC with any model, estimator, integrator and corrector"};
  app.require_subcommand(1);
  std::optional<std::filesystem::path> plugin_dir;

  RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "run chains from a preset or a TOML configuration");
  auto* preset = run_cmd->add_option("--preset", run.preset, "a preset (see `sgmcmc presets`)");
  run_cmd->add_option("--config", run.config_file, "a TOML configuration file")->excludes(preset);
  run_cmd->add_option("--set", run.overrides, "override a key: section.key=value (repeatable)");
  run_cmd->add_option("--seed", run.seed, "run.seed");
  run_cmd->add_option("--chains", run.chains, "run.chains");
  run_cmd->add_option("--threads", run.threads, "threads running chains (default: one per chain, at most the cores)");
  run_cmd->add_option("--out", run.out, "output folder (default: runs/<preset or config>-<time>)");
  run_cmd->add_flag("--replace", run.replace, "replace the output folder's files if it is not empty");
  run_cmd->add_flag("--quiet", run.quiet, "no progress bar, no summary");
  run_cmd->add_option("--plugin-dir", run.plugin_dir, "search this folder for model plugins first");
  run_cmd->add_option("--checkpoint-every", run.checkpoint_every,
                      "run.checkpoint_every: save every chain's state every K iterations, for --resume")
      ->check(CLI::NonNegativeNumber);
  run_cmd->add_option("--stop-after", run.stop_after,
                      "stop every chain after iteration K's checkpoint (K a multiple of the checkpoint interval)");
  auto* resume = run_cmd->add_option("--resume", run.resume, "continue the interrupted run in this folder from its checkpoints");
  resume->excludes("--out")->excludes("--replace");

  SweepOptions sweep;
  auto* sweep_cmd = app.add_subcommand("sweep", "a grid of runs (cells) over any settings, on a thread pool");
  sweep_cmd->add_option("file", sweep.file, "a sweep file: preset, [base.<section>] and [axes]")->required();
  sweep_cmd->add_option("--jobs", sweep.jobs, "cells run at once (default: the number of cores)")->check(CLI::PositiveNumber);
  sweep_cmd->add_option("--out", sweep.out, "output folder (default: runs/sweep-<file name>)");
  sweep_cmd->add_flag("--resume", sweep.resume, "keep the cells this folder already finished, run the rest");
  sweep_cmd->add_flag("--quiet", sweep.quiet, "no line per cell");
  sweep_cmd->add_option("--plugin-dir", sweep.plugin_dir, "search this folder for model plugins first");
  sweep_cmd->add_option("--max-cells", sweep.max_cells, "refuse a larger grid unless --yes (200)");
  sweep_cmd->add_flag("--yes", sweep.yes, "run a grid larger than --max-cells");

  PlotOptions plot;
  auto* plot_cmd = app.add_subcommand("plot", "figures of a sweep: metric against seconds and item gradients, final values across seeds");
  plot_cmd->add_option("folder", plot.folder, "a sweep's output folder")->required();
  plot_cmd->add_option("--panel", plot.panel, "one panel per value of this axis (e.g. model.subsample)");
  plot_cmd->add_option("--metric", plot.metric, "the metric to draw (default: the first)");
  plot_cmd->add_option("--seed-axis", plot.seed_axis, "the axis box plots spread over (default: run.seed)");
  plot_cmd->add_option("--out", plot.out, "where the PNGs go (default: the sweep's folder)");
  plot_cmd->add_option("--name", plot.name, "the files' prefix (default: the sweep folder's name)");

  auto* list_cmd = app.add_subcommand("list", "models found, estimators, integrators, correctors");
  list_cmd->add_option("--plugin-dir", plugin_dir, "search this folder for model plugins first");
  auto* presets_cmd = app.add_subcommand("presets", "presets with a one-line description");

  std::string check_plugin;
  std::vector<std::string> check_overrides;
  auto* check_cmd = app.add_subcommand("check-model", "check a model plugin's gradients, batches and capabilities");
  check_cmd->add_option("plugin", check_plugin, "plugin name or path to its .so")->required();
  check_cmd->add_option("--set", check_overrides, "a [model] key: model.key=value (repeatable)");
  check_cmd->add_option("--plugin-dir", plugin_dir, "search this folder for model plugins first");

  std::filesystem::path summary_folder;
  std::vector<std::string> summary_parameters;
  std::size_t summary_max = 20;
  auto* summary_cmd = app.add_subcommand("summary", "ESS, R-hat, MCSE and quantiles of a run's chains");
  summary_cmd->add_option("folder", summary_folder, "a run's output folder")->required();
  summary_cmd->add_option("--parameters", summary_parameters, "the columns to summarise")->delimiter(',');
  summary_cmd->add_option("--max-parameters", summary_max, "without --parameters, the first this many (20)");

  std::filesystem::path zv_folder;
  ZvOptions zv;
  auto* zv_cmd = app.add_subcommand("zv", "zero-variance control-variate estimates from recorded gradients; kernel Stein discrepancy");
  zv_cmd->add_option("folder", zv_folder, "a run's output folder with gradients-<k>.csv files")->required();
  zv_cmd->add_option("--order", zv.order, "1 (linear) or 2 (quadratic) polynomials (default 2 when d <= 30)")
      ->check(CLI::IsMember({1, 2}));
  zv_cmd->add_option("--max-parameters", zv.max_parameters, "show the first this many parameters (20); quantities always");
  zv_cmd->add_option("--csv", zv.csv, "also write the table, every parameter and quantity, as CSV to this file");

  std::filesystem::path topics_folder;
  std::size_t topics_top = 10;
  std::optional<std::filesystem::path> topics_vocabulary;
  auto* topics_cmd = app.add_subcommand("topics", "the top words of each topic of an lda run (posterior mean of π)");
  topics_cmd->add_option("folder", topics_folder, "an lda run's output folder")->required();
  topics_cmd->add_option("--top", topics_top, "words per topic (10)")->check(CLI::PositiveNumber);
  topics_cmd->add_option("--vocab", topics_vocabulary, "a vocabulary file, word k on line k (UCI vocab.<name>.txt)");

  std::string new_name;
  std::filesystem::path new_folder;
  auto* new_cmd = app.add_subcommand("new-model", "write a model plugin project that builds against the installed sgmcmc");
  new_cmd->add_option("name", new_name, "the model's name (lower case, digits, _)")->required();
  new_cmd->add_option("folder", new_folder, "a new or empty folder")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Under mpirun every rank parses the same arguments: rank 0 alone says what is wrong.
    if (launcher_rank() != 0) return error.get_exit_code() == 0 ? 0 : exit_bad_input;
    return app.exit(error) == 0 ? 0 : exit_bad_input;
  }
  try {
    if (run_cmd->parsed()) {
      if (!run.preset && !run.config_file && !run.resume)
        throw sgmcmc::Error("sgmcmc run: give --preset NAME, --config FILE.toml or --resume DIR");
      return run_command(run);
    }
    if (sweep_cmd->parsed()) return sweep_command(sweep);
    if (plot_cmd->parsed()) return plot_command(plot);
    if (list_cmd->parsed()) return list_command(plugin_dir);
    if (presets_cmd->parsed()) return presets_command();
    if (check_cmd->parsed()) return check_model_command(check_plugin, check_overrides, plugin_dir);
    if (new_cmd->parsed()) return new_model_command(new_name, new_folder);
    if (summary_cmd->parsed()) return summary_command(summary_folder, summary_parameters, summary_max);
    if (zv_cmd->parsed()) return zv_command(zv_folder, zv);
    if (topics_cmd->parsed()) return topics_command(topics_folder, topics_top, topics_vocabulary);
  } catch (const std::exception& error) {
    return report_error(error);
  }
  return 0;
}

int report_error(const std::exception& error, const std::string& where) {
  const bool bad_input = dynamic_cast<const sgmcmc::Error*>(&error) != nullptr;
  fmt::print(stderr, "sgmcmc: {}{}: {}\n", bad_input ? "error" : "internal error", where, error.what());
  std::fflush(stderr);
  return bad_input ? exit_bad_input : exit_internal_error;
}
