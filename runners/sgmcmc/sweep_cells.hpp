// A sweep's cells as runs: each cell validated before any runs (a part refusing the combination
// skips it), then this rank's cells run on a pool of threads in the background.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "commands.hpp"
#include "run.hpp"
#include "sweep_file.hpp"
#include "sweep_grid.hpp"

/// Validates every cell still to run, on the pool; throws the first key error, in grid order. A
/// valid cell keeps the model its validation built (from `models`) for its run.
void validate_cells(const Sweep& sweep, std::vector<Cell>& cells, const SweepOptions& options, unsigned jobs,
                    ModelCache& models);

/// A finished cell: its index in the grid and its wall time.
struct Finished {
  std::size_t cell;
  double seconds;
};

/// This rank's cells on `jobs` threads in the background. Finished cells queue up for the main
/// thread, the only one that talks to other ranks (MPI_THREAD_FUNNELED).
class LocalCells {
public:
  LocalCells(const Sweep& sweep, std::vector<Cell>& cells, std::vector<std::size_t> mine, std::filesystem::path folder,
             const SweepOptions& options, unsigned jobs, ModelCache& models);

  /// Cells not yet started are left out: the main thread failed, and the job is about to end.
  ~LocalCells() { stopping_ = true; }

  /// True once every cell has been handed out by next().
  bool finished() const { return remaining_ == 0; }

  /// A finished cell, waiting at most `wait` for one; rethrows a failure of the pool.
  std::optional<Finished> next(std::chrono::milliseconds wait);

private:
  void push(Finished finished);

  std::size_t remaining_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Finished> queue_;
  std::exception_ptr failure_;
  std::atomic<bool> stopping_{false};
  std::jthread pool_;  // last: joined before the members its thread uses are destroyed
};
