// What the model checks share, across their implementation units (checks.cpp,
// capability_checks.cpp): the outcome type, exported, and the probe (a model, random points,
// a weighted batch) with the comparisons every check uses, not exported.
module;
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>
export module sgmcmc.model_checks:probe;
import sgmcmc.model;
import sgmcmc.random;

export namespace sgmcmc {

struct CheckOutcome {
  enum class Status { passed, failed, skipped };
  std::string name;
  Status status;
  std::string detail;  // the largest discrepancy, or why it was skipped or failed
};

}  // namespace sgmcmc

// Not exported. A named namespace, not an anonymous one: clang 19 makes internal-linkage names of
// a module unit clash with same-named helpers of units that import it
// (https://github.com/llvm/llvm-project/issues/90259).
namespace sgmcmc::model_check_parts {

using Vector = std::vector<double>;

/// What the checks share: the model, random points, a batch with weights.
struct Probe {
  std::shared_ptr<const Model> model;
  Capabilities capabilities;
  std::unique_ptr<Workspace> workspace;
  std::vector<Vector> points;
  std::vector<std::size_t> items;
  Vector weights;

  /// Σ_k w_k ∇f_{items[k]}(θ), drawing (for a Gibbs step) from a fixed stream, so that calls
  /// are comparable.
  Vector gradient(const Vector& theta, std::span<const std::size_t> batch, std::span<const double> w = {}) const {
    Vector g(theta.size(), 0.0);
    Rng rng(12345, 6789);
    model->add_data_gradient(theta, Batch{batch, w}, g, *workspace, rng);
    return g;
  }
  double potential(const Vector& theta, std::span<const std::size_t> batch, std::span<const double> w = {}) const {
    return model->data_potential(theta, Batch{batch, w}, *workspace);
  }
};

/// Largest relative difference between two vectors; 1 means "at the tolerance".
double worst(const Vector& a, const Vector& b, double relative = 1e-9);
/// Passed when `ratio` (a discrepancy over its tolerance) is at most 1.
CheckOutcome compare(const std::string& name, double ratio, const std::string& detail);
CheckOutcome skipped(const std::string& name, const std::string& why);
/// "items 3,17,...": the probe's batch, for a detail.
std::string item_list(const Probe& probe);

/// The optional capabilities' checks (capability_checks.cpp).
std::vector<CheckOutcome> capability_checks(const Probe& probe);

}  // namespace sgmcmc::model_check_parts
