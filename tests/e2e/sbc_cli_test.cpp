// `sgmcmc sbc` through the real CLI and plugins: refusals with the plugin's reason, the output
// files, θ* in each replication's manifest, the same ranks for any --jobs, and --resume.
#include <catch2/catch.hpp>
#include <algorithm>
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

const std::string exact_config = std::string(SGMCMC_SOURCE_DIR) + "/runners/presets/sbc/gaussian-mala-mh.toml";

/// A quick SBC: R replications of 300 MALA iterations.
std::string quick(const fs::path& out, int replications, int jobs) {
  return fmt::format("sbc --config '{}' --set run.iterations=300 --set run.warmup=100 --replications {} --draws 19 --bins 5 "
                     "--jobs {} --no-plot --quiet --out '{}'",
                     exact_config, replications, jobs, out.string());
}

}  // namespace

TEST_CASE("sbc refuses models that cannot be calibrated by simulation, with the plugin's reason") {
  test::TempDir dir;
  const auto pmf = test::run_cli("sbc --preset pmf-sgld --out '" + (dir.path() / "p").string() + "'");
  CHECK(pmf.exit_code == 2);
  CHECK_THAT(pmf.output, Contains("model pmf cannot be calibrated by simulation") && Contains("orthogonal"));
  const auto lda = test::run_cli("sbc --preset lda-sgld --out '" + (dir.path() / "l").string() + "'");
  CHECK(lda.exit_code == 2);
  CHECK_THAT(lda.output, Contains("model lda cannot be calibrated by simulation") && Contains("label switching"));
  CHECK_FALSE(fs::exists(dir.path() / "p"));
  const auto neither = test::run_cli("sbc --replications 5");
  CHECK(neither.exit_code == 2);
  CHECK_THAT(neither.output, Contains("--preset NAME or --config FILE"));
  const auto data = test::run_cli("sbc --preset demo --set model.data=x.csv --out '" + (dir.path() / "d").string() + "'");
  CHECK(data.exit_code == 2);
  CHECK_THAT(data.output, Contains("simulate_from_prior"));
  // glm with a flat (improper) prior on σ or on the coefficients: no prior draw to simulate from.
  const std::string flat_priors[] = {"noise_prior = \"flat\"", "prior = \"flat\""};
  for (const std::string& prior : flat_priors) {
    INFO(prior);
    const auto config = dir.write("flat.toml", fmt::format("[model]\nname = \"glm\"\nfamily = \"gaussian\"\n{}\nn = 50\n"
                                                           "[integrator]\nname = \"mala\"\nstep_size = 0.1\n"
                                                           "[corrector]\nname = \"mh\"\n",
                                                           prior));
    const auto flat = test::run_cli(fmt::format("sbc --config '{}' --replications 2 --draws 9 --no-plot --quiet --out '{}'",
                                                config.string(), (dir.path() / ("f" + std::to_string(prior.size()))).string()));
    CHECK(flat.exit_code == 2);
    CHECK_THAT(flat.output, Contains("'flat' is an improper prior") && Contains("sgmcmc sbc"));
  }
}

