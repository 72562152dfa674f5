// Gradient estimators: each returns an unbiased estimate of ∇U(θ) (SCIENCE.md, "Gradient
// estimators") and counts the item gradients it evaluates, the research measure of cost.
module;
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>
export module sgmcmc.estimators;
export import sgmcmc.model;
export import sgmcmc.catalogue;
import sgmcmc.error;

export namespace sgmcmc {

/// Work a chain has paid for: item gradients ∇f_i evaluated and full data passes among them.
struct Cost {
  std::uint64_t item_gradients = 0;
  std::uint64_t full_passes = 0;
};

/// What the parts of one chain share: the model, the chain's workspace, random stream and cost.
struct ChainContext {
  const Model& model;
  Workspace& workspace;
  Rng& rng;
  Cost& cost;
};

class Estimator {
public:
  virtual ~Estimator() = default;
  /// Work before the first iteration (control variates find their centre here); may move the
  /// starting point θ.
  virtual void prepare(std::span<double> /*theta*/, ChainContext& /*context*/) {}
  /// gradient ← an unbiased estimate of ∇U(θ).
  virtual void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) = 0;
};

using EstimatorFactory = std::function<std::unique_ptr<Estimator>(const Settings&, const Model&)>;
const std::vector<CatalogueEntry<EstimatorFactory>>& estimator_catalogue();

/// The estimator named in `section` (default "minibatch"), built for `model`.
std::unique_ptr<Estimator> make_estimator(const Settings& section, const Model& model);

/// Draws minibatches of item indices: without replacement by a partial Fisher–Yates shuffle of
/// a permutation kept between draws (O(n) per draw, no allocation), or with replacement.
class MinibatchSampler {
public:
  MinibatchSampler(std::size_t num_items, std::size_t batch_size, bool with_replacement);
  /// The next batch; its size is min(batch_size, N). A batch as large as the data is every item
  /// once, in index order.
  std::span<const std::size_t> draw(Rng& rng);
  std::size_t batch_size() const { return batch_size_; }

private:
  std::vector<std::size_t> permutation_;
  std::vector<std::size_t> batch_;
  std::size_t batch_size_;
  bool with_replacement_;
};

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

MinibatchSampler::MinibatchSampler(std::size_t num_items, std::size_t batch_size, bool with_replacement)
    : permutation_(num_items), batch_(std::min(batch_size, num_items)),
      batch_size_(std::min(batch_size, num_items)), with_replacement_(with_replacement) {
  std::iota(permutation_.begin(), permutation_.end(), std::size_t{0});
  if (batch_size_ == permutation_.size() && !with_replacement_) batch_ = permutation_;
}

std::span<const std::size_t> MinibatchSampler::draw(Rng& rng) {
  const std::size_t n = permutation_.size();
  if (with_replacement_) {
    for (auto& item : batch_) item = rng.index(n);
  } else if (batch_size_ < n) {
    for (std::size_t k = 0; k < batch_size_; ++k) {
      std::swap(permutation_[k], permutation_[k + rng.index(n - k)]);
      batch_[k] = permutation_[k];
    }
  }
  return batch_;
}

namespace {

void set_zero(std::span<double> v) {
  for (double& x : v) x = 0.0;
}

/// Σ_{i∈batch} ∇f_i(θ) scaled by `scale`, plus ∇f_0(θ): the shared shape of the exact gradient
/// (scale 1, every item) and of SGLD's minibatch estimate (scale N/n).
void scaled_batch_plus_prior(std::span<const double> theta, std::span<const std::size_t> items,
                             double scale, std::span<double> gradient, ChainContext& context) {
  set_zero(gradient);
  context.model.add_data_gradient(theta, Batch{items}, gradient, context.workspace, context.rng);
  for (double& g : gradient) g *= scale;
  context.model.add_prior_gradient(theta, gradient);
  context.cost.item_gradients += items.size();
}

/// ∇U(θ) = ∇f_0(θ) + Σ_{i=1..N} ∇f_i(θ) (SCIENCE.md, "Exact"). O(N) per call.
class ExactEstimator final : public Estimator {
public:
  explicit ExactEstimator(const Model& model) : all_items_(model.num_items(), model.num_items(), false) {}
  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    scaled_batch_plus_prior(theta, all_items_.draw(context.rng), 1.0, gradient, context);
    context.cost.full_passes += 1;
  }

private:
  MinibatchSampler all_items_;  // batch size N without replacement: every item, no draws
};

/// ∇f_0(θ) + (N/n) Σ_{i∈S} ∇f_i(θ), |S| = n (Welling & Teh 2011; seed 1 eq. 3).
class MinibatchEstimator final : public Estimator {
public:
  MinibatchEstimator(const Settings& section, const Model& model)
      : sampler_(model.num_items(), static_cast<std::size_t>(section.integer_at_least("batch_size", 100, 1)),
                 section.flag("replacement", false)),
        scale_(static_cast<double>(model.num_items()) / static_cast<double>(sampler_.batch_size())) {}

  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    scaled_batch_plus_prior(theta, sampler_.draw(context.rng), scale_, gradient, context);
  }

private:
  MinibatchSampler sampler_;
  double scale_;
};

}  // namespace

const std::vector<CatalogueEntry<EstimatorFactory>>& estimator_catalogue() {
  static const std::vector<CatalogueEntry<EstimatorFactory>> catalogue = {
      {"exact", "full-data gradient (O(N) per step); for references and MALA/HMC", {},
       [](const Settings&, const Model& model) -> std::unique_ptr<Estimator> {
         return std::make_unique<ExactEstimator>(model);
       }},
      {"minibatch", "SGLD's estimate (N/n) Σ_S ∇f_i; keys batch_size (100), replacement (false)",
       {"batch_size", "replacement"},
       [](const Settings& section, const Model& model) -> std::unique_ptr<Estimator> {
         return std::make_unique<MinibatchEstimator>(section, model);
       }},
  };
  return catalogue;
}

std::unique_ptr<Estimator> make_estimator(const Settings& section, const Model& model) {
  return choose(estimator_catalogue(), section, "minibatch").make(section, model);
}

}  // namespace sgmcmc
