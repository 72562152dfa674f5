// SGLD with exact gradients on Gaussian targets: the stationary law of the discretised chain is
// derived in closed form below, and the chain's moments must match it within Monte Carlo error.
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <vector>
#include <fmt/format.h>
#include <xtensor/xview.hpp>
#include <xtensor-blas/xlinalg.hpp>

#include "gaussian_fixture.hpp"
#include "targets.hpp"

namespace {

using test::NormalTarget;

test::Draws run_sgld_exact(std::shared_ptr<const sgmcmc::Model> model, double step_size, std::uint64_t iterations) {
  auto run = test::run_chain(model, fmt::format("[estimator]\nname = \"exact\"\n[integrator]\nname = \"sgld\"\nstep_size = {}\n", step_size),
                             iterations);
  REQUIRE_FALSE(run.result.diverged);
  REQUIRE(run.result.cost.item_gradients == iterations * model->num_items());
  return std::move(run.draws);
}

}  // namespace

TEST_CASE("SGLD, exact gradient, 1-D Gaussian: stationary mean μ and variance σ²/(1 - ε/(4σ²))") {
  // Derivation. With U(x) = (x-μ)²/(2σ²), SGLD is x' = x - (ε/2)(x-μ)/σ² + sqrt(ε)ξ, i.e. with
  // y = x - μ the AR(1) y' = ρy + sqrt(ε)ξ, ρ = 1 - ε/(2σ²). Its stationary law is N(0, v) with
  // v = ε/(1 - ρ²) = ε/(ε/σ² - ε²/(4σ⁴)) = σ²/(1 - ε/(4σ²)).
  // Here μ = 1, σ = 1, ε = 0.5: ρ = 0.75, v = 8/7 ≈ 1.142857 (the exact posterior variance, 1, is
  // 18 Monte Carlo sd away, so the test tells the discretised law from the target).
  // Monte Carlo error over n = 200,000 draws after 100 burn-in steps (ρ^100 ≈ 3e-13):
  //   sd(mean)     = sqrt(v/n · (1+ρ)/(1-ρ))          = sqrt(1.1429/2e5 · 7)       ≈ 6.3e-3
  //   sd(variance) = v · sqrt(2/n · (1+ρ²)/(1-ρ²))    = 1.1429 · sqrt(1e-5 · 3.571) ≈ 6.8e-3
  // Tolerances are 5 sd: 0.032 and 0.034.
  const double mu = 1.0, sigma = 1.0, epsilon = 0.5;
  const double rho = 1 - epsilon / (2 * sigma * sigma), v = sigma * sigma / (1 - epsilon / (4 * sigma * sigma));
  const std::size_t burn_in = 100, n = 200'000;
  const auto draws = run_sgld_exact(std::make_shared<NormalTarget>(mu, sigma), epsilon, burn_in + n);
  double sum = 0.0, sum_squares = 0.0;
  for (std::size_t k = burn_in; k < draws.rows.size(); ++k) {
    sum += draws.rows[k][0];
    sum_squares += draws.rows[k][0] * draws.rows[k][0];
  }
  const double mean = sum / n, variance = sum_squares / n - mean * mean;
  const double sd_mean = std::sqrt(v / n * (1 + rho) / (1 - rho));
  const double sd_variance = v * std::sqrt(2.0 / n * (1 + rho * rho) / (1 - rho * rho));
  CHECK(std::abs(mean - mu) < 5 * sd_mean);
  CHECK(std::abs(variance - v) < 5 * sd_variance);
}

TEST_CASE("SGLD, exact gradient, gaussian plugin: stationary mean μ and covariance (A - εA²/4)⁻¹") {
  // Derivation. U(β) = ½(β-μ)ᵀA(β-μ) + const, so SGLD is the vector AR(1)
  //   z' = Bz + sqrt(ε)ξ,  z = β - μ,  B = I - εA/2 (symmetric, commutes with A).
  // Its stationary covariance solves C = BCB + εI: C = ε(I - B²)⁻¹ = (A - εA²/4)⁻¹.
  // In A's eigenbasis (A = QΛQᵀ, b_m = 1 - ελ_m/2, c_m = 1/(λ_m - ελ_m²/4)) coordinate j is a sum
  // of independent AR(1)s, so over n draws
  //   n·Var(mean_j)     → Σ_m Q_jm² c_m (1+b_m)/(1-b_m)
  //   n·Var(var_j)      → 2 Σ_{m,m'} Q_jm² Q_jm'² c_m c_m' (1 + b_m b_m')/(1 - b_m b_m')
  // (Gaussian fourth moments; Σ_k γ(k)² summed over all lags). Tolerances are 5 of these sd.
  // ε = 0.5/λ_max puts the largest direction's variance 14% above A⁻¹'s: many sd away.
  test::GaussianFixture fixture(60, 3);
  const auto [eigenvalues, eigenvectors] = xt::linalg::eigh(fixture.precision);
  const double epsilon = 0.5 / xt::amax(eigenvalues)();
  const std::size_t burn_in = 2000, n = 200'000, d = 3;
  const auto draws = run_sgld_exact(fixture.model, epsilon, burn_in + n);

  for (std::size_t j = 0; j < d; ++j) {
    double sum = 0.0, sum_squares = 0.0;
    for (std::size_t k = burn_in; k < draws.rows.size(); ++k) {
      sum += draws.rows[k][j];
      sum_squares += draws.rows[k][j] * draws.rows[k][j];
    }
    const double mean = sum / n, variance = sum_squares / n - mean * mean;
    double expected_variance = 0.0, n_var_mean = 0.0, n_var_variance = 0.0;
    for (std::size_t m = 0; m < d; ++m) {
      const double q2 = eigenvectors(j, m) * eigenvectors(j, m), lambda = eigenvalues(m);
      const double b = 1 - epsilon * lambda / 2, c = 1 / (lambda - epsilon * lambda * lambda / 4);
      expected_variance += q2 * c;
      n_var_mean += q2 * c * (1 + b) / (1 - b);
      for (std::size_t m2 = 0; m2 < d; ++m2) {
        const double q2b = eigenvectors(j, m2) * eigenvectors(j, m2), lambda2 = eigenvalues(m2);
        const double b2 = 1 - epsilon * lambda2 / 2, c2 = 1 / (lambda2 - epsilon * lambda2 * lambda2 / 4);
        n_var_variance += 2 * q2 * q2b * c * c2 * (1 + b * b2) / (1 - b * b2);
      }
    }
    INFO("coordinate " << j << ": mean " << mean << " vs " << fixture.mean(j) << ", variance " << variance << " vs "
                       << expected_variance << " (posterior " << xt::linalg::inv(fixture.precision)(j, j) << ")");
    CHECK(std::abs(mean - fixture.mean(j)) < 5 * std::sqrt(n_var_mean / n));
    CHECK(std::abs(variance - expected_variance) < 5 * std::sqrt(n_var_variance / n));
  }
}
