// `sgmcmc sweep FILE.toml`: a grid of runs (cells) from one base configuration, on a thread pool,
// and under `mpirun` across the ranks of a cluster.
//
// The sweep file: sweep_file.hpp. Output folder:
//   sweep.toml         the sweep file, so --resume can refuse a folder of another sweep
//   <cell>/            one run's normal outputs; complete when its manifest.json exists (with
//                      run.checkpoint_every, --resume continues a partial one from its checkpoints)
//   results.csv        cell, axis values, then each cell's metrics.csv rows
//   summary.csv        one row per cell: status, cost, acceptance, final metrics, skip reason
#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster.hpp"
#include "commands.hpp"
#include "sweep_cluster.hpp"
#include "sweep_tables.hpp"

import sgmcmc;

namespace {

/// After every cell: rank 0 writes both tables and prints the tally; every rank returns its code.
int finish(const Cluster& cluster, const Plan& plan, const SweepOptions& options) {
  int code = 0;
  if (cluster.root()) {
    const std::size_t concurrent = write_tables(plan.sweep, plan.cells, plan.out);
    std::map<std::string, int> counts;
    for (const auto& cell : plan.cells) ++counts[cell.status];
    std::vector<std::string> parts;
    for (const auto& [status, count] : counts) parts.push_back(fmt::format("{} {}", count, status == "done" ? "already done" : status));
    if (!options.quiet)
      fmt::print("{} cells{}: {} -> {}\n", plan.cells.size(), cluster.size() > 1 ? fmt::format(" on {} ranks", cluster.size()) : "",
                 fmt::join(parts, ", "), plan.out.string());
    if (!options.quiet && concurrent > 1)
      fmt::print("up to {} cells ran at once on one machine, sharing its cores: compare cells by cpu_seconds, not seconds "
                 "(summary.csv's concurrent_cells; `sgmcmc plot` draws against CPU seconds)\n",
                 concurrent);
    for (const auto& cell : plan.cells)
      if (cell.status == "failed") fmt::print(stderr, "sgmcmc: cell {} failed: {}\n", cell.name, cell.reason);
    code = counts["failed"] || counts["diverged"] ? exit_diverged : 0;
  }
  return std::stoi(cluster.broadcast(std::to_string(code)));
}

/// A failure on one rank of several, which the others would wait on forever: ends them all.
[[noreturn]] void end_job(const Cluster& cluster, const std::exception& error) {
  cluster.abort(report_error(error, fmt::format(" on rank {}", cluster.rank())));
}

}  // namespace

int sweep_command(const SweepOptions& options) {
  const Cluster cluster;
  // Ranks on one machine share its cores.
  const unsigned jobs = options.jobs ? options.jobs
                                     : std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(cluster.ranks_here()));
  Shared shared;
  try {
    shared = share_plan(cluster, options, jobs);  // rank 0 reports a refusal itself, once
  } catch (const std::exception& error) {
    end_job(cluster, error);  // rank 0 goes on without this rank (a different sgmcmc here?)
  }
  if (!shared.plan) return shared.refused;
  Plan& plan = *shared.plan;
  try {
    if (cluster.root()) run_on_root(cluster, plan, options, jobs);
    else run_on_worker(cluster, plan, options, jobs);
    return finish(cluster, plan, options);
  } catch (const std::exception& error) {
    if (cluster.size() == 1) throw;
    end_job(cluster, error);
  }
}

Command add_sweep_command(CLI::App& app) {
  const auto sweep = std::make_shared<SweepOptions>();
  auto* command = app.add_subcommand("sweep", "a grid of runs (cells) over any settings, on a thread pool");
  command->footer("Example: sgmcmc sweep runners/presets/sweeps/covtype-figure1.toml --jobs 2");
  command->add_option("file", sweep->file, "a sweep file: preset, [base.<section>] and [axes]")->required();
  add_grid_options(*command, *sweep, "cells", "runs/sweep-<file name>", "no line per cell");
  command->add_option("--max-cells", sweep->max_cells, "refuse a larger grid unless --yes (200)");
  command->add_flag("--yes", sweep->yes, "run a grid larger than --max-cells");
  return {command, [sweep] { return sweep_command(*sweep); }};
}
