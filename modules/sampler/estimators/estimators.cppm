// Gradient estimators: each returns an unbiased estimate of ∇U(θ) (modules/README.md, "Gradient
// estimators") and counts the item gradients it evaluates, the research measure of cost.
//
// The file is in sections, one per concept: the interface; exact and minibatch; drawing a
// weighted batch (uniform or p_i ∝ L_i); the control variate around a centre, shared by `cv`
// (centre θ̂ found by SGD) and `svrg` (centre = a snapshot refreshed every m estimates); SAGA's
// gradient tables; the catalogue.
module;
#include <algorithm>
#include <cctype>
#include <charconv>
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
#include <system_error>
#include <vector>
#include <sys/mman.h>
#include <fmt/format.h>
export module sgmcmc.estimators;
export import sgmcmc.sampler;
import sgmcmc.error;

export namespace sgmcmc {

using EstimatorFactory = std::function<std::unique_ptr<Estimator>(const Settings&, const Model&)>;
const std::vector<CatalogueEntry<EstimatorFactory>>& estimator_catalogue();

inline constexpr const char* default_estimator = "minibatch";

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

module :private;

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
// clang 19 makes internal-linkage names of this unit clash with same-named helpers of units
// that import it (chain.cppm has its own all_finite), while module linkage keeps them apart.
namespace estimator_parts {

// ---- Small helpers -------------------------------------------------------------------------

void set_zero(std::span<double> v) { std::fill(v.begin(), v.end(), 0.0); }

/// table ← `count` zeros, on transparent huge pages where the kernel grants them: a table read at
/// random rows (SAGA's) otherwise misses the TLB on almost every row. The memory is reserved
/// untouched, the 2 MiB-aligned part of it advised (MADV_HUGEPAGE: advice only, ignored if
/// refused), and then filled, so the first touch already maps huge pages.
void assign_zeros_on_huge_pages(std::vector<double>& table, std::size_t count) {
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  table.clear();
  table.shrink_to_fit();
  table.reserve(count);
  const auto begin = reinterpret_cast<std::uintptr_t>(table.data());
  const auto end = begin + count * sizeof(double);
  const std::uintptr_t first = (begin + huge - 1) / huge * huge, last = end / huge * huge;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  table.assign(count, 0.0);
}


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

/// batch_size (default min(100, N)); an explicit value above N is an error, not silently N.
std::size_t read_batch_size(const Settings& section, const Model& model) {
  const auto items = static_cast<std::int64_t>(model.num_items());
  const std::int64_t size = section.integer_at_least("batch_size", std::min<std::int64_t>(100, items), 1);
  if (size > items)
    throw Error(fmt::format("{}: a batch of {} items is larger than the data set (N = {} items); choose at most {}",
                            section.describe("batch_size"), size, items, items));
  return static_cast<std::size_t>(size);
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

private:
  MinibatchSampler all_items_;  // batch size N without replacement: every item, no draws
};

/// ∇f_0(θ) + (N/n) Σ_{i∈S} ∇f_i(θ), |S| = n (Welling & Teh 2011; Baker et al. 2019, eq. 3).
class MinibatchEstimator final : public Estimator {
public:
  MinibatchEstimator(const Settings& section, const Model& model)
      : sampler_(model.num_items(), read_batch_size(section, model), section.flag("replacement", false)),
        scale_(static_cast<double>(model.num_items()) / static_cast<double>(sampler_.batch_size())) {}

  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    scaled_batch_plus_prior(theta, sampler_.draw(context.rng), scale_, gradient, context);
  }
  void save_state(StateWriter& out) const override { sampler_.save_state(out); }
  void restore_state(StateReader& in) override { sampler_.restore_state(in); }

private:
  MinibatchSampler sampler_;
  double scale_;
};

// ---- Drawing a weighted batch ------------------------------------------------------------------
//
// Baker et al. (2019, eq. 4) samples S with probabilities p_i (E[#times i is in S] = n p_i) and weights each
// sampled term by 1/(n p_i), so that for any per-item quantity h_i
//     E[ Σ_{k∈S} h_{i_k} / (n p_{i_k}) ] = Σ_i h_i.
// Uniform p_i = 1/N gives the familiar N/n (with or without replacement); p_i ∝ L_i needs
// independent draws, i.e. with replacement.

/// A batch and its weights w_k = scale · batch.weight(k). Uniform sampling leaves batch.weights
/// empty (the model's unweighted path) and puts N/n in `scale`.
struct WeightedBatch {
  Batch batch;
  double scale;
  double weight(std::size_t k) const { return scale * batch.weight(k); }
};

/// Draws i with probability p_i in O(1): Walker's alias method as arranged by Vose (1991,
/// IEEE TSE 17(9)). Column c is kept with probability keep[c], else its alias is drawn.
class AliasTable {
public:
  explicit AliasTable(std::span<const double> probabilities)
      : keep_(probabilities.size(), 1.0), alias_(probabilities.size()) {
    const std::size_t n = probabilities.size();
    std::vector<double> mass(n);
    std::vector<std::size_t> small, large;
    for (std::size_t i = 0; i < n; ++i) {
      mass[i] = probabilities[i] * static_cast<double>(n);
      alias_[i] = i;
      (mass[i] < 1.0 ? small : large).push_back(i);
    }
    while (!small.empty() && !large.empty()) {
      const std::size_t light = small.back(), heavy = large.back();
      small.pop_back();
      keep_[light] = mass[light];
      alias_[light] = heavy;
      mass[heavy] = (mass[heavy] + mass[light]) - 1.0;
      if (mass[heavy] < 1.0) {
        large.pop_back();
        small.push_back(heavy);
      }
    }
    // Whatever is left has mass 1 up to rounding, and keeps keep = 1, alias = itself.
  }

