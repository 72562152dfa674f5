// Bayesian probabilistic matrix factorisation (seed 1 §5.2; Salakhutdinov & Mnih 2008, "Bayesian
// probabilistic matrix factorization using MCMC", ICML; Chen et al. 2014; Ahn et al. 2015).
//
// Model (SCIENCE.md, "Bayesian PMF"), with r̄ the mean training rating, subtracted as in
// Salakhutdinov & Mnih 2008:
//   r_ij - r̄ ~ N(U_iᵀV_j, τ⁻¹)                          τ fixed (model.noise_precision)
//   U_ik ~ N(μ_Uk, λ_Uk⁻¹),  V_jk ~ N(μ_Vk, λ_Vk⁻¹)      k = 1..rank
//   (μ_Uk, λ_Uk), (μ_Vk, λ_Vk) ~ Normal–Gamma(μ_0, β_0, a_0, b_0)   (normal_gamma.hpp)
// θ = (U, V), row-major: U_i is θ[i·r .. i·r + r), V_j is θ[(users + j)·r ..). The hyperparameters
// live in the chain's workspace and are refreshed by Gibbs steps from their Normal–Gamma full
// conditionals every model.gibbs_every iterations (Model::after_step); the sampler's target for θ
// is the conditional posterior given them (Metropolis/Langevin-within-Gibbs).
//
// Potentials (U = -log π; given the hyperparameters):
//   f_0(θ) = Σ_i Σ_k [½ λ_Uk (U_ik - μ_Uk)² - ½ log(λ_Uk / 2π)] + the same for V
//   ∇_{U_ik} f_0 = λ_Uk (U_ik - μ_Uk)
//   f_ij(θ) = ½ τ e_ij² - ½ log(τ / 2π),  e_ij = r_ij - r̄ - U_iᵀV_j
//   ∇_{U_i} f_ij = -τ e_ij V_j,  ∇_{V_j} f_ij = -τ e_ij U_i      (sparse: 2·rank coordinates)
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
#include "ratings.hpp"

import sgmcmc;

namespace pmf {
namespace {

using sgmcmc::Batch;
using sgmcmc::Rng;
using sgmcmc::Settings;

constexpr double log_two_pi = 1.8378770664093453;  // log(2π)
constexpr std::uint32_t cold = UINT32_MAX;           // a test user or item absent from training

/// One training rating: rows of U and V, and the centred rating r_ij - r̄. 16 bytes, so a batch
/// reads its triples in few cache lines.
struct Rating {
  std::uint32_t user, item;
  double centred;
};

/// One test rating; user or item is `cold` when it has no training rating.
struct TestRating {
  std::uint32_t user, item;
  double rating;
};

/// The factor priors' means and precisions, per chain: Gibbs steps change them.
struct Hyper {
  std::vector<double> mean_u, precision_u, mean_v, precision_v;
  explicit Hyper(std::size_t rank, const NormalGammaPrior& prior)
      // Start at the hyperprior's mean: μ = μ_0, λ = E[λ] = a_0 / b_0.
      : mean_u(rank, prior.mean), precision_u(rank, prior.shape / prior.rate), mean_v(mean_u), precision_v(precision_u) {}
};

struct PmfWorkspace final : sgmcmc::Workspace {
  PmfWorkspace(std::size_t rank, const NormalGammaPrior& prior, std::size_t test_points)
      : hyper(rank, prior), predictive(test_points), log_densities(test_points), mean_sum(test_points, 0.0) {}
  Hyper hyper;
  sgmcmc::PredictiveAverage predictive;
  std::vector<double> log_densities;  // one draw's log p(r*_j | θ, hyper), scratch
  std::vector<double> mean_sum;       // Σ over evaluated draws of the predicted mean of r*_j
  std::uint64_t mean_draws = 0;

