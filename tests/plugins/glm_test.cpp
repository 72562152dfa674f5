// The glm plugin, loaded from disk: family bernoulli with the logit link and a Laplace prior
// against the hand-tuned `logistic` on the same file (to rounding); poisson's U against a hand
// computation on three rows and its gradient against finite differences of that computation;
// gaussian's U and ∇U against the closed-form Gaussian posterior; probit's and negative binomial's
// U (fixed and sampled dispersion) against products of probabilities; gaussian with a sampled
// noise sd: U, ∇U and predictions under each noise prior against densities written here;
// check-model for each family and noise prior; bad configuration refused naming the key.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "gaussian_posterior.hpp"
#include "support.hpp"
#include "model_support.hpp"

using Catch::Matchers::Contains;

namespace {

using test::full_potential;
using test::quoted;

std::shared_ptr<const sgmcmc::Model> build(const std::string& model_lines, std::uint64_t seed = 1) {
  return test::build_model("glm", model_lines, seed);
}

std::vector<double> full_gradient(const sgmcmc::Model& model, std::span<const double> beta) {
  auto workspace = model.make_workspace();
  return test::full_gradient(model, beta, *workspace);
}

/// |a - b| ≤ tolerance · max(|a|, |b|, 1e-300): relative agreement, also of values near 0.
bool close(double a, double b, double tolerance) {
  return std::abs(a - b) <= tolerance * std::max({std::abs(a), std::abs(b), 1e-300});
}

/// `rows` rows of `features` features in a CSV: features uniform on [-1, 1], 0/1 labels.
std::string random_binary_csv(std::size_t rows, std::size_t features, std::uint64_t seed) {
  sgmcmc::Rng rng(seed, 0);
  std::string text;
  for (std::size_t i = 0; i < rows; ++i) {
    text += rng.uniform() < 0.4 ? "1" : "0";
    for (std::size_t j = 0; j < features; ++j) text += fmt::format(",{:.17g}", 2.0 * rng.uniform() - 1.0);
    text += "\n";
  }
  return text;
}

}  // namespace

TEST_CASE("glm plugin: bernoulli-logit with a Laplace prior matches logistic to rounding") {
  // The same file, prior, seed and test split: U, ∇U, per-item gradients, GLM scalars, Lipschitz
  // bounds and the held-out metric of the two plugins agree to 1e-12 relative at three points.
  test::TempDir dir;
  const auto path = quoted(dir.write("binary.csv", random_binary_csv(300, 6, 7)));
  const std::string keys = fmt::format("data = {}\ntest_size = 30\nprior_scale = 0.7\n", path);
  const auto glm = build(keys + "family = \"bernoulli\"\nlink = \"logit\"\nprior = \"laplace\"\n");
  const auto logistic = test::build_model("logistic", keys);
  REQUIRE(glm->dimension() == logistic->dimension());
  REQUIRE(glm->num_items() == logistic->num_items());
  CHECK(glm->parameter_names() == logistic->parameter_names());
  const std::size_t d = glm->dimension(), n = glm->num_items();

  sgmcmc::Rng rng(3, 0);
  for (int point = 0; point < 3; ++point) {
    std::vector<double> beta(d);
    for (double& b : beta) b = 2.0 * rng.normal();
    CHECK(close(full_potential(*glm, beta), full_potential(*logistic, beta), 1e-12));
    const auto g = full_gradient(*glm, beta), l = full_gradient(*logistic, beta);
    for (std::size_t j = 0; j < d; ++j) CHECK(close(g[j], l[j], 1e-12));

    auto glm_workspace = glm->make_workspace(), logistic_workspace = logistic->make_workspace();
    const auto every = sgmcmc::every_item(*glm);
    std::vector<double> glm_items(n * d), logistic_items(n * d), glm_scalars(n), logistic_scalars(n);
    glm->item_gradients(beta, every, glm_items, *glm_workspace);
    logistic->item_gradients(beta, every, logistic_items, *logistic_workspace);
    for (std::size_t k = 0; k < n * d; ++k) CHECK(close(glm_items[k], logistic_items[k], 1e-12));
    glm->glm_scalars(beta, every, glm_scalars, *glm_workspace);
    logistic->glm_scalars(beta, every, logistic_scalars, *logistic_workspace);
    for (std::size_t i = 0; i < n; ++i) CHECK(close(glm_scalars[i], logistic_scalars[i], 1e-12));

    std::vector<double> glm_metric(1), logistic_metric(1);
    glm->evaluate_metrics(beta, *glm_workspace, glm_metric);
    logistic->evaluate_metrics(beta, *logistic_workspace, logistic_metric);
    CHECK(close(glm_metric[0], logistic_metric[0], 1e-12));
  }
  REQUIRE(glm->capabilities().lipschitz_bounds);
  std::vector<double> glm_bounds(n), logistic_bounds(n);
  glm->item_lipschitz_bounds(glm_bounds);
  logistic->item_lipschitz_bounds(logistic_bounds);
  for (std::size_t i = 0; i < n; ++i) CHECK(close(glm_bounds[i], logistic_bounds[i], 1e-12));
}

