// In-test models for the combination matrix, each with a posterior known without the sampler:
// a Poisson–Gamma model on positive rates (closed form) and a normal mean whose noise precision
// is drawn by a Gibbs step (marginal of θ by quadrature, in matrix_test.cpp).
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>


import sgmcmc;

namespace matrix {

/// Rates θ_j > 0 of counts y_ij ~ Poisson(θ_j t_i) with exposures t_i, prior θ_j ~ Gamma(α0, β0):
///   f_0 = Σ_j β0 θ_j - (α0 - 1) log θ_j,   f_i = Σ_j θ_j t_i - y_ij log θ_j,
/// posterior θ_j ~ Gamma(α0 + Σ_i y_ij, β0 + Σ_i t_i), independent across j.
///
/// The integrators reflect θ at 0 inside every move, negating the momentum with it
/// (Capabilities::positive_parameters), so gradients are taken at θ > 0 only. The model is still
/// defined on all of ℝ, as the mirror image U(θ) = U(|θ|) (gradient sign(θ)·U'(|θ|)), for which
/// the reflection (θ, m) ← (-θ, -m) is a symmetry of the Hamiltonian dynamics: a sampler of that
/// symmetric density gives |θ| the posterior above. θ ← |θ| alone, without the momentum, is not a
/// symmetry (Patterson & Teh 2013 mirror the parameter of a first-order scheme, which has none).
class PoissonRates final : public sgmcmc::Model {
public:
  static constexpr double prior_shape = 1.0, prior_rate = 1.0;  // α0, β0

  /// `counts` is N × d row-major.
  PoissonRates(std::vector<double> exposures, std::vector<double> counts, std::size_t dimension)
      : exposures_(std::move(exposures)), counts_(std::move(counts)), dimension_(dimension) {}

  std::size_t dimension() const override { return dimension_; }
  std::size_t num_items() const override { return exposures_.size(); }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names;
    for (std::size_t j = 0; j < dimension_; ++j) names.push_back("rate." + std::to_string(j + 1));
    return names;
  }
  sgmcmc::Capabilities capabilities() const override {
    return {.exact_log_likelihood = true, .per_item_gradients = true, .positive_parameters = true};
  }
  void initial_point(std::span<double> theta, sgmcmc::Rng&) const override {
    for (double& x : theta) x = 1.0;
  }

  double prior_potential(std::span<const double> theta) const override {
    double sum = 0.0;
    for (double x : theta) sum += prior_rate * std::abs(x) - (prior_shape - 1.0) * log_or_zero(prior_shape - 1.0, x);
    return sum;
  }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    for (std::size_t j = 0; j < dimension_; ++j)
      gradient[j] += sign(theta[j]) * (prior_rate - (prior_shape - 1.0) / std::abs(theta[j]));
  }

  void add_data_gradient(std::span<const double> theta, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, sgmcmc::Rng&) const override {
    for (std::size_t k = 0; k < batch.items.size(); ++k)
      for (std::size_t j = 0; j < dimension_; ++j) gradient[j] += batch.weight(k) * item_derivative(theta, batch.items[k], j);
  }
  double data_potential(std::span<const double> theta, const sgmcmc::Batch& batch, sgmcmc::Workspace&) const override {
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const std::size_t i = batch.items[k];
      for (std::size_t j = 0; j < dimension_; ++j)
        sum += batch.weight(k) * (exposures_[i] * std::abs(theta[j]) - log_or_zero(count(i, j), theta[j]) * count(i, j));
    }
    return sum;
  }
  void item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace&) const override {
    for (std::size_t k = 0; k < items.size(); ++k)
      for (std::size_t j = 0; j < dimension_; ++j) out[k * dimension_ + j] = item_derivative(theta, items[k], j);
  }

  /// The closed-form posterior of coordinate j: Gamma(shape, rate).
  double posterior_shape(std::size_t j) const {
    double sum = prior_shape;
    for (std::size_t i = 0; i < num_items(); ++i) sum += count(i, j);
    return sum;
  }
  double posterior_rate() const {
    double sum = prior_rate;
    for (double t : exposures_) sum += t;
    return sum;
  }

private:
  static double sign(double x) { return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : 0.0; }
  /// log|θ|, or 0 when its coefficient is 0 (so that a zero count at θ = 0 adds 0, not 0·∞).
  static double log_or_zero(double coefficient, double x) { return coefficient == 0.0 ? 0.0 : std::log(std::abs(x)); }
  double count(std::size_t i, std::size_t j) const { return counts_[i * dimension_ + j]; }
  double item_derivative(std::span<const double> theta, std::size_t i, std::size_t j) const {
    return sign(theta[j]) * (exposures_[i] - count(i, j) / std::abs(theta[j]));
  }

  std::vector<double> exposures_, counts_;
  std::size_t dimension_;
};

