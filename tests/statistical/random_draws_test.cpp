// The variates of sgmcmc::Rng (modules/core/random.cppm) against their exact laws.
// Rng::normal (a ziggurat) against the standard normal: goodness of fit (Kolmogorov–Smirnov,
// Anderson–Darling), moments, a fine-binned chi-square over [-6, 6] that sees every layer and
// wedge of the ziggurat, and the tail frequencies beyond 3σ, beyond the ziggurat's base
// r ≈ 3.654 (drawn by the separate tail algorithm) and beyond 5σ. The same checks for
// Rng::fill_normal into floats (the float chain's normals: a 128-layer ziggurat, two normals
// from each 64-bit draw, r ≈ 3.443), with the correlation of the two normals of one draw.
// Rng::gamma against the Gamma CDF of Boost.Math (the regularised incomplete gamma function, an
// implementation independent of the sampler's), below and above shape 1.
// Rng::hypergeometric (the minibatch halving's counts) and hypergeometric_probability against
// Boost.Math's hypergeometric probabilities, from tiny to 10⁹-item populations.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>
#include <boost/math/distributions/hypergeometric.hpp>
#include <boost/math/special_functions/gamma.hpp>

#include "statistics.hpp"

import sgmcmc;

namespace {

/// P(|Z| > t) for a standard normal Z.
double two_sided_tail(double t) { return std::erfc(t / std::sqrt(2.0)); }

/// Anderson–Darling A² of a sample against a fully specified continuous law with CDF F:
///   A² = -n - (1/n) Σ_i (2i - 1)[log F(x_(i)) + log(1 - F(x_(n+1-i)))],
/// with 1 - F given separately (`survival`) so that the upper tail keeps its digits.
double anderson_darling(std::vector<double> x, const std::function<double(double)>& cdf,
                        const std::function<double(double)>& survival) {
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size();
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i)
    sum += static_cast<double>(2 * i + 1) * (std::log(cdf(x[i])) + std::log(survival(x[n - 1 - i])));
  return -static_cast<double>(n) - sum / static_cast<double>(n);
}

double standard_normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double standard_normal_survival(double x) { return 0.5 * std::erfc(x / std::sqrt(2.0)); }

/// P(A² > z) under the null for large n: one minus Marsaglia & Marsaglia (2004), "Evaluating the
/// Anderson–Darling distribution", J. Stat. Software 9(2), their two-piece approximation of the
/// limiting CDF ADinf (z < 2 and z ≥ 2; it gives the textbook critical values 1.933, 2.492 and
/// 3.857 at 10%, 5% and 1%). The upper piece's tail is taken with expm1 to keep its digits.
double anderson_darling_p(double z) {
  if (z < 2.0) {
    const double poly = 2.00012 + (0.247105 - (0.0649821 - (0.0347962 - (0.011672 - 0.00168691 * z) * z) * z) * z) * z;
    return 1.0 - std::exp(-1.2337141 / z) / std::sqrt(z) * poly;
  }
  const double inner = 1.0776 - (2.30695 - (0.43424 - (0.082433 - (0.008056 - 0.0003146 * z) * z) * z) * z) * z;
  return -std::expm1(-std::exp(inner));
}

/// A generator of standard normals under test: fills the block (double's or float's, widened).
using NormalFill = std::function<void(sgmcmc::Rng&, std::vector<double>&)>;

void fill_doubles(sgmcmc::Rng& rng, std::vector<double>& block) { rng.fill_normal(block); }

void fill_floats(sgmcmc::Rng& rng, std::vector<double>& block) {
  std::vector<float> floats(block.size());
  rng.fill_normal(std::span<float>(floats));
  std::copy(floats.begin(), floats.end(), block.begin());
}

/// The ziggurats' base r: Marsaglia & Tsang (2000) print 3.6541528853610088 for 256 layers and
/// 3.442619855899 for 128.
constexpr double double_base = 3.6541528853610088, float_base = 3.442619855899;

