// Helpers for the estimator tests: building an estimator from TOML text (for the tests of its
// keys), naming a batch's parameters in messages, one estimate at θ, and
// a model that forwards to the gaussian plugin while hiding some of its capabilities (to run the
// general code paths — full SAGA table, two batch gradients for control variates — on a model
// whose exact answers are known) and recording the items it is asked about.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

import sgmcmc;

namespace test {

inline std::unique_ptr<sgmcmc::Estimator> make_estimator(const std::string& estimator_toml, const sgmcmc::Model& model) {
  auto config = sgmcmc::parse_config("[estimator]\n" + estimator_toml, "estimator.toml");
  sgmcmc::SectionReads reads;
  auto estimator = sgmcmc::make_estimator(sgmcmc::SectionReader(config["estimator"], reads), model);
  sgmcmc::reject_unknown_keys(config["estimator"], reads);
  return estimator;
}

/// "n = 5, p_i ∝ L_i, with replacement": a batch's parameters, for messages.
inline std::string describe(const sgmcmc::ItemSamplingParameters& batches) {
  return fmt::format("n = {}, {}{}", batches.batch_size ? fmt::format("{}", *batches.batch_size) : "default",
                     batches.sampling == sgmcmc::Sampling::lipschitz ? "p_i ∝ L_i" : "uniform",
                     !batches.replacement ? "" : *batches.replacement ? ", with replacement" : ", without replacement");
}

/// What one chain's parts share, kept together for tests that call estimators directly.
struct EstimatorBench {
  const sgmcmc::Model& model;
  std::unique_ptr<sgmcmc::Workspace> workspace = model.make_workspace();
  sgmcmc::Rng rng;
  sgmcmc::Cost cost;
  sgmcmc::ChainContext context{model, *workspace, rng, cost};

