// integrator.adapt_mass on a chain without an MH corrector (issue 46, item 2): the score-based
// adaptation settles where its derivation says, where Stan's covariance of the draws ran away
// (modules/README.md, "Mass adaptation without an MH test").
#include <catch2/catch.hpp>
#include <algorithm>
#include <array>
#include <cstdint>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "targets.hpp"

import sgmcmc;

namespace {

using Matrix2 = std::array<double, 4>;  // row by row

/// U(θ) = ½ θᵀAθ from one item and a flat prior: the posterior N(0, A⁻¹), gradient Aθ.
class QuadraticTarget final : public sgmcmc::Model {
public:
  explicit QuadraticTarget(Matrix2 precision) : a_(precision) {}
  std::size_t dimension() const override { return 2; }
  std::size_t num_items() const override { return 1; }
  std::vector<std::string> parameter_names() const override { return {"theta.1", "theta.2"}; }
  sgmcmc::Capabilities capabilities() const override { return {.exact_log_likelihood = true}; }
  double prior_potential(std::span<const double>) const override { return 0.0; }
  void add_prior_gradient(std::span<const double>, std::span<double>) const override {}
  void add_data_gradient(std::span<const double> theta, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, sgmcmc::Rng&) const override {
    for (std::size_t k = 0; k < batch.items.size(); ++k)
      for (std::size_t i = 0; i < 2; ++i) gradient[i] += batch.weight(k) * (a_[2 * i] * theta[0] + a_[2 * i + 1] * theta[1]);
  }
  double data_potential(std::span<const double> theta, const sgmcmc::Batch& batch, sgmcmc::Workspace&) const override {
    const double u = 0.5 * (a_[0] * theta[0] * theta[0] + 2.0 * a_[1] * theta[0] * theta[1] + a_[3] * theta[1] * theta[1]);
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) sum += batch.weight(k) * u;
    return sum;
  }

private:
  Matrix2 a_;
};

Matrix2 inverse(const Matrix2& m) {
  const double det = m[0] * m[3] - m[1] * m[2];
  return {m[3] / det, -m[1] / det, -m[2] / det, m[0] / det};
}

Matrix2 product(const Matrix2& x, const Matrix2& y) {
  return {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3], x[2] * y[0] + x[3] * y[2], x[2] * y[1] + x[3] * y[3]};
}

/// The eigenvalues of a 2 × 2 matrix similar to a symmetric one (real), smaller first.
std::array<double, 2> eigenvalues(const Matrix2& m) {
  const double half_trace = 0.5 * (m[0] + m[3]), det = m[0] * m[3] - m[1] * m[2];
  const double root = std::sqrt(std::max(0.0, half_trace * half_trace - det));
  return {half_trace - root, half_trace + root};
}

