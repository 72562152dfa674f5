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

/// Draws minibatches of item indices, without replacement (the default) or with replacement.
///
/// Without replacement the batch is a uniformly random n-subset of the N items, drawn by halving:
/// the batch's count in the left half of [0, N) is
/// Hypergeometric(N, ⌊N/2⌋, n) (how many of n items drawn without replacement fall there), the
/// halves are halved again with their counts, and so on down to leaves of at most 2¹⁶ items, in
/// each of which Floyd's sampler (Bentley & Floyd 1987) picks its count of items. Given the
/// counts, the subsets of the two halves are independent and uniform, so every n-subset of the N
/// items has probability 1/C(N, n). Each node of the halving draws from its own stream,
/// Rng(key, node) with one key per batch from the chain's stream, so that a part of the batch can
/// be drawn without the rest: a data-parallel rank draws only the batch's items in its own block
/// of rows (`kept`), O(its items) per draw, and each rank's part is exactly its share of the batch
/// that one process draws with the same seed. Nothing of size N is kept between draws. The batch
/// comes leaf by leaf in item order, each leaf's items in the order Floyd's sampler took them:
/// the estimators only sum over a batch, so its order is free, and putting each leaf's items in
/// increasing order as well cost more than it saved (tests/benchmarks/README.md).
class MinibatchSampler {
public:
  /// `kept`: the items of each batch that draw() returns; by default every item.
  MinibatchSampler(std::size_t num_items, std::size_t batch_size, bool with_replacement,
                   ItemBlock kept = {0, std::numeric_limits<std::size_t>::max()});
  /// The next batch's items within `kept`; the batch has min(batch_size, N) items. A batch as
  /// large as the data is every item, in order, drawn from nothing. With replacement, draws n
  /// independent uniform items, all returned whatever `kept` is.
  std::span<const std::size_t> draw(Rng& rng);
  std::size_t batch_size() const { return batch_size_; }
  /// Nothing: every batch is drawn afresh from the chain's stream (the section stays, empty).
  void save_state(StateWriter& out) const;
  void restore_state(StateReader& in);

  /// The largest leaf of the halving, 2¹⁶ items: its marks (8 KiB) stay in the first-level cache,
  /// and at the batch sizes of a data-parallel run (10⁴–10⁵ of 10⁹) a leaf holds a few of them.
  static constexpr std::size_t leaf_items = std::size_t{1} << 16;

private:
  void draw_node(std::uint64_t key, std::uint64_t node, ItemBlock items, std::size_t count);
  void draw_leaf(Rng& rng, ItemBlock items, std::size_t count);

  std::size_t num_items_;
  std::size_t batch_size_;
  bool with_replacement_;
  ItemBlock kept_;
  std::vector<std::size_t> batch_;
  std::vector<std::uint64_t> marks_;  // a leaf's items taken by Floyd's sampler, one bit each; all 0 between leaves
};

}  // namespace sgmcmc

