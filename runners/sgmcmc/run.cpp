// `sgmcmc run`: configuration → model and chains → the files of a run's output folder
// (run_folder.hpp), which chain_files.hpp and run_record.hpp write.
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
#include "data_parallel_run.hpp"
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

LoadedConfig load_run_config(const RunOptions& options) {
  LoadedConfig loaded;
  if (options.preset || options.config_file) {
    loaded = load_config(options);
  } else {  // --resume DIR alone: the configuration the run wrote there
    const fs::path file = *options.resume / run_folder::config;
    loaded = {sgmcmc::parse_config(read_file(file, "the configuration the run recorded"), file.string()), "", file.string()};
    for (const auto& assignment : options.overrides) sgmcmc::apply_override(loaded.config, assignment);
  }
  if (options.seed) sgmcmc::apply_override(loaded.config, fmt::format("run.seed={}", *options.seed));
  if (options.chains) sgmcmc::apply_override(loaded.config, fmt::format("run.chains={}", *options.chains));
  if (options.checkpoint_every)
    sgmcmc::apply_override(loaded.config, fmt::format("run.checkpoint_every={}", *options.checkpoint_every));
  return loaded;
}

/// The folder for the run's files, created if need be. A folder that holds files is kept unless
/// --replace: a run never silently overwrites another's results.
fs::path create_output(const RunOptions& options, const std::string& label) {
  fs::path out;
  if (options.out) {
    out = *options.out;
  } else {
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    out = fs::path("runs") / fmt::format("{}-{}", label, stamp);
    for (int k = 2; fs::exists(out); ++k) out = fs::path("runs") / fmt::format("{}-{}-{}", label, stamp, k);
  }
  std::error_code error;
  require_folder_or_absent(out);
  if (fs::exists(out) && !fs::is_empty(out) && !options.replace)
    throw sgmcmc::Error(fmt::format("output folder '{}' is not empty; choose another --out, or add --replace", out.string()));
  fs::create_directories(out, error);
  if (error) throw sgmcmc::Error(fmt::format("output folder '{}': {}", out.string(), error.message()));
  return out;
}

/// With --replace, removes the files of the run `out` held (under the folder's lock: they may
/// still be another process's files until it is taken).
void remove_run_files(const fs::path& out) {
  std::error_code error;
  for (const char* stale : {run_folder::manifest, run_folder::metrics, run_folder::config, run_folder::checkpoint_record})
    fs::remove(out / stale, error);
  for (const auto& entry : fs::directory_iterator(out))
    if (const auto name = entry.path().filename().string(); name.starts_with(run_folder::chain_prefix) ||
                                                            name.starts_with(run_folder::gradients_prefix) ||
                                                            name.starts_with(run_folder::checkpoint_prefix))
      fs::remove(entry.path(), error);
}

/// `text` as one word for a POSIX shell: as it is when that is safe, else in single quotes.
std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_-+=.,:/@%").find(c) != std::string_view::npos;
  });
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// The command that continues the run in `out`, with the plugin folder it was given.
std::string resume_command(const RunOptions& options, const fs::path& out) {
  std::string command = "sgmcmc run --resume " + shell_word(out.string());
  if (options.plugin_dir) command += " --plugin-dir " + shell_word(options.plugin_dir->string());
  return command;
}

}  // namespace

