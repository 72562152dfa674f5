// The float chain (run.chain_precision = "float") through the real CLI, on the mlp plugin with
// float storage and no hidden layer, a gaussian family with a fixed noise sd: a Bayesian linear
// regression y_i = w x_i + b + N(0, 1) noise under N(0, 1) priors on w and b, whose target is
// Gaussian with a known precision. The law SGLD samples at a fixed step is known exactly too (below),
// and the float chain must reach it; the same seed gives the same bits on 1 and 2 threads; a run
// stopped at a checkpoint and resumed writes the uninterrupted run's files; and what the float
// path does not support is refused at start-up, naming run.chain_precision.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "support.hpp"

import sgmcmc;

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

constexpr int rows = 20;

/// x_i = ±1 alternately (Σx = 0, Σx² = N), y_i = 0.5 x_i + 0.3 + 0.2 ((i mod 3) - 1).
double x_of(int i) { return i % 2 == 0 ? 1.0 : -1.0; }
double y_of(int i) { return 0.5 * x_of(i) + 0.3 + 0.2 * ((i % 3) - 1); }

std::string data_csv() {
  std::string text;
  for (int i = 0; i < rows; ++i) text += fmt::format("{},{}\n", y_of(i), x_of(i));
  return text;
}

/// The run's configuration: SGLD with the exact gradient (batch = all rows, no gradient noise).
std::string config(const fs::path& data, const std::string& extra = "") {
  return fmt::format(R"([model]
name = "mlp"
layers = []
family = "gaussian"
noise_sd = 1
storage = "float"
data = "{}"
test_size = 0
[estimator]
name = "exact"
[integrator]
name = "sgld"
step_size = 0.05
[run]
chain_precision = "float"
warmup = 100
iterations = 40000
eval_every = 40000
{})",
                     data.string(), extra);
}

/// Column `name` of a chain file.
std::vector<double> column(const fs::path& chain, const std::string& name) {
  const auto csv = sgmcmc::read_stan_csv(chain);
  const auto at = std::find(csv.columns.begin(), csv.columns.end(), name);
  REQUIRE(at != csv.columns.end());
  const auto k = static_cast<std::size_t>(at - csv.columns.begin());
  std::vector<double> values;
  for (const auto& row : csv.rows) values.push_back(row[k]);
  return values;
}

}  // namespace

TEST_CASE("float chain: SGLD on a gaussian linear model reaches its exact stationary law (mean and sd)") {
  // The target: U(w, b) = Σ_i (y_i - w x_i - b)²/2 + (w² + b²)/2, Gaussian with precision
  // H = diag(Σx_i² + 1, N + 1) = diag(21, 21) (Σx_i = 0) and mean μ_w = Σx_i y_i / 21,
  // μ_b = Σy_i / 21. SGLD with the exact gradient, θ' = θ - (ε/2)H(θ - μ) + sqrt(ε)ξ, is per
  // coordinate an AR(1) process with ρ = 1 - εh/2 and innovation variance ε: its stationary law
  // has mean μ and variance v = ε/(1 - ρ²) = 1/(h(1 - εh/4)) (not the posterior's 1/h: with
  // ε = 0.05, h = 21, ρ = 0.475, v = 0.06457 against 1/21 = 0.04762, sd 0.2541 against 0.2182).
  // Monte Carlo error over n = 40,000 draws of an AR(1): the mean's standard error is
  // sqrt(v (1 + ρ)/((1 - ρ) n)) = 0.00213; the sample variance's relative standard error is
  // sqrt(2(1 + ρ²)/((1 - ρ²) n)) = 0.0089, so the sd's is 0.0045. Tolerances: 5 standard errors.
  // Float rounding of θ (|θ| < 2, a float's spacing there at most 1.2e-7) adds at most ~1e-7 to
  // each step, unbiased to nearest: far below the tolerances. A chain that took the double
  // path's normals for floats wrongly (one per draw, the wrong scale) or moved by the wrong step
  // misses the sd by more than 2%.
  test::TempDir dir;
  const auto data = dir.write("data.csv", data_csv());
  const auto toml = dir.write("run.toml", config(data));
  const auto out = dir.path() / "out";
  const auto result = test::run_cli(fmt::format("run --config '{}' --seed 11 --out '{}' --quiet", toml.string(), out.string()));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);

  double sum_xy = 0.0, sum_y = 0.0;
  for (int i = 0; i < rows; ++i) sum_xy += x_of(i) * y_of(i), sum_y += y_of(i);
  const double h = rows + 1.0, epsilon = 0.05, rho = 1.0 - epsilon * h / 2.0;
  const double variance = 1.0 / (h * (1.0 - epsilon * h / 4.0));
  const std::pair<const char*, double> expected[] = {{"w1.1.1", sum_xy / h}, {"b1.1", sum_y / h}};
  for (const auto& [name, mean] : expected) {
    const auto draws = column(out / "chain-1.csv", name);
    const auto n = static_cast<double>(draws.size());
    REQUIRE(n == 40000);
    const double sample_mean = std::accumulate(draws.begin(), draws.end(), 0.0) / n;
    double squares = 0.0;
    for (const double value : draws) squares += (value - sample_mean) * (value - sample_mean);
    const double sample_sd = std::sqrt(squares / (n - 1));
    const double mean_error = std::sqrt(variance * (1 + rho) / ((1 - rho) * n));
    const double sd_relative_error = 0.5 * std::sqrt(2 * (1 + rho * rho) / ((1 - rho * rho) * n));
    INFO(name << ": mean " << sample_mean << " (exact " << mean << " ± " << mean_error << "), sd " << sample_sd
              << " (exact " << std::sqrt(variance) << ", relative ± " << sd_relative_error << ")");
    CHECK(std::abs(sample_mean - mean) < 5 * mean_error);
    CHECK(std::abs(sample_sd / std::sqrt(variance) - 1.0) < 5 * sd_relative_error);
  }
}

