// [burn_in] through the real CLI (runners/sgmcmc/burn_in.hpp): a burn-in phase under another
// sampler inside one run, its refusals, and its record in the manifest. Resume after SIGTERM in
// either phase: checkpoint_test.cpp.
#include <catch2/catch.hpp>
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

/// The demo's gaussian model, 2 chains: a burn-in of 200 SGLD steps (a step 5x the demo's, from
/// the model's start at 0), then OBABO + MH over blocks of 4 with minibatch kicks, its step
/// adapted in a warmup of 40 iterations, 80 recorded.
const std::string sampler = "--preset demo --chains 2 --set model.n=2000 --set estimator.batch_size=50 "
                            "--set integrator.name=obabo --set integrator.step_size=1e-3 --set integrator.adapt_step_size=true "
                            "--set corrector.name=mh --set corrector.every=4 --set corrector.exact_endpoints=false "
                            "--set run.warmup=40 --set run.iterations=80 --set run.thin=4 --set run.eval_every=20 ";
const std::string burn_in = "--set burn_in.iterations=200 --set burn_in.integrator.name=sgld "
                            "--set burn_in.integrator.step_size=1e-4 --set burn_in.corrector.name=none ";

/// The data rows of a Stan CSV (its `#` lines hold the configuration, which differs between the
/// runs compared).
std::vector<std::string> draw_rows(const fs::path& file) {
  std::vector<std::string> rows;
  for (const auto& line : test::lines_of(test::draws_without_elapsed_time(file)))
    if (!line.starts_with("#")) rows.push_back(line);
  return rows;
}

}  // namespace

TEST_CASE("burn-in: one run with a burn_in phase draws what the two-run recipe draws (a burn-in run, then a run from its last draw)") {
  // The burn-in of chain k is chain k of a plain run of the burn-in's sampler with run.seed =
  // the manifest's burn_in.seed (the data from run.data_seed, the run's seed); the run's own chain
  // is then a run.init start at its last θ, which the plain run's chain file holds to the last
  // bit (shortest round-trip decimals). So the draws and metrics of the two-run recipe equal the
  // one run's, bit for bit. A burn-in on the run's own stream, a main chain that did not start at
  // the burn-in's end, or a burn-in one step short or long, would all differ.
  test::TempDir dir;
  const auto one = dir.path() / "one", first = dir.path() / "first", second = dir.path() / "second";
  const auto ran = test::run_cli(fmt::format("run {} {} --seed 3 --quiet --out '{}'", sampler, burn_in, one.string()));
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  const auto manifest = nlohmann::json::parse(test::read_text(one / "manifest.json"));
  REQUIRE(manifest.contains("burn_in"));
  const auto seed = manifest["burn_in"]["seed"].get<std::uint64_t>();
  CHECK(seed != 3);
  // The manifest records the burn-in's resolved sampler (the run's minibatch estimator inherited)
  // and what it cost: 200 minibatches of 50 item gradients per chain.
  CHECK(manifest["burn_in"]["iterations"] == 200);
  CHECK(manifest["burn_in"]["integrator"]["name"] == "sgld");
  CHECK(manifest["burn_in"]["integrator"]["step_size"] == 1e-4);
  CHECK(manifest["burn_in"]["estimator"]["batch_size"] == 50);
  CHECK(manifest["burn_in"]["corrector"]["name"] == "none");
  for (const auto& chain : manifest["chains"]) {
    CHECK(chain["burn_in"]["iterations"] == 200);
    CHECK(chain["burn_in"]["item_gradients"] == 200 * 50);
    CHECK(chain["burn_in"]["cpu_seconds"].get<double>() > 0.0);
  }

  const auto burn = test::run_cli(fmt::format(
      "run --preset demo --chains 2 --set model.n=2000 --set estimator.batch_size=50 --set integrator.name=sgld "
      "--set integrator.step_size=1e-4 --set run.warmup=0 --set run.iterations=200 --set run.thin=200 "
      "--set run.seed={} --set run.data_seed=3 --quiet --out '{}'",
      seed, first.string()));
  INFO(burn.output);
  REQUIRE(burn.exit_code == 0);
  const auto then = test::run_cli(fmt::format("run {} --set run.init='{}' --seed 3 --quiet --out '{}'", sampler,
                                              first.string(), second.string()));
  INFO(then.output);
  REQUIRE(then.exit_code == 0);
  for (const char* chain : {"chain-1.csv", "chain-2.csv"}) {
    const auto rows = draw_rows(one / chain);
    CHECK(rows.size() == 1 + 80 / 4);  // the header and 20 draws
    CHECK(rows == draw_rows(second / chain));
  }
  CHECK(test::without_seconds(test::read_text(one / "metrics.csv")) ==
        test::without_seconds(test::read_text(second / "metrics.csv")));
  // Without the burn-in, the OBABO chain starts at 0, not where SGLD led: other draws.
  const auto from_zero = dir.path() / "zero";
  REQUIRE(test::run_cli(fmt::format("run {} --seed 3 --quiet --out '{}'", sampler, from_zero.string())).exit_code == 0);
  CHECK(draw_rows(from_zero / "chain-1.csv") != draw_rows(one / "chain-1.csv"));
}

