// Uniformity tests of simulation-based calibration (SBC) ranks (Talts, Betancourt, Simpson,
// Vehtari & Gelman 2018, "Validating Bayesian inference algorithms with simulation-based
// calibration", Algorithm 2 and §4).
//
// Each of R replications gives a rank r ∈ {0, ..., L}: the number of L (near-independent)
// posterior draws below the θ* the data were simulated from. For an exact sampler r is uniform on
// {0, ..., L} (Talts et al. 2018, Theorem 1), and the replications are independent.
//
// Two tests of that uniformity:
//  - Pearson's χ² on B bins of the rank values (bin b holds the values ⌊b(L+1)/B⌋ .. ⌊(b+1)(L+1)/B⌋ - 1,
//    expected count R·(its size)/(L+1)); statistic Σ (O - E)²/E, referred to χ² with B - 1 degrees
//    of freedom (Talts et al. 2018, §4.1, use the histogram's bins the same way).
//  - The ECDF test with simultaneous bands (Säilynoja, Bürkner & Vehtari 2022, "Graphical test for
//    discrete uniformity and its applications in goodness-of-fit evaluation and multiple sample
//    comparison", §2.2, the simulation-based adjustment). At the K = L points z_k = k/(L+1) the
//    count c_k = #{r_i < k} is exactly Binomial(R, z_k) under uniformity. A count's pointwise
//    two-sided tail probability is p_k(c) = min(1, 2 min(P(C ≤ c), P(C ≥ c))), C ~ Bin(R, z_k);
//    the statistic is γ̂ = min_k p_k(c_k). Its null law is found by simulating M sets of R uniform
//    ranks; the adjusted pointwise level γ is the ⌊αM⌋-th smallest (0-based) of the M simulated
//    minima, so that P(γ̂ < γ) ≤ α up to Monte Carlo error; the simultaneous 1 - α band at z_k is
//    {c : p_k(c) ≥ γ} and the test rejects when the ECDF leaves it at any point (γ̂ < γ). The
//    Monte Carlo p-value is (1 + #{m : γ_m ≤ γ̂})/(M + 1).
//
// Ties: with discrete parameters or repeated draws (an MH rejection, a thinned chain that did not
// move) some draws may equal θ*. Counting only the draws strictly below θ* then puts θ* below
// every tied draw, and the ranks pile up low. Breaking the ties at random, θ* taking each of its
// k + 1 places among the k tied draws with probability 1/(k + 1), makes θ* and the L draws
// exchangeable again, so the rank is uniform on {0, ..., L} for an exact sampler whatever the ties.
//
// A verdict over several parameters and both tests corrects for multiplicity by Holm's step-down
// procedure (Holm 1979, "A simple sequentially rejective multiple test procedure", Scand. J.
// Statist. 6, 65-70): with the m p-values sorted, p_(1) ≤ ... ≤ p_(m), the adjusted p-value of the
// i-th is max over j ≤ i of min(1, (m - j + 1) p_(j)); rejecting where it is below α keeps the
// probability of any false rejection at most α (the family-wise error rate) under any dependence
// between the tests.
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/chi_squared.hpp>
export module sgmcmc.calibration;
import sgmcmc.random;

