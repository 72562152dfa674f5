// Bayesian linear regression with known noise: y_i = x_iᵀβ + e_i, e_i ~ N(0, σ²), β ~ N(0, s²I).
// The posterior is Gaussian and known in closed form, which makes this the reference model for
// testing samplers: N(μ, Σ) with Σ = (XᵀX/σ² + I/s²)⁻¹ and μ = Σ Xᵀy/σ².
//
// Potentials (U = -log posterior, up to constants):
//   f_0(β) = ‖β‖² / (2s²)                 ∇f_0 = β / s²
//   f_i(β) = (y_i - x_iᵀβ)² / (2σ²)       ∇f_i = s_i x_i with s_i = (x_iᵀβ - y_i) / σ²  (GLM form)
// ∇f_i(β) - ∇f_i(β') = x_i x_iᵀ(β - β')/σ², whose operator norm is ‖x_i‖²/σ²: the exact (smallest)
// Lipschitz constant L_i of ∇f_i.
#include <sgmcmc/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numbers>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <xtensor/xtensor.hpp>

import sgmcmc.sdk;

namespace {

using sgmcmc::Batch;
using sgmcmc::Rng;
using sgmcmc::SectionReader;

/// Rows of (y, x) before the train/test split.
struct Dataset {
  xt::xtensor<double, 1> y;
  xt::xtensor<double, 2> x;
};

/// β* ~ N(0, beta_sd² I) (beta_sd = 1, or prior_sd with model.simulate_from_prior) and
/// x ~ N(0, I), both from the run's data seed: documented in plugins/gaussian/README.md.
Dataset simulate(std::size_t rows, std::size_t dim, double noise_sd, double beta_sd, Rng& rng,
                 std::vector<double>& beta_star) {
  beta_star.assign(dim, 0.0);
  rng.fill_normal(beta_star);
  for (double& b : beta_star) b *= beta_sd;
  Dataset data{xt::xtensor<double, 1>::from_shape({rows}), xt::xtensor<double, 2>::from_shape({rows, dim})};
  for (std::size_t i = 0; i < rows; ++i) {
    double mean = 0.0;
    for (std::size_t j = 0; j < dim; ++j) {
      data.x(i, j) = rng.normal();
      mean += data.x(i, j) * beta_star[j];
    }
    data.y(i) = mean + noise_sd * rng.normal();
  }
  return data;
}

Dataset read_file(const std::string& path, SectionReader settings) {
  const auto table = sgmcmc::read_numeric_csv(path);
  sgmcmc::note_rows_read(path, table.rows, !table.header.empty());
  if (table.columns < 2)
    throw sgmcmc::Error(fmt::format("{}: {} column(s); expected the response then at least one covariate",
                                    path, table.columns));
  const std::size_t dim = table.columns - 1;
  if (auto wanted = settings.integer("dim", 0); wanted != 0 && static_cast<std::size_t>(wanted) != dim)
    throw sgmcmc::Error(fmt::format("{}: {} covariate columns, but {} = {}", path, dim, settings.describe("dim"), wanted));
  Dataset data{xt::xtensor<double, 1>::from_shape({table.rows}), xt::xtensor<double, 2>::from_shape({table.rows, dim})};
  for (std::size_t i = 0; i < table.rows; ++i) {
    data.y(i) = table.at(i, 0);
    for (std::size_t j = 0; j < dim; ++j) data.x(i, j) = table.at(i, j + 1);
  }
  return data;
}

/// The running posterior-predictive average of the test set, and scratch for one draw's terms.
struct GaussianWorkspace final : sgmcmc::Workspace {
  explicit GaussianWorkspace(std::size_t test_rows) : predictive(test_rows), log_densities(test_rows) {}
  sgmcmc::PredictiveAverage predictive;
  std::vector<double> log_densities;  // scratch: not state
  void save_state(sgmcmc::StateWriter& out) const override { predictive.save_state(out); }
  void restore_state(sgmcmc::StateReader& in) override { predictive.restore_state(in); }
  void restart_averages() override { predictive.restart(); }
};

class GaussianModel final : public sgmcmc::Model {
public:
  explicit GaussianModel(const sgmcmc::ModelContext& context) {
    SectionReader settings = context.settings;
    noise_sd_ = settings.positive_number("noise_sd", 1.0);
    prior_sd_ = settings.positive_number("prior_sd", 10.0);
    Rng rng(context.seed, sgmcmc::data_stream);
    Dataset data;
    const bool from_prior = settings.flag("simulate_from_prior", false);
    if (auto path = sgmcmc::file_setting(settings, "data")) {
      if (from_prior)
        throw sgmcmc::Error(fmt::format("{}: simulates data from a prior draw; with model.data the rows come from the file",
                                        settings.describe("simulate_from_prior")));
      if (settings.contains("n"))
        throw sgmcmc::Error(fmt::format("{}: sets the size of simulated data; with model.data the rows come from the file",
                                        settings.describe("n")));
      data = read_file(*path, settings);
    } else {
      const auto rows = settings.integer_at_least("n", 1000, 2);
      const auto dim = settings.integer_at_least("dim", 5, 1);
      sgmcmc::require_memory(static_cast<double>(rows) * static_cast<double>(dim + 1), sizeof(double),
                             "model.n × model.dim simulated values");
      std::vector<double> beta_star;
      data = simulate(static_cast<std::size_t>(rows), static_cast<std::size_t>(dim), noise_sd_,
                      from_prior ? prior_sd_ : 1.0, rng, beta_star);
      if (from_prior) beta_star_ = std::move(beta_star);
    }
    const std::size_t rows = data.y.size();
    auto parts = sgmcmc::split_rows(rows, sgmcmc::row_count(settings, "test_size", 0.2, rows, 0, rows - 1), rng);
    all_items_ = parts.rest.size();
    // run.data_parallel: this process's block of the training rows (ModelContext::rows). The data
    // were read or simulated whole (a CSV is parsed, a simulation drawn, row by row from the
    // start), so the peak holds them all; the model then keeps only the block.
    if (!context.rows.whole()) parts.rest = sgmcmc::share_of(parts.rest, context.rows);
    split(data, parts);
  }

