// The SDK end to end: install into a temporary prefix, write a plugin project with
// `sgmcmc new-model`, build it out of tree with only find_package(sgmcmc), check it with
// `check-model`, run a chain with it through the installed CLI (the manual example's posterior mean
// against its closed form). And `check-model` on plugins
// with deliberate faults, each failure named.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gaussian_posterior.hpp"
#include "statistics.hpp"
#include "support.hpp"

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

using test::shell;

std::string quote(const fs::path& path) { return "'" + path.string() + "'"; }

}  // namespace

namespace {

/// A parameter's column of a chain's Stan CSV (comment lines skipped, the first other line the header).
std::vector<double> draws_of(const fs::path& chain_file, const std::string& parameter) {
  std::vector<double> values;
  std::ptrdiff_t column = -1;
  for (const auto& line : test::lines_of(test::read_text(chain_file))) {
    if (line.empty() || line.front() == '#') continue;
    const auto fields = test::csv_fields(line);
    if (column < 0) {
      const auto found = std::find(fields.begin(), fields.end(), parameter);
      REQUIRE(found != fields.end());
      column = found - fields.begin();
    } else {
      values.push_back(std::stod(fields.at(static_cast<std::size_t>(column))));
    }
  }
  return values;
}

/// Configures and builds a plugin project with only the installed package: the source tree is
/// nowhere on the consumer's paths. The project's preset is Release with no extra flags, so an
/// SDK built the same way (SGMCMC_EXPECT_BMI_REUSE) has its installed BMIs reused and no module
/// interface unit is compiled (they are only scanned); otherwise the build compiles each into a
/// `<hash>.bmi` of CMake's synthetic target for sgmcmc::core.
void build_out_of_tree(const fs::path& project, const fs::path& prefix) {
  const std::string cmake = quote(SGMCMC_CMAKE);
  const auto step = shell(fmt::format("cd {} && {} --preset release -DCMAKE_PREFIX_PATH={} && {} --build --preset release",
                                      quote(project), cmake, quote(prefix), cmake));
  INFO(step.output);
  REQUIRE(step.exit_code == 0);
  if (SGMCMC_EXPECT_BMI_REUSE)
    CHECK_THAT(step.output, Contains("load the installed BMIs - yes") && !Contains(".bmi"));
  else
    CHECK_THAT(step.output, Contains(".bmi"));
}

/// The manual template's chains (SGLD-CV, 2 × 4,000 draws) against its model's closed-form posterior.
/// Linear regression y = Xβ + ε, ε ~ N(0, σ²), β ~ N(0, s² I) on the first 500 rows of the CSV:
/// the posterior mean is P⁻¹ Xᵀy/σ² with P = XᵀX/σ² + I/s² (Bishop 2006, eq. 3.53–3.54).
/// Quantity: each coefficient's mean over both chains. SGLD's mean on a Gaussian target is unbiased
/// whatever the step and the gradient noise (the expected update is affine, with the exact
/// gradient's fixed point); only the variance is inflated. Tolerance: 4.5 Monte Carlo standard
/// errors, each chain's by 20 batch means of 200 draws (batches ≫ the slowest direction's
/// autocorrelation time 2/(ε λ_min) ≈ 2/(1e-4 · 667) ≈ 30 iterations), so a chance failure has
/// probability ≈ 1e-5 per coefficient. A sign error in one gradient term moves the mean by many sd.
void check_posterior_mean(const fs::path& data, const fs::path& run) {
  constexpr double sigma = 0.5, s = 10.0;
  constexpr std::size_t train_rows = 500, d = 4;
  const auto lines = test::lines_of(test::read_text(data));
  REQUIRE(lines.size() >= train_rows);
  xt::xtensor<double, 2> x = xt::ones<double>({train_rows, d});
  xt::xtensor<double, 1> y = xt::zeros<double>({train_rows});
  for (std::size_t i = 0; i < train_rows; ++i) {
    const auto fields = test::csv_fields(lines[i]);
    y(i) = std::stod(fields[0]);
    for (std::size_t j = 1; j < d; ++j) x(i, j) = std::stod(fields[j]);
  }
  const auto mean = test::gaussian_posterior(x, y, sigma, s).mean;
  const char* names[d] = {"intercept", "beta.1", "beta.2", "beta.3"};
  for (std::size_t j = 0; j < d; ++j) {
    const auto first = draws_of(run / "chain-1.csv", names[j]), second = draws_of(run / "chain-2.csv", names[j]);
    REQUIRE(first.size() == 4000);
    REQUIRE(second.size() == 4000);
    const double estimate = 0.5 * (test::mean(first) + test::mean(second));
    const double se = 0.5 * std::hypot(test::batch_means_se(first, 20), test::batch_means_se(second, 20));
    INFO(fmt::format("{}: chains {} (se {}), closed form {}", names[j], estimate, se, mean(j)));
    CHECK(std::abs(estimate - mean(j)) < 4.5 * se);
  }
}

}  // namespace

