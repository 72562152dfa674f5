// Bayesian probabilistic matrix factorisation (Baker et al. 2019, §5.2; Salakhutdinov & Mnih 2008, "Bayesian
// probabilistic matrix factorization using MCMC", ICML; Chen et al. 2014; Ahn et al. 2015).
//
// Model (Salakhutdinov & Mnih 2008; Baker et al. 2019, §5.2), with r̄ the mean training rating, subtracted as in
// Salakhutdinov & Mnih 2008, and the bias terms b_i, c_j only with model.biases = true:
//   r_ij - r̄ ~ N(b_i + c_j + U_iᵀV_j, τ⁻¹)
//   U_ik ~ N(μ_Uk, λ_Uk⁻¹),  V_jk ~ N(μ_Vk, λ_Vk⁻¹)      k = 1..rank
//   (μ_Uk, λ_Uk), (μ_Vk, λ_Vk) ~ Normal–Gamma(μ_0, β_0, a_0, b_0)   (normal_gamma.hpp)
//   b_i ~ N(0, λ_b⁻¹),  c_j ~ N(0, λ_c⁻¹),  λ_b, λ_c ~ Gamma(a_0, b_0)
//   τ fixed (model.noise_precision), or τ ~ Gamma(a_τ, b_τ) (model.noise_prior_shape/_rate)
// θ = (U, V, b, c), row-major: U_i is θ[i·r .. i·r + r), V_j is θ[(users + j)·r ..), then b and c
// (absent without biases). The hyperparameters (and τ) live in the chain's workspace and are
// refreshed by Gibbs steps from their conjugate full conditionals every model.gibbs_every
// iterations (Model::after_step); the sampler's target for θ is the conditional posterior given
// them (Langevin-within-Gibbs).
//
// Potentials (U = -log π; given the hyperparameters):
//   f_0(θ) = Σ_i Σ_k [½ λ_Uk (U_ik - μ_Uk)² - ½ log(λ_Uk / 2π)] + the same for V
//            + Σ_i [½ λ_b b_i² - ½ log(λ_b / 2π)] + the same for c
//   ∇_{U_ik} f_0 = λ_Uk (U_ik - μ_Uk),  ∇_{b_i} f_0 = λ_b b_i
//   f_ij(θ) = ½ τ e_ij² - ½ log(τ / 2π),  e_ij = r_ij - r̄ - b_i - c_j - U_iᵀV_j
//   ∇_{U_i} f_ij = -τ e_ij V_j,  ∇_{V_j} f_ij = -τ e_ij U_i,  ∇_{b_i} f_ij = ∇_{c_j} f_ij = -τ e_ij
//   (sparse: 2·rank coordinates, 2·rank + 2 with biases)
#include <sgmcmc/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <numbers>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>
#include <fmt/format.h>

#include "normal_gamma.hpp"
#include "pmf_data.hpp"
#include "ratings.hpp"

import sgmcmc.sdk;

namespace pmf {
namespace {

using sgmcmc::Batch;
using sgmcmc::Rng;
using sgmcmc::SectionReader;

constexpr double log_two_pi = 1.8378770664093453;  // log(2π)

/// The priors' means and precisions and the noise precision, per chain: Gibbs steps change them.
struct Hyper {
  std::vector<double> mean_u, precision_u, mean_v, precision_v;
  double bias_precision_u, bias_precision_v;  // λ_b, λ_c (unused without biases)
  double noise_precision;                     // τ
  Hyper(std::size_t rank, const NormalGammaPrior& prior, double tau)
      // Start at the hyperprior's mean: μ = μ_0, λ = E[λ] = a_0 / b_0; τ at model.noise_precision.
      : mean_u(rank, prior.mean), precision_u(rank, prior.shape / prior.rate), mean_v(mean_u), precision_v(precision_u),
        bias_precision_u(prior.shape / prior.rate), bias_precision_v(bias_precision_u), noise_precision(tau) {}
};

struct PmfWorkspace final : sgmcmc::Workspace {
  PmfWorkspace(std::size_t rank, const NormalGammaPrior& prior, double tau, std::size_t test_points)
      : hyper(rank, prior, tau), predictive(test_points), log_densities(test_points), mean_sum(test_points, 0.0) {}
  Hyper hyper;
  sgmcmc::PredictiveAverage predictive;
  std::vector<double> log_densities;  // one draw's log p(r*_j | θ, hyper), scratch
  std::vector<double> mean_sum;       // Σ over evaluated draws of the predicted mean of r*_j
  std::uint64_t mean_draws = 0;