TEST_CASE("glm plugin: poisson-log's U is the hand-computed log density of three rows") {
  // Rows (y, x1, x2): (2, 0.5, -1), (0, 1, 0.25), (5, -0.5, 2); β = (0.1, 0.4, 0.6) with the
  // intercept first; normal prior of scale 2. By hand: μ = exp(z), log p = y log μ - μ - log(y!)
  // with y! a product, and the prior Σ β²/(2·4).
  test::TempDir dir;
  const auto path = quoted(dir.write("counts.csv", "2,0.5,-1\n0,1,0.25\n5,-0.5,2\n"));
  const auto model = build(fmt::format("data = {}\ntest_size = 0\nfamily = \"poisson\"\nprior_scale = 2\n", path));
  REQUIRE(model->dimension() == 3);
  REQUIRE_FALSE(model->capabilities().lipschitz_bounds);  // e^z has no bounded curvature

  const double rows[3][3] = {{2, 0.5, -1}, {0, 1, 0.25}, {5, -0.5, 2}};
  const auto by_hand = [&](std::span<const double> beta) {
    double log_density = 0.0;
    for (const auto& row : rows) {
      const double mu = std::exp(beta[0] + beta[1] * row[1] + beta[2] * row[2]);
      double factorial = 1.0;
      for (int k = 2; k <= static_cast<int>(row[0]); ++k) factorial *= k;
      log_density += row[0] * std::log(mu) - mu - std::log(factorial);
    }
    double prior = 0.0;
    for (double b : beta) prior += b * b / 8.0;
    return prior - log_density;
  };
  const std::vector<double> beta{0.1, 0.4, 0.6};
  CHECK(full_potential(*model, beta) == Approx(by_hand(beta)).epsilon(1e-13));

  // ∇U against central differences of the hand computation (step 1e-5: error ~1e-10).
  const auto gradient = full_gradient(*model, beta);
  for (std::size_t j = 0; j < 3; ++j) {
    auto up = beta, down = beta;
    up[j] += 1e-5;
    down[j] -= 1e-5;
    CHECK(gradient[j] == Approx((by_hand(up) - by_hand(down)) / 2e-5).epsilon(1e-8));
  }
}

TEST_CASE("glm plugin: gaussian-identity with a normal prior has the closed-form Gaussian posterior") {
  // y = Xβ + ε, ε ~ N(0, σ²), β ~ N(0, s² I): the posterior is N(m, P⁻¹) with precision
  // P = XᵀX/σ² + I/s² and mean m = P⁻¹ Xᵀy/σ² (Bishop 2006, eq. 3.53-3.54). U is quadratic:
  // ∇U(m) = 0, ∇U(m + v) = P v, U(m + v) - U(m) = vᵀPv/2.
  const double sigma = 0.5, s = 1.5;
  const std::vector<std::vector<double>> rows{{1.2, 0.3, -0.4}, {-0.7, 1.0, 0.2},  {2.5, -0.6, 0.9},
                                              {0.1, 0.5, 1.1},  {-1.9, -1.2, -0.3}, {0.8, 0.0, 0.6}};  // y, x1, x2
  std::string csv;
  for (const auto& row : rows) csv += fmt::format("{},{},{}\n", row[0], row[1], row[2]);
  test::TempDir dir;
  const auto model = build(fmt::format("data = {}\ntest_size = 0\nfamily = \"gaussian\"\nnoise_sd = {}\nprior_scale = {}\n",
                                       quoted(dir.write("real.csv", csv)), sigma, s));
  REQUIRE(model->dimension() == 3);

  // X with x = (1, x1, x2); P and m from gaussian_posterior.hpp.
  xt::xtensor<double, 2> x = xt::zeros<double>({rows.size(), std::size_t{3}});
  xt::xtensor<double, 1> y = xt::zeros<double>({rows.size()});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    x(i, 0) = 1.0, x(i, 1) = rows[i][1], x(i, 2) = rows[i][2];
    y(i) = rows[i][0];
  }
  const auto posterior = test::gaussian_posterior(x, y, sigma, s);
  const auto& precision = posterior.precision;
  const std::vector<double> mode(posterior.mean.begin(), posterior.mean.end());

  const auto at_mode = full_gradient(*model, mode);
  for (double g : at_mode) CHECK(std::abs(g) < 1e-12);
  const std::vector<double> v{0.3, -0.8, 0.5};
  std::vector<double> moved(3);
  for (int j = 0; j < 3; ++j) moved[j] = mode[j] + v[j];
  const auto gradient = full_gradient(*model, moved);
  double quadratic = 0.0;
  for (int j = 0; j < 3; ++j) {
    double pv = 0.0;
    for (int k = 0; k < 3; ++k) pv += precision(j, k) * v[k];
    CHECK(gradient[j] == Approx(pv).epsilon(1e-12));
    quadratic += 0.5 * v[j] * pv;
  }
  CHECK(full_potential(*model, moved) - full_potential(*model, mode) == Approx(quadratic).epsilon(1e-10));

  // The data terms are normalised, as the held-out density needs: f_i at β = 0 is
  // y²/(2σ²) + log σ + log(2π)/2.
  auto workspace = model->make_workspace();
  const std::vector<std::size_t> first{0};
  const std::vector<double> zero(3, 0.0);
  CHECK(model->data_potential(zero, {first}, *workspace) ==
        Approx(1.2 * 1.2 / (2 * sigma * sigma) + std::log(sigma) + 0.5 * std::log(2 * std::numbers::pi)).epsilon(1e-14));
}

