// The SBC rank tests of sgmcmc.calibration (Talts et al. 2018; Säilynoja, Bürkner & Vehtari 2022)
// against values derived independently of the code: closed forms and table values of the χ²
// tail, a binomial band worked out by hand, and Monte Carlo rejection rates with their error.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

import sgmcmc;

namespace {

/// Ranks of θ* ~ N(0, 1) among L independent draws from N(0, k): k = 1 is an exact sampler
/// (uniform ranks), k > 1 one whose posterior variance is k times too large.
std::vector<std::size_t> normal_ranks(std::size_t replications, std::size_t L, double k, sgmcmc::Rng& rng) {
  std::vector<std::size_t> ranks;
  for (std::size_t r = 0; r < replications; ++r) {
    const double star = rng.normal();
    std::size_t rank = 0;
    for (std::size_t l = 0; l < L; ++l) rank += std::sqrt(k) * rng.normal() < star;
    ranks.push_back(rank);
  }
  return ranks;
}

}  // namespace

TEST_CASE("chi_square_upper_tail: closed forms and table quantiles", "[calibration]") {
  // 2 degrees of freedom: P(X > x) = exp(-x/2); 1: erfc(sqrt(x/2)).
  for (double x : {0.1, 1.0, 3.0, 7.5, 20.0}) {
    CHECK(sgmcmc::chi_square_upper_tail(x, 2) == Approx(std::exp(-x / 2)).epsilon(1e-12));
    CHECK(sgmcmc::chi_square_upper_tail(x, 1) == Approx(std::erfc(std::sqrt(x / 2))).epsilon(1e-10));
  }
  // Upper quantiles from the standard tables (Abramowitz & Stegun 1964, Table 26.8), 6 digits.
  CHECK(sgmcmc::chi_square_upper_tail(3.841459, 1) == Approx(0.05).epsilon(1e-5));
  CHECK(sgmcmc::chi_square_upper_tail(18.307038, 10) == Approx(0.05).epsilon(1e-5));
  CHECK(sgmcmc::chi_square_upper_tail(30.143527, 19) == Approx(0.05).epsilon(1e-5));
  CHECK(sgmcmc::chi_square_upper_tail(36.190869, 19) == Approx(0.01).epsilon(1e-5));
  CHECK(sgmcmc::chi_square_upper_tail(0.0, 19) == 1.0);
}

TEST_CASE("rank_chi_square: counts, expectations and statistic by hand", "[calibration]") {
  // Ranks 0..4 (L = 4, 5 values) in 2 bins: {0, 1} (⌊0·5/2⌋ = 0 .. ⌊5/2⌋ - 1 = 1) and {2, 3, 4}.
  const std::vector<std::size_t> ranks = {0, 1, 1, 2, 4, 4, 4, 3, 0, 0};
  const auto test = sgmcmc::rank_chi_square(ranks, 4, 2);
  REQUIRE(test.observed == std::vector<std::size_t>{5, 5});
  CHECK(test.expected[0] == Approx(4.0));
  CHECK(test.expected[1] == Approx(6.0));
  CHECK(test.statistic == Approx(1.0 / 4 + 1.0 / 6));
  CHECK(test.degrees_of_freedom == 1);
  CHECK(test.p_value == Approx(std::erfc(std::sqrt((1.0 / 4 + 1.0 / 6) / 2))));
}

TEST_CASE("rank_ecdf_test: with L = 1 it is the two-sided binomial test, band by hand", "[calibration]") {
  // L = 1, R = 20: one point z = 1/2, c = #{r = 0} ~ Bin(20, 1/2). P(C ≤ 5) = 0.0206947,
  // P(C ≤ 6) = 0.0576591, so p(5) = p(15) = 0.0413895 and p(6) = p(14) = 0.1153183. Under the
  // null P(γ̂ ≤ 0.0413895) = 0.0413895 < 0.05 < P(γ̂ ≤ 0.1153183), so the 5% quantile of γ̂ is
  // 0.1153183 (the Monte Carlo count below it, ≈ 414 of 10,000 with sd 20, is far from the
  // 500th place), the band is 6 ≤ c ≤ 14, and the test is the exact binomial test of size 0.0414.
  std::vector<std::size_t> ranks(20, 1);
  for (std::size_t i = 0; i < 6; ++i) ranks[i] = 0;
  const auto inside = sgmcmc::rank_ecdf_test(ranks, 1, 0.05, 10000, 7);
  CHECK(inside.gamma == Approx(0.1153183).epsilon(1e-6));
  REQUIRE(inside.lower.size() == 1);
  CHECK(inside.lower[0] == 6);
  CHECK(inside.upper[0] == 14);
  CHECK(inside.count[0] == 6);
  CHECK_FALSE(inside.rejected);
  ranks[5] = 1;  // 5 zeros: outside
  const auto outside = sgmcmc::rank_ecdf_test(ranks, 1, 0.05, 10000, 7);
  CHECK(outside.statistic == Approx(0.0413895).epsilon(1e-5));
  CHECK(outside.rejected);
  // Its Monte Carlo p-value estimates P(γ̂ ≤ 0.0413895) = 0.0413895: sd sqrt(0.04·0.96/10⁴) = 0.002.
  CHECK(std::abs(outside.p_value - 0.0413895) < 4 * 0.002);
}