  /// The Gibbs-updated hyperparameters and the running averages behind the metrics.
  void save_state(sgmcmc::StateWriter& out) const override {
    out.section("pmf workspace");
    for (const auto* values : {&hyper.mean_u, &hyper.precision_u, &hyper.mean_v, &hyper.precision_v}) out.numbers(*values);
    for (const double value : {hyper.bias_precision_u, hyper.bias_precision_v, hyper.noise_precision}) out.number(value);
    predictive.save_state(out);
    out.numbers(mean_sum);
    out.count(mean_draws);
  }
  void restore_state(sgmcmc::StateReader& in) override {
    in.section("pmf workspace");
    for (auto* values : {&hyper.mean_u, &hyper.precision_u, &hyper.mean_v, &hyper.precision_v})
      in.numbers(*values, values->size());
    for (double* value : {&hyper.bias_precision_u, &hyper.bias_precision_v, &hyper.noise_precision}) *value = in.number();
    predictive.restore_state(in);
    in.numbers(mean_sum, mean_sum.size());
    mean_draws = in.count();
  }
  void restart_averages() override {
    predictive.restart();
    std::fill(mean_sum.begin(), mean_sum.end(), 0.0);
    mean_draws = 0;
  }
};

/// Σ_k a_k b_k over the rank: the one inner loop every term shares (vectorised by the compiler).
inline double dot(const double* __restrict a, const double* __restrict b, std::size_t rank) {
  double sum = 0.0;
  for (std::size_t k = 0; k < rank; ++k) sum += a[k] * b[k];
  return sum;
}

/// y += s·x over the rank.
inline void axpy(double s, const double* __restrict x, double* __restrict y, std::size_t rank) {
  for (std::size_t k = 0; k < rank; ++k) y[k] += s * x[k];
}

class PmfModel final : public sgmcmc::Model {
public:
  PmfModel(Prepared prepared, const Options& options)
      : options_(options), data_(std::move(prepared)), users_(data_.user_ids.size()), items_(data_.item_ids.size()),
        biases_at_((users_ + items_) * options_.rank) {}

  std::size_t dimension() const override { return biases_at_ + (options_.biases ? users_ + items_ : 0); }
  std::size_t num_items() const override { return data_.train.size(); }
  std::size_t total_items() const override { return data_.all_train; }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names;
    names.reserve(dimension());
    for (auto id : data_.user_ids)
      for (std::size_t k = 1; k <= options_.rank; ++k) names.push_back(fmt::format("U.{}.{}", id, k));
    for (auto id : data_.item_ids)
      for (std::size_t k = 1; k <= options_.rank; ++k) names.push_back(fmt::format("V.{}.{}", id, k));
    if (options_.biases) {
      for (auto id : data_.user_ids) names.push_back(fmt::format("b.{}", id));
      for (auto id : data_.item_ids) names.push_back(fmt::format("c.{}", id));
    }
    return names;
  }
  sgmcmc::Capabilities capabilities() const override { return capabilities_of_pmf(); }
  static sgmcmc::Capabilities capabilities_of_pmf() {
    return {.exact_log_likelihood = true, .sparse_item_gradients = true, .simulation = true, .row_shares = true};
  }

  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override {
    return std::make_unique<PmfWorkspace>(options_.rank, options_.prior, options_.noise_precision, data_.test.size());
  }

