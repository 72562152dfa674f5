// Running a prepared run (run.hpp): every chain's files, the chains on their threads, then
// metrics.csv and the manifest, or what --resume needs.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <ctime>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>
#include <cstdio>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "burn_in.hpp"
#include "chain_files.hpp"
#include "commands.hpp"
#include "configuration.hpp"
#include "files.hpp"
#include "interruption.hpp"
#include "progress.hpp"
#include "prepared_run.hpp"
#include "run.hpp"
#include "run_folder.hpp"
#include "run_record.hpp"
#include "start_points.hpp"

import sgmcmc;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double seconds_since_epoch(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::vector<std::string> config_comment_lines(const json& config) {
  std::vector<std::string> lines;
  for (const auto& [section, keys] : config.items())
    for (const auto& [key, value] : keys.items()) lines.push_back(fmt::format("{}.{} = {}", section, key, value.dump()));
  return lines;
}

/// Ends `job` before its first iteration of this run (a stop was requested): it stays where its
/// checkpoint, if any, left it, and a resumed run continues it from there (or afresh).
void stop_before_start(ChainJob& job, std::string message) {
  job.result.stopped = job.result.interrupted = true;
  job.result.iterations = job.chain->state().iteration;
  job.result.message = std::move(message);
  job.files->close(job.result);
}

/// Runs every job on `threads` threads. Chains are independent (own stream, workspace and
/// parts), so which thread runs which chain changes nothing in their output. A chain not yet
/// started when a stop is requested does not start: it stays where its checkpoint (if any) is.
void run_jobs(std::vector<ChainJob>& jobs, const sgmcmc::ChainSchedule& schedule, unsigned threads,
              std::atomic<std::uint64_t>* progress) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t k; (k = next.fetch_add(1)) < jobs.size();) {
      try {
        if (schedule.stop_requested && schedule.stop_requested->load()) {
          stop_before_start(jobs[k], "");
          continue;
        }
        try {
          jobs[k].files->prepare(schedule.stop_requested);
        } catch (const sgmcmc::StopRequested&) {
          stop_before_start(jobs[k], "interrupted before its first iteration (in the draw recorder's centring phase, "
                                     "output.gradients = \"cv\"); a resumed run starts this chain afresh");
          continue;
        }
        if (jobs[k].burn_in && jobs[k].resumed_at == 0)
          if (auto ended = jobs[k].burn_in->run(*jobs[k].chain, schedule, progress)) {
            jobs[k].result = std::move(*ended);
            jobs[k].files->close(jobs[k].result);
            continue;
          }
        std::optional<WithBurnInRecord> with_record;
        if (jobs[k].burn_in) with_record.emplace(*jobs[k].files, *jobs[k].burn_in);
        jobs[k].result = jobs[k].chain->run(schedule, with_record ? *with_record : static_cast<sgmcmc::ChainObserver&>(*jobs[k].files), progress);
        jobs[k].files->close(jobs[k].result);
      } catch (...) {
        jobs[k].failure = std::current_exception();
      }
    }
  };
  std::vector<std::jthread> pool;
  // No more threads than chains: --threads 100000 would otherwise start idle threads until the
  // system (or a sanitizer's allocator) runs out.
  for (std::size_t t = 1; t < std::min<std::size_t>(threads, jobs.size()); ++t) pool.emplace_back(worker);
  worker();
}

/// integrator.adapt_mass: the adapted mass as d numbers (diagonal), or as d rows of d (dense).
json mass_rows(const std::vector<double>& mass, std::size_t dimension) {
  if (mass.size() != dimension * dimension || dimension == 1) return mass;
  json rows = json::array();
  for (std::size_t i = 0; i < dimension; ++i)
    rows.push_back(std::vector<double>(mass.begin() + static_cast<std::ptrdiff_t>(i * dimension),
                                       mass.begin() + static_cast<std::ptrdiff_t>((i + 1) * dimension)));
  return rows;
}