TEST_CASE("glm plugin: the held-out log predictive density of a poisson model at β = 0 is by hand") {
  // β = 0: μ = 1 for every test row, log p(y) = -1 - log(y!); the test file's counts 0, 1, 3
  // give the mean (-1 - 1 - 1 - log 6)/3, whatever the draws so far.
  test::TempDir dir;
  const auto train = quoted(dir.write("train.csv", "2,0.5\n0,1\n1,-0.3\n"));
  const auto test_file = quoted(dir.write("test.csv", "0,0.2\n1,-1\n3,0.7\n"));
  const auto model = build(fmt::format("data = {}\ntest_data = {}\nfamily = \"poisson\"\n", train, test_file));
  auto workspace = model->make_workspace();
  const std::vector<double> zero(model->dimension(), 0.0);
  std::vector<double> out(1);
  const double expected = (-3.0 - std::log(6.0)) / 3.0;
  for (int draw = 0; draw < 2; ++draw) {
    model->evaluate_metrics(zero, *workspace, out);
    CHECK(out[0] == Approx(expected).epsilon(1e-13));
  }
  model->evaluate_quantities(zero, *workspace, out);
  CHECK(out[0] == Approx(expected).epsilon(1e-13));
}

TEST_CASE("glm plugin: without an intercept the model has one coefficient per feature") {
  test::TempDir dir;
  const auto path = quoted(dir.write("counts.csv", "2,0.5,-1\n0,1,0.25\n5,-0.5,2\n"));
  const auto model = build(fmt::format("data = {}\ntest_size = 0\nfamily = \"poisson\"\nintercept = false\n", path));
  REQUIRE(model->dimension() == 2);
  CHECK(model->parameter_names() == std::vector<std::string>{"beta.1", "beta.2"});
  // z_1 = 0.4·0.5 - 0.6 = -0.4 for the first row, with no intercept term: f = e^z - 2z + log 2.
  auto workspace = model->make_workspace();
  const std::vector<std::size_t> first{0};
  const std::vector<double> beta{0.4, 0.6};
  CHECK(model->data_potential(beta, {first}, *workspace) == Approx(std::exp(-0.4) + 0.8 + std::log(2.0)).epsilon(1e-14));
}

TEST_CASE("glm plugin: simulated data for every family, and from a prior draw") {
  // A gaussian's σ drawn from its prior, as log σ after β*.
  const auto noise = build("family = \"gaussian\"\nnoise_prior = \"half_normal\"\nn = 200\nsimulate_from_prior = true\n");
  CHECK(noise->simulated_parameters().size() == noise->dimension());
  CHECK(noise->dimension() == 12);
  for (const char* family : {"bernoulli", "poisson", "gaussian", "negative_binomial"}) {
    INFO(family);
    const auto model = build(fmt::format("family = \"{}\"\nn = 200\nfeatures = 4\ntest_size = 20\n", family));
    const bool sampled_dispersion = std::string(family) == "negative_binomial";  // log r: one more coordinate
    CHECK(model->dimension() == (sampled_dispersion ? 6 : 5));
    CHECK(model->num_items() == 180);
    CHECK(model->simulated_parameters().empty());
    const auto drawn = build(fmt::format("family = \"{}\"\nn = 200\nsimulate_from_prior = true\n", family));
    CHECK(drawn->simulated_parameters().size() == drawn->dimension());
  }
}

