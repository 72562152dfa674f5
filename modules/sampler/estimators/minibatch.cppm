// The plain estimators and what every estimator shares: drawing minibatches (exported, for tests
// and benchmarks), the minibatch sum Σ_S ∇f_i scaled and added to the prior's gradient, the
// batch_size key, and the `exact` and `minibatch` estimators (modules/README.md, "Gradient estimators").
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.estimators:minibatch;
import sgmcmc.sampler;
import sgmcmc.error;
import :parameters;

export namespace sgmcmc {

/// Draws minibatches of item indices: without replacement by a partial Fisher–Yates shuffle of
/// a permutation kept between draws (O(n) per draw, no allocation), or with replacement.
class MinibatchSampler {
public:
  MinibatchSampler(std::size_t num_items, std::size_t batch_size, bool with_replacement);
  /// The next batch; its size is min(batch_size, N). A batch as large as the data is every item
  /// once, in index order.
  std::span<const std::size_t> draw(Rng& rng);
  std::size_t batch_size() const { return batch_size_; }
  /// The permutation, when draws change it (without replacement, batches smaller than N).
  void save_state(StateWriter& out) const;
  void restore_state(StateReader& in);

private:
  bool shuffles() const { return !with_replacement_ && batch_size_ < permutation_.size(); }
  std::vector<std::size_t> permutation_;
  std::vector<std::size_t> batch_;
  std::size_t batch_size_;
  bool with_replacement_;
};

}  // namespace sgmcmc

