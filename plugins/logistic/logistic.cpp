// Bayesian logistic regression (Baker et al. 2019, §5.1): p(y_i | x_i, β) = 1 / (1 + exp(-y_i βᵀx_i)),
// y ∈ {-1, +1}, an intercept column x_i0 = 1, and a Laplace prior of scale b on every coefficient.
//
// Potentials (U = -log posterior, up to constants):
//   f_0(β) = Σ_j |β_j| / b                  ∇f_0 = sign(β) / b
//   f_i(β) = log(1 + exp(-y_i x_iᵀβ))       ∇f_i = s_i x_i, s_i = -y_i σ(-y_i x_iᵀβ)   (GLM form)
// The Hessian of f_i is σ(1-σ) x_i x_iᵀ ⪯ ¼ x_i x_iᵀ, so L_i = ‖x_i‖²/4 is a Lipschitz constant of ∇f_i.
#include <sgmcmc/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "design_matrix.hpp"
#include "glm_kernels.hpp"
#include "labelled_rows.hpp"
#include "laplace.hpp"
#include "prediction_rows.hpp"
#include "predictive_workspace.hpp"
#include "prepared_rows.hpp"

import sgmcmc.sdk;

namespace logistic {
namespace {

using regression::design_matrix;
using regression::DesignMatrix;
using regression::LabelledRows;
using regression::parse_label_coding;
using regression::Prepared;
using LogisticWorkspace = regression::PredictiveWorkspace;
using sgmcmc::Batch;
using sgmcmc::Rng;
using sgmcmc::SectionReader;

// ---- Simulated data with the shape of cover type ------------------------------------------------
// Cover type (binary, scaled) has 54 features: 10 continuous ones scaled to [0, 1], then 4
// wilderness-area and 40 soil-type indicators, one of each group set per row. The simulation draws
// the continuous ones uniform on [0, 1], one wilderness area and one soil type uniformly, and the
// label from the model with the fixed β*_j = 2 sin(1 + j), j = 0 (intercept) .. 54, or, with
// model.simulate_from_prior, with β* drawn from the Laplace prior first (for `sgmcmc sbc`).
constexpr std::size_t covtype_rows = 581'012, continuous_features = 10, wilderness_areas = 4, soil_types = 40;
constexpr std::size_t covtype_features = continuous_features + wilderness_areas + soil_types;

double true_coefficient(std::size_t j) { return 2.0 * std::sin(1.0 + static_cast<double>(j)); }

/// β*_j ~ Laplace(0, b), independently: b·(E₁ - E₂) with E₁, E₂ ~ Exp(1) has that law.
std::vector<double> laplace_draw(std::size_t count, double scale, Rng& rng) {
  std::vector<double> draw(count);
  for (double& b : draw) b = regression::laplace_variate(scale, rng);
  return draw;
}

LabelledRows simulate_covtype_shape(std::size_t rows, std::span<const double> beta_star, Rng& rng) {
  LabelledRows data{std::vector<double>(rows), std::vector<double>(rows * covtype_features, 0.0), covtype_features};
  for (std::size_t i = 0; i < rows; ++i) {
    double* x = &data.x[i * covtype_features];
    for (std::size_t j = 0; j < continuous_features; ++j) x[j] = rng.uniform();
    x[continuous_features + rng.index(wilderness_areas)] = 1.0;
    x[continuous_features + wilderness_areas + rng.index(soil_types)] = 1.0;
    double z = beta_star[0];
    for (std::size_t j = 0; j < covtype_features; ++j) z += beta_star[j + 1] * x[j];
    data.y[i] = rng.uniform() < 1.0 / (1.0 + std::exp(-z)) ? 1.0 : -1.0;
  }
  return data;
}

/// Cover type's shape with labels from β*: the fixed one, or a draw from the Laplace prior.
Prepared prepare(const sgmcmc::ModelContext& context, double prior_scale, regression::LabelCoding coding) {
  SectionReader settings = context.settings;
  return regression::prepare(context, coding, [&](std::size_t, bool from_prior, Rng& rng) {
    const auto rows = settings.integer_at_least("n", static_cast<std::int64_t>(covtype_rows), 2);
    regression::Simulation simulation;
    std::vector<double> beta(covtype_features + 1);
    for (std::size_t j = 0; j < beta.size(); ++j) beta[j] = true_coefficient(j);
    if (from_prior) beta = simulation.beta_star = laplace_draw(beta.size(), prior_scale, rng);
    simulation.data = simulate_covtype_shape(static_cast<std::size_t>(rows), beta, rng);
    return simulation;
  });
}

template <class Real>
class LogisticModel final : public sgmcmc::Model {
public:
  LogisticModel(const Prepared& prepared, double prior_scale, regression::LabelCoding coding)
      : prior_scale_(prior_scale),
        beta_star_(prepared.beta_star),
        all_items_(prepared.all_train),
        coding_(coding),
        format_(prepared.format),
        storage_(prepared.storage),
        train_(design_matrix<Real>(prepared.data, prepared.train, prepared.storage)),
        test_(design_matrix<Real>(prepared.test_from_file ? prepared.test_file : prepared.data, prepared.test,
                                  prepared.storage)) {}