TEST_CASE("glm plugin: bad configuration is refused naming the key") {
  test::TempDir dir;
  const auto counts = quoted(dir.write("counts.csv", "2,0.5\n1.5,1\n3,0\n"));
  struct Case {
    std::string keys, key, expected;
  };
  const Case cases[] = {
      {"family = \"binomial\"\nn = 50\n", "model.family", "'binomial' is not a family; expected one of: bernoulli (logit"},
      {"family = \"poisson\"\nlink = \"logit\"\nn = 50\n", "model.link", "'logit' is not a link of the poisson family; expected log"},
      {"family = \"bernoulli\"\nlink = \"log\"\nn = 50\n", "model.link", "expected logit, probit"},
      {"prior_scale = -1\nn = 50\n", "model.prior_scale", "expected a number > 0"},
      {"prior = \"cauchy\"\nn = 50\n", "model.prior", "'cauchy' is not a prior; expected normal, laplace, student_t"},
      {"family = \"gaussian\"\nnoise_sd = 0\nn = 50\n", "model.noise_sd", "expected a number > 0"},
      {"prior = \"student_t\"\nprior_df = -2\nn = 50\n", "model.prior_df", "expected a number > 0"},
      {fmt::format("family = \"poisson\"\ndata = {}\ntest_size = 0\n", counts), "data row 2",
       "family poisson needs a count (a non-negative integer)"},
  };
  for (const auto& c : cases) {
    INFO(c.keys);
    CHECK_THROWS_WITH(build(c.keys), Contains(c.key) && Contains(c.expected));
  }
  // A family's own key is unknown to the others, and the dispersion's prior to a fixed dispersion.
  CHECK_THROWS_WITH(build("family = \"poisson\"\nnoise_sd = 2\nn = 50\n"), Contains("noise_sd"));
  CHECK_THROWS_WITH(build("family = \"negative_binomial\"\ndispersion = 2\ndispersion_rate = 1\nn = 50\n"),
                    Contains("dispersion_rate"));
  CHECK_THROWS_WITH(build("family = \"negative_binomial\"\ndispersion_shape = 0\nn = 50\n"),
                    Contains("model.dispersion_shape") && Contains("expected a number > 0"));
}

TEST_CASE("glm plugin: a flat prior adds nothing to U and an intercept prior of its own applies to the intercept only") {
  // Gaussian rows (σ = 0.5), θ = (intercept, β_1). U's change between two points is minus the
  // change of the log density written here: the likelihood alone under prior = "flat"; with
  // intercept_prior = student_t(ν = 3, location m = 2, scale c = 1.5) and prior = normal(0, s = 0.8),
  // log t_3((b_0 - m)/c) + log N(β_1; 0, s²).
  const double xs[3] = {0.5, -1.5, 2.0}, ys[3] = {1.1, -0.4, 2.9}, sigma = 0.5;
  std::string csv;
  for (int i = 0; i < 3; ++i) csv += fmt::format("{},{}\n", ys[i], xs[i]);
  test::TempDir dir;
  const std::string common =
      fmt::format("data = {}\ntest_size = 0\nfamily = \"gaussian\"\nnoise_sd = {}\n", quoted(dir.write("rows.csv", csv)), sigma);
  const auto log_likelihood = [&](std::span<const double> theta) {
    double sum = 0.0;
    for (int i = 0; i < 3; ++i) {
      const double r = ys[i] - theta[0] - theta[1] * xs[i];
      sum += -r * r / (2 * sigma * sigma);
    }
    return sum;
  };
  const auto flat = build(common + "prior = \"flat\"\n");
  const auto own = build(common + "prior_scale = 0.8\nintercept_prior = \"student_t\"\nintercept_prior_location = 2\n"
                                  "intercept_prior_scale = 1.5\n");
  const auto log_prior = [](std::span<const double> theta) {
    const double t = (theta[0] - 2.0) / 1.5;
    return -2.0 * std::log(1.0 + t * t / 3.0) - theta[1] * theta[1] / (2 * 0.8 * 0.8);  // (ν+1)/2 = 2
  };
  const std::vector<double> base{0.0, 0.0};
  for (const auto& theta : {std::vector<double>{0.3, 0.8}, std::vector<double>{-2.5, 1.7}, std::vector<double>{4.0, -0.6}}) {
    INFO(theta[0] << ", " << theta[1]);
    // 1e-12 relative: rounding of a few terms of order ≤ 100; a prior left on, or on the wrong
    // coordinate, moves it by O(1).
    CHECK(full_potential(*flat, theta) - full_potential(*flat, base) ==
          Approx(log_likelihood(base) - log_likelihood(theta)).epsilon(1e-12));
    CHECK(full_potential(*own, theta) - full_potential(*own, base) ==
          Approx(log_likelihood(base) + log_prior(base) - log_likelihood(theta) - log_prior(theta)).epsilon(1e-12));
    const auto gradient = full_gradient(*own, theta);
    for (int j = 0; j < 2; ++j) {
      auto up = theta, down = theta;
      up[j] += 1e-5;
      down[j] -= 1e-5;
      const auto log_density = [&](std::span<const double> at) { return log_likelihood(at) + log_prior(at); };
      CHECK(gradient[j] == Approx((log_density(down) - log_density(up)) / 2e-5).epsilon(1e-7).margin(1e-8));
    }
  }
  // A prior draw puts the intercept at its own location: N(100, 0.01²) is within 0.1 of 100 but
  // with probability 1e-23, and the slopes' N(0, 1) draws are not near it.
  const auto drawn = build("family = \"gaussian\"\nn = 50\nsimulate_from_prior = true\nintercept_prior = \"normal\"\n"
                           "intercept_prior_location = 100\nintercept_prior_scale = 0.01\n");
  const auto truth = drawn->simulated_parameters();
  REQUIRE(truth.size() == drawn->dimension());
  CHECK(std::abs(truth[0] - 100.0) < 0.1);
  for (std::size_t j = 1; j < truth.size(); ++j) CHECK(std::abs(truth[j]) < 50.0);
}