TEST_CASE("burn-in: burn_in tables in a configuration file, and refusals naming the key before anything runs") {
  test::TempDir dir;
  dir.write("burn.toml", R"(
[model]
name = "gaussian"
n = 500
dim = 2
[integrator]
name = "obabo"
step_size = 1e-3
[corrector]
name = "mh"
every = 2
exact_endpoints = false
[run]
warmup = 10
iterations = 20
thin = 2
seed = 2
[burn_in]
iterations = 30
[burn_in.integrator]
name = "sgld"
step_size = 1e-5
[burn_in.corrector]
name = "none"
)");
  const auto config = (dir.path() / "burn.toml").string();
  const auto run = [&](const std::string& settings) {
    return test::run_cli(fmt::format("run --config '{}' --quiet {} --out '{}'", config, settings, (dir.path() / "out").string()));
  };
  SECTION("the file runs, and records its burn-in tables in the chain files' comments") {
    const auto ran = run("");
    INFO(ran.output);
    REQUIRE(ran.exit_code == 0);
    CHECK_THAT(test::read_text(dir.path() / "out" / "chain-1.csv"), Contains("burn_in.integrator.name = \"sgld\""));
  }
  SECTION("a burn-in that diverges stops its chain as diverged (exit 1), naming the burn-in's step") {
    const auto ran = run("--set burn_in.integrator.step_size=1");
    CHECK(ran.exit_code == 1);
    const auto manifest = nlohmann::json::parse(test::read_text(dir.path() / "out" / "manifest.json"));
    CHECK(manifest["status"] == "diverged");
    CHECK(manifest["chains"][0]["iterations"] == 0);
    CHECK_THAT(manifest["chains"][0]["message"].get<std::string>(),
               Contains("in its burn-in, diverged at iteration") && Contains("burn_in.integrator.step_size"));
  }
  SECTION("an unknown key in [burn_in] is refused, with the key it resembles") {
    const auto ran = run("--set burn_in.iteration=10");
    CHECK(ran.exit_code == 2);
    CHECK_THAT(ran.output, Contains("unknown key 'burn_in.iteration' (did you mean 'burn_in.iterations'?)"));
  }
  SECTION("without [burn_in] iterations: a misspelt key is named as such, else the length is asked for") {
    const auto demo = [&](const std::string& settings) {
      return test::run_cli(fmt::format("run --preset demo --quiet {} --out '{}'", settings, (dir.path() / "out").string()));
    };
    const auto misspelt = demo("--set burn_in.iteration=10");
    CHECK(misspelt.exit_code == 2);
    CHECK_THAT(misspelt.output, Contains("unknown key 'burn_in.iteration' (did you mean 'burn_in.iterations'?)"));
    const auto missing = demo("--set burn_in.integrator.name=sgld");
    CHECK(missing.exit_code == 2);
    CHECK_THAT(missing.output, Contains("needs its length, burn_in.iterations"));
  }
  SECTION("an unknown key in a burn-in sampler table is refused, naming it") {
    const auto ran = run("--set burn_in.integrator.stepsize=1e-5");
    CHECK(ran.exit_code == 2);
    CHECK_THAT(ran.output, Contains("burn_in.integrator.stepsize"));
  }
  SECTION("an unknown burn-in table is refused") {
    const auto ran = run("--set burn_in.model.n=3");
    CHECK(ran.exit_code == 2);
    CHECK_THAT(ran.output, Contains("unknown section [burn_in.model]"));
  }
  SECTION("a burn-in sampler that cannot be corrected is refused with the reason (SGHMC under the run's MH)") {
    const auto ran = run("--set burn_in.integrator.name=sghmc --set burn_in.corrector.name=mh --set burn_in.corrector.every=2");
    CHECK(ran.exit_code == 2);
    CHECK_THAT(ran.output, Contains("[burn_in]") && Contains("burn_in.corrector.name") && Contains("sghmc"));
  }
  SECTION("a burn-in that does not end at an MH block's end is refused") {
    const auto ran = run("--set burn_in.iterations=31 --set burn_in.integrator.name=obabo --set burn_in.corrector.name=mh "
                         "--set burn_in.corrector.every=2 --set burn_in.corrector.exact_endpoints=false");
    CHECK(ran.exit_code == 2);
    CHECK_THAT(ran.output, Contains("burn_in.iterations = 31") && Contains("multiple"));
  }
  SECTION("burn-in tables without burn_in.iterations are refused") {
    const auto ran = run("--set burn_in.iterations=0");
    CHECK(ran.exit_code == 2);
    CHECK_THAT(ran.output, Contains("burn_in.iterations"));
  }
}
