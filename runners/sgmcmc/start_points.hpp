// run.init: where each chain starts, when not at the model's own initial point — a draw of an
// earlier run (so that two samplers can be compared from one start, or a run continued under
// another sampler) or values a user wrote.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

import sgmcmc;

struct StartPoint {
  std::vector<double> theta;
  std::string origin;  // "<file>, draw <n> of <m>" or "<file>, mean of its <m> draws": for the manifest
};

/// The start of each of `chains` chains, or none when [run] has no `init`. `init` names either a
/// run folder (chain k starts from the chosen draw of its chain-<k>.csv; with fewer chains there,
/// the chains cycle over them) or one CSV file (every chain starts from the same draw): a Stan
/// CSV such as chain-<k>.csv, or a header of parameter names over rows of values. `init_draw`
/// picks the row, 1 = the first, 0 (the default) = the last; `init_mean = true` starts from the
/// mean of every draw instead (an SGLD burn-in's running mean). Every parameter of the model needs
/// its column (others, lp__ and the like, are ignored); values must be finite, and positive for a
/// model of positive parameters. Errors name the key, the file, the draw and the column.
std::vector<StartPoint> read_start_points(sgmcmc::SectionReader run, const sgmcmc::Model& model, std::uint64_t chains);

/// What run.init and `sgmcmc gradient-variance --at` read: a run folder's chain-<k>.csv files in
/// order, or the one file named. Errors start with `key`.
std::vector<std::filesystem::path> draw_files(const std::filesystem::path& source, const std::string& key);

/// The column of each of the model's parameters in `csv` (other columns ignored); a missing one
/// is an error naming `file`.
std::vector<std::size_t> parameter_columns(const sgmcmc::StanCsv& csv, const sgmcmc::Model& model, const std::string& file);

/// θ from draw `row` of `csv` (0-based), checked: finite, and > 0 for a model of positive
/// parameters; an error names `file`, the draw and the column.
void parameter_values(const sgmcmc::StanCsv& csv, std::size_t row, const std::vector<std::size_t>& columns,
                      const sgmcmc::Model& model, const std::string& file, std::vector<double>& theta);