export namespace sgmcmc {

/// P(X > x) for X ~ χ²(degrees_of_freedom).
double chi_square_upper_tail(double x, double degrees_of_freedom);

struct ChiSquareTest {
  double statistic = 0.0;
  std::size_t degrees_of_freedom = 0;
  double p_value = 1.0;
  std::vector<std::size_t> observed;  // counts per bin
  std::vector<double> expected;
};

/// Pearson's χ² of ranks in {0, ..., max_rank} over `bins` bins (2 ≤ bins ≤ max_rank + 1).
ChiSquareTest rank_chi_square(std::span<const std::size_t> ranks, std::size_t max_rank, std::size_t bins);

struct EcdfBandTest {
  double alpha = 0.05;
  double gamma = 0.0;        // the adjusted pointwise level
  double statistic = 1.0;    // γ̂, the smallest pointwise tail probability of the observed ECDF
  double p_value = 1.0;      // Monte Carlo p-value of γ̂
  bool rejected = false;     // γ̂ < γ: the ECDF leaves the simultaneous band
  std::vector<double> z;     // evaluation points k/(L+1), k = 1..L
  std::vector<std::size_t> count, lower, upper;  // c_k and the band's smallest and largest count
};

/// The ECDF test of ranks in {0, ..., max_rank} with a simultaneous 1 - alpha band from
/// `simulations` uniform rank sets drawn from stream (seed, 0); deterministic for a given seed.
EcdfBandTest rank_ecdf_test(std::span<const std::size_t> ranks, std::size_t max_rank, double alpha,
                            std::size_t simulations, std::uint64_t seed);

/// The SBC rank of `truth` among `draws`: the number of draws below it plus, when k draws equal it,
/// a uniform draw from {0, ..., k} from `rng` (ties broken at random; no draw is taken without ties).
std::size_t rank_among(std::span<const double> draws, double truth, Rng& rng);

/// Holm's step-down adjusted p-values, in the order of `p_values` (each in [0, 1]).
std::vector<double> holm_adjusted(std::span<const double> p_values);

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

double chi_square_upper_tail(double x, double degrees_of_freedom) {
  return boost::math::cdf(boost::math::complement(boost::math::chi_squared(degrees_of_freedom), std::max(0.0, x)));
}

ChiSquareTest rank_chi_square(std::span<const std::size_t> ranks, std::size_t max_rank, std::size_t bins) {
  const std::size_t values = max_rank + 1;
  if (bins < 2 || bins > values) throw std::invalid_argument("rank_chi_square: needs 2 <= bins <= max_rank + 1");
  ChiSquareTest test;
  test.observed.assign(bins, 0);
  test.expected.assign(bins, 0.0);
  const auto bin_of_start = [&](std::size_t b) { return b * values / bins; };
  const double total = static_cast<double>(ranks.size());
  for (std::size_t b = 0; b < bins; ++b)
    test.expected[b] = total * static_cast<double>(bin_of_start(b + 1) - bin_of_start(b)) / static_cast<double>(values);
  for (std::size_t r : ranks) {
    if (r > max_rank) throw std::invalid_argument("rank_chi_square: a rank above max_rank");
    // The bin b with ⌊b·V/B⌋ ≤ r < ⌊(b+1)·V/B⌋.
    std::size_t b = (r * bins) / values;
    while (b + 1 < bins && bin_of_start(b + 1) <= r) ++b;
    while (b > 0 && bin_of_start(b) > r) --b;
    ++test.observed[b];
  }
  for (std::size_t b = 0; b < bins; ++b) {
    const double difference = static_cast<double>(test.observed[b]) - test.expected[b];
    test.statistic += difference * difference / test.expected[b];
  }
  test.degrees_of_freedom = bins - 1;
  test.p_value = chi_square_upper_tail(test.statistic, static_cast<double>(test.degrees_of_freedom));
  return test;
}

namespace {

/// p_k(c) = min(1, 2 min(P(C ≤ c), P(C ≥ c))) for every c = 0..R, C ~ Binomial(R, z_k) (Boost.Math's
/// binomial, whose complement keeps the upper tail's precision).
std::vector<double> two_sided_tails(std::size_t replications, double z) {
  const boost::math::binomial_distribution<double> counts(static_cast<double>(replications), z);
  std::vector<double> tails(replications + 1);
  for (std::size_t c = 0; c <= replications; ++c) {
    const double below = boost::math::cdf(counts, static_cast<double>(c));
    const double above = c == 0 ? 1.0 : boost::math::cdf(boost::math::complement(counts, static_cast<double>(c - 1)));
    tails[c] = std::min(1.0, 2.0 * std::min(below, above));
  }
  return tails;
}

/// c_k = #{r_i < k} for k = 1..L, from ranks in {0..L}.
std::vector<std::size_t> ecdf_counts(std::span<const std::size_t> ranks, std::size_t max_rank) {
  std::vector<std::size_t> histogram(max_rank + 1, 0);
  for (std::size_t r : ranks) {
    if (r > max_rank) throw std::invalid_argument("rank_ecdf_test: a rank above max_rank");
    ++histogram[r];
  }
  std::vector<std::size_t> counts(max_rank);
  std::size_t below = 0;
  for (std::size_t k = 1; k <= max_rank; ++k) {
    below += histogram[k - 1];
    counts[k - 1] = below;
  }
  return counts;
}

double smallest_tail(const std::vector<std::vector<double>>& tails, const std::vector<std::size_t>& counts) {
  double smallest = 1.0;
  for (std::size_t k = 0; k < counts.size(); ++k) smallest = std::min(smallest, tails[k][counts[k]]);
  return smallest;
}

}  // namespace

EcdfBandTest rank_ecdf_test(std::span<const std::size_t> ranks, std::size_t max_rank, double alpha,
                            std::size_t simulations, std::uint64_t seed) {
  if (max_rank < 1) throw std::invalid_argument("rank_ecdf_test: needs max_rank >= 1");
  if (ranks.empty()) throw std::invalid_argument("rank_ecdf_test: no ranks");
  if (!(alpha > 0.0 && alpha < 1.0)) throw std::invalid_argument("rank_ecdf_test: needs 0 < alpha < 1");
  if (simulations < 1) throw std::invalid_argument("rank_ecdf_test: needs simulations >= 1");
  const std::size_t n = ranks.size();
  EcdfBandTest test;
  test.alpha = alpha;
  std::vector<std::vector<double>> tails(max_rank);
  for (std::size_t k = 1; k <= max_rank; ++k) {
    const double z = static_cast<double>(k) / static_cast<double>(max_rank + 1);
    test.z.push_back(z);
    tails[k - 1] = two_sided_tails(n, z);
  }
  test.count = ecdf_counts(ranks, max_rank);
  test.statistic = smallest_tail(tails, test.count);

  // The null law of γ̂: M sets of R ranks uniform on {0..L}.
  Rng rng(seed, 0);
  std::vector<double> minima(simulations);
  std::vector<std::size_t> simulated(n);
  for (auto& minimum : minima) {
    for (auto& r : simulated) r = static_cast<std::size_t>(rng.index(max_rank + 1));
    minimum = smallest_tail(tails, ecdf_counts(simulated, max_rank));
  }
  std::sort(minima.begin(), minima.end());
  test.gamma = minima[static_cast<std::size_t>(std::floor(alpha * static_cast<double>(simulations)))];
  // Tail probabilities equal in exact arithmetic (P(C ≤ c) and P(C ≥ R - c) at z = 1/2) may differ
  // in their last bits: compare with a relative tolerance far below any gap between attainable values.
  constexpr double ties = 1e-9;
  test.rejected = test.statistic < test.gamma * (1 - ties);
  const auto at_most = std::upper_bound(minima.begin(), minima.end(), test.statistic * (1 + ties)) - minima.begin();
  test.p_value = (1.0 + static_cast<double>(at_most)) / (static_cast<double>(simulations) + 1.0);
  for (const auto& tail : tails) {
    std::size_t lower = 0, upper = n;
    while (lower < n && tail[lower] < test.gamma * (1 - ties)) ++lower;
    while (upper > 0 && tail[upper] < test.gamma * (1 - ties)) --upper;
    test.lower.push_back(lower);
    test.upper.push_back(upper);
  }
  return test;
}

std::size_t rank_among(std::span<const double> draws, double truth, Rng& rng) {
  std::size_t below = 0, tied = 0;
  for (double draw : draws) {
    if (draw < truth) ++below;
    else if (draw == truth) ++tied;
  }
  return tied == 0 ? below : below + static_cast<std::size_t>(rng.index(tied + 1));
}

std::vector<double> holm_adjusted(std::span<const double> p_values) {
  const std::size_t m = p_values.size();
  std::vector<std::size_t> order(m);
  for (std::size_t i = 0; i < m; ++i) {
    if (!(p_values[i] >= 0.0 && p_values[i] <= 1.0)) throw std::invalid_argument("holm_adjusted: a p-value outside [0, 1]");
    order[i] = i;
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return p_values[a] < p_values[b] || (p_values[a] == p_values[b] && a < b);
  });
  std::vector<double> adjusted(m);
  double running = 0.0;  // the step-down maximum keeps the adjusted values in the p-values' order
  for (std::size_t j = 0; j < m; ++j) {
    running = std::max(running, std::min(1.0, static_cast<double>(m - j) * p_values[order[j]]));
    adjusted[order[j]] = running;
  }
  return adjusted;
}

}  // namespace sgmcmc
