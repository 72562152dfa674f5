// The pmf plugin's Gibbs steps against their closed forms: the Normal–Gamma full conditional's
// density (up to a constant, against prior × likelihood), the moments of many conditional draws
// made through the plugin's after_step hook, and, on planted rank-3 factors with low noise,
// SGLD-CV's held-out RMSE near the noise level.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <numbers>
#include <span>
#include <sstream>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "../../plugins/pmf/normal_gamma.hpp"
#include "statistics.hpp"
#include "support.hpp"
#include "model_support.hpp"

namespace pmf_gibbs_test {

std::shared_ptr<const sgmcmc::Model> build(const std::string& model_lines, std::uint64_t seed = 1) {
  return test::build_model("pmf", model_lines, seed);
}

/// The conjugate posterior written independently of the plugin's form: with S = Σx², the
/// exponent's bracket β_0(μ - μ_0)² + Σ(x - μ)² = β_n(μ - μ_n)² + [β_0μ_0² + S - β_nμ_n²], so
/// b_n = b_0 + ½(β_0μ_0² + S - β_nμ_n²) (algebraically equal to the plugin's two-pass form).
pmf::NormalGammaPosterior reference_posterior(const pmf::NormalGammaPrior& prior, const std::vector<double>& x) {
  const double n = static_cast<double>(x.size());
  double sum = 0.0, squares = 0.0;
  for (double v : x) {
    sum += v;
    squares += v * v;
  }
  const double weight = prior.mean_weight + n;
  const double mean = (prior.mean_weight * prior.mean + sum) / weight;
  return {mean, weight, prior.shape + n / 2,
          prior.rate + 0.5 * (prior.mean_weight * prior.mean * prior.mean + squares - weight * mean * mean)};
}

/// Moments of (μ, λ) ~ NormalGamma(μ_n, β_n, a_n, b_n), checked on M independent draws at 5
/// standard errors each (the chance that any one of the four checks fails by chance is 6e-7):
///   E[λ] = a/b, Var λ = a/b²  (Gamma; the sample variance's variance is (μ_4 - σ⁴)/M with the
///   central fourth moment μ_4 = 3a(a + 2)/b⁴);
///   E[μ] = μ_n, Var μ = E[1/(β_n λ)] = b/(β_n(a - 1))  (a Student t, for a > 1);
///   β_n λ (μ - μ_n)² ~ χ²_1 given λ: mean 1, variance 2 (checks that μ's spread scales with λ).
void check_moments(const std::vector<double>& means, const std::vector<double>& precisions,
                   const pmf::NormalGammaPosterior& p) {
  const double m = static_cast<double>(means.size());
  const double a = p.shape, b = p.rate;
  CHECK(std::abs(test::mean(precisions) - a / b) < 5 * std::sqrt(a / (b * b) / m));
  const double mu4 = 3 * a * (a + 2) / std::pow(b, 4), sigma2 = a / (b * b);
  CHECK(std::abs(test::variance(precisions) - sigma2) < 5 * std::sqrt((mu4 - sigma2 * sigma2) / m));
  CHECK(std::abs(test::mean(means) - p.mean) < 5 * std::sqrt(b / (p.mean_weight * (a - 1)) / m));
  std::vector<double> chi2(means.size());
  for (std::size_t s = 0; s < means.size(); ++s)
    chi2[s] = p.mean_weight * precisions[s] * (means[s] - p.mean) * (means[s] - p.mean);
  CHECK(std::abs(test::mean(chi2) - 1.0) < 5 * std::sqrt(2.0 / m));
}

}  // namespace pmf_gibbs_test

using namespace pmf_gibbs_test;