TEST_CASE("glm plugin: a flat or intercept prior's bad configuration is refused naming the key") {
  struct Case {
    std::string keys, key, expected;
  };
  const Case cases[] = {
      {"prior = \"flat\"\nsimulate_from_prior = true\n", "model.prior", "improper"},
      {"intercept_prior = \"flat\"\nsimulate_from_prior = true\n", "model.intercept_prior", "improper"},
      {"prior = \"flat\"\nprior_scale = 2\n", "prior_scale", "unknown"},
      {"intercept_prior = \"normal\"\nintercept = false\n", "model.intercept_prior", "model.intercept"},
      {"intercept_prior = \"cauchy\"\n", "model.intercept_prior", "'cauchy' is not a prior; expected normal, laplace, student_t, flat"},
      {"intercept_prior = \"normal\"\nintercept_prior_scale = 0\n", "model.intercept_prior_scale", "expected a number > 0"},
      {"intercept_prior = \"normal\"\nintercept_prior_df = 3\n", "intercept_prior_df", "unknown"},
      {"intercept_prior_location = 3\n", "intercept_prior_location", "unknown"},
      {"family = \"categorical\"\nintercept_prior = \"normal\"\n", "model.intercept_prior", "categorical"},
      {"family = \"categorical\"\nprior = \"flat\"\nsimulate_from_prior = true\n", "model.prior", "improper"},
  };
  for (const auto& c : cases) {
    INFO(c.keys);
    CHECK_THROWS_WITH(build("n = 50\n" + c.keys), Contains(c.key) && Contains(c.expected));
  }
}

TEST_CASE("glm plugin: a sampled noise sd's bad configuration is refused naming the key") {
  struct Case {
    std::string keys, key, expected;
  };
  const Case cases[] = {
      {"noise_prior = \"half_cauchy\"\nnoise_sd = 2\n", "model.noise_sd", "model.noise_prior"},
      {"noise_prior = \"cauchy\"\n", "model.noise_prior",
       "'cauchy' is not a noise prior; expected half_normal, half_cauchy, half_student_t, exponential, flat"},
      {"noise_prior = \"half_student_t\"\n", "model.noise_prior", "noise_prior_df"},
      {"noise_prior = \"half_student_t\"\nnoise_prior_df = 0\n", "model.noise_prior_df", "expected a number > 0"},
      {"noise_prior = \"half_normal\"\nnoise_prior_scale = -1\n", "model.noise_prior_scale", "expected a number > 0"},
      // A flat prior on σ is improper: no prior draw of σ to simulate data from (sbc).
      {"noise_prior = \"flat\"\nsimulate_from_prior = true\n", "model.noise_prior", "improper"},
  };
  for (const auto& c : cases) {
    INFO(c.keys);
    CHECK_THROWS_WITH(build("family = \"gaussian\"\nn = 50\n" + c.keys), Contains(c.key) && Contains(c.expected));
  }
  // Only the gaussian family has a noise sd; the keys of the other noise priors are unknown.
  for (const char* family : {"poisson", "bernoulli", "negative_binomial", "categorical"}) {
    INFO(family);
    CHECK_THROWS_WITH(build(fmt::format("family = \"{}\"\nnoise_prior = \"half_normal\"\nn = 50\n", family)),
                      Contains("model.noise_prior") && Contains(fmt::format("family {} has no noise sd", family)));
  }
  CHECK_THROWS_WITH(build("family = \"gaussian\"\nnoise_prior = \"half_normal\"\nnoise_prior_df = 3\nn = 50\n"),
                    Contains("noise_prior_df"));
  CHECK_THROWS_WITH(build("family = \"gaussian\"\nnoise_prior = \"flat\"\nnoise_prior_scale = 3\nn = 50\n"),
                    Contains("noise_prior_scale"));
}