  /// U, V ~ N(0, init_sd²): small and random, so that the factors' symmetry is broken; biases 0.
  void initial_point(std::span<double> theta, Rng& rng) const override {
    for (double& x : theta.first(biases_at_)) x = options_.init_sd * rng.normal();
    for (double& x : theta.subspan(biases_at_)) x = 0.0;
  }

  // ---- prior: needs the chain's hyperparameters ----------------------------------------------

  /// Without a workspace (callers outside a chain) the prior is at the starting hyperparameters.
  double prior_potential(std::span<const double> theta) const override { return prior_potential_at(theta, start_hyper()); }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    add_prior_gradient_at(theta, gradient, start_hyper());
  }
  double prior_potential_given(std::span<const double> theta, sgmcmc::Workspace& workspace) const override {
    return prior_potential_at(theta, hyper_of(workspace));
  }
  void add_prior_gradient_given(std::span<const double> theta, std::span<double> gradient,
                                sgmcmc::Workspace& workspace) const override {
    add_prior_gradient_at(theta, gradient, hyper_of(workspace));
  }

  // ---- data: one rating per item; a batch touches only its users' and items' rows ----------------

  void add_data_gradient(std::span<const double> theta, const Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace& workspace, Rng&) const override {
    // The paper's rank (and the default) gets a kernel with the rank fixed at compile time, so the
    // three rank-long loops are unrolled and vectorised; any other rank takes the general one.
    const double tau = hyper_of(workspace).noise_precision;
    const bool fixed = options_.rank == 20;
    if (options_.biases)
      fixed ? add_gradient<20, true>(theta, batch, gradient, tau) : add_gradient<0, true>(theta, batch, gradient, tau);
    else
      fixed ? add_gradient<20, false>(theta, batch, gradient, tau) : add_gradient<0, false>(theta, batch, gradient, tau);
  }

