// Bayesian multilayer perceptron chosen in the configuration (no C++): hidden layers of widths
// `model.layers` with one activation, an output head from `model.family` (categorical softmax,
// bernoulli logit, gaussian with a fixed noise_sd or log σ sampled under model.noise_prior, as glm's)
// and a normal prior N(0, prior_scale²) on every
// weight and bias (a scale per layer if given; with prior_scaling = "fan_in" a weight's sd is
// s_l/sqrt(n_{l-1})). Potentials (README.md beside this file has the equations):
//   f_0(θ) = Σ_l |W_l|² n_{l-1}^c / (2 s_l²) + |b_l|² / (2 s_l²)   (c = 1 with fan_in, else 0)
//   f_i(θ) = -log p(y_i | net(x_i; θ))
//   (+ the noise prior's f_0(u), Jacobian included: ../regression/noise_prior.hpp)
// The passes over a batch are network.hpp's, written with the SDK's sgmcmc/layers.hpp. Data come
// through the readers `glm` and `logistic` share (../regression/): CSV or LIBSVM, the label first.
#include <sgmcmc/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>
#include <fmt/format.h>

#include "choices.hpp"
#include "labelled_rows.hpp"
#include "network.hpp"
#include "prepared_rows.hpp"

import sgmcmc.sdk;

namespace mlp {
namespace {

using sgmcmc::Batch;
using sgmcmc::Rng;
using sgmcmc::SectionReader;

// ---- Rows for the network -----------------------------------------------------------------------

/// The given rows of `data` in the storage type, with their responses for the family.
template <class Real>
Rows<Real> network_rows(const regression::LabelledRows& data, std::span<const std::size_t> chosen, Family family) {
  Rows<Real> rows;
  rows.features = data.features;
  rows.x.resize(chosen.size() * data.features);
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    const std::size_t i = chosen[k];
    regression::copy_features(data, i, &rows.x[k * data.features]);
    if (family == Family::categorical)
      rows.classes.push_back(static_cast<std::uint32_t>(data.y[i]));
    else
      rows.y.push_back(family == Family::bernoulli ? (data.y[i] > 0 ? 1.0 : 0.0) : data.y[i]);  // ±1 → 0/1
  }
  return rows;
}

// ---- The model ------------------------------------------------------------------------------------

/// A chain's state: the passes' buffers, the running posterior predictive of the test set
/// (log density and, for classes, the summed probabilities behind the accuracy), and one draw's
/// per-row scratch.
template <class Real>
struct MlpWorkspace final : sgmcmc::Workspace {
  MlpWorkspace(const Network<Real>& network, std::size_t test_rows, std::size_t outputs)
      : scratch(network.scratch()), predictive(test_rows), probability_sum(test_rows * outputs),
        log_densities(test_rows), probabilities(test_rows * outputs) {}
  Scratch<Real> scratch;
  sgmcmc::PredictiveAverage predictive;
  std::vector<double> probability_sum;  // Σ over draws of p(class c | x*_j) (categorical), p(y = 1 | x*_j) (bernoulli)
  std::vector<double> log_densities, probabilities;  // scratch: not state
  void save_state(sgmcmc::StateWriter& out) const override {
    predictive.save_state(out);
    out.section("predictive probabilities");
    out.numbers(probability_sum);
  }
  void restore_state(sgmcmc::StateReader& in) override {
    predictive.restore_state(in);
    in.section("predictive probabilities");
    in.numbers(probability_sum, probability_sum.size());
  }
  void restart_averages() override {
    predictive.restart();
    std::fill(probability_sum.begin(), probability_sum.end(), 0.0);
  }
};

constexpr sgmcmc::Capabilities mlp_capabilities{.exact_log_likelihood = true, .per_item_gradients = true,
                                                .simulation = true, .prediction = true, .row_shares = true};

/// How the model's data were read, which files to predict on are read with too.
struct Reading {
  regression::FileFormat format;
  regression::LabelCoding coding;  // bernoulli's labels; the others as read
};

template <class Real>
class MlpModel final : public sgmcmc::Model {
public:
  MlpModel(Network<Real> network, Rows<Real> train, std::size_t all_train, Rows<Real> test,
           std::span<const double> prior_scale, bool fan_in, std::optional<regression::NoisePrior> noise_prior,
           Reading reading)
      : network_(std::move(network)), train_(std::move(train)), all_train_(all_train), test_(std::move(test)),
        noise_prior_(std::move(noise_prior)), reading_(reading) {
    for (std::size_t l = 0; l < net().layers(); ++l) {
      const double scale = prior_scale[prior_scale.size() == 1 ? 0 : l];
      bias_precision_.push_back(1.0 / (scale * scale));
      // Fan-in scaling: var(W_l) = s_l²/n_{l-1}, so precision n_{l-1}/s_l².
      const double fan = fan_in ? static_cast<double>(net().inputs(l)) : 1.0;
      weight_precision_.push_back(fan / (scale * scale));
    }
  }