/// The posterior of the Poisson target: 200 items, no counts at all, exposures summing to 1, so
/// the posterior is Gamma(1, β0 + 1) = Gamma(1, 2): the exponential with mean 1/2, whose density
/// is largest at the boundary 0, so a sampler that mishandles the boundary shows it there.
/// Item 0 holds 0.9 of the exposure and the other 199 share 0.1: each item's gradient t_i is
/// constant in θ, so only their spread makes minibatch noise, and this spread gives a minibatch
/// of 10 a gradient variance σ_g² ≈ (N²/n) Var(t) (N - n)/(N - 1) ≈ 15.5 = 3.9/s² (s² = 1/4), so
/// stochastic kicks meet the reflection at 0. (A rate with a few counts, Gamma(3, 2) say, has the
/// gradient -(shape - 1)/θ, singular at 0: with 2 counts among 200 items a minibatch kick of
/// (N/n)/θ throws the chain hundreds of sd away, a pathology of the data, not of the samplers.)
inline std::shared_ptr<const PoissonRates> poisson_target() {
  constexpr std::size_t items = 200, dimension = 1;
  std::vector<double> exposures(items), counts(items * dimension, 0.0);
  exposures[0] = 0.9;
  for (std::size_t i = 1; i < items; ++i) exposures[i] = 0.1 / static_cast<double>(items - 1);
  return std::make_shared<PoissonRates>(std::move(exposures), std::move(counts), dimension);
}

/// τ, the noise precision the Gibbs step draws: per chain, so it lives in the workspace, and it
/// carries from one iteration to the next, so a checkpoint keeps it.
struct NoiseWorkspace final : sgmcmc::Workspace {
  explicit NoiseWorkspace(double start) : precision(start) {}
  double precision;
  void save_state(sgmcmc::StateWriter& out) const override {
    out.section("matrix noise workspace");
    out.number(precision);
  }
  void restore_state(sgmcmc::StateReader& in) override {
    in.section("matrix noise workspace");
    precision = in.number();
  }
};

/// y_i ~ N(θ, 1/τ), θ ~ N(0, 1/λ0), τ ~ Gamma(a, b). The chain samples θ given τ,
///   f_0 = λ0 θ²/2,   f_i = τ (y_i - θ)²/2,
/// and every `gibbs_every`-th iteration after_step draws τ | θ ~ Gamma(a + N/2, b + Σ(y_i - θ)²/2)
/// exactly, which changes the data terms (TargetChange::data). The θ-marginal of the joint is
///   p(θ | y) ∝ N(θ; 0, 1/λ0) · (b + Σ(y_i - θ)²/2)^-(a + N/2).
class GibbsNoiseMean final : public sgmcmc::Model {
public:
  static constexpr double prior_precision = 1.0;             // λ0
  static constexpr double noise_shape = 2.0, noise_rate = 2.0;  // a, b: prior mean of τ is 1
  static constexpr std::uint64_t gibbs_every = 4;

  explicit GibbsNoiseMean(std::vector<double> y) : y_(std::move(y)) {}

  const std::vector<double>& data() const { return y_; }
  std::size_t dimension() const override { return 1; }
  std::size_t num_items() const override { return y_.size(); }
  std::vector<std::string> parameter_names() const override { return {"mean"}; }
  sgmcmc::Capabilities capabilities() const override { return {.exact_log_likelihood = true, .per_item_gradients = true}; }
  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override {
    return std::make_unique<NoiseWorkspace>(noise_shape / noise_rate);
  }

