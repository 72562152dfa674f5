// A two-parameter posterior's moments by quadrature, the independent reference of the glm
// statistical tests, an observer that keeps a chain's first two coordinates, and the check of
// the one against the other.
#pragma once
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "model_support.hpp"
#include "statistics.hpp"
#include "reading.hpp"

import sgmcmc;

namespace test {

struct GridMoments {
  double mean[2], sd[2];
  double edge_gap;  // log density: the mode's minus the largest on the grid's edge
};

/// Mean and sd of both coordinates of the density ∝ exp(log_density(x, y)) by the midpoint rule
/// on grid × grid points over [x_lo, x_hi] × [y_lo, y_hi]. The rule is accurate for a smooth
/// density negligible at the edges: edge_gap says how negligible.
template <class LogDensity>
GridMoments grid_moments(LogDensity log_density, double x_lo, double x_hi, double y_lo, double y_hi, int grid) {
  const auto x_at = [&](int a) { return x_lo + (a + 0.5) * (x_hi - x_lo) / grid; };
  const auto y_at = [&](int c) { return y_lo + (c + 0.5) * (y_hi - y_lo) / grid; };
  std::vector<double> values(static_cast<std::size_t>(grid) * grid);
  double mode = -INFINITY, edge = -INFINITY;
  for (int a = 0; a < grid; ++a)
    for (int c = 0; c < grid; ++c) {
      const double value = values[a * grid + c] = log_density(x_at(a), y_at(c));
      mode = std::max(mode, value);
      if (a == 0 || c == 0 || a == grid - 1 || c == grid - 1) edge = std::max(edge, value);
    }
  double total = 0.0, first[2] = {}, second[2] = {};
  for (int a = 0; a < grid; ++a)
    for (int c = 0; c < grid; ++c) {
      const double weight = std::exp(values[a * grid + c] - mode), point[2] = {x_at(a), y_at(c)};
      total += weight;
      for (int j = 0; j < 2; ++j) {
        first[j] += weight * point[j];
        second[j] += weight * point[j] * point[j];
      }
    }
  GridMoments moments{};
  for (int j = 0; j < 2; ++j) {
    moments.mean[j] = first[j] / total;
    moments.sd[j] = std::sqrt(second[j] / total - moments.mean[j] * moments.mean[j]);
  }
  moments.edge_gap = mode - edge;
  return moments;
}

/// Keeps θ_1 and θ_2 of every draw.
struct FirstTwoCoordinates final : sgmcmc::ChainObserver {
  std::vector<double> draws[2];
  void on_draw(const sgmcmc::Draw& draw) override {
    for (int j = 0; j < 2; ++j) draws[j].push_back(draw.theta[j]);
  }
  void on_metrics(const sgmcmc::MetricsRow&) override {}  // no held-out rows: no metrics
};

/// Runs one chain of the bundled glm plugin under `config` (seed 7, 1,000 warmup iterations, every
/// draw kept) after checking that θ's first two names are `names`; the chain must not diverge.
inline FirstTwoCoordinates run_glm_chain(const sgmcmc::RunConfig& config, const std::vector<std::string>& names,
                                         std::uint64_t iterations, std::uint64_t eval_every) {
  sgmcmc::ConfigReads reads;
  std::shared_ptr<const sgmcmc::Model> model = bundled_plugin("glm").create({sgmcmc::SectionReader(config["model"], reads["model"]), 1});
  REQUIRE(model->parameter_names() == names);
  auto chain = sgmcmc::make_chain(test::checked_plan(config, *model, std::move(reads)), model, sgmcmc::Rng(7, sgmcmc::chain_stream(0)));
  FirstTwoCoordinates recorder;
  const auto result = chain->run({.warmup = 1'000, .iterations = iterations, .thin = 1, .eval_every = eval_every}, recorder);
  REQUIRE_FALSE(result.diverged);
  return recorder;
}

/// Checks the chain's mean and variance of both coordinates against the quadrature's, each within
/// `tolerance` batch-means standard errors (batch_means_se, variance_se; each test derives its
/// tolerance in a comment). The sd is compared through the variance: sd² ± tolerance · se(sd²).
inline void check_moments(const FirstTwoCoordinates& recorder, const GridMoments& reference, double tolerance) {
  for (int j = 0; j < 2; ++j) {
    const auto& x = recorder.draws[j];
    INFO(fmt::format("coordinate {}: chain mean {} (se {}), sd {}", j, mean(x), batch_means_se(x), std::sqrt(variance(x))));
    CHECK(std::abs(mean(x) - reference.mean[j]) < tolerance * batch_means_se(x));
    CHECK(std::abs(variance(x) - reference.sd[j] * reference.sd[j]) < tolerance * variance_se(x));
  }
}

}  // namespace test
