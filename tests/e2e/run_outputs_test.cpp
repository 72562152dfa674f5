// What a run writes, chosen by [output] (issue #23): the parameters the draws hold
// (`output.parameters` patterns, `output.draws = false`), and the CPU seconds recorded beside the
// wall seconds. Through the real CLI on the demo's gaussian model (parameters beta.1 ... beta.5).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>
#include <filesystem>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support.hpp"

import sgmcmc;

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const std::string demo = "run --preset demo --quiet --set run.warmup=0 --set run.iterations=200 --chains 2 ";

fs::path run_demo(const test::TempDir& dir, const std::string& name, const std::string& settings) {
  const auto out = dir.path() / name;
  const auto result = test::run_cli(demo + settings + " --out '" + out.string() + "'");
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  return out;
}

/// The values of column `name` of a Stan CSV file.
std::vector<double> column(const sgmcmc::StanCsv& csv, const std::string& name) {
  const auto at = std::find(csv.columns.begin(), csv.columns.end(), name);
  REQUIRE(at != csv.columns.end());
  std::vector<double> values;
  for (const auto& row : csv.rows) values.push_back(row[static_cast<std::size_t>(at - csv.columns.begin())]);
  return values;
}

}  // namespace

TEST_CASE("output.parameters writes the matching parameters only, with the very values of a full run") {
  test::TempDir dir;
  const auto all = run_demo(dir, "all", "--set output.gradients=exact");
  const auto some = run_demo(dir, "some", "--set 'output.parameters=[\"beta.2\", \"beta.[45]\"]' --set output.gradients=exact");
  for (int k = 1; k <= 2; ++k) {
    const auto full = sgmcmc::read_stan_csv(all / fmt::format("chain-{}.csv", k));
    const auto chosen = sgmcmc::read_stan_csv(some / fmt::format("chain-{}.csv", k));
    CHECK(chosen.columns == std::vector<std::string>{"lp__", "accept_stat__", "stepsize__", "beta.2", "beta.4", "beta.5",
                                                     "held_out_log_density"});
    // Choosing what is written does not touch the chain: the same seed gives the same draws.
    for (const char* name : {"beta.2", "beta.4", "beta.5", "held_out_log_density"}) CHECK(column(chosen, name) == column(full, name));
    const auto full_gradients = sgmcmc::read_stan_csv(all / fmt::format("gradients-{}.csv", k));
    const auto chosen_gradients = sgmcmc::read_stan_csv(some / fmt::format("gradients-{}.csv", k));
    CHECK(chosen_gradients.columns == std::vector<std::string>{"grad_lp.beta.2", "grad_lp.beta.4", "grad_lp.beta.5"});
    for (const char* name : {"grad_lp.beta.2", "grad_lp.beta.5"}) CHECK(column(chosen_gradients, name) == column(full_gradients, name));
  }
  // summary and zv read such a folder: their tables cover the parameters written.
  const auto summary = test::run_cli("summary '" + some.string() + "'");
  INFO(summary.output);
  CHECK(summary.exit_code == 0);
  CHECK_THAT(summary.output, Contains("beta.4"));
  CHECK_THAT(summary.output, !Contains("beta.1 "));
  const auto zv = test::run_cli("zv '" + some.string() + "'");
  INFO(zv.output);
  CHECK(zv.exit_code == 0);
  CHECK_THAT(zv.output, Contains("beta.5"));
}

TEST_CASE("output.draws = false writes no parameter, metrics and manifest as usual") {
  test::TempDir dir;
  const auto out = run_demo(dir, "none", "--set output.draws=false");
  const auto csv = sgmcmc::read_stan_csv(out / "chain-1.csv");
  CHECK(csv.columns == std::vector<std::string>{"lp__", "accept_stat__", "stepsize__"});
  CHECK(csv.rows.size() == 40);  // 200 iterations, thin 5
  CHECK(fs::exists(out / "metrics.csv"));
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["config"]["output"]["draws"] == false);
}

TEST_CASE("output.parameters and output.draws refuse what cannot be meant, naming the key") {
  test::TempDir dir;
  const auto refused = [&](const std::string& settings, const std::string& message) {
    const auto result = test::run_cli(demo + settings + " --out '" + (dir.path() / "refused").string() + "'");
    INFO(result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains(message));
    CHECK(!fs::exists(dir.path() / "refused" / "chain-1.csv"));
  };
  refused("--set 'output.parameters=[\"theta.*\"]'",
          "--set output.parameters=[\"theta.*\"]: output.parameters: 'theta.*' matches no parameter; the model's 5 "
          "parameters are named beta.1, beta.2, beta.3, ..., beta.5");
  refused("--set output.draws=false --set 'output.parameters=[\"beta.1\"]'", "give one of them");
  refused("--set output.parameters=beta.1", "expected an array of strings");
  refused("--set output.draws=false --set output.gradients=exact", "output.parameters selects none");
}