  std::size_t draw(Rng& rng) const {
    const auto column = static_cast<std::size_t>(rng.index(keep_.size()));
    return rng.uniform() < keep_[column] ? column : alias_[column];
  }

private:
  std::vector<double> keep_;
  std::vector<std::size_t> alias_;
};

enum class Sampling { uniform, lipschitz };

Sampling read_sampling(const Settings& section, const Model& model) {
  const std::string name = section.text("sampling", "uniform");
  const std::pair<const char*, Sampling> known[] = {{"uniform", Sampling::uniform}, {"lipschitz", Sampling::lipschitz}};
  for (const auto& [known_name, sampling] : known) {
    if (name != known_name) continue;
    if (sampling == Sampling::lipschitz && !model.capabilities().lipschitz_bounds)
      throw Error(fmt::format("{} = 'lipschitz' needs a model with the 'lipschitz-bounds' capability "
                              "(per-item Lipschitz constants L_i); use 'uniform'",
                              section.describe("sampling")));
    return sampling;
  }
  throw Error(fmt::format("{}: unknown sampling '{}'; known: uniform (p_i = 1/N), lipschitz (p_i ∝ L_i)",
                          section.describe("sampling"), name));
}

/// Draws S for the control-variate estimators: keys batch_size, replacement, sampling.
class ItemSampler {
public:
  ItemSampler(const Settings& section, const Model& model)
      : num_items_(model.num_items()), batch_size_(read_batch_size(section, model)),
        sampling_(read_sampling(section, model)) {
    const bool independent = sampling_ != Sampling::uniform;
    with_replacement_ = section.flag("replacement", independent);
    if (independent && !with_replacement_)
      throw Error(fmt::format("{} = false, but sampling = 'lipschitz' draws items independently with "
                              "p_i ∝ L_i, that is with replacement; remove the key or set it to true",
                              section.describe("replacement")));
    if (sampling_ == Sampling::uniform)
      uniform_.emplace(num_items_, batch_size_, with_replacement_);
    else
      prepare_lipschitz(model);
  }

  WeightedBatch draw(Rng& rng) {
    if (uniform_) return {Batch{uniform_->draw(rng)}, static_cast<double>(num_items_) / static_cast<double>(batch_size_)};
    for (std::size_t k = 0; k < batch_size_; ++k) {
      items_[k] = alias_->draw(rng);
      weights_[k] = item_weight_[items_[k]];
    }
    return {Batch{items_, weights_}, 1.0};
  }

  std::size_t batch_size() const { return batch_size_; }
  /// No item appears twice in a batch (sampling without replacement).
  bool distinct_items() const { return !with_replacement_; }
  /// Uniform sampling keeps a permutation; the alias table draws independently and keeps none.
  void save_state(StateWriter& out) const {
    if (uniform_) uniform_->save_state(out);
  }
  void restore_state(StateReader& in) {
    if (uniform_) uniform_->restore_state(in);
  }

private:
  /// p_i = L_i / Σ_j L_j and w_i = 1/(n p_i). An item with L_i = 0 has a constant gradient, so
  /// every difference ∇f_i(θ) - ∇f_i(θ') these estimators sample is 0 for it: p_i = 0 keeps
  /// them unbiased (its weight is never used).
  void prepare_lipschitz(const Model& model) {
    std::vector<double> bounds(num_items_);
    model.item_lipschitz_bounds(bounds);
    double total = 0.0;
    for (std::size_t i = 0; i < num_items_; ++i) {
      if (!(bounds[i] >= 0.0) || !std::isfinite(bounds[i]))
        throw Error(fmt::format("the model's Lipschitz bound of item {} is {}; sampling = 'lipschitz' needs "
                                "finite L_i >= 0",
                                i, bounds[i]));
      total += bounds[i];
    }
    if (!(total > 0.0))
      throw Error("every Lipschitz bound L_i of the model is 0 (no data term varies with θ); use sampling = 'uniform'");
    item_weight_.resize(num_items_);
    for (std::size_t i = 0; i < num_items_; ++i) {
      bounds[i] /= total;  // now p_i
      item_weight_[i] = bounds[i] > 0.0 ? 1.0 / (static_cast<double>(batch_size_) * bounds[i]) : 0.0;
    }
    alias_.emplace(bounds);
    items_.resize(batch_size_);
    weights_.resize(batch_size_);
  }

  std::size_t num_items_;
  std::size_t batch_size_;
  Sampling sampling_;
  bool with_replacement_ = false;
  std::optional<MinibatchSampler> uniform_;  // p_i = 1/N
  std::optional<AliasTable> alias_;          // p_i ∝ L_i, with its weights 1/(n p_i) per item
  std::vector<double> item_weight_;
  std::vector<std::size_t> items_;  // the last batch drawn from alias_
  std::vector<double> weights_;
};

/// ceil(N/n): the number of batches in one pass over the data.
std::size_t one_pass(const Model& model, const ItemSampler& sampler) {
  return (model.num_items() + sampler.batch_size() - 1) / sampler.batch_size();
}

// ---- The control variate around a centre (SGLD-CV and SVRG) -----------------------------------

/// Baker et al. (2019, eq. 4), the estimate around a centre c whose full gradient is known:
///   ĝ(θ) = ∇U(c) + ∇f_0(θ) - ∇f_0(c) + Σ_{k∈S} w_k [∇f_{i_k}(θ) - ∇f_{i_k}(c)],  w_k = 1/(n p_{i_k}),
/// kept as Σ_i ∇f_i(c) + ∇f_0(θ) + Σ_k w_k [...] since ∇U(c) - ∇f_0(c) = Σ_i ∇f_i(c). SVRG
/// (Dubey et al. 2016, SVRG-LD) is the same estimate with c = the last snapshot θ̃.
/// A GLM model (∇f_i = s_i x_i) keeps the N scalars s_i(c) of the full pass, so an estimate costs
/// n item gradients; any other model evaluates both ∇f_i(θ) and ∇f_i(c) of the batch (2n).
class Centre {
public:
  explicit Centre(const Model& model)
      : glm_(model.capabilities().glm_gradients), dimension_(model.dimension()), items_(model.num_items()) {}

  /// For a model whose gradient Gibbs-samples latent variables (LDA) Σ_i ∇f_i(c) is itself an
  /// estimate, fixed until the centre moves, so every later estimate carries its error: each full
  /// pass below averages `passes` independent passes, dividing that variance by `passes` (models
  /// without latent_gibbs_step keep 1, their pass being exact).
  void average_passes(std::size_t passes) { passes_ = passes; }