// The derivation (modules/README.md, "Mass adaptation without an MH test").
//
// SGLD with exact gradients and a constant preconditioner P = M⁻¹ on U = ½θᵀAθ:
// θ' = (I - (ε/2)PA)θ + sqrt(ε) P^{1/2}ξ. In the whitened frame z = A^{1/2}θ it is
// z' = (I - (ε/2)P̃)z + sqrt(ε) P̃^{1/2}ξ with P̃ = A^{1/2}PA^{1/2}, so along each eigenvector of P̃,
// eigenvalue x, z is an AR(1) with coefficient ρ = 1 - εx/2 and innovation variance εx, of
// stationary variance εx/(1 - ρ²) = 1/(1 - εx/4) (for εx < 4). The window's gradients
// ĝ = Aθ = A^{1/2}z then have E[ĝĝᵀ] = A^{1/2} E[zzᵀ] A^{1/2}, and the score-based mass
// M = E[ĝĝᵀ] (T = 1) gives P̃_new = E[zzᵀ]⁻¹: each eigenvalue x ← 1 - εx/4, a contraction
// (derivative -ε/4) to x* = 1/(1 + ε/4) from any stable start. The reference is M⁻¹A = x* I:
// for a diagonal metric on a diagonal A, a_j/M_j = x* per coordinate; for a dense metric, both
// eigenvalues of M⁻¹A (those of P̃). Stan's M⁻¹ = Cov(θ) would instead map x ← 1/(1 - εx/4), which
// at ε = 1.5 has no fixed point (εx²/4 - x + 1 = 0 needs ε <= 1): 1 → 1.6 → 2.5 → 16, past the
// stability limit εx = 4 by the fourth window, a runaway the chain stops as a divergence.
//
// Windows. A warmup of 100,000 with Stan's intervals (75, 25, 50) closes windows at 100, 150, 250,
// …, 6,450, 12,850, 25,650 and, stretched, 99,950 (the adapt_mass windows test of
// integrators_test), every iteration a block end (corrector none): the last three hold
// n = 6,400, 12,800 and 74,300 gradients. The shrinkage towards the mass in use,
// M = (nĜ + νM₀)/(n + ν) with ν <= 7, has weight <= 10⁻⁴ in the last window: negligible, and it does
// not move the fixed point anyway.
//
// Tolerance. The last window's estimate of E[ĝĝᵀ] from n draws of an AR(1) whose coefficient is
// ρ = 1 - εx*/2: for a Gaussian AR(1), Corr(z_t², z_{t+k}²) = Corr(z_{1,t}z_{2,t}, z_{1,t+k}z_{2,t+k}) = ρ^{2k},
// so the integrated autocorrelation time of the squares and products is τ = (1 + ρ²)/(1 - ρ²), and
// the relative variance of a diagonal entry is 2τ/n, of an off-diagonal one τ/n. A diagonal a_j/M_j
// then has relative sd sqrt(2τ/n); a dense M's eigenvalues move by at most the Frobenius norm of
// the relative error matrix, of rms sqrt(6τ/n) (2τ/n twice and τ/n twice). The window before
// contributes through the map's derivative -ε/4, the one before that through (ε/4)², and so on;
// three windows are summed in quadrature (the rest is below (ε/4)³ ≈ 5 % of the last term).
// Bias from 1/M's curvature (Jensen) is of order the relative variance, 10⁻⁴: below the tolerance's
// resolution. Check |x - x*| <= 5 s: false alarm below 10⁻⁶ per coordinate (a diagonal entry
// is nearly Gaussian; for the dense bound, P(χ²₃ > 75) ≈ 10⁻¹⁵).
constexpr double epsilon = 1.5;
constexpr std::uint64_t warmup = 100'000;
constexpr std::array<double, 3> last_windows = {74'300.0, 12'800.0, 6'400.0};  // last first

double fixed_point() { return 1.0 / (1.0 + epsilon / 4.0); }

/// The relative sd of the adapted x (the comment above), with `entries` = 2 (a diagonal entry) or 6
/// (the dense Frobenius bound) times τ/n per window.
double relative_sd(double entries) {
  const double rho = 1.0 - epsilon * fixed_point() / 2.0, tau = (1.0 + rho * rho) / (1.0 - rho * rho);
  double variance = 0.0, weight = 1.0;
  for (const double n : last_windows) {
    variance += weight * weight * entries * tau / n;
    weight *= epsilon / 4.0;
  }
  return std::sqrt(variance);
}

std::string sgld_toml(const std::string& metric, const std::string& mass) {
  return fmt::format("[estimator]\nname = \"exact\"\n[integrator]\nname = \"sgld\"\nstep_size = {}\nmetric = \"{}\"\n"
                     "mass = {}\nadapt_mass = true\n[corrector]\nname = \"none\"\n",
                     epsilon, metric, mass);
}

}  // namespace

TEST_CASE("adapt_mass without MH: sgld's diagonal mass settles at M_j = a_j(1 + ε/4), where Stan's would run away") {
  // A = diag(1, 1/25), started from M = 1: x = (1, 0.04), both stable at ε = 1.5 (εx < 4).
  const Matrix2 precision = {1.0, 0.0, 0.0, 0.04};
  const auto model = std::make_shared<const QuadraticTarget>(precision);
  const auto run = test::run_chain(model, sgld_toml("diagonal", "1.0"), 1000, 1, 2024, warmup);
  INFO(run.result.message);
  REQUIRE_FALSE(run.result.diverged);
  REQUIRE(run.result.adapted_mass.size() == 2);
  const double reference = fixed_point(), tolerance = 5.0 * relative_sd(2.0) * reference;
  for (std::size_t j = 0; j < 2; ++j) {
    const double x = precision[3 * j] / run.result.adapted_mass[j];
    INFO(fmt::format("coordinate {}: a/M = {:.5f} against x* = 1/(1 + ε/4) = {:.5f} (tolerance {:.5f})", j + 1, x,
                     reference, tolerance));
    CHECK(std::abs(x - reference) <= tolerance);
  }
}

TEST_CASE("adapt_mass without MH: sgld's dense mass settles at M = A(1 + ε/4) on a correlated Gaussian") {
  // Σ = A⁻¹ with sds 1 and 3, correlation 0.9; started from M = 3I: P̃'s eigenvalues are those of
  // A/3, 0.034 and 1.92, both stable at ε = 1.5.
  const Matrix2 covariance = {1.0, 2.7, 2.7, 9.0};
  const Matrix2 precision = inverse(covariance);
  const auto model = std::make_shared<const QuadraticTarget>(precision);
  const auto run = test::run_chain(model, sgld_toml("dense", "3.0"), 1000, 1, 2024, warmup);
  INFO(run.result.message);
  REQUIRE_FALSE(run.result.diverged);
  REQUIRE(run.result.adapted_mass.size() == 4);
  const Matrix2 mass = {run.result.adapted_mass[0], run.result.adapted_mass[1], run.result.adapted_mass[2],
                        run.result.adapted_mass[3]};
  const double reference = fixed_point(), tolerance = 5.0 * relative_sd(6.0) * reference;
  for (const double x : eigenvalues(product(inverse(mass), precision))) {
    INFO(fmt::format("eigenvalue of M⁻¹A: {:.5f} against x* = 1/(1 + ε/4) = {:.5f} (tolerance {:.5f})", x, reference,
                     tolerance));
    CHECK(std::abs(x - reference) <= tolerance);
  }
}
