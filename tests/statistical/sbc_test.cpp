// Simulation-based calibration (Talts et al. 2018) through the real CLI and the gaussian plugin:
// the uniformity tests accept an exact sampler and reject a clearly biased one.
//
// Both use runners/presets/sbc/: 2 coefficients, 200 training rows, prior sd 1 (posterior
// precision λ ≈ 200 per direction), R = 500 replications, ranks among L = 99 draws, the verdict at
// alpha = 0.01 (Holm-adjusted).
//  - Exact: MALA + MH with exact gradients leaves the posterior invariant, so the ranks are uniform
//    whenever the L draws are near-independent (bulk ESS ≥ L in every replication; checked below).
//    False alarm: the verdict adjusts the 2 tests of each of the 3 ranked quantities (beta.1,
//    beta.2, lp__) together by Holm's procedure at alpha = 0.01, each test of size ≤ its level
//    (the ECDF test by construction, χ² asymptotically with 25 expected per bin), so a false
//    `miscalibrated` anywhere has probability at most 0.01 (Holm 1979, any dependence).
//  - Biased: SGLD at ε = 0.012 with exact gradients is, on a Gaussian, an AR(1) whose stationary
//    variance is 1/(1 - ελ/4) times the posterior's (mean exact): 1.9-3.6 for ελ ≈ 1.9-2.9. At a
//    factor k = 1.9, R = 500, alpha = 0.01 the power of each test is measured by
//    tests/unit/calibration_test.cpp ("power"): 100 of 100 data sets rejected, so a miss here has
//    probability of order 1% or less per test (and both tests must miss for the verdict to say
//    calibrated). Holm multiplies a p-value by at most 6 here: the ECDF test's smallest, 1e-4
//    (1/(M + 1) with M = 10,000 simulations), stays below 0.01.
//  - lp__ (`--quantities lp__`, ranked at θ* as a parameter; the parameters' ranks are the same
//    with it): a function of θ and the conditioned data, so uniform for the exact sampler (one
//    more quantity in Holm's family). For SGLD the too wide draws have
//    lower log density than θ*, so θ* ranks high: at R = 100 the mean rank was 70 of 99 (49.5 if
//    uniform) and both tests rejected with p ≤ 1e-4; at R = 500 the ECDF's drop of about 0.2 at
//    mid-range is 9 binomial sd (sqrt(0.25/500) = 0.022), far beyond the band.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <utility>
#include <fmt/format.h>

#include "support.hpp"

using Catch::Matchers::Contains;

namespace {

std::string sbc(const std::string& config, const std::string& out) {
  return fmt::format("sbc --config '{}/runners/presets/sbc/{}.toml' --replications 500 --alpha 0.01 --jobs 2 --quiet --no-plot "
                     "--quantities lp__ --out '{}'",
                     SGMCMC_SOURCE_DIR, config, out);
}

}  // namespace

TEST_CASE("sbc: exact MALA + MH on gaussian is calibrated, SGLD at a too-large step is not", "[sbc]") {
  test::TempDir dir;
  const auto exact = test::run_cli(sbc("gaussian-mala-mh", (dir.path() / "exact").string()));
  INFO(exact.output);
  REQUIRE(exact.exit_code == 0);
  CHECK_THAT(exact.output, Contains("beta.1: calibrated") && Contains("beta.2: calibrated") && Contains("lp__: calibrated"));
  CHECK_THAT(exact.output, !Contains("bulk ESS <"));

  const auto biased = test::run_cli(sbc("gaussian-sgld-large-step", (dir.path() / "sgld").string()));
  INFO(biased.output);
  REQUIRE(biased.exit_code == 0);
  CHECK_THAT(biased.output, Contains("beta.1: miscalibrated") && Contains("beta.2: miscalibrated") &&
                                Contains("lp__: miscalibrated"));
  // Too wide draws put θ* near their middle: a ∩-shaped rank histogram, the ECDF below z at small
  // z (Talts et al. 2018, Figure 4). Read from ecdf.csv at z = 0.1 (k = 10 of 99).
  bool below = false;
  for (const auto& line : test::lines_of(test::read_text(dir.path() / "sgld" / "ecdf.csv"))) {
    const auto fields = test::csv_fields(line);
    if (fields[0] == "beta.1" && fields[1] == "0.10000000000000001") below = std::stod(fields[2]) < 0;
  }
  CHECK(below);
}

namespace {

/// The configurational temperature and its MCSE from `sgmcmc summary`'s line.
std::pair<double, double> configurational_temperature(const std::string& output) {
  const std::string key = "configurational temperature <θ·∇U>/d = ";
  const auto at = output.find(key);
  if (at == std::string::npos) return {std::nan(""), std::nan("")};
  const auto rest = output.substr(at + key.size());
  const double value = std::stod(rest);
  const auto mcse_at = rest.find("(mcse ");
  return {value, std::stod(rest.substr(mcse_at + 6))};
}

}  // namespace