  double prior_potential(std::span<const double> theta) const override { return 0.5 * prior_precision * theta[0] * theta[0]; }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    gradient[0] += prior_precision * theta[0];
  }
  void add_data_gradient(std::span<const double> theta, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace& workspace, sgmcmc::Rng&) const override {
    const double tau = precision(workspace);
    for (std::size_t k = 0; k < batch.items.size(); ++k) gradient[0] += batch.weight(k) * tau * (theta[0] - y_[batch.items[k]]);
  }
  double data_potential(std::span<const double> theta, const sgmcmc::Batch& batch,
                        sgmcmc::Workspace& workspace) const override {
    const double tau = precision(workspace);
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const double e = y_[batch.items[k]] - theta[0];
      sum += batch.weight(k) * 0.5 * tau * e * e;
    }
    return sum;
  }
  void item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace& workspace) const override {
    const double tau = precision(workspace);
    for (std::size_t k = 0; k < items.size(); ++k) out[k] = tau * (theta[0] - y_[items[k]]);
  }

  sgmcmc::TargetChange after_step(std::uint64_t iteration, std::span<double> theta, sgmcmc::Workspace& workspace,
                                  sgmcmc::Rng& rng, const sgmcmc::ItemSums& data) const override {
    if (iteration % gibbs_every != 0) return sgmcmc::TargetChange::none;
    double squares = 0.0;
    for (std::size_t i = data.items().first; i < data.items().end; ++i) squares += (y_[i] - theta[0]) * (y_[i] - theta[0]);
    data.complete(std::span(&squares, 1));
    const double shape = noise_shape + 0.5 * static_cast<double>(y_.size()), rate = noise_rate + 0.5 * squares;
    static_cast<NoiseWorkspace&>(workspace).precision = rng.gamma(shape, rate);
    return sgmcmc::TargetChange::data;
  }

private:
  static double precision(sgmcmc::Workspace& workspace) { return static_cast<NoiseWorkspace&>(workspace).precision; }
  std::vector<double> y_;
};

/// 200 observations y_i = 1 + ξ_i, ξ_i ~ N(0, 1), from a fixed stream.
inline std::shared_ptr<const GibbsNoiseMean> gibbs_target() {
  sgmcmc::Rng rng(15, 3);
  std::vector<double> y(200);
  for (double& value : y) value = 1.0 + rng.normal();
  return std::make_shared<GibbsNoiseMean>(std::move(y));
}

/// Independent normal coordinates on very different scales, for the per-coordinate mass: items
/// y_i ∈ ℝ^d (i = 1..N, row-major), f_0 = 0 and f_i(θ) = Σ_j (θ_j - y_ij)² / (2 N σ_j²), so that
/// U(θ) = Σ_j (θ_j - ȳ_j)² / (2 σ_j²) + const: the posterior is N(ȳ_j, σ_j²), independent across j.
class AnisotropicGaussian final : public sgmcmc::Model {
public:
  AnisotropicGaussian(std::vector<double> scales, std::vector<double> y) : scales_(std::move(scales)), y_(std::move(y)) {}

  std::size_t dimension() const override { return scales_.size(); }
  std::size_t num_items() const override { return y_.size() / scales_.size(); }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names;
    for (std::size_t j = 0; j < dimension(); ++j) names.push_back("x." + std::to_string(j + 1));
    return names;
  }
  sgmcmc::Capabilities capabilities() const override { return {.exact_log_likelihood = true, .per_item_gradients = true}; }
  double prior_potential(std::span<const double>) const override { return 0.0; }
  void add_prior_gradient(std::span<const double>, std::span<double>) const override {}
  void add_data_gradient(std::span<const double> theta, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, sgmcmc::Rng&) const override {
    for (std::size_t k = 0; k < batch.items.size(); ++k)
      for (std::size_t j = 0; j < dimension(); ++j) gradient[j] += batch.weight(k) * item_derivative(theta, batch.items[k], j);
  }
  double data_potential(std::span<const double> theta, const sgmcmc::Batch& batch, sgmcmc::Workspace&) const override {
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k)
      for (std::size_t j = 0; j < dimension(); ++j) {
        const double e = theta[j] - y(batch.items[k], j);
        sum += batch.weight(k) * e * e / (2.0 * items() * scales_[j] * scales_[j]);
      }
    return sum;
  }
  void item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace&) const override {
    for (std::size_t k = 0; k < items.size(); ++k)
      for (std::size_t j = 0; j < dimension(); ++j) out[k * dimension() + j] = item_derivative(theta, items[k], j);
  }

  /// The exact posterior of coordinate j: N(ȳ_j, σ_j²).
  double posterior_mean(std::size_t j) const {
    double sum = 0.0;
    for (std::size_t i = 0; i < num_items(); ++i) sum += y(i, j);
    return sum / items();
  }
  double posterior_variance(std::size_t j) const { return scales_[j] * scales_[j]; }

private:
  double items() const { return static_cast<double>(num_items()); }
  double y(std::size_t i, std::size_t j) const { return y_[i * dimension() + j]; }
  double item_derivative(std::span<const double> theta, std::size_t i, std::size_t j) const {
    return (theta[j] - y(i, j)) / (items() * scales_[j] * scales_[j]);
  }

  std::vector<double> scales_, y_;
};

