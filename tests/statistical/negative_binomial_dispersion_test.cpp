// The glm plugin's negative binomial with a sampled dispersion (model.dispersion absent): θ =
// (β, u = log r). MALA with Metropolis–Hastings on 200 simulated counts against the posterior
// computed by quadrature on a grid, from the negative binomial's probability mass function written
// as a product (not the plugin's log Γ form) and the Gamma prior's density.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "grid_quadrature.hpp"
#include "statistics.hpp"
#include "support.hpp"
#include "model_support.hpp"

namespace {

// The model: y_i ~ NB2(mean μ = e^β, dispersion r) with x_i = 1 (intercept = false, so that β is
// the one coefficient), β ~ N(0, s²), r ~ Gamma(a, b) (shape, rate).
constexpr double prior_sd = 2.0, shape = 2.0, rate = 0.5;
constexpr double true_beta = 1.0, true_dispersion = 2.0;
constexpr int rows = 200;

/// Counts from NB2 as a Poisson–Gamma mixture: λ ~ Gamma(r, rate r/μ), y ~ Poisson(λ) by inversion.
std::vector<int> simulate_counts(sgmcmc::Rng& rng) {
  std::vector<int> counts;
  const double mu = std::exp(true_beta);
  for (int i = 0; i < rows; ++i) {
    const double lambda = rng.gamma(true_dispersion, true_dispersion / mu), u = rng.uniform();
    int y = 0;
    for (double p = std::exp(-lambda), cdf = p; u > cdf && p > 0.0; cdf += p) p *= lambda / ++y;
    counts.push_back(y);
  }
  return counts;
}

/// log p(y | μ, r) = log[Π_{k<y} (r + k)/(k + 1) · (r/(r + μ))^r · (μ/(r + μ))^y].
double log_pmf(int y, double mu, double r) {
  double log_coefficient = 0.0;
  for (int k = 0; k < y; ++k) log_coefficient += std::log((r + k) / (k + 1));
  return log_coefficient + r * std::log(r / (r + mu)) + y * std::log(mu / (r + mu));
}

/// Posterior mean and sd of (β, u) by the midpoint rule on a 600 × 600 grid over [β_lo, β_hi] × [u_lo,
/// u_hi] (grid_moments; the density is smooth and negligible at the edges: edge_gap says how much).
test::GridMoments quadrature(const std::vector<int>& counts, double beta_lo, double beta_hi, double u_lo, double u_hi) {
  std::map<int, int> histogram;
  for (int y : counts) ++histogram[y];
  const auto log_density = [&](double beta, double u) {
    const double r = std::exp(u);
    // log N(β; 0, s²) + log Gamma(r; a, b) + log |dr/du| (= u), up to constants.
    double value = -0.5 * beta * beta / (prior_sd * prior_sd) + (shape - 1.0) * u - rate * r + u;
    for (const auto& [y, count] : histogram) value += count * log_pmf(y, std::exp(beta), r);
    return value;
  };
  return test::grid_moments(log_density, beta_lo, beta_hi, u_lo, u_hi, 600);
}

}  // namespace

TEST_CASE("glm plugin: a sampled negative binomial dispersion has the posterior computed by quadrature") {
  sgmcmc::Rng rng(31, 0);
  const auto counts = simulate_counts(rng);
  std::string csv;
  for (int y : counts) csv += fmt::format("{},1\n", y);
  test::TempDir dir;

  const test::GridMoments reference = quadrature(counts, 0.0, 2.0, -2.0, 4.0);
  INFO(fmt::format("reference: beta {} ± {}, log r {} ± {}; edge gap {}", reference.mean[0], reference.sd[0],
                   reference.mean[1], reference.sd[1], reference.edge_gap));
  REQUIRE(reference.edge_gap > 40.0);  // the grid holds all but e^-40 of the mass per edge cell

  // MALA preconditioned by the reference's variances (M = diag(1/sd²)), so that both coordinates
  // move at one step size; MH makes the chain exact whatever M and the step.
  auto config = sgmcmc::parse_config(
      fmt::format(R"([model]
data = {}
test_size = 0
family = "negative_binomial"
intercept = false
prior_scale = {}
dispersion_shape = {}
dispersion_rate = {}
[estimator]
name = "exact"
[integrator]
name = "mala"
step_size = 0.8
mass = [{}, {}]
[corrector]
name = "mh"
)",
                  test::quoted(dir.write("counts.csv", csv)), prior_sd, shape, rate, 1.0 / (reference.sd[0] * reference.sd[0]),
                  1.0 / (reference.sd[1] * reference.sd[1])),
      "test.toml");
  const auto recorder = test::run_glm_chain(config, {"beta.1", "log_dispersion"}, 100'000, 10);

  // Quantities: the chain's mean and sd of β and of u = log r. Reference: the quadrature above.
  // Tolerance: the Monte Carlo error, estimated by 100 batch means of 1,000 draws (batch_means_se,
  // variance_se); |difference| < 4.5 se fails by chance with probability ≈ 7e-6 per quantity
  // under the normal approximation, and still below 1e-4 if the estimated se is 15% low (the sd
  // of an se from 100 batches is ≈ 7%). The quadrature's own error is far below: the midpoint
  // rule's error on a grid of 100+ points per posterior sd is O(h²) ≈ 1e-5 sd. The chain's sd is
  // compared through its variance: sd² ± 4.5 · se(sd²).
  test::check_moments(recorder, reference, 4.5);
}