TEST_CASE("summary: the configurational temperature is 1 for an exact chain on gaussian and not for SGLD at a large step",
          "[sbc][temperature]") {
  // E[θ_j ∂_j U(θ)] = 1 under π ∝ exp(-U) for every j (integration by parts; the boundary terms
  // vanish for a Gaussian), so ⟨θ·∇U⟩/d estimates 1 for exact draws with Monte Carlo error its
  // MCSE (from the ESS of the per-draw values, as `posterior` computes it): |T - 1| < 4 MCSE fails
  // by chance with probability 6e-5. The MCSE must itself be small (< 0.05) for the test to have
  // teeth. SGLD at ε = 0.012 draws θ - μ with k ≈ 1.9-3.6 times the posterior covariance, so
  // ⟨(θ-μ)ᵀA(θ-μ)⟩/d ≈ k: T > 1 + 4 MCSE.
  test::TempDir dir;
  const auto run = [&](const std::string& config, const std::string& out) {
    return test::run_cli(fmt::format("run --config '{}/runners/presets/sbc/{}.toml' --set model.simulate_from_prior=true "
                                     "--set run.iterations=20000 --set run.chains=2 --set output.gradients=exact --out '{}'",
                                     SGMCMC_SOURCE_DIR, config, (dir.path() / out).string()));
  };
  const auto exact = run("gaussian-mala-mh", "exact");
  INFO(exact.output);
  REQUIRE(exact.exit_code == 0);
  const auto [t, mcse] = configurational_temperature(exact.output);
  CHECK(mcse < 0.05);
  CHECK(std::abs(t - 1) < 4 * mcse);
  CHECK_THAT(exact.output, Contains("kernel Stein discrepancy"));

  const auto biased = run("gaussian-sgld-large-step", "sgld");
  INFO(biased.output);
  REQUIRE(biased.exit_code == 0);
  const auto [t_sgld, mcse_sgld] = configurational_temperature(biased.output);
  CHECK(t_sgld > 1 + 4 * mcse_sgld);
}

namespace {

/// The mean and MCSE of metrics.csv's temperature `column` from `sgmcmc summary`'s line.
std::pair<double, double> metric_temperature(const std::string& output, const std::string& column) {
  const auto at = output.find(column + " <");
  if (at == std::string::npos) return {std::nan(""), std::nan("")};
  const auto rest = output.substr(output.find("= ", at) + 2);
  const auto mcse_at = rest.find("(mcse ");
  return {std::stod(rest), std::stod(rest.substr(mcse_at + 6))};
}

}  // namespace

TEST_CASE("summary: run.temperatures of obabo + mh on gaussian are 1 within 4 MCSE, sgld at a large step has no kinetic "
          "one and a configurational one above 1",
          "[temperature]") {
  // An exact sampler leaves π(θ) N(p; 0, M) invariant: E[pᵀM⁻¹p]/d = 1 and E[θ·∇U]/d = 1
  // (modules/README.md, "Temperatures"). summary's MCSE comes from the ESS of the rows after the
  // warmup (eval_every = 1: every iteration), as a parameter's; |T - 1| < 4 MCSE fails by chance
  // with probability 6e-5, and the MCSE must be below 0.05 for the check to have teeth. OBABO at
  // h = 0.06 on this posterior (λ ≈ 200, h²λ ≈ 0.7) with γh ≈ 1; SGLD's configurational
  // temperature at ε = 0.012 is 1.9-3.6 (the case above).
  test::TempDir dir;
  const auto run = [&](const std::string& config, const std::string& settings, const std::string& out) {
    return test::run_cli(fmt::format("run --config '{}/runners/presets/sbc/{}.toml' --set model.simulate_from_prior=true "
                                     "--set run.iterations=20000 --set run.chains=2 --set run.eval_every=1 "
                                     "--set run.temperatures=true {} --out '{}'",
                                     SGMCMC_SOURCE_DIR, config, settings, (dir.path() / out).string()));
  };
  const auto exact = run("gaussian-mala-mh",
                         "--set integrator.name=obabo --set integrator.step_size=0.06 --set integrator.friction=16", "exact");
  INFO(exact.output);
  REQUIRE(exact.exit_code == 0);
  for (const char* column : {"kinetic_temperature", "configurational_temperature"}) {
    INFO(column);
    const auto [t, mcse] = metric_temperature(exact.output, column);
    CHECK(mcse < 0.05);
    CHECK(std::abs(t - 1) < 4 * mcse);
  }
  const auto biased = run("gaussian-sgld-large-step", "", "sgld");
  INFO(biased.output);
  REQUIRE(biased.exit_code == 0);
  CHECK_THAT(biased.output, !Contains("kinetic_temperature"));
  const auto [t_sgld, mcse_sgld] = metric_temperature(biased.output, "configurational_temperature");
  CHECK(t_sgld > 1 + 4 * mcse_sgld);
}
