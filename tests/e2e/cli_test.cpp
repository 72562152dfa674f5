// The real `sgmcmc` binary: the demo preset end to end, reproducibility across thread counts,
// and bad input (clear message, non-zero exit, no crash, no manifest that looks complete).
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support.hpp"

import sgmcmc;

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

using test::lines_of;

using test::without_seconds;

}  // namespace

TEST_CASE("sgmcmc run --preset demo writes manifest, Stan CSV chains and metrics") {
  test::TempDir dir;
  const auto out = dir.path() / "demo";
  const auto result = test::run_cli("run --preset demo --set run.iterations=400 --out '" + out.string() + "'");
  INFO(result.output);
  REQUIRE(result.exit_code == 0);

  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["status"] == "complete");
  CHECK(manifest["config"]["model"]["name"] == "gaussian");
  CHECK(manifest["config"]["run"]["iterations"] == 400);
  CHECK(manifest["config"]["integrator"]["temperature"] == 1.0);  // a default, resolved
  CHECK(manifest["seed"] == 1);
  const int chains = manifest["config"]["run"]["chains"];
  const int thin = manifest["config"]["run"]["thin"], eval_every = manifest["config"]["run"]["eval_every"];
  const int warmup = manifest["config"]["run"]["warmup"];
  const int batch = manifest["config"]["estimator"]["batch_size"];
  REQUIRE(manifest["chains"].size() == static_cast<std::size_t>(chains));
  CHECK(manifest["chains"][0]["item_gradients"] == (warmup + 400) * batch);

  for (int k = 1; k <= chains; ++k) {
    const auto csv = sgmcmc::read_stan_csv(out / fmt::format("chain-{}.csv", k));  // the reader `summary` uses
    CHECK(csv.columns == std::vector<std::string>{"lp__", "accept_stat__", "stepsize__", "beta.1", "beta.2", "beta.3",
                                                  "beta.4", "beta.5"});
    CHECK(csv.rows.size() == static_cast<std::size_t>(400 / thin));
    CHECK(test::read_text(out / fmt::format("chain-{}.csv", k)).find("# lp__ = 0: not computed") != std::string::npos);
    for (const auto& row : csv.rows) {  // 8 finite numbers, lp__ 0 (not computed, as the comment says)
      CHECK(row.size() == 8);
      CHECK(row[0] == 0.0);
      for (std::size_t j = 1; j < row.size(); ++j) CHECK(std::isfinite(row[j]));
    }
  }

  const auto metrics = lines_of(test::read_text(out / "metrics.csv"));
  CHECK(metrics[0] == "chain,iteration,seconds,cpu_seconds,item_gradients,log_predictive_density");
  CHECK(metrics.size() == 1 + static_cast<std::size_t>(chains * (warmup + 400) / eval_every));  // metrics cover the warmup
  // The held-out log predictive density of a well-specified Gaussian model with σ = 1 is close to
  // the entropy bound -½log(2πe) ≈ -1.419; anything far off means a broken metric.
  const auto last = metrics.back();
  const double lpd = std::stod(last.substr(last.rfind(',') + 1));
  CHECK(lpd == Approx(-1.419).margin(0.1));
}

TEST_CASE("the gaussian-obabo-mh preset records ΔH̃ and the decision of every block") {
  test::TempDir dir;
  const auto out = dir.path() / "mh";
  const auto result = test::run_cli("run --preset gaussian-obabo-mh --chains 1 --set run.iterations=500 --out '" + out.string() + "'");
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.output, Contains("acceptance rate"));
  const auto csv = sgmcmc::read_stan_csv(out / "chain-1.csv");
  REQUIRE(csv.rows.size() == 50);  // one draw per block (thin = every = 10)
  const std::vector<std::string> sampler{"lp__", "accept_stat__", "stepsize__", "delta_energy__", "accepted__", "beta.1"};
  CHECK(std::equal(sampler.begin(), sampler.end(), csv.columns.begin()));
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  std::size_t accepted = 0;
  for (const auto& values : csv.rows) {
    const double accept_stat = values[1], delta_energy = values[3], decision = values[4];
    CHECK(accept_stat == Approx(std::min(1.0, std::exp(-delta_energy))).epsilon(1e-12));
    CHECK((decision == 0.0 || decision == 1.0));
    accepted += decision == 1.0;
  }
  CHECK(manifest["chains"][0]["blocks"] == 50);  // after the warmup
  CHECK(manifest["chains"][0]["accepted_blocks"] == accepted);
}

