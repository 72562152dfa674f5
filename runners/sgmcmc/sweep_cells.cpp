// A sweep's cells as runs (see sweep_cells.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "run.hpp"
#include "run_folder.hpp"
#include "sweep_cells.hpp"
#include "thread_pool.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

/// What validating a cell found: a reason to skip it, or an error in the sweep file itself.
struct Verdict {
  std::string skip;
  std::string key_error;
  std::vector<std::string> warnings;
};

/// Builds the cell as its run would, without running it. A part refusing the combination
/// (mh after sghmc) skips the cell; a key nothing reads is an error of the sweep file. A valid
/// cell keeps its model for its run.
Verdict validate_cell(const Sweep& sweep, Cell& cell, const std::optional<fs::path>& plugin_dir, ModelCache& models) {
  Verdict verdict;
  PreparedRunPtr run;
  try {
    run = prepare_run(cell_config(sweep, cell), cell_source(sweep, cell), plugin_dir, &models);
  } catch (const ModelNotLoadable& error) {  // a misspelt model.name: the sweep file is wrong
    verdict.key_error = error.what();
    return verdict;
  } catch (const sgmcmc::Error& error) {
    verdict.skip = error.what();
    return verdict;
  }
  try {
    verdict.warnings = check_keys(*run);
  } catch (const sgmcmc::Error& error) {
    verdict.key_error = error.what();
    return verdict;
  }
  try {
    check_run(*run);
    cell.model = model_of(*run);
  } catch (const sgmcmc::Error& error) {
    verdict.skip = error.what();
  }
  return verdict;
}

/// One cell: the run's outputs in `folder`. A partial folder a killed sweep left continues from
/// its chains' checkpoints when the cell's run takes them (run.checkpoint_every), else is replaced.
void run_cell(const Sweep& sweep, Cell& cell, const fs::path& folder, const std::optional<fs::path>& plugin_dir,
              ModelCache& models) {
  try {
    auto run = prepare_run(cell_config(sweep, cell), cell_source(sweep, cell), plugin_dir, &models);
    cell.model.reset();  // the run holds it now; the last run using it frees it
    check_keys(*run);
    check_run(*run);
    fs::create_directories(folder);
    const RunFolderLock lock(folder);  // another sweep on the same folder may be running this cell
    const bool resumable = resume_refusal(folder).empty();
    if (!resumable) clear_folder_but_lock(folder);
    // One thread per cell: the pool's threads are the cells.
    cell.status = execute_run(*run, folder, 1, nullptr, resumable) == RunOutcome::diverged ? "diverged" : "complete";
  } catch (const sgmcmc::Error& error) {
    cell.status = "failed";
    cell.reason = error.what();
  }
}

}  // namespace

void validate_cells(const Sweep& sweep, std::vector<Cell>& cells, const SweepOptions& options, unsigned jobs,
                    ModelCache& models) {
  std::vector<Verdict> verdicts(cells.size());
  on_pool(cells.size(), jobs, [&](std::size_t c) {
    if (cells[c].status == "pending") verdicts[c] = validate_cell(sweep, cells[c], options.plugin_dir, models);
  });
  std::set<std::string> warnings;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    if (!verdicts[c].key_error.empty()) throw sgmcmc::Error(fmt::format("{} (in cell {})", verdicts[c].key_error, cells[c].name));
    if (!verdicts[c].skip.empty()) {
      cells[c].status = "skipped";
      cells[c].reason = verdicts[c].skip;
    }
    warnings.insert(verdicts[c].warnings.begin(), verdicts[c].warnings.end());
  }
  for (const auto& warning : warnings) fmt::print(stderr, "sgmcmc: warning: {}\n", warning);
  if (std::all_of(cells.begin(), cells.end(), [](const Cell& cell) { return cell.status == "skipped"; }))
    throw sgmcmc::Error(fmt::format("{}: every cell is skipped; the first: {}", sweep.source, cells.front().reason));
}

LocalCells::LocalCells(const Sweep& sweep, std::vector<Cell>& cells, std::vector<std::size_t> mine, fs::path folder,
                       const SweepOptions& options, unsigned jobs, ModelCache& models)
    : remaining_(mine.size()) {
  // Cells other ranks run let go of the models validation built for them.
  for (std::size_t c = 0; c < cells.size(); ++c)
    if (std::find(mine.begin(), mine.end(), c) == mine.end()) cells[c].model.reset();
  pool_ = std::jthread([&sweep, &cells, mine = std::move(mine), folder = std::move(folder), &options, jobs, &models, this] {
    try {
      on_pool(mine.size(), jobs, [&](std::size_t i) {
        if (stopping_) return;
        const auto started = std::chrono::steady_clock::now();
        run_cell(sweep, cells[mine[i]], folder / cells[mine[i]].name, options.plugin_dir, models);
        push({mine[i], std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()});
      });
    } catch (...) {
      const std::lock_guard lock(mutex_);
      failure_ = std::current_exception();
      ready_.notify_all();
    }
  });
}

std::optional<Finished> LocalCells::next(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, wait, [&] { return !queue_.empty() || failure_; });
  if (failure_) std::rethrow_exception(failure_);
  if (queue_.empty()) return std::nullopt;
  const Finished finished = queue_.front();
  queue_.pop_front();
  --remaining_;
  return finished;
}

void LocalCells::push(Finished finished) {
  const std::lock_guard lock(mutex_);
  queue_.push_back(finished);
  ready_.notify_all();
}
