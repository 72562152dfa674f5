// Recorded gradients and `sgmcmc zv` through the real CLI: recording leaves the chain's draws
// bit for bit as they are, `zv` after a run and `zv = true` in a run, and bad input.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "support.hpp"

import sgmcmc;

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

using test::lines_of;

/// The header and draw lines of a CSV file: everything but `#` comments (which hold the
/// resolved configuration, and so the [output] keys themselves).
std::vector<std::string> data_lines(const fs::path& path) {
  std::vector<std::string> lines;
  for (auto& line : lines_of(test::read_text(path)))
    if (!line.starts_with("#")) lines.push_back(std::move(line));
  return lines;
}

/// The whitespace-separated fields of the first output line that starts with `name` and a space.
std::vector<std::string> row_of(const std::string& output, const std::string& name) {
  for (const auto& line : lines_of(output))
    if (line.starts_with(name + " ")) {
      std::istringstream in(line);
      std::vector<std::string> fields;
      for (std::string field; in >> field;) fields.push_back(field);
      return fields;
    }
  return {};
}

}  // namespace

TEST_CASE("recording gradients and quantities leaves every draw and metric bit for bit, on 1 or 2 threads") {
  // The recorder has its own estimator, workspace, cost and random stream (2k+2): if it shared
  // any of the chain's, the draws after the first recorded one would differ.
  test::TempDir dir;
  for (const std::string preset : {"gaussian-sgld-cv", "demo"}) {
    const std::string common = "run --preset " + preset + " --quiet --set run.iterations=200 --chains 2 --seed 5 ";
    const auto out = [&](const std::string& name) { return dir.path() / (preset + "-" + name); };
    const auto run = [&](const std::string& name, const std::string& arguments) {
      const auto result = test::run_cli(common + arguments + " --out '" + out(name).string() + "'");
      INFO(result.output);
      REQUIRE(result.exit_code == 0);
    };
    run("plain", "--threads 1");
    run("cv", "--threads 2 --set output.gradients=cv");  // quantities are recorded too, by default
    run("exact", "--threads 1 --set output.gradients=exact --set output.quantities=false");
    run("estimator", "--threads 2 --set output.gradients=estimator --set output.quantities=false");
    run("cv-again", "--threads 1 --set output.gradients=cv");
    for (int k = 1; k <= 2; ++k) {
      INFO(preset << ", chain " << k);
      const auto chain = fmt::format("chain-{}.csv", k), gradients = fmt::format("gradients-{}.csv", k);
      const auto plain = data_lines(out("plain") / chain);
      CHECK(data_lines(out("exact") / chain) == plain);
      CHECK(data_lines(out("estimator") / chain) == plain);
      // With quantities: each line is the plain one plus the generated-quantity column.
      const auto with_quantities = data_lines(out("cv") / chain);
      REQUIRE(with_quantities.size() == plain.size());
      CHECK(with_quantities[0] == plain[0] + ",held_out_log_density");
      for (std::size_t row = 1; row < plain.size(); ++row) CHECK(with_quantities[row].starts_with(plain[row] + ","));
      // The gradient files: one row per draw, and reproducible themselves.
      for (const char* source : {"cv", "exact", "estimator"}) {
        const auto recorded = data_lines(out(source) / gradients);
        REQUIRE(recorded.size() == plain.size());
        CHECK(recorded[0] == "grad_lp.beta.1,grad_lp.beta.2,grad_lp.beta.3,grad_lp.beta.4,grad_lp.beta.5");
      }
      CHECK(test::read_text(out("cv") / gradients) == test::read_text(out("cv-again") / gradients));
      CHECK_FALSE(fs::exists(out("plain") / gradients));
    }
    CHECK(test::without_seconds(test::read_text(out("cv") / "metrics.csv")) ==
          test::without_seconds(test::read_text(out("plain") / "metrics.csv")));
    const auto plain_manifest = nlohmann::json::parse(test::read_text(out("plain") / "manifest.json"));
    const auto cv_manifest = nlohmann::json::parse(test::read_text(out("cv") / "manifest.json"));
    CHECK(cv_manifest["chains"][0]["item_gradients"] == plain_manifest["chains"][0]["item_gradients"]);
    CHECK(cv_manifest["chains"][0]["recording_item_gradients"] > 0);  // the recorder's work, counted apart
    CHECK(plain_manifest["chains"][0]["recording_item_gradients"] == 0);
  }
}

TEST_CASE("sgmcmc zv after a run with recorded exact gradients, and zv = true in the run") {
  // The demo's posterior is Gaussian, so with exact gradients θ_j is linear in z = ∇log π and the
  // held-out log density (a quadratic in β) is in the span of the second-order controls plus a
  // constant: their ZV residuals are rounding (z sums N = 8,000 item gradients with relative error
  // ~ Nε ≈ 1e-12, the ratio near 1e20 or more). The checks ask for variance ratios > 1e8, far
  // from rounding, far above what an error would leave (order 1).
  test::TempDir dir;
  const auto out = dir.path() / "run";
  const auto run = test::run_cli("run --preset demo --quiet --chains 2 --set run.iterations=1000 --set output.gradients=exact "
                                 "--set output.zv=true --out '" + out.string() + "'");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Contains("zero-variance control variates") && Contains("2 chains × 200 draws") &&
                             Contains("gradients 'exact'") && Contains("kernel Stein discrepancy"));

  const auto zv = test::run_cli("zv '" + out.string() + "'");
  INFO(zv.output);
  REQUIRE(zv.exit_code == 0);
  const auto beta = row_of(zv.output, "beta.1"), lpd = row_of(zv.output, "held_out_log_density");
  REQUIRE(beta.size() == 9);  // name, mean, mcse, zv1_mean, zv1_mcse, var_ratio1, zv2_mean, zv2_mcse, var_ratio2
  REQUIRE(lpd.size() == 9);
  CHECK(std::stod(beta[5]) > 1e8);
  CHECK(std::stod(beta[8]) > 1e8);
  CHECK(std::stod(lpd[8]) > 1e8);
  CHECK(std::abs(std::stod(beta[3]) - std::stod(beta[6])) < 1e-6);  // both orders find the same mean

  const auto first_only = test::run_cli("zv '" + out.string() + "' --order 1");
  CHECK(first_only.exit_code == 0);
  CHECK_THAT(first_only.output, Contains("first order only"));
  // summary still reads the chains with their generated-quantity column.
  const auto summary = test::run_cli("summary '" + out.string() + "'");
  CHECK(summary.exit_code == 0);
  CHECK_THAT(summary.output, Contains("held_out_log_density"));
}