json manifest_chains(const PreparedRun& run) {
  json chains = json::array();
  for (std::size_t k = 0; k < run.jobs.size(); ++k) {
    const auto& r = run.jobs[k].result;
    const char* status = r.diverged ? "diverged" : r.stopped ? "interrupted" : "complete";
    chains.push_back({{"chain", k + 1}, {"status", status}, {"message", r.message},
                      {"iterations", r.iterations}, {"seconds", r.seconds}, {"cpu_seconds", r.cpu_seconds},
                      {"step_size", run.jobs[k].chain->integrator().step_size()},
                      {"item_gradients", r.cost.item_gradients},
                      {"full_passes", r.cost.full_passes}, {"blocks", r.blocks}, {"accepted_blocks", r.accepted_blocks},
                      {"non_finite_proposals", r.non_finite_proposals}, {"mean_accept_stat", r.mean_accept_stat},
                      {"recording_item_gradients", run.jobs[k].files->recording_cost().item_gradients},
                      {"resumed_at_iteration", run.jobs[k].resumed_at}});
    for (const auto& [name, value] : r.estimator_choices) chains.back()["estimator"][name] = value;  // e.g. cv's h_0, λ̂
    if (!run.jobs[k].start.empty()) chains.back()["start"] = run.jobs[k].start;  // run.init
    if (run.jobs[k].burn_in) chains.back()["burn_in"] = run.jobs[k].burn_in->record();
    if (!r.adapted_mass.empty()) chains.back()["adapted_mass"] = mass_rows(r.adapted_mass, run.model()->dimension());
    if (r.adapted_step_size) {  // integrator.adapt_step_size: the step frozen at the end of the warmup
      chains.back()["adapted_step_size"] = *r.adapted_step_size;
      chains.back()["step_size_frozen_after_warmup"] = true;
    }
  }
  return chains;
}

fs::path checkpoint_path(const fs::path& out, std::size_t k) { return out / run_folder::chain_checkpoint(k + 1); }

/// Builds every chain's files; with `resume`, first restores every chain that has a checkpoint
/// and checks every file it continues (all before any file is touched, so a bad checkpoint or a
/// changed file changes nothing), then removes what an interrupted run wrote last (its manifest
/// and metrics, which the resumed run writes again).
void open_chain_files(PreparedRun& run, const fs::path& out, const json& manifest, bool resume) {
  auto comments = config_comment_lines(manifest["config"]);
  comments.insert(comments.begin(), fmt::format("sgmcmc {} ({})", SGMCMC_VERSION, run.source));
  comments.push_back(run.plan.schedule.chain.compute_lp ? "lp__ = -U(theta), up to a constant"
                                                   : std::string(run_folder::not_computed_lp_comment));
  const auto names = run.model()->parameter_names();
  const auto quantity_names = run.model()->quantity_names();
  const bool adapts = run.jobs.front().chain->integrator().adaptation().any();  // Stan's "adapt engaged"
  for (std::uint64_t k = 0; k < run.plan.schedule.chains; ++k) {
    auto chain_comments = comments;
    chain_comments.push_back(fmt::format("chain = {}", k + 1));
    const auto stan = stan_argument_lines(run.plan.schedule.chain, k + 1, run.plan.schedule.seed, adapts);
    chain_comments.insert(chain_comments.end(), stan.begin(), stan.end());
    const ChainPaths paths{out / run_folder::chain_draws(k + 1), out / run_folder::chain_gradients(k + 1),
                           checkpoint_path(out, k), out / run_folder::chain_checkpoint_metrics(k + 1)};
    run.jobs[k].files = std::make_unique<ChainFiles>(paths, chain_comments, run.tests_acceptance, names, run.plan.output.written,
                                                     std::move(run.recorders[k]), quantity_names);
  }
  for (std::uint64_t k = 0; resume && k < run.plan.schedule.chains; ++k) {
    if (!fs::exists(checkpoint_path(out, k))) continue;  // interrupted before its first checkpoint
    auto state = sgmcmc::read_state_file(checkpoint_path(out, k));
    run.jobs[k].chain->restore_state(state);
    if (run.jobs[k].burn_in) run.jobs[k].burn_in->restore_record(state);
    run.jobs[k].files->restore_state(state);
    state.finish();
    run.jobs[k].resumed_at = run.jobs[k].chain->state().iteration;
  }
  for (const auto& job : run.jobs) job.files->check_files();
  if (resume)
    for (const char* stale : {run_folder::manifest, run_folder::metrics}) fs::remove(out / stale);
  for (auto& job : run.jobs) job.files->open();
}