  double data_potential(std::span<const double> theta, const Batch& batch, sgmcmc::Workspace& workspace) const override {
    const double tau = hyper_of(workspace).noise_precision;
    const double constant = 0.5 * (log_two_pi - std::log(tau));
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const double e = residual(theta, data_.train[batch.items[k]]);
      sum += batch.weight(k) * (0.5 * tau * e * e + constant);
    }
    return sum;
  }

  // ---- sparse item gradients (SAGA's N × s table) ----------------------------------------------

  /// s = 2·rank (U_i, V_j), plus b_i and c_j with biases.
  std::size_t item_gradient_support_size() const override { return 2 * options_.rank + (options_.biases ? 2 : 0); }

  void item_gradient_support(std::span<const std::size_t> items, std::span<std::size_t> coordinates) const override {
    const std::size_t r = options_.rank, s = item_gradient_support_size();
    for (std::size_t k = 0; k < items.size(); ++k) {
      const Rating& x = data_.train[items[k]];
      std::size_t* out = &coordinates[k * s];
      for (std::size_t j = 0; j < r; ++j) out[j] = x.user * r + j;
      for (std::size_t j = 0; j < r; ++j) out[r + j] = (users_ + x.item) * r + j;
      if (options_.biases) out[2 * r] = user_bias(x.user), out[2 * r + 1] = item_bias(x.item);
    }
  }

  /// On the support's order: -τ e V_j, -τ e U_i (and -τ e, -τ e).
  void sparse_item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> values,
                             sgmcmc::Workspace& workspace) const override {
    const std::size_t r = options_.rank, s = item_gradient_support_size();
    const double tau = hyper_of(workspace).noise_precision;
    for (std::size_t k = 0; k < items.size(); ++k) {
      const Rating& x = data_.train[items[k]];
      const double* ui = &theta[x.user * r];
      const double* vj = &theta[(users_ + x.item) * r];
      const double g = -tau * residual(theta, x);
      double* out = &values[k * s];
      for (std::size_t j = 0; j < r; ++j) out[j] = g * vj[j];
      for (std::size_t j = 0; j < r; ++j) out[r + j] = g * ui[j];
      if (options_.biases) out[2 * r] = out[2 * r + 1] = g;
    }
  }

  // ---- Gibbs steps of the hyperparameters ----------------------------------------------------------

  /// Every gibbs_every iterations, each (μ_k, λ_k) of U's prior and then of V's is drawn from its
  /// Normal–Gamma full conditional given the factor column (normal_gamma.hpp), then λ_b and λ_c
  /// (with biases) and τ (with a noise prior) from their Gamma full conditionals; θ is unchanged.
  /// gibbs_every = 0 keeps the starting hyperparameters. τ changes the data terms, the rest the
  /// prior only: the chain is told which (it then drops cached gradients, potentials, tables).
  sgmcmc::TargetChange after_step(std::uint64_t iteration, std::span<double> theta, sgmcmc::Workspace& base,
                                  Rng& rng, const sgmcmc::ItemSums& data) const override {
    if (options_.gibbs_every == 0 || iteration % options_.gibbs_every != 0) return sgmcmc::TargetChange::none;
    Hyper& hyper = hyper_of(base);
    gibbs_update(theta, hyper, rng);
    if (!options_.noise_prior) return sgmcmc::TargetChange::prior;
    hyper.noise_precision = draw_noise_precision(theta, data, rng);
    return sgmcmc::TargetChange::data;
  }

  void gibbs_update(std::span<const double> theta, Hyper& hyper, Rng& rng) const {
    const std::size_t r = options_.rank;
    const auto update = [&](std::span<const double> rows, std::size_t count, std::vector<double>& mean,
                            std::vector<double>& precision) {
      for (std::size_t k = 0; k < r; ++k) {
        const auto draw = draw_normal_gamma(normal_gamma_posterior(options_.prior, rows, count, r, k), rng);
        mean[k] = draw.mean;
        precision[k] = draw.precision;
      }
    };
    update(theta.subspan(0, users_ * r), users_, hyper.mean_u, hyper.precision_u);
    update(theta.subspan(users_ * r, items_ * r), items_, hyper.mean_v, hyper.precision_v);
    if (!options_.biases) return;
    const auto precision = [&](std::span<const double> values) {
      const double squares = std::inner_product(values.begin(), values.end(), values.begin(), 0.0);
      const auto posterior = precision_posterior(options_.prior, static_cast<double>(values.size()), squares);
      return rng.gamma(posterior.shape, posterior.rate);
    };
    hyper.bias_precision_u = precision(theta.subspan(biases_at_, users_));
    hyper.bias_precision_v = precision(theta.subspan(biases_at_ + users_, items_));
  }

  /// τ | θ ~ Gamma(a_τ + N/2, b_τ + ½ Σ_ij e_ij²) over the N training ratings: O(N × rank). The
  /// sum runs over data.items() and is completed by data (with the other ranks' rows, on a
  /// data-parallel run).
  double draw_noise_precision(std::span<const double> theta, const sgmcmc::ItemSums& data, Rng& rng) const {
    const sgmcmc::ItemBlock block = data.items();
    double squares = 0.0;
    for (std::size_t i = block.first; i < block.end; ++i) {
      const double e = residual(theta, data_.train[i]);
      squares += e * e;
    }
    data.complete(std::span(&squares, 1));
    const auto posterior = precision_posterior(*options_.noise_prior, static_cast<double>(total_items()), squares);
    return rng.gamma(posterior.shape, posterior.rate);
  }

  // ---- held-out metrics --------------------------------------------------------------------------

  std::vector<std::string> metric_names() const override {
    return data_.test.empty() ? std::vector<std::string>{} : std::vector<std::string>{"log_predictive_density", "rmse"};
  }

  /// log_predictive_density: (1/J) Σ_j log[(1/S) Σ_s p(r*_j | θ_s)] over the S draws evaluated so
  /// far (Baker et al. 2019, §5.2). rmse: of the posterior-mean prediction (1/S) Σ_s E[r*_j | θ_s], clipped to
  /// [rating_min, rating_max].
  void evaluate_metrics(std::span<const double> theta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<PmfWorkspace&>(base);
    predict(theta, workspace, true);
    out[0] = workspace.predictive.add(workspace.log_densities);
    workspace.mean_draws += 1;
    double squares = 0.0;
    for (std::size_t j = 0; j < data_.test.size(); ++j) {
      const double mean = workspace.mean_sum[j] / static_cast<double>(workspace.mean_draws);
      const double error = std::clamp(mean, options_.range.min, options_.range.max) - data_.test[j].rating;
      squares += error * error;
    }
    out[1] = std::sqrt(squares / static_cast<double>(data_.test.size()));
  }

  std::vector<std::string> quantity_names() const override {
    return data_.test.empty() ? std::vector<std::string>{} : std::vector<std::string>{"held_out_log_density"};
  }

  /// One draw's mean held-out log-likelihood (1/J) Σ_j log p(r*_j | θ, hyperparameters).
  void evaluate_quantities(std::span<const double> theta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<PmfWorkspace&>(base);
    predict(theta, workspace, false);
    const auto& terms = workspace.log_densities;
    out[0] = std::accumulate(terms.begin(), terms.end(), 0.0) / static_cast<double>(terms.size());
  }

  double offset() const { return data_.offset; }