TEST_CASE("pmf Gibbs: the Normal-Gamma conditional is prior times likelihood, up to a constant") {
  // log NG(μ, λ | μ_n, β_n, a_n, b_n) - [log p(μ, λ) + Σ log N(x_i | μ, 1/λ)] must not depend on
  // (μ, λ). Checked at 20 random points against the first; the terms are O(10), so 1e-10 is
  // rounding, while any wrong coefficient moves the difference by O(0.1) or more.
  const pmf::NormalGammaPrior prior{.mean = 0.3, .mean_weight = 2.0, .shape = 1.5, .rate = 0.7};
  const std::vector<double> x{0.4, -1.2, 2.2, 0.9, 0.1, -0.3, 1.7};
  const auto post = pmf::normal_gamma_posterior(prior, x, x.size(), 1, 0);
  const auto reference = reference_posterior(prior, x);
  CHECK(post.mean == Approx(reference.mean).epsilon(1e-14));
  CHECK(post.mean_weight == reference.mean_weight);
  CHECK(post.shape == reference.shape);
  CHECK(post.rate == Approx(reference.rate).epsilon(1e-13));
  const auto log_ng = [](double mu, double lambda, double m0, double beta, double a, double b) {
    return a * std::log(b) - std::lgamma(a) + (a - 1) * std::log(lambda) - b * lambda +
           0.5 * std::log(beta * lambda / (2 * std::numbers::pi)) - 0.5 * beta * lambda * (mu - m0) * (mu - m0);
  };
  const auto difference = [&](double mu, double lambda) {
    double log_likelihood = 0.0;
    for (double v : x) log_likelihood += 0.5 * std::log(lambda / (2 * std::numbers::pi)) - 0.5 * lambda * (v - mu) * (v - mu);
    return log_ng(mu, lambda, post.mean, post.mean_weight, post.shape, post.rate) -
           log_ng(mu, lambda, prior.mean, prior.mean_weight, prior.shape, prior.rate) - log_likelihood;
  };
  sgmcmc::Rng rng(5, 5);
  const double first = difference(0.0, 1.0);
  for (int k = 0; k < 20; ++k) {
    const double mu = 3 * rng.normal(), lambda = 0.05 + 5 * rng.uniform();
    CHECK(difference(mu, lambda) == Approx(first).margin(1e-10));
  }
}

TEST_CASE("pmf Gibbs: draws through the plugin's after_step have the conjugate posterior's moments") {
  // A fixed θ (10 users, 8 items, rank 2) and gibbs_every = 1: every after_step is one independent
  // draw of all four (μ_k, λ_k) from their full conditionals given θ. The drawn hyperparameters
  // are read back through the prior gradient, ∇_{U_ik} f_0 = λ_k (U_ik - μ_k): moving U_0k by 1
  // changes it by λ_k, and then μ_k = U_0k - g/λ_k. Reference: the conjugate update with the
  // prior the model was given, computed from θ's columns (reference_posterior).
  const pmf::NormalGammaPrior prior{.mean = 0.2, .mean_weight = 1.5, .shape = 2.0, .rate = 0.5};
  const auto model = build("users = 10\nitems = 8\nratings = 30\ntest_size = 0\nrank = 2\ngibbs_every = 1\n"
                           "prior_mean = 0.2\nprior_mean_weight = 1.5\nprior_shape = 2.0\nprior_rate = 0.5\n",
                           4);
  // Users and items without a simulated rating have no row: count the rows the model has.
  const auto names = model->parameter_names();
  const std::size_t r = 2, d = model->dimension();
  const auto users = static_cast<std::size_t>(std::count_if(names.begin(), names.end(), [](const std::string& n) {
                       return n.starts_with("U.");
                     })) / r;
  const std::size_t items = d / r - users;
  REQUIRE(users >= 5);
  REQUIRE(items >= 5);
  std::vector<double> theta(d);
  sgmcmc::Rng start(8, 0);
  for (double& x : theta) x = 0.5 + 0.8 * start.normal();
  auto workspace = model->make_workspace();
  sgmcmc::Rng rng(2, 1);
  const std::size_t m = 100'000;
  // [block][k]: block 0 = U's prior, 1 = V's prior.
  std::vector<double> means[2][2], precisions[2][2];
  std::vector<double> shifted = theta, g(d), g_shifted(d);
  for (std::size_t s = 1; s <= m; ++s) {
    model->after_step(s, theta, *workspace, rng, sgmcmc::AllItems(model->num_items()));
    std::fill(g.begin(), g.end(), 0.0);
    std::fill(g_shifted.begin(), g_shifted.end(), 0.0);
    for (std::size_t j = 0; j < d; ++j) shifted[j] = theta[j] + 1.0;
    model->add_prior_gradient_given(theta, g, *workspace);
    model->add_prior_gradient_given(shifted, g_shifted, *workspace);
    for (std::size_t block = 0; block < 2; ++block)
      for (std::size_t k = 0; k < r; ++k) {
        const std::size_t j = block * users * r + k;  // row 0 of U, or row 0 of V
        const double lambda = g_shifted[j] - g[j];
        precisions[block][k].push_back(lambda);
        means[block][k].push_back(theta[j] - g[j] / lambda);
      }
  }
  for (std::size_t block = 0; block < 2; ++block)
    for (std::size_t k = 0; k < r; ++k) {
      std::vector<double> column;
      const std::size_t rows = block == 0 ? users : items, first = block == 0 ? 0 : users * r;
      for (std::size_t i = 0; i < rows; ++i) column.push_back(theta[first + i * r + k]);
      INFO((block == 0 ? "U" : "V") << ", coordinate " << k);
      check_moments(means[block][k], precisions[block][k], reference_posterior(prior, column));
    }
}