  std::size_t dimension() const override { return train_.columns(); }
  std::size_t num_items() const override { return train_.rows(); }
  std::size_t total_items() const override { return all_items_; }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names{"intercept"};
    for (std::size_t j = 1; j < dimension(); ++j) names.push_back(fmt::format("beta.{}", j));
    return names;
  }
  sgmcmc::Capabilities capabilities() const override { return capabilities_of_logistic(); }
  static sgmcmc::Capabilities capabilities_of_logistic() {
    return {.exact_log_likelihood = true,
            .per_item_gradients = true,
            .glm_gradients = true,
            .lipschitz_bounds = true,
            .simulation = true,
            .prior_simulation = true,
            .prediction = true,
            .row_shares = true};
  }

  std::vector<double> simulated_parameters() const override { return beta_star_; }

  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override {
    return std::make_unique<LogisticWorkspace>(test_.rows());
  }

  double prior_potential(std::span<const double> beta) const override {
    double sum = 0.0;
    for (double b : beta) sum += std::abs(b);
    return sum / prior_scale_;
  }

  /// ∇|β_j| = sign(β_j), taking 0 at β_j = 0 (a subgradient; the point has probability zero).
  void add_prior_gradient(std::span<const double> beta, std::span<double> gradient) const override {
    for (std::size_t j = 0; j < beta.size(); ++j) gradient[j] += static_cast<double>((beta[j] > 0) - (beta[j] < 0)) / prior_scale_;
  }

  void add_data_gradient(std::span<const double> beta, const Batch& batch, std::span<double> gradient, sgmcmc::Workspace&,
                         Rng&) const override {
    kernels_.add_weighted_gradients(constants_, train_, batch.items, batch.weights, beta, gradient);
  }

  double data_potential(std::span<const double> beta, const Batch& batch, sgmcmc::Workspace&) const override {
    return kernels_.weighted_potential(constants_, train_, batch.items, batch.weights, beta);
  }
  /// One pass over the batch's rows for both (x_iᵀβ once per row).
  std::optional<double> data_potential_and_gradient(std::span<const double> beta, const Batch& batch,
                                                    std::span<double> gradient, sgmcmc::Workspace&,
                                                    Rng&) const override {
    return kernels_.add_weighted_gradients_and_potential(constants_, train_, batch.items, batch.weights, beta, gradient);
  }

  void item_gradients(std::span<const double> beta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace&) const override {
    const std::size_t d = dimension();
    std::vector<double> scalars(items.size());
    kernels_.glm_scalars(constants_, train_, items, beta, scalars);
    for (std::size_t k = 0; k < items.size(); ++k) {
      const Real* row = train_.row(items[k]);
      for (std::size_t j = 0; j < d; ++j) out[k * d + j] = scalars[k] * row[j];
    }
  }

  void glm_scalars(std::span<const double> beta, std::span<const std::size_t> items, std::span<double> out,
                   sgmcmc::Workspace&) const override {
    kernels_.glm_scalars(constants_, train_, items, beta, out);
  }

  void add_scaled_features(std::span<const std::size_t> items, std::span<const double> scales,
                           std::span<double> gradient) const override {
    kernels_.add_scaled_rows(train_, items, scales, gradient);
  }

  void item_lipschitz_bounds(std::span<double> out) const override {
    for (std::size_t i = 0; i < num_items(); ++i) {
      const Real* row = train_.row(i);
      out[i] = 0.25 * std::inner_product(row, row + dimension(), row, 0.0);
    }
  }

  std::vector<std::string> metric_names() const override {
    return test_.rows() ? std::vector<std::string>{"log_predictive_density"} : std::vector<std::string>{};
  }

  /// Baker et al. (2019, §5.1): (1/J) Σ_j log[(1/S) Σ_s p(y*_j | x*_j, β_s)] over the S draws evaluated so far.
  void evaluate_metrics(std::span<const double> beta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<LogisticWorkspace&>(base);
    kernels_.log_likelihoods(constants_, test_, beta, workspace.log_likelihoods);
    out[0] = workspace.predictive.add(workspace.log_likelihoods);
  }