TEST_CASE("glm plugin: a gaussian with a sampled noise sd has U, its gradient and predictions by hand under each noise prior") {
  // θ = (intercept, β, u = log σ). The posterior density in (β, u) is
  //   Π_i N(y_i; z_i, σ²) · Π_j N(β_j; 0, s²) · p(σ) · σ   (σ = |dσ/du|, the Jacobian)
  // with each prior's normalised density p(σ) on σ > 0 written here; U's change between two
  // points is minus the change of its logarithm.
  const double xs[3] = {0.5, -1.5, 2.0}, ys[3] = {1.1, -0.4, 2.9};
  std::string csv;
  for (int i = 0; i < 3; ++i) csv += fmt::format("{},{}\n", ys[i], xs[i]);
  test::TempDir dir;
  const auto data = quoted(dir.write("rows.csv", csv));
  const double s = 1.5, pi = std::numbers::pi;
  struct Prior {
    const char* keys;
    double (*density)(double sigma);
  };
  // Scales 2 (half_normal), 0.7 (half_cauchy), 1.3 with ν = 4 (half_student_t), 0.5 (exponential).
  const Prior priors[] = {
      {"noise_prior = \"half_normal\"\nnoise_prior_scale = 2\n",
       [](double sigma) { return 2.0 / (2.0 * std::sqrt(2.0 * std::numbers::pi)) * std::exp(-sigma * sigma / 8.0); }},
      {"noise_prior = \"half_cauchy\"\nnoise_prior_scale = 0.7\n",
       [](double sigma) { return 2.0 / (std::numbers::pi * 0.7 * (1.0 + (sigma / 0.7) * (sigma / 0.7))); }},
      {"noise_prior = \"half_student_t\"\nnoise_prior_df = 4\nnoise_prior_scale = 1.3\n",
       [](double sigma) {
         const double nu = 4.0, c = 1.3;
         return 2.0 * std::tgamma((nu + 1) / 2) / (std::tgamma(nu / 2) * std::sqrt(nu * std::numbers::pi) * c) *
                std::pow(1.0 + sigma * sigma / (nu * c * c), -(nu + 1) / 2);
       }},
      {"noise_prior = \"exponential\"\nnoise_prior_scale = 0.5\n", [](double sigma) { return std::exp(-sigma / 0.5) / 0.5; }},
      {"noise_prior = \"flat\"\n", [](double) { return 1.0; }},
  };
  for (const auto& prior : priors) {
    INFO(prior.keys);
    const auto model =
        build(fmt::format("data = {}\ntest_size = 0\nfamily = \"gaussian\"\nprior_scale = {}\n{}", data, s, prior.keys));
    REQUIRE(model->parameter_names() == std::vector<std::string>{"intercept", "beta.1", "log_noise_sd"});
    CHECK_FALSE(model->capabilities().glm_gradients);
    CHECK_FALSE(model->capabilities().lipschitz_bounds);
    const auto log_density = [&](std::span<const double> theta) {
      const double sigma = std::exp(theta[2]);
      double sum = std::log(prior.density(sigma)) + theta[2];
      for (int j = 0; j < 2; ++j) sum += -theta[j] * theta[j] / (2 * s * s) - std::log(s * std::sqrt(2 * pi));
      for (int i = 0; i < 3; ++i) {
        const double r = ys[i] - theta[0] - theta[1] * xs[i];
        sum += -r * r / (2 * sigma * sigma) - std::log(sigma * std::sqrt(2 * pi));
      }
      return sum;
    };
    // Agreement to 1e-12 relative on differences of sums of a dozen terms of order ≤ 30: rounding
    // leaves ~1e-14; a missing Jacobian or a prior's wrong scale moves them by O(0.1-1).
    const std::vector<double> base{0.3, 0.8, 0.0};
    for (const double u : {-1.2, 0.4, 2.5}) {
      INFO(u);
      const std::vector<double> theta{0.3, 0.8, u};
      CHECK(full_potential(*model, theta) - full_potential(*model, base) ==
            Approx(log_density(base) - log_density(theta)).epsilon(1e-12));
      // ∇U against central differences of the hand computation (step 1e-5: error ~1e-10).
      const auto gradient = full_gradient(*model, theta);
      for (int j = 0; j < 3; ++j) {
        auto up = theta, down = theta;
        up[j] += 1e-5;
        down[j] -= 1e-5;
        CHECK(gradient[j] == Approx((log_density(down) - log_density(up)) / 2e-5).epsilon(1e-7).margin(1e-8));
      }
      // `sgmcmc predict`: each draw's own σ, the variance σ² = e^{2u} beside the mean z.
      const auto rows = model->read_prediction_rows(dir.write("new.csv", "0,2\n"));
      std::vector<double> out(2);
      model->predict_rows(theta, *rows, out, {});
      CHECK(out[0] == Approx(0.3 + 0.8 * 2).epsilon(1e-14));
      CHECK(out[1] == Approx(std::exp(2 * u)).epsilon(1e-14));
    }
  }
}