/// σ = (0.1, 1, 10): scales 100× apart. 20 items y_ij = σ_j (1 + ξ_ij) from a fixed stream, so the
/// posterior means ȳ_j are about σ_j, a few σ_j from the chains' start at 0.
inline std::shared_ptr<const AnisotropicGaussian> anisotropic_target() {
  const std::vector<double> scales = {0.1, 1.0, 10.0};
  constexpr std::size_t items = 20;
  sgmcmc::Rng rng(17, 5);
  std::vector<double> y(items * scales.size());
  for (std::size_t i = 0; i < items; ++i)
    for (std::size_t j = 0; j < scales.size(); ++j) y[i * scales.size() + j] = scales[j] * (1.0 + rng.normal());
  return std::make_shared<AnisotropicGaussian>(scales, std::move(y));
}

/// A correlated normal posterior N(μ, Σ) in two dimensions, for the dense mass: f_0 = 0 and N items
/// f_i(θ) = ½(θ - x_i)ᵀ(Σ⁻¹/N)(θ - x_i), whose sum is ½(θ - μ)ᵀΣ⁻¹(θ - μ) + const when the x_i
/// average to μ. Σ has standard deviations (s_1, s_2) and correlation ρ; its precision is
/// Σ⁻¹ = 1/(1 - ρ²) [[1/s_1², -ρ/(s_1 s_2)], [-ρ/(s_1 s_2), 1/s_2²]].
/// One item (the default): x_1 = μ. N = 4k items: x_i = μ ± sqrt(2N) L e_j (L Lᵀ = Σ, j = 1, 2, each sign
/// and j k times), so Σ_i (x_i - μ)(x_i - μ)ᵀ = 2k · 2N Σ = N² Σ, and the empirical Fisher information at θ,
/// Σ_i ∇f_i ∇f_iᵀ = (Σ⁻¹/N)[N(θ - μ)(θ - μ)ᵀ + N²Σ](Σ⁻¹/N) = Σ⁻¹ + Σ⁻¹(θ - μ)(θ - μ)ᵀΣ⁻¹/N
/// (fisher_information below). The model declares per-item gradients as `item_gradients` says: none,
/// dense, or sparse (whose support lists the coordinates in reverse order, 1 then 0).
class CorrelatedGaussian final : public sgmcmc::Model {
public:
  enum class ItemGradients { none, dense, sparse };
  CorrelatedGaussian(std::array<double, 2> mean, std::array<double, 2> sd, double correlation, std::size_t items = 1,
                     ItemGradients item_gradients = ItemGradients::none)
      : mean_(mean), covariance_{sd[0] * sd[0], correlation * sd[0] * sd[1], correlation * sd[0] * sd[1], sd[1] * sd[1]},
        item_gradients_(item_gradients), x_(2 * items) {
    const double scale = 1.0 / (1.0 - correlation * correlation);
    precision_ = {scale / (sd[0] * sd[0]), -scale * correlation / (sd[0] * sd[1]), -scale * correlation / (sd[0] * sd[1]),
                  scale / (sd[1] * sd[1])};
    const std::array<double, 4> l = {sd[0], 0.0, correlation * sd[1], sd[1] * std::sqrt(1.0 - correlation * correlation)};
    const double spread = items == 1 ? 0.0 : std::sqrt(2.0 * static_cast<double>(items));
    for (std::size_t i = 0; i < items; ++i) {
      const std::size_t column = (i / 2) % 2;  // ± L e_1, then ± L e_2
      const double sign = i % 2 == 0 ? 1.0 : -1.0;
      for (std::size_t j = 0; j < 2; ++j) x_[2 * i + j] = mean_[j] + sign * spread * l[2 * j + column];
    }
  }
  std::size_t dimension() const override { return 2; }
  std::size_t num_items() const override { return x_.size() / 2; }
  std::vector<std::string> parameter_names() const override { return {"x.1", "x.2"}; }
  sgmcmc::Capabilities capabilities() const override {
    return {.exact_log_likelihood = true,
            .per_item_gradients = item_gradients_ == ItemGradients::dense,
            .sparse_item_gradients = item_gradients_ == ItemGradients::sparse};
  }
  double prior_potential(std::span<const double>) const override { return 0.0; }
  void add_prior_gradient(std::span<const double>, std::span<double>) const override {}
  void add_data_gradient(std::span<const double> theta, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, sgmcmc::Rng&) const override {
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const auto g = item_gradient(theta, batch.items[k]);
      for (std::size_t j = 0; j < 2; ++j) gradient[j] += batch.weight(k) * g[j];
    }
  }
  double data_potential(std::span<const double> theta, const sgmcmc::Batch& batch, sgmcmc::Workspace&) const override {
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const double e0 = theta[0] - x_[2 * batch.items[k]], e1 = theta[1] - x_[2 * batch.items[k] + 1];
      const double quadratic = precision_[0] * e0 * e0 + 2.0 * precision_[1] * e0 * e1 + precision_[3] * e1 * e1;
      sum += batch.weight(k) * 0.5 * quadratic / static_cast<double>(num_items());
    }
    return sum;
  }
  void item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace&) const override {
    write_item_gradients(theta, items, out, {0, 1});
  }
  std::size_t item_gradient_support_size() const override { return 2; }
  void item_gradient_support(std::span<const std::size_t> items, std::span<std::size_t> coordinates) const override {
    for (std::size_t k = 0; k < items.size(); ++k) {
      coordinates[2 * k] = sparse_order[0];
      coordinates[2 * k + 1] = sparse_order[1];
    }
  }
  void sparse_item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> values,
                             sgmcmc::Workspace&) const override {
    write_item_gradients(theta, items, values, sparse_order);
  }

  double posterior_mean(std::size_t j) const { return mean_[j]; }
  /// Σ and Σ⁻¹, row by row.
  const std::array<double, 4>& covariance() const { return covariance_; }
  const std::array<double, 4>& precision() const { return precision_; }
  /// The empirical Fisher information Σ_i ∇f_i ∇f_iᵀ at θ, from the closed form above (N = 4k items).
  std::array<double, 4> fisher_information(std::array<double, 2> theta) const {
    const double e0 = theta[0] - mean_[0], e1 = theta[1] - mean_[1];
    const std::array<double, 2> v = {precision_[0] * e0 + precision_[1] * e1, precision_[2] * e0 + precision_[3] * e1};
    const double n = static_cast<double>(num_items());
    return {precision_[0] + v[0] * v[0] / n, precision_[1] + v[0] * v[1] / n, precision_[2] + v[1] * v[0] / n,
            precision_[3] + v[1] * v[1] / n};
  }