  /// The Gibbs-updated hyperparameters and the running averages behind the metrics.
  void save_state(sgmcmc::StateWriter& out) const override {
    out.section("pmf workspace");
    for (const auto* values : {&hyper.mean_u, &hyper.precision_u, &hyper.mean_v, &hyper.precision_v}) out.numbers(*values);
    predictive.save_state(out);
    out.numbers(mean_sum);
    out.count(mean_draws);
  }
  void restore_state(sgmcmc::StateReader& in) override {
    in.section("pmf workspace");
    for (auto* values : {&hyper.mean_u, &hyper.precision_u, &hyper.mean_v, &hyper.precision_v})
      in.numbers(*values, values->size());
    predictive.restore_state(in);
    in.numbers(mean_sum, mean_sum.size());
    mean_draws = in.count();
  }
};

/// Everything a model is built from, read from [model].
struct Options {
  std::size_t rank = 20;
  std::uint64_t gibbs_every = 10;
  double noise_precision = 2.0;
  double init_sd = 0.1;
  NormalGammaPrior prior;
  RatingRange range;
};

/// The data after max_users and the split: training ratings by dense row, test ratings, and the
/// original ids of each row (for parameter names).
struct Prepared {
  std::vector<Rating> train;
  std::vector<TestRating> test;
  std::vector<std::int64_t> user_ids, item_ids;
  double offset = 0.0;  // r̄
};

/// Dense rows 0..n-1 for the distinct ids in `ids`, in increasing id order.
std::map<std::int64_t, std::uint32_t> dense_rows(const std::vector<std::int64_t>& ids, std::span<const std::size_t> rows) {
  std::map<std::int64_t, std::uint32_t> index;
  for (std::size_t r : rows) index.emplace(ids[r], 0);
  std::uint32_t next = 0;
  for (auto& [id, row] : index) row = next++;
  return index;
}

std::vector<std::int64_t> ids_of(const std::map<std::int64_t, std::uint32_t>& index) {
  std::vector<std::int64_t> ids;
  for (const auto& entry : index) ids.push_back(entry.first);
  return ids;
}

std::uint32_t row_or_cold(const std::map<std::int64_t, std::uint32_t>& index, std::int64_t id) {
  const auto found = index.find(id);
  return found == index.end() ? cold : found->second;
}

Prepared index_ratings(const RatingTriples& data, std::span<const std::size_t> train_rows, const RatingTriples& test_data,
                       std::span<const std::size_t> test_rows) {
  const auto users = dense_rows(data.user, train_rows), items = dense_rows(data.item, train_rows);
  Prepared prepared;
  prepared.user_ids = ids_of(users);
  prepared.item_ids = ids_of(items);
  for (std::size_t r : train_rows) prepared.offset += data.rating[r];
  prepared.offset /= static_cast<double>(train_rows.size());
  for (std::size_t r : train_rows)
    prepared.train.push_back({users.at(data.user[r]), items.at(data.item[r]), data.rating[r] - prepared.offset});
  for (std::size_t r : test_rows)
    prepared.test.push_back({row_or_cold(users, test_data.user[r]), row_or_cold(items, test_data.item[r]), test_data.rating[r]});
  return prepared;
}

std::vector<std::size_t> all_rows(std::size_t count) {
  std::vector<std::size_t> rows(count);
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  return rows;
}

SimulationShape simulation_shape(const Settings& settings, RatingRange range) {
  SimulationShape shape;
  shape.users = static_cast<std::size_t>(settings.integer_at_least("users", 943, 1));
  shape.items = static_cast<std::size_t>(settings.integer_at_least("items", 1682, 1));
  shape.ratings = static_cast<std::size_t>(settings.integer_at_least("ratings", 100'000, 2));
  shape.rank = static_cast<std::size_t>(settings.integer_at_least("true_rank", 5, 1));
  shape.offset = settings.number("true_offset", 3.5);
  shape.noise_sd = settings.number("true_noise_sd", 0.5);
  shape.round = settings.flag("round", true);
  shape.range = range;
  if (shape.noise_sd < 0.0) throw sgmcmc::Error(fmt::format("{}: must be ≥ 0", settings.describe("true_noise_sd")));
  if (2 * shape.ratings > shape.users * shape.items)
    throw sgmcmc::Error(fmt::format("{}: {} ratings need at least twice as many (user, item) pairs; {} users × {} items "
                                    "have {}",
                                    settings.describe("ratings"), shape.ratings, shape.users, shape.items,
                                    shape.users * shape.items));
  return shape;
}

void refuse_simulation_keys(const Settings& settings) {
  for (const char* key : {"users", "items", "ratings", "true_rank", "true_offset", "true_noise_sd", "round"})
    if (settings.contains(key))
      throw sgmcmc::Error(fmt::format("{}: sets the simulated data; with model.data the ratings come from the file",
                                      settings.describe(key)));
}

Prepared prepare(const sgmcmc::ModelContext& context, RatingRange range) {
  const Settings& settings = context.settings;
  Rng rng(context.seed, sgmcmc::data_stream);
  RatingTriples data, test_file;
  if (auto path = settings.optional_text("data")) {
    refuse_simulation_keys(settings);
    data = read_triples(*path, range);
  } else {
    data = simulate_movielens_shape(simulation_shape(settings, range), rng);
  }
  std::optional<std::vector<std::int64_t>> kept_users;
  if (settings.contains("max_users")) {
    kept_users = first_users(data, static_cast<std::size_t>(settings.integer_at_least("max_users", 0, 1)));
    data = keep_users(data, *kept_users);
  }

  std::vector<std::size_t> train_rows, test_rows;
  const bool separate_test = settings.optional_text("test_data").has_value();
  if (separate_test) {
    if (settings.contains("test_size"))
      throw sgmcmc::Error(fmt::format("{}: the test set is model.test_data; remove one of the two",
                                      settings.describe("test_size")));
    test_file = read_triples(*settings.optional_text("test_data"), range);
    if (kept_users) test_file = keep_users(test_file, *kept_users);
    train_rows = all_rows(data.size());
    test_rows = all_rows(test_file.size());
  } else {
    auto split = sgmcmc::split_rows(data.size(), sgmcmc::row_count(settings, "test_size", 0.1, data.size(), 0, data.size() - 1), rng);
    train_rows = std::move(split.rest);
    test_rows = std::move(split.chosen);
    std::sort(test_rows.begin(), test_rows.end());
  }
  return index_ratings(data, train_rows, separate_test ? test_file : data, test_rows);
}

Options read_options(const Settings& settings) {
  Options options;
  options.rank = static_cast<std::size_t>(settings.integer_at_least("rank", 20, 1));
  options.gibbs_every = static_cast<std::uint64_t>(settings.integer_at_least("gibbs_every", 10, 0));
  options.noise_precision = settings.positive_number("noise_precision", 2.0);
  options.init_sd = settings.positive_number("init_sd", 0.1);
  options.prior = {.mean = settings.number("prior_mean", 0.0),
                   .mean_weight = settings.positive_number("prior_mean_weight", 1.0),
                   .shape = settings.positive_number("prior_shape", 1.0),
                   .rate = settings.positive_number("prior_rate", 1.0)};
  options.range = {settings.number("rating_min", 1.0), settings.number("rating_max", 5.0)};
  if (!(options.range.min < options.range.max))
    throw sgmcmc::Error(fmt::format("{}: must be below model.rating_max = {}", settings.describe("rating_min"), options.range.max));
  return options;
}

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
      : options_(options), data_(std::move(prepared)), users_(data_.user_ids.size()), items_(data_.item_ids.size()) {}

  std::size_t dimension() const override { return (users_ + items_) * options_.rank; }
  std::size_t num_items() const override { return data_.train.size(); }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names;
    names.reserve(dimension());
    for (auto id : data_.user_ids)
      for (std::size_t k = 1; k <= options_.rank; ++k) names.push_back(fmt::format("U.{}.{}", id, k));
    for (auto id : data_.item_ids)
      for (std::size_t k = 1; k <= options_.rank; ++k) names.push_back(fmt::format("V.{}.{}", id, k));
    return names;
  }
  sgmcmc::Capabilities capabilities() const override { return capabilities_of_pmf(); }
  static sgmcmc::Capabilities capabilities_of_pmf() { return {.exact_log_likelihood = true, .simulation = true}; }

  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override {
    return std::make_unique<PmfWorkspace>(options_.rank, options_.prior, data_.test.size());
  }

  /// U, V ~ N(0, init_sd²): small and random, so that the factors' symmetry is broken.
  void initial_point(std::span<double> theta, Rng& rng) const override {
    for (double& x : theta) x = options_.init_sd * rng.normal();
  }

  // ---- prior: needs the chain's hyperparameters ----------------------------------------------

  /// Without a workspace (callers outside a chain) the prior is at the starting hyperparameters.
  double prior_potential(std::span<const double> theta) const override {
    return prior_potential_at(theta, Hyper(options_.rank, options_.prior));
  }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    add_prior_gradient_at(theta, gradient, Hyper(options_.rank, options_.prior));
  }
  double prior_potential_given(std::span<const double> theta, sgmcmc::Workspace& workspace) const override {
    return prior_potential_at(theta, static_cast<PmfWorkspace&>(workspace).hyper);
  }
  void add_prior_gradient_given(std::span<const double> theta, std::span<double> gradient,
                                sgmcmc::Workspace& workspace) const override {
    add_prior_gradient_at(theta, gradient, static_cast<PmfWorkspace&>(workspace).hyper);
  }