TEST_CASE("glm plugin: probit and negative binomial U are hand-computed log densities of three rows") {
  // Rows (y, x): probit labels 0/1 → -1/+1, Φ(t) = (1 + erf(t/√2))/2; negative binomial with
  // r = 2.5: p(y) = Π_{k<y} (r + k)/(k + 1) · (r/(r+μ))^r (μ/(r+μ))^y, μ = e^z. β = (0.2, -0.7),
  // Student-t prior (ν = 4, s = 1.5): Σ (ν+1)/2 log(1 + b²/(ν s²)).
  test::TempDir dir;
  const double xs[3] = {0.5, -1.5, 2.0}, labels[3] = {1, 0, 1}, counts[3] = {0, 3, 7};
  std::string binary, count;
  for (int i = 0; i < 3; ++i) {
    binary += fmt::format("{},{}\n", labels[i], xs[i]);
    count += fmt::format("{},{}\n", counts[i], xs[i]);
  }
  const std::string prior = "prior = \"student_t\"\nprior_df = 4\nprior_scale = 1.5\ntest_size = 0\n";
  const auto probit = build(fmt::format("data = {}\nfamily = \"bernoulli\"\nlink = \"probit\"\n{}",
                                        quoted(dir.write("binary.csv", binary)), prior));
  const auto negative_binomial = build(fmt::format("data = {}\nfamily = \"negative_binomial\"\ndispersion = 2.5\n{}",
                                                   quoted(dir.write("count.csv", count)), prior));
  const std::vector<double> beta{0.2, -0.7};
  double prior_term = 0.0;
  for (double b : beta) prior_term += 2.5 * std::log(1.0 + b * b / (4.0 * 1.5 * 1.5));

  double probit_log_density = 0.0, negative_binomial_log_density = 0.0;
  const double r = 2.5;
  for (int i = 0; i < 3; ++i) {
    const double z = beta[0] + beta[1] * xs[i];
    const double phi = 0.5 * (1.0 + std::erf(z / std::sqrt(2.0)));
    probit_log_density += std::log(labels[i] == 1 ? phi : 1.0 - phi);
    const double mu = std::exp(z);
    double coefficient = 1.0;
    for (int k = 0; k < static_cast<int>(counts[i]); ++k) coefficient *= (r + k) / (k + 1);
    negative_binomial_log_density +=
        std::log(coefficient * std::pow(r / (r + mu), r) * std::pow(mu / (r + mu), counts[i]));
  }
  CHECK(full_potential(*probit, beta) == Approx(prior_term - probit_log_density).epsilon(1e-13));
  CHECK(full_potential(*negative_binomial, beta) == Approx(prior_term - negative_binomial_log_density).epsilon(1e-13));

  // Without `dispersion`, θ = (β, u = log r) and r ~ Gamma(a = 3, b = 0.5): U's change between two
  // values of u is minus the change of log p(y | β, r) + log Gamma(r; a, b) + log r (the Jacobian),
  // the Gamma density being b^a r^{a-1} e^{-br}/Γ(a).
  const auto sampled = build(fmt::format("data = {}\nfamily = \"negative_binomial\"\ndispersion_shape = 3\n"
                                         "dispersion_rate = 0.5\n{}",
                                         quoted(dir.write("count.csv", count)), prior));
  REQUIRE(sampled->dimension() == 3);
  const auto log_density = [&](double r) {
    double sum = 3.0 * std::log(0.5) - std::lgamma(3.0) + 2.0 * std::log(r) - 0.5 * r + std::log(r);
    for (int i = 0; i < 3; ++i) {
      const double mu = std::exp(beta[0] + beta[1] * xs[i]);
      double coefficient = 1.0;
      for (int k = 0; k < static_cast<int>(counts[i]); ++k) coefficient *= (r + k) / (k + 1);
      sum += std::log(coefficient * std::pow(r / (r + mu), r) * std::pow(mu / (r + mu), counts[i]));
    }
    return sum;
  };
  // Agreement to 1e-12 relative: both sides are sums of a few dozen logarithms of order ≤ 50, so
  // rounding alone leaves ~1e-14; a wrong term (a Jacobian, a digamma's sign) moves it by O(1).
  for (const double r : {0.3, 2.5, 40.0}) {
    INFO(r);
    const std::vector<double> at{beta[0], beta[1], std::log(r)}, at_one{beta[0], beta[1], 0.0};
    CHECK(full_potential(*sampled, at) - full_potential(*sampled, at_one) ==
          Approx(log_density(1.0) - log_density(r)).epsilon(1e-12));
  }
}