TEST_CASE("install, new-model, out-of-tree build, check-model and a chain with the installed CLI") {
  test::TempDir dir;
  const fs::path prefix = dir.path() / "prefix", project = dir.path() / "mymodel";
  const std::string cmake = quote(SGMCMC_CMAKE);
  auto step = shell(fmt::format("{} --install {} --prefix {}", cmake, quote(SGMCMC_BUILD_DIR), quote(prefix)));
  INFO(step.output);
  REQUIRE(step.exit_code == 0);
  const std::string installed = quote(prefix / "bin" / "sgmcmc");

  step = shell(fmt::format("{} new-model mymodel {}", installed, quote(project)));
  REQUIRE(step.exit_code == 0);
  for (const char* file : {"CMakeLists.txt", "CMakePresets.json", "mymodel.cpp", "mymodel.toml", "mymodel.csv", "README.md"})
    CHECK(fs::exists(project / file));
  CHECK(shell(fmt::format("{} new-model mymodel {}", installed, quote(project))).exit_code == 2);  // not empty
  CHECK(shell(fmt::format("{} new-model My-Model {}", installed, quote(dir.path() / "x"))).exit_code == 2);

  build_out_of_tree(project, prefix);
  const fs::path plugin = project / "build" / "plugins" / "sgmcmc-model-mymodel.so";
  REQUIRE(fs::exists(plugin));

  step = shell(fmt::format("cd {} && {} check-model {}", quote(project), installed, quote(plugin)));  // reads mymodel.csv
  INFO(step.output);
  CHECK(step.exit_code == 0);
  CHECK_THAT(step.output, Contains("0 failed") && Contains("PASS  batch gradient matches finite differences") &&
                              Contains("PASS  per-item gradients") && Contains("PASS  GLM form"));
  // Without held-out rows the template has no metric, and its evaluate_metrics gets an empty span
  // (it wrote out[0] there, and check-model died of SIGSEGV with no message).
  step = shell(fmt::format("cd {} && {} check-model {} --set model.test_rows=0", quote(project), installed, quote(plugin)));
  INFO(step.output);
  CHECK(step.exit_code == 0);
  CHECK_THAT(step.output, Contains("0 failed"));

  const fs::path out = dir.path() / "run";
  step = shell(fmt::format("cd {} && {} run --config mymodel.toml --plugin-dir build/plugins --quiet --out {}", quote(project),
                           installed, quote(out)));
  INFO(step.output);
  REQUIRE(step.exit_code == 0);
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["status"] == "complete");
  CHECK(manifest["model"]["name"] == "mymodel");
  check_posterior_mean(project / "mymodel.csv", out);
  // The installed CLI finds its own bundled plugins in <prefix>/lib/sgmcmc/plugins, and only those:
  // not the build tree's as well, which listed every bundled model twice, one "shadowed".
  step = shell(fmt::format("{} list", installed));
  CHECK_THAT(step.output, Contains((prefix / "lib" / "sgmcmc" / "plugins" / "sgmcmc-model-gaussian.so").string()));
  CHECK_THAT(step.output, !Contains("shadowed") && !Contains(std::string(SGMCMC_PLUGIN_DIR)));
  // A preset's data shipped with its plugin is installed beside it and read from there.
  const fs::path digits_run = dir.path() / "digits";
  step = shell(fmt::format("{} run --preset mlp-digits --set run.warmup=0 --set run.iterations=100 --quiet --out {}",
                           installed, quote(digits_run)));
  INFO(step.output);
  CHECK(step.exit_code == 0);
  const auto digits = nlohmann::json::parse(test::read_text(digits_run / "manifest.json"));
  CHECK(digits["config"]["model"]["data"] == (prefix / "lib" / "sgmcmc" / "plugins" / "data" / "mlp" / "digits.csv.gz").string());
}