TEST_CASE("sgmcmc zv refuses folders without gradients, mismatched files and too few draws") {
  test::TempDir dir;
  const auto expect_error = [](const std::string& arguments, const std::string& message) {
    const auto result = test::run_cli(arguments);
    INFO(arguments << "\n" << result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains(message));
  };
  const auto plain = dir.path() / "plain";
  REQUIRE(test::run_cli("run --preset demo --quiet --chains 2 --set run.iterations=200 --out '" + plain.string() + "'").exit_code == 0);
  expect_error("zv '" + plain.string() + "'", "has no gradients-<k>.csv files; record them with [output] gradients");
  expect_error("zv '" + (dir.path() / "absent").string() + "'", "absent': No such file or directory");

  const auto recorded = dir.path() / "recorded";
  REQUIRE(test::run_cli("run --preset demo --quiet --chains 2 --set run.iterations=200 --set output.gradients=exact --out '" +
                        recorded.string() + "'").exit_code == 0);
  const auto copy = [&](const std::string& name) {
    const auto to = dir.path() / name;
    fs::copy(recorded, to);
    return to;
  };
  const auto short_rows = copy("short-rows");  // the last gradient row of chain 2 lost
  auto lines = lines_of(test::read_text(short_rows / "gradients-2.csv"));
  lines.pop_back();
  std::ofstream(short_rows / "gradients-2.csv") << fmt::format("{}\n", fmt::join(lines, "\n"));
  expect_error("zv '" + short_rows.string() + "'", "gradients-2.csv has 39 rows but");
  expect_error("zv '" + short_rows.string() + "'", "chain-2.csv has 40 draws");

  const auto not_finite = copy("not-finite");  // a NaN gradient at draw 3 of chain 1
  lines = lines_of(test::read_text(not_finite / "gradients-1.csv"));
  std::size_t header = 0;
  while (lines[header].starts_with("#")) ++header;
  lines[header + 3] = "1,2,nan,4,5";
  std::ofstream(not_finite / "gradients-1.csv") << fmt::format("{}\n", fmt::join(lines, "\n"));
  expect_error("zv '" + not_finite.string() + "'", "gradients-1.csv: draw 3 has grad_lp.beta.3 = nan");

  const auto missing = copy("missing");
  fs::remove(missing / "gradients-1.csv");
  expect_error("zv '" + missing.string() + "'", "has no gradients-1.csv beside it");

  const auto renamed = copy("renamed");
  std::ofstream(renamed / "gradients-1.csv") << "grad_lp.gamma.1\n0.5\n";
  expect_error("zv '" + renamed.string() + "'", "has a gradient of 'gamma.1'");
  std::ofstream(renamed / "gradients-1.csv") << "beta.1\n0.5\n";
  expect_error("zv '" + renamed.string() + "'", "column 'beta.1' is not a gradient column");

  // d = 5: order 2 has 20 controls, so 2 chains × 8 draws (16) are too few; order 1 (5) is not.
  const auto few = dir.path() / "few";
  REQUIRE(test::run_cli("run --preset demo --quiet --chains 2 --set run.iterations=40 --set output.gradients=exact --out '" +
                        few.string() + "'").exit_code == 0);
  expect_error("zv '" + few.string() + "'", "16 draws in all, but order 2 has 20 control variates (d = 5) and needs more draws "
                                            "than controls, at least 21; --order 1 needs 6");
  CHECK(test::run_cli("zv '" + few.string() + "' --order 1").exit_code == 0);
  // zv = true in such a run: the run's files are complete, so it says why and still exits 0.
  const auto few_zv = test::run_cli("run --preset demo --quiet --chains 2 --set run.iterations=40 --set output.zv=true --out '" +
                                    (dir.path() / "few-zv").string() + "'");
  CHECK(few_zv.exit_code == 0);
  CHECK_THAT(few_zv.output, Contains("sgmcmc: zv: 16 draws in all") && Contains("(the run itself is complete)"));
  // A recorder whose own centring diverges says it is the recorder's.
  expect_error("run --preset demo --quiet --set output.gradients=cv --set estimator.sgd_step_size=1000 --out '" +
                   (dir.path() / "diverging").string() + "'",
               "the gradient recorder (output.gradients): estimator 'cv', SGD centring phase: θ is no longer finite");

  const auto out = (dir.path() / "bad").string();
  expect_error("run --preset demo --set output.zv=true --set output.gradients=none --out '" + out + "'",
               "output.zv = true needs recorded gradients");
  expect_error("run --preset demo --set output.gradients=exakt --out '" + out + "'", "unknown gradient source 'exakt'");
  expect_error("run --preset demo --set output.gradient=exact --out '" + out + "'", "did you mean 'output.gradients'?");
  CHECK_FALSE(fs::exists(dir.path() / "bad" / "manifest.json"));
}
