// A sweep's grid: its cells in a fixed order, each cell's folder name and configuration, and the
// check of the grid's size.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "sweep_file.hpp"

import sgmcmc;

struct BuiltModel;  // run.hpp

struct Cell {
  std::vector<std::size_t> choice;  // per axis, the index of its value
  std::string name;                 // its folder
  std::string status;               // "pending", then "complete", "diverged", "failed", "skipped" or "done" (resumed)
  std::string reason;               // why skipped or failed
  std::shared_ptr<const BuiltModel> model;  // built by validation, until the cell's run takes it
};

/// The grid in a fixed order (last group fastest), without excluded cells. Names made the same by
/// safe_name get a suffix, so two cells never share a folder.
std::vector<Cell> enumerate_cells(const Sweep& sweep);

/// The base configuration with the cell's axis values.
sgmcmc::RunConfig cell_config(const Sweep& sweep, const Cell& cell);

/// How a cell's run names its configuration in errors and its files.
std::string cell_source(const Sweep& sweep, const Cell& cell);

/// The number of cells before `exclude`: the product of the groups' lengths, saturating at the
/// largest std::size_t.
std::size_t grid_size(const Sweep& sweep);

/// A grid grows as the product of its axes: one list too long can mean days of cores, and listing
/// it alone can take the machine's memory. Checked before the cells are listed (counting the cells
/// `exclude` leaves only as far as --max-cells) and so before validation, which builds every cell's
/// model.
void check_cell_count(const Sweep& sweep, const SweepOptions& options);
