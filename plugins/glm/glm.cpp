// Generalised linear models chosen in the configuration (McCullagh & Nelder 1989): a response
// y_i with p(y_i | x_i, β) from the family `model.family` through the link `model.link` of the
// linear predictor z_i = x_iᵀβ (an intercept first unless model.intercept = false), and an
// independent prior `model.prior` on every coefficient.
//
// Potentials (U = -log posterior, the prior up to a constant, the data terms normalised):
//   f_0(β) = Σ_j term(β_j)               (priors.hpp)
//   f_i(β) = -log p(y_i | z_i)           ∇f_i = s_i x_i, s_i = ∂f_i/∂z_i   (GLM form; likelihood_math.hpp)
// With ∂²f_i/∂z² ≤ c_i, the Hessian of f_i is ⪯ c_i x_i x_iᵀ, so L_i = c_i ‖x_i‖² is a Lipschitz
// constant of ∇f_i (families.hpp; none for poisson).
// A negative binomial without model.dispersion samples u = log r as θ's last coordinate
// (dispersion.hpp), and a gaussian with model.noise_prior u = log σ (../regression/noise_prior.hpp);
// ∇f_i then has a u component, so such a model has no GLM form and no bound.
//
// Family `categorical` (multinomial logit, the last class as reference) has a vector of linear
// predictors per row, so no GLM form: categorical.cpp.
//
// `logistic` is this model's tuned special case (bernoulli, logit, laplace prior): the same
// readers, rows and pass over a batch (../regression/), so the two agree to rounding.
#include <sgmcmc/plugin.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "categorical.hpp"
#include "design_matrix.hpp"
#include "dispersion.hpp"
#include "families.hpp"
#include "glm_kernels.hpp"
#include "labelled_rows.hpp"
#include "noise_prior.hpp"
#include "prediction_rows.hpp"
#include "predictive_workspace.hpp"
#include "prepared_rows.hpp"
#include "priors.hpp"

import sgmcmc.sdk;

