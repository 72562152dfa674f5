// The minibatch estimator: unbiased for ∇U at any θ, and equal to the exact gradient when the
// batch is the whole data set. The minibatch sampler: every n-subset equally likely, within one
// leaf of its halving and across leaves, and a data-parallel rank's share of a batch exactly the
// one-process batch's items in its block.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "gaussian_fixture.hpp"
#include "statistics.hpp"

namespace {

std::vector<double> estimate(sgmcmc::Estimator& estimator, const sgmcmc::Model& model, std::span<const double> theta,
                             sgmcmc::Rng& rng, sgmcmc::Cost& cost) {
  auto workspace = model.make_workspace();
  sgmcmc::ChainContext context{model, *workspace, rng, cost};
  std::vector<double> gradient(model.dimension());
  estimator.estimate(theta, gradient, context);
  return gradient;
}

/// An estimator from TOML, for the errors that name where a key was set.
std::unique_ptr<sgmcmc::Estimator> make(const std::string& toml, const sgmcmc::Model& model) {
  auto config = sgmcmc::parse_config(toml, "e.toml");
  sgmcmc::SectionReads reads;
  auto estimator = sgmcmc::make_estimator(sgmcmc::SectionReader(config["estimator"], reads), model);
  sgmcmc::reject_unknown_keys(config["estimator"], reads);
  return estimator;
}

/// The batch's items in increasing order.
std::vector<std::size_t> sorted(std::span<const std::size_t> batch) {
  std::vector<std::size_t> items(batch.begin(), batch.end());
  std::sort(items.begin(), items.end());
  return items;
}

/// True when a batch's items, in increasing order, are distinct and below N.
bool distinct_below(const std::vector<std::size_t>& ascending, std::size_t items) {
  return std::adjacent_find(ascending.begin(), ascending.end()) == ascending.end() &&
         (ascending.empty() || ascending.back() < items);
}

}  // namespace

TEST_CASE("minibatch estimator is unbiased at several θ, with and without replacement") {
  // Quantity: the mean of R = 20,000 estimates (batch 5 of N = 50) per coordinate.
  // Reference: the exact gradient. Tolerance: 5 Monte Carlo sd, the sd being the estimates' own
  // sample sd / sqrt(R) (estimates are independent draws given θ).
  test::GaussianFixture fixture(50, 3);
  const auto& model = *fixture.model;
  sgmcmc::Rng rng(8, 1);
  sgmcmc::Cost cost;
  const auto exact = sgmcmc::make_estimator(sgmcmc::ExactParameters{}, model);
  for (const bool replacement : {false, true}) {
    const auto minibatch = sgmcmc::make_estimator(sgmcmc::MinibatchParameters{.batch_size = 5, .replacement = replacement}, model);
    for (const std::vector<double>& theta : {std::vector<double>{0, 0, 0}, {1.5, -2, 0.3}, {-4, 4, 1}}) {
      const auto truth = estimate(*exact, model, theta, rng, cost);
      const int repeats = 20'000;
      std::vector<double> sum(3, 0.0), sum_squares(3, 0.0);
      for (int r = 0; r < repeats; ++r) {
        const auto g = estimate(*minibatch, model, theta, rng, cost);
        for (std::size_t j = 0; j < 3; ++j) {
          sum[j] += g[j];
          sum_squares[j] += g[j] * g[j];
        }
      }
      for (std::size_t j = 0; j < 3; ++j) {
        const double mean = sum[j] / repeats, sd = std::sqrt(sum_squares[j] / repeats - mean * mean);
        INFO("replacement " << replacement << ", coordinate " << j);
        CHECK(sd > 0.0);  // it is a stochastic estimate
        CHECK(std::abs(mean - truth[j]) < 5 * sd / std::sqrt(repeats));
      }
    }
  }
}

TEST_CASE("a minibatch as large as the data set is the exact gradient, and both count their cost") {
  test::GaussianFixture fixture(50, 3);
  const auto& model = *fixture.model;
  sgmcmc::Rng rng(8, 1);
  const std::vector<double> theta{0.7, -0.1, 2.0};
  sgmcmc::Cost exact_cost, full_cost;
  const auto exact = estimate(*sgmcmc::make_estimator(sgmcmc::ExactParameters{}, model), model, theta, rng, exact_cost);
  const auto full =
      estimate(*sgmcmc::make_estimator(sgmcmc::MinibatchParameters{.batch_size = 50}, model), model, theta, rng, full_cost);
  CHECK(full == exact);  // the same items in the same order and the same arithmetic: bit for bit
  CHECK_THROWS_WITH(make("[estimator]\nbatch_size = 500\n", model),
                    Catch::Matchers::Contains("e.toml:2: estimator.batch_size: a batch of 500 items is larger than the data set"));
  CHECK(exact_cost.item_gradients == 50);
  CHECK(exact_cost.full_passes == 1);
  CHECK(full_cost.item_gradients == 50);
  sgmcmc::Cost small_cost;
  estimate(*sgmcmc::make_estimator(sgmcmc::MinibatchParameters{.batch_size = 7}, model), model, theta, rng, small_cost);
  CHECK(small_cost.item_gradients == 7);
}