TEST_CASE("glm plugin: probit's scalar stays finite and tends to z + 1/z far in the tail") {
  // f = -log Φ(z) for y = +1 as z → -∞: ∂f/∂z = -φ(z)/Φ(z) = z + 1/z + O(1/z³) (Mills' ratio),
  // where the naive φ/Φ would be 0/0 once Φ underflows (z < -38).
  test::TempDir dir;
  const auto model = build(fmt::format("data = {}\ntest_size = 0\nfamily = \"bernoulli\"\nlink = \"probit\"\nintercept = false\nlabels = \"0/1\"\n",
                                       quoted(dir.write("one.csv", "1,1\n"))));
  auto workspace = model->make_workspace();
  const std::vector<std::size_t> first{0};
  std::vector<double> scalar(1);
  for (double z : {-5.0, -30.0, -36.9, -37.1, -40.0, -300.0}) {
    INFO(z);
    const std::vector<double> beta{z};
    model->glm_scalars(beta, first, scalar, *workspace);
    REQUIRE(std::isfinite(scalar[0]));
    CHECK(scalar[0] == Approx(z + 1.0 / z).epsilon(3.0 / (z * z * z * z)));
    CHECK(std::isfinite(model->data_potential(beta, {first}, *workspace)));
  }
}

TEST_CASE("glm plugin: check-model passes for every family and link, and for each prior") {
  // Gradients against finite differences, the GLM form, per-item gradients, Lipschitz bounds
  // where declared (poisson declares none), simulation, threads and checkpoints.
  for (const char* keys : {"family=bernoulli --set model.link=logit", "family=bernoulli --set model.link=probit",
                           "family=poisson --set model.prior=laplace", "family=gaussian --set model.noise_sd=0.5",
                           "family=negative_binomial --set model.dispersion=3 --set model.prior=student_t",
                           "family=negative_binomial --set model.dispersion_shape=2",
                           "family=gaussian --set model.intercept=false --set model.storage=float",
                           "family=gaussian --set model.noise_prior=half_normal --set model.noise_prior_scale=2",
                           "family=gaussian --set model.noise_prior=half_cauchy",
                           "family=gaussian --set model.noise_prior=half_student_t --set model.noise_prior_df=4",
                           "family=gaussian --set model.noise_prior=exponential --set model.noise_prior_scale=0.5",
                           "family=gaussian --set model.noise_prior=flat",
                           "family=gaussian --set model.prior=flat --set model.noise_prior=half_normal",
                           "family=poisson --set model.intercept_prior=student_t --set model.intercept_prior_location=1"}) {
    const auto checked = test::run_cli(std::string("check-model glm --set model.n=300 --set model.") + keys);
    INFO(checked.output);
    CHECK(checked.exit_code == 0);
    CHECK_THAT(checked.output, Contains("0 failed") && !Contains("FAIL"));
    // No bound for poisson; neither a bound nor the GLM form with a sampled dispersion or noise sd.
    const bool sampled = std::string(keys).find("dispersion_shape") != std::string::npos ||
                         std::string(keys).find("noise_prior") != std::string::npos;
    const bool bounded = std::string(keys).find("poisson") == std::string::npos && !sampled;
    CHECK_THAT(checked.output, Contains(bounded ? "PASS  Lipschitz bounds" : "SKIP  Lipschitz bounds"));
    CHECK_THAT(checked.output, Contains(sampled ? "SKIP  GLM form" : "PASS  GLM form"));
  }
}