namespace glm {
namespace {

using regression::DesignMatrix;
using regression::glm_kernels;
using regression::GlmKernels;
using regression::LabelledRows;
using regression::Prepared;
using regression::PredictiveWorkspace;
using sgmcmc::Batch;
using sgmcmc::Rng;
using sgmcmc::SectionReader;

/// Everything the configuration chooses besides the rows.
struct Choices {
  const Family* family;
  LikelihoodConstants constants;
  CoefficientPriors prior;
  bool intercept;
  std::optional<DispersionPrior> sampled_dispersion;      // negative binomial without model.dispersion
  std::optional<regression::NoisePrior> sampled_noise;   // gaussian with model.noise_prior
  bool offset = false;  // model.offset: the first column after the response is o_i, z_i = o_i + x_iᵀβ
};

// ---- Simulated data (no model.data) -------------------------------------------------------------
// n rows (1000) of `features` (10) features uniform on [-√(3/F), √(3/F)], each of variance 1/F, so
// that z = xᵀβ has a spread of order |β| whatever F; β*_j = sin(1 + j), or, with
// model.simulate_from_prior, β* drawn from the prior (for `sgmcmc sbc`), and a sampled dispersion
// r* (noise sd σ*) = 1 or drawn from its prior (a flat prior on σ refuses: it has no draw); y_i
// from the family.
constexpr std::int64_t default_rows = 1000;
constexpr std::size_t default_features = 10;

regression::Simulation simulate(SectionReader settings, const Choices& choices, std::size_t declared, bool from_prior,
                                Rng& rng) {
  const auto rows = static_cast<std::size_t>(settings.integer_at_least("n", default_rows, 2));
  const std::size_t features = declared ? declared : default_features;
  const std::size_t first = choices.intercept ? 1 : 0, columns = features + first;
  sgmcmc::require_memory(static_cast<double>(rows) * static_cast<double>(columns + 1), sizeof(double),
                         "model.n × model.features simulated values");
  regression::Simulation simulation;
  std::vector<double> beta(columns);
  for (std::size_t j = 0; j < columns; ++j) beta[j] = std::sin(1.0 + static_cast<double>(j));
  // With model.offset the first feature is the offset o_i: its coefficient is 1, not a parameter.
  const std::size_t offsets = choices.offset ? 1 : 0;
  if (features < 1 + offsets)
    throw sgmcmc::Error(fmt::format("{}: model.offset takes the first simulated feature as the offset; simulate at "
                                    "least 2 features",
                                    settings.describe("features")));
  LikelihoodConstants constants = choices.constants;
  if (from_prior) {
    beta = simulation.beta_star = choices.prior.draw(columns - offsets, rng);
    if (choices.offset) beta.insert(beta.begin() + static_cast<std::ptrdiff_t>(first), 1.0);
    if (choices.sampled_dispersion) {
      const double u = choices.sampled_dispersion->draw(rng);
      constants.dispersion = std::exp(u);
      simulation.beta_star.push_back(u);
    }
    if (choices.sampled_noise) {
      const double u = choices.sampled_noise->draw(rng);
      constants.noise_sd = std::exp(u);
      simulation.beta_star.push_back(u);
    }
  } else if (choices.offset) {
    beta[first] = 1.0;
  }

  LabelledRows& data = simulation.data;
  data = {std::vector<double>(rows), std::vector<double>(rows * features), features};
  const double half_width = std::sqrt(3.0 / static_cast<double>(features));
  for (std::size_t i = 0; i < rows; ++i) {
    double* x = &data.x[i * features];
    double z = first ? beta[0] : 0.0;
    for (std::size_t j = 0; j < features; ++j) {
      x[j] = half_width * (2.0 * rng.uniform() - 1.0);
      z += beta[first + j] * x[j];
    }
    data.y[i] = choices.family->draw_response(z, constants, rng);
  }
  return simulation;
}

/// Counts for poisson, and so on: a response the family cannot have is refused by its row.
void check_responses(const std::vector<double>& responses, const Family& family, const std::string& where) {
  for (std::size_t i = 0; i < responses.size(); ++i)
    if (!family.valid_response(responses[i]))
      throw sgmcmc::Error(fmt::format("{}: data row {} has the response {}; family {} needs {}", where, i + 1, responses[i],
                                      family.family, family.response));
}

Prepared prepare(const sgmcmc::ModelContext& context, const Choices& choices) {
  SectionReader settings = context.settings;
  auto coding = choices.family->coding;
  if (coding != regression::LabelCoding::as_read)
    coding = regression::parse_label_coding(settings.text("labels", "auto"), settings.describe("labels"));
  Prepared prepared = regression::prepare(context, coding, [&](std::size_t declared, bool from_prior, Rng& rng) {
    return simulate(settings, choices, declared, from_prior, rng);
  });
  prepared.storage.intercept = choices.intercept;
  const std::string data_name = settings.optional_text("data").value_or("simulated data");
  if (choices.offset) {
    regression::take_offset_column(prepared.data, data_name);
    if (prepared.test_from_file) regression::take_offset_column(prepared.test_file, prepared.test_file_name);
  }
  check_responses(prepared.data.y, *choices.family, data_name);
  if (prepared.test_from_file) check_responses(prepared.test_file.y, *choices.family, prepared.test_file_name);
  return prepared;
}

/// What every family and link offers; glm-gradients and lipschitz-bounds are added where the
/// model has them (not with a sampled dispersion or noise sd).
sgmcmc::Capabilities common_capabilities() {
  return {.exact_log_likelihood = true, .per_item_gradients = true, .simulation = true, .prior_simulation = true,
          .prediction = true, .row_shares = true};
}

template <class Real>
class GlmModel final : public sgmcmc::Model {
public:
  GlmModel(const Prepared& prepared, const Choices& choices)
      : choices_(choices),
        beta_star_(prepared.beta_star),
        all_items_(prepared.all_train),
        format_(prepared.format),
        storage_(prepared.storage),
        train_(regression::design_matrix<Real>(prepared.data, prepared.train, prepared.storage)),
        test_(regression::design_matrix<Real>(prepared.test_from_file ? prepared.test_file : prepared.data,
                                              prepared.test, prepared.storage)),
        kernels_(glm_kernels<Real>(choices.family->likelihood)) {}