  std::size_t dimension() const override { return network_.dimension(); }
  std::size_t num_items() const override { return train_.size(); }
  std::size_t total_items() const override { return all_train_; }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names;
    for (std::size_t l = 0; l < net().layers(); ++l) {
      for (std::size_t i = 1; i <= net().inputs(l); ++i)
        for (std::size_t j = 1; j <= net().outputs(l); ++j) names.push_back(fmt::format("w{}.{}.{}", l + 1, i, j));
      for (std::size_t j = 1; j <= net().outputs(l); ++j) names.push_back(fmt::format("b{}.{}", l + 1, j));
    }
    if (noise_prior_) names.emplace_back(regression::log_noise_sd_name);
    return names;
  }
  /// float-gradient (the float chain) for float storage without a sampled σ, whose u stays double.
  sgmcmc::Capabilities capabilities() const override {
    auto capabilities = mlp_capabilities;
    capabilities.float_gradient = std::is_same_v<Real, float> && !noise_prior_;
    return capabilities;
  }

  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override {
    return std::make_unique<MlpWorkspace<Real>>(network_, test_.size(), classifier() ? outputs() : 0);
  }

  void initial_point(std::span<double> theta, Rng& rng) const override { draw_starting_weights(net(), theta, rng); }

  /// Σ_l |W_l|² τ_l/2 + |b_l|² / (2 s_l²), τ_l the weights' precision (1/s_l², or n_{l-1}/s_l² with
  /// fan-in scaling). With one precision for the layer, one sum over W_l and b_l together (the
  /// order of the sums as before prior_scaling existed, so those runs' draws are unchanged);
  /// and the sampled noise sd's prior on u = log σ.
  double prior_potential(std::span<const double> theta) const override {
    const auto squared_norm = [](std::span<const double> v) { return std::inner_product(v.begin(), v.end(), v.begin(), 0.0); };
    double total = 0.0;
    for (std::size_t l = 0; l < net().layers(); ++l) {
      const auto layer = layer_parameters(theta, l);
      const std::size_t weights = net().inputs(l) * net().outputs(l);
      if (weight_precision_[l] == bias_precision_[l])
        total += 0.5 * bias_precision_[l] * squared_norm(layer);
      else
        total += 0.5 * weight_precision_[l] * squared_norm(layer.first(weights)) +
                 0.5 * bias_precision_[l] * squared_norm(layer.subspan(weights));
    }
    if (noise_prior_) total += noise_prior_->potential(theta.back());
    return total;
  }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    for_each_prior_block([&](std::size_t first, std::size_t last, double precision) {
      for (std::size_t j = first; j < last; ++j) gradient[j] += precision * theta[j];
    });
    if (noise_prior_) gradient.back() += noise_prior_->derivative(theta.back());
  }

  void add_data_gradient(std::span<const double> theta, const Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace& base, Rng&) const override {
    network_.batch(theta, train_, batch.items, batch.weights, gradient, scratch(base));
  }
  double data_potential(std::span<const double> theta, const Batch& batch, sgmcmc::Workspace& base) const override {
    return network_.batch(theta, train_, batch.items, batch.weights, {}, scratch(base));
  }
  /// One forward pass for both: the gradient's pass sums the potential on the way (the head's
  /// sum is the same with or without its adjoint), which add_data_gradient drops.
  std::optional<double> data_potential_and_gradient(std::span<const double> theta, const Batch& batch,
                                                    std::span<double> gradient, sgmcmc::Workspace& base,
                                                    Rng&) const override {
    return network_.batch(theta, train_, batch.items, batch.weights, gradient, scratch(base));
  }
  /// gradient ← scale · Σ_k ∇f_{items[k]}(θ) + ∇f_0(θ) in float: the passes on θ as given, then
  /// the scaling and the prior's τθ in one pass over the gradient.
  void scaled_gradient_float(std::span<const float> theta, std::span<const std::size_t> items, double scale,
                             std::span<float> gradient, sgmcmc::Workspace& base) const override {
    if constexpr (std::is_same_v<Real, float>) {
      network_.gradient_in_storage(theta, train_, items, gradient, scratch(base));
      const auto factor = static_cast<float>(scale);
      for_each_prior_block([&](std::size_t first, std::size_t last, double precision) {
        const auto tau = static_cast<float>(precision);
        for (std::size_t j = first; j < last; ++j) gradient[j] = factor * gradient[j] + tau * theta[j];
      });
    } else {
      sgmcmc::Model::scaled_gradient_float(theta, items, scale, gradient, base);  // refuses: no float-gradient
    }
  }
  void item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace& base) const override {
    network_.item_gradients(theta, train_, items, out, scratch(base));
  }

  std::vector<std::string> metric_names() const override {
    if (!test_.size()) return {};
    if (!classifier()) return {"log_predictive_density"};
    return {"log_predictive_density", "accuracy", "ece"};
  }

  /// The running posterior predictive over the S draws evaluated so far:
  /// (1/J) Σ_j log[(1/S) Σ_s p(y*_j | x*_j, θ_s)], the share of test rows whose most probable
  /// class under (1/S) Σ_s p(· | x*_j, θ_s) is y*_j, and that prediction's calibration error.
  void evaluate_metrics(std::span<const double> theta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<MlpWorkspace<Real>&>(base);
    evaluate_test_rows(theta, workspace);
    out[0] = workspace.predictive.add(workspace.log_densities);
    if (!classifier()) return;
    for (std::size_t j = 0; j < workspace.probabilities.size(); ++j)
      workspace.probability_sum[j] += workspace.probabilities[j];
    const auto draws = static_cast<double>(workspace.predictive.draws());
    out[1] = accuracy(workspace.probability_sum, draws);
    out[2] = expected_calibration_error(workspace.probability_sum, draws);
  }

  std::vector<std::string> quantity_names() const override {
    if (!test_.size()) return {};
    if (!classifier()) return {"held_out_log_density"};
    return {"held_out_log_density", "held_out_accuracy"};
  }

  /// One draw's mean held-out log density (1/J) Σ_j log p(y*_j | x*_j, θ) and its accuracy.
  void evaluate_quantities(std::span<const double> theta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<MlpWorkspace<Real>&>(base);
    evaluate_test_rows(theta, workspace);
    const auto& terms = workspace.log_densities;
    out[0] = std::accumulate(terms.begin(), terms.end(), 0.0) / static_cast<double>(terms.size());
    if (classifier()) out[1] = accuracy(workspace.probabilities, 1.0);
  }

  /// p_0 .. p_{K-1} (categorical), p = p(y = 1) (bernoulli), or the mean and variance (gaussian).
  sgmcmc::PredictionForm prediction_form() const override {
    if (network_.head().family == Family::gaussian) return {.probabilities = false, .names = {"mean", "variance"}};
    if (network_.head().family == Family::bernoulli) return {.probabilities = true, .names = {"p"}};
    sgmcmc::PredictionForm form{.probabilities = true, .names = {}};
    for (std::size_t c = 0; c < outputs(); ++c) form.names.push_back(fmt::format("p_{}", c));
    return form;
  }
  std::unique_ptr<sgmcmc::PredictionRows> read_prediction_rows(const std::string& path) const override {
    const bool categorical = network_.head().family == Family::categorical;
    auto file = regression::read_prediction_file(path, reading_.format,
                                                 categorical ? regression::LabelCoding::as_read : reading_.coding,
                                                 net().inputs(0));
    if (file.labelled && categorical) check_class_labels(file.rows, path, outputs(), "the model's");
    auto rows = std::make_unique<MlpPredictionRows>();
    rows->count = file.rows.y.size();
    rows->rows = network_rows<Real>(file.rows, sgmcmc::index_range(rows->count), network_.head().family);
    if (file.labelled)
      rows->responses = categorical ? std::vector<double>(file.rows.y)
                                    : std::vector<double>(rows->rows.y.begin(), rows->rows.y.end());
    return rows;
  }
  void predict_rows(std::span<const double> theta, const sgmcmc::PredictionRows& base, std::span<double> out,
                    std::span<double> log_densities) const override {
    auto scratch = network_.scratch();
    evaluate_rows(theta, static_cast<const MlpPredictionRows&>(base).rows, scratch, log_densities, out);
  }