TEST_CASE("same seed, same files, bit for bit, on 1 thread or 4") {
  test::TempDir dir;
  const std::string common = "run --preset demo --quiet --set run.iterations=300 --chains 4 ";
  REQUIRE(test::run_cli(common + "--seed 77 --threads 1 --out '" + (dir.path() / "one").string() + "'").exit_code == 0);
  REQUIRE(test::run_cli(common + "--seed 77 --threads 4 --out '" + (dir.path() / "four").string() + "'").exit_code == 0);
  for (int k = 1; k <= 4; ++k) {
    const auto name = fmt::format("chain-{}.csv", k);
    CHECK(test::draws_without_elapsed_time(dir.path() / "one" / name) ==
          test::draws_without_elapsed_time(dir.path() / "four" / name));
  }
  CHECK(without_seconds(test::read_text(dir.path() / "one" / "metrics.csv")) ==
        without_seconds(test::read_text(dir.path() / "four" / "metrics.csv")));
  // ... and another seed gives other draws.
  REQUIRE(test::run_cli(common + "--seed 78 --out '" + (dir.path() / "other").string() + "'").exit_code == 0);
  CHECK(test::read_text(dir.path() / "one" / "chain-1.csv") != test::read_text(dir.path() / "other" / "chain-1.csv"));
}

TEST_CASE("sgmcmc run refuses saga tables of all chains beyond estimator.memory_limit_mb, before writing") {
  // The demo's gaussian model has the GLM form: 8,000 training items, 64,000 bytes of table a
  // chain. 0.1 MB (104,857.6 bytes) holds one chain's table, not two.
  test::TempDir dir;
  const std::string run = "run --preset demo --quiet --set run.iterations=50 --set estimator.name=saga "
                          "--set estimator.memory_limit_mb=0.1 --out '" + (dir.path() / "saga").string() + "' --chains ";
  const auto two = test::run_cli(run + "2");
  INFO(two.output);
  CHECK(two.exit_code == 2);
  CHECK_THAT(two.output, Contains("per chain, 0.12 MB for 2 chains, more than the limit of 0.1 MB for all chains together"));
  CHECK(!fs::exists(dir.path() / "saga" / "chain-1.csv"));
  CHECK(test::run_cli(run + "1").exit_code == 0);
}

TEST_CASE("a diverging chain stops with a message and keeps what it wrote") {
  test::TempDir dir;
  const auto out = dir.path() / "diverged";
  // ε·λ_max ≫ 4 makes SGLD's linear recursion unstable: |1 - ελ/2| > 1 grows geometrically.
  const auto result = test::run_cli("run --preset demo --chains 1 --set integrator.step_size=1.0 --set run.thin=1 --set run.warmup=0 --out '" +
                                    out.string() + "'");
  INFO(result.output);
  CHECK(result.exit_code == 1);
  CHECK_THAT(result.output, Contains("chain 1 diverged at iteration") && Contains("chain-1.csv"));
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["status"] == "diverged");
  const std::uint64_t stopped = manifest["chains"][0]["iterations"];
  std::size_t rows = 0;
  for (const auto& line : lines_of(test::read_text(out / "chain-1.csv"))) rows += !line.starts_with("#") && !line.starts_with("lp__");
  CHECK(rows == stopped);
  CHECK(stopped < 5000);
}