/// Throws, naming each file, if a file the resumed run reads differs from the one the run began
/// with (checkpoint.json's data_files): its chains would continue on data they did not sample.
/// With --allow-changed-data, a warning (printed and in the manifest) instead.
void check_recorded_data(const PreparedRun& run, const fs::path& out, const json& data_files, json& manifest) {
  const auto changes = changed_data(read_recorded_run(out), data_files);
  if (changes.empty()) return;
  const auto what = fmt::format("{}", fmt::join(changes, "; "));
  if (!run.allow_changed_data)
    throw sgmcmc::Error(fmt::format("{}: the data differ from those the run began with ({}); its chains would not continue "
                                    "on the data they sampled. Restore the file(s), start a new run, or add "
                                    "--allow-changed-data to continue on the new data (nothing was changed)",
                                    (out / run_folder::checkpoint_record).string(), what));
  const auto warning = fmt::format("--allow-changed-data: the resumed chains continue on data other than the run began "
                                   "with ({})", what);
  fmt::print(stderr, "sgmcmc: warning: {}\n", warning);
  manifest["warnings"].push_back(warning);
}

}  // namespace

std::string resume_refusal(const fs::path& out) {
  if (!fs::is_directory(out)) return fmt::format("'{}' is not a folder", out.string());
  if (fs::exists(out / run_folder::manifest) && !interrupted_run(manifest_if_any(out)))
    return fmt::format("'{}' holds a complete run (its manifest.json is written); there is nothing to resume, and "
                       "nothing was changed",
                       out.string());
  if (!fs::exists(out / run_folder::checkpoint_record))
    return fmt::format("'{}' holds no checkpoint.json: it is not a run made with checkpoints (--checkpoint-every K or "
                       "run.checkpoint_every)",
                       out.string());
  return "";
}

