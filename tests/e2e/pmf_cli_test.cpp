// The pmf plugin through the real CLI: its presets learn on a smaller simulated set, a chain
// starts at the model's own starting point, the same seed gives the same bytes on 1 and 2
// threads, and bad ratings files exit with code 2 naming file:line.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "support.hpp"

import sgmcmc;

using Catch::Matchers::Contains;
using test::without_seconds;

namespace pmf_cli_test {

/// The last row of metrics.csv: {log_predictive_density, rmse}; and the first.
std::vector<double> metrics_row(const std::filesystem::path& run, bool last) {
  const auto table = sgmcmc::read_numeric_csv(run / "metrics.csv");
  REQUIRE(table.header.back() == "rmse");
  const std::size_t row = last ? table.rows - 1 : 0;
  return {table.at(row, table.columns - 2), table.at(row, table.columns - 1)};
}

/// The numbers of the last draw line of a Stan CSV file, after lp__, accept_stat__, stepsize__.
std::vector<double> last_draw(const std::filesystem::path& file) {
  std::istringstream in(test::read_text(file));
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#' && line[0] != 'l') last = line;
  std::vector<double> values;
  std::istringstream fields(last);
  std::string field;
  for (int column = 0; std::getline(fields, field, ','); ++column)
    if (column >= 3) values.push_back(std::stod(field));
  return values;
}

}  // namespace pmf_cli_test

using namespace pmf_cli_test;

TEST_CASE("each pmf preset learns on simulated data: held-out RMSE well below the mean-only predictor's") {
  // 300 users, 500 items, 20,000 ratings (10% held out) of the default simulation: planted rank-5
  // signal U*ᵀV* of variance 1, noise sd 0.5, rounded to 1..5. Predicting the mean rating alone
  // has RMSE ≈ sqrt(1 + 0.25 + 1/12) ≈ 1.15 (a little less after clipping); the true factors ≈
  // sqrt(0.25 + 1/12) ≈ 0.58. 500 iterations of each preset (ε as tuned) pass below 0.8,
  // and the log predictive density rises from its first evaluation.
  test::TempDir dir;
  for (const char* preset : {"pmf-sgld", "pmf-sgldcv", "pmf-saga"}) {
    INFO(preset);
    const auto out = dir.path() / preset;
    const auto result = test::run_cli(fmt::format("run --preset {} --set model.users=300 --set model.items=500 "
                                                  "--set model.ratings=20000 --set run.iterations=500 "
                                                  "--set run.eval_every=50 --out '{}' --quiet",
                                                  preset, out.string()));
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
    const auto first = metrics_row(out, false), last = metrics_row(out, true);
    INFO("first " << first[0] << ", " << first[1] << "; last " << last[0] << ", " << last[1]);
    CHECK(last[1] < 0.8);
    CHECK(last[0] > first[0]);
  }
}

TEST_CASE("a pmf chain starts at the model's random starting point, not at zero") {
  // U = V = 0 is a saddle of PMF's potential (every gradient term has a factor U or V), so a chain
  // started there never leaves it but by noise. With ε = 1e-12 one SGLD step moves θ by about
  // 1e-6, so the first draw is the starting point: N(0, init_sd²) entries, init_sd = 0.1, of which
  // the largest of 30 × 3 + 20 × 3 is far above 0.01 (all below 0.01 has probability 0.08^150).
  test::TempDir dir;
  const auto out = dir.path() / "run";
  const auto result = test::run_cli(fmt::format("run --preset pmf-sgld --set model.users=30 --set model.items=20 "
                                                "--set model.ratings=200 --set model.rank=3 --set estimator.batch_size=50 --set run.iterations=1 "
                                                "--set run.thin=1 --set integrator.step_size=1e-12 --out '{}' --quiet",
                                                out.string()));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto theta = last_draw(out / "chain-1.csv");
  REQUIRE(theta.size() > 100);
  double largest = 0.0;
  for (double x : theta) largest = std::max(largest, std::abs(x));
  CHECK(largest > 0.01);
}

TEST_CASE("pmf: the same seed gives the same draws and metrics on 1 and 2 threads, Gibbs steps included") {
  test::TempDir dir;
  const auto run = [&](int threads) {
    const auto out = dir.path() / fmt::format("t{}", threads);
    const auto result = test::run_cli(fmt::format("run --preset pmf-sgld --set model.users=40 --set model.items=30 "
                                                  "--set model.ratings=400 --set model.rank=3 --set model.gibbs_every=3 --set estimator.batch_size=50 "
                                                  "--set run.iterations=60 --set run.thin=20 --chains 2 --threads {} "
                                                  "--out '{}' --quiet",
                                                  threads, out.string()));
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
    return out;
  };
  const auto one = run(1), two = run(2);
  for (const char* chain : {"chain-1.csv", "chain-2.csv"}) CHECK(test::draws_without_elapsed_time(one / chain) == test::draws_without_elapsed_time(two / chain));
  CHECK(without_seconds(test::read_text(one / "metrics.csv")) == without_seconds(test::read_text(two / "metrics.csv")));
  CHECK(test::read_text(one / "chain-1.csv") != test::read_text(one / "chain-2.csv"));
}

TEST_CASE("bad ratings through the CLI: exit code 2 and the file, line and reason") {
  test::TempDir dir;
  const auto path = dir.write("u.data", "1\t10\t4\t0\n2\t10\t7\t0\n");
  const auto result = test::run_cli(fmt::format("run --preset pmf-sgld --set model.data='\"{}\"' --out '{}' --quiet",
                                                path.string(), (dir.path() / "run").string()));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains(path.string() + ":2: rating 7 is outside the declared range [1, 5]"));
}

TEST_CASE("runners/figures/pmf_figure.py draws Figure 3 and prints its table from real CLI runs") {
  // A small simulation (120 users, 150 items, 4,000 ratings), two user counts, 100 iterations of
  // each preset with batches of 200: the script's runs, table and PNG, not the science.
  if (std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") != 0) {
    FAIL("python3-matplotlib is missing: third_party/setup.sh installs it");
  }
  test::TempDir dir;
  const auto result = test::shell(fmt::format(
      "/usr/bin/python3 '{}/runners/figures/pmf_figure.py' --sgmcmc '{}' --out '{}' --users 60,120 --iterations 100 "
      "--set model.users=120 --set model.items=150 --set model.ratings=4000 --set estimator.batch_size=200",
      SGMCMC_SOURCE_DIR, SGMCMC_CLI, dir.path().string()));
  test::check_figure(result, dir.path(), "pmf_figure3.png", {"60-pmf-sgld", "120-pmf-sgldcv", "120-pmf-saga"});
}