  std::size_t dimension() const override { return x_.shape(1); }
  std::size_t num_items() const override { return y_.size(); }
  std::size_t total_items() const override { return all_items_; }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names;
    for (std::size_t j = 1; j <= dimension(); ++j) names.push_back(fmt::format("beta.{}", j));
    return names;
  }
  sgmcmc::Capabilities capabilities() const override { return capabilities_of_gaussian(); }
  static sgmcmc::Capabilities capabilities_of_gaussian() {
    return {.exact_log_likelihood = true,
            .per_item_gradients = true,
            .glm_gradients = true,
            .lipschitz_bounds = true,
            .simulation = true,
            .prior_simulation = true,
            .row_shares = true};
  }

  std::vector<double> simulated_parameters() const override { return beta_star_; }

  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override {
    return std::make_unique<GaussianWorkspace>(test_y_.size());
  }

  double prior_potential(std::span<const double> beta) const override {
    return 0.5 * std::inner_product(beta.begin(), beta.end(), beta.begin(), 0.0) / (prior_sd_ * prior_sd_);
  }

  void add_prior_gradient(std::span<const double> beta, std::span<double> gradient) const override {
    const double precision = 1.0 / (prior_sd_ * prior_sd_);
    for (std::size_t j = 0; j < beta.size(); ++j) gradient[j] += precision * beta[j];
  }

  void add_data_gradient(std::span<const double> beta, const Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, Rng&) const override {
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const std::size_t i = batch.items[k];
      add_row(i, batch.weight(k) * scalar(i, beta), gradient);
    }
  }

  double data_potential(std::span<const double> beta, const Batch& batch, sgmcmc::Workspace&) const override {
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const double residual = y_(batch.items[k]) - row_dot(x_, batch.items[k], beta);
      sum += batch.weight(k) * residual * residual;
    }
    return 0.5 * sum / (noise_sd_ * noise_sd_);
  }

  /// Both of the above with one x_iᵀβ per item: the same expressions, in the same order.
  std::optional<double> data_potential_and_gradient(std::span<const double> beta, const Batch& batch,
                                                    std::span<double> gradient, sgmcmc::Workspace&,
                                                    Rng&) const override {
    const double precision_scale = noise_sd_ * noise_sd_;
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const std::size_t i = batch.items[k];
      const double fitted = row_dot(x_, i, beta);
      add_row(i, batch.weight(k) * ((fitted - y_(i)) / precision_scale), gradient);
      const double residual = y_(i) - fitted;
      sum += batch.weight(k) * residual * residual;
    }
    return 0.5 * sum / precision_scale;
  }

  void item_gradients(std::span<const double> beta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace&) const override {
    const std::size_t d = dimension();
    std::fill(out.begin(), out.end(), 0.0);
    for (std::size_t k = 0; k < items.size(); ++k)
      add_row(items[k], scalar(items[k], beta), out.subspan(k * d, d));
  }

  void glm_scalars(std::span<const double> beta, std::span<const std::size_t> items, std::span<double> out,
                   sgmcmc::Workspace&) const override {
    for (std::size_t k = 0; k < items.size(); ++k) out[k] = scalar(items[k], beta);
  }

  void add_scaled_features(std::span<const std::size_t> items, std::span<const double> scales,
                           std::span<double> gradient) const override {
    for (std::size_t k = 0; k < items.size(); ++k) add_row(items[k], scales[k], gradient);
  }

  void item_lipschitz_bounds(std::span<double> out) const override {
    for (std::size_t i = 0; i < num_items(); ++i) {
      const double* row = x_.data() + i * x_.shape(1);
      out[i] = std::inner_product(row, row + x_.shape(1), row, 0.0) / (noise_sd_ * noise_sd_);
    }
  }

  std::vector<std::string> metric_names() const override { return {"log_predictive_density"}; }

  /// Held-out log predictive density of the running posterior-predictive average:
  /// (1/J) Σ_j log[(1/S) Σ_s N(y*_j; x*_jᵀβ_s, σ²)] over the S draws evaluated so far.
  void evaluate_metrics(std::span<const double> beta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<GaussianWorkspace&>(base);
    held_out_log_densities(beta, workspace.log_densities);
    out[0] = workspace.predictive.add(workspace.log_densities);
  }

  /// One draw's held-out fit, for zero-variance post-processing (Baker et al. 2019, §4): no test rows, none.
  std::vector<std::string> quantity_names() const override {
    return test_y_.size() ? std::vector<std::string>{"held_out_log_density"} : std::vector<std::string>{};
  }

  /// (1/J) Σ_j log N(y*_j; x*_jᵀβ, σ²) of this draw alone; unlike the metric it averages logs,
  /// not densities, so it is a function of β whose posterior mean ZV can estimate.
  void evaluate_quantities(std::span<const double> beta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<GaussianWorkspace&>(base);
    held_out_log_densities(beta, workspace.log_densities);
    const auto& terms = workspace.log_densities;
    out[0] = std::accumulate(terms.begin(), terms.end(), 0.0) / static_cast<double>(terms.size());
  }