  /// c ← θ, with a full data pass for Σ_i ∇f_i(c).
  void move_to(std::span<const double> theta, ChainContext& context) {
    allocate();
    point_.assign(theta.begin(), theta.end());
    recompute(context);
  }

  /// Σ_i ∇f_i(c) again at the same c, one full pass: after the model's data terms changed.
  void recompute(ChainContext& context) {
    const Model& model = context.model;
    set_zero(data_gradient_);
    if (glm_) {
      model.glm_scalars(point_, all_items_, centre_scalars_, context.workspace);
      model.add_scaled_features(all_items_, centre_scalars_, data_gradient_);
    } else {
      for (std::size_t pass = 0; pass < passes_; ++pass)
        model.add_data_gradient(point_, Batch{all_items_}, data_gradient_, context.workspace, context.rng);
      if (passes_ > 1)
        for (double& g : data_gradient_) g /= static_cast<double>(passes_);
    }
    context.cost.item_gradients += passes_ * all_items_.size();
    context.cost.full_passes += passes_;
  }

  bool placed() const { return !point_.empty(); }
  std::span<const double> data_gradient() const { return data_gradient_; }

  /// c, Σ_i ∇f_i(c) and, for GLM models, s_i(c): everything the full pass at c computed.
  void save_state(StateWriter& out) const {
    out.section("control-variate centre");
    out.flag(placed());
    if (!placed()) return;
    out.numbers(point_);
    out.numbers(data_gradient_);
    out.numbers(centre_scalars_);
  }
  void restore_state(StateReader& in) {
    in.section("control-variate centre");
    if (!in.flag()) return;
    allocate();
    in.numbers(point_, dimension_);
    in.numbers(data_gradient_, dimension_);
    in.numbers(centre_scalars_, glm_ ? items_ : 0);
  }

  /// gradient ← ∇U(c) + ∇f_0(θ) - ∇f_0(c): the estimate with the batch term left out, which is
  /// exact at θ = c (used right after a full pass, where the batch term is zero).
  void exact_at_centre(std::span<const double> theta, std::span<double> gradient, ChainContext& context) const {
    std::copy(data_gradient_.begin(), data_gradient_.end(), gradient.begin());
    context.model.add_prior_gradient_given(theta, gradient, context.workspace);
  }

  /// gradient ← ĝ(θ) of Baker et al. (2019, eq. 4) for the batch `draw`.
  void estimate(std::span<const double> theta, const WeightedBatch& draw, std::span<double> gradient,
                ChainContext& context) {
    if (glm_)
      estimate_glm(theta, draw, gradient, context);
    else
      estimate_general(theta, draw, gradient, context);
    context.model.add_prior_gradient_given(theta, gradient, context.workspace);
  }

private:
  void allocate() {
    if (!all_items_.empty()) return;
    all_items_.resize(items_);
    std::iota(all_items_.begin(), all_items_.end(), std::size_t{0});
    data_gradient_.resize(dimension_);
    at_centre_.resize(dimension_);
    if (glm_) centre_scalars_.resize(items_);
  }

  /// Σ_i∇f_i(c) + Σ_k w_k [∇f_i(θ) - ∇f_i(c)], both batch sums kept apart until the difference
  /// so that at θ = c they cancel exactly. A model whose gradient Gibbs-samples latent variables
  /// (LDA) draws both from the same stream state: common random numbers, so the two Gibbs
  /// estimates are positively correlated and their difference small when θ is near c (at θ = c
  /// it is exactly 0, as for a deterministic gradient). Models that draw nothing are unaffected.
  void estimate_general(std::span<const double> theta, const WeightedBatch& draw, std::span<double> gradient,
                        ChainContext& context) {
    set_zero(gradient);
    set_zero(at_centre_);
    Rng replay = context.rng;
    context.model.add_data_gradient(theta, draw.batch, gradient, context.workspace, context.rng);
    context.model.add_data_gradient(point_, draw.batch, at_centre_, context.workspace, replay);
    for (std::size_t j = 0; j < gradient.size(); ++j)
      gradient[j] = data_gradient_[j] + draw.scale * (gradient[j] - at_centre_[j]);
    context.cost.item_gradients += 2 * draw.batch.items.size();
  }

  /// Σ_i∇f_i(c) + Σ_k w_k [s_i(θ) - s_i(c)] x_i: one scalar per item and one pass over the features.
  void estimate_glm(std::span<const double> theta, const WeightedBatch& draw, std::span<double> gradient,
                    ChainContext& context) {
    const auto items = draw.batch.items;
    scales_.resize(items.size());
    context.model.glm_scalars(theta, items, scales_, context.workspace);
    for (std::size_t k = 0; k < items.size(); ++k) scales_[k] = draw.weight(k) * (scales_[k] - centre_scalars_[items[k]]);
    std::copy(data_gradient_.begin(), data_gradient_.end(), gradient.begin());
    context.model.add_scaled_features(items, scales_, gradient);
    context.cost.item_gradients += items.size();
  }

