// `sgmcmc predict RUN --data FILE` through the real CLI on a run of each model that predicts (glm
// gaussian, bernoulli, poisson, negative binomial with a sampled dispersion and categorical,
// logistic, mlp with no hidden layer), its output
// checked against the posterior predictive computed here from the run's chain-<k>.csv files and
// the data file; and bad input refused with exit 2 naming what was wrong.
#include <catch2/catch.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <functional>
#include <numbers>
#include <regex>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "support.hpp"

import sgmcmc;

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

/// Rows (label, x1, x2) with x uniform on [-1, 1] and a label from `label(z, rng)` at
/// z = 0.5 + x1 - x2; written as CSV.
struct Data {
  std::vector<double> y;
  std::vector<std::array<double, 2>> x;
  std::string csv(bool labelled = true) const {
    std::string text;
    for (std::size_t i = 0; i < y.size(); ++i)
      text += (labelled ? fmt::format("{},", y[i]) : "") + fmt::format("{:.17g},{:.17g}\n", x[i][0], x[i][1]);
    return text;
  }
};

Data simulate(std::size_t rows, std::uint64_t seed, const std::function<double(double, sgmcmc::Rng&)>& label) {
  sgmcmc::Rng rng(seed, 0);
  Data data;
  for (std::size_t i = 0; i < rows; ++i) {
    const std::array<double, 2> x{2.0 * rng.uniform() - 1.0, 2.0 * rng.uniform() - 1.0};
    data.x.push_back(x);
    data.y.push_back(label(0.5 + x[0] - x[1], rng));
  }
  return data;
}

/// One model kind: its [model] lines, how its labels are drawn, and the prediction of one row at
/// one draw computed here: class probabilities, or (mean, variance, and what the density needs
/// besides); and log p(y | x, θ) from that prediction.
struct Kind {
  std::string name, model_lines;
  std::function<double(double, sgmcmc::Rng&)> label;
  std::function<std::vector<double>(const std::vector<double>& theta, const std::array<double, 2>& x)> predict;
  std::function<double(const std::vector<double>& prediction, double y)> log_density;
  bool probabilities;
  std::vector<std::string> parameters;  // θ's column names in chain-<k>.csv, in the order predict takes
};

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

std::vector<double> softmax(std::vector<double> z) {
  double total = 0.0;
  for (double& v : z) total += v = std::exp(v);
  for (double& v : z) v /= total;
  return z;
}

double linear(const std::vector<double>& theta, const std::array<double, 2>& x, std::size_t at = 0) {
  return theta[at] + theta[at + 1] * x[0] + theta[at + 2] * x[1];
}