TEST_CASE("new-model --kind autodiff: a Poisson regression in under 40 lines, built out of tree, passes check-model "
          "and runs the same chain as --kind glm") {
  // Both kinds write the same example data; the autodiff plugin's gradients come from Stan Math,
  // glm's are hand-written. MALA with MH from the same seed makes the same proposals, so the two
  // chains agree draw for draw if the two models' U and ∇U agree to rounding (on this log-concave
  // posterior rounding differences do not grow); a wrong gradient or potential moves the chains apart
  // at the first step. The glm project also runs with no build at all.
  test::TempDir dir;
  const fs::path prefix = dir.path() / "prefix", derived = dir.path() / "derived", glm = dir.path() / "glm";
  const std::string cmake = quote(SGMCMC_CMAKE);
  auto step = shell(fmt::format("{} --install {} --prefix {}", cmake, quote(SGMCMC_BUILD_DIR), quote(prefix)));
  INFO(step.output);
  REQUIRE(step.exit_code == 0);
  const std::string installed = quote(prefix / "bin" / "sgmcmc");
  REQUIRE(shell(fmt::format("{} new-model derived {} --kind autodiff", installed, quote(derived))).exit_code == 0);
  REQUIRE(shell(fmt::format("{} new-model glm_poisson {} --kind glm", installed, quote(glm))).exit_code == 0);
  CHECK(shell(fmt::format("{} new-model other {} --kind stan", installed, quote(dir.path() / "x"))).exit_code == 2);
  CHECK(test::read_text(derived / "derived.csv") == test::read_text(glm / "glm_poisson.csv"));
  CHECK(test::lines_of(test::read_text(derived / "derived.cpp")).size() < 40);

  build_out_of_tree(derived, prefix);
  const fs::path plugin = derived / "build" / "plugins" / "sgmcmc-model-derived.so";
  step = shell(fmt::format("cd {} && {} check-model {}", quote(derived), installed, quote(plugin)));  // reads derived.csv
  INFO(step.output);
  CHECK(step.exit_code == 0);
  CHECK_THAT(step.output, Contains("0 failed") && Contains("PASS  per-item gradients"));

  const std::string schedule = "--set run.chains=1 --set run.warmup=0 --set run.iterations=300 --quiet";
  step = shell(fmt::format("cd {} && {} run --config derived.toml --plugin-dir build/plugins {} --out run", quote(derived),
                           installed, schedule));
  INFO(step.output);
  REQUIRE(step.exit_code == 0);
  step = shell(fmt::format("cd {} && {} run --config glm_poisson.toml {} --out run", quote(glm), installed, schedule));
  INFO(step.output);
  REQUIRE(step.exit_code == 0);
  for (const std::string parameter : {"intercept", "beta.1", "beta.2", "beta.3"}) {
    const auto mine = draws_of(derived / "run" / "chain-1.csv", parameter);
    const auto theirs = draws_of(glm / "run" / "chain-1.csv", parameter);
    REQUIRE(mine.size() == 300);
    REQUIRE(theirs.size() == 300);
    double largest = 0.0;
    for (std::size_t k = 0; k < mine.size(); ++k) largest = std::max(largest, std::abs(mine[k] - theirs[k]));
    INFO(parameter);
    CHECK(largest < 1e-8);
  }
}

