// sgmcmc.data: row counts from settings, splits, and the running posterior-predictive average.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>
#include <fmt/format.h>

import sgmcmc;

using Catch::Matchers::Contains;

namespace {
sgmcmc::Settings model_section(const std::string& lines) { return sgmcmc::parse_config("[model]\n" + lines, "t.toml")["model"]; }
}  // namespace

TEST_CASE("row_count: an integer is a count, a float a fraction, out of range names the key") {
  CHECK(sgmcmc::row_count(sgmcmc::SectionReader(model_section("test_size = 30\n")), "test_size", 0.1, 200, 0, 199) == 30);
  CHECK(sgmcmc::row_count(sgmcmc::SectionReader(model_section("test_size = 0.25\n")), "test_size", 0.1, 200, 0, 199) == 50);
  CHECK(sgmcmc::row_count(sgmcmc::SectionReader(model_section("")), "test_size", 0.1, 200, 0, 199) == 20);  // the fallback fraction
  CHECK(sgmcmc::row_count(sgmcmc::SectionReader(model_section("subsample = 1.0\n")), "subsample", 1.0, 7, 1, 7) == 7);
  CHECK_THROWS_WITH(sgmcmc::row_count(sgmcmc::SectionReader(model_section("test_size = 200\n")), "test_size", 0.1, 200, 0, 199),
                    Contains("t.toml:2: model.test_size") && Contains("asks for 200 of the 200 rows; expected between 0 and 199"));
  CHECK_THROWS_WITH(sgmcmc::row_count(sgmcmc::SectionReader(model_section("subsample = 2.5\n")), "subsample", 1.0, 7, 1, 7),
                    Contains("a fraction must lie in [0, 1]"));
  CHECK_THROWS_WITH(sgmcmc::row_count(sgmcmc::SectionReader(model_section("subsample = \"half\"\n")), "subsample", 1.0, 7, 1, 7),
                    Contains("expected a number"));
}

TEST_CASE("split_rows: a partition, the rest in file order, the same for the same stream") {
  sgmcmc::Rng a(5, 0), b(5, 0);
  const auto split = sgmcmc::split_rows(100, 30, a);
  CHECK(split.chosen.size() == 30);
  CHECK(split.rest.size() == 70);
  CHECK(std::is_sorted(split.rest.begin(), split.rest.end()));
  std::set<std::size_t> all(split.chosen.begin(), split.chosen.end());
  all.insert(split.rest.begin(), split.rest.end());
  CHECK(all.size() == 100);
  CHECK(sgmcmc::split_rows(100, 30, b).chosen == split.chosen);
}

TEST_CASE("chosen_rows draws split_rows' chosen rows, in the same order, and leaves the stream where it does") {
  // From none to every row, so that the shuffle's positions are swapped over and over.
  for (const auto [rows, count] : {std::pair{1, 0}, std::pair{1, 1}, std::pair{10, 3}, std::pair{100, 30}, std::pair{100, 99},
                                   std::pair{100, 100}, std::pair{5000, 4000}, std::pair{100000, 10}}) {
    INFO(rows << " rows, " << count << " chosen");
    sgmcmc::Rng a(9, 2), b(9, 2);
    const auto split = sgmcmc::split_rows(rows, count, a);
    CHECK(sgmcmc::chosen_rows(rows, count, b) == split.chosen);
    CHECK(a.bits() == b.bits());
  }
}

TEST_CASE("PredictiveAverage: the log of the averaged probabilities, not the average of the logs") {
  // Two test points. Draw 1: p = 0.2 and 0.5; draw 2: p = 0.6 and 0.5. Running averages 0.4 and 0.5,
  // so the mean log predictive density is (log 0.4 + log 0.5)/2; the mean of the logs would be
  // smaller (Jensen), (log 0.2 + log 0.6)/4 + (log 0.5)/2.
  sgmcmc::PredictiveAverage average(2);
  const std::vector<double> first{std::log(0.2), std::log(0.5)}, second{std::log(0.6), std::log(0.5)};
  CHECK(average.add(first) == Approx((std::log(0.2) + std::log(0.5)) / 2).epsilon(1e-14));
  CHECK(average.add(second) == Approx((std::log(0.4) + std::log(0.5)) / 2).epsilon(1e-14));
  CHECK(average.draws() == 2);
  // A probability that underflows exp() still averages correctly in log space.
  sgmcmc::PredictiveAverage tiny(1);
  const std::vector<double> very_small{-2000.0}, zero{-INFINITY};
  tiny.add(very_small);
  CHECK(tiny.add(zero) == Approx(-2000.0 - std::log(2.0)).epsilon(1e-14));
  CHECK(std::isnan(sgmcmc::PredictiveAverage(0).add({})));
}

TEST_CASE("allocate: refuses beyond SGMCMC_MEMORY_LIMIT_MB, naming what, how big and the limit, a bad limit names the variable") {
  // The budget is min(physical memory, the limit): 1 MB here, so 2·10⁵ doubles (1.6 MB) are
  // refused before allocation and 10⁵ (0.8 MB) are allocated.
  struct Limit {
    explicit Limit(const char* value) { setenv("SGMCMC_MEMORY_LIMIT_MB", value, 1); }
    ~Limit() { unsetenv("SGMCMC_MEMORY_LIMIT_MB"); }
  };
  std::vector<double> values;
  {
    const Limit limit("1");
    CHECK(sgmcmc::memory_budget_bytes() == 1'048'576);
    CHECK_THROWS_WITH(sgmcmc::allocate(values, 200'000, 1, "data.csv: 200000 rows"),
                      Contains("data.csv: 200000 rows: cannot allocate 200000 × 8 bytes") &&
                          Contains("more than the 0.00105 GB that SGMCMC_MEMORY_LIMIT_MB = 1 allows"));
    CHECK(values.empty());
    sgmcmc::allocate(values, 100'000, 1, "data.csv: 100000 rows");
    CHECK(values.size() == 100'000);
  }
  for (const char* bad : {"", "0", "1.5", "-3", "lots", "99999999999999999999999"}) {
    const Limit limit(bad);
    CHECK_THROWS_WITH(sgmcmc::memory_budget_bytes(),
                      Contains(fmt::format("environment variable SGMCMC_MEMORY_LIMIT_MB = '{}': expected a positive whole "
                                           "number of megabytes", bad)));
  }
  // Unset, the budget is the machine's memory (positive wherever sysconf knows it).
  CHECK(sgmcmc::memory_budget_bytes() > 1'048'576);
}