void check_goodness_of_fit(const NormalFill& fill) {
  // n = 10^6 draws. Under the null sqrt(n)·D follows Kolmogorov's law, P(sqrt(n) D > 2.3) ≈
  // 2 exp(-2·2.3²) ≈ 5e-5; A² has P(A² > z) from Marsaglia & Marsaglia's formula, required
  // above 1e-4 (a false alarm once in 10,000 seeds). A generator off by 0.3% in its CDF anywhere
  // gives sqrt(n)·D ≈ 3 and fails.
  sgmcmc::Rng rng(20260, sgmcmc::chain_stream(0));
  std::vector<double> x(1'000'000);
  fill(rng, x);
  const double ks = test::ks_statistic_normal(x, 0.0, 1.0) * std::sqrt(static_cast<double>(x.size()));
  CHECK(ks < 2.3);
  const double a2 = anderson_darling(x, standard_normal_cdf, standard_normal_survival);
  INFO("A² = " << a2 << ", p = " << anderson_darling_p(a2));
  CHECK(anderson_darling_p(a2) > 1e-4);
}

void check_law_over_10_8_draws(const NormalFill& fill, double base) {
  const std::uint64_t n = 100'000'000;
  const double bin_width = 0.01, edge = 6.0;
  const auto bins = static_cast<std::size_t>(2 * edge / bin_width);
  std::vector<std::uint64_t> counts(bins + 2, 0);  // [-∞, -6), bins..., [6, ∞)
  double sums[5] = {0, 0, 0, 0, 0};                 // Σ z^p, p = 1..4 (index p)
  std::uint64_t beyond_3 = 0, beyond_base = 0, beyond_5 = 0, positive = 0;
  double pair_products = 0.0, pair_square_products = 0.0;  // Σ z_{2k} z_{2k+1}, Σ (z²_{2k} - 1)(z²_{2k+1} - 1)
  sgmcmc::Rng rng(20261, sgmcmc::chain_stream(1));
  std::vector<double> block(1 << 16);
  std::uint64_t drawn = 0;
  for (; drawn < n; drawn += block.size()) {
    fill(rng, block);
    for (std::size_t k = 0; k + 1 < block.size(); k += 2) {
      pair_products += block[k] * block[k + 1];
      pair_square_products += (block[k] * block[k] - 1.0) * (block[k + 1] * block[k + 1] - 1.0);
    }
    for (double z : block) {
      const double z2 = z * z;
      sums[1] += z, sums[2] += z2, sums[3] += z2 * z, sums[4] += z2 * z2;
      const double a = std::abs(z);
      beyond_3 += a > 3.0, beyond_base += a > base, beyond_5 += a > 5.0, positive += z > 0.0;
      const double slot = std::floor((z + edge) / bin_width);
      counts[slot < 0 ? 0 : slot >= static_cast<double>(bins) ? bins + 1 : static_cast<std::size_t>(slot) + 1] += 1;
    }
  }
  const auto total = static_cast<double>(drawn);

  SECTION("moments E z = 0, E z² = 1, E z³ = 0, E z⁴ = 3 within 5 standard errors") {
    // The sample mean of z^p has standard error sqrt(Var(z^p)/n): Var z = 1, Var z² = E z⁴ - 1 = 2,
    // Var z³ = E z⁶ = 15, Var z⁴ = E z⁸ - 9 = 105 - 9 = 96.
    const double expected[5] = {0, 0, 1, 0, 3}, var[5] = {0, 1, 2, 15, 96};
    for (int p = 1; p <= 4; ++p) {
      INFO("p = " << p << ": mean of z^p = " << sums[p] / total);
      CHECK(std::abs(sums[p] / total - expected[p]) < 5 * std::sqrt(var[p] / total));
    }
  }

  SECTION("chi-square over 1,200 bins of width 0.01 on [-6, 6] and the two outer bins") {
    // Expected counts n·p_b with p_b from erfc. Bins with an expected count below 5 are pooled
    // with their outer neighbours into one tail bin per side, so the χ² approximation holds.
    // With k bins the statistic has mean k - 1 and sd sqrt(2(k - 1)); 6 sd above the mean is
    // p < 1e-6 even allowing for χ²'s right skew (Wilson–Hilferty: ≈ 4e-7 at k ≈ 1,000).
    // A wedge accepted with a 1% error over one layer's width moves ~10⁴ draws and fails.
    std::vector<double> observed, expected;
    double pooled_observed = 0.0, pooled_expected = 0.0;
    const auto probability = [&](std::size_t b) {  // of counts[b]
      const auto cdf = [](double t) { return 0.5 * std::erfc(-t / std::sqrt(2.0)); };
      const double low = b == 0 ? -INFINITY : -edge + static_cast<double>(b - 1) * bin_width;
      const double high = b == bins + 1 ? INFINITY : -edge + static_cast<double>(b) * bin_width;
      return (low >= 0 ? 0.5 * std::erfc(low / std::sqrt(2.0)) - 0.5 * std::erfc(high / std::sqrt(2.0))
                       : cdf(high) - cdf(low));
    };
    for (std::size_t b = 0; b < counts.size(); ++b) {
      const double e = total * probability(b);
      if (e < 5.0) {  // only the outermost bins on either side
        pooled_observed += static_cast<double>(counts[b]);
        pooled_expected += e;
        continue;
      }
      if (pooled_expected > 0.0) {  // close the pooled lower tail at the first full bin
        observed.push_back(pooled_observed), expected.push_back(pooled_expected);
        pooled_observed = pooled_expected = 0.0;
      }
      observed.push_back(static_cast<double>(counts[b])), expected.push_back(e);
    }
    if (pooled_expected > 0.0) observed.push_back(pooled_observed), expected.push_back(pooled_expected);
    double chi2 = 0.0;
    for (std::size_t k = 0; k < observed.size(); ++k) chi2 += (observed[k] - expected[k]) * (observed[k] - expected[k]) / expected[k];
    const double df = static_cast<double>(observed.size() - 1);
    INFO("χ² = " << chi2 << " on " << df << " degrees of freedom");
    CHECK(chi2 < df + 6.0 * std::sqrt(2.0 * df));
  }

  SECTION("tail frequencies beyond 3σ, beyond the ziggurat's base r and beyond 5σ; the sign") {
    // Each count is Binomial(n, p) with p = P(|Z| > t): tolerance 5 sd, sqrt(n p (1 - p)).
    // Beyond 5σ, p = 5.73e-7: 57 expected, sd 7.6; a generator without a tail gives 0 and fails,
    // one with a tail twice too heavy gives ≈ 115 and fails. The sign: Binomial(n, 1/2).
    const std::pair<std::uint64_t, double> tails[] = {{beyond_3, 3.0}, {beyond_base, base}, {beyond_5, 5.0}};
    for (const auto& [count, t] : tails) {
      const double p = two_sided_tail(t), mean = total * p, sd = std::sqrt(total * p * (1 - p));
      INFO("beyond " << t << ": " << count << " draws, expected " << mean << " ± " << sd);
      CHECK(std::abs(static_cast<double>(count) - mean) < 5 * sd);
    }
    CHECK(std::abs(static_cast<double>(positive) - total / 2) < 5 * std::sqrt(total / 4));
  }

  SECTION("the two normals of one 64-bit draw (float: its two halves) are uncorrelated, and so are their squares") {
    // Over the n/2 pairs (z, z') of independent normals: E[zz'] = 0 with Var(zz') = 1, and
    // E[(z² - 1)(z'² - 1)] = 0 with Var = (Var z²)² = 4: each mean within 5 standard errors.
    // Layers shared between the halves (the same bits read twice) would correlate |z| and |z'|.
    const double pairs = total / 2;
    INFO("mean z z' = " << pair_products / pairs << ", mean (z² - 1)(z'² - 1) = " << pair_square_products / pairs);
    CHECK(std::abs(pair_products / pairs) < 5 * std::sqrt(1.0 / pairs));
    CHECK(std::abs(pair_square_products / pairs) < 5 * std::sqrt(4.0 / pairs));
  }
}