TEST_CASE("a runaway chain that stays finite stops as diverged beyond run.divergence_threshold") {
  // SGLD on the demo's posterior (λ_max ≈ 8,000: 8,000 training rows of unit-variance features)
  // at ε = 5.5e-4 has ελ_max/2 ≈ 2.2, so its largest mode grows by |1 - ελ/2| ≈ 1.2 per step:
  // after 600 steps |θ| ≈ 1e54, still finite, and past 1e10 (the default threshold × the start's
  // scale 1 at θ = 0) within about 120 steps.
  test::TempDir dir;
  const auto run = [&](const std::string& name, const std::string& extra) {
    return test::run_cli("run --preset demo --chains 1 --set integrator.step_size=5.5e-4 --set run.thin=1 "
                         "--set run.warmup=0 --set run.iterations=600 " + extra + " --out '" + (dir.path() / name).string() + "'");
  };
  const auto largest_draw = [&](const std::string& name) {
    const auto csv = sgmcmc::read_stan_csv(dir.path() / name / "chain-1.csv");
    double largest = 0.0;
    for (const auto& row : csv.rows)
      for (std::size_t j = 3; j < row.size(); ++j) largest = std::max(largest, std::abs(row[j]));
    return std::pair{largest, csv.rows.size()};
  };

  // Only the finiteness check (today's behaviour before the threshold): the runaway completes.
  const auto unchecked = run("unchecked", "--set run.divergence_threshold=0");
  INFO(unchecked.output);
  REQUIRE(unchecked.exit_code == 0);
  const auto [unchecked_largest, unchecked_rows] = largest_draw("unchecked");
  CHECK(unchecked_rows == 600);
  CHECK(std::isfinite(unchecked_largest));
  CHECK(unchecked_largest > 1e30);

  const auto stopped = run("stopped", "");
  INFO(stopped.output);
  CHECK(stopped.exit_code == 1);
  CHECK_THAT(stopped.output, Contains("chain 1 diverged at iteration") && Contains("run.divergence_threshold") &&
                                 Contains("a runaway chain"));
  const auto manifest = nlohmann::json::parse(test::read_text(dir.path() / "stopped" / "manifest.json"));
  CHECK(manifest["status"] == "diverged");
  const std::uint64_t iterations = manifest["chains"][0]["iterations"];
  const auto [largest, rows] = largest_draw("stopped");
  CHECK(rows == iterations);  // every draw before the runaway step kept, the runaway one not written
  CHECK(rows < 300);
  CHECK(largest <= 1e10);

  // A threshold that is neither 0 nor above 1 is refused, naming the key.
  const auto refused = run("refused", "--set run.divergence_threshold=0.5");
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Contains("run.divergence_threshold") && Contains("above 1"));
}

TEST_CASE("metrics.csv of an MH run carries the acceptance rate so far and since the previous row") {
  // OBABO + MH over K = 10 steps, a row every 50 iterations: 5 blocks per row. From the chain's
  // accepted__ column (thin = K: every block's decision) the rates are recomputed independently.
  test::TempDir dir;
  const auto out = dir.path() / "mh";
  const auto result = test::run_cli("run --preset gaussian-obabo-mh --chains 1 --set run.warmup=0 --set run.iterations=1000 "
                                    "--set integrator.step_size=0.006 --out '" + out.string() + "'");
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto csv = sgmcmc::read_stan_csv(out / "chain-1.csv");
  const auto accepted_column = std::ranges::find(csv.columns, "accepted__") - csv.columns.begin();
  REQUIRE(csv.rows.size() == 100);
  const auto metrics = lines_of(test::read_text(out / "metrics.csv"));
  const auto header = test::csv_fields(metrics.front());
  const auto column = [&](const std::string& name) { return std::ranges::find(header, name) - header.begin(); };
  REQUIRE(column("accept_rate") + 1 == column("accept_rate_window"));
  REQUIRE(column("accept_rate_window") + 1 == static_cast<std::ptrdiff_t>(header.size()));
  REQUIRE(metrics.size() == 1 + 20);
  double accepted = 0.0, some_rejected = 0.0;
  for (std::size_t row = 0; row < 20; ++row) {
    const auto fields = test::csv_fields(metrics[row + 1]);
    double window = 0.0;
    for (std::size_t block = 5 * row; block < 5 * row + 5; ++block) window += csv.rows[block][accepted_column];
    accepted += window;
    some_rejected += window < 5.0;
    CHECK(std::stod(fields[column("accept_rate_window")]) == window / 5.0);
    CHECK(std::stod(fields[column("accept_rate")]) == Approx(accepted / (5.0 * (row + 1))).epsilon(1e-15));
  }
  CHECK(some_rejected > 0);  // the step is large enough for rejections: the columns are not all 1
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["chains"][0]["accepted_blocks"] == accepted);
}

