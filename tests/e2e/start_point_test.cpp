// run.init through the real CLI on the demo's gaussian model (parameters beta.1 ... beta.5): a
// chain starts at the draw of an earlier run, or at values a user wrote, and bad starts are
// refused naming the key, the file and what was expected.
//
// How a start is seen: with a step of ε = 1e-20, one sgld iteration moves θ by (ε/2)ĝ + √ε ξ,
// about 1e-10 per coordinate here (ĝ of a 10,000-row model is at most of order 1e6), so the first
// recorded draw (thin 1, no warmup) equals the start to within 1e-6. The model's own initial point
// is 0, and the posterior means are far from it, so a start that was ignored fails the check.
#include <catch2/catch.hpp>
#include <cmath>
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

const std::string demo = "run --preset demo --quiet --set run.warmup=0 --set run.thin=1 ";
const std::string frozen = "--set integrator.step_size=1e-20 --set run.iterations=3 ";
const std::vector<std::string> parameters = {"beta.1", "beta.2", "beta.3", "beta.4", "beta.5"};

test::CliResult run(const std::string& settings, const fs::path& out) {
  return test::run_cli(demo + settings + " --out '" + out.string() + "'");
}

/// The parameter values of draw `row` (0-based) of a Stan CSV file.
std::vector<double> draw(const fs::path& file, std::size_t row) {
  const auto csv = sgmcmc::read_stan_csv(file);
  std::vector<double> values;
  for (const auto& name : parameters) {
    const auto at = std::find(csv.columns.begin(), csv.columns.end(), name);
    REQUIRE(at != csv.columns.end());
    values.push_back(csv.rows.at(row).at(static_cast<std::size_t>(at - csv.columns.begin())));
  }
  return values;
}

void require_near(const std::vector<double>& got, const std::vector<double>& start) {
  INFO(fmt::format("first draw {} against start {}", fmt::join(got, ", "), fmt::join(start, ", ")));
  REQUIRE(got.size() == start.size());
  for (std::size_t j = 0; j < got.size(); ++j) CHECK(std::abs(got[j] - start[j]) < 1e-6);
}

}  // namespace

TEST_CASE("run.init starts each chain at the chosen draw of an earlier run, and the manifest says which") {
  test::TempDir dir;
  const auto earlier = dir.path() / "earlier";
  auto result = run("--chains 2 --set run.iterations=200", earlier);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const std::size_t last = sgmcmc::read_stan_csv(earlier / "chain-1.csv").rows.size() - 1;
  for (double value : draw(earlier / "chain-1.csv", last)) REQUIRE(std::abs(value) > 1e-3);  // away from the default start

  // A folder: chain k from its chain-k's last draw, the third chain cycling back to chain 1.
  const auto from_folder = dir.path() / "from-folder";
  result = run(frozen + fmt::format("--chains 3 --set run.init='\"{}\"'", earlier.string()), from_folder);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  for (std::size_t k : {1, 2, 3}) {
    const auto source = earlier / fmt::format("chain-{}.csv", (k - 1) % 2 + 1);
    require_near(draw(from_folder / fmt::format("chain-{}.csv", k), 0), draw(source, last));
    const auto manifest = nlohmann::json::parse(test::read_text(from_folder / "manifest.json"));
    CHECK(manifest["chains"][k - 1]["start"] == fmt::format("{}, draw {} of {}", source.string(), last + 1, last + 1));
  }

  // One file and run.init_draw: every chain from that draw.
  const auto from_file = dir.path() / "from-file";
  result = run(frozen + fmt::format("--chains 2 --set run.init='\"{}\"' --set run.init_draw=7",
                                    (earlier / "chain-2.csv").string()),
               from_file);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  for (std::size_t k : {1, 2}) require_near(draw(from_file / fmt::format("chain-{}.csv", k), 0), draw(earlier / "chain-2.csv", 6));

  // run.init_mean: the mean of every draw of the file (an SGLD burn-in's running mean).
  const auto from_mean = dir.path() / "from-mean";
  result = run(frozen + fmt::format("--set run.init='\"{}\"' --set run.init_mean=true", (earlier / "chain-2.csv").string()),
               from_mean);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  std::vector<double> mean(parameters.size(), 0.0);
  for (std::size_t row = 0; row <= last; ++row) {
    const auto values = draw(earlier / "chain-2.csv", row);
    for (std::size_t j = 0; j < mean.size(); ++j) mean[j] += values[j] / static_cast<double>(last + 1);
  }
  require_near(draw(from_mean / "chain-1.csv", 0), mean);
}

TEST_CASE("run.init reads values a user wrote, relative to the configuration file's folder") {
  test::TempDir dir;
  const std::vector<double> start = {1.5, -2.25, 3.0, 0.125, -0.5};
  fs::create_directories(dir.path() / "exp");
  dir.write("exp/start.csv", fmt::format("beta.5,beta.4,beta.3,beta.2,beta.1\n{},{},{},{},{}\n", start[4], start[3], start[2],
                                         start[1], start[0]));
  const auto config = dir.write("exp/from-values.toml", "[model]\nname = \"gaussian\"\nn = 1000\ndim = 5\n"
                                                        "[integrator]\nname = \"sgld\"\nstep_size = 1e-20\n"
                                                        "[run]\nwarmup = 0\niterations = 3\ninit = \"start.csv\"\n");
  const auto out = dir.path() / "from-values";
  const auto result = test::run_cli(fmt::format("run --config '{}' --quiet --out '{}'", config.string(), out.string()));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  require_near(draw(out / "chain-1.csv", 0), start);
}

TEST_CASE("run.init refuses a start that cannot be one, naming the key, the file and what was expected") {
  test::TempDir dir;
  const auto header = "beta.1,beta.2,beta.3,beta.4,beta.5\n";
  const auto good = dir.write("good.csv", std::string(header) + "1,2,3,4,5\n");
  const auto partial = dir.write("partial.csv", "lp__,beta.1,beta.2\n0,1,2\n");
  const auto infinite = dir.write("infinite.csv", std::string(header) + "1,2,inf,4,5\n");
  const auto empty = dir.write("empty.csv", header);
  fs::create_directories(dir.path() / "no-chains");
  const struct {
    std::string settings, expected;
  } cases[] = {
      {fmt::format("--set run.init='\"{}\"'", partial.string()), "no column for the parameter 'beta.3' (nor for 2 more)"},
      {fmt::format("--set run.init='\"{}\"'", infinite.string()), "draw 1, column 'beta.3' is inf"},
      {fmt::format("--set run.init='\"{}\"'", empty.string()), "no draws"},
      {fmt::format("--set run.init='\"{}\"' --set run.init_draw=2", good.string()), "run.init_draw = 2, but the file holds 1 draws"},
      {fmt::format("--set run.init='\"{}\"'", (dir.path() / "absent.csv").string()), "does not exist"},
      {fmt::format("--set run.init='\"{}\"'", (dir.path() / "no-chains").string()), "holds no chain-<k>.csv"},
      {fmt::format("--set run.init='\"{}\"' --set run.init_mean=true --set run.init_draw=1", good.string()),
       "one draw or the mean of all"},
  };
  for (const auto& bad : cases) {
    const auto result = run(frozen + bad.settings, dir.path() / "refused");
    INFO(bad.settings << "\n" << result.output);
    CHECK(result.exit_code != 0);
    CHECK_THAT(result.output, Contains("init") && Contains(bad.expected));
    CHECK_FALSE(fs::exists(dir.path() / "refused" / "chain-1.csv"));
  }
}