/// A hypergeometric law: `draws` items without replacement from `population`, `successes` marked.
struct Hypergeometric {
  std::uint64_t population, successes, draws;
  std::uint64_t low() const { return draws > population - successes ? draws - (population - successes) : 0; }
  std::uint64_t high() const { return std::min(draws, successes); }
  double mean() const { return static_cast<double>(draws) * successes / population; }
  double sd() const {
    const double p = static_cast<double>(successes) / population;
    return std::sqrt(draws * p * (1 - p) * (population - draws) / (population - 1.0));
  }
  /// P(X = k) as the exact product of ratios, its logs summed in long double (log1p of each
  /// ratio's distance from 1, exact to the last bits).
  double product_probability(std::uint64_t k) const {
    const auto term = [](long double numerator, long double denominator) {
      return std::log1p((numerator - denominator) / denominator);
    };
    const std::uint64_t failures = population - successes;
    long double log_p = 0;
    for (std::uint64_t i = 1; i <= k; ++i) log_p += term(draws - k + i, i);  // C(n, k)
    for (std::uint64_t i = 0; i < k; ++i) log_p += term(successes - i, population - i);
    for (std::uint64_t j = 0; j < draws - k; ++j) log_p += term(failures - j, population - k - j);
    return static_cast<double>(std::exp(log_p));
  }
  /// P(X = k) by Boost.Math (its own factorial-ratio and Lanczos forms; independent of the
  /// saddle-point form under test). Boost counts in `unsigned`: populations up to 4·10⁹.
  double boost_probability(std::uint64_t k) const {
    const boost::math::hypergeometric_distribution<double> law(static_cast<unsigned>(successes), static_cast<unsigned>(draws),
                                                               static_cast<unsigned>(population));
    return boost::math::pdf(law, static_cast<unsigned>(k));
  }
};