  explicit EstimatorBench(const sgmcmc::Model& m, std::uint64_t seed = 7) : model(m), rng(seed, 3) {}
  std::vector<double> estimate(sgmcmc::Estimator& estimator, std::span<const double> theta) {
    std::vector<double> gradient(model.dimension());
    estimator.estimate(theta, gradient, context);
    return gradient;
  }
};

/// ∇U(θ) by one full pass, independent of any estimator.
inline std::vector<double> exact_gradient(const sgmcmc::Model& model, std::span<const double> theta) {
  std::vector<std::size_t> items(model.num_items());
  for (std::size_t i = 0; i < items.size(); ++i) items[i] = i;
  std::vector<double> gradient(model.dimension(), 0.0);
  auto workspace = model.make_workspace();
  sgmcmc::Rng unused(0, 0);
  model.add_data_gradient(theta, {items}, gradient, *workspace, unused);
  model.add_prior_gradient(theta, gradient);
  return gradient;
}

/// Forwards everything to `inner` but reports fewer capabilities, and records which items its
/// per-item functions were asked for.
class MaskedModel final : public sgmcmc::Model {
public:
  MaskedModel(std::shared_ptr<const sgmcmc::Model> inner, bool glm_gradients, bool per_item_gradients,
              bool sparse_item_gradients = false)
      : inner_(std::move(inner)), capabilities_(inner_->capabilities()), asked_(inner_->num_items(), false) {
    capabilities_.glm_gradients = glm_gradients;
    capabilities_.per_item_gradients = per_item_gradients;
    capabilities_.sparse_item_gradients = sparse_item_gradients;
  }
  std::size_t dimension() const override { return inner_->dimension(); }
  std::size_t num_items() const override { return inner_->num_items(); }
  std::vector<std::string> parameter_names() const override { return inner_->parameter_names(); }
  sgmcmc::Capabilities capabilities() const override { return capabilities_; }
  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override { return inner_->make_workspace(); }
  void initial_point(std::span<double> theta, sgmcmc::Rng& rng) const override { inner_->initial_point(theta, rng); }
  double prior_potential(std::span<const double> theta) const override { return inner_->prior_potential(theta); }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    inner_->add_prior_gradient(theta, gradient);
  }
  double prior_potential_given(std::span<const double> theta, sgmcmc::Workspace& workspace) const override {
    return inner_->prior_potential_given(theta, workspace);
  }
  void add_prior_gradient_given(std::span<const double> theta, std::span<double> gradient,
                                sgmcmc::Workspace& workspace) const override {
    inner_->add_prior_gradient_given(theta, gradient, workspace);
  }
  void add_data_gradient(std::span<const double> theta, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace& workspace, sgmcmc::Rng& rng) const override {
    if (batch.items.size() == 1) asked_[batch.items[0]] = true;  // one-item batches: SAGA's fallback
    inner_->add_data_gradient(theta, batch, gradient, workspace, rng);
  }
  double data_potential(std::span<const double> theta, const sgmcmc::Batch& batch,
                        sgmcmc::Workspace& workspace) const override {
    return inner_->data_potential(theta, batch, workspace);
  }
  void item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace& workspace) const override {
    if (!capabilities_.per_item_gradients) return sgmcmc::Model::item_gradients(theta, items, out, workspace);
    for (std::size_t i : items) asked_[i] = true;
    inner_->item_gradients(theta, items, out, workspace);
  }
  std::size_t item_gradient_support_size() const override {
    if (!capabilities_.sparse_item_gradients) return sgmcmc::Model::item_gradient_support_size();
    return inner_->item_gradient_support_size();
  }
  void item_gradient_support(std::span<const std::size_t> items, std::span<std::size_t> coordinates) const override {
    if (!capabilities_.sparse_item_gradients) return sgmcmc::Model::item_gradient_support(items, coordinates);
    inner_->item_gradient_support(items, coordinates);
  }
  void sparse_item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> values,
                             sgmcmc::Workspace& workspace) const override {
    if (!capabilities_.sparse_item_gradients) return sgmcmc::Model::sparse_item_gradients(theta, items, values, workspace);
    for (std::size_t i : items) asked_[i] = true;
    inner_->sparse_item_gradients(theta, items, values, workspace);
  }
  void glm_scalars(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                   sgmcmc::Workspace& workspace) const override {
    if (!capabilities_.glm_gradients) return sgmcmc::Model::glm_scalars(theta, items, out, workspace);
    for (std::size_t i : items) asked_[i] = true;
    inner_->glm_scalars(theta, items, out, workspace);
  }
  void add_scaled_features(std::span<const std::size_t> items, std::span<const double> scales,
                           std::span<double> gradient) const override {
    if (!capabilities_.glm_gradients) return sgmcmc::Model::add_scaled_features(items, scales, gradient);
    inner_->add_scaled_features(items, scales, gradient);
  }
  void item_lipschitz_bounds(std::span<double> out) const override { inner_->item_lipschitz_bounds(out); }
  sgmcmc::TargetChange after_step(std::uint64_t iteration, std::span<double> theta, sgmcmc::Workspace& workspace,
                                  sgmcmc::Rng& rng, const sgmcmc::ItemSums& data) const override {
    return inner_->after_step(iteration, theta, workspace, rng, data);
  }
  std::vector<std::string> metric_names() const override { return inner_->metric_names(); }
  void evaluate_metrics(std::span<const double> theta, sgmcmc::Workspace& workspace, std::span<double> out) const override {
    inner_->evaluate_metrics(theta, workspace, out);
  }

  /// Whether every item has been asked for by glm_scalars, item_gradients or a one-item batch
  /// since forget_asked().
  bool asked_every_item() const { return std::find(asked_.begin(), asked_.end(), false) == asked_.end(); }
  void forget_asked() const { asked_.assign(num_items(), false); }

private:
  std::shared_ptr<const sgmcmc::Model> inner_;
  sgmcmc::Capabilities capabilities_;
  mutable std::vector<bool> asked_;  // tests are single-threaded
};

}  // namespace test