  bool glm_;
  std::size_t dimension_, items_;
  std::size_t passes_ = 1;  // full passes averaged for Σ_i ∇f_i(c)
  std::vector<std::size_t> all_items_;
  std::vector<double> point_;           // c
  std::vector<double> data_gradient_;   // Σ_i ∇f_i(c)
  std::vector<double> centre_scalars_;  // s_i(c) for every item (GLM models)
  std::vector<double> at_centre_;       // scratch: Σ_k w_k ∇f_i(c) over the batch
  std::vector<double> scales_;          // scratch: w_k [s_i(θ) - s_i(c)]
};

// ---- cv: SGLD-CV, centre θ̂ found by SGD -------------------------------------------------------

/// SGD step sizes h_k, k = 1, 2, ...: constant h_0, or the Robbins–Monro family
///   h_k = h_0 (1 + (k-1)/b)^(-c),  0.5 < c <= 1,  so that Σ h_k = ∞ and Σ h_k² < ∞
/// (Robbins & Monro 1951; Baker et al. 2019, §3.1). It is a(b' + k)^(-c), the integrators' `polynomial`
/// family, written so that sgd_step_size is the first step h_0. The default b = c = 1 gives
/// h_k = h_0/k, the 1/(λk) steps of the SGD bound Baker et al. (2019, §3.4) uses (Nemirovski et al. 2009): on
/// a quadratic with curvature λ = 1/h_0 in every direction, θ_k - θ* = (1 - 1/k)(θ_{k-1} - θ*) -
/// ζ_k/(λk) gives θ_K - θ* = -(1/(λK)) Σ_k ζ_k, the average of the K batches' noise, so one pass
/// (K = N/n) leaves θ̂ about one posterior standard deviation from the mode.
class SgdSchedule {
public:
  explicit SgdSchedule(const Settings& section)
      : step_size_(section.number("sgd_step_size", 0.0)),
        decay_b_(section.positive_number("sgd_decay_b", 1.0)),
        decay_c_(section.number("sgd_decay_c", 1.0)) {
    if (!(step_size_ >= 0.0) || !std::isfinite(step_size_))
      throw Error(fmt::format("{}: expected a number > 0, or 0 for 1/λ̂ (estimated), found {}",
                              section.describe("sgd_step_size"), step_size_));
    const std::string name = section.text("sgd_schedule", "polynomial");
    if (name == "constant") return;
    if (name != "polynomial")
      throw Error(fmt::format("{}: unknown schedule '{}'; known: polynomial (h_0 (1 + (k-1)/b)^-c, Robbins–Monro), "
                              "constant",
                              section.describe("sgd_schedule"), name));
    polynomial_ = true;
    if (!(decay_c_ > 0.5 && decay_c_ <= 1.0))
      throw Error(fmt::format("{}: expected 0.5 < c <= 1 (Robbins–Monro: Σh_k = ∞, Σh_k² < ∞), found {}",
                              section.describe("sgd_decay_c"), decay_c_));
  }

  /// Whether h_0 is to be estimated (sgd_step_size = 0, the default).
  bool automatic() const { return step_size_ == 0.0; }
  void set_first_step(double h0) { step_size_ = h0; }
  double at(std::uint64_t k) const {
    return polynomial_ ? step_size_ * std::pow(1.0 + static_cast<double>(k - 1) / decay_b_, -decay_c_) : step_size_;
  }
  double first_step() const { return step_size_; }

private:
  double step_size_, decay_b_, decay_c_;
  bool polynomial_ = false;
};

double norm(std::span<const double> v) { return std::sqrt(std::inner_product(v.begin(), v.end(), v.begin(), 0.0)); }

/// λ̂, the largest curvature of U near θ, for SGD's automatic first step h_0 = 1/λ̂ (gradient
/// descent is stable for h λ_max < 2): 10 power iterations v ← Hv/‖Hv‖ (Golub & Van Loan §8.2),
/// each Hessian-vector product a finite difference of minibatch estimates on one batch,
/// Hv ≈ [∇Û(θ + δv) - ∇Û(θ)]/δ: 2n item gradients each, counted in the chain's cost. The batch
/// Hessian's top eigenvalue tends to exceed the full one's, which errs on the safe side. Returns
/// 0 when there is no usable curvature (a flat or non-finite model).
double largest_curvature(std::span<const double> theta, MinibatchSampler& batches, double scale, ChainContext& context) {
  const std::size_t d = theta.size();
  std::vector<double> v(d), shifted(d), at_theta(d), at_shifted(d);
  context.rng.fill_normal(v);
  const double start_norm = norm(v), delta = 1e-4 * (1.0 + norm(theta));
  for (double& x : v) x /= start_norm;
  double lambda = 0.0;
  for (int iteration = 0; iteration < 10; ++iteration) {
    const auto items = batches.draw(context.rng);
    for (std::size_t j = 0; j < d; ++j) shifted[j] = theta[j] + delta * v[j];
    scaled_batch_plus_prior(theta, items, scale, at_theta, context);
    scaled_batch_plus_prior(shifted, items, scale, at_shifted, context);
    for (std::size_t j = 0; j < d; ++j) v[j] = (at_shifted[j] - at_theta[j]) / delta;
    lambda = norm(v);
    if (!(lambda > 0.0) || !std::isfinite(lambda)) return 0.0;
    for (double& x : v) x /= lambda;
  }
  return lambda;
}

/// "1.5, -2, 0.3" → {1.5, -2, 0.3}: a user-given centre θ̂, one number per parameter.
std::vector<double> parse_centre(const Settings& section, const std::string& text, std::size_t dimension) {
  std::vector<double> values;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view field = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    while (!field.empty() && std::isspace(static_cast<unsigned char>(field.front()))) field.remove_prefix(1);
    while (!field.empty() && std::isspace(static_cast<unsigned char>(field.back()))) field.remove_suffix(1);
    double value = 0.0;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || error != std::errc{} || end != field.data() + field.size() || !std::isfinite(value))
      throw Error(fmt::format("{}: '{}' is not a finite number; expected {} numbers separated by commas",
                              section.describe("centre"), field, dimension));
    values.push_back(value);
  }
  if (values.size() != dimension)
    throw Error(fmt::format("{}: {} number(s) given; the model has {} parameters", section.describe("centre"),
                            values.size(), dimension));
  return values;
}

/// SGLD-CV (Baker et al. 2019, Algorithm 1): find θ̂ by SGD with the simple minibatch
/// estimate (Baker et al. 2019, eq. 2 and the SGD update θ_{k+1} = θ_k - h_k ∇Û(θ_k) of §3.1), or take a
/// user-given θ̂; one full pass for ∇U(θ̂); start the chain at θ̂; then estimate with eq. 4.
/// The SGD phase's item gradients and time are the chain's (it runs inside Chain::run).
class ControlVariateEstimator final : public Estimator {
public:
  ControlVariateEstimator(const Settings& section, const Model& model)
      : sampler_(section, model), centre_(model),
        sgd_iterations_(static_cast<std::uint64_t>(
            section.integer_at_least("sgd_iterations", static_cast<std::int64_t>(one_pass(model, sampler_)), 0))),
        schedule_(section),
        with_replacement_(!sampler_.distinct_items()), section_(section.section()),
        centre_passes_(static_cast<std::size_t>(section.integer_at_least("centre_passes", 1, 1))) {
    if (centre_passes_ > 1 && !model.capabilities().latent_gibbs_step)
      throw Error(fmt::format("{} = {}: only a model whose gradient Gibbs-samples latent variables (capability "
                              "latent-gibbs-step) has a random full gradient to average; this one's is exact",
                              section.describe("centre_passes"), centre_passes_));
    centre_.average_passes(centre_passes_);
    if (const std::string text = section.text("centre", ""); !text.empty()) {  // "": find θ̂ by SGD
      given_centre_ = parse_centre(section, text, model.dimension());
      for (const char* key : {"sgd_iterations", "sgd_schedule", "sgd_step_size", "sgd_decay_b", "sgd_decay_c"})
        if (section.contains(key))
          throw Error(fmt::format("{}: not used when {}.centre is given (there is no SGD phase)",
                                  section.describe(key), section.section()));
    }
  }