TEST_CASE("pmf Gibbs: τ and the bias precisions drawn through after_step have their Gamma conditionals' moments") {
  // A fixed θ (rank 1, biases on) on a hand-written data set of 12 ratings, gibbs_every = 1 and a
  // Gamma(a_τ, b_τ) = Gamma(3, 2) noise prior: every after_step is one independent draw of τ from
  // Gamma(a_τ + N/2, b_τ + ½ Σ e_ij²) (normal_gamma.hpp, precision_posterior) and of λ_b, λ_c from
  // Gamma(a_0 + n/2, b_0 + ½ Σ b_i²). Reference: those shapes and rates with the residuals
  // e_ij = r_ij - r̄ - b_i - c_j - U_i V_j computed here from the file and θ, not by the plugin.
  // The draws are read back through gradients, which are linear in them: the one-rating gradient
  // at b_i is -τ e_ij (so τ = -g / e_ij), and the prior gradient at b_i is λ_b b_i.
  // Moments checked at 5 standard errors as in check_moments: E = a/b with sd sqrt(a/b²/M), the
  // variance a/b² with sd sqrt((μ_4 - σ⁴)/M), μ_4 = 3a(a + 2)/b⁴.
  test::TempDir dir;
  const double ratings[4][3] = {{4, 3, 0}, {1, 0, 2}, {3, 5, 4}, {2, 2, 5}};  // users 1..4 × items 1..3, 0 = none
  std::string text;
  double total = 0.0;
  std::size_t count = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      if (ratings[i][j] > 0) {
        text += fmt::format("{}\t{}\t{}\n", i + 1, j + 1, ratings[i][j]);
        total += ratings[i][j];
        ++count;
      }
  const double offset = total / static_cast<double>(count);
  const auto model = build(fmt::format("data = {}\ntest_size = 0\nrank = 1\nbiases = true\ngibbs_every = 1\n"
                                       "noise_prior_shape = 3\nnoise_prior_rate = 2\nprior_shape = 2\nprior_rate = 0.5\n",
                                       test::quoted(dir.write("r.tsv", text))));
  const std::size_t users = 4, items = 3, d = model->dimension();
  REQUIRE(d == (users + items) * 2);  // U, V (rank 1), b, c
  std::vector<double> theta(d);
  sgmcmc::Rng start(5, 0);
  for (double& x : theta) x = 0.6 * start.normal();
  const auto u = [&](std::size_t i) { return theta[i]; };
  const auto v = [&](std::size_t j) { return theta[users + j]; };
  const auto b = [&](std::size_t i) { return theta[users + items + i]; };
  const auto c = [&](std::size_t j) { return theta[2 * users + items + j]; };
  double squares = 0.0, bias_u = 0.0, bias_v = 0.0;
  for (std::size_t i = 0; i < users; ++i)
    for (std::size_t j = 0; j < items; ++j)
      if (ratings[i][j] > 0) {
        const double e = ratings[i][j] - offset - b(i) - c(j) - u(i) * v(j);
        squares += e * e;
      }
  for (std::size_t i = 0; i < users; ++i) bias_u += b(i) * b(i);
  for (std::size_t j = 0; j < items; ++j) bias_v += c(j) * c(j);
  // The residual of training rating 0 (user 1, item 1: the file's first line).
  const double e0 = ratings[0][0] - offset - b(0) - c(0) - u(0) * v(0);

  auto workspace = model->make_workspace();
  sgmcmc::Rng rng(3, 1), unused(0, 0);
  const std::size_t m = 100'000;
  std::vector<double> tau, lambda_b, lambda_c, g(d);
  const std::vector<std::size_t> first{0};
  for (std::size_t s = 1; s <= m; ++s) {
    REQUIRE(model->after_step(s, theta, *workspace, rng,
                              sgmcmc::AllItems(model->num_items())) == sgmcmc::TargetChange::data);
    std::fill(g.begin(), g.end(), 0.0);
    model->add_data_gradient(theta, {first}, g, *workspace, unused);
    tau.push_back(-g[users + items] / e0);
    std::fill(g.begin(), g.end(), 0.0);
    model->add_prior_gradient_given(theta, g, *workspace);
    lambda_b.push_back(g[users + items] / b(0));
    lambda_c.push_back(g[2 * users + items] / c(0));
  }
  const auto check_gamma = [&](const std::vector<double>& draws, double a, double rate) {
    const double n = static_cast<double>(draws.size()), sigma2 = a / (rate * rate), mu4 = 3 * a * (a + 2) / std::pow(rate, 4);
    INFO("Gamma(" << a << ", " << rate << "): mean " << test::mean(draws) << ", variance " << test::variance(draws));
    CHECK(std::abs(test::mean(draws) - a / rate) < 5 * std::sqrt(sigma2 / n));
    CHECK(std::abs(test::variance(draws) - sigma2) < 5 * std::sqrt((mu4 - sigma2 * sigma2) / n));
  };
  check_gamma(tau, 3.0 + 0.5 * static_cast<double>(count), 2.0 + 0.5 * squares);
  check_gamma(lambda_b, 2.0 + 0.5 * users, 0.5 + 0.5 * bias_u);
  check_gamma(lambda_c, 2.0 + 0.5 * items, 0.5 + 0.5 * bias_v);
}

