// ESS, R-hat, MCSE and quantiles against the R package `posterior` on committed draws
// (tests/fixtures/diagnostics/, made by make_reference.R there), and against theory.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

import sgmcmc;

namespace {

const std::string fixtures = std::string(SGMCMC_FIXTURE_SOURCE_DIR) + "/diagnostics/";

sgmcmc::ChainDraws read_case(const std::string& name) {
  const auto table = sgmcmc::read_numeric_csv(fixtures + name + ".csv");
  sgmcmc::ChainDraws draws(table.columns);
  for (std::size_t row = 0; row < table.rows; ++row)
    for (std::size_t chain = 0; chain < table.columns; ++chain) draws[chain].push_back(table.at(row, chain));
  return draws;
}

sgmcmc::ChainDraws ar1_chains(std::size_t chains, std::size_t n, double rho, std::uint64_t seed) {
  sgmcmc::ChainDraws draws(chains);
  for (std::size_t c = 0; c < chains; ++c) {
    sgmcmc::Rng rng(seed, c);
    double x = rng.normal() / std::sqrt(1 - rho * rho);  // stationary start
    for (std::size_t t = 0; t < n; ++t) {
      draws[c].push_back(x);
      x = rho * x + rng.normal();
    }
  }
  return draws;
}

}  // namespace

TEST_CASE("ESS, R-hat, MCSE and quantiles equal posterior's to 1e-6 relative") {
  std::ifstream in(fixtures + "reference.csv");
  REQUIRE(in);
  std::string line;
  std::getline(in, line);  // header: case,ess_bulk,ess_tail,ess_mean,rhat,mcse_mean,q05,q50,q95
  int cases = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name, field;
    std::getline(fields, name, ',');
    std::vector<double> expected;
    while (std::getline(fields, field, ',')) {
      double value;
      REQUIRE(sgmcmc::parse_double(field, value));
      expected.push_back(value);
    }
    REQUIRE(expected.size() == 8);
    const auto draws = read_case(name);
    const double computed[] = {sgmcmc::ess_bulk(draws), sgmcmc::ess_tail(draws),      sgmcmc::ess_mean(draws),
                               sgmcmc::rhat(draws),     sgmcmc::mcse_mean(draws),     sgmcmc::quantile(draws, 0.05),
                               sgmcmc::quantile(draws, 0.5), sgmcmc::quantile(draws, 0.95)};
    const char* names[] = {"ess_bulk", "ess_tail", "ess_mean", "rhat", "mcse_mean", "q05", "q50", "q95"};
    for (int k = 0; k < 8; ++k) {
      INFO(name << " " << names[k]);
      CHECK(computed[k] == Approx(expected[k]).epsilon(1e-6).margin(1e-12));
    }
    ++cases;
  }
  CHECK(cases == 7);
}

TEST_CASE("ESS of AR(1) chains is near n·chains·(1-ρ)/(1+ρ)") {
  // For x_t = ρx_{t-1} + ξ_t the integrated autocorrelation time is τ = (1+ρ)/(1-ρ) = 9 for
  // ρ = 0.8, so 4 chains of 20,000 draws have ESS ≈ 80,000/9 ≈ 8,889. The relative sd of a
  // windowed estimate of τ is about sqrt(2(2M+1)/N) (Sokal 1989) with window M ≈ 6τ: ≈ 5% here,
  // so 20% is 4 sd.
  for (double rho : {0.8, 0.0}) {
    const auto draws = ar1_chains(4, 20'000, rho, 17);
    const double expected = 80'000.0 * (1 - rho) / (1 + rho);
    INFO("rho " << rho << ": ess_mean " << sgmcmc::ess_mean(draws) << ", expected " << expected);
    CHECK(std::abs(sgmcmc::ess_mean(draws) / expected - 1) < 0.2);
    CHECK(std::abs(sgmcmc::ess_bulk(draws) / expected - 1) < 0.2);
  }
}

TEST_CASE("R-hat flags chains with different means") {
  // 4 chains of 1,000 iid N(0,1) draws: R-hat - 1 is O(1/n) ≈ 0.001 (Vehtari et al. 2021, §4), far
  // below 1.01. Shifting one chain by 1 sd makes the between-chain variance ≈ n·3/16 against a
  // within-chain variance of 1: R-hat ≈ sqrt(1 + 3/16) ≈ 1.09.
  auto draws = ar1_chains(4, 1000, 0.0, 23);
  CHECK(sgmcmc::rhat(draws) < 1.01);
  for (double& x : draws[3]) x += 1.0;
  CHECK(sgmcmc::rhat(draws) > 1.05);
}

TEST_CASE("undefined diagnostics are NaN, not numbers") {
  const sgmcmc::ChainDraws constant(2, std::vector<double>(10, 3.0));
  CHECK(sgmcmc::diagnostics_undefined(constant));
  CHECK(std::isnan(sgmcmc::ess_bulk(constant)));
  CHECK(std::isnan(sgmcmc::rhat(constant)));
  sgmcmc::ChainDraws with_nan = ar1_chains(2, 10, 0.5, 1);
  with_nan[1][4] = std::nan("");
  CHECK(std::isnan(sgmcmc::ess_tail(with_nan)));
}

TEST_CASE("normal quantiles to double precision") {
  CHECK(sgmcmc::normal_quantile(0.5) == Approx(0.0).margin(1e-15));
  CHECK(sgmcmc::normal_quantile(0.975) == Approx(1.959963984540054).epsilon(1e-14));
  CHECK(sgmcmc::normal_quantile(1e-6) == Approx(-4.753424308822899).epsilon(1e-13));
  CHECK(sgmcmc::normal_quantile(0.3) == Approx(-0.5244005127080407).epsilon(1e-14));
}

TEST_CASE("kernel Stein discrepancy: a known value, and it shrinks with more exact samples") {
  // One point at the mode of N(0, I_d) (score 0): k_0(x, x) = -2βd c^{2(β-1)} = d for β = -1/2,
  // c = 1, so KSD = sqrt(d).
  CHECK(sgmcmc::kernel_stein_discrepancy({{0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0}}) == Approx(std::sqrt(3.0)).epsilon(1e-14));
  // Exact samples of N(0, I_2) (score -x): E[KSD²] = E[k_0(x, x)]/n because the off-diagonal terms
  // have mean 0, so KSD falls like n^{-1/2}: ×0.5 from n = 100 to 400 and again to 1,600. Averages
  // of 5 replicates are compared with a ratio bound of 0.75, far from 1 yet loose enough for
  // the replicates' spread.
  const auto average_ksd = [](std::size_t n) {
    double total = 0.0;
    for (std::uint64_t replicate = 0; replicate < 5; ++replicate) {
      sgmcmc::Rng rng(31, replicate);
      std::vector<std::vector<double>> points(n, std::vector<double>(2)), scores(n, std::vector<double>(2));
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t k = 0; k < 2; ++k) {
          points[i][k] = rng.normal();
          scores[i][k] = -points[i][k];
        }
      total += sgmcmc::kernel_stein_discrepancy(points, scores);
    }
    return total / 5;
  };
  const double small = average_ksd(100), medium = average_ksd(400), large = average_ksd(1600);
  INFO(small << " " << medium << " " << large);
  CHECK(medium < 0.75 * small);
  CHECK(large < 0.75 * medium);
}