TEST_CASE("a mass per coordinate given with --set is recorded as an array in the manifest and the chains") {
  test::TempDir dir;
  const auto out = dir.path() / "mass";
  const auto result = test::run_cli("run --preset demo --set run.iterations=100 --set 'integrator.mass=[0.5, 1, 2, 4, 8]' "
                                    "--chains 1 --quiet --out '" + out.string() + "'");
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["config"]["integrator"]["mass"] == nlohmann::json::array({0.5, 1.0, 2.0, 4.0, 8.0}));
  CHECK_THAT(test::read_text(out / "chain-1.csv"), Contains("# integrator.mass = [0.5,1.0,2.0,4.0,8.0]"));
}

TEST_CASE("bad input: a clear message, exit code 2, no crash, no results") {
  test::TempDir dir;
  const auto out = dir.path() / "out";
  const auto expect_error = [&](const std::string& arguments, const std::string& message) {
    const auto result = test::run_cli(arguments + " --out '" + out.string() + "'");
    INFO(arguments << "\n" << result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains(message));
    CHECK_FALSE(fs::exists(out / "manifest.json"));
  };
  const auto config = [&](const std::string& name, const std::string& text) { return dir.write(name, text).string(); };
  const std::string model = "[model]\nname = \"gaussian\"\nn = 100\n";

  expect_error("run --config '" + config("bad.toml", model + "[run\niterations = 3\n") + "'", "bad.toml:4");
  expect_error("run --config '" + config("key.toml", model + "[integrator]\nstep_sise = 0.1\n") + "'",
               "key.toml:5: unknown key 'integrator.step_sise' (did you mean 'integrator.step_size'?)");
  expect_error("run --preset demo --set model.noise_sigma=2", "did you mean 'model.noise_sd'?");
  expect_error("run --preset demo --set model.name=gausian", "unknown model 'gausian'");
  expect_error("run --preset demo --set model.name=gausian", "did you mean 'gaussian'?");
  expect_error("run --preset demo --set estimator.name=sgd", "unknown estimator 'sgd'");
  expect_error("run --preset demo --set integrator.name=euler", "known: sgld");
  expect_error("run --preset demo --set corrector.name=metropolis", "unknown corrector 'metropolis'");
  expect_error("run --preset demo --set corrector.name=mh --set integrator.name=sghmc",
               "the mh corrector cannot follow integrator 'sghmc': sghmc's Euler-Maruyama step has no realisable backward move");
  expect_error("run --preset demo --set corrector.name=mh", "the mh corrector cannot follow integrator 'sgld': sgld computes no gradient");
  expect_error("run --preset demo --set corrector.name=mh --set integrator.name=obabo --set integrator.schedule=cyclical",
               "the mh corrector needs a constant step size");
  // The defaults every = 1 and exact_endpoints = true would replace every minibatch gradient.
  expect_error("run --preset demo --set corrector.name=mh --set integrator.name=obabo",
               "estimator 'minibatch' would never be used and each step would cost a full data pass");
  expect_error("run --preset demo --set corrector.name=mh --set integrator.name=obabo --set corrector.every=3",
               "run.thin = 5 must be a multiple of corrector.every = 3");
  expect_error("run --preset demo --set integrator.schedule=linear", "unknown schedule 'linear'");
  expect_error("run --preset demo --set integrator.name=obabo --set integrator.friction=-1", "expected a friction γ > 0");
  expect_error("run --preset demo --set integrator.name=hmc --set integrator.steps=0", "integrator.steps: expected an integer >= 1");
  expect_error("run --preset demo --set integrator.step_size=0", "integrator.step_size: expected a number > 0");
  expect_error("run --preset demo --set integrator.temperature=-1", "integrator.temperature: expected a number > 0");
  expect_error("run --preset demo --set 'integrator.mass=[1.0,2.0]'",
               "--set integrator.mass=[1.0,2.0]: integrator.mass: expected one number or an array of d = 5 numbers (the "
               "model's dimension), or of d² = 25 with metric = \"dense\", found an array of 2");
  expect_error("run --preset demo --set 'integrator.mass=[1.0,2.0,0,1,1]'", "integrator.mass: expected numbers > 0, found 0 at position 3");
  expect_error("run --preset demo --set 'integrator.mass=[1.0,2.0'", "malformed array");
  expect_error("run --preset demo --set corrector.name=mh --set integrator.name=obabo --set corrector.every=0",
               "corrector.every: expected an integer >= 1");
  expect_error("run --preset dmeo", "unknown preset 'dmeo' (did you mean 'demo'?)");
  expect_error("run --config '" + (dir.path() / "absent.toml").string() + "'", "absent.toml: cannot open");
  expect_error("run --preset demo --set run.chains=0", "run.chains: expected an integer >= 1");
  const std::string from_file = "run --config '" + config("file.toml", "[model]\nname = \"gaussian\"\n") + "' --set model.data=";
  expect_error(from_file + (dir.path() / "none.csv").string(), "none.csv: cannot open");
  expect_error(from_file + dir.write("d.csv", "1,2\n").string() + " --set model.n=5", "model.n: sets the size of simulated data");
  expect_error(from_file + dir.write("bad.csv", "1,2\n3,?\n").string(), "bad.csv:2:3: '?' is not a number");
  expect_error(from_file + dir.write("ragged.csv", "1,2\n3,4,5\n").string(), "ragged.csv:2: 3 fields, expected 2");
}

