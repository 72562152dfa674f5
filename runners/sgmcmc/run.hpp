// One run as steps that `sgmcmc run` and `sgmcmc sweep` share: build the model and every chain's
// parts, check the keys, check that the combination can work, then write the run's outputs into a
// folder. A sweep needs the steps apart: a build or combination error skips its cell, an unknown
// key is an error in the sweep file.
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

import sgmcmc;

struct PreparedRun;  // the model, the chains' parts and their files (run.cpp)
struct PreparedRunDeleter {
  void operator()(PreparedRun* run) const;
};
using PreparedRunPtr = std::unique_ptr<PreparedRun, PreparedRunDeleter>;

/// The model's plugin cannot be found or loaded (a misspelt model.name): an error of the
/// configuration itself, which a sweep reports rather than skipping the cell.
struct ModelNotLoadable : sgmcmc::Error {
  using sgmcmc::Error::Error;
};

/// A model built from one [model] section and data seed, with the plugin it came from.
struct BuiltModel {
  sgmcmc::LoadedPlugin plugin;
  std::shared_ptr<const sgmcmc::Model> model;
  sgmcmc::SectionReads reads;  // what the model read of its [model] section (which keys it knows)
  nlohmann::json data_files;  // the fingerprints of the files the section names (run_record.hpp)
};

/// The models of a sweep's cells, one per distinct [model] section, data seed and plugin folder:
/// runs only read their model, so cells that differ in their sampler share one, and a cell's run
/// reuses the model its validation built. The cache does not own them: a model lives as long as a
/// run or a cell holds it.
class ModelCache {
public:
  /// The model of `config` with `data_seed`, built now or, setting `shared`, one already built.
  std::shared_ptr<const BuiltModel> get(const sgmcmc::RunConfig& config, std::uint64_t data_seed, const std::string& source,
                                        const std::optional<std::filesystem::path>& plugin_dir, bool& shared);

private:
  struct Slot {
    std::mutex building;  // one thread builds a model; the others wanting it wait for it
    std::weak_ptr<const BuiltModel> model;
  };
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Slot>> slots_;
};

/// Loads the model (or takes it from `models`) and builds every chain's estimator, integrator,
/// corrector and recorder. Throws sgmcmc::Error when a part refuses the configuration (mh after
/// sghmc, say), and ModelNotLoadable when the model's plugin cannot be loaded.
/// With run.data_parallel, `ranks` (`sgmcmc run` under MPI) splits the model's data terms across
/// the job's ranks (sgmcmc.data_parallel); without `ranks` the key is refused.
PreparedRunPtr prepare_run(sgmcmc::RunConfig config, const std::string& source,
                           const std::optional<std::filesystem::path>& plugin_dir, ModelCache* models = nullptr,
                           std::shared_ptr<sgmcmc::RankGroup> ranks = nullptr);

/// The model the run uses, for a sweep's cell to keep between its validation and its run.
std::shared_ptr<const BuiltModel> model_of(const PreparedRun& run);

/// Throws for a key no part read; returns warnings for keys of unchosen components.
std::vector<std::string> check_keys(PreparedRun& run);

/// Checks that need the whole run (lp on a model without exact likelihood, thin vs mh blocks).
void check_run(const PreparedRun& run);

enum class RunOutcome { complete, diverged, stopped, interrupted };

/// Writes chain-<k>.csv, gradients-<k>.csv, metrics.csv and, last, manifest.json into `out`
/// (which exists and is empty), running the chains on `threads` threads. `progress`, if given,
/// counts iterations for a progress bar. With run.checkpoint_every it first writes config.toml
/// and checkpoint.json, and checkpoint-<k>.bin as chain k runs (removed once the run is
/// complete). With `resume`, `out` is such a folder: its checkpoint.json must record this run's
/// configuration, and each chain continues from its checkpoint, or starts afresh without one.
/// `stopped`: every chain stopped at run.plan.schedule's stop_after; the folder can be resumed.
/// `interrupted`: the schedule's stop_requested stopped the chains with checkpoints; metrics.csv
/// and manifest.json (status "interrupted") are written, and the folder can be resumed.
RunOutcome execute_run(PreparedRun& run, const std::filesystem::path& out, unsigned threads,
                       std::atomic<std::uint64_t>* progress, bool resume = false);

/// What `sgmcmc run` says at the end: how to continue a stopped or interrupted run, each chain's
/// divergence and rejected non-finite proposals, and (unless quiet) each chain's cost and last
/// metrics with the run's summary, and the ZV estimates when [output] zv asks. Returns the exit
/// code: exit_interrupted, exit_diverged when a chain diverged, else 0.
struct RunReport {
  bool quiet = false;
  std::uint64_t stop_after = 0;  // --stop-after
  std::string resume_command;    // the command line that continues the run
};
int report_run(const PreparedRun& run, RunOutcome outcome, const std::filesystem::path& out, const RunReport& report);

/// Why the folder `out` cannot be resumed (no checkpoint.json, a complete run), or "".
std::string resume_refusal(const std::filesystem::path& out);