  std::size_t dimension() const override { return train_.columns() + (sampled() ? 1 : 0); }
  std::size_t num_items() const override { return train_.rows(); }
  std::size_t total_items() const override { return all_items_; }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names;
    if (choices_.intercept) names.emplace_back("intercept");
    for (std::size_t j = 1; names.size() < train_.columns(); ++j) names.push_back(fmt::format("beta.{}", j));
    if (choices_.sampled_dispersion) names.emplace_back("log_dispersion");
    if (choices_.sampled_noise) names.emplace_back(regression::log_noise_sd_name);
    return names;
  }
  sgmcmc::Capabilities capabilities() const override {
    auto capabilities = common_capabilities();
    capabilities.glm_gradients = !sampled();
    capabilities.lipschitz_bounds = !sampled() && choices_.family->curvature_bound != nullptr;
    return capabilities;
  }

  std::vector<double> simulated_parameters() const override { return beta_star_; }

  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override {
    return std::make_unique<PredictiveWorkspace>(test_.rows());
  }

  double prior_potential(std::span<const double> theta) const override {
    const double scale = sampled() ? scale_prior_potential(theta.back()) : 0.0;
    return choices_.prior.potential(coefficients(theta)) + scale;
  }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    choices_.prior.add_gradient(coefficients(theta), gradient.first(train_.columns()));
    if (sampled()) gradient.back() += scale_prior_derivative(theta.back());
  }

  void add_data_gradient(std::span<const double> theta, const Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, Rng&) const override {
    kernels_.add_weighted_gradients(constants(theta), train_, batch.items, batch.weights, coefficients(theta),
                                    gradient.first(train_.columns()));
    if (!sampled()) return;
    for (std::size_t k = 0; k < batch.items.size(); ++k)
      gradient.back() += batch.weight(k) * scale_derivative(theta, batch.items[k]);
  }

  double data_potential(std::span<const double> theta, const Batch& batch, sgmcmc::Workspace&) const override {
    return kernels_.weighted_potential(constants(theta), train_, batch.items, batch.weights, coefficients(theta));
  }
  /// One pass over the batch's rows for both (x_iᵀβ once per row); the sampled u's derivative
  /// as add_data_gradient adds it.
  std::optional<double> data_potential_and_gradient(std::span<const double> theta, const Batch& batch,
                                                    std::span<double> gradient, sgmcmc::Workspace&,
                                                    Rng&) const override {
    const double potential = kernels_.add_weighted_gradients_and_potential(
        constants(theta), train_, batch.items, batch.weights, coefficients(theta), gradient.first(train_.columns()));
    if (sampled())
      for (std::size_t k = 0; k < batch.items.size(); ++k)
        gradient.back() += batch.weight(k) * scale_derivative(theta, batch.items[k]);
    return potential;
  }