private:
  struct MlpPredictionRows final : sgmcmc::PredictionRows {
    Rows<Real> rows;
  };
  const Architecture& net() const { return network_.architecture(); }
  /// Layer l's W_l and b_l, contiguous in θ.
  std::span<const double> layer_parameters(std::span<const double> theta, std::size_t l) const {
    return theta.subspan(net().weights_at(l), (net().inputs(l) + 1) * net().outputs(l));
  }
  std::size_t outputs() const { return net().outputs(net().layers() - 1); }
  bool classifier() const { return network_.head().family != Family::gaussian; }
  static Scratch<Real>& scratch(sgmcmc::Workspace& base) { return static_cast<MlpWorkspace<Real>&>(base).scratch; }

  /// log p(y*_j | x*_j, θ) of every test row into the workspace, and for a classifier the class
  /// probabilities (categorical: J × K) or p(y = 1) (bernoulli).
  void evaluate_test_rows(std::span<const double> theta, MlpWorkspace<Real>& workspace) const {
    evaluate_rows(theta, test_, workspace.scratch, workspace.log_densities,
                  classifier() ? std::span<double>(workspace.probabilities) : std::span<double>());
  }

  /// log p(y_j | x_j, θ) of every row of `rows` into `log_densities` (when not empty), and each
  /// row's prediction into `predictions` (when not empty): the class probabilities (categorical,
  /// rows × K), p(y = 1) (bernoulli), or the mean and variance (gaussian, rows × 2).
  void evaluate_rows(std::span<const double> theta, const Rows<Real>& rows, Scratch<Real>& scratch,
                     std::span<double> log_densities, std::span<double> predictions) const {
    const auto every = sgmcmc::index_range(rows.size());
    for (std::size_t begin = 0; begin < every.size(); begin += network_.chunk) {
      const auto items = std::span(every).subspan(begin, std::min(network_.chunk, every.size() - begin));
      const auto out = network_.outputs(theta, rows, items, scratch);
      for (std::size_t k = 0; k < items.size(); ++k) {
        const std::size_t j = items[k];
        if (!log_densities.empty()) log_densities[j] = -network_.row_potential(out, k, scratch);
        if (predictions.empty()) continue;
        if (network_.head().family == Family::categorical) {
          const double normaliser = sgmcmc::layers::log_sum_exp(out.row(k), out.cols);
          for (std::size_t c = 0; c < out.cols; ++c) predictions[j * out.cols + c] = std::exp(out(k, c) - normaliser);
        } else if (network_.head().family == Family::bernoulli) {
          predictions[j] = 1.0 / (1.0 + std::exp(-static_cast<double>(out(k, 0))));  // σ(z) = p(y = 1)
        } else {
          predictions[2 * j] = static_cast<double>(out(k, 0));
          predictions[2 * j + 1] = scratch.noise_sd * scratch.noise_sd;  // θ's σ
        }
      }
    }
  }
  /// Test row j's most probable class under `probabilities` summed over `draws` draws (J × K for
  /// categorical, J values of p(y = 1) for bernoulli): whether it is the row's label, and its
  /// probability (the confidence).
  struct Prediction {
    bool right;
    double confidence;
  };
  Prediction predict(std::span<const double> probabilities, double draws, std::size_t j) const {
    if (network_.head().family == Family::categorical) {
      const std::size_t classes = outputs();
      const auto row = probabilities.subspan(j * classes, classes);
      const auto most = std::max_element(row.begin(), row.end());
      return {static_cast<std::size_t>(most - row.begin()) == test_.classes[j], *most / draws};
    }
    const double p = probabilities[j] / draws;
    return {(p > 0.5) == (test_.y[j] == 1.0), std::max(p, 1.0 - p)};
  }

  /// The share of test rows whose most probable class is their label.
  double accuracy(std::span<const double> probabilities, double draws) const {
    std::size_t right = 0;
    for (std::size_t j = 0; j < test_.size(); ++j) right += predict(probabilities, draws, j).right;
    return static_cast<double>(right) / static_cast<double>(test_.size());
  }

  /// Expected calibration error with 10 equal-width bins of confidence (Guo et al. 2017, §2):
  /// Σ_b (|B_b|/J) |accuracy(B_b) - confidence(B_b)| = (1/J) Σ_b |Σ_{j∈B_b} (1{right_j} - conf_j)|.
  double expected_calibration_error(std::span<const double> probabilities, double draws) const {
    constexpr std::size_t bins = 10;
    double gap[bins] = {};
    for (std::size_t j = 0; j < test_.size(); ++j) {
      const auto [right, confidence] = predict(probabilities, draws, j);
      const auto bin = std::min(bins - 1, static_cast<std::size_t>(confidence * bins));  // confidence 1 in the last
      gap[bin] += (right ? 1.0 : 0.0) - confidence;
    }
    double total = 0.0;
    for (const double g : gap) total += std::abs(g);
    return total / static_cast<double>(test_.size());
  }

  Network<Real> network_;
  Rows<Real> train_;       // the rows of this process's share (ModelContext::rows): every training row in one process
  std::size_t all_train_;  // N, the training rows of every share together
  Rows<Real> test_;
  std::optional<regression::NoisePrior> noise_prior_;  // gaussian with a sampled σ
  Reading reading_;
  /// Calls add(first, last, τ) for each block of θ[first, last) under one normal prior of precision
  /// τ: each layer's weights, then its biases.
  template <class Add>
  void for_each_prior_block(Add add) const {
    for (std::size_t l = 0; l < net().layers(); ++l) {
      add(net().weights_at(l), net().bias_at(l), weight_precision_[l]);
      add(net().bias_at(l), net().bias_at(l) + net().outputs(l), bias_precision_[l]);
    }
  }
  std::vector<double> weight_precision_, bias_precision_;  // of each layer: 1/s_l² (weights: n_{l-1}/s_l² with fan_in)
};