  void prepare(std::span<double> theta, ChainContext& context) override {
    if (given_centre_)
      std::copy(given_centre_->begin(), given_centre_->end(), theta.begin());
    else
      descend(theta, context);
    centre_.move_to(theta, context);
    if (!all_finite(centre_.data_gradient()))
      throw Error(fmt::format("estimator 'cv', full-gradient pass at the centre θ̂: ∇U(θ̂) is not finite (NaN or "
                              "Inf); {}",
                              given_centre_ ? fmt::format("choose another {}.centre", section_)
                                            : fmt::format("try a smaller {}.sgd_step_size (now {})", section_,
                                                          schedule_.first_step())));
  }

  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    if (!centre_.placed()) throw Error("estimator 'cv': estimate() called before prepare() found the centre");
    centre_.estimate(theta, sampler_.draw(context.rng), gradient, context);
  }

  /// The centre θ̂ and its full gradient (the SGD phase is not repeated), the batch permutation,
  /// and h_0 (estimated by prepare when sgd_step_size = 0; messages quote it).
  void save_state(StateWriter& out) const override {
    out.section("estimator cv");
    out.number(schedule_.first_step());
    centre_.save_state(out);
    sampler_.save_state(out);
  }
  void restore_state(StateReader& in) override {
    in.section("estimator cv");
    schedule_.set_first_step(in.number());
    centre_.restore_state(in);
    sampler_.restore_state(in);
  }

  /// θ̂ stays; its full gradient is recomputed under the new data terms (one full pass).
  void data_terms_changed(std::span<const double>, ChainContext& context) override {
    if (centre_.placed()) centre_.recompute(context);
  }

private:
  /// SGD from the chain's starting point: θ ← θ - h_k [∇f_0(θ) + (N/n) Σ_{i∈S} ∇f_i(θ)], with
  /// uniform batches (the estimate's own p_i may be 0 for items whose gradient is constant).
  void descend(std::span<double> theta, ChainContext& context) {
    const Model& model = context.model;
    MinibatchSampler batches(model.num_items(), sampler_.batch_size(), with_replacement_);
    const double scale = static_cast<double>(model.num_items()) / static_cast<double>(sampler_.batch_size());
    if (schedule_.automatic() && sgd_iterations_ > 0)
      schedule_.set_first_step(automatic_first_step(theta, batches, scale, context));
    std::vector<double> gradient(theta.size());
    const bool mirror = model.capabilities().positive_parameters;  // as the integrators reflect at 0
    for (std::uint64_t k = 1; k <= sgd_iterations_; ++k) {
      scaled_batch_plus_prior(theta, batches.draw(context.rng), scale, gradient, context);
      const double h = schedule_.at(k);
      for (std::size_t j = 0; j < theta.size(); ++j) theta[j] -= h * gradient[j];
      if (mirror) mirror_positive(theta);
      if (!all_finite(theta))
        throw Error(fmt::format("estimator 'cv', SGD centring phase: θ is no longer finite (NaN or Inf) after step "
                                "{} of {}; try a smaller {}.sgd_step_size (now {})",
                                k, sgd_iterations_, section_, schedule_.first_step()));
    }
  }

  /// 1/λ̂; a model whose gradient Gibbs-samples latent variables has no reproducible batch
  /// gradient to difference, and a flat one no curvature: those get 1e-4, the integrators' default.
  static double automatic_first_step(std::span<const double> theta, MinibatchSampler& batches, double scale,
                                     ChainContext& context) {
    if (context.model.capabilities().latent_gibbs_step) return 1e-4;
    const double lambda = largest_curvature(theta, batches, scale, context);
    return lambda > 0.0 ? 1.0 / lambda : 1e-4;
  }

  ItemSampler sampler_;
  Centre centre_;
  std::uint64_t sgd_iterations_;
  SgdSchedule schedule_;
  bool with_replacement_;
  std::string section_;  // "estimator", for messages
  std::size_t centre_passes_;  // full Gibbs passes averaged for ∇U(θ̂) (latent-variable models)
  std::optional<std::vector<double>> given_centre_;
};

// ---- svrg: the centre is a snapshot refreshed every m estimates -------------------------------

/// SVRG-LD (Dubey et al. 2016, NeurIPS, Algorithm "SVRG-LD"): every m estimates the snapshot
/// θ̃ ← θ and ∇U(θ̃) is recomputed with a full pass (that estimate is exact); in between, the
/// estimate of Baker et al. (2019, eq. 4) around θ̃. Keys: period m (default one pass, ceil(N/n)).
class SvrgEstimator final : public Estimator {
public:
  SvrgEstimator(const Settings& section, const Model& model)
      : sampler_(section, model), centre_(model),
        period_(static_cast<std::uint64_t>(
            section.integer_at_least("period", static_cast<std::int64_t>(one_pass(model, sampler_)), 1))),
        since_snapshot_(period_) {}

  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    if (since_snapshot_ == period_) {
      centre_.move_to(theta, context);
      centre_.exact_at_centre(theta, gradient, context);
      since_snapshot_ = 1;
      return;
    }
    centre_.estimate(theta, sampler_.draw(context.rng), gradient, context);
    ++since_snapshot_;
  }

  void save_state(StateWriter& out) const override {
    out.section("estimator svrg");
    out.count(since_snapshot_);
    centre_.save_state(out);
    sampler_.save_state(out);
  }
  void restore_state(StateReader& in) override {
    in.section("estimator svrg");
    since_snapshot_ = in.count();
    centre_.restore_state(in);
    sampler_.restore_state(in);
  }
  /// The next estimate takes a new snapshot (a full pass under the new data terms).
  void data_terms_changed(std::span<const double>, ChainContext&) override { since_snapshot_ = period_; }

