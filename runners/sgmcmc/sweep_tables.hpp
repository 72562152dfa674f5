// A sweep's two tables, rebuilt from every cell's folder: results.csv (cell, axis values, then
// each cell's metrics.csv rows) and summary.csv (one row per cell: status, cost, acceptance,
// wall and CPU seconds, how many cells ran at once with it, final metrics, skip reason).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "sweep_file.hpp"
#include "sweep_grid.hpp"

/// A number as the tables write it: the shortest text that reads back as the same double.
std::string number_text(double value);

/// Rebuilds both tables from every cell's folder, so a resumed sweep's tables cover all cells.
/// Returns the most cells that ran at once on one machine (summary.csv's concurrent_cells).
std::size_t write_tables(const Sweep& sweep, const std::vector<Cell>& cells, const std::filesystem::path& out);