std::vector<Kind> kinds() {
  const auto bernoulli_label = [](double z, sgmcmc::Rng& rng) { return rng.uniform() < sigmoid(z) ? 1.0 : 0.0; };
  const auto bernoulli_density = [](const std::vector<double>& p, double y) { return std::log(y == 1.0 ? p[0] : 1.0 - p[0]); };
  const auto class_label = [](double z, sgmcmc::Rng& rng) {
    const auto p = softmax({z, -z, 0.0});
    const double u = rng.uniform();
    return u < p[0] ? 0.0 : u < p[0] + p[1] ? 1.0 : 2.0;
  };
  const auto class_density = [](const std::vector<double>& p, double y) { return std::log(p[static_cast<std::size_t>(y)]); };
  const std::vector<std::string> coefficients{"intercept", "beta.1", "beta.2"};
  const double sigma = 0.7;
  return {
      {"glm-gaussian", fmt::format("name = \"glm\"\nfamily = \"gaussian\"\nnoise_sd = {}\n", sigma),
       [=](double z, sgmcmc::Rng& rng) { return z + sigma * rng.normal(); },
       [=](const auto& t, const auto& x) { return std::vector<double>{linear(t, x), sigma * sigma}; },
       [](const std::vector<double>& m, double y) {
         return -0.5 * (y - m[0]) * (y - m[0]) / m[1] - 0.5 * std::log(2.0 * std::numbers::pi * m[1]);
       },
       false, coefficients},
      {"glm-bernoulli", "name = \"glm\"\nfamily = \"bernoulli\"\n", bernoulli_label,
       [](const auto& t, const auto& x) { return std::vector<double>{sigmoid(linear(t, x))}; }, bernoulli_density, true,
       coefficients},
      {"glm-poisson", "name = \"glm\"\nfamily = \"poisson\"\n",
       [](double z, sgmcmc::Rng& rng) {  // Poisson(e^z) by inversion
         const double mean = std::exp(z), u = rng.uniform();
         double k = 0.0, p = std::exp(-mean), cumulative = p;
         while (u > cumulative) cumulative += p *= mean / ++k;
         return k;
       },
       [](const auto& t, const auto& x) {
         const double mean = std::exp(linear(t, x));
         return std::vector<double>{mean, mean};
       },
       [](const std::vector<double>& m, double y) { return y * std::log(m[0]) - m[0] - std::lgamma(y + 1.0); }, false,
       coefficients},
      // A sampled dispersion: r = e^u per draw, variance μ + μ²/r (Hilbe 2011's NB2).
      {"glm-negative-binomial", "name = \"glm\"\nfamily = \"negative_binomial\"\n",
       [](double z, sgmcmc::Rng& rng) {  // NB2(μ = e^z, r = 2) as Poisson(λ), λ ~ Gamma(r, rate r/μ)
         const double lambda = rng.gamma(2.0, 2.0 / std::exp(z)), u = rng.uniform();
         double k = 0.0, p = std::exp(-lambda), cumulative = p;
         while (u > cumulative && p > 0.0) cumulative += p *= lambda / ++k;
         return k;
       },
       [](const auto& t, const auto& x) {
         const double mean = std::exp(linear(t, x)), r = std::exp(t[3]);
         return std::vector<double>{mean, mean + mean * mean / r, r};
       },
       [](const std::vector<double>& m, double y) {
         const double mean = m[0], r = m[2];
         return std::lgamma(y + r) - std::lgamma(r) - std::lgamma(y + 1.0) + r * std::log(r / (r + mean)) +
                y * std::log(mean / (r + mean));
       },
       false, {"intercept", "beta.1", "beta.2", "log_dispersion"}},
      {"glm-categorical", "name = \"glm\"\nfamily = \"categorical\"\n", class_label,
       [](const auto& t, const auto& x) { return softmax({linear(t, x, 0), linear(t, x, 3), 0.0}); }, class_density, true,
       {"intercept.0", "beta.0.1", "beta.0.2", "intercept.1", "beta.1.1", "beta.1.2"}},
      {"logistic", "name = \"logistic\"\n", bernoulli_label,
       [](const auto& t, const auto& x) { return std::vector<double>{sigmoid(linear(t, x))}; }, bernoulli_density, true,
       coefficients},
      // No hidden layer: the softmax of x W + b over all three classes (no reference class).
      {"mlp", "name = \"mlp\"\nlayers = []\nfamily = \"categorical\"\n", class_label,
       [](const auto& t, const auto& x) {
         std::vector<double> z(3);
         for (std::size_t j = 0; j < 3; ++j) z[j] = x[0] * t[j] + x[1] * t[3 + j] + t[6 + j];
         return softmax(z);
       },
       class_density, true, {"w1.1.1", "w1.1.2", "w1.1.3", "w1.2.1", "w1.2.2", "w1.2.3", "b1.1", "b1.2", "b1.3"}},
  };
}

/// A short SGLD run of `kind` on `train`: 2 chains, 100 draws each after a warmup of 50.
void run(const Kind& kind, const fs::path& train, const fs::path& out, const test::TempDir& dir) {
  const auto config = dir.write(kind.name + ".toml", fmt::format(R"([model]
{}data = "{}"
test_size = 0
[estimator]
name = "minibatch"
batch_size = 20
[integrator]
name = "sgld"
step_size = 0.002
[run]
warmup = 50
iterations = 100
chains = 2
seed = 3
)",
                                                                 kind.model_lines, train.string()));
  const auto result = test::run_cli(fmt::format("run --config '{}' --out '{}' --quiet", config.string(), out.string()));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
}

/// The posterior predictive computed here: per row, the average over every draw of both chain
/// files of the prediction (or the mixture's mean and sd), and the mean log predictive density.
struct Expected {
  std::vector<std::vector<double>> rows;
  double log_predictive_density = 0.0;
  std::size_t draws = 0;
};

Expected expected_predictive(const Kind& kind, const fs::path& out, const Data& data) {
  Expected expected;
  std::vector<std::vector<double>> sums(data.y.size()), squares(data.y.size());
  std::vector<double> density_sums(data.y.size(), 0.0);
  for (const char* chain : {"chain-1.csv", "chain-2.csv"}) {
    const auto csv = sgmcmc::read_stan_csv(out / chain);
    std::vector<std::size_t> columns;
    for (const auto& name : kind.parameters) {
      const auto found = std::find(csv.columns.begin(), csv.columns.end(), name);
      REQUIRE(found != csv.columns.end());
      columns.push_back(static_cast<std::size_t>(found - csv.columns.begin()));
    }
    for (const auto& draw : csv.rows) {
      std::vector<double> theta;
      for (std::size_t c : columns) theta.push_back(draw[c]);
      ++expected.draws;
      for (std::size_t j = 0; j < data.y.size(); ++j) {
        const auto p = kind.predict(theta, data.x[j]);
        sums[j].resize(p.size());
        squares[j].resize(p.size());
        for (std::size_t c = 0; c < p.size(); ++c) sums[j][c] += p[c];
        if (!kind.probabilities) squares[j][1] += p[1] + p[0] * p[0];
        density_sums[j] += std::exp(kind.log_density(p, data.y[j]));
      }
    }
  }
  const auto draws = static_cast<double>(expected.draws);
  for (std::size_t j = 0; j < data.y.size(); ++j) {
    if (kind.probabilities) {
      for (double& p : sums[j]) p /= draws;
      expected.rows.push_back(sums[j]);
    } else {
      const double mean = sums[j][0] / draws;
      expected.rows.push_back({mean, std::sqrt(squares[j][1] / draws - mean * mean)});
    }
    expected.log_predictive_density += std::log(density_sums[j] / draws) / static_cast<double>(data.y.size());
  }
  return expected;
}

}  // namespace