TEST_CASE("a batch drawn without replacement is a uniformly random subset of distinct items") {
  // Quantity: how often each n-subset of the N items is drawn, over R batches (one leaf of the
  // halving: Floyd's sampler alone).
  // Reference: every one of the C(N, n) subsets has probability 1/C(N, n), so the counts are
  // multinomial with equal cells and Pearson's X² = Σ (count - R/C)² / (R/C) is χ²(C - 1) to
  // within O(1/expected count) at 10,000, 60,000 and 200 expected draws a cell. Tolerance: X²
  // below χ²(C - 1)'s upper 10⁻⁶ quantile. Exact: every batch of n distinct items below N.
  // Broken, Floyd's collision rule dropped (a taken t kept instead of j), batches repeat items
  // and the distinctness check fails.
  struct Case {
    std::size_t items, batch, repeats;
  };
  for (const Case& c : {Case{7, 3, 350'000}, Case{6, 5, 360'000}, Case{100, 2, 990'000}}) {
    sgmcmc::MinibatchSampler sampler(c.items, c.batch, false);
    sgmcmc::Rng rng(12, 3);
    std::map<std::vector<std::size_t>, double> counts;
    bool distinct = true;
    for (std::size_t r = 0; r < c.repeats; ++r) {
      const auto subset = sorted(sampler.draw(rng));
      distinct = distinct && subset.size() == c.batch && distinct_below(subset, c.items);
      counts[subset] += 1;
    }
    double cells = 1.0;  // C(N, n)
    for (std::size_t k = 0; k < c.batch; ++k) cells = cells * static_cast<double>(c.items - k) / static_cast<double>(k + 1);
    const double expected = static_cast<double>(c.repeats) / cells;
    double x2 = (cells - static_cast<double>(counts.size())) * expected;  // the cells never drawn
    for (const auto& [subset, count] : counts) x2 += (count - expected) * (count - expected) / expected;
    INFO(c.batch << " of " << c.items << ": X² = " << x2 << " over " << cells << " cells");
    CHECK(distinct);
    CHECK(static_cast<double>(counts.size()) <= cells);
    CHECK(x2 < test::chi_square_limit(cells - 1));
  }
}

TEST_CASE("batches of data beyond one leaf: pairs and bin counts follow the uniform law across the halving") {
  // N = 4·2¹⁶ + 5 items: the halving splits three times before its leaves, each split drawing a
  // hypergeometric count. Two quantities, against exact laws (bins b = ⌊8i/N⌋ or ⌊64i/N⌋ of
  // sizes |b|, counted exactly):
  //  - Pairs (n = 2, R = 360,000): the bins of a batch's two items, an unordered pair {a ≤ b},
  //    has probability |a||b|/C(N, 2) for a < b and C(|a|, 2)/C(N, 2) for a = b, a multinomial
  //    over 36 cells expecting ≥ 5,600 each: X² is χ²(35). It sees a wrong split between halves
  //    and a leaf's items drawn twice.
  //  - Bin counts (n = 1,000, R = 2,000): O_b, the batch
  //    items in bin b summed over the batches, has mean R·n|b|/N; the bins' counts in one batch
  //    are multivariate hypergeometric, whose covariance is (N - n)/(N - 1) times the
  //    multinomial's, so X²·(N - 1)/(N - n) with X² = Σ (O_b - E_b)²/E_b is χ²(63) to within
  //    O(1/E_b) (E_b ≈ 31,000). It sees an item's inclusion probability off n/N anywhere in the
  //    data, in either direction (counts too uneven or too even).
  // Tolerance: X² below χ²'s upper 10⁻⁶ quantile, and for the bin counts also above its lower
  // 10⁻⁶ quantile. Exact: every batch of n distinct items below N. Broken, each
  // split's count halved instead of drawn: the pairs' X² is 1.1·10⁷ (the bin counts, even at the
  // 8 leaves but drawn within them, give 38: not caught there); Floyd's collision rule dropped:
  // repeated items, caught by the distinctness check.
  const std::size_t items = 4 * sgmcmc::MinibatchSampler::leaf_items + 5;
  const auto bin_size = [&](std::size_t bins, std::size_t b) { return (b + 1) * items / bins - b * items / bins; };
  const auto bin_of = [&](std::size_t bins, std::size_t item) {
    std::size_t b = item * bins / items;
    while ((b + 1) * items / bins <= item) ++b;
    while (b * items / bins > item) --b;
    return b;
  };
  sgmcmc::Rng rng(13, 5);
  bool distinct = true;
  {
    sgmcmc::MinibatchSampler sampler(items, 2, false);
    const std::size_t repeats = 360'000, bins = 8;
    std::vector<double> pairs(bins * bins, 0.0);
    for (std::size_t r = 0; r < repeats; ++r) {
      const auto pair = sorted(sampler.draw(rng));
      distinct = distinct && pair.size() == 2 && distinct_below(pair, items);
      pairs[bin_of(bins, pair[0]) * bins + bin_of(bins, pair[1])] += 1;  // pair[0] < pair[1]: a ≤ b
    }
    const double all_pairs = 0.5 * static_cast<double>(items) * static_cast<double>(items - 1);
    double x2 = 0.0;
    for (std::size_t a = 0; a < bins; ++a)
      for (std::size_t b = a; b < bins; ++b) {
        const double sa = static_cast<double>(bin_size(bins, a)), sb = static_cast<double>(bin_size(bins, b));
        const double expected = static_cast<double>(repeats) * (a == b ? 0.5 * sa * (sa - 1) : sa * sb) / all_pairs;
        x2 += (pairs[a * bins + b] - expected) * (pairs[a * bins + b] - expected) / expected;
      }
    INFO("pairs: X² = " << x2 << " over 36 cells");
    CHECK(x2 < test::chi_square_limit(35));
  }
  {
    const std::size_t repeats = 2'000, bins = 64, n = 1'000;
    sgmcmc::MinibatchSampler sampler(items, n, false);
    std::vector<double> counts(bins, 0.0);
    for (std::size_t r = 0; r < repeats; ++r) {
      const auto batch = sorted(sampler.draw(rng));
      distinct = distinct && batch.size() == n && distinct_below(batch, items);
      for (const std::size_t item : batch) counts[bin_of(bins, item)] += 1;
    }
    double x2 = 0.0;
    for (std::size_t b = 0; b < bins; ++b) {
      const double expected = static_cast<double>(repeats * n) * static_cast<double>(bin_size(bins, b)) / static_cast<double>(items);
      x2 += (counts[b] - expected) * (counts[b] - expected) / expected;
    }
    x2 *= static_cast<double>(items - 1) / static_cast<double>(items - n);
    INFO("bin counts: X²·(N-1)/(N-n) = " << x2 << " over 64 bins");
    CHECK(x2 < test::chi_square_limit(63));
    CHECK(x2 > test::chi_square_floor(63));
  }
  CHECK(distinct);
}

TEST_CASE("a rank's share of a batch is exactly the one-process batch's items in its block, and the stream moves alike") {
  // Exact, for 40 draws each: blocks of 1, 2 and 3 ranks (row_block_start's ⌊N·r/P⌋; with 3 the
  // edges cut leaves in the middle) and a block inside one leaf; batches of 1,000 and of 5, and
  // with replacement (every item returned, whatever the block). Each rank's part is the
  // one-process batch's items in its block, in the batch's order; the parts together hold the
  // whole batch; every rank's stream ends where the one process's does.
  const std::size_t items = 4 * sgmcmc::MinibatchSampler::leaf_items + 5;
  const auto in_block = [](std::span<const std::size_t> batch, sgmcmc::ItemBlock block) {
    std::vector<std::size_t> share;
    for (const std::size_t item : batch)
      if (block.holds(item)) share.push_back(item);
    return share;
  };
  for (const std::size_t n : {std::size_t{1'000}, std::size_t{5}}) {
    for (const std::size_t ranks : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
      sgmcmc::MinibatchSampler whole(items, n, false);
      std::vector<sgmcmc::MinibatchSampler> shares;
      std::vector<sgmcmc::ItemBlock> blocks;
      for (std::size_t r = 0; r < ranks; ++r) {
        blocks.push_back({items * r / ranks, items * (r + 1) / ranks});
        shares.emplace_back(items, n, false, blocks.back());
      }
      sgmcmc::Rng one(21, 1);
      std::vector<sgmcmc::Rng> each(ranks, one);
      bool same = true;
      for (int draw = 0; draw < 40; ++draw) {
        const auto batch = whole.draw(one);
        std::size_t held = 0;
        for (std::size_t r = 0; r < ranks; ++r) {
          const auto part = shares[r].draw(each[r]);
          const auto expected = in_block(batch, blocks[r]);
          held += part.size();
          same = same && std::equal(part.begin(), part.end(), expected.begin(), expected.end()) && each[r] == one;
        }
        same = same && held == batch.size();
      }
      INFO(ranks << " ranks, batches of " << n);
      CHECK(same);
    }
  }
  sgmcmc::MinibatchSampler whole(items, 300, false), inside(items, 300, false, sgmcmc::ItemBlock{70'000, 71'000});
  sgmcmc::Rng a(22, 1), b(22, 1);
  std::size_t shared = 0;
  for (int draw = 0; draw < 40; ++draw) {
    const auto expected = in_block(whole.draw(a), {70'000, 71'000});
    const auto part = inside.draw(b);
    shared += part.size();
    CHECK(std::equal(part.begin(), part.end(), expected.begin(), expected.end()));
  }
  CHECK(shared > 0);  // 40 batches of 300 put about 46 items in a block of 1,000
  sgmcmc::MinibatchSampler with(items, 50, true), with_share(items, 50, true, sgmcmc::ItemBlock{0, 10});
  sgmcmc::Rng c(23, 1), d(23, 1);
  const auto all = with.draw(c);
  const auto share = with_share.draw(d);
  CHECK(std::equal(all.begin(), all.end(), share.begin(), share.end()));
}