  // ---- data: one rating per item; a batch touches only its users' and items' rows ----------------

  void add_data_gradient(std::span<const double> theta, const Batch& batch, std::span<double> gradient, sgmcmc::Workspace&,
                         Rng&) const override {
    // The paper's rank (and the default) gets a kernel with the rank fixed at compile time, so the
    // three rank-long loops are unrolled and vectorised; any other rank takes the general one.
    if (options_.rank == 20)
      add_gradient<20>(theta, batch, gradient);
    else
      add_gradient<0>(theta, batch, gradient);
  }

  double data_potential(std::span<const double> theta, const Batch& batch, sgmcmc::Workspace&) const override {
    const std::size_t r = options_.rank;
    const double tau = options_.noise_precision;
    const double constant = 0.5 * (log_two_pi - std::log(tau));
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const Rating& x = data_.train[batch.items[k]];
      const double e = x.centred - dot(&theta[x.user * r], &theta[(users_ + x.item) * r], r);
      sum += batch.weight(k) * (0.5 * tau * e * e + constant);
    }
    return sum;
  }

  // ---- Gibbs steps of the hyperparameters ----------------------------------------------------------

  /// Every gibbs_every iterations, each (μ_k, λ_k) of U's prior and then of V's is drawn from its
  /// Normal–Gamma full conditional given the factor column (normal_gamma.hpp); θ is unchanged.
  /// gibbs_every = 0 keeps the starting hyperparameters.
  void after_step(std::uint64_t iteration, std::span<double> theta, sgmcmc::Workspace& base, Rng& rng) const override {
    if (options_.gibbs_every == 0 || iteration % options_.gibbs_every != 0) return;
    gibbs_update(theta, static_cast<PmfWorkspace&>(base).hyper, rng);
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
  }

