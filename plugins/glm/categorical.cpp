// Multinomial logit (McCullagh & Nelder 1989, §5.2.4 "baseline-category" logits) over K classes:
// coefficient vectors β_0 .. β_{K-2}, one per class but the last, which is the reference (z_{K-1} = 0):
//   z_ic = x_iᵀβ_c (c < K-1),  z_{i,K-1} = 0,  p(y_i = c | x_i) = e^{z_ic} / Σ_k e^{z_ik}
//   f_i(β) = log Σ_k e^{z_ik} - z_{i,y_i}                     (normalised: the predictive needs it)
//   ∂f_i/∂β_c = (p_ic - 1{y_i = c}) x_i                        (c < K-1)
// The Hessian of f_i is (diag(p_i) - p_i p_iᵀ) ⊗ x_i x_iᵀ over the K-1 free classes, and
// diag(p) - ppᵀ ⪯ ½(I - 11ᵀ/K) (Böhning 1992, Lemma), whose largest eigenvalue is ½ for K ≥ 3 and
// ¼ for K = 2, so L_i = c_K ‖x_i‖² with that c_K is a Lipschitz constant of ∇f_i. With K = 2 this is bernoulli-logit with y = +1 for class 0: f = log(1 + e^{-z}).
// Standard and fmt headers before the module import (see prepared_rows.cpp).
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

#include "categorical.hpp"
#include "binary_rows.hpp"
#include "design_matrix.hpp"
#include "labelled_rows.hpp"
#include "prediction_rows.hpp"
#include "predictive_workspace.hpp"
#include "prepared_rows.hpp"