  void item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace&) const override {
    const std::size_t d = dimension(), columns = train_.columns();
    std::vector<double> scalars(items.size());
    kernels_.glm_scalars(constants(theta), train_, items, coefficients(theta), scalars);
    for (std::size_t k = 0; k < items.size(); ++k) {
      const Real* row = train_.row(items[k]);
      for (std::size_t j = 0; j < columns; ++j) out[k * d + j] = scalars[k] * row[j];
      if (sampled()) out[k * d + columns] = scale_derivative(theta, items[k]);
    }
  }

  void glm_scalars(std::span<const double> beta, std::span<const std::size_t> items, std::span<double> out,
                   sgmcmc::Workspace&) const override {
    kernels_.glm_scalars(choices_.constants, train_, items, beta, out);
  }

  void add_scaled_features(std::span<const std::size_t> items, std::span<const double> scales,
                           std::span<double> gradient) const override {
    kernels_.add_scaled_rows(train_, items, scales, gradient);
  }

  /// L_i = c_i ‖x_i‖² (only declared where the family has a curvature bound c_i).
  void item_lipschitz_bounds(std::span<double> out) const override {
    if (!choices_.family->curvature_bound) return sgmcmc::Model::item_lipschitz_bounds(out);
    for (std::size_t i = 0; i < num_items(); ++i) {
      const Real* row = train_.row(i);
      out[i] = choices_.family->curvature_bound(train_.y[i], choices_.constants) *
               std::inner_product(row, row + dimension(), row, 0.0);
    }
  }

  std::vector<std::string> metric_names() const override {
    return test_.rows() ? std::vector<std::string>{"log_predictive_density"} : std::vector<std::string>{};
  }

  /// (1/J) Σ_j log[(1/S) Σ_s p(y*_j | x*_j, β_s)] over the S draws evaluated so far.
  void evaluate_metrics(std::span<const double> theta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<PredictiveWorkspace&>(base);
    kernels_.log_likelihoods(constants(theta), test_, coefficients(theta), workspace.log_likelihoods);
    out[0] = workspace.predictive.add(workspace.log_likelihoods);
  }

  std::vector<std::string> quantity_names() const override {
    return test_.rows() ? std::vector<std::string>{"held_out_log_density"} : std::vector<std::string>{};
  }

  /// One draw's mean held-out log-likelihood (1/J) Σ_j log p(y*_j | x*_j, β).
  void evaluate_quantities(std::span<const double> theta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<PredictiveWorkspace&>(base);
    kernels_.log_likelihoods(constants(theta), test_, coefficients(theta), workspace.log_likelihoods);
    const auto& terms = workspace.log_likelihoods;
    out[0] = std::accumulate(terms.begin(), terms.end(), 0.0) / static_cast<double>(terms.size());
  }

  /// p(y = 1 | x, β) for bernoulli; E[y | x, β] and Var[y | x, β] for the others (families.cpp).
  sgmcmc::PredictionForm prediction_form() const override {
    if (binary()) return {.probabilities = true, .names = {"p"}};
    return {.probabilities = false, .names = {"mean", "variance"}};
  }
  std::unique_ptr<sgmcmc::PredictionRows> read_prediction_rows(const std::string& path) const override {
    auto rows = regression::read_matrix_prediction_rows(path, format_, choices_.family->coding, train_, storage_);
    if (!rows->responses.empty()) check_responses(rows->x.y, *choices_.family, path);
    return rows;
  }
  void predict_rows(std::span<const double> theta, const sgmcmc::PredictionRows& base, std::span<double> out,
                    std::span<double> log_densities) const override {
    const auto& rows = static_cast<const regression::MatrixPredictionRows<Real>&>(base);
    const auto at = constants(theta);
    const std::size_t width = binary() ? 1 : 2;
    for (std::size_t i = 0; i < rows.count; ++i)
      choices_.family->predict(regression::linear_predictor(rows.x, i, theta.data()), at, &out[i * width]);
    if (!log_densities.empty()) kernels_.log_likelihoods(at, rows.x, coefficients(theta), log_densities);
  }

private:
  /// Whether θ ends with a sampled u: log r (negative binomial) or log σ (gaussian).
  bool sampled() const { return choices_.sampled_dispersion || choices_.sampled_noise; }
  bool binary() const { return choices_.family->coding != regression::LabelCoding::as_read; }
  /// β: θ without the sampled u.
  std::span<const double> coefficients(std::span<const double> theta) const {
    return theta.first(train_.columns());
  }
  /// The likelihood's constants at θ: the sampled dispersion r = e^u or noise sd σ = e^u, or
  /// the configured ones.
  LikelihoodConstants constants(std::span<const double> theta) const {
    LikelihoodConstants at = choices_.constants;
    if (choices_.sampled_dispersion) at.dispersion = std::exp(theta.back());
    if (choices_.sampled_noise) at.noise_sd = std::exp(theta.back());
    return at;
  }
  /// The sampled u's prior term f_0(u), Jacobian included, and its derivative.
  double scale_prior_potential(double u) const {
    return choices_.sampled_dispersion ? choices_.sampled_dispersion->potential(u) : choices_.sampled_noise->potential(u);
  }
  double scale_prior_derivative(double u) const {
    return choices_.sampled_dispersion ? choices_.sampled_dispersion->derivative(u) : choices_.sampled_noise->derivative(u);
  }
  /// ∂f_i/∂u at θ, z_i = x_iᵀβ: the dispersion's (dispersion.hpp) or the noise sd's (noise_prior.hpp).
  double scale_derivative(std::span<const double> theta, std::size_t i) const {
    const Real* row = train_.row(i);
    double z = 0.0;
    for (std::size_t j = 0; j < train_.columns(); ++j) z += row[j] * theta[j];
    if (!train_.offset.empty()) z += train_.offset[i];
    if (choices_.sampled_noise) return regression::gaussian_log_noise_sd_derivative(train_.y[i] - z, std::exp(theta.back()));
    return negative_binomial_log_dispersion_derivative(train_.y[i], z, theta.back());
  }

  Choices choices_;
  std::vector<double> beta_star_;  // θ* when model.simulate_from_prior
  std::size_t all_items_;          // N; train_ holds the rows of this process's share (ModelContext::rows)
  regression::FileFormat format_;  // model.format, for files to predict on
  regression::StorageOptions storage_;
  regression::DesignMatrix<Real> train_, test_;
  const GlmKernels<Real>& kernels_;
};