private:
  ItemSampler sampler_;
  Centre centre_;
  std::uint64_t period_;
  std::uint64_t since_snapshot_;  // estimates since the last snapshot; = period_ forces one
};

// ---- saga: a table of the last gradient seen for every item ------------------------------------

/// The table g_i = ∇f_i(α_i) of SAGA-LD (Dubey et al. 2016), with G = Σ_i g_i.
class GradientTable {
public:
  virtual ~GradientTable() = default;
  /// g_i ← ∇f_i(θ) for every item (one full pass), G ← Σ_i g_i.
  virtual void fill(std::span<const double> theta, ChainContext& context) = 0;
  /// out += Σ_k w_k [∇f_{i_k}(θ) - g_{i_k}] with the table as it was, then g_i ← ∇f_i(θ) and G
  /// updated for the batch's items. `distinct` says no item repeats in the batch.
  virtual void exchange(std::span<const double> theta, const WeightedBatch& draw, bool distinct,
                        std::span<double> out, ChainContext& context) = 0;
  std::span<const double> sum() const { return sum_; }
  /// The table and G, once filled.
  virtual void save_state(StateWriter& out) const = 0;
  virtual void restore_state(StateReader& in) = 0;

protected:
  /// G += Δ and out += scale·Δ, where Δ = Σ_k (fresh_k - old_k) was computed while updating: the
  /// whole estimate in one pass when every weight is `scale` and no item repeats.
  void add_change(std::span<const double> change, double scale, bool change_is_estimate, std::span<double> out) {
    for (std::size_t j = 0; j < sum_.size(); ++j) {
      if (change_is_estimate) out[j] += scale * change[j];
      sum_[j] += change[j];
    }
  }
  std::vector<double> sum_;     // G
  std::vector<double> change_;  // scratch: Δ
};

/// The N × d table, for any model: rows from item_gradients(), or, for a model without that
/// capability, from one-item batches of add_data_gradient (slower: one virtual call per item).
class FullTable final : public GradientTable {
public:
  explicit FullTable(const Model& model)
      : dimension_(model.dimension()), items_(model.num_items()), per_item_(model.capabilities().per_item_gradients) {}

  void save_state(StateWriter& out) const override {
    out.section("saga table, N x d");
    out.numbers(rows_);
    out.numbers(sum_);
  }
  void restore_state(StateReader& in) override {
    in.section("saga table, N x d");
    in.numbers(rows_, items_ * dimension_);
    in.numbers(sum_, dimension_);
    change_.assign(dimension_, 0.0);
  }

  void fill(std::span<const double> theta, ChainContext& context) override {
    const auto items = every_item(context.model);
    rows_.assign(items.size() * dimension_, 0.0);
    item_rows(theta, items, rows_, context);
    sum_.assign(dimension_, 0.0);
    change_.assign(dimension_, 0.0);
    for (std::size_t i = 0; i < items.size(); ++i)
      for (std::size_t j = 0; j < dimension_; ++j) sum_[j] += rows_[i * dimension_ + j];
    context.cost.full_passes += 1;
  }

  void exchange(std::span<const double> theta, const WeightedBatch& draw, bool distinct, std::span<double> out,
                ChainContext& context) override {
    const auto items = draw.batch.items;
    const bool one_pass = distinct && draw.batch.weights.empty();
    fresh_.resize(items.size() * dimension_);
    item_rows(theta, items, fresh_, context);
    if (!one_pass)  // the estimate from the table as it was, before any repeated item changes it
      for (std::size_t k = 0; k < items.size(); ++k)
        for (std::size_t j = 0; j < dimension_; ++j)
          out[j] += draw.weight(k) * (fresh_[k * dimension_ + j] - rows_[items[k] * dimension_ + j]);
    set_zero(change_);
    for (std::size_t k = 0; k < items.size(); ++k)  // in order: a repeated item adds 0 the second time
      for (std::size_t j = 0; j < dimension_; ++j) {
        double& stored = rows_[items[k] * dimension_ + j];
        change_[j] += fresh_[k * dimension_ + j] - stored;
        stored = fresh_[k * dimension_ + j];
      }
    add_change(change_, draw.scale, one_pass, out);
  }

private:
  void item_rows(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                 ChainContext& context) const {
    if (per_item_) {
      context.model.item_gradients(theta, items, out, context.workspace);
    } else {
      set_zero(out);
      for (std::size_t k = 0; k < items.size(); ++k)
        context.model.add_data_gradient(theta, Batch{items.subspan(k, 1)}, out.subspan(k * dimension_, dimension_),
                                        context.workspace, context.rng);
    }
    context.cost.item_gradients += items.size();
  }

  std::size_t dimension_, items_;
  bool per_item_;
  std::vector<double> rows_;   // g_i, row-major N × d
  std::vector<double> fresh_;  // scratch: ∇f_i(θ) of the batch
};

/// N scalars for a GLM model: g_i = s_i(α_i) x_i is stored as s_i(α_i) (modules/README.md, "SAGA").
class CompactTable final : public GradientTable {
public:
  explicit CompactTable(const Model& model) : dimension_(model.dimension()), items_(model.num_items()) {}

  void save_state(StateWriter& out) const override {
    out.section("saga table, N scalars");
    out.numbers(scalars_);
    out.numbers(sum_);
  }
  void restore_state(StateReader& in) override {
    in.section("saga table, N scalars");
    in.numbers(scalars_, items_);
    in.numbers(sum_, dimension_);
    change_.assign(dimension_, 0.0);
  }

  void fill(std::span<const double> theta, ChainContext& context) override {
    const auto items = every_item(context.model);
    scalars_.assign(items.size(), 0.0);
    context.model.glm_scalars(theta, items, scalars_, context.workspace);
    sum_.assign(theta.size(), 0.0);
    change_.assign(theta.size(), 0.0);
    context.model.add_scaled_features(items, scalars_, sum_);
    context.cost.item_gradients += items.size();
    context.cost.full_passes += 1;
  }