TEST_CASE("rank tests: false alarms at most alpha on uniform ranks, power against a too-wide posterior", "[calibration]") {
  // R = 100 replications, L = 99 draws (as `sgmcmc sbc`'s defaults), alpha = 0.05, T = 300 data
  // sets of uniform ranks. The ECDF test's size is at most alpha by construction (P(γ̂ < γ) ≤ α,
  // up to the band's Monte Carlo error); χ² on 20 bins with R/B = 5 expected per bin is close to
  // its asymptotic size alpha. Binomial sd of a rate of 0.05 over 300 trials: 0.0126.
  constexpr std::size_t R = 100, L = 99, trials = 300;
  constexpr double alpha = 0.05;
  sgmcmc::Rng rng(2026, 1);
  std::size_t ecdf_rejected = 0, chi_rejected = 0;
  for (std::size_t t = 0; t < trials; ++t) {
    const auto ranks = normal_ranks(R, L, 1.0, rng);
    ecdf_rejected += sgmcmc::rank_ecdf_test(ranks, L, alpha, 2000, t + 1).rejected;
    chi_rejected += sgmcmc::rank_chi_square(ranks, L, 20).p_value < alpha;
  }
  const double sd = std::sqrt(alpha * (1 - alpha) / trials);
  INFO("ECDF false alarms " << ecdf_rejected << ", χ² false alarms " << chi_rejected << " of " << trials);
  CHECK(static_cast<double>(ecdf_rejected) / trials < alpha + 4 * sd);
  CHECK(std::abs(static_cast<double>(chi_rejected) / trials - alpha) < 4 * sd);

  // Power, in the setting tests/statistical/sbc_test.cpp relies on: R = 500, L = 99, each test at
  // alpha = 0.01, and draws whose variance is k = 1.9 times the posterior's (the smallest factor
  // of SGLD at ε = 0.012 there: 1/(1 - ελ/4) with ελ ≳ 1.9; Welling & Teh 2011's update on a
  // Gaussian is an AR(1) whose stationary variance that is). Then u = Φ(Z/√k) and
  // P(u < 0.1) = Φ(√1.9·Φ⁻¹(0.1)) = Φ(-1.767) = 0.039 against 0.1: at z = 0.1 alone the ECDF count
  // has mean 19 (sd 4.3) where uniform ranks give 50 (sd 6.7). Measured over T = 100 data sets:
  // each test must reject in at least 95 (a power of 0.95 would give 95 or more with probability
  // 0.56; the measured counts are printed, and were 100 of 100 for both).
  std::size_t ecdf_power = 0, chi_power = 0;
  constexpr std::size_t power_trials = 100;
  for (std::size_t t = 0; t < power_trials; ++t) {
    const auto ranks = normal_ranks(500, L, 1.9, rng);
    ecdf_power += sgmcmc::rank_ecdf_test(ranks, L, 0.01, 2000, t + 1).rejected;
    chi_power += sgmcmc::rank_chi_square(ranks, L, 20).p_value < 0.01;
  }
  WARN("power at k = 1.9, R = 500, alpha = 0.01: ECDF " << ecdf_power << ", χ² " << chi_power << " of " << power_trials
       << "; false alarms at alpha = 0.05, R = 100: ECDF " << ecdf_rejected << ", χ² " << chi_rejected << " of " << trials);
  CHECK(ecdf_power >= 95);
  CHECK(chi_power >= 95);
}