TEST_CASE("each chain records its thread's CPU seconds beside its wall seconds") {
  // Two chains on two threads, each busy all the time: a thread's CPU time cannot exceed the wall
  // time it ran, while the process's CPU time (both threads) would be about twice it. So a CPU
  // column that counted the process, or a wall clock, fails one of the bounds below.
  test::TempDir dir;
  const auto out = run_demo(dir, "timed", "--threads 2 --set run.iterations=4000");
  const auto metrics = test::lines_of(test::read_text(out / "metrics.csv"));
  REQUIRE(test::csv_fields(metrics.front()) ==
          std::vector<std::string>{"chain", "iteration", "seconds", "cpu_seconds", "item_gradients", "log_predictive_density"});
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  for (const auto& chain : manifest["chains"]) {
    const double wall = chain["seconds"], cpu = chain["cpu_seconds"];
    INFO("chain " << chain["chain"] << ": " << wall << " s wall, " << cpu << " s CPU");
    CHECK(cpu > 0.0);
    CHECK(cpu <= wall * 1.02 + 0.002);  // clock granularity and the bookkeeping split
  }
  double previous = -1.0;
  for (std::size_t i = 1; i < metrics.size(); ++i) {
    const auto fields = test::csv_fields(metrics[i]);
    if (fields[0] != "1") continue;
    CHECK(std::stod(fields[3]) >= previous);  // a chain's CPU seconds only grow
    previous = std::stod(fields[3]);
  }
  for (const char* key : {"started", "finished", "host"}) CHECK(manifest["timings"].contains(key));
  CHECK(manifest["timings"]["finished"].get<double>() >= manifest["timings"]["started"].get<double>());
}

TEST_CASE("run.collect = cycle_end keeps the draws of each cycle's last collect_fraction only, as cSG-MCMC does") {
  test::TempDir dir;
  // Ten cycles of L = 100 iterations; collect_fraction = 0.2 keeps iterations 81-100 of each
  // (Zhang et al. 2020: the sampling stage, where the cosine step has shrunk to at most
  // (ε_0/2)(cos(0.8π) + 1) ≈ 0.0955 ε_0).
  const std::string cyclical = "--set run.iterations=1000 --set run.thin=1 --set integrator.step_size=2e-5 --set integrator.schedule=cyclical "
                               "--set integrator.cycle_length=100 ";
  const auto all = run_demo(dir, "all", cyclical);
  const auto ends = run_demo(dir, "ends", cyclical + "--set run.collect=cycle_end --set run.collect_fraction=0.2");
  for (int k = 1; k <= 2; ++k) {
    const auto every_draw = sgmcmc::read_stan_csv(all / fmt::format("chain-{}.csv", k));
    const auto kept = sgmcmc::read_stan_csv(ends / fmt::format("chain-{}.csv", k));
    REQUIRE(every_draw.rows.size() == 1000);
    REQUIRE(kept.rows.size() == 10 * 20);
    // The same chain: collecting changes which draws are written, never the dynamics.
    std::size_t next = 0;
    for (std::size_t i = 0; i < every_draw.rows.size(); ++i)
      if (i % 100 >= 80) CHECK(kept.rows[next++] == every_draw.rows[i]);
    const auto steps = column(kept, "stepsize__");
    // The bound is reached at phase 0.8 exactly; 1e-12 relative absorbs the rounding of the cosine.
    CHECK(*std::max_element(steps.begin(), steps.end()) <= 1e-5 * (std::cos(0.8 * std::numbers::pi) + 1.0) * (1 + 1e-12));
  }
  // With a warmup of 100 and thin = 5, the kept iterations are 185, 190, 195, 200, 285, ...: 4 per cycle.
  const auto thinned = run_demo(dir, "thinned", cyclical + "--set run.collect=cycle_end --set run.warmup=100 --set run.thin=5");
  CHECK(sgmcmc::read_stan_csv(thinned / "chain-1.csv").rows.size() == 40);

  const std::pair<std::string, std::string> refused[] = {
      {"--set run.collect=cycle_end", "needs integrator.schedule = \"cyclical\""},
      {cyclical + "--set run.collect=ends", "unknown collect 'ends'; known: all, cycle_end"},
      {cyclical + "--set run.collect=cycle_end --set run.collect_fraction=0", "run.collect_fraction"},
      {cyclical + "--set run.collect_fraction=0.5", "only read with run.collect = \"cycle_end\""},
      {cyclical + "--set run.collect=cycle_end --set run.iterations=50", "the chain would record no draws"}};
  for (const auto& [settings, message] : refused) {
    const auto result = test::run_cli(demo + settings + " --out '" + (dir.path() / "refused").string() + "'");
    INFO(settings << "\n" << result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains(message));
    CHECK_FALSE(fs::exists(dir.path() / "refused" / "chain-1.csv"));
  }
}