  // ---- held-out metrics --------------------------------------------------------------------------

  std::vector<std::string> metric_names() const override {
    return data_.test.empty() ? std::vector<std::string>{} : std::vector<std::string>{"log_predictive_density", "rmse"};
  }

  /// log_predictive_density: (1/J) Σ_j log[(1/S) Σ_s p(r*_j | θ_s)] over the S draws evaluated so
  /// far (seed 1 §5.2). rmse: of the posterior-mean prediction (1/S) Σ_s E[r*_j | θ_s], clipped to
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
  /// gradient += Σ_k w_k ∇f_{items[k]}: per rating, e = r - r̄ - U_iᵀV_j, then ∇_{U_i} += -w τ e V_j and
  /// ∇_{V_j} += -w τ e U_i. Only the batch's rows are read or written: O(batch × rank). The
  /// ratings are at random places of the training array, so the next ones are prefetched.
  template <std::size_t FixedRank>
  void add_gradient(std::span<const double> theta, const Batch& batch, std::span<double> gradient) const {
    const std::size_t r = FixedRank ? FixedRank : options_.rank;
    const double* u = theta.data();
    const double* v = theta.data() + users_ * r;
    double* gu = gradient.data();
    double* gv = gradient.data() + users_ * r;
    const std::size_t count = batch.items.size();
    constexpr std::size_t ahead = 8;
    for (std::size_t k = 0; k < count; ++k) {
      if (k + ahead < count) __builtin_prefetch(&data_.train[batch.items[k + ahead]]);
      const Rating& x = data_.train[batch.items[k]];
      const double* ui = u + x.user * r;
      const double* vj = v + x.item * r;
      const double s = -batch.weight(k) * options_.noise_precision * (x.centred - dot(ui, vj, r));
      axpy(s, vj, gu + x.user * r, r);
      axpy(s, ui, gv + x.item * r, r);
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
    return block(theta.data(), users_, hyper.mean_u, hyper.precision_u) +
           block(theta.data() + users_ * r, items_, hyper.mean_v, hyper.precision_v);
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
  }

  /// Per test rating, the predictive mean and variance of r*_j under one draw (θ, hyperparameters);
  /// fills log_densities and, when `accumulate`, adds the means to mean_sum.
  /// Cold start (a test user or item without training ratings) is explicit: the missing factor
  /// is integrated out under its prior N(μ, diag(λ)⁻¹), so with V_j known and U_i new,
  /// r* - r̄ = U_iᵀV_j + noise has mean μ_UᵀV_j and variance τ⁻¹ + Σ_k V_jk²/λ_Uk (exactly
  /// Gaussian); both new: mean μ_Uᵀμ_V and variance τ⁻¹ + Σ_k (μ_Uk²/λ_Vk + μ_Vk²/λ_Uk +
  /// 1/(λ_Uk λ_Vk)) (the product's exact moments, with a Gaussian of those moments as the density).
  void predict(std::span<const double> theta, PmfWorkspace& workspace, bool accumulate) const {
    const std::size_t r = options_.rank;
    const Hyper& h = workspace.hyper;
    const double noise_variance = 1.0 / options_.noise_precision;
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
      mean += data_.offset;
      const double e = x.rating - mean;
      workspace.log_densities[j] = -0.5 * (log_two_pi + std::log(variance) + e * e / variance);
      if (accumulate) workspace.mean_sum[j] += mean;
    }
  }

  Options options_;
  Prepared data_;
  std::size_t users_, items_;
};

sgmcmc::PluginInfo pmf_info() {
  return {.name = "pmf",
          .description =
              "Bayesian probabilistic matrix factorisation r_ij - r̄ ~ N(U_iᵀV_j, 1/τ) with Normal–Gamma hyperpriors on "
              "the factor priors' means and precisions, refreshed by Gibbs steps (seed 1 §5.2). Keys: data (u.data or "
              "a CSV/TSV of user item rating, .gz or plain), test_data, test_size (0.1: fraction, or an integer count), "
              "max_users (the first k user ids), rating_min (1), rating_max (5), rank (20), gibbs_every (10; 0 = "
              "fixed), noise_precision (τ, 2), init_sd (0.1), prior_mean (0), prior_mean_weight (1), prior_shape "
              "(1), prior_rate (1); simulated data (no data): users (943), items (1682), ratings (100000), true_rank "
              "(5), true_offset (3.5), true_noise_sd (0.5), round (true)",
          .parameters = "U.<user>.<k>, V.<item>.<k>: user and item factors, k = 1..rank",
          .capabilities = PmfModel::capabilities_of_pmf()};
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