  void exchange(std::span<const double> theta, const WeightedBatch& draw, bool distinct, std::span<double> out,
                ChainContext& context) override {
    const auto items = draw.batch.items;
    const bool one_pass = distinct && draw.batch.weights.empty();
    fresh_.resize(items.size());
    differences_.resize(items.size());
    context.model.glm_scalars(theta, items, fresh_, context.workspace);
    context.cost.item_gradients += items.size();
    if (!one_pass) {  // the estimate from the table as it was, before any repeated item changes it
      for (std::size_t k = 0; k < items.size(); ++k) differences_[k] = draw.weight(k) * (fresh_[k] - scalars_[items[k]]);
      context.model.add_scaled_features(items, differences_, out);
    }
    for (std::size_t k = 0; k < items.size(); ++k) {  // in order: a repeated item adds 0 the second time
      differences_[k] = fresh_[k] - scalars_[items[k]];
      scalars_[items[k]] = fresh_[k];
    }
    set_zero(change_);
    context.model.add_scaled_features(items, differences_, change_);
    add_change(change_, draw.scale, one_pass, out);
  }

private:
  std::size_t dimension_, items_;
  std::vector<double> scalars_;      // s_i(α_i)
  std::vector<double> fresh_;        // scratch: s_i(θ) of the batch
  std::vector<double> differences_;  // scratch
};

/// N × s numbers for a model whose item gradients have a fixed support of s coordinates
/// (`sparse-item-gradients`; pmf: U_i and V_j, s = 2 × rank): g_i is kept on its support only and
/// the dense G = Σ_i g_i is updated on the batch's supports only. SAGA's update (Baker et al. 2019, §3.1,
/// end; modules/README.md "SAGA"; Dubey et al. 2016) G += ∇f_i(θ) - g_i, g_i ← ∇f_i(θ) touches no
/// coordinate outside item i's support, where both vectors are zero, so this is the same
/// arithmetic as the N × d table's on the non-zeros: O(n·s) per estimate and N·s·8 bytes instead
/// of O(n·d) and N·d·8 (pmf at the 100k shape: 29 MB against 37 GB). The supports are not stored:
/// the model gives them per batch.
class SparseTable final : public GradientTable {
public:
  explicit SparseTable(const Model& model)
      : support_size_(model.item_gradient_support_size()), dimension_(model.dimension()), items_(model.num_items()) {}

  void save_state(StateWriter& out) const override {
    out.section("saga table, N x s");
    out.numbers(values_);
    out.numbers(sum_);
  }
  void restore_state(StateReader& in) override {
    in.section("saga table, N x s");
    in.numbers(values_, items_ * support_size_);
    in.numbers(sum_, dimension_);
  }

  void fill(std::span<const double> theta, ChainContext& context) override {
    const auto items = every_item(context.model);
    assign_zeros_on_huge_pages(values_, items.size() * support_size_);
    sum_.assign(theta.size(), 0.0);
    // In chunks, so that the supports' scratch stays small next to the table.
    constexpr std::size_t chunk = 4096;
    for (std::size_t first = 0; first < items.size(); first += chunk) {
      const auto part = std::span<const std::size_t>(items).subspan(first, std::min(chunk, items.size() - first));
      const auto rows = std::span<double>(values_).subspan(first * support_size_, part.size() * support_size_);
      support_.resize(rows.size());
      context.model.item_gradient_support(part, support_);
      context.model.sparse_item_gradients(theta, part, rows, context.workspace);
      for (std::size_t k = 0; k < rows.size(); ++k) sum_[support_[k]] += rows[k];
    }
    context.cost.item_gradients += items.size();
    context.cost.full_passes += 1;
  }

  void exchange(std::span<const double> theta, const WeightedBatch& draw, bool distinct, std::span<double> out,
                ChainContext& context) override {
    const auto items = draw.batch.items;
    const std::size_t s = support_size_;
    support_.resize(items.size() * s);
    fresh_.resize(items.size() * s);
    context.model.item_gradient_support(items, support_);
    context.model.sparse_item_gradients(theta, items, fresh_, context.workspace);
    context.cost.item_gradients += items.size();
    const bool one_pass = distinct && draw.batch.weights.empty();
    if (!one_pass)  // the estimate from the table as it was, before any repeated item changes it
      for (std::size_t k = 0; k < items.size(); ++k)
        for (std::size_t j = 0; j < s; ++j)
          out[support_[k * s + j]] += draw.weight(k) * (fresh_[k * s + j] - values_[items[k] * s + j]);
    constexpr std::size_t ahead = 8;  // the table is large and its rows are at random places
    for (std::size_t k = 0; k < items.size(); ++k) {  // in order: a repeated item adds 0 the second time
      if (k + ahead < items.size()) prefetch_row(items[k + ahead]);
      for (std::size_t j = 0; j < s; ++j) {
        double& stored = values_[items[k] * s + j];
        const double change = fresh_[k * s + j] - stored;
        stored = fresh_[k * s + j];
        sum_[support_[k * s + j]] += change;
        if (one_pass) out[support_[k * s + j]] += draw.scale * change;
      }
    }
  }

private:
  void prefetch_row(std::size_t item) const {
    const char* row = reinterpret_cast<const char*>(&values_[item * support_size_]);
    for (std::size_t byte = 0; byte < support_size_ * sizeof(double); byte += 64) __builtin_prefetch(row + byte, 1);
  }

  std::size_t support_size_, dimension_, items_;
  std::vector<double> values_;         // g_i on its support, row-major N × s
  std::vector<std::size_t> support_;   // scratch: the supports of a batch (or a chunk)
  std::vector<double> fresh_;          // scratch: ∇f_i(θ) of the batch on its supports
};

