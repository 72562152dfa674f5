// The glm plugin's gaussian family with its noise sd sampled (model.noise_prior): θ = (β, u = log σ).
// MALA with Metropolis–Hastings on 40 simulated rows against the posterior computed by quadrature
// on a grid, written from the sufficient statistics Σx², Σxy, Σy² (not the plugin's sum over
// rows) and the half-Cauchy density of σ.
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <numbers>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "grid_quadrature.hpp"
#include "statistics.hpp"
#include "support.hpp"
#include "model_support.hpp"

namespace {

// The model: y_i ~ N(β x_i, σ²) (intercept = false, so that β is the one coefficient),
// β ~ N(0, s²), σ ~ half-Cauchy(0, c): p(σ) = 2/(π c (1 + σ²/c²)) on σ > 0.
constexpr double prior_sd = 2.0, cauchy_scale = 0.5;
constexpr double true_beta = 0.7, true_sigma = 0.8;
constexpr int rows = 40;

struct Data {
  std::vector<double> x, y;
};

Data simulate(sgmcmc::Rng& rng) {
  Data data;
  for (int i = 0; i < rows; ++i) {
    data.x.push_back(rng.normal());
    data.y.push_back(true_beta * data.x.back() + true_sigma * rng.normal());
  }
  return data;
}

/// Posterior mean and sd of (β, u) by the midpoint rule on an 800 × 800 grid (grid_moments; the
/// density is smooth and negligible at the edges: edge_gap says how much). With σ = e^u,
//   log p(β, u | y) = -n u - (Σy² - 2β Σxy + β² Σx²)/(2σ²) - β²/(2s²) - log(1 + σ²/c²) + u
// up to a constant, the last u being log |dσ/du|.
test::GridMoments quadrature(const Data& data) {
  double xx = 0.0, xy = 0.0, yy = 0.0;
  for (int i = 0; i < rows; ++i) {
    xx += data.x[i] * data.x[i];
    xy += data.x[i] * data.y[i];
    yy += data.y[i] * data.y[i];
  }
  const auto log_density = [&](double beta, double u) {
    const double variance = std::exp(2.0 * u);
    const double squares = yy - 2.0 * beta * xy + beta * beta * xx;
    return -rows * u - squares / (2.0 * variance) - beta * beta / (2.0 * prior_sd * prior_sd) -
           std::log1p(variance / (cauchy_scale * cauchy_scale)) + u;
  };
  const double least_squares = xy / xx;
  return test::grid_moments(log_density, least_squares - 3.0, least_squares + 3.0, -2.0, 2.5, 800);
}

}  // namespace

TEST_CASE("glm plugin: a gaussian with its noise sd sampled under a half-Cauchy prior has the posterior computed by quadrature") {
  sgmcmc::Rng rng(43, 0);
  const Data data = simulate(rng);
  std::string csv;
  for (int i = 0; i < rows; ++i) csv += fmt::format("{:.17g},{:.17g}\n", data.y[i], data.x[i]);
  test::TempDir dir;

  const test::GridMoments reference = quadrature(data);
  INFO(fmt::format("reference: beta {} ± {}, log sigma {} ± {}; edge gap {}", reference.mean[0], reference.sd[0],
                   reference.mean[1], reference.sd[1], reference.edge_gap));
  REQUIRE(reference.edge_gap > 40.0);  // the grid holds all but e^-40 of the mass per edge cell

  // MALA preconditioned by the reference's variances (M = diag(1/sd²)), so that both coordinates
  // move at one step size; MH makes the chain exact whatever M and the step.
  auto config = sgmcmc::parse_config(
      fmt::format(R"([model]
data = {}
test_size = 0
family = "gaussian"
intercept = false
prior_scale = {}
noise_prior = "half_cauchy"
noise_prior_scale = {}
[estimator]
name = "exact"
[integrator]
name = "mala"
step_size = 0.8
mass = [{}, {}]
[corrector]
name = "mh"
)",
                  test::quoted(dir.write("rows.csv", csv)), prior_sd, cauchy_scale,
                  1.0 / (reference.sd[0] * reference.sd[0]), 1.0 / (reference.sd[1] * reference.sd[1])),
      "test.toml");
  const auto recorder = test::run_glm_chain(config, {"beta.1", "log_noise_sd"}, 400'000, 100);

  // Quantities: the chain's mean and sd of β and of u = log σ. Reference: the quadrature above.
  // Tolerance: the Monte Carlo error, estimated by 100 batch means of 4,000 draws (batch_means_se,
  // variance_se); |difference| < 4.5 se fails by chance with probability ≈ 7e-6 per quantity
  // under the normal approximation, and still below 1e-4 if the estimated se is 15% low (the sd
  // of an se from 100 batches is ≈ 7%). The quadrature's own error is far below: the midpoint
  // rule on a smooth density negligible at the edges, with 15+ points per posterior sd. The
  // chain's sd is compared through its variance: sd² ± 4.5 · se(sd²). Dropping the Jacobian (the
  // last u) moved the chain's E[u] by 0.0127, 34 se (about 1/(2n): σ^{-n} becomes σ^{-(n+1)}).
  test::check_moments(recorder, reference, 4.5);
}