RunOutcome execute_run(PreparedRun& run, const fs::path& out, unsigned threads, std::atomic<std::uint64_t>* progress,
                       bool resume) {
  json manifest = {{"sgmcmc_version", SGMCMC_VERSION},
                   {"source", run.source},
                   {"config", resolved_config(run.config, run.reads)},
                   {"seed", run.plan.schedule.seed},
                   {"warnings", run.warnings},
                   {"model", {{"name", run.model_name},
                              {"plugin", run.built->plugin.path().string()},
                              {"dimension", run.model()->dimension()},
                              {"items", run.model()->num_items()}}}};
  // θ* of data simulated from a prior draw (model.simulate_from_prior): what `sgmcmc sbc` ranks.
  if (const auto truth = run.model()->simulated_parameters(); !truth.empty()) {
    const auto names = run.model()->parameter_names();
    if (truth.size() != names.size())
      throw std::logic_error(fmt::format("model {}: simulated_parameters() has {} values for {} parameters",
                                         run.model_name, truth.size(), names.size()));
    json values = json::object();
    for (std::size_t j = 0; j < names.size(); ++j) values[names[j]] = truth[j];
    manifest["model"]["simulated_parameters"] = values;
    // What `sgmcmc sbc --quantities` ranks beside θ*: the model's quantities at θ* (a fresh
    // workspace: they keep no state across draws) and lp__ = -U(θ*) where U is exact (the same
    // function, and constant, as the draws' lp__ with run.lp = true).
    json at_truth = json::object();
    const auto workspace = run.model()->make_workspace();
    const auto quantity_names = run.model()->quantity_names();
    std::vector<double> quantities(quantity_names.size());
    if (!quantity_names.empty()) run.model()->evaluate_quantities(truth, *workspace, quantities);
    for (std::size_t q = 0; q < quantity_names.size(); ++q) at_truth[quantity_names[q]] = quantities[q];
    if (run.model()->capabilities().exact_log_likelihood)
      at_truth["lp__"] = -sgmcmc::potential(*run.model(), truth, sgmcmc::every_item(*run.model()), *workspace);
    manifest["model"]["simulated_quantities"] = at_truth;
  }
  // The columns after the parameters (Stan's generated quantities), which `summary` leads with.
  if (!run.recorders.empty() && run.recorders[0] && run.recorders[0]->quantity_count() > 0)
    manifest["model"]["quantities"] = run.model()->quantity_names();
  if (run.plan.burn_in) manifest["burn_in"] = burn_in_record(*run.plan.burn_in);
  json data_files = run.built->data_files;
  data_files.update(data_fingerprints(manifest["config"], {"run"}));  // run.init
  manifest["data_files"] = data_files;
  const bool checkpoints = run.plan.schedule.chain.checkpoint_every > 0;
  if (resume) {
    check_recorded_run(out, manifest["config"]);
    check_recorded_data(run, out, data_files, manifest);
  } else if (checkpoints) {
    record_run(out, run.source, run.config, manifest["config"], data_files, run.data_parallel_checkpoint);
  }
  open_chain_files(run, out, manifest, resume);
  run_jobs(run.jobs, run.plan.schedule.chain, threads, progress);
  for (auto& job : run.jobs)
    if (job.failure) std::rethrow_exception(job.failure);
  const auto any = [&](bool sgmcmc::ChainResult::*flag) {
    return std::any_of(run.jobs.begin(), run.jobs.end(), [&](const ChainJob& job) { return job.result.*flag; });
  };
  const bool interrupted = any(&sgmcmc::ChainResult::interrupted);
  if (!interrupted && any(&sgmcmc::ChainResult::stopped)) return RunOutcome::stopped;  // the checkpoints stay for --resume
  // Interrupted: what --resume needs (a run without checkpoints has no record yet) and, as for a
  // complete run, the metrics so far and a manifest that says so.
  if (interrupted && !checkpoints && !resume) record_run(out, run.source, run.config, manifest["config"], data_files, run.data_parallel_checkpoint);

  std::vector<const ChainFiles*> files;
  for (const auto& job : run.jobs) files.push_back(job.files.get());
  write_metrics(out / run_folder::metrics, run.jobs.front().chain->metric_names(run.plan.schedule.chain), files);
  const bool any_diverged = any(&sgmcmc::ChainResult::diverged);
  manifest["status"] = interrupted ? "interrupted" : any_diverged ? "diverged" : "complete";
  manifest["chains"] = manifest_chains(run);
  manifest["threads"] = threads;
  if (run.data_parallel_record)  // this run's communication: a resumed run's iterations since its checkpoint
    manifest["data_parallel"] =
        run.data_parallel_record(run.jobs.front().result.iterations - run.jobs.front().resumed_at);
  manifest["timings"] = {{"model_seconds", run.model_seconds},
                         {"model_shared", run.model_shared},
                         {"total_seconds", run.elapsed()},
                         {"started", seconds_since_epoch(run.started_at)},
                         {"finished", seconds_since_epoch(std::chrono::system_clock::now())},
                         {"host", run_folder::host_name()}};
  write_atomically(out / run_folder::manifest, manifest.dump(2) + "\n");
  if (interrupted) return RunOutcome::interrupted;  // the checkpoints stay for --resume
  // Complete: the checkpoints go, whether run.checkpoint_every or an interruption wrote them.
  std::error_code absent;
  for (std::size_t k = 0; k < run.jobs.size(); ++k) {
    fs::remove(checkpoint_path(out, k), absent);
    fs::remove(out / run_folder::chain_checkpoint_metrics(k + 1), absent);
  }
  return any_diverged ? RunOutcome::diverged : RunOutcome::complete;
}