private:
  static Hyper& hyper_of(sgmcmc::Workspace& workspace) { return static_cast<PmfWorkspace&>(workspace).hyper; }
  Hyper start_hyper() const { return Hyper(options_.rank, options_.prior, options_.noise_precision); }
  std::size_t user_bias(std::size_t user) const { return biases_at_ + user; }
  std::size_t item_bias(std::size_t item) const { return biases_at_ + users_ + item; }

  /// e = r - r̄ - U_iᵀV_j (- b_i - c_j).
  double residual(std::span<const double> theta, const Rating& x) const {
    const std::size_t r = options_.rank;
    double e = x.centred - dot(&theta[x.user * r], &theta[(users_ + x.item) * r], r);
    if (options_.biases) e -= theta[user_bias(x.user)] + theta[item_bias(x.item)];
    return e;
  }

  /// gradient += Σ_k w_k ∇f_{items[k]}: per rating, e = r - r̄ - U_iᵀV_j (- b_i - c_j), then
  /// ∇_{U_i} += -w τ e V_j, ∇_{V_j} += -w τ e U_i (and ∇_{b_i}, ∇_{c_j} += -w τ e). Only the
  /// batch's rows are read or written: O(batch × rank). The ratings are at random places of the
  /// training array, so the next ones are prefetched.
  template <std::size_t FixedRank, bool Biases>
  void add_gradient(std::span<const double> theta, const Batch& batch, std::span<double> gradient, double tau) const {
    const std::size_t r = FixedRank ? FixedRank : options_.rank;
    const double* u = theta.data();
    const double* v = theta.data() + users_ * r;
    const double* b = theta.data() + biases_at_;
    const double* c = b + users_;
    double* gu = gradient.data();
    double* gv = gradient.data() + users_ * r;
    double* gb = gradient.data() + biases_at_;
    double* gc = gb + users_;
    const std::size_t count = batch.items.size();
    constexpr std::size_t ahead = 8;
    for (std::size_t k = 0; k < count; ++k) {
      if (k + ahead < count) __builtin_prefetch(&data_.train[batch.items[k + ahead]]);
      const Rating& x = data_.train[batch.items[k]];
      const double* ui = u + x.user * r;
      const double* vj = v + x.item * r;
      double e = x.centred - dot(ui, vj, r);
      if constexpr (Biases) e -= b[x.user] + c[x.item];
      const double s = -batch.weight(k) * tau * e;
      axpy(s, vj, gu + x.user * r, r);
      axpy(s, ui, gv + x.item * r, r);
      if constexpr (Biases) gb[x.user] += s, gc[x.item] += s;
    }
  }

  double prior_potential_at(std::span<const double> theta, const Hyper& hyper) const {
    const std::size_t r = options_.rank;
    const auto block = [&](const double* rows, std::size_t count, const std::vector<double>& mean,
                           const std::vector<double>& precision) {
      double sum = 0.0;
      for (std::size_t i = 0; i < count; ++i)
        for (std::size_t k = 0; k < r; ++k) {
          const double d = rows[i * r + k] - mean[k];
          sum += 0.5 * precision[k] * d * d;
        }
      for (std::size_t k = 0; k < r; ++k) sum += 0.5 * static_cast<double>(count) * (log_two_pi - std::log(precision[k]));
      return sum;
    };
    double sum = block(theta.data(), users_, hyper.mean_u, hyper.precision_u) +
                 block(theta.data() + users_ * r, items_, hyper.mean_v, hyper.precision_v);
    if (!options_.biases) return sum;
    const auto biases = [&](std::span<const double> values, double precision) {
      double squares = 0.0;
      for (double x : values) squares += x * x;
      return 0.5 * precision * squares + 0.5 * static_cast<double>(values.size()) * (log_two_pi - std::log(precision));
    };
    return sum + biases(theta.subspan(biases_at_, users_), hyper.bias_precision_u) +
           biases(theta.subspan(biases_at_ + users_, items_), hyper.bias_precision_v);
  }

  void add_prior_gradient_at(std::span<const double> theta, std::span<double> gradient, const Hyper& hyper) const {
    const std::size_t r = options_.rank;
    const auto block = [&](std::size_t first, std::size_t count, const std::vector<double>& mean,
                           const std::vector<double>& precision) {
      const double* rows = theta.data() + first * r;
      double* out = gradient.data() + first * r;
      for (std::size_t i = 0; i < count; ++i)
        for (std::size_t k = 0; k < r; ++k) out[i * r + k] += precision[k] * (rows[i * r + k] - mean[k]);
    };
    block(0, users_, hyper.mean_u, hyper.precision_u);
    block(users_, items_, hyper.mean_v, hyper.precision_v);
    if (!options_.biases) return;
    for (std::size_t i = 0; i < users_; ++i) gradient[user_bias(i)] += hyper.bias_precision_u * theta[user_bias(i)];
    for (std::size_t j = 0; j < items_; ++j) gradient[item_bias(j)] += hyper.bias_precision_v * theta[item_bias(j)];
  }

  /// Per test rating, the predictive mean and variance of r*_j under one draw (θ, hyperparameters);
  /// fills log_densities and, when `accumulate`, adds the means to mean_sum.
  /// Cold start (a test user or item without training ratings) is explicit: the missing factor
  /// is integrated out under its prior N(μ, diag(λ)⁻¹), so with V_j known and U_i new,
  /// r* - r̄ = U_iᵀV_j + noise has mean μ_UᵀV_j and variance τ⁻¹ + Σ_k V_jk²/λ_Uk (exactly
  /// Gaussian); both new: mean μ_Uᵀμ_V and variance τ⁻¹ + Σ_k (μ_Uk²/λ_Vk + μ_Vk²/λ_Uk +
  /// 1/(λ_Uk λ_Vk)) (the product's exact moments, with a Gaussian of those moments as the density).
  /// A missing bias is integrated out under N(0, λ_b⁻¹) likewise: mean 0, variance + 1/λ_b.
  void predict(std::span<const double> theta, PmfWorkspace& workspace, bool accumulate) const {
    const std::size_t r = options_.rank;
    const Hyper& h = workspace.hyper;
    const double noise_variance = 1.0 / h.noise_precision;
    for (std::size_t j = 0; j < data_.test.size(); ++j) {
      const TestRating& x = data_.test[j];
      const double* ui = x.user == cold ? nullptr : &theta[x.user * r];
      const double* vj = x.item == cold ? nullptr : &theta[(users_ + x.item) * r];
      double mean = 0.0, variance = noise_variance;
      for (std::size_t k = 0; k < r; ++k) {
        const double a = ui ? ui[k] : h.mean_u[k], b = vj ? vj[k] : h.mean_v[k];
        mean += a * b;
        if (!ui) variance += b * b / h.precision_u[k];
        if (!vj) variance += a * a / h.precision_v[k];
        if (!ui && !vj) variance += 1.0 / (h.precision_u[k] * h.precision_v[k]);
      }
      if (options_.biases) {
        if (ui) mean += theta[user_bias(x.user)]; else variance += 1.0 / h.bias_precision_u;
        if (vj) mean += theta[item_bias(x.item)]; else variance += 1.0 / h.bias_precision_v;
      }
      mean += data_.offset;
      const double e = x.rating - mean;
      workspace.log_densities[j] = -0.5 * (log_two_pi + std::log(variance) + e * e / variance);
      if (accumulate) workspace.mean_sum[j] += mean;
    }
  }

  Options options_;
  Prepared data_;
  std::size_t users_, items_;
  std::size_t biases_at_;  // where b starts in θ: (users + items) × rank
};

