// glm's family `categorical` with K = 3 classes: MALA with Metropolis–Hastings against the
// posterior computed by quadrature on a grid, from the multinomial-logit density written here
// (softmax probabilities as ratios of exponentials, not the plugin's log-sum-exp form).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "grid_quadrature.hpp"
#include "statistics.hpp"
#include "support.hpp"
#include "model_support.hpp"

namespace {

// The model: one feature, no intercept, so θ = (β_0, β_1): z_0 = β_0 x, z_1 = β_1 x, z_2 = 0 (the
// reference); p(y = c | x) = e^{z_c} / (e^{z_0} + e^{z_1} + 1); β_c ~ N(0, s²).
constexpr double prior_sd = 2.0, true_beta[2] = {1.0, -0.5};
constexpr int rows = 60;

struct Row {
  double x;
  int y;
};

std::vector<Row> simulate_rows() {
  sgmcmc::Rng rng(17, 0);
  std::vector<Row> data;
  for (int i = 0; i < rows; ++i) {
    const double x = -2.0 + 4.0 * (i + 0.5) / rows;
    const double w[3] = {std::exp(true_beta[0] * x), std::exp(true_beta[1] * x), 1.0};
    const double u = rng.uniform() * (w[0] + w[1] + w[2]);
    data.push_back({x, u < w[0] ? 0 : u < w[0] + w[1] ? 1 : 2});
  }
  return data;
}

double log_posterior(const std::vector<Row>& data, double b0, double b1) {
  double value = -0.5 * (b0 * b0 + b1 * b1) / (prior_sd * prior_sd);
  for (const auto& [x, y] : data) {
    const double w[3] = {std::exp(b0 * x), std::exp(b1 * x), 1.0};
    value += std::log(w[y] / (w[0] + w[1] + w[2]));
  }
  return value;
}

/// Posterior mean and sd of (β_0, β_1) by the midpoint rule on an 800 × 800 grid over [lo, hi]².
test::GridMoments quadrature(const std::vector<Row>& data, double lo, double hi) {
  return test::grid_moments([&](double b0, double b1) { return log_posterior(data, b0, b1); }, lo, hi, lo, hi, 800);
}

}  // namespace

TEST_CASE("glm plugin: categorical with three classes has the posterior computed by quadrature") {
  const auto data = simulate_rows();
  std::string csv;
  for (const auto& [x, y] : data) csv += fmt::format("{},{:.17g}\n", y, x);
  test::TempDir dir;

  const test::GridMoments reference = quadrature(data, -6.0, 9.0);
  INFO(fmt::format("reference: beta.0 {} ± {}, beta.1 {} ± {}; edge gap {}", reference.mean[0], reference.sd[0],
                   reference.mean[1], reference.sd[1], reference.edge_gap));
  // Far from the data the prior N(0, 2²) decides the tails, so they fall slowly; an edge 25 nats
  // below the mode leaves outside the grid a mass of order e^-25 times a few cells' worth: 1e-10,
  // nothing beside the chain's Monte Carlo error of order 1e-3.
  REQUIRE(reference.edge_gap > 25.0);

  // MALA preconditioned by the reference's variances (M = diag(1/sd²)); MH makes it exact.
  auto config = sgmcmc::parse_config(fmt::format(R"([model]
data = {}
test_size = 0
family = "categorical"
intercept = false
prior_scale = {}
[estimator]
name = "exact"
[integrator]
name = "mala"
step_size = 0.8
mass = [{}, {}]
[corrector]
name = "mh"
)",
                                                 test::quoted(dir.write("classes.csv", csv)), prior_sd,
                                                 1.0 / (reference.sd[0] * reference.sd[0]),
                                                 1.0 / (reference.sd[1] * reference.sd[1])),
                                     "test.toml");
  const auto recorder = test::run_glm_chain(config, {"beta.0.1", "beta.1.1"}, 100'000, 10);

  // Quantities: the chain's mean and variance of β_0 and β_1. Reference: the quadrature above.
  // Tolerance: the Monte Carlo error by 100 batch means of 1,000 draws (batch_means_se,
  // variance_se); |difference| < 4.5 se fails by chance with probability ≈ 7e-6 per quantity
  // under the normal approximation, and still below 1e-4 if the estimated se is 15% low (the sd
  // of an se from 100 batches is ≈ 7%). The quadrature's error is far below: the midpoint rule
  // on a grid of spacing 0.019, 16+ points per posterior sd (0.30 and 0.39), errs by O(h²) ≈ 1e-3 sd.
  test::check_moments(recorder, reference, 4.5);
}