private:
  static constexpr std::array<std::size_t, 2> sparse_order = {1, 0};  // the sparse support's coordinates

  /// Row k of `out` ← ∇f_{items[k]}(θ) at the coordinates `order`.
  void write_item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                            std::array<std::size_t, 2> order) const {
    for (std::size_t k = 0; k < items.size(); ++k) {
      const auto g = item_gradient(theta, items[k]);
      out[2 * k] = g[order[0]];
      out[2 * k + 1] = g[order[1]];
    }
  }
  /// ∇f_i(θ) = (Σ⁻¹/N)(θ - x_i).
  std::array<double, 2> item_gradient(std::span<const double> theta, std::size_t i) const {
    const double e0 = theta[0] - x_[2 * i], e1 = theta[1] - x_[2 * i + 1], n = static_cast<double>(num_items());
    return {(precision_[0] * e0 + precision_[1] * e1) / n, (precision_[2] * e0 + precision_[3] * e1) / n};
  }

  std::array<double, 2> mean_;
  std::array<double, 4> covariance_, precision_;
  ItemGradients item_gradients_;
  std::vector<double> x_;  // the items x_i, row by row
};

/// sd (0.1, 10) and correlation 0.99: principal standard deviations 10.0 and 0.014, 700× apart,
/// along directions no diagonal mass follows. The mean (0.1, 10) is a few sd from the start at 0.
inline std::shared_ptr<const CorrelatedGaussian> correlated_target() {
  return std::make_shared<CorrelatedGaussian>(std::array{0.1, 10.0}, std::array{0.1, 10.0}, 0.99);
}

/// The same posterior from N = 8 items (CorrelatedGaussian) with per-item gradients, for the Fisher
/// mass; with `sparse`, in the sparse form.
inline std::shared_ptr<const CorrelatedGaussian> split_correlated_target(bool sparse = false) {
  using Gradients = CorrelatedGaussian::ItemGradients;
  return std::make_shared<CorrelatedGaussian>(std::array{0.1, 10.0}, std::array{0.1, 10.0}, 0.99, 8,
                                              sparse ? Gradients::sparse : Gradients::dense);
}

}  // namespace matrix
