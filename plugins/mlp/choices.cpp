// mlp's choices, start and simulated data (choices.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "choices.hpp"

import sgmcmc.sdk;

namespace mlp {

using sgmcmc::Rng;
using sgmcmc::SectionReader;

namespace {
std::size_t output_width(const Choices& choices, std::size_t classes) {
  return choices.head.family == Family::categorical ? classes : 1;
}
}  // namespace

Architecture architecture(const Choices& choices, std::size_t features, std::size_t classes, SectionReader settings) {
  std::vector<std::size_t> widths{features};
  widths.insert(widths.end(), choices.hidden.begin(), choices.hidden.end());
  widths.push_back(output_width(choices, classes));
  Architecture net(std::move(widths), choices.activation);
  sgmcmc::require_memory(4.0 * static_cast<double>(net.dimension), sizeof(double),
                         fmt::format("{}: a network of {} parameters, 4 vectors of them", settings.describe("layers"),
                                     net.dimension));
  return net;
}

/// Weights at the scale that keeps the activations' variance from layer to layer (θ = 0 is a
/// saddle of every such network: all hidden units alike, every gradient of a hidden weight zero):
/// W_l ~ N(0, 2/(in + out)) for tanh (Glorot & Bengio 2010, eq. 16, in its normal form) and
/// N(0, 2/in) for relu and gelu (He et al. 2015, eq. 10); biases 0.
void draw_starting_weights(const Architecture& net, std::span<double> theta, Rng& rng) {
  std::fill(theta.begin(), theta.end(), 0.0);
  for (std::size_t l = 0; l < net.layers(); ++l) {
    const double in = static_cast<double>(net.inputs(l)), out = static_cast<double>(net.outputs(l));
    const double sd = std::sqrt(net.activation == Activation::tanh ? 2.0 / (in + out) : 2.0 / in);
    auto weights = theta.subspan(net.weights_at(l), net.inputs(l) * net.outputs(l));
    rng.fill_normal(weights);
    for (double& w : weights) w *= sd;
  }
}

// ---- Simulated data (no model.data) -------------------------------------------------------------
// n rows (1000) of `features` (10) standard normal features; the responses from a teacher network
// of the configured shape with weights drawn as a chain's start is (draw_starting_weights), so
// its outputs are of order 1: a class from the softmax (model.classes, 3 unless given), a 0/1 draw,
// or the mean plus N(0, noise_sd²) (σ* = 1 when σ is sampled).
namespace {
constexpr std::int64_t default_rows = 1000;
constexpr std::size_t default_features = 10;
}  // namespace

regression::Simulation simulate(SectionReader settings, const Choices& choices, std::size_t declared, bool from_prior,
                                Rng& rng) {
  if (from_prior)
    throw sgmcmc::Error(fmt::format("{}: mlp does not simulate from a prior draw (its weights are not identifiable: "
                                    "hidden units can be permuted)",
                                    settings.describe("simulate_from_prior")));
  const auto rows = static_cast<std::size_t>(settings.integer_at_least("n", default_rows, 2));
  const std::size_t features = declared ? declared : default_features;
  sgmcmc::require_memory(static_cast<double>(rows) * static_cast<double>(features + 1), sizeof(double),
                         "model.n × model.features simulated values");
  const std::size_t classes = choices.classes.value_or(default_simulated_classes);
  const Network<double> teacher(architecture(choices, features, classes, settings), choices.head);
  std::vector<double> theta(teacher.dimension());  // a sampled u = log σ stays 0: σ* = noise_sd's default 1
  draw_starting_weights(teacher.architecture(), theta, rng);

  regression::Simulation simulation;
  regression::LabelledRows& data = simulation.data;
  data = {std::vector<double>(rows), std::vector<double>(rows * features), features};
  rng.fill_normal(data.x);
  Rows<double> all{std::move(data.x), features, std::vector<std::uint32_t>(rows), std::vector<double>(rows)};  // lent
  auto scratch = teacher.scratch();
  const auto every = sgmcmc::index_range(rows);
  for (std::size_t begin = 0; begin < rows; begin += teacher.chunk) {
    const auto items = std::span(every).subspan(begin, std::min(teacher.chunk, rows - begin));
    const auto out = teacher.outputs(theta, all, items, scratch);
    for (std::size_t k = 0; k < items.size(); ++k) {
      double& y = data.y[items[k]];
      if (choices.head.family == Family::categorical) {
        std::vector<double> p(out.cols);
        const double normaliser = sgmcmc::layers::log_sum_exp(out.row(k), out.cols);
        for (std::size_t c = 0; c < out.cols; ++c) p[c] = std::exp(out(k, c) - normaliser);
        for (std::size_t c = 1; c < p.size(); ++c) p[c] += p[c - 1];
        y = static_cast<double>(rng.index_from_cumulative(p));
      } else if (choices.head.family == Family::bernoulli) {
        y = rng.uniform() < 1.0 / (1.0 + std::exp(-out(k, 0))) ? 1.0 : -1.0;  // coded as the reader codes labels
      } else {
        y = out(k, 0) + choices.head.noise_sd * rng.normal();
      }
    }
  }
  data.x = std::move(all.x);
  return simulation;
}

void check_class_labels(const regression::LabelledRows& rows, const std::string& where, std::size_t classes,
                        const std::string& origin) {
  for (std::size_t i = 0; i < rows.y.size(); ++i) {
    const double label = rows.y[i];
    if (label < 0 || label != std::floor(label) || label >= static_cast<double>(classes))
      throw sgmcmc::Error(fmt::format("{}: the label {} is not a class; family categorical needs a class index 0, 1, "
                                      "..., {} ({} classes, {})",
                                      regression::row_place(rows, i, where), label, classes - 1, classes, origin));
  }
}

std::size_t count_classes(const Choices& choices, const regression::Prepared& prepared, SectionReader settings) {
  const auto check = [&](const regression::LabelledRows& rows, const std::string& where, std::size_t classes) {
    check_class_labels(rows, where, classes, choices.classes ? "model.classes" : "inferred from the training labels");
  };
  const std::string data_name = settings.optional_text("data").value_or("simulated data");
  std::size_t classes = 0;
  if (choices.classes) {
    classes = *choices.classes;
  } else {
    double largest = 0;
    for (const double label : prepared.data.y) largest = std::max(largest, label);
    if (largest < 1 || largest != std::floor(largest) || largest > 1e6)
      throw sgmcmc::Error(fmt::format("{}: the largest label is {}; family categorical needs class indices 0, 1, ..., "
                                      "K-1 with K ≥ 2 (or set model.classes)",
                                      data_name, largest));
    classes = static_cast<std::size_t>(largest) + 1;
  }
  check(prepared.data, data_name, classes);
  if (prepared.test_from_file) check(prepared.test_file, *settings.optional_text("test_data"), classes);
  return classes;
}

}  // namespace mlp
