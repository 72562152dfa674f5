// What `sgmcmc run` prints once its chains are done, and its exit code (run.hpp).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chain_files.hpp"
#include "commands.hpp"
#include "interruption.hpp"
#include "prepared_run.hpp"
#include "run.hpp"
#include "run_folder.hpp"

import sgmcmc;

namespace fs = std::filesystem;

int report_run(const PreparedRun& run, RunOutcome outcome, const fs::path& out, const RunReport& report) {
  const auto& schedule = run.plan.schedule;
  const auto& jobs = run.jobs;
  if (outcome == RunOutcome::stopped) {
    fmt::print(stderr, "sgmcmc: stopped after iteration {} (--stop-after); continue with: {}\n", report.stop_after,
               report.resume_command);
    return 0;
  }
  if (outcome == RunOutcome::interrupted) {
    std::vector<std::string> chains;
    for (std::size_t k = 0; k < jobs.size(); ++k)
      chains.push_back(fmt::format("chain {} {} {}", k + 1, jobs[k].result.stopped ? "at iteration" : "complete,",
                                   jobs[k].result.iterations));
    fmt::print(stderr,
               "sgmcmc: interrupted ({}): {}; the checkpoints, metrics.csv and manifest.json (status \"interrupted\") "
               "are in {}; continue with: {}\n",
               *interruption_name() ? interruption_name() : "a signal to another rank", fmt::join(chains, ", "),
               out.string(), report.resume_command);
    return exit_interrupted;
  }
  const bool any_diverged = outcome == RunOutcome::diverged;
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    const auto& r = jobs[k].result;
    if (r.diverged)
      fmt::print(stderr, "sgmcmc: chain {} {}; its draws until then are in {}\n", k + 1, r.message, run_folder::chain_draws(k + 1));
    if (r.non_finite_proposals)
      fmt::print(stderr, "sgmcmc: chain {}: {} proposal(s) with a non-finite potential or energy error were rejected\n",
                 k + 1, r.non_finite_proposals);
  }
  if (!report.quiet) {
    fmt::print("{} chain(s) of {} + {} iterations (warmup + recorded), model '{}' (d = {}, N = {}), in {:.2f} s -> {}\n", schedule.chains,
               schedule.chain.warmup, schedule.chain.iterations, run.model_name, run.model()->dimension(), run.model()->num_items(), run.elapsed(), out.string());
    const auto metric_names = run.model()->metric_names();
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      std::string last;
      if (!jobs[k].files->rows().empty())
        for (std::size_t m = 0; m < metric_names.size(); ++m)
          last += fmt::format(", {} {:.4f}", metric_names[m], jobs[k].files->rows().back().values[m]);
      if (run.tests_acceptance)
        last += fmt::format(", acceptance rate {:.3f}", static_cast<double>(jobs[k].result.accepted_blocks) /
                                                           static_cast<double>(std::max<std::uint64_t>(1, jobs[k].result.blocks)));
      fmt::print("  chain {}: {} item gradients{}\n", k + 1, jobs[k].result.cost.item_gradients, last);
    }
    if (schedule.chain.recorded_draws() >= 4) {
      fmt::print("\n");
      try {  // as for zv below: the run's files are complete; a refusal (no draws) does not fail it
        summary_command(out, {}, 20);
      } catch (const sgmcmc::Error& error) {
        fmt::print(stderr, "sgmcmc: no summary: {}\n", error.what());
      }
    }
  }
  if (run.plan.output.zv) {  // asked for explicitly, so printed even with --quiet
    fmt::print("\n");
    try {  // the run's files are complete: a ZV refusal (too few draws) does not fail the run
      zv_command(out, {});
    } catch (const sgmcmc::Error& error) {
      fmt::print(stderr, "sgmcmc: {} (the run itself is complete)\n", error.what());
    }
  }
  return any_diverged ? exit_diverged : 0;
}