TEST_CASE("pmf Gibbs: SGLD-CV on planted rank-3 factors predicts held-out ratings near the noise level") {
  // 200 users, 150 items, 6,000 ratings (10% held out) from planted rank-3 factors with
  // U*_iᵀV*_j of variance 1, noise sd σ = 0.1, not rounded; the model has rank 3 and the true
  // τ = 1/σ² = 100. The best possible RMSE is σ = 0.1; the posterior-mean prediction adds the
  // factors' estimation error, about σ²·r·(1/n_i + 1/n_j) in squared error for a user with n_i and
  // an item with n_j ratings (≈ 0.1²·3·(1/30 + 1/40) = 0.0018 at typical counts, up to 0.1²·3·(1/3)
  // for the rarest items), and the running average still holds early draws. The margin: RMSE below
  // 1.5σ = 0.15, where predicting the mean rating alone gives sqrt(1 + σ²) ≈ 1.0. Tuning (ε = 1e-4,
  // batch 500, one SGD pass): 3,000 iterations gave 0.126-0.133 on this shape.
  test::TempDir dir;
  const auto config = dir.write("planted.toml", R"toml([model]
name = "pmf"
users = 200
items = 150
ratings = 6000
true_rank = 3
true_noise_sd = 0.1
round = false
rating_min = -20
rating_max = 30
rank = 3
noise_precision = 100
[estimator]
name = "cv"
batch_size = 500
[integrator]
name = "sgld"
step_size = 1e-4
[run]
iterations = 3000
thin = 3000
eval_every = 500
)toml");
  const auto result = test::run_cli(fmt::format("run --config '{}' --out '{}' --quiet", config.string(), (dir.path() / "out").string()));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  std::istringstream metrics(test::read_text(dir.path() / "out" / "metrics.csv"));
  std::string line, last;
  while (std::getline(metrics, line))
    if (!line.empty()) last = line;
  INFO(last);
  const double rmse = std::stod(last.substr(last.rfind(',') + 1));
  CHECK(rmse < 0.15);
  CHECK(rmse > 0.1 * 0.9);  // cannot beat the noise (10% slack for the 600 test ratings' own spread)
}