TEST_CASE("sbc on gaussian: ranks, tests and θ* recorded, the same for --jobs 1 and 2, --resume finishes a run") {
  test::TempDir dir;
  const auto one = test::run_cli(quick(dir.path() / "one", 6, 1));
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  const auto two = test::run_cli(quick(dir.path() / "two", 6, 2));
  REQUIRE(two.exit_code == 0);
  for (const char* file : {"ranks.csv", "tests.csv", "ecdf.csv"})
    CHECK(test::read_text(dir.path() / "one" / file) == test::read_text(dir.path() / "two" / file));

  // ranks.csv: 6 replications × 2 coefficients, ranks in 0..19.
  const auto lines = test::lines_of(test::read_text(dir.path() / "one" / "ranks.csv"));
  REQUIRE(lines.size() == 1 + 12);
  CHECK(lines[0] == "replication,run_seed,parameter,truth,rank,draws,ess_bulk");
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto fields = test::csv_fields(lines[i]);
    CHECK(std::stoi(fields[4]) >= 0);
    CHECK(std::stoi(fields[4]) <= 19);
  }
  // θ* is the prior draw the data came from, recorded by the run; data seeds differ per replication.
  const auto first = nlohmann::json::parse(test::read_text(dir.path() / "one" / "replications" / "run.seed=1+run.data_seed=1" / "manifest.json"));
  CHECK(first["model"]["simulated_parameters"].size() == 2);
  CHECK(first["config"]["model"]["simulate_from_prior"] == true);
  CHECK(test::csv_fields(lines[1])[3] == fmt::format("{:.17g}", first["model"]["simulated_parameters"]["beta.1"].get<double>()));
  CHECK(test::lines_of(test::read_text(dir.path() / "one" / "tests.csv")).size() == 3);
  // The rank by hand from the chain's draws: of L = 19 draws evenly spaced over the S = 300 (draw
  // ⌊(l + 1/2)·300/19⌋ for l = 0..18), those below θ*.
  const auto chain = sgmcmc::read_stan_csv(dir.path() / "one" / "replications" / "run.seed=1+run.data_seed=1" / "chain-1.csv");
  const auto column = static_cast<std::size_t>(std::find(chain.columns.begin(), chain.columns.end(), "beta.1") - chain.columns.begin());
  REQUIRE(chain.rows.size() == 300);
  const double star = first["model"]["simulated_parameters"]["beta.1"].get<double>();
  int below = 0;
  for (int l = 0; l < 19; ++l) below += chain.rows[static_cast<std::size_t>((l + 0.5) * 300 / 19)][column] < star;
  CHECK(test::csv_fields(lines[1])[4] == std::to_string(below));

  // A replication lost (no manifest: killed in flight) is run again by --resume, to the same ranks.
  fs::remove(dir.path() / "two" / "replications" / "run.seed=3+run.data_seed=3" / "manifest.json");
  const auto resumed = test::run_cli(quick(dir.path() / "two", 6, 2) + " --resume");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(test::read_text(dir.path() / "one" / "ranks.csv") == test::read_text(dir.path() / "two" / "ranks.csv"));
  // Without --resume a used folder is refused; with other settings --resume is refused.
  const auto again = test::run_cli(quick(dir.path() / "two", 6, 2));
  CHECK(again.exit_code == 2);
  CHECK_THAT(again.output, Contains("not empty"));
  const auto other = test::run_cli(quick(dir.path() / "two", 7, 2) + " --resume");
  CHECK(other.exit_code == 2);
  CHECK_THAT(other.output, Contains("holds another SBC"));
}

TEST_CASE("sbc --quantities ranks lp__ and the model's quantities at θ* beside the parameters") {
  // lp__ = -U(θ*) (Modrák et al. 2023 recommend the log density as a test quantity) and the
  // model's held_out_log_density at θ* are recorded in each replication's manifest and ranked
  // among the draws' values, as a parameter is; a name that is neither is refused, naming it.
  test::TempDir dir;
  const auto run = test::run_cli(quick(dir.path() / "q", 4, 1) + " --quantities lp__,held_out_log_density");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Contains("lp__: ") && Contains("held_out_log_density: ") && Contains("held-out rows"));
  const auto lines = test::lines_of(test::read_text(dir.path() / "q" / "ranks.csv"));
  REQUIRE(lines.size() == 1 + 4 * 4);  // 2 coefficients and 2 quantities
  const auto folder = dir.path() / "q" / "replications" / "run.seed=1+run.data_seed=1";
  const auto manifest = nlohmann::json::parse(test::read_text(folder / "manifest.json"));
  CHECK(manifest["config"]["run"]["lp"] == true);
  CHECK(manifest["config"]["output"]["quantities"] == true);
  const auto chain = sgmcmc::read_stan_csv(folder / "chain-1.csv");
  for (const std::string name : {"lp__", "held_out_log_density"}) {
    INFO(name);
    const auto column = static_cast<std::size_t>(std::find(chain.columns.begin(), chain.columns.end(), name) - chain.columns.begin());
    REQUIRE(column < chain.columns.size());
    const double star = manifest["model"]["simulated_quantities"][name].get<double>();
    int below = 0;
    for (int l = 0; l < 19; ++l) below += chain.rows[static_cast<std::size_t>((l + 0.5) * 300 / 19)][column] < star;
    const auto row = std::find_if(lines.begin(), lines.end(), [&](const std::string& line) {
      const auto fields = test::csv_fields(line);
      return fields[0] == "1" && fields[2] == name;
    });
    REQUIRE(row != lines.end());
    CHECK(test::csv_fields(*row)[4] == std::to_string(below));
    CHECK(test::csv_fields(*row)[3] == fmt::format("{:.17g}", star));
  }

  const auto unknown = test::run_cli(quick(dir.path() / "u", 2, 1) + " --quantities nonsense");
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.output, Contains("--quantities nonsense"));
}