namespace glm {
namespace {

using regression::LabelledRows;
using regression::Prepared;
using regression::PredictiveWorkspace;
using sgmcmc::Batch;
using sgmcmc::Rng;
using sgmcmc::SectionReader;

constexpr std::int64_t default_rows = 1000;
constexpr std::size_t default_features = 10, default_simulated_classes = 3;

/// How the file writes class c: c (labels = "0..K-1") or c + 1 (labels = "1..K").
struct ClassLabels {
  double first = 0.0;  // the label of class 0
  std::optional<std::size_t> classes;  // model.classes
};

/// log Σ_k e^{z_k} of the logits of one row, z[K-1] = 0 included; z[0..K-2] ← x_iᵀβ_c.
template <class Real>
double logits(const Real* row, std::size_t columns, std::span<const double> beta, std::size_t classes, double* z) {
  double largest = 0.0;  // z_{K-1}
  z[classes - 1] = 0.0;
  for (std::size_t c = 0; c + 1 < classes; ++c) {
    const double* b = beta.data() + c * columns;
    double sum = 0.0;
    for (std::size_t j = 0; j < columns; ++j) sum += static_cast<double>(row[j]) * b[j];
    z[c] = sum;
    largest = std::max(largest, sum);
  }
  double total = 0.0;
  for (std::size_t c = 0; c < classes; ++c) total += std::exp(z[c] - largest);
  return largest + std::log(total);
}

// ---- Data ---------------------------------------------------------------------------------------

/// Every label must be a class index: a whole number 0 ≤ label - first < K (K = model.classes, or
/// not yet known: any whole number ≥ first). Labels become class indices 0..K-1.
void to_class_indices(LabelledRows& rows, const ClassLabels& labels, std::optional<std::size_t> classes,
                      const std::string& path) {
  for (std::size_t i = 0; i < rows.y.size(); ++i) {
    const double index = rows.y[i] - labels.first;
    if (index < 0 || index != std::floor(index) || (classes && index >= static_cast<double>(*classes)) || index > 1e6)
      throw sgmcmc::Error(fmt::format(
          "{}: label {} is not a class; family categorical needs a whole number {}, {}, ..., {}", regression::row_place(rows, i, path),
          rows.y[i], labels.first, labels.first + 1,
          classes ? fmt::format("{} ({} classes{})", labels.first + static_cast<double>(*classes) - 1, *classes,
                                labels.classes ? ", model.classes" : ", inferred from model.data")
                  : std::string(labels.first == 0.0 ? "K-1" : "K")));
    rows.y[i] = index;
  }
}

/// K: model.classes, or one more than the largest class index of the data.
std::size_t count_classes(const LabelledRows& data, const ClassLabels& labels, const std::string& path) {
  if (labels.classes) return *labels.classes;
  const double largest = *std::max_element(data.y.begin(), data.y.end());
  if (largest < 1)
    throw sgmcmc::Error(fmt::format("{}: every label is {}: family categorical needs at least two classes (or set "
                                    "model.classes)",
                                    path, labels.first));
  return static_cast<std::size_t>(largest) + 1;
}

/// Simulated data as the other families' (glm.cpp): `features` uniform features of variance 1/F,
/// β*_{c,j} = sin(1 + j + c·columns) or drawn from the prior, y_i from the softmax.
regression::Simulation simulate(SectionReader settings, const Prior& prior, bool intercept, std::size_t classes,
                                std::size_t declared, bool from_prior, Rng& rng) {
  const auto rows = static_cast<std::size_t>(settings.integer_at_least("n", default_rows, 2));
  const std::size_t features = declared ? declared : default_features;
  const std::size_t columns = features + (intercept ? 1 : 0), dimension = (classes - 1) * columns;
  sgmcmc::require_memory(static_cast<double>(rows) * static_cast<double>(features + 1), sizeof(double),
                         "model.n × model.features simulated values");
  regression::Simulation simulation;
  std::vector<double> beta(dimension);
  for (std::size_t k = 0; k < dimension; ++k) beta[k] = std::sin(1.0 + static_cast<double>(k));
  if (from_prior) beta = simulation.beta_star = prior.draw(dimension, rng);
  LabelledRows& data = simulation.data;
  data = {std::vector<double>(rows), std::vector<double>(rows * features), features};
  const double half_width = std::sqrt(3.0 / static_cast<double>(features));
  std::vector<double> row(columns, 1.0), z(classes), cumulative(classes);
  for (std::size_t i = 0; i < rows; ++i) {
    double* x = &data.x[i * features];
    for (std::size_t j = 0; j < features; ++j) row[columns - features + j] = x[j] = half_width * (2.0 * rng.uniform() - 1.0);
    const double normaliser = logits(row.data(), columns, beta, classes, z.data());
    double sum = 0.0;
    for (std::size_t c = 0; c < classes; ++c) cumulative[c] = sum += std::exp(z[c] - normaliser);
    data.y[i] = static_cast<double>(rng.index_from_cumulative(cumulative));
  }
  return simulation;
}

// ---- The model ----------------------------------------------------------------------------------

template <class Real>
class CategoricalModel final : public sgmcmc::Model {
public:
  CategoricalModel(const Prepared& prepared, const Prior& prior, std::size_t classes, ClassLabels labels)
      : prior_(prior), classes_(classes), labels_(labels), beta_star_(prepared.beta_star), all_items_(prepared.all_train),
        format_(prepared.format),
        storage_(prepared.storage),
        train_(regression::design_matrix<Real>(prepared.data, prepared.train, prepared.storage)),
        test_(regression::design_matrix<Real>(prepared.test_from_file ? prepared.test_file : prepared.data,
                                              prepared.test, prepared.storage)) {}

  std::size_t dimension() const override { return (classes_ - 1) * columns(); }
  std::size_t num_items() const override { return train_.rows(); }
  std::size_t total_items() const override { return all_items_; }
  /// intercept.<class>, beta.<class>.<feature> for every class but the last (the reference), the
  /// class named by its label in the data.
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names;
    for (std::size_t c = 0; c + 1 < classes_; ++c) {
      const auto label = class_label(c);
      if (train_.first_feature()) names.push_back(fmt::format("intercept.{}", label));
      for (std::size_t j = 1; j + train_.first_feature() <= columns(); ++j) names.push_back(fmt::format("beta.{}.{}", label, j));
    }
    return names;
  }
  sgmcmc::Capabilities capabilities() const override { return categorical_capabilities(); }
  static sgmcmc::Capabilities categorical_capabilities() {
    return {.exact_log_likelihood = true, .per_item_gradients = true, .lipschitz_bounds = true, .simulation = true,
            .prior_simulation = true, .prediction = true, .row_shares = true};
  }
  std::vector<double> simulated_parameters() const override { return beta_star_; }

  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override {
    return std::make_unique<PredictiveWorkspace>(test_.rows());
  }

  double prior_potential(std::span<const double> theta) const override { return prior_.potential(theta); }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    prior_.add_gradient(theta, gradient);
  }