TEST_CASE("float chain: the same seed gives the same bits on 1 and 2 threads, and a resumed run continues bit for bit") {
  test::TempDir dir;
  const auto data = dir.write("data.csv", data_csv());
  // Minibatches of 5 (drawn from the chain's stream, which is state), 2 chains, a checkpoint every 100,
  // a draw every 3rd iteration: the stop at 200 records none, so the checkpoint's θ must be
  // copied from the float state there, not left from the last draw.
  const auto base = config(data, "chains = 2\ncheckpoint_every = 100\nthin = 3\n");
  std::string text = base;
  text.replace(text.find("iterations = 40000"), 18, "iterations = 300");
  text.replace(text.find("name = \"exact\""), 14, "name = \"minibatch\"\nbatch_size = 5");
  const auto file = dir.write("short.toml", text);
  const auto run = [&](const std::string& name, const std::string& options) {
    const auto result = test::run_cli(fmt::format("run --config '{}' --seed 5 {} --out '{}' --quiet", file.string(), options,
                                                  (dir.path() / name).string()));
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
  };
  run("one", "--threads 1");
  run("two", "--threads 2");
  run("stopped", "--threads 2 --stop-after 200");
  REQUIRE(fs::exists(dir.path() / "stopped" / "checkpoint-1.bin"));
  const auto resumed = test::run_cli(fmt::format("run --resume '{}' --quiet", (dir.path() / "stopped").string()));
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  for (const char* chain : {"chain-1.csv", "chain-2.csv"}) {
    const auto one = test::draws_without_elapsed_time(dir.path() / "one" / chain);
    CHECK(one == test::draws_without_elapsed_time(dir.path() / "two" / chain));
    CHECK(one == test::draws_without_elapsed_time(dir.path() / "stopped" / chain));
  }
  CHECK(column(dir.path() / "one" / "chain-1.csv", "b1.1") != column(dir.path() / "one" / "chain-2.csv", "b1.1"));
}

TEST_CASE("float chain: what it does not support is refused at start-up, naming run.chain_precision") {
  test::TempDir dir;
  const auto data = dir.write("data.csv", data_csv());
  const auto toml = dir.write("run.toml", config(data));
  const std::pair<std::string, std::string> refused[] = {
      {"--set model.storage=double", "float-gradient"},
      {"--set integrator.name=sghmc", "only sgld has a float path"},
      {"--set integrator.mass=2", "integrator.mass"},
      {"--set estimator.name=cv", "estimator"},
      {"--set integrator.name=mala --set corrector.name=mh", "MH test"},
      {"--set run.chain_precision=half", "known: double, float"},
  };
  for (const auto& [settings, reason] : refused) {
    const auto result = test::run_cli(fmt::format("run --config '{}' {} --out '{}' --quiet", toml.string(), settings,
                                                  (dir.path() / "out").string()));
    INFO(settings << ": " << result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains("run.chain_precision") && Contains(reason));
    CHECK(!fs::exists(dir.path() / "out" / "chain-1.csv"));
  }
  // The gaussian demo model stores double: no float gradient.
  const auto demo = test::run_cli(fmt::format("run --preset demo --set run.chain_precision=float --out '{}' --quiet",
                                              (dir.path() / "demo").string()));
  CHECK(demo.exit_code == 2);
  CHECK_THAT(demo.output, Contains("run.chain_precision") && Contains("float-gradient"));
}

TEST_CASE("float chain: check-model compares mlp's float gradient with the double interface's") {
  // The float gradient against scale × the batch gradient + the prior's at float-rounded points, to
  // 1e-4 relative. (check-model's finite differences of a float-storage model fail at their step
  // of 1e-5, tests/plugins/mlp_test.cpp says why, so only this line is read.)
  const std::string network = "check-model mlp --set model.n=200 --set model.layers=[6,4] --set model.features=3";
  const auto in_float = test::run_cli(network + " --set model.storage=float");
  INFO(in_float.output);
  CHECK_THAT(in_float.output, Contains("PASS  float gradient (scaled_gradient_float)"));
  const auto in_double = test::run_cli(network);
  INFO(in_double.output);
  CHECK_THAT(in_double.output, Contains("SKIP  float gradient (scaled_gradient_float)"));
  CHECK(in_double.exit_code == 0);
}