// ---- Configuration ------------------------------------------------------------------------------

Choices read_choices(SectionReader settings) {
  Choices choices;
  for (const double width : settings.numbers("layers", {50.0})) {
    if (width < 1 || width != std::floor(width) || width > 1e6)
      throw sgmcmc::Error(fmt::format("{}: {} is not a layer width; expected whole numbers ≥ 1 (e.g. [50] or [400, 400])",
                                      settings.describe("layers"), width));
    choices.hidden.push_back(static_cast<std::size_t>(width));
  }
  const std::string activation = settings.text("activation", "tanh");
  if (!sgmcmc::layers::parse_activation(activation, choices.activation))
    throw sgmcmc::Error(fmt::format("{}: '{}' is not an activation; expected tanh, relu or gelu",
                                    settings.describe("activation"), activation));
  const std::string family = settings.text("family", "categorical");
  if (family != "gaussian") regression::refuse_noise_prior(settings, family);
  if (family == "categorical") {
    choices.head.family = Family::categorical;
    if (settings.contains("classes"))
      choices.classes = static_cast<std::size_t>(settings.integer_at_least("classes", 2, 2));
  } else if (family == "bernoulli") {
    choices.head.family = Family::bernoulli;
  } else if (family == "gaussian") {
    choices.head.family = Family::gaussian;
    const auto noise = regression::read_gaussian_noise(settings);
    choices.head.noise_sd = noise.fixed_sd;
    choices.head.sampled_noise = noise.sampled.has_value();
    choices.noise_prior = noise.sampled;
  } else {
    throw sgmcmc::Error(fmt::format("{}: '{}' is not an mlp family; expected categorical, bernoulli or gaussian",
                                    settings.describe("family"), family));
  }
  choices.prior_scale = settings.positive_number_or_numbers("prior_scale", 1.0);
  const std::size_t layers = choices.hidden.size() + 1;
  if (choices.prior_scale.size() != 1 && choices.prior_scale.size() != layers)
    throw sgmcmc::Error(fmt::format("{}: {} scales for {} layers ({} hidden and the output); give one number, or one "
                                    "per layer",
                                    settings.describe("prior_scale"), choices.prior_scale.size(), layers,
                                    choices.hidden.size()));
  const std::string scaling = settings.text("prior_scaling", "none");
  if (scaling != "none" && scaling != "fan_in")
    throw sgmcmc::Error(fmt::format("{}: '{}' is not a prior scaling; expected none (every weight N(0, s_l²)) or fan_in "
                                    "(layer l's weights N(0, s_l²/n_{{l-1}}), n_{{l-1}} its inputs)",
                                    settings.describe("prior_scaling"), scaling));
  choices.fan_in = scaling == "fan_in";
  return choices;
}