/// SAGA-LD (Dubey et al. 2016; modules/README.md "SAGA"): ĝ(θ) = ∇f_0(θ) + G + Σ_k w_k [∇f_{i_k}(θ) - g_{i_k}]
/// with w_k = 1/(n p_{i_k}) (N/n when uniform), then g_i ← ∇f_i(θ) for the batch. The table is
/// filled by one full pass at the first θ, whose estimate is then exact. Keys: memory_limit_mb
/// (per chain, default 1024): the table's size is checked when the estimator is built, before
/// anything is allocated.
class SagaEstimator final : public Estimator {
public:
  SagaEstimator(const Settings& section, const Model& model) : sampler_(section, model) {
    const double limit_mb = section.positive_number("memory_limit_mb", 1024.0);
    const Capabilities capabilities = model.capabilities();
    const bool compact = capabilities.glm_gradients, sparse = !compact && capabilities.sparse_item_gradients;
    const std::size_t per_item = compact ? 1 : sparse ? model.item_gradient_support_size() : model.dimension();
    const double bytes = static_cast<double>(model.num_items()) * static_cast<double>(per_item) * sizeof(double);
    if (bytes > limit_mb * 1024.0 * 1024.0)
      throw Error(fmt::format("{}: estimator 'saga' needs a gradient table of {:.0f} bytes ({:.2f} MB = N {} items × {} "
                              "× 8 bytes) per chain, more than the limit of {} MB; raise the limit, or use estimator "
                              "'svrg' or 'cv', which keep no table",
                              section.describe("memory_limit_mb"), bytes, bytes / (1024.0 * 1024.0), model.num_items(),
                              compact  ? std::string("1 scalar (GLM form)")
                              : sparse ? fmt::format("s {} (sparse item gradients)", per_item)
                                       : fmt::format("d {}", per_item),
                              limit_mb));
    if (compact)
      table_ = std::make_unique<CompactTable>(model);
    else if (sparse)
      table_ = std::make_unique<SparseTable>(model);
    else
      table_ = std::make_unique<FullTable>(model);
  }

  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    if (!filled_) {
      table_->fill(theta, context);
      filled_ = true;
      copy_sum_plus_prior(theta, gradient, context);
      return;
    }
    copy_sum_plus_prior(theta, gradient, context);
    table_->exchange(theta, sampler_.draw(context.rng), sampler_.distinct_items(), gradient, context);
  }

  void save_state(StateWriter& out) const override {
    out.section("estimator saga");
    out.flag(filled_);
    if (filled_) table_->save_state(out);
    sampler_.save_state(out);
  }
  void restore_state(StateReader& in) override {
    in.section("estimator saga");
    filled_ = in.flag();
    if (filled_) table_->restore_state(in);
    sampler_.restore_state(in);
  }
  /// The table is refilled at the next estimate (a full pass under the new data terms).
  void data_terms_changed(std::span<const double>, ChainContext&) override { filled_ = false; }

private:
  void copy_sum_plus_prior(std::span<const double> theta, std::span<double> gradient, ChainContext& context) const {
    const auto sum = table_->sum();
    std::copy(sum.begin(), sum.end(), gradient.begin());
    context.model.add_prior_gradient_given(theta, gradient, context.workspace);
  }

  ItemSampler sampler_;
  std::unique_ptr<GradientTable> table_;
  bool filled_ = false;
};

// ---- The catalogue ------------------------------------------------------------------------------

template <class Concrete>
EstimatorFactory factory() {
  return [](const Settings& section, const Model& model) -> std::unique_ptr<Estimator> {
    return std::make_unique<Concrete>(section, model);
  };
}

}  // namespace estimator_parts

using namespace estimator_parts;

const std::vector<CatalogueEntry<EstimatorFactory>>& estimator_catalogue() {
  static const std::vector<CatalogueEntry<EstimatorFactory>> catalogue = {
      {"exact", "full-data gradient (O(N) per step); for references and MALA/HMC", {},
       [](const Settings&, const Model& model) -> std::unique_ptr<Estimator> {
         return std::make_unique<ExactEstimator>(model);
       }},
      {"minibatch", "SGLD's estimate (N/n) Σ_S ∇f_i; keys batch_size (100), replacement (false)",
       {"batch_size", "replacement"}, factory<MinibatchEstimator>()},
      {"cv",
       "SGLD-CV control variates around θ̂ (Baker et al. 2019, eq. 4); θ̂ by SGD from the start point, or given; "
       "keys batch_size, replacement, sampling (uniform|lipschitz), centre (θ̂ as \"x1, x2, ...\"), sgd_iterations "
       "(one pass), sgd_schedule (polynomial|constant), sgd_step_size (0: 1/λ̂, the estimated largest curvature), "
       "sgd_decay_b (1), sgd_decay_c (1), centre_passes (1; full passes averaged for ∇U(θ̂), latent-variable models)",
       {"batch_size", "replacement", "sampling", "centre", "sgd_iterations", "sgd_schedule", "sgd_step_size",
        "sgd_decay_b", "sgd_decay_c", "centre_passes"},
       factory<ControlVariateEstimator>()},
      {"svrg",
       "SVRG-LD: control variates around a snapshot refreshed every `period` estimates (Dubey et al. 2016); "
       "keys batch_size, replacement, sampling, period (one pass)",
       {"batch_size", "replacement", "sampling", "period"}, factory<SvrgEstimator>(),
       "svrg's estimate depends on the chain's history (a snapshot taken at an earlier state, which may move inside "
       "a block), so the reverse of a block cannot reproduce its kicks and the MH test is not exact; the test of "
       "Garriga-Alonso & Fortuin (2021, §4) needs every kick's minibatch drawn independently of the state: use "
       "'minibatch' or 'cv' (a fixed centre)"},
      {"saga",
       "SAGA-LD: table of the last gradient of every item (Dubey et al. 2016), N scalars for GLM models, N × s for "
       "sparse item gradients; "
       "keys batch_size, replacement, sampling, memory_limit_mb (1024 per chain)",
       {"batch_size", "replacement", "sampling", "memory_limit_mb"}, factory<SagaEstimator>(),
       "saga's estimate depends on the chain's history (its table holds gradients at earlier states and changes at "
       "every kick), so the reverse of a block cannot reproduce its kicks and the MH test is not exact; the test of "
       "Garriga-Alonso & Fortuin (2021, §4) needs every kick's minibatch drawn independently of the state: use "
       "'minibatch' or 'cv' (a fixed centre)"},
  };
  return catalogue;
}

std::unique_ptr<Estimator> make_estimator(const Settings& section, const Model& model) {
  return choose(estimator_catalogue(), section, default_estimator).make(section, model);
}

}  // namespace sgmcmc
