// Simulation-based calibration (Talts et al. 2018) through the real CLI and the gaussian plugin:
// the uniformity tests accept an exact sampler and reject a clearly biased one.
//
// Both use runners/presets/sbc/: 2 coefficients, 200 training rows, prior sd 1 (posterior
// precision λ ≈ 200 per direction), R = 500 replications, ranks among L = 99 draws, each test at
// alpha = 0.01.
//  - Exact: MALA + MH with exact gradients leaves the posterior invariant, so the ranks are uniform
//    whenever the L draws are near-independent (bulk ESS ≥ L in every replication; checked below).
//    False alarm: 2 parameters × 2 tests, each of size ≤ 0.01 (the ECDF test by construction, χ²
//    asymptotically with 25 expected per bin), so at most 0.04 by Bonferroni's bound.
//  - Biased: SGLD at ε = 0.012 with exact gradients is, on a Gaussian, an AR(1) whose stationary
//    variance is 1/(1 - ελ/4) times the posterior's (mean exact): 1.9-3.6 for ελ ≈ 1.9-2.9. At a
//    factor k = 1.9, R = 500, alpha = 0.01 the power of each test is measured by
//    tests/unit/calibration_test.cpp ("power"): 100 of 100 data sets rejected, so a miss here has
//    probability of order 1% or less per test (and both tests must miss for the verdict to say
//    calibrated).
#include <catch2/catch.hpp>
#include <string>
#include <fmt/format.h>

#include "support.hpp"

using Catch::Matchers::Contains;

namespace {

std::string sbc(const std::string& config, const std::string& out) {
  return fmt::format("sbc --config '{}/runners/presets/sbc/{}.toml' --replications 500 --alpha 0.01 --jobs 2 --quiet --no-plot "
                     "--out '{}'",
                     SGMCMC_SOURCE_DIR, config, out);
}

}  // namespace

TEST_CASE("sbc: exact MALA + MH on gaussian is calibrated; SGLD at a too-large step is not", "[sbc]") {
  test::TempDir dir;
  const auto exact = test::run_cli(sbc("gaussian-mala-mh", (dir.path() / "exact").string()));
  INFO(exact.output);
  REQUIRE(exact.exit_code == 0);
  CHECK_THAT(exact.output, Contains("beta.1: calibrated") && Contains("beta.2: calibrated"));
  CHECK_THAT(exact.output, !Contains("bulk ESS <"));

  const auto biased = test::run_cli(sbc("gaussian-sgld-large-step", (dir.path() / "sgld").string()));
  INFO(biased.output);
  REQUIRE(biased.exit_code == 0);
  CHECK_THAT(biased.output, Contains("beta.1: miscalibrated") && Contains("beta.2: miscalibrated"));
  // Too wide draws put θ* near their middle: a ∩-shaped rank histogram, the ECDF below z at small
  // z (Talts et al. 2018, Figure 4). Read from ecdf.csv at z = 0.1 (k = 10 of 99).
  bool below = false;
  for (const auto& line : test::lines_of(test::read_text(dir.path() / "sgld" / "ecdf.csv"))) {
    const auto fields = test::csv_fields(line);
    if (fields[0] == "beta.1" && fields[1] == "0.10000000000000001") below = std::stod(fields[2]) < 0;
  }
  CHECK(below);
}