template <class Real>
std::unique_ptr<sgmcmc::Model> build(const regression::Prepared& prepared, const Choices& choices, std::size_t classes,
                                     SectionReader settings, Reading reading) {
  const auto& test_source = prepared.test_from_file ? prepared.test_file : prepared.data;
  Network<Real> network(architecture(choices, prepared.data.features, classes, settings), choices.head);
  return std::make_unique<MlpModel<Real>>(std::move(network),
                                          network_rows<Real>(prepared.data, prepared.train, choices.head.family),
                                          prepared.all_train,
                                          network_rows<Real>(test_source, prepared.test, choices.head.family),
                                          choices.prior_scale, choices.fan_in, choices.noise_prior, reading);
}

sgmcmc::PluginInfo mlp_info() {
  return {.name = "mlp",
          .description =
              "Bayesian multilayer perceptron chosen in the configuration: hidden layers (layers, [50]) with one "
              "activation (tanh|relu|gelu; tanh), an output head (family: categorical softmax with classes inferred "
              "from the labels 0..K-1 unless given, bernoulli logit with labels as glm's, gaussian with a fixed "
              "noise_sd 1 or log sigma sampled under noise_prior as glm's), a normal prior N(0, prior_scale²) on every weight and bias (prior_scale 1, or one per layer; prior_scaling = "
              "\"fan_in\" divides layer l's weights' sd by sqrt(its inputs)). Forward and "
              "backward passes over the whole batch as matrix products (OpenBLAS); starts at a Glorot/He draw from "
              "the chain's stream. Keys: layers, activation, family, classes, noise_sd, noise_prior (half_normal|"
              "half_cauchy|half_student_t|exponential|flat), noise_prior_scale (1), noise_prior_df, prior_scale, prior_scaling (none|fan_in), data (CSV or "
              "LIBSVM, label first, .gz or plain), test_data, test_size (0.1), subsample (1.0), format "
              "(auto|libsvm|csv), labels (bernoulli: auto|0/1|1/2|-1/+1), features (LIBSVM width, or the simulated "
              "width: 10), n (1000 simulated rows), storage (double|float)",
          .parameters = "w<l>.<i>.<j>: the weight from input i to unit j of layer l; b<l>.<j>: unit j's bias; "
                        "log_noise_sd (gaussian with noise_prior): log sigma",
          .capabilities = mlp_capabilities,
          .no_prior_simulation = "a network's weights are not identifiable (hidden units can be permuted), so "
                                 "their ranks among posterior draws say nothing"};
}