/// model.prior, prior_scale (not for flat), prior_df (student_t only): the same for every family.
Prior read_prior(SectionReader settings) {
  const PriorForm& form = find_prior(settings.text("prior", "normal"), settings.describe("prior"));
  PriorConstants prior;
  if (form.has_scale) prior.scale = settings.positive_number("prior_scale", 1.0);
  if (form.has_degrees_of_freedom) prior.degrees_of_freedom = settings.positive_number("prior_df", 3.0);
  return Prior(form, prior, settings.describe("prior"));
}

/// model.prior for every coefficient, or, with model.intercept_prior, for all but the intercept,
/// which then has its own (intercept_prior_location 0, intercept_prior_scale 1, intercept_prior_df
/// 3 for student_t): brms puts a Student-t on the intercept of the centred design.
CoefficientPriors read_coefficient_priors(SectionReader settings, bool intercept) {
  CoefficientPriors priors{.slopes = read_prior(settings), .intercept = std::nullopt};
  const auto name = settings.optional_text("intercept_prior");
  if (!name) return priors;
  if (!intercept)
    throw sgmcmc::Error(fmt::format("{}: the model has no intercept ({}); remove one of the two",
                                    settings.describe("intercept_prior"), settings.describe("intercept")));
  const PriorForm& form = find_prior(*name, settings.describe("intercept_prior"));
  PriorConstants constants{.location = settings.number("intercept_prior_location", 0.0)};
  if (form.has_scale) constants.scale = settings.positive_number("intercept_prior_scale", 1.0);
  if (form.has_degrees_of_freedom) constants.degrees_of_freedom = settings.positive_number("intercept_prior_df", 3.0);
  priors.intercept = Prior(form, constants, settings.describe("intercept_prior"));
  priors.intercepts = 1;
  return priors;
}

/// model.family, link, its constants (noise_sd or noise_prior, dispersion), prior, prior_scale,
/// prior_df, intercept. A family's or prior's own key is read only with it, so that it is reported
/// as unknown elsewhere (noise_prior, for which a clearer error says why).
/// model.family: "bernoulli" when unset.
std::string family_name(SectionReader settings) { return settings.text("family", "bernoulli"); }

Choices read_choices(SectionReader settings) {
  const Family& family = find_family(family_name(settings), settings.text("link", ""),
                                     settings.describe("family"), settings.describe("link"));
  LikelihoodConstants constants;
  std::optional<regression::NoisePrior> sampled_noise;
  if (family.likelihood == Likelihood::gaussian_identity) {
    const auto noise = regression::read_gaussian_noise(settings);
    constants.noise_sd = noise.fixed_sd;  // 1 with noise_prior: the σ* of simulated data
    sampled_noise = noise.sampled;
  } else {
    regression::refuse_noise_prior(settings, family.family);
  }
  std::optional<DispersionPrior> sampled_dispersion;
  if (family.likelihood == Likelihood::negative_binomial_log) {
    if (settings.contains("dispersion"))
      constants.dispersion = settings.positive_number("dispersion", 1.0);
    else
      sampled_dispersion = DispersionPrior{.shape = settings.positive_number("dispersion_shape", 1.0),
                                           .rate = settings.positive_number("dispersion_rate", 1.0)};
  }
  const bool intercept = settings.flag("intercept", true);
  return {&family,          constants,     read_coefficient_priors(settings, intercept), intercept,
          sampled_dispersion, sampled_noise, settings.flag("offset", false)};
}

