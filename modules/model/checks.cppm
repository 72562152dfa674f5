// Checks of a model plugin's contract, run by `sgmcmc check-model` before anyone trusts a
// posterior from it: gradients against finite differences, batches against sums of items,
// declared capabilities, quantities of interest, reproducibility and thread safety.
module;
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.model_checks;
export import sgmcmc.model;
export import :probe;
import sgmcmc.error;

export namespace sgmcmc {

/// Builds a model from [model] settings and a seed (a loaded plugin's factory).
using ModelBuilder = std::function<std::shared_ptr<const Model>(SectionReader, std::uint64_t seed)>;

/// The stages of check_model, in order; each gives one or more outcomes.
inline constexpr const char* check_stages[] = {
    "the model builds from the given settings", "dimensions", "gradients", "batches", "capabilities",
    "quantities", "reproducibility"};

/// What check_model reports while it runs, for a caller that runs it in a child process (a plugin
/// can crash any process it is loaded into): the stage about to run, and each outcome as it is
/// made. A caller whose child died in stage s starts another at s + 1 (`first_stage`); the model
/// is built again there, and the stages before are not repeated.
struct CheckProgress {
  std::size_t first_stage = 0;
  std::function<void(std::size_t stage)> on_stage = [](std::size_t) {};
  std::function<void(const CheckOutcome&)> on_outcome = [](const CheckOutcome&) {};
};

/// Runs every check on the model `build` makes from `settings`. Never throws for a faulty model:
/// an exception from it is a failed check.
std::vector<CheckOutcome> check_model(const ModelBuilder& build, const Settings& settings,
                                      const CheckProgress& progress = {});

}  // namespace sgmcmc