sgmcmc::PluginInfo pmf_info() {
  return {.name = "pmf",
          .description =
              "Bayesian probabilistic matrix factorisation r_ij - r̄ ~ N(U_iᵀV_j, 1/τ) with Normal–Gamma hyperpriors on "
              "the factor priors' means and precisions, refreshed by Gibbs steps (Baker et al. 2019, §5.2). Keys: data (u.data or "
              "a CSV/TSV of user item rating, .gz or plain), test_data, test_size (0.1: fraction, or an integer count), "
              "max_users (the first k user ids), rating_min (1), rating_max (5), rank (20), gibbs_every (10; 0 = "
              "fixed), noise_precision (τ, 2; its start when drawn), noise_prior_shape and noise_prior_rate (a Gamma prior "
              "on τ, Gibbs-drawn; off unless one is given, then 1 and 1), biases (false: b_i + c_j terms), init_sd (0.1), prior_mean (0), prior_mean_weight (1), prior_shape "
              "(1), prior_rate (1); simulated data (no data): users (943), items (1682), ratings (100000), true_rank "
              "(5), true_offset (3.5), true_noise_sd (0.5), round (true)",
          .parameters = "U.<user>.<k>, V.<item>.<k>: user and item factors, k = 1..rank; b.<user>, c.<item>: biases "
                        "(model.biases = true)",
          .capabilities = PmfModel::capabilities_of_pmf(),
          .no_prior_simulation =
              "its factors are not identified: the likelihood of U Vᵀ is unchanged by U R, V R for any orthogonal R "
              "(sign flips and permutations of the rank's columns among them), so a chain sits in one of many "
              "equivalent modes and the rank of a coordinate of θ* among its draws is not uniform even for an exact "
              "sampler; SBC would need rotation-invariant quantities (U Vᵀ) that the draws do not hold"};
}

std::unique_ptr<sgmcmc::Model> make_pmf(const sgmcmc::ModelContext& context) {
  const Options options = read_options(context.settings);
  Prepared prepared = prepare(context, options.range);
  if (prepared.train.empty()) throw sgmcmc::Error("model: no training ratings are left after the test set was held out");
  return std::make_unique<PmfModel>(std::move(prepared), options);
}

}  // namespace
}  // namespace pmf

SGMCMC_MODEL_PLUGIN(pmf::pmf_info, pmf::make_pmf)