sgmcmc::PluginInfo glm_info() {
  return {.name = "glm",
          .description = fmt::format(
              "Generalised linear model chosen in the configuration (McCullagh & Nelder 1989): family and link "
              "({}; default bernoulli, the family's first link), independent prior on every coefficient "
              "(normal, laplace, student_t, flat; prior_scale 1, prior_df 3), intercept (true). The GLM form and Lipschitz "
              "bounds for every family but poisson (no bounds), a sampled dispersion or noise sd (neither) and categorical "
              "(bounds only: its last class is the reference). Keys: family, classes (categorical), "
              "link, noise_sd (gaussian, 1) or noise_prior (gaussian: log sigma sampled under half_normal|half_cauchy|"
              "half_student_t|exponential|flat, with noise_prior_scale 1, noise_prior_df for half_student_t), dispersion (negative_binomial: r fixed; without it log r is sampled "
              "with r ~ Gamma(dispersion_shape 1, dispersion_rate 1)), "
              "prior (normal|laplace|student_t|flat), prior_scale, prior_df (student_t), intercept, intercept_prior "
              "(the intercept's own, not categorical: as prior, with intercept_prior_location 0, intercept_prior_scale 1, "
              "intercept_prior_df 3), offset (false; true: the first column after the response is o_i, "
              "z = o_i + x'beta, not categorical), data (LIBSVM or CSV, .gz or plain), test_data, "
              "test_size (0.1), subsample (1.0), format (auto|libsvm|csv), labels (bernoulli: auto|0/1|1/2|-1/+1; "
              "categorical: 0..K-1|1..K), classes (categorical: K, inferred from the labels unless given), "
              "features (LIBSVM dimension, or the simulated width: 10), n (1000 simulated rows), simulate_from_prior "
              "(false); speed: storage (double|float), prefetch (8), huge_pages (true)",
              family_list()),
          .parameters = "intercept (unless intercept = false), beta.1 .. beta.features: regression coefficients; "
                        "log_dispersion (negative_binomial without dispersion): log r; log_noise_sd (gaussian with noise_prior): "
                        "log sigma; categorical: intercept.<class>, "
                        "beta.<class>.<feature> for every class but the last (the reference)",
          .capabilities = common_capabilities()};
}

/// model.storage: double or float.
bool float_storage(SectionReader settings) {
  const std::string storage = settings.text("storage", "double");
  if (storage != "double" && storage != "float")
    throw sgmcmc::Error(fmt::format("{}: '{}' is not a storage type; expected double or float", settings.describe("storage"), storage));
  return storage == "float";
}

std::unique_ptr<sgmcmc::Model> make_glm(const sgmcmc::ModelContext& context) {
  SectionReader settings = context.settings;
  if (family_name(settings) == "categorical") {
    regression::refuse_noise_prior(settings, "categorical");
    if (settings.contains("offset"))
      throw sgmcmc::Error(fmt::format("{}: family categorical has one linear predictor per class; an offset is for "
                                      "the other families",
                                      settings.describe("offset")));
    if (settings.contains("intercept_prior"))
      throw sgmcmc::Error(fmt::format("{}: family categorical's K-1 intercepts share model.prior; an intercept prior "
                                      "of its own is for the other families",
                                      settings.describe("intercept_prior")));
    return make_categorical(context, read_prior(settings), settings.flag("intercept", true), float_storage(settings));
  }
  const Choices choices = read_choices(settings);
  const std::string storage = float_storage(settings) ? "float" : "double";
  const Prepared prepared = prepare(context, choices);
  if (storage == "float") return std::make_unique<GlmModel<float>>(prepared, choices);
  return std::make_unique<GlmModel<double>>(prepared, choices);
}

}  // namespace
}  // namespace glm

SGMCMC_MODEL_PLUGIN(glm::glm_info, glm::make_glm)
