// Drawing a weighted batch for the control-variate estimators (cv, svrg, saga): uniformly, or with
// probabilities p_i ∝ L_i from an alias table (Baker et al. 2019, eq. 4 and Lemma 1).
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
module sgmcmc.estimators:weighted_batches;
import sgmcmc.sampler;
import sgmcmc.error;
import :minibatch;
import :parameters;

namespace sgmcmc::estimator_parts {

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

/// sampling = "lipschitz" needs the model's per-item bounds L_i.
void check_sampling_fits(SectionReader section, Sampling sampling, const Model& model) {
  if (sampling == Sampling::lipschitz && !model.capabilities().lipschitz_bounds)
    throw Error(fmt::format("{} = 'lipschitz' needs a model with the 'lipschitz-bounds' capability "
                            "(per-item Lipschitz constants L_i); use 'uniform'",
                            section.describe("sampling")));
}

/// Draws S for the control-variate estimators.
class ItemSampler {
public:
  ItemSampler(const ItemSamplingParameters& parameters, const Model& model)
      : num_items_(model.num_items()), batch_size_(resolve_batch_size(parameters.batch_size, model)),
        sampling_(parameters.sampling),
        with_replacement_(parameters.with_replacement()) {
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
  /// Uniform sampling writes the minibatch sampler's (empty) section; the alias table keeps nothing.
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
std::size_t one_pass(const Model& model, std::size_t batch_size) {
  return (model.num_items() + batch_size - 1) / batch_size;
}

}  // namespace sgmcmc::estimator_parts

namespace sgmcmc {

const FieldTable<ItemSamplingParameters>& ItemSamplingParameters::fields() {
  using P = ItemSamplingParameters;
  static const FieldTable<P> table = [] {
    Field<P> replacement = fallback_flag_field<P>(
        "replacement", &P::replacement, [](const P& p) { return p.with_replacement(); }, "false; true for lipschitz",
        "draw S with replacement; false: n distinct items");
    replacement.shown.constraint = "true for lipschitz";
    replacement.problem = [](const P& p) -> std::string {
      if (p.sampling == Sampling::uniform || p.with_replacement()) return "";
      return "expected true with sampling = 'lipschitz', which draws items independently with p_i ∝ L_i, that is "
             "with replacement (remove the key or set it to true), found false";
    };
    return FieldTable<P>{
        estimator_parts::batch_size_field<P>(),
        choice_field("sampling", &P::sampling, {{"uniform", Sampling::uniform}, {"lipschitz", Sampling::lipschitz}},
                     "how S is drawn: uniform, p_i = 1/N; lipschitz, p_i ∝ L_i (Baker et al. 2019, eq. 4; models with "
                     "lipschitz-bounds)"),
        replacement};
  }();
  return table;
}

ItemSamplingParameters ItemSamplingParameters::from_settings(SectionReader section, const Model& model) {
  const auto parameters =
      read_fields_from(fields(), section, ItemSamplingParameters{.batch_size = estimator_parts::default_batch_size(model)});
  estimator_parts::check_batch_fits(section, *parameters.batch_size, model);
  estimator_parts::check_sampling_fits(section, parameters.sampling, model);
  return parameters;
}

}  // namespace sgmcmc
