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
#include <xtensor/xtensor.hpp>
#include <xtensor-blas/xlinalg.hpp>

#include "support.hpp"
#include "model_support.hpp"

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

namespace {

/// The fields of `quantity`'s row of a `zv --csv` table (quantity, mean, mcse, zv1_mean, zv1_mcse,
/// var_ratio1, zv2_mean, zv2_mcse, var_ratio2), as numbers; empty when there is no such row.
std::vector<double> csv_row(const fs::path& csv, const std::string& quantity) {
  for (const auto& line : lines_of(test::read_text(csv))) {
    const auto fields = test::csv_fields(line);
    if (fields.at(0) != quantity) continue;
    std::vector<double> values;
    for (std::size_t k = 1; k < fields.size(); ++k) values.push_back(std::stod(fields[k]));
    return values;
  }
  return {};
}

}  // namespace

TEST_CASE("sgmcmc zv on a tempered run estimates the mean under the tempered target pi^(1/T)") {
  // The reference is derived, not simulated. The gaussian model's posterior is N(μ, A⁻¹), so the
  // tempered target π^{1/T} is N(μ, T A⁻¹). Its quantity held_out_log_density is a quadratic in β,
  //   q(β) = q(μ) + ∇q(μ)ᵀ(β - μ) + ½ (β - μ)ᵀ H (β - μ),  so  E_T[q] = q(μ) + (T/2) tr(H A⁻¹).
  // A, μ and q are read off the model itself, loaded in this process with the run's [model] and
  // data seed: ∇U(β) = A(β - μ) is linear (A from ∇U at 0 and the unit vectors, μ = -A⁻¹∇U(0)),
  // and q's Hessian H comes from second differences at unit steps, exact for a quadratic up to
  // rounding (all values O(1), so about 1e-14).
  // - Order 2 (the default for d = 3): q lies in the span of a constant and the second-order
  //   controls ΔP + ∇P·s with s the target's score, so the ZV estimate is E_T[q] itself, up to
  //   rounding, whatever the draws, provided s is the score of π^{1/T} (= z/T). With s = z, the
  //   score of π, it is E_1[q] instead: (1 - T)/2 tr(H A⁻¹) off, 1.9e-3 at T = 0.5 and 3.8e-3 at
  //   T = 2 here (tr(H A⁻¹) ≈ -3/400: 3 coefficients of prior 1 and 400 rows of noise 1). The
  //   tolerance, 1e-7, is far above rounding (the controls fit q to about 1e-12) and 10⁴ times
  //   below that error.
  // - The plain mean and the first-order ZV mean are unbiased under an exact sampler (MALA + MH
  //   leaves π^{1/T} invariant): within 4.5 of their MCSE of E_T[q] (a false alarm about 7e-6 per
  //   check, 4 checks). The plain mean's MCSE is about 1e-4, so it too tells E_T from E_1.
  test::TempDir dir;
  const std::string model_lines = "name = \"gaussian\"\nn = 500\ntest_size = 100\ndim = 3\nnoise_sd = 1.0\nprior_sd = 1.0\n";
  constexpr std::uint64_t seed = 11;
  // The model as the run builds it (the data seed is run.seed), without its name key.
  const auto model = test::build_model("gaussian", model_lines.substr(model_lines.find('\n') + 1), seed);
  const std::size_t d = model->dimension();
  auto workspace = model->make_workspace();
  const auto gradient_at = [&](const std::vector<double>& beta) { return test::full_gradient(*model, beta, *workspace); };
  const auto q = [&](const std::vector<double>& beta) {
    std::vector<double> out(1);
    model->evaluate_quantities(beta, *workspace, out);
    return out[0];
  };
  const std::vector<double> zero(d, 0.0);
  const auto unit = [&](std::size_t j, double scale = 1.0) {
    std::vector<double> e(d, 0.0);
    e[j] = scale;
    return e;
  };
  xt::xtensor<double, 2> precision = xt::zeros<double>({d, d}), hessian = xt::zeros<double>({d, d});
  xt::xtensor<double, 1> at_zero = xt::zeros<double>({d});
  const auto g0 = gradient_at(zero);
  for (std::size_t j = 0; j < d; ++j) {
    at_zero(j) = g0[j];
    const auto gj = gradient_at(unit(j));
    for (std::size_t i = 0; i < d; ++i) precision(i, j) = gj[i] - g0[i];
  }
  const xt::xtensor<double, 2> covariance = xt::linalg::inv(precision);
  const xt::xtensor<double, 1> mean = -xt::linalg::dot(covariance, at_zero);
  const double q0 = q(zero);
  for (std::size_t j = 0; j < d; ++j)
    for (std::size_t k = 0; k < d; ++k) {
      std::vector<double> both = unit(j);
      both[k] += 1.0;
      hessian(j, k) = j == k ? q(unit(j)) + q(unit(j, -1.0)) - 2.0 * q0 : q(both) - q(unit(j)) - q(unit(k)) + q0;
    }
  const xt::xtensor<double, 2> product = xt::linalg::dot(hessian, covariance);
  double trace = 0.0;
  for (std::size_t j = 0; j < d; ++j) trace += product(j, j);
  REQUIRE(trace < -1e-3);  // the quadratic term the test rests on is there
  const double at_mean = q(std::vector<double>(mean.begin(), mean.end()));

  for (const double temperature : {0.5, 2.0}) {
    INFO("T = " << temperature);
    const double expected = at_mean + 0.5 * temperature * trace, untempered = at_mean + 0.5 * trace;
    const auto out = dir.path() / fmt::format("T{}", temperature);
    const auto config = dir.write(fmt::format("T{}.toml", temperature),
                                  fmt::format("[model]\n{}[estimator]\nname = \"exact\"\n[integrator]\nname = \"mala\"\n"
                                              "step_size = 0.001\nadapt_step_size = true\ntemperature = {}\n[corrector]\n"
                                              "name = \"mh\"\n[run]\nwarmup = 1000\niterations = 10000\nchains = 2\nseed = {}\n"
                                              "[output]\ngradients = \"exact\"\n",
                                              model_lines, temperature, seed));
    const auto run = test::run_cli("run --config '" + config.string() + "' --quiet --out '" + out.string() + "'");
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    const auto zv = test::run_cli("zv '" + out.string() + "' --csv '" + (out / "zv.csv").string() + "'");
    INFO(zv.output);
    REQUIRE(zv.exit_code == 0);
    CHECK_THAT(zv.output, Contains(fmt::format("integrator.temperature T = {}", temperature)));
    const auto row = csv_row(out / "zv.csv", "held_out_log_density");
    REQUIRE(row.size() == 8);
    const double plain = row[0], plain_mcse = row[1], first = row[2], first_mcse = row[3], second = row[5];
    INFO(fmt::format("E_T[q] = {:.10f} (E_1[q] = {:.10f}); plain {:.10f} ± {:.2g}, zv1 {:.10f} ± {:.2g}, zv2 {:.10f}", expected,
                     untempered, plain, plain_mcse, first, first_mcse, second));
    CHECK(std::abs(second - expected) < 1e-7);
    CHECK(std::abs(plain - expected) < 4.5 * plain_mcse);
    CHECK(std::abs(first - expected) < 4.5 * first_mcse);
  }
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

TEST_CASE("zv, the KSD and tune are refused on a model with positive parameters, with the reason") {
  // Stein's identity E_π[∇·g + g·∇log π] = 0 needs the boundary term g·π to vanish; on θ > 0 it
  // is g π at θ = 0, which does not vanish for the first-order control g = e_j. The fixture
  // positive_rate declares positive parameters and nothing else unusual (lda, the bundled one, is
  // refused earlier for its latent Gibbs step).
  test::TempDir dir;
  const auto plugin = test::fixture_plugin_dir / "sgmcmc-model-positive_rate.so";
  const auto config = dir.write("rate.toml", fmt::format("[model]\nname = \"{}\"\n[estimator]\nname = \"exact\"\n[integrator]\n"
                                                         "name = \"sgld\"\nstep_size = 0.001\n[run]\niterations = 200\n",
                                                         plugin.string()));
  const auto out = [&](const char* name) { return (dir.path() / name).string(); };
  const auto plain = test::run_cli("run --config '" + config.string() + "' --quiet --out '" + out("plain") + "'");
  INFO(plain.output);
  REQUIRE(plain.exit_code == 0);  // the model runs; only what rests on Stein's identity is refused
  const auto expect_refusal = [&](const std::string& arguments, const char* folder) {
    const auto result = test::run_cli(arguments + " --out '" + out(folder) + "'");
    INFO(arguments << "\n" << result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains("output.gradients") && Contains("positive parameters") &&
                                  Contains("Stein's identity, whose boundary term at θ = 0 does not vanish"));
    CHECK_FALSE(fs::exists(dir.path() / folder / "manifest.json"));
  };
  for (const char* source : {"exact", "cv", "estimator"})
    expect_refusal("run --config '" + config.string() + "' --quiet --set output.gradients=" + source, source);
  expect_refusal("run --config '" + config.string() + "' --quiet --set output.zv=true", "zv");
  expect_refusal("tune --config '" + config.string() + "' --steps 0.001,0.002 --quiet", "tune");
  CHECK_FALSE(fs::exists(dir.path() / "tune"));
}