TEST_CASE("predict: the posterior predictive of glm, logistic and mlp runs is the average over their draws") {
  test::TempDir dir;
  for (const auto& kind : kinds()) {
    INFO(kind.name);
    const Data train = simulate(200, 1, kind.label), held_out = simulate(12, 2, kind.label);
    const auto train_file = dir.write(kind.name + "-train.csv", train.csv());
    const auto test_file = dir.write(kind.name + "-test.csv", held_out.csv());
    const auto run_folder = dir.path() / kind.name;
    run(kind, train_file, run_folder, dir);

    const auto out = dir.path() / (kind.name + "-predictions.csv"), per_draw = dir.path() / (kind.name + "-draws.csv");
    const auto result = test::run_cli(fmt::format("predict '{}' --data '{}' --out '{}' --per-draw '{}'", run_folder.string(),
                                                  test_file.string(), out.string(), per_draw.string()));
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
    const Expected expected = expected_predictive(kind, run_folder, held_out);
    REQUIRE(expected.draws == 200);  // 2 chains × 100 recorded draws
    const auto table = sgmcmc::read_numeric_csv(out);
    REQUIRE(table.rows == held_out.y.size());
    REQUIRE(table.columns == (kind.probabilities ? expected.rows.front().size() : 2) + 1);
    CHECK(table.header.front() == "row");
    if (!kind.probabilities) CHECK(table.header == std::vector<std::string>{"row", "mean", "sd"});
    for (std::size_t j = 0; j < table.rows; ++j)
      for (std::size_t c = 0; c + 1 < table.columns; ++c)
        CHECK(table.at(j, c + 1) == Approx(expected.rows[j][c]).epsilon(1e-10).margin(1e-14));
    // The held-out log predictive density on stderr.
    std::smatch found;
    REQUIRE(std::regex_search(result.output, found, std::regex("held-out log predictive density (\\S+)")));
    CHECK(std::stod(found[1]) == Approx(expected.log_predictive_density).epsilon(1e-5));
    CHECK_THAT(result.output, Contains("200 draws from 2 chain(s)"));
    // --per-draw: one line per draw and row.
    CHECK(sgmcmc::read_numeric_csv(per_draw).rows == 200 * held_out.y.size());

    // The same rows without their labels: the same predictions, no held-out scores.
    const auto unlabelled = dir.write(kind.name + "-features.csv", held_out.csv(false));
    const auto plain = test::run_cli(fmt::format("predict '{}' --data '{}'", run_folder.string(), unlabelled.string()));
    REQUIRE(plain.exit_code == 0);
    CHECK_THAT(plain.output, Contains(test::read_text(out)) && Contains("no labels"));
  }
}

TEST_CASE("predict: a missing run, a data file of the wrong width and a model that cannot predict exit 2 naming them") {
  test::TempDir dir;
  const auto missing = test::run_cli(fmt::format("predict '{}' --data x.csv", (dir.path() / "nowhere").string()));
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Contains("nowhere") && Contains("not a run folder"));

  const Kind kind = kinds()[4];  // glm categorical
  const Data train = simulate(100, 1, kind.label);
  const auto run_folder = dir.path() / "categorical";
  run(kind, dir.write("train.csv", train.csv()), run_folder, dir);
  const auto wide = dir.write("wide.csv", "0,0.1,0.2,0.3\n1,0.4,0.5,0.6\n");
  const auto wrong_width = test::run_cli(fmt::format("predict '{}' --data '{}'", run_folder.string(), wide.string()));
  CHECK(wrong_width.exit_code == 2);
  CHECK_THAT(wrong_width.output, Contains(wide.string()) && Contains("4 columns") && Contains("expected 3 (the label"));
  const auto bad_label = dir.write("bad.csv", "0,0.1,0.2\n3,0.4,0.5\n");
  const auto unknown_class = test::run_cli(fmt::format("predict '{}' --data '{}'", run_folder.string(), bad_label.string()));
  CHECK(unknown_class.exit_code == 2);
  CHECK_THAT(unknown_class.output, Contains(bad_label.string() + ":2") && Contains("label 3 is not a class"));

  const auto gaussian_folder = dir.path() / "gaussian";
  REQUIRE(test::run_cli(fmt::format("run --preset demo --set run.iterations=20 --set run.warmup=0 --set run.chains=1 --out '{}' "
                                    "--quiet",
                                    gaussian_folder.string()))
              .exit_code == 0);
  const auto cannot = test::run_cli(fmt::format("predict '{}' --data '{}'", gaussian_folder.string(), wide.string()));
  CHECK(cannot.exit_code == 2);
  CHECK_THAT(cannot.output, Contains("model 'gaussian'") && Contains("cannot predict"));
}