TEST_CASE("check-model names each deliberate fault and exits non-zero") {
  const auto fixture = [](const std::string& name) {
    return "'" + (test::fixture_plugin_dir / ("sgmcmc-model-" + name + ".so")).string() + "'";
  };
  const auto sign = test::run_cli("check-model " + fixture("gradient_sign"));
  INFO(sign.output);
  CHECK(sign.exit_code == 1);
  CHECK_THAT(sign.output, Contains("FAIL  batch gradient matches finite differences of the batch potential"));
  const auto dropped = test::run_cli("check-model " + fixture("batch_drops_last_item"));
  INFO(dropped.output);
  CHECK(dropped.exit_code == 1);
  CHECK_THAT(dropped.output, Contains("FAIL  batch gradient equals the sum of single-item gradients"));
  CHECK_THAT(dropped.output, Contains("FAIL  weighted batch gradient equals the weighted sum"));
  const auto unsaved = test::run_cli("check-model " + fixture("workspace_state_not_saved"));
  INFO(unsaved.output);
  CHECK(unsaved.exit_code == 1);
  CHECK_THAT(unsaved.output, Contains("FAIL  checkpoints: a workspace restored from a used one's save_state"));
  CHECK_THAT(unsaved.output, Contains("PASS  batch gradient equals the sum of single-item gradients"));
  const auto infinite = test::run_cli("check-model " + fixture("quantity_not_finite"));
  INFO(infinite.output);
  CHECK(infinite.exit_code == 1);
  CHECK_THAT(infinite.output, Contains("FAIL  quantities are finite functions of θ") && Contains("precision = inf"));
  CHECK_THAT(infinite.output, Contains("PASS  quantity names are new, distinct CSV columns"));
  CHECK_THAT(infinite.output, Contains("PASS  the capabilities in PluginInfo are the model's"));
  // A plugin that crashes the process: the stage it crashed in fails, naming how the check process
  // ended (a signal; under AddressSanitizer, its report's exit code), and the later stages still run.
  const auto crash = test::run_cli("check-model " + fixture("crashes_in_quantities"));
  INFO(crash.output);
  CHECK(crash.exit_code == 1);
  CHECK_THAT(crash.output, Contains("FAIL  quantities — the check process ended with ") && Contains("the plugin crashed it"));
  CHECK_THAT(crash.output, Contains("PASS  batch gradient equals the sum of single-item gradients"));
  CHECK_THAT(crash.output, Contains("PASS  thread safety: 4 workspaces in 4 threads agree with one"));
  CHECK_THAT(crash.output, Contains("PASS  the capabilities in PluginInfo are the model's"));
  CHECK_THAT(crash.output, Contains("checks, 1 failed"));
  const auto disagree = test::run_cli("check-model " + fixture("capabilities_disagree"));
  INFO(disagree.output);
  CHECK(disagree.exit_code == 1);
  CHECK_THAT(disagree.output, Contains("FAIL  the capabilities in PluginInfo are the model's — PluginInfo declares "
                                       "[exact-log-likelihood], which capabilities() does not return (it returns [])"));
  // The bundled plugins' workspaces save all their state (pmf: hyperparameters and averages; lda:
  // its evaluation stream too).
  for (const char* bundled : {"gaussian --set model.n=300", "logistic --set model.n=2000",
                              "pmf --set model.users=40 --set model.items=30 --set model.ratings=400 --set model.gibbs_every=3",
                              "lda --set model.topics=4 --set model.docs=200 --set model.words=60"}) {
    const auto checked = test::run_cli(std::string("check-model ") + bundled);
    INFO(checked.output);
    CHECK(checked.exit_code == 0);
    CHECK_THAT(checked.output, Contains("PASS  checkpoints: a workspace restored"));
    CHECK_THAT(checked.output, !Contains("FAIL"));
  }

  // The loader's refusals come first, whatever the command.
  const auto abi = test::run_cli("check-model " + fixture("other_fingerprint"));
  CHECK(abi.exit_code == 2);
  CHECK_THAT(abi.output, Contains("built with 'gcc-12"));
  const auto throwing = test::run_cli("check-model " + fixture("throwing_factory"));
  CHECK(throwing.exit_code == 1);
  CHECK_THAT(throwing.output, Contains("FAIL  the model builds from the given settings") && Contains("fixture factory refuses"));
  const auto unknown = test::run_cli("check-model gaussian --set model.noise_sigma=2");
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.output, Contains("did you mean 'model.noise_sd'"));
  const auto not_model = test::run_cli("check-model gaussian --set run.seed=2");
  CHECK(not_model.exit_code == 2);
}
