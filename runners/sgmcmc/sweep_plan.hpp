// A sweep's plan: rank 0 reads and checks everything before any cell runs (the sweep file, the
// grid's size, --resume, every cell's validation, the output folder), so a bad sweep is one
// message however many ranks there are.
#pragma once
#include <filesystem>
#include <memory>
#include <vector>

#include "commands.hpp"
#include "run.hpp"
#include "sweep_file.hpp"
#include "sweep_grid.hpp"

struct Plan {
  Sweep sweep;
  std::vector<Cell> cells;
  std::filesystem::path out;
  /// The models validation built, which the cells' runs take up (one build per distinct model).
  std::shared_ptr<ModelCache> models = std::make_shared<ModelCache>();
};

/// The plan, printing the cells it skips unless --quiet.
Plan make_plan(const SweepOptions& options, unsigned jobs);