  void add_data_gradient(std::span<const double> theta, const Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, Rng&) const override {
    std::vector<double> z(classes_);
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const Real* row = train_.row(batch.items[k]);
      scores(row, train_.y[batch.items[k]], theta, z.data());
      const double weight = batch.weight(k);
      for (std::size_t c = 0; c + 1 < classes_; ++c) {
        double* g = gradient.data() + c * columns();
        const double s = weight * z[c];
        for (std::size_t j = 0; j < columns(); ++j) g[j] += s * static_cast<double>(row[j]);
      }
    }
  }

  double data_potential(std::span<const double> theta, const Batch& batch, sgmcmc::Workspace&) const override {
    std::vector<double> z(classes_);
    double total = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const std::size_t i = batch.items[k];
      total += batch.weight(k) * loss(train_.row(i), train_.y[i], theta, z.data());
    }
    return total;
  }

  void item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace&) const override {
    const std::size_t d = dimension();
    std::vector<double> z(classes_);
    for (std::size_t k = 0; k < items.size(); ++k) {
      const Real* row = train_.row(items[k]);
      scores(row, train_.y[items[k]], theta, z.data());
      for (std::size_t c = 0; c + 1 < classes_; ++c)
        for (std::size_t j = 0; j < columns(); ++j) out[k * d + c * columns() + j] = z[c] * static_cast<double>(row[j]);
    }
  }

  /// L_i = c_K ‖x_i‖² (Böhning 1992's bound on the softmax's curvature: c_2 = ¼, else ½).
  void item_lipschitz_bounds(std::span<double> out) const override {
    const double curvature = classes_ == 2 ? 0.25 : 0.5;
    for (std::size_t i = 0; i < num_items(); ++i) {
      const Real* row = train_.row(i);
      double squares = 0.0;
      for (std::size_t j = 0; j < columns(); ++j) squares += static_cast<double>(row[j]) * static_cast<double>(row[j]);
      out[i] = curvature * squares;
    }
  }

  std::vector<std::string> metric_names() const override {
    return test_.rows() ? std::vector<std::string>{"log_predictive_density"} : std::vector<std::string>{};
  }
  /// (1/J) Σ_j log[(1/S) Σ_s p(y*_j | x*_j, β_s)] over the S draws evaluated so far.
  void evaluate_metrics(std::span<const double> theta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<PredictiveWorkspace&>(base);
    log_likelihoods(theta, test_, workspace.log_likelihoods);
    out[0] = workspace.predictive.add(workspace.log_likelihoods);
  }
  std::vector<std::string> quantity_names() const override {
    return test_.rows() ? std::vector<std::string>{"held_out_log_density"} : std::vector<std::string>{};
  }
  void evaluate_quantities(std::span<const double> theta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<PredictiveWorkspace&>(base);
    log_likelihoods(theta, test_, workspace.log_likelihoods);
    const auto& terms = workspace.log_likelihoods;
    out[0] = std::accumulate(terms.begin(), terms.end(), 0.0) / static_cast<double>(terms.size());
  }

  /// p_<label>: p(y = c | x, β) for every class.
  sgmcmc::PredictionForm prediction_form() const override {
    sgmcmc::PredictionForm form{.probabilities = true, .names = {}};
    for (std::size_t c = 0; c < classes_; ++c) form.names.push_back(fmt::format("p_{}", class_label(c)));
    return form;
  }
  std::unique_ptr<sgmcmc::PredictionRows> read_prediction_rows(const std::string& path) const override {
    const std::size_t features = columns() - train_.first_feature();
    regression::PredictionFile file = regression::read_prediction_file(path, format_, regression::LabelCoding::as_read, features);
    if (file.labelled) to_class_indices(file.rows, labels_, classes_, path);
    auto rows = std::make_unique<regression::MatrixPredictionRows<Real>>();
    rows->count = file.rows.y.size();
    rows->x = regression::design_matrix<Real>(file.rows, sgmcmc::index_range(rows->count), storage_);
    if (file.labelled) rows->responses = file.rows.y;
    return rows;
  }
  void predict_rows(std::span<const double> theta, const sgmcmc::PredictionRows& base, std::span<double> out,
                    std::span<double> log_densities) const override {
    const auto& rows = static_cast<const regression::MatrixPredictionRows<Real>&>(base);
    std::vector<double> z(classes_);
    for (std::size_t i = 0; i < rows.count; ++i) {
      const double normaliser = logits(rows.x.row(i), columns(), theta, classes_, z.data());
      for (std::size_t c = 0; c < classes_; ++c) out[i * classes_ + c] = std::exp(z[c] - normaliser);
      if (!log_densities.empty()) log_densities[i] = z[static_cast<std::size_t>(rows.x.y[i])] - normaliser;
    }
  }

