// What mlp's configuration chooses (the network's shape, head and prior), the network it builds,
// where a chain starts, the data it simulates without model.data, and the classes of its labels.
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "labelled_rows.hpp"
#include "network.hpp"
#include "noise_prior.hpp"
#include "prepared_rows.hpp"

import sgmcmc.sdk;

namespace mlp {

/// Everything the configuration chooses besides the rows.
struct Choices {
  std::vector<std::size_t> hidden;  // model.layers
  Activation activation = Activation::tanh;
  Head head;
  std::vector<double> prior_scale{1.0};  // one for every layer, or one per layer
  bool fan_in = false;                   // model.prior_scaling = "fan_in": weights' sd s_l/sqrt(n_{l-1})
  std::optional<std::size_t> classes;  // categorical: model.classes, else inferred from the labels
  std::optional<regression::NoisePrior> noise_prior;  // gaussian with model.noise_prior: log σ sampled
};

/// The network for `features` inputs, refused naming model.layers when θ and the few vectors of
/// its size that a chain keeps (gradient, noise, the float copies) would not fit in memory.
Architecture architecture(const Choices& choices, std::size_t features, std::size_t classes, sgmcmc::SectionReader settings);

/// A chain's start: Glorot or He weights, biases 0 (choices.cpp says why).
void draw_starting_weights(const Architecture& net, std::span<double> theta, sgmcmc::Rng& rng);

/// The classes simulated data are drawn from when model.classes is not given.
inline constexpr std::size_t default_simulated_classes = 3;

/// Simulated rows from a teacher network of the configured shape (no model.data).
regression::Simulation simulate(sgmcmc::SectionReader settings, const Choices& choices, std::size_t declared,
                                bool from_prior, sgmcmc::Rng& rng);

/// Every label of `rows` (read from `where`) is a class index 0, 1, ..., K-1; `origin` says where
/// K came from (refused naming the file's line otherwise).
void check_class_labels(const regression::LabelledRows& rows, const std::string& where, std::size_t classes,
                        const std::string& origin);

/// The number of classes: model.classes, or one more than the largest label of the training data
/// and the test file. Every label must be a class index 0, 1, ..., K-1.
std::size_t count_classes(const Choices& choices, const regression::Prepared& prepared, sgmcmc::SectionReader settings);

}  // namespace mlp