TEST_CASE("bad plugins are refused with the reason, before anything in them runs") {
  test::TempDir dir;
  const auto fixture = [](const std::string& name) { return (test::fixture_plugin_dir / ("sgmcmc-model-" + name + ".so")).string(); };
  const auto expect_error = [&](const std::string& plugin, const std::string& message) {
    const auto result = test::run_cli("run --preset demo --set model.name=" + plugin + " --out '" + (dir.path() / "o").string() + "'");
    INFO(result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains(message));
  };
  expect_error((dir.path() / "sgmcmc-model-missing.so").string(), "no such file");
  expect_error(dir.write("sgmcmc-model-text.so", "not a library\n").string(), "not a loadable shared library");
  expect_error(fixture("no_exports"), "not an sgmcmc model plugin");
  expect_error(fixture("other_interface_version"), fmt::format("built for model interface version {}", sgmcmc::model_interface_version + 1));
  expect_error(fixture("other_fingerprint"), "built with 'gcc-12");
  expect_error(fixture("throwing_factory"), "fixture factory refuses to build a model");

  // `list` names each unloadable plugin with its reason instead of failing.
  const auto listing = test::run_cli("list --plugin-dir '" + test::fixture_plugin_dir.string() + "'");
  CHECK(listing.exit_code == 0);
  CHECK_THAT(listing.output, Contains("other_fingerprint") && Contains("NOT LOADABLE") && Contains("gaussian"));
}

TEST_CASE("plugins are found through --plugin-dir and SGMCMC_PLUGIN_PATH, in that order") {
  // A copy of the gaussian plugin in folder a shadows the build tree's: which file ran is the
  // manifest's model.plugin.
  test::TempDir dir;
  fs::create_directories(dir.path() / "a");
  const auto copy = dir.path() / "a" / "sgmcmc-model-gaussian.so";
  fs::copy_file(test::gaussian_plugin_path, copy);
  const auto by_dir = test::run_cli("list --plugin-dir '" + (dir.path() / "a").string() + "'");
  CHECK_THAT(by_dir.output, Contains(copy.string()) && Contains("shadowed"));
  const auto plugin_of = [&](const std::string& name) {
    return nlohmann::json::parse(test::read_text(dir.path() / name / "manifest.json"))["model"]["plugin"].get<std::string>();
  };
  const std::string run = "run --preset demo --quiet --set run.iterations=10 --out '";
  REQUIRE(test::run_cli(run + (dir.path() / "o").string() + "'").exit_code == 0);
  CHECK(plugin_of("o") != copy.string());  // not on the search path yet
  REQUIRE(test::run_cli(run + (dir.path() / "d").string() + "' --plugin-dir '" + (dir.path() / "a").string() + "'").exit_code == 0);
  CHECK(plugin_of("d") == copy.string());
  const std::string env = "SGMCMC_PLUGIN_PATH='" + (dir.path() / "a").string() + "' ";
  const auto result = std::system((env + "'" + SGMCMC_CLI + "' " + run + (dir.path() / "e").string() + "' >/dev/null 2>&1").c_str());
  CHECK(result == 0);
  CHECK(plugin_of("e") == copy.string());
}