TEST_CASE("rank_among: ties with θ* broken at random give uniform ranks, counting only the draws below does not", "[calibration]") {
  // θ* and its L = 9 draws are independent and uniform on {0, 1, 2}: an exact sampler of a
  // discrete posterior (here the prior itself), so θ* and the draws are exchangeable, and with ties
  // broken at random θ*'s place among the ten values is uniform: the rank is uniform on {0..9}.
  // Counting only the draws strictly below θ* puts θ* below all its ties: mean rank 9/3 = 3
  // instead of 4.5 (sd of the rank about 2.9), at R = 2000 about 23 standard errors of the mean
  // off, which χ² on 10 bins (200 expected in each) sees with p far below 1e-10. For the
  // tie-broken ranks the p-value is uniform: p < 1e-3 with probability 1e-3.
  constexpr std::size_t replications = 2000, L = 9;
  sgmcmc::Rng rng(41, 0), ties(41, 1);
  std::vector<std::size_t> broken, strict;
  std::vector<double> draws(L);
  for (std::size_t r = 0; r < replications; ++r) {
    const double star = static_cast<double>(rng.index(3));
    for (double& draw : draws) draw = static_cast<double>(rng.index(3));
    broken.push_back(sgmcmc::rank_among(draws, star, ties));
    std::size_t below = 0;
    for (double draw : draws) below += draw < star;
    strict.push_back(below);
  }
  const auto uniform = sgmcmc::rank_chi_square(broken, L, L + 1);
  const auto piled_low = sgmcmc::rank_chi_square(strict, L, L + 1);
  INFO("tie-broken ranks: χ² = " << uniform.statistic << ", p = " << uniform.p_value << "; strict: χ² = "
                                 << piled_low.statistic << ", p = " << piled_low.p_value);
  CHECK(uniform.p_value > 1e-3);
  CHECK(piled_low.p_value < 1e-10);

  // Without ties the rank is the count below, and no random number is drawn (continuous draws
  // keep the ranks they had before ties were broken).
  sgmcmc::Rng untouched(5, 0), reference(5, 0);
  const std::vector<double> distinct = {0.5, 1.5, 2.5, -1.0};
  CHECK(sgmcmc::rank_among(distinct, 1.0, untouched) == 2);
  CHECK(untouched.index(1000000) == reference.index(1000000));
  // With k ties every place 0..k is reachable: θ* = 1 among {1, 1, 0} takes rank 1, 2 or 3.
  std::vector<int> seen(4, 0);
  for (int t = 0; t < 300; ++t) ++seen[sgmcmc::rank_among(std::vector<double>{1.0, 1.0, 0.0}, 1.0, untouched)];
  CHECK(seen[0] == 0);
  CHECK((seen[1] > 0 && seen[2] > 0 && seen[3] > 0));  // each has probability 1/3: missing one has probability ~1e-52
}

TEST_CASE("holm_adjusted: Holm's step-down adjusted p-values against a hand-worked example", "[calibration]") {
  // m = 4, p = (0.01, 0.04, 0.03, 0.005). Sorted: 0.005, 0.01, 0.03, 0.04, multiplied by
  // m - j + 1 = 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04; the running maximum keeps the order:
  // 0.02, 0.03, 0.06, 0.06. Back in the given order: (0.03, 0.06, 0.06, 0.02). At α = 0.05 Holm
  // rejects the first and the fourth; Bonferroni (×4) only the fourth; no correction all four.
  const auto adjusted = sgmcmc::holm_adjusted(std::vector<double>{0.01, 0.04, 0.03, 0.005});
  REQUIRE(adjusted.size() == 4);
  CHECK(adjusted[0] == Approx(0.03).epsilon(1e-12));
  CHECK(adjusted[1] == Approx(0.06).epsilon(1e-12));
  CHECK(adjusted[2] == Approx(0.06).epsilon(1e-12));
  CHECK(adjusted[3] == Approx(0.02).epsilon(1e-12));
  // Capped at 1, and monotone: (0.5, 0.6) → (min(1, 2 × 0.5), max(1, 0.6)) = (1, 1).
  CHECK(sgmcmc::holm_adjusted(std::vector<double>{0.5, 0.6}) == std::vector<double>{1.0, 1.0});
  // One test: unchanged.
  CHECK(sgmcmc::holm_adjusted(std::vector<double>{0.2}) == std::vector<double>{0.2});
  CHECK_THROWS(sgmcmc::holm_adjusted(std::vector<double>{0.2, 1.5}));
}