/// The laws the halving of a minibatch meets: tiny, a support that starts above 0, a weak-scaling
/// run's root (10⁷ items, 40,000 drawn, sd 100), a 10⁹-item root with a small batch, two items
/// of a leaf's parent, and a lopsided split.
const Hypergeometric hypergeometric_cases[] = {{20, 7, 9},        {50, 45, 20},           {10'000'000, 5'000'000, 40'000},
                                               {1'000'000'000, 300'000'000, 100}, {131'073, 65'536, 2}, {3'000'000, 2'999'000, 2'500}};

}  // namespace

TEST_CASE("normal draws: Kolmogorov-Smirnov and Anderson-Darling against N(0, 1)") { check_goodness_of_fit(fill_doubles); }

TEST_CASE("normal draws: moments, fine-binned chi-square and tail frequencies over 10^8 draws") {
  check_law_over_10_8_draws(fill_doubles, double_base);
}

TEST_CASE("float normal draws: Kolmogorov-Smirnov and Anderson-Darling against N(0, 1)") {
  check_goodness_of_fit(fill_floats);
}

TEST_CASE("float normal draws: moments, fine-binned chi-square and tail frequencies over 10^8 draws") {
  check_law_over_10_8_draws(fill_floats, float_base);
}

TEST_CASE("gamma draws: Kolmogorov-Smirnov and Anderson-Darling against Gamma(a, b), a < 1 and a ≥ 1") {
  // n = 10^5 draws per shape, rate b = 2: shapes 0.3 (the boost Gamma(a + 1)·u^(1/a)), 1, 2.5
  // and 40 (Marsaglia–Tsang's squeeze near its limit). The same thresholds as the normal test:
  // P(sqrt(n)·D > 2.3) ≈ 5e-5 under the null, and the Anderson–Darling p-value above 1e-4, so
  // the four shapes together raise a false alarm about once in 2,500 seeds. A², weighted toward
  // the tails, sees errors there that KS, weighted toward the middle, may miss.
  sgmcmc::Rng rng(20261, sgmcmc::chain_stream(1));
  const double rate = 2.0;
  for (const double shape : {0.3, 1.0, 2.5, 40.0}) {
    std::vector<double> x(100'000);
    for (double& v : x) v = rng.gamma(shape, rate);
    const auto cdf = [&](double v) { return boost::math::gamma_p(shape, rate * v); };
    const auto survival = [&](double v) { return boost::math::gamma_q(shape, rate * v); };
    const double ks = test::ks_statistic(x, cdf) * std::sqrt(static_cast<double>(x.size()));
    const double a2 = anderson_darling(x, cdf, survival);
    INFO("shape " << shape << ": sqrt(n)·D = " << ks << ", A² = " << a2 << ", p = " << anderson_darling_p(a2));
    CHECK(ks < 2.3);
    CHECK(anderson_darling_p(a2) > 1e-4);
  }
}

TEST_CASE("hypergeometric probabilities agree with the exact product to 1e-12, and sum to 1") {
  // Quantity: P(X = k) at the mode, at 1, 2, 4 and 8 sd either side, and at both ends of the
  // support. Reference: the exact product C(n, k)·Π_{i<k} (K-i)/(N-i)·Π_{j<n-k} (F-j)/(N-k-j),
  // its logs summed in long double (each term good to 1e-19, at most 4·10⁴ terms: 1e-14 in all).
  // Boost.Math's pdf is no reference at this precision: at N = 10⁹ it is 1e-10 off (against
  // mpmath at 40 digits, which agrees with the product). Tolerance: 1e-12 relative where P ≥
  // 1e-300; and the probabilities over the whole support sum to 1 within 1e-12. Broken into the
  // textbook form exp(log Γ(n+1) - log Γ(x+1) - log Γ(n-x+1) + x log p + (n-x) log q) of each
  // binomial, the relative error is 4e-6 at N = 10⁹ and 2e-8 at 10⁷.
  for (const Hypergeometric& law : hypergeometric_cases) {
    const std::uint64_t low = law.low(), high = law.high();
    std::vector<std::uint64_t> points = {low, high};
    for (const double z : {0.0, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0, 8.0, -8.0}) {
      const double k = std::round(law.mean() + z * law.sd());
      if (k >= static_cast<double>(low) && k <= static_cast<double>(high)) points.push_back(static_cast<std::uint64_t>(k));
    }
    double worst = 0.0;
    for (const std::uint64_t k : points) {
      const double exact = law.product_probability(k);
      if (exact >= 1e-300)
        worst = std::max(worst, std::abs(sgmcmc::hypergeometric_probability(k, law.population, law.successes, law.draws) - exact) / exact);
    }
    double sum = 0.0;
    for (std::uint64_t k = low; k <= high; ++k) sum += sgmcmc::hypergeometric_probability(k, law.population, law.successes, law.draws);
    INFO("N = " << law.population << ", K = " << law.successes << ", n = " << law.draws << ": worst relative error "
                << worst << ", sum - 1 = " << sum - 1.0);
    CHECK(worst < 1e-12);
    CHECK(std::abs(sum - 1.0) < 1e-12);
    CHECK(sgmcmc::hypergeometric_probability(high + 1, law.population, law.successes, law.draws) == 0.0);
  }
}

TEST_CASE("hypergeometric draws: Pearson's chi-square against the exact law, 10^6 draws per case") {
  // Quantity: the counts of each value k over R = 10⁶ draws. Reference: R·P(X = k) from Boost.Math
  // over the mean ± 8 sd (the rest of the support holds at most 1.5e-9 of the mass, in the
  // lopsided law: 0.0015 of the 10⁶ draws, which join the edge cells). Cells: the values in order, merged with their neighbours until each expects at
  // least 20, so that Pearson's X² = Σ (O - E)²/E is χ²(C - 1) to within O(1/20). Tolerance: X²
  // below χ²(C - 1)'s upper 10⁻⁶ quantile: a correct sampler fails once in 10⁶ runs per case.
  // Exact: every draw inside the support. Both paths are met (draw by draw up to 64 draws: the
  // first, second and fifth laws; inversion beyond). Broken, the draw-by-draw test `<` made `<=`,
  // X² is 203,373 and 146,090 (limits 41 and 36); the inversion's downward ratio with k + 1 for k,
  // X² is 244 to 66,944, each far above its limit.
  sgmcmc::Rng rng(20262, sgmcmc::chain_stream(2));
  const double repeats = 1e6;
  for (const Hypergeometric& law : hypergeometric_cases) {
    const std::uint64_t low = law.low(), high = law.high();
    const double reach = 8 * law.sd() + 1;
    const auto first = static_cast<std::uint64_t>(std::max<double>(static_cast<double>(low), law.mean() - reach));
    const auto last = static_cast<std::uint64_t>(std::min<double>(static_cast<double>(high), law.mean() + reach));
    std::vector<double> counts(last - first + 1, 0.0);
    double below = 0, above = 0;
    bool inside = true;
    for (int r = 0; r < repeats; ++r) {
      const std::uint64_t k = rng.hypergeometric(law.population, law.successes, law.draws);
      inside = inside && k >= low && k <= high;
      if (k < first) below += 1;
      else if (k > last) above += 1;
      else counts[k - first] += 1;
    }
    std::vector<double> observed, expected;
    double o = below, e = 0;
    for (std::uint64_t k = first; k <= last; ++k) {
      o += counts[k - first];
      e += repeats * law.boost_probability(k);
      if (e >= 20) {
        observed.push_back(o);
        expected.push_back(e);
        o = e = 0;
      }
    }
    observed.back() += o + above;  // the last values, short of 20 expected, join the last cell
    expected.back() += e;
    double x2 = 0;
    for (std::size_t c = 0; c < observed.size(); ++c)
      x2 += (observed[c] - expected[c]) * (observed[c] - expected[c]) / expected[c];
    const double cells = static_cast<double>(observed.size());
    const double limit = test::chi_square_limit(cells - 1);
    INFO("N = " << law.population << ", K = " << law.successes << ", n = " << law.draws << ": X² = " << x2 << " over "
                << cells << " cells, limit " << limit);
    CHECK(inside);
    CHECK(x2 < limit);
  }
}