TEST_CASE("a plugin file named for another model than its own is refused, not run under the file's name") {
  test::TempDir dir;
  fs::create_directories(dir.path() / "p");
  fs::copy_file(test::gaussian_plugin_path, dir.path() / "p" / "sgmcmc-model-logistic.so");
  const auto result = test::run_cli("run --preset demo --quiet --set run.iterations=10 --set model.name=logistic "
                                    "--plugin-dir '" + (dir.path() / "p").string() + "' --out '" + (dir.path() / "o").string() + "'");
  INFO(result.output);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("sgmcmc-model-logistic.so") &&
                                Contains("the file is named for model 'logistic', but the plugin says it is model 'gaussian'"));
  CHECK(!fs::exists(dir.path() / "o" / "manifest.json"));
}

TEST_CASE("an existing output folder is never overwritten without --replace") {
  test::TempDir dir;
  const auto out = dir.path() / "run";
  const std::string run = "run --preset demo --quiet --set run.iterations=10 --out '" + out.string() + "'";
  REQUIRE(test::run_cli(run).exit_code == 0);
  const auto again = test::run_cli(run);
  CHECK(again.exit_code == 2);
  CHECK_THAT(again.output, Contains("is not empty"));
  CHECK(test::run_cli(run + " --replace").exit_code == 0);
}

TEST_CASE("summary: diagnostics of a run's chains, and clear refusals") {
  test::TempDir dir;
  const auto out = dir.path() / "run";
  const auto run = test::run_cli("run --preset demo --set run.iterations=1000 --out '" + out.string() + "'");
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Contains("ess_bulk") && Contains("r_hat") && Contains("beta.5"));  // printed after the run
  const auto summary = test::run_cli("summary '" + out.string() + "' --parameters beta.2");
  INFO(summary.output);
  CHECK(summary.exit_code == 0);
  CHECK_THAT(summary.output, Contains("4 chains × 200 draws") && Contains("beta.2") && Contains("chain 4: 200 draws"));
  CHECK_THAT(summary.output, !Contains("beta.1 "));

  const auto expect_error = [](const std::string& arguments, const std::string& message) {
    const auto result = test::run_cli(arguments);
    INFO(arguments << "\n" << result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains(message));
  };
  expect_error("summary '" + dir.path().string() + "'", "has no chain-<k>.csv files");
  expect_error("summary '" + out.string() + "' --parameters gamma", "no column 'gamma'");
  const auto other = dir.path() / "other";
  fs::create_directories(other);
  fs::copy_file(out / "chain-1.csv", other / "chain-1.csv");
  test::TempDir scratch;
  REQUIRE(test::run_cli("run --preset demo --set model.dim=3 --set run.iterations=100 --chains 1 --quiet --out '" +
                        (scratch.path() / "r").string() + "'").exit_code == 0);
  fs::copy_file(scratch.path() / "r" / "chain-1.csv", other / "chain-2.csv");
  expect_error("summary '" + other.string() + "'", "has other columns than");
  const auto short_run = dir.path() / "short";
  REQUIRE(test::run_cli("run --preset demo --set run.iterations=15 --quiet --out '" + short_run.string() + "'").exit_code == 0);
  expect_error("summary '" + short_run.string() + "'", "3 draw(s) in the shortest chain; at least 4 are needed");
  // Constant draws: said, not printed as numbers.
  const auto constant = dir.path() / "constant";
  fs::create_directories(constant);
  for (int k = 1; k <= 2; ++k)
    std::ofstream(constant / fmt::format("chain-{}.csv", k)) << "lp__,accept_stat__,stepsize__,x\n0,1,0.1,2\n0,1,0.1,2\n0,1,0.1,2\n0,1,0.1,2\n0,1,0.1,2\n";
  const auto flat = test::run_cli("summary '" + constant.string() + "'");
  CHECK(flat.exit_code == 0);
  CHECK_THAT(flat.output, Contains("x: the draws are constant or not finite, so ESS, R-hat and MCSE are undefined"));
}