  std::vector<std::string> quantity_names() const override {
    return test_.rows() ? std::vector<std::string>{"held_out_log_density"} : std::vector<std::string>{};
  }

  /// One draw's mean held-out log-likelihood (1/J) Σ_j log p(y*_j | x*_j, β): the quantity whose
  /// ZV-corrected estimate Baker et al. (2019)'s Figure 2 shows.
  void evaluate_quantities(std::span<const double> beta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<LogisticWorkspace&>(base);
    kernels_.log_likelihoods(constants_, test_, beta, workspace.log_likelihoods);
    const auto& terms = workspace.log_likelihoods;
    out[0] = std::accumulate(terms.begin(), terms.end(), 0.0) / static_cast<double>(terms.size());
  }

  /// p(y = +1 | x, β) = σ(xᵀβ).
  sgmcmc::PredictionForm prediction_form() const override { return {.probabilities = true, .names = {"p"}}; }
  std::unique_ptr<sgmcmc::PredictionRows> read_prediction_rows(const std::string& path) const override {
    return regression::read_matrix_prediction_rows(path, format_, coding_, train_, storage_);
  }
  void predict_rows(std::span<const double> beta, const sgmcmc::PredictionRows& base, std::span<double> out,
                    std::span<double> log_densities) const override {
    const auto& rows = static_cast<const regression::MatrixPredictionRows<Real>&>(base);
    for (std::size_t i = 0; i < rows.count; ++i)
      out[i] = 1.0 / (1.0 + std::exp(-regression::linear_predictor(rows.x, i, beta.data())));
    if (!log_densities.empty()) kernels_.log_likelihoods(constants_, rows.x, beta, log_densities);
  }

private:
  double prior_scale_ = 1.0;
  std::vector<double> beta_star_;  // θ* when model.simulate_from_prior
  std::size_t all_items_;          // N; train_ holds the rows of this process's share (ModelContext::rows)
  regression::LabelCoding coding_;  // model.labels, for files to predict on
  regression::FileFormat format_;
  regression::StorageOptions storage_;
  DesignMatrix<Real> train_, test_;
  // glm's bernoulli-logit kernels: y ∈ {-1, +1}, f_i = log(1 + exp(-y_i z_i)), no constants.
  const regression::GlmKernels<Real>& kernels_ = regression::glm_kernels<Real>(regression::Likelihood::bernoulli_logit);
  const regression::LikelihoodConstants constants_ = {};
};

sgmcmc::PluginInfo logistic_info() {
  return {.name = "logistic",
          .description = "Bayesian logistic regression p(y|x,β) = 1/(1+exp(-y xᵀβ)), y ∈ {-1,+1}, intercept, Laplace "
                         "prior of scale prior_scale (Baker et al. 2019, §5.1). Keys: data (LIBSVM or CSV, .gz or plain), "
                         "test_data, test_size (0.1: fraction, or an integer count), subsample (1.0: fraction, or an "
                         "integer count), format (auto|libsvm|csv), labels (auto|0/1|1/2|-1/+1), features (LIBSVM "
                         "dimension), prior_scale (1), n (581012: rows simulated with cover type's shape), simulate_from_prior "
                         "(false: fixed β*; true: β* ~ the prior, for `sgmcmc sbc`); speed: "
                         "storage (double|float), prefetch (8 rows), huge_pages (true)",
          .parameters = "intercept, beta.1 .. beta.features: regression coefficients",
          .capabilities = LogisticModel<double>::capabilities_of_logistic()};
}

std::unique_ptr<sgmcmc::Model> make_logistic(const sgmcmc::ModelContext& context) {
  SectionReader settings = context.settings;
  const double prior_scale = settings.positive_number("prior_scale", 1.0);
  const std::string storage = settings.text("storage", "double");
  if (storage != "double" && storage != "float")
    throw sgmcmc::Error(fmt::format("{}: '{}' is not a storage type; expected double or float", settings.describe("storage"), storage));
  const auto coding = parse_label_coding(settings.text("labels", "auto"), settings.describe("labels"));
  const Prepared prepared = prepare(context, prior_scale, coding);
  if (storage == "float") return std::make_unique<LogisticModel<float>>(prepared, prior_scale, coding);
  return std::make_unique<LogisticModel<double>>(prepared, prior_scale, coding);
}

}  // namespace
}  // namespace logistic

SGMCMC_MODEL_PLUGIN(logistic::logistic_info, logistic::make_logistic)
