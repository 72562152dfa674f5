// A run's draws with the gradients of log π recorded beside them (gradients-<k>.csv, [output]
// gradients), as `zv`, `summary` and `tune` read them, and the kernel Stein discrepancy of such
// draws.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "run_folder.hpp"

import sgmcmc;

struct Recorded {
  Chains chains;
  /// integrator.temperature T of the run (manifest.json; 1 without one): the chain samples
  /// π^{1/T}, whose score is z/T for the recorded z = ∇log π.
  double temperature = 1.0;
  bool temperature_from_manifest = false;
  std::vector<std::string> parameters;         // from the gradient files' grad_lp.<name> header
  std::vector<std::size_t> parameter_columns;  // their columns in chain-<k>.csv
  std::vector<std::size_t> quantity_columns;   // the other non-sampler columns
  std::vector<sgmcmc::StanCsv> gradients;      // per chain
  std::vector<std::filesystem::path> gradient_paths;
};

/// The chains of `folder` and their gradient files; errors start with `command` and name the file.
Recorded read_recorded(const std::filesystem::path& folder, const std::string& command);

struct Pooled {
  sgmcmc::DrawMatrix points, quantities;  // rows: chain 1's draws, then chain 2's, ...
  /// The score of the target the chain samples, ∇log π^{1/T} = z/T: what ZV's controls and the
  /// KSD need (Stein's identity holds for the chain's target, not for π when T ≠ 1).
  sgmcmc::DrawMatrix scores;
};

/// Every chain cut to the shortest's length and stacked; the quantities are the parameters
/// themselves (q = θ_j) followed by the model's quantity columns; the scores are the recorded
/// gradients divided by the run's temperature. A NaN or Inf is an error naming its file, draw and
/// column.
Pooled pool(const Recorded& recorded, const std::string& command);

/// Per coordinate, the mean and the standard deviation of the rows of `points`.
struct Spread {
  std::vector<double> mean, sd;
};
Spread spread_of(const sgmcmc::DrawMatrix& points);

/// KSD is O(n² d): the draws it is computed from are thinned evenly to at most this many.
inline constexpr std::size_t ksd_max_draws = 1000;

/// The kernel Stein discrepancy (IMQ kernel, c = 1, β = -1/2; sgmcmc::kernel_stein_discrepancy)
/// of rows [begin, end) of `pooled`, thinned evenly to at most `max_draws`, in standardised
/// coordinates x' = (x - centre)/scale, whose scores are s·scale: the kernel's unit length then
/// matches the posterior's spread whatever the parameters' units. KSDs are comparable only when
/// computed with the same centre and scale. `used` is set to the number of draws.
double standardised_ksd(const Pooled& pooled, std::size_t begin, std::size_t end, const Spread& standard,
                        std::size_t max_draws, std::size_t& used);