TEST_CASE("summary: one warning line per kind for many parameters, counted over all of them") {
  // 30 coefficients and 4 short chains from an overdispersed start at a small step: most
  // coordinates have not mixed. The table shows them all; the warnings must count them.
  test::TempDir dir;
  const auto out = dir.path() / "run";
  REQUIRE(test::run_cli("run --preset demo --quiet --set model.dim=30 --set run.warmup=0 --set run.iterations=100 --out '" +
                        out.string() + "'").exit_code == 0);
  const auto summary = test::run_cli("summary '" + out.string() + "' --max-parameters 30");
  INFO(summary.output);
  REQUIRE(summary.exit_code == 0);
  std::vector<std::pair<std::string, double>> unmixed;  // from the table: r_hat is the 9th column
  std::size_t warning_lines = 0;
  for (const auto& line : lines_of(summary.output)) {
    if (line.starts_with("warning:")) ++warning_lines;
    if (!line.starts_with("beta.")) continue;
    std::istringstream fields(line);
    std::vector<std::string> columns{std::istream_iterator<std::string>(fields), {}};
    REQUIRE(columns.size() == 10);
    if (std::stod(columns[8]) > 1.01) unmixed.emplace_back(columns[0], std::stod(columns[8]));
  }
  REQUIRE(unmixed.size() > 3);  // else the warnings would name each parameter
  CHECK(warning_lines <= 3);    // one per kind: undefined, R-hat, ESS
  const auto worst = *std::max_element(unmixed.begin(), unmixed.end(), [](auto& a, auto& b) { return a.second < b.second; });
  CHECK_THAT(summary.output, Contains(fmt::format("R-hat > 1.01: the chains have not mixed for {} of 30 parameters (worst: {} ",
                                                  unmixed.size(), worst.first)));
  // Shown or not, every parameter is counted: with 5 shown, the count is the same.
  const auto fewer = test::run_cli("summary '" + out.string() + "' --max-parameters 5");
  CHECK_THAT(fewer.output, Contains(fmt::format("for {} of 30 parameters", unmixed.size())));
}

TEST_CASE("the manifest records what the cv centring chose, not the setting's automatic 0") {
  test::TempDir dir;
  const auto out = dir.path() / "cv";
  REQUIRE(test::run_cli("run --preset gaussian-sgld-cv --quiet --chains 2 --set run.iterations=20 --out '" + out.string() + "'")
              .exit_code == 0);
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["config"]["estimator"]["sgd_step_size"] == 0.0);  // the setting: automatic
  for (const auto& chain : manifest["chains"]) {
    INFO(chain.dump());
    const double first_step = chain["estimator"]["sgd_first_step"], curvature = chain["estimator"]["largest_curvature"];
    CHECK(first_step > 0.0);
    CHECK(first_step == 1.0 / curvature);
  }
}

TEST_CASE("list and presets describe what is available") {
  const auto list = test::run_cli("list");
  CHECK(list.exit_code == 0);
  CHECK_THAT(list.output, Contains("gaussian") && Contains("exact-log-likelihood") && Contains("minibatch") &&
                              Contains("sgld") && Contains("none"));
  // Which combinations are exact, biased or refused, with the refusals' reasons.
  CHECK_THAT(list.output, Contains("corrector mh: exact") && Contains("biased") &&
                              Contains("estimator  saga") && Contains("estimator  svrg") &&
                              Contains("integrator sghmc") && Contains("integrator sgld"));
  CHECK_THAT(list.output, !Contains("integrator baoab "));
  // Each integrator key once, with its default, constraint, readers and doc from the field tables.
  CHECK_THAT(list.output, Contains("integrator keys") && Contains("= 10 (>= 1), hmc, leapfrog: L, the leapfrog steps") &&
                              Contains("= 0.1/step_size (> 0), obabo, baoab, sghmc, ubu: γ"));
  const auto presets = test::run_cli("presets");
  CHECK_THAT(presets.output, Contains("demo"));
}