namespace sgmcmc {

MinibatchSampler::MinibatchSampler(std::size_t num_items, std::size_t batch_size, bool with_replacement)
    : permutation_(num_items), batch_(std::min(batch_size, num_items)),
      batch_size_(std::min(batch_size, num_items)), with_replacement_(with_replacement) {
  std::iota(permutation_.begin(), permutation_.end(), std::size_t{0});
  if (batch_size_ == permutation_.size() && !with_replacement_) batch_ = permutation_;
}

void MinibatchSampler::save_state(StateWriter& out) const {
  out.section("minibatch sampler");
  out.indices(shuffles() ? std::span<const std::size_t>(permutation_) : std::span<const std::size_t>{});
}

void MinibatchSampler::restore_state(StateReader& in) {
  in.section("minibatch sampler");
  auto permutation = in.indices();
  if (permutation.size() != (shuffles() ? permutation_.size() : 0))
    throw Error(fmt::format("{}: a minibatch permutation of {} items where this run shuffles {}; the checkpoint does "
                            "not fit this run's configuration",
                            in.origin(), permutation.size(), shuffles() ? permutation_.size() : 0));
  if (shuffles()) permutation_ = std::move(permutation);
}

std::span<const std::size_t> MinibatchSampler::draw(Rng& rng) {
  const std::size_t n = permutation_.size();
  if (with_replacement_) {
    for (auto& item : batch_) item = rng.index(n);
  } else if (batch_size_ < n) {
    // The partners k + U{0..n-k-1} do not depend on the permutation, so they are drawn first and
    // their slots prefetched together: the swaps then find them in cache instead of waiting for
    // one cache miss after another (the draws and the result are the same as swapping at once).
    for (std::size_t k = 0; k < batch_size_; ++k) batch_[k] = k + rng.index(n - k);
    for (std::size_t k = 0; k < batch_size_; ++k) __builtin_prefetch(&permutation_[batch_[k]], 1);
    for (std::size_t k = 0; k < batch_size_; ++k) {
      std::swap(permutation_[k], permutation_[batch_[k]]);
      batch_[k] = permutation_[k];
    }
  }
  return batch_;
}

// The parts below are not exported. They live in a named namespace, not an anonymous one:
// clang 19 makes internal-linkage names of a module unit clash with same-named helpers of units
// that import it (https://github.com/llvm/llvm-project/issues/90259), while module linkage keeps
// them apart.
namespace estimator_parts {

// ---- Small helpers -------------------------------------------------------------------------

void set_zero(std::span<double> v) { std::fill(v.begin(), v.end(), 0.0); }

/// Σ_{i∈batch} ∇f_i(θ) scaled by `scale`, plus ∇f_0(θ): the shared shape of the exact gradient
/// (scale 1, every item) and of SGLD's minibatch estimate (scale N/n).
void scaled_batch_plus_prior(std::span<const double> theta, std::span<const std::size_t> items,
                             double scale, std::span<double> gradient, ChainContext& context) {
  set_zero(gradient);
  context.model.add_data_gradient(theta, Batch{items}, gradient, context.workspace, context.rng);
  for (double& g : gradient) g *= scale;
  context.model.add_prior_gradient_given(theta, gradient, context.workspace);
  context.cost.item_gradients += items.size();
}

/// The float chain's form of the above: the model's scaled_gradient_float does the scaling and
/// adds the prior's gradient itself, in float.
void scaled_batch_plus_prior_float(std::span<const float> theta, std::span<const std::size_t> items, double scale,
                                   std::span<float> gradient, ChainContext& context) {
  context.model.scaled_gradient_float(theta, items, scale, gradient, context.workspace);
  context.cost.item_gradients += items.size();
}

/// The default batch size, min(100, N).
std::size_t default_batch_size(const Model& model) { return std::min<std::size_t>(100, model.num_items()); }

/// An explicit batch_size above N is an error, not silently N (the default, min(100, N), never is).
void check_batch_fits(SectionReader section, std::size_t batch_size, const Model& model) {
  if (batch_size > model.num_items())
    throw Error(fmt::format("{}: a batch of {} items is larger than the data set (N = {} items); choose at most {}",
                            section.describe("batch_size"), batch_size, model.num_items(), model.num_items()));
}

/// A batch size from plain parameters: the default for none, refused outside 1..N.
std::size_t resolve_batch_size(std::optional<std::size_t> batch_size, const Model& model) {
  const std::size_t size = batch_size.value_or(default_batch_size(model));
  require_parameter(size >= 1 && size <= model.num_items(), "estimator",
                    fmt::format("1 <= batch_size <= N = {}", model.num_items()), size);
  return size;
}

// ---- exact and minibatch ---------------------------------------------------------------------

/// ∇U(θ) = ∇f_0(θ) + Σ_{i=1..N} ∇f_i(θ) (modules/README.md, "Exact"). O(N) per call.
class ExactEstimator final : public Estimator {
public:
  explicit ExactEstimator(const Model& model) : all_items_(model.num_items(), model.num_items(), false) {}
  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    scaled_batch_plus_prior(theta, all_items_.draw(context.rng), 1.0, gradient, context);
    context.cost.full_passes += 1;
  }
  std::string float_refusal() const override { return {}; }
  void estimate_float(std::span<const float> theta, std::span<float> gradient, ChainContext& context) override {
    scaled_batch_plus_prior_float(theta, all_items_.draw(context.rng), 1.0, gradient, context);
    context.cost.full_passes += 1;
  }

private:
  MinibatchSampler all_items_;  // batch size N without replacement: every item, no draws
};

/// ∇f_0(θ) + (N/n) Σ_{i∈S} ∇f_i(θ), |S| = n (Welling & Teh 2011; Baker et al. 2019, eq. 3).
class MinibatchEstimator final : public Estimator {
public:
  MinibatchEstimator(const MinibatchParameters& parameters, const Model& model)
      : sampler_(model.num_items(), resolve_batch_size(parameters.batch_size, model), parameters.replacement),
        scale_(static_cast<double>(model.num_items()) / static_cast<double>(sampler_.batch_size())) {}

  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    scaled_batch_plus_prior(theta, sampler_.draw(context.rng), scale_, gradient, context);
  }
  std::string float_refusal() const override { return {}; }
  void estimate_float(std::span<const float> theta, std::span<float> gradient, ChainContext& context) override {
    scaled_batch_plus_prior_float(theta, sampler_.draw(context.rng), scale_, gradient, context);
  }
  void save_state(StateWriter& out) const override { sampler_.save_state(out); }
  void restore_state(StateReader& in) override { sampler_.restore_state(in); }

private:
  MinibatchSampler sampler_;
  double scale_;
};

}  // namespace estimator_parts

const FieldTable<ExactParameters>& ExactParameters::fields() {
  static const FieldTable<ExactParameters> none;
  return none;
}

ExactParameters ExactParameters::from_settings(SectionReader, const Model&) { return {}; }

const FieldTable<MinibatchParameters>& MinibatchParameters::fields() {
  using P = MinibatchParameters;
  static const FieldTable<P> table = {
      estimator_parts::batch_size_field<P>(),
      flag_field("replacement", &P::replacement, "draw S with replacement; false: n distinct items")};
  return table;
}

MinibatchParameters MinibatchParameters::from_settings(SectionReader section, const Model& model) {
  const auto parameters =
      read_fields_from(fields(), section, MinibatchParameters{.batch_size = estimator_parts::default_batch_size(model)});
  estimator_parts::check_batch_fits(section, *parameters.batch_size, model);
  return parameters;
}

}  // namespace sgmcmc