int run_command(const RunOptions& options) {
  if (options.resume)
    if (const auto refusal = resume_refusal(*options.resume); !refusal.empty()) throw sgmcmc::Error("--resume: " + refusal);
  LoadedConfig loaded = load_run_config(options);
  // A resumed run keeps the first run's source: chains that restart write the same headers.
  if (options.resume) loaded.source = read_recorded_run(*options.resume).value("source", loaded.source);
  // run.data_parallel: this process is one rank of an MPI job running one chain together
  // (data_parallel_run.hpp); rank 0 writes the run's folder, the others a scratch folder.
  std::unique_ptr<DataParallelJob> parallel;
  if (wants_data_parallel(loaded.config)) parallel = std::make_unique<DataParallelJob>(loaded.config["run"]);
  const bool speaks = !parallel || parallel->root();

  PreparedRunPtr run;
  fs::path out;
  std::optional<RunFolderLock> lock;
  const auto set_up = [&] {
    run = prepare_run(std::move(loaded.config), loaded.source, options.plugin_dir, nullptr,
                      parallel ? parallel->ranks() : nullptr);
    run->allow_changed_data = options.allow_changed_data;
    const auto warnings = check_keys(*run);
    for (const auto& warning : speaks ? warnings : std::vector<std::string>{})
      fmt::print(stderr, "sgmcmc: warning: {}\n", warning);
    run->plan.schedule.chain.stop_after = options.stop_after;
    check_run(*run);
    out = !speaks ? parallel->scratch() : options.resume ? *options.resume : create_output(options, loaded.label);
    lock.emplace(out);
    if (parallel) run->data_parallel_checkpoint = data_parallel_checkpoint_record(parallel->ranks()->size());
    if (parallel && options.resume) {  // every rank reads the run's folder; a worker continues a copy of its files
      check_resumed_ranks(*options.resume, parallel->ranks()->size());
      if (!speaks) copy_run_for_worker(*options.resume, out);
    }
    if (options.resume) {  // again under the lock: the run may have completed since
      if (const auto refusal = resume_refusal(out); !refusal.empty()) throw sgmcmc::Error("--resume: " + refusal);
    } else {
      remove_run_files(out);
    }
  };
  if (!parallel) {
    set_up();
  } else if (const int code = parallel->agree(set_up)) {
    if (!speaks && !out.empty()) {  // a worker's scratch folder, if it got one
      lock.reset();
      fs::remove_all(out);
    }
    return code;
  } else {  // every rank is set up: what each holds is gathered now, measured, not computed
    run->data_parallel_record = [&job = *parallel, items = run->model()->num_items(),
                                 rows = parallel->gather_rows(sgmcmc::rows_held(*run->model()))](std::uint64_t iterations) {
      return job.record(items, rows, iterations);
    };
  }
  const auto& schedule = run->plan.schedule;
  const unsigned threads = options.threads ? options.threads
                                           : static_cast<unsigned>(std::min<std::uint64_t>(
                                                 schedule.chains, std::max(1u, std::thread::hardware_concurrency())));
  std::atomic<std::uint64_t> progress{0};
  RunOutcome outcome;
  {
    const std::uint64_t burn_in = run->plan.burn_in ? run->plan.burn_in->iterations : 0;
    ProgressBar bar(schedule.chains * (burn_in + schedule.chain.warmup + schedule.chain.iterations), progress,
                    !options.quiet && speaks);
    // From here on Ctrl-C stops the chains with a checkpoint; before, there is nothing to keep.
    // A signal reaches the ranks of a data-parallel job each at its own moment (mpirun, signalled,
    // sends every rank SIGTERM; a user or a batch system may signal one rank): they agree through
    // their gathers on the block end where all of them stop.
    catch_interruptions();
    run->plan.schedule.chain.stop_requested = parallel ? &parallel->stop_together(stop_requested()) : &stop_requested();
    const bool resume = options.resume.has_value();
    if (parallel)  // an error on one rank ends the job: the others would wait in the collective forever
      outcome = parallel->or_abort([&] { return execute_run(*run, out, threads, &progress, resume); });
    else
      outcome = execute_run(*run, out, threads, &progress, resume);
    stop_catching_interruptions();
  }
  if (!speaks) {  // a worker's files were the same as rank 0's: scratch
    lock.reset();
    fs::remove_all(out);
    return outcome == RunOutcome::diverged ? exit_diverged : outcome == RunOutcome::interrupted ? exit_interrupted : 0;
  }
  const auto resume_with = (parallel ? fmt::format("mpirun -n {} ", parallel->cluster().size()) : "") + resume_command(options, out);
  return report_run(*run, outcome, out, {options.quiet, options.stop_after, resume_with});
}

Command add_run_command(CLI::App& app) {
  const auto run = std::make_shared<RunOptions>();
  auto* command = app.add_subcommand("run", "run chains from a preset or a TOML configuration");
  command->footer("Example: sgmcmc run --preset demo --seed 1 --set run.iterations=2000 --out runs/demo");
  add_configuration_options(*command, *run);
  command->add_option("--seed", run->seed, "run.seed")->check(at_least_zero);
  command->add_option("--chains", run->chains, "run.chains")->check(at_least_one);
  command->add_option("--threads", run->threads, "threads running chains (default: one per chain, at most the cores)")
      ->check(at_least_zero);
  command->add_option("--out", run->out, "output folder (default: runs/<preset or config>-<time>)");
  command->add_flag("--replace", run->replace, "replace the output folder's files if it is not empty");
  command->add_flag("--quiet", run->quiet, "no progress bar, no summary");
  add_plugin_dir_option(*command, run->plugin_dir);
  command->add_option("--checkpoint-every", run->checkpoint_every,
                      "run.checkpoint_every: save every chain's state every K iterations, for --resume")
      ->check(at_least_zero);
  command->add_option("--stop-after", run->stop_after,
                      "stop every chain after iteration K's checkpoint (K a multiple of the checkpoint interval)");
  auto* resume = command->add_option("--resume", run->resume, "continue the interrupted run in this folder from its checkpoints");
  resume->excludes("--out")->excludes("--replace");
  command->add_flag("--allow-changed-data", run->allow_changed_data,
                    "with --resume: continue even though a data file differs from the one the run began with")
      ->needs(resume);
  return {command, [run] {
            if (!run->preset && !run->config_file && !run->resume)
              throw sgmcmc::Error("sgmcmc run: give --preset NAME, --config FILE.toml or --resume DIR");
            return run_command(*run);
          }};
}