TEST_CASE("psgld without a warmup, or never frozen, is refused at start-up with the reason, and list says why") {
  // Without Γ a preconditioner that keeps changing biases the chain by an amount no step removes
  // (tests/matrix: variance (1 + 2e₁)/(1 + e₁) ≈ 1.44 instead of 1 at α = 0): the chain targets
  // π as ε → 0 only once V is frozen, which happens at the end of a warmup.
  test::TempDir dir;
  const std::string psgld = "run --preset demo --quiet --set model.n=500 --set integrator.name=psgld --set integrator.step_size=1e-6 "
                            "--set run.iterations=100 ";
  const auto expect_refusal = [&](const std::string& settings, const std::string& reason, const char* folder) {
    const auto result = test::run_cli(psgld + settings + " --out '" + (dir.path() / folder).string() + "'");
    INFO(result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains(reason) && Contains("frozen after a warmup for the chain to target π as ε → 0") &&
                                  Contains("Li et al. 2016 drop the Γ(θ) term"));
    CHECK_FALSE(fs::exists(dir.path() / folder / "manifest.json"));
  };
  expect_refusal("--set run.warmup=0", "integrator psgld needs a warmup (run.warmup > 0)", "no-warmup");
  expect_refusal("--set run.warmup=100 --set integrator.freeze_after_warmup=false", "integrator.freeze_after_warmup = false",
                 "never-frozen");
  const auto frozen = test::run_cli(psgld + "--set run.warmup=100 --out '" + (dir.path() / "frozen").string() + "'");
  INFO(frozen.output);
  CHECK(frozen.exit_code == 0);
  const auto list = test::run_cli("list");
  CHECK_THAT(list.output, Contains("psgld's only once its preconditioner is frozen, so it") && Contains("needs run.warmup > 0"));
}

TEST_CASE("a configuration file's relative data paths are read from its own folder, --set's from the working folder") {
  // Issue #22: `sgmcmc run --config exp/a.toml` with data = "d.csv" looked for d.csv in the
  // working folder, so a configuration kept beside its data worked only from that folder.
  test::TempDir dir;
  fs::create_directories(dir.path() / "exp");
  std::string csv = "y,x1\n";
  for (int i = 0; i < 40; ++i) csv += fmt::format("{},{}\n", 0.5 * i, i % 7);
  dir.write("exp/d.csv", csv);
  dir.write("exp/a.toml", "[model]\nname = \"gaussian\"\ndata = \"d.csv\"\ntest_size = 0\n"
                                                  "[run]\niterations = 50\n");
  const std::string cli = std::string("'") + SGMCMC_CLI + "'";
  const auto run = test::shell(fmt::format("cd '{}' && {} run --config exp/a.toml --quiet --out out", dir.path().string(), cli));
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto manifest = nlohmann::json::parse(test::read_text(dir.path() / "out" / "manifest.json"));
  CHECK(manifest["config"]["model"]["data"] == "exp/d.csv");
  // An override is a shell argument: relative to where the command runs.
  const auto set = test::shell(fmt::format("cd '{}' && {} run --config a.toml --set model.data=d.csv --quiet --out out2",
                                           (dir.path() / "exp").string(), cli));
  INFO(set.output);
  CHECK(set.exit_code == 0);
  const auto elsewhere = test::shell(fmt::format("cd '{}' && {} run --config exp/a.toml --set model.data=d.csv --quiet --out out3",
                                                 dir.path().string(), cli));
  CHECK(elsewhere.exit_code == 2);
  CHECK_THAT(elsewhere.output, Contains("d.csv"));
  // tune's tuned.toml lives in another folder: it names the data absolutely, so it runs as it is.
  const auto tune = test::shell(fmt::format("cd '{}' && {} tune --config exp/a.toml --steps 1e-3,2e-3 --draws 10 --quiet --out t",
                                            dir.path().string(), cli));
  INFO(tune.output);
  REQUIRE(tune.exit_code == 0);
  const auto tuned = test::shell(fmt::format("cd '{}' && {} run --config tuned.toml --quiet --out r", (dir.path() / "t").string(), cli));
  INFO(tuned.output);
  CHECK(tuned.exit_code == 0);
}
