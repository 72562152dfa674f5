// A run's output folder: the names of its files, which `run` writes and `sweep`, `summary`, `zv`
// and `topics` read, and reading its chain-<k>.csv files back.
//
//   chain-<k>.csv      Stan CSV draws of chain k (written as the chain runs)
//   gradients-<k>.csv  ∇log π at each draw of chain k, when [output] gradients is not "none"
//   metrics.csv        chain, iteration, seconds, cpu_seconds, item_gradients, then the model's metrics
//                      and, with run.temperatures, the temperatures, with an MH corrector accept_rate
//                      and accept_rate_window (Chain::metric_names)
//   manifest.json      resolved configuration, seed, versions, timings, cost; written last, through
//                      a temporary name, so a folder without it is an interrupted run; one with
//                      status "interrupted" was stopped by SIGINT/SIGTERM and can be resumed.
//   .lock              held (flock) by the process writing the folder: see RunFolderLock
// With run.checkpoint_every (for `sgmcmc run --resume DIR`):
//   config.toml        the keys set, which --resume rebuilds the run from
//   checkpoint.json    the source and resolved configuration, which a resumed run must match
//   checkpoint-<k>.bin chain k's state (sgmcmc.state) and where its files stood, in two slots
//                      overwritten in turn (a torn write leaves the one before); removed when
//                      the run is complete
//   checkpoint-<k>-metrics.bin  chain k's metric rows (sgmcmc.state values), appended at each
//                      checkpoint, so that a checkpoint costs the same late in a run as early;
//                      removed with checkpoint-<k>.bin
#pragma once
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

import sgmcmc;

namespace run_folder {

inline constexpr const char* manifest = "manifest.json";
inline constexpr const char* metrics = "metrics.csv";
inline constexpr const char* config = "config.toml";
inline constexpr const char* checkpoint_record = "checkpoint.json";
inline constexpr const char* lock = ".lock";

/// The comment line of a chain file whose lp__ column is not the log density: R's readers need a
/// finite number there, and runners/python reads this line to give NaN instead.
inline constexpr const char* not_computed_lp_comment =
    "lp__ = 0: not computed, as in CmdStan's variational output (set run.lp = true for -U(theta), one data pass per "
    "draw)";

/// The numbered files' names start so; each chain's file is the prefix, k and an extension.
inline constexpr const char* chain_prefix = "chain-";
inline constexpr const char* gradients_prefix = "gradients-";
inline constexpr const char* checkpoint_prefix = "checkpoint-";

/// Chain k's files, k from 1 as the files count chains.
std::string chain_draws(std::size_t k);
std::string chain_gradients(std::size_t k);
std::string chain_checkpoint(std::size_t k);
std::string chain_checkpoint_metrics(std::size_t k);

/// The machine's name ("" if it has none): the manifest's host (a sweep's cells that ran at once on
/// one machine shared its cores) and the holder a run folder's lock names.
std::string host_name();

}  // namespace run_folder

/// The one writer of a run folder. Two processes writing the same chain files (a --resume or
/// --replace into the folder of a run still alive, two resumes at once) interleave their lines
/// and leave holes, while each ends "complete". So run, resume, replace and every sweep cell first
/// take an exclusive advisory lock (flock) on the folder's `.lock` file, and a second writer is
/// refused, naming the holder's pid and host, which the holder writes into the file. The kernel
/// releases the lock when the holder's process ends, however it ends: a kill -9 leaves at most a
/// `.lock` file that nobody holds, which the next writer takes over.
class RunFolderLock {
public:
  /// Locks `folder` (which exists) or throws an sgmcmc::Error naming it and the holder.
  explicit RunFolderLock(const std::filesystem::path& folder);
  /// Releases the lock and removes the `.lock` file.
  ~RunFolderLock();
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

private:
  std::filesystem::path path_;
  int descriptor_ = -1;
};

/// Removes everything in `folder` but its `.lock` (a cell rerun from scratch under its lock).
void clear_folder_but_lock(const std::filesystem::path& folder);

struct Chains {
  std::vector<std::string> columns;
  std::vector<sgmcmc::StanCsv> files;
  std::vector<std::filesystem::path> paths;
  std::size_t draws = 0;  // per chain, the shortest chain's count
};

/// The folder's manifest.json, or a value that is not an object when there is none or it does not
/// parse: an interrupted run has none, and its chains can still be read.
nlohmann::json manifest_if_any(const std::filesystem::path& folder);

/// A manifest written when Ctrl-C (SIGINT) or SIGTERM stopped the run (status "interrupted"): the
/// run can be resumed, so it is not a finished one.
bool interrupted_run(const nlohmann::json& manifest);

/// Files `<prefix><k>.csv` in `folder`, by k.
std::map<int, std::filesystem::path> numbered_files(const std::filesystem::path& folder, const std::string& prefix,
                                                    const std::string& command);

/// Every chain-<k>.csv in `folder`; all must have the same columns and at least `minimum_draws`
/// rows. Errors start with `command` ("summary", "zv").
Chains read_chains(const std::filesystem::path& folder, const std::string& command, std::size_t minimum_draws = 4);

/// One column's draws, chains × draws (each chain cut to the shortest's length).
sgmcmc::ChainDraws column(const Chains& chains, std::size_t index);