namespace sgmcmc {

MinibatchSampler::MinibatchSampler(std::size_t num_items, std::size_t batch_size, bool with_replacement,
                                   ItemBlock kept)
    : num_items_(num_items), batch_size_(std::min(batch_size, num_items)), with_replacement_(with_replacement),
      kept_(kept), marks_((std::min(num_items, leaf_items) + 63) / 64, 0) {
  if (with_replacement_) batch_.resize(batch_size_);
  else if (batch_size_ == num_items_)
    for (std::size_t item = kept_.first; item < std::min(kept_.end, num_items_); ++item) batch_.push_back(item);
  else batch_.reserve(std::min(batch_size_, kept_.size()));
}

void MinibatchSampler::save_state(StateWriter& out) const {
  out.section("minibatch sampler");
  out.indices({});  // where earlier versions kept their permutation (refused on restore, below)
}

void MinibatchSampler::restore_state(StateReader& in) {
  in.section("minibatch sampler");
  if (!in.indices().empty())
    throw Error(fmt::format("{}: this checkpoint holds a minibatch permutation: it was written by an earlier sgmcmc, "
                            "which drew batches from a permutation kept between draws; this one draws each batch "
                            "afresh, so the resumed chain could not continue the same draws. Finish the run with the "
                            "sgmcmc that started it, or start it again",
                            in.origin()));
}

std::span<const std::size_t> MinibatchSampler::draw(Rng& rng) {
  if (with_replacement_) {
    for (auto& item : batch_) item = rng.index(num_items_);
  } else if (batch_size_ < num_items_) {
    batch_.clear();
    draw_node(rng.bits(), 1, {0, num_items_}, batch_size_);
  }
  return batch_;
}

/// `count` items of the block `items`, node `node` of the halving (the root is 1, node k's halves
/// are 2k and 2k + 1): appended to batch_, its left half's before its right's, those in kept_ only.
void MinibatchSampler::draw_node(std::uint64_t key, std::uint64_t node, ItemBlock items, std::size_t count) {
  if (count == 0 || items.end <= kept_.first || items.first >= kept_.end) return;
  Rng rng(key, node);
  if (items.size() <= leaf_items) return draw_leaf(rng, items, count);
  const std::size_t middle = items.first + items.size() / 2;
  const std::size_t left = rng.hypergeometric(items.size(), middle - items.first, count);
  draw_node(key, 2 * node, {items.first, middle}, left);
  draw_node(key, 2 * node + 1, {middle, items.end}, count - left);
}

/// Floyd's sampler (Bentley & Floyd 1987): for j = m-c, ..., m-1 take t ~ U{0..j}, or j itself
/// when t is taken already; every c-subset of the m items is equally likely. The marks of the
/// taken items are cleared by their words afterwards, O(c), so the next leaf finds them empty.
void MinibatchSampler::draw_leaf(Rng& rng, ItemBlock items, std::size_t count) {
  const std::size_t m = items.size(), start = batch_.size();
  for (std::size_t j = m - count; j < m; ++j) {
    std::size_t t = rng.index(j + 1);
    if ((marks_[t / 64] >> (t % 64)) & 1) t = j;
    marks_[t / 64] |= std::uint64_t{1} << (t % 64);
    batch_.push_back(items.first + t);
  }
  for (std::size_t k = start; k < batch_.size(); ++k) marks_[(batch_[k] - items.first) / 64] = 0;
  // A leaf that straddles the edge of kept_ keeps only its items inside.
  if (items.first < kept_.first || items.end > kept_.end)
    batch_.erase(std::remove_if(batch_.begin() + static_cast<std::ptrdiff_t>(start), batch_.end(),
                                [&](std::size_t item) { return !kept_.holds(item); }),
                 batch_.end());
}

// The parts below are not exported. They live in a named namespace, not an anonymous one:
// clang 19 makes internal-linkage names of a module unit clash with same-named helpers of units
// that import it (https://github.com/llvm/llvm-project/issues/90259), while module linkage keeps
// them apart.
namespace estimator_parts {

// ---- Small helpers -------------------------------------------------------------------------

void set_zero(std::span<double> v) { std::fill(v.begin(), v.end(), 0.0); }

/// Σ_{i∈batch} ∇f_i(θ) scaled by `scale`, plus ∇f_0(θ): the shared shape of the exact gradient
/// (scale 1, every item) and of SGLD's minibatch estimate (scale N/n). The cost counts the whole
/// batch, `batch_size` items, of which a data-parallel rank holds and is given its share.
void scaled_batch_plus_prior(std::span<const double> theta, std::span<const std::size_t> items, std::size_t batch_size,
                             double scale, std::span<double> gradient, ChainContext& context) {
  set_zero(gradient);
  context.model.add_data_gradient(theta, Batch{items}, gradient, context.workspace, context.rng);
  for (double& g : gradient) g *= scale;
  context.model.add_prior_gradient_given(theta, gradient, context.workspace);
  context.cost.item_gradients += batch_size;
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
    scaled_batch_plus_prior(theta, all_items_.draw(context.rng), all_items_.batch_size(), 1.0, gradient, context);
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

/// ∇f_0(θ) + (N/n) Σ_{i∈S} ∇f_i(θ), |S| = n (Welling & Teh 2011; Baker et al. 2019, eq. 3). The
/// batch only feeds the model's data gradient, so a data-parallel rank draws just its share of it
/// (Model::evaluated_items).
class MinibatchEstimator final : public Estimator {
public:
  MinibatchEstimator(const MinibatchParameters& parameters, const Model& model)
      : sampler_(model.num_items(), resolve_batch_size(parameters.batch_size, model), parameters.replacement,
                 model.evaluated_items()),
        scale_(static_cast<double>(model.num_items()) / static_cast<double>(sampler_.batch_size())) {}

  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    scaled_batch_plus_prior(theta, sampler_.draw(context.rng), sampler_.batch_size(), scale_, gradient, context);
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