std::unique_ptr<sgmcmc::Model> make_mlp(const sgmcmc::ModelContext& context) {
  SectionReader settings = context.settings;
  Choices choices = read_choices(settings);
  const std::string storage = settings.text("storage", "double");
  if (storage != "double" && storage != "float")
    throw sgmcmc::Error(fmt::format("{}: '{}' is not a storage type; expected double or float",
                                    settings.describe("storage"), storage));
  auto coding = regression::LabelCoding::as_read;
  if (choices.head.family == Family::bernoulli)
    coding = regression::parse_label_coding(settings.text("labels", "auto"), settings.describe("labels"));
  if (choices.head.family == Family::categorical) regression::refuse_counting_classes_of_a_share(context, choices.classes.has_value());
  const regression::Prepared prepared =
      regression::prepare(context, coding, [&](std::size_t declared, bool from_prior, Rng& rng) {
        return simulate(settings, choices, declared, from_prior, rng);
      });
  if (choices.head.family == Family::categorical && !choices.classes && !settings.contains("data"))
    choices.classes = default_simulated_classes;  // what the simulation drew from, whichever labels came out
  const std::size_t classes =
      choices.head.family == Family::categorical ? count_classes(choices, prepared, settings) : 1;
  const Reading reading{prepared.format, coding};
  if (storage == "float") return build<float>(prepared, choices, classes, settings, reading);
  return build<double>(prepared, choices, classes, settings, reading);
}

}  // namespace
}  // namespace mlp

SGMCMC_MODEL_PLUGIN(mlp::mlp_info, mlp::make_mlp)