private:
  std::size_t columns() const { return train_.columns(); }
  double class_label(std::size_t c) const { return labels_.first + static_cast<double>(c); }

  /// f_i = log Σ_k e^{z_k} - z_y.
  double loss(const Real* row, double y, std::span<const double> theta, double* z) const {
    const double normaliser = logits(row, columns(), theta, classes_, z);
    return normaliser - z[static_cast<std::size_t>(y)];
  }
  /// z[c] ← ∂f_i/∂z_c = p_c - 1{y = c}.
  void scores(const Real* row, double y, std::span<const double> theta, double* z) const {
    const double normaliser = logits(row, columns(), theta, classes_, z);
    for (std::size_t c = 0; c < classes_; ++c) z[c] = std::exp(z[c] - normaliser);
    z[static_cast<std::size_t>(y)] -= 1.0;
  }
  void log_likelihoods(std::span<const double> theta, const regression::DesignMatrix<Real>& x, std::vector<double>& out) const {
    std::vector<double> z(classes_);
    for (std::size_t i = 0; i < x.rows(); ++i) out[i] = -loss(x.row(i), x.y[i], theta, z.data());
  }

  Prior prior_;
  std::size_t classes_;
  ClassLabels labels_;
  std::vector<double> beta_star_;
  std::size_t all_items_;  // N; train_ holds the rows of this process's share (ModelContext::rows)
  regression::FileFormat format_;
  regression::StorageOptions storage_;
  regression::DesignMatrix<Real> train_, test_;
};

/// model.labels for categorical: "0..K-1" (the default) or "1..K".
ClassLabels read_class_labels(SectionReader settings) {
  ClassLabels labels;
  const std::string coding = settings.text("labels", "0..K-1");
  if (coding == "1..K") labels.first = 1.0;
  else if (coding != "0..K-1")
    throw sgmcmc::Error(fmt::format("{}: '{}' is not a class coding for family categorical; expected 0..K-1 or 1..K",
                                    settings.describe("labels"), coding));
  if (settings.contains("classes")) labels.classes = static_cast<std::size_t>(settings.integer_at_least("classes", 2, 2));
  return labels;
}

}  // namespace

std::unique_ptr<sgmcmc::Model> make_categorical(const sgmcmc::ModelContext& context, const Prior& prior, bool intercept,
                                                bool float_storage) {
  SectionReader settings = context.settings;
  const std::string link = settings.text("link", "logit");
  if (link != "logit")
    throw sgmcmc::Error(fmt::format("{}: '{}' is not a link of the categorical family; expected logit",
                                    settings.describe("link"), link));
  const ClassLabels labels = read_class_labels(settings);
  const std::size_t simulated_classes = labels.classes.value_or(default_simulated_classes);
  regression::refuse_counting_classes_of_a_share(context, labels.classes.has_value());
  Prepared prepared = regression::prepare(context, regression::LabelCoding::as_read,
                                          [&](std::size_t declared, bool from_prior, Rng& rng) {
                                            auto simulation = simulate(settings, prior, intercept, simulated_classes,
                                                                       declared, from_prior, rng);
                                            for (double& y : simulation.data.y) y += labels.first;  // as a file writes them
                                            return simulation;
                                          });
  prepared.storage.intercept = intercept;
  const std::string data_name = settings.optional_text("data").value_or("simulated data");
  to_class_indices(prepared.data, labels, labels.classes, data_name);
  const std::size_t classes = settings.contains("data") ? count_classes(prepared.data, labels, data_name) : simulated_classes;
  if (prepared.test_from_file) to_class_indices(prepared.test_file, labels, classes, prepared.test_file_name);
  if (float_storage) return std::make_unique<CategoricalModel<float>>(prepared, prior, classes, labels);
  return std::make_unique<CategoricalModel<double>>(prepared, prior, classes, labels);
}

}  // namespace glm