private:
  static double row_dot(const xt::xtensor<double, 2>& x, std::size_t i, std::span<const double> beta) {
    const double* row = x.data() + i * x.shape(1);
    return std::inner_product(beta.begin(), beta.end(), row, 0.0);
  }

  double scalar(std::size_t i, std::span<const double> beta) const {
    return (row_dot(x_, i, beta) - y_(i)) / (noise_sd_ * noise_sd_);
  }

  /// out[j] ← log N(y*_j; x*_jᵀβ, σ²) for every test point j.
  void held_out_log_densities(std::span<const double> beta, std::span<double> out) const {
    const double log_normaliser = -std::log(noise_sd_) - 0.5 * std::log(2.0 * std::numbers::pi);
    for (std::size_t j = 0; j < test_y_.size(); ++j) {
      const double z = (test_y_(j) - row_dot(test_x_, j, beta)) / noise_sd_;
      out[j] = log_normaliser - 0.5 * z * z;
    }
  }

  void add_row(std::size_t i, double scale, std::span<double> gradient) const {
    const double* row = x_.data() + i * x_.shape(1);
    for (std::size_t j = 0; j < gradient.size(); ++j) gradient[j] += scale * row[j];
  }

  /// The split's chosen rows are held out; the rest, in file order, are the data.
  void split(const Dataset& data, const sgmcmc::RowSplit& rows) {
    const std::size_t dim = data.x.shape(1);
    const auto copy_rows = [&](const std::vector<std::size_t>& which, xt::xtensor<double, 1>& y, xt::xtensor<double, 2>& x) {
      y = xt::xtensor<double, 1>::from_shape({which.size()});
      x = xt::xtensor<double, 2>::from_shape({which.size(), dim});
      for (std::size_t r = 0; r < which.size(); ++r) {
        y(r) = data.y(which[r]);
        for (std::size_t j = 0; j < dim; ++j) x(r, j) = data.x(which[r], j);
      }
    };
    copy_rows(rows.chosen, test_y_, test_x_);
    copy_rows(rows.rest, y_, x_);
  }

  double noise_sd_ = 1.0;
  double prior_sd_ = 10.0;
  std::vector<double> beta_star_;  // θ* when model.simulate_from_prior
  std::size_t all_items_ = 0;      // N; y_ and x_ hold the rows of this process's share
  xt::xtensor<double, 1> y_, test_y_;
  xt::xtensor<double, 2> x_, test_x_;
};

sgmcmc::PluginInfo gaussian_info() {
  return {.name = "gaussian",
          .description = "Bayesian linear regression y = xᵀβ + e, e ~ N(0, noise_sd²), β ~ N(0, prior_sd² I); "
                         "closed-form posterior. Keys: n (1000), dim (5), noise_sd (1), prior_sd (10), "
                         "test_size (0.2: a float fraction or an integer count), data (CSV: response, covariates), "
                         "simulate_from_prior (false: β* ~ N(0, I); true: β* ~ the prior, for `sgmcmc sbc`). Quantity: held_out_log_density",
          .parameters = "beta.1 .. beta.dim: regression coefficients",
          .capabilities = GaussianModel::capabilities_of_gaussian()};
}

std::unique_ptr<sgmcmc::Model> make_gaussian(const sgmcmc::ModelContext& context) {
  return std::make_unique<GaussianModel>(context);
}

}  // namespace

SGMCMC_MODEL_PLUGIN(gaussian_info, make_gaussian)
