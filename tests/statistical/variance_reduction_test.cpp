// The variance-reduced estimators cv, svrg and saga on the gaussian plugin (real plugin, closed
// form known): unbiasedness for every sampling scheme and code path, cv's exactness at θ̂ and
// its ‖θ - θ̂‖² variance (Baker et al. 2019, Lemma 1), saga's table, svrg's snapshots.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xtensor-blas/xlinalg.hpp>

#include "gaussian_fixture.hpp"
#include "statistical/estimator_support.hpp"
#include "targets.hpp"

namespace {

/// Which code path a model sends the estimators down.
enum class Path { glm, per_item, neither };

std::shared_ptr<const sgmcmc::Model> with_path(const test::GaussianFixture& fixture, Path path) {
  if (path == Path::glm) return fixture.model;
  return std::make_shared<test::MaskedModel>(fixture.model, false, path == Path::per_item);
}

std::string as_list(std::span<const double> values) { return fmt::format("{}", fmt::join(values, ", ")); }

std::vector<double> plus(std::span<const double> a, std::vector<double> b) {
  for (std::size_t j = 0; j < b.size(); ++j) b[j] += a[j];
  return b;
}

/// Σ_i ‖∇f_i(θ)‖: the size of the terms whose sums the estimators form, which sets their rounding.
double item_gradient_norm_sum(const test::GaussianFixture& fixture, std::span<const double> theta) {
  const auto& model = *fixture.model;
  std::vector<std::size_t> items(model.num_items());
  std::iota(items.begin(), items.end(), std::size_t{0});
  const std::size_t d = model.dimension();
  std::vector<double> rows(items.size() * d);
  auto workspace = model.make_workspace();
  model.item_gradients(theta, items, rows, *workspace);
  double sum = 0.0;
  for (std::size_t i = 0; i < items.size(); ++i)
    sum += std::sqrt(std::inner_product(rows.begin() + i * d, rows.begin() + (i + 1) * d, rows.begin() + i * d, 0.0));
  return sum;
}

/// Mean and covariance of the errors e = ĝ - ∇U(θ) of R estimates, and Hotelling's
/// T² = R ēᵀ S⁻¹ ē, which for unbiased estimates is χ²_d in the large-R limit (CLT).
struct ErrorMoments {
  xt::xtensor<double, 1> mean;
  xt::xtensor<double, 2> covariance;
  double hotelling = 0.0;
};

ErrorMoments error_moments(const std::vector<std::vector<double>>& estimates, std::span<const double> truth) {
  const std::size_t d = truth.size(), repeats = estimates.size();
  ErrorMoments m{xt::zeros<double>({d}), xt::zeros<double>({d, d})};
  for (const auto& g : estimates)
    for (std::size_t j = 0; j < d; ++j) m.mean(j) += (g[j] - truth[j]) / static_cast<double>(repeats);
  for (const auto& g : estimates)
    for (std::size_t j = 0; j < d; ++j)
      for (std::size_t l = 0; l < d; ++l)
        m.covariance(j, l) += (g[j] - truth[j] - m.mean(j)) * (g[l] - truth[l] - m.mean(l)) / static_cast<double>(repeats - 1);
  const auto solved = xt::linalg::solve(m.covariance, m.mean);
  for (std::size_t j = 0; j < d; ++j) m.hotelling += static_cast<double>(repeats) * m.mean(j) * solved(j);
  return m;
}

/// R estimates at θ from estimators whose state was set at α (and, for saga, partly at β):
///   cv:   centre θ̂ = α (given), then R estimates at θ;
///   svrg: the first estimate, at α, takes the snapshot; then R estimates at θ (period > R);
///   saga: a fresh estimator per repeat: table filled at α, one estimate at β refreshes a batch
///         of entries, then the estimate at θ — so the table states differ between repeats too.
std::vector<std::vector<double>> estimates_at(const std::string& kind, const sgmcmc::ItemSamplingParameters& batches,
                                              const sgmcmc::Model& model, std::span<const double> theta,
                                              std::span<const double> alpha, std::span<const double> beta, int repeats,
                                              std::uint64_t seed) {
  test::EstimatorBench bench(model, seed);
  std::vector<std::vector<double>> out;
  if (kind == "saga") {
    for (int r = 0; r < repeats; ++r) {
      auto saga = sgmcmc::make_estimator(sgmcmc::SagaParameters{.batches = batches}, model);
      bench.estimate(*saga, alpha);
      bench.estimate(*saga, beta);
      out.push_back(bench.estimate(*saga, theta));
    }
    return out;
  }
  auto estimator = kind == "cv"
                       ? sgmcmc::make_estimator(
                             sgmcmc::CvParameters{.batches = batches, .centre = std::vector<double>(alpha.begin(), alpha.end())},
                             model)
                       : sgmcmc::make_estimator(
                             sgmcmc::SvrgParameters{.batches = batches, .period = static_cast<std::uint64_t>(repeats + 1)},
                             model);
  std::vector<double> start(model.dimension(), 0.0);
  estimator->prepare(start, bench.context);
  if (kind == "svrg") bench.estimate(*estimator, alpha);
  for (int r = 0; r < repeats; ++r) out.push_back(bench.estimate(*estimator, theta));
  return out;
}

}  // namespace

TEST_CASE("cv, svrg and saga are unbiased at several θ: uniform and p_i ∝ L_i, with and without replacement, every code path") {
  // Quantity: Hotelling's T² = R ēᵀ S⁻¹ ē of the errors e = ĝ - ∇U(θ) of R = 20,000 independent
  // estimates (d = 3; S their sample covariance). Reference: unbiased estimates give T² ~ χ²_3
  // (multivariate CLT). Tolerance: T² < 30, where P(χ²_3 > 30) = erfc(√15) + √(60/π)·e^(-15)
  // ≈ 1.4e-6 per check (about 5e-5 over all checks of this test). A bias b is caught once
  // R bᵀS⁻¹b > 30, i.e. from about 0.04 standard deviations of one estimate.
  test::GaussianFixture fixture(50, 3);
  const std::vector<double> mu(fixture.mean.begin(), fixture.mean.end());
  const auto alpha = plus(mu, {0.3, -0.2, 0.1}), beta = plus(mu, {-0.5, 0.4, 0.2});
  const std::vector<std::vector<double>> thetas = {mu, plus(mu, {1.0, -1.0, 0.5}), plus(mu, {-3.0, 2.0, 4.0})};
  struct Case {
    const char* kind;
    sgmcmc::ItemSamplingParameters batches;
    Path path;
  };
  using sgmcmc::Sampling;
  const Case cases[] = {
      {"cv", {.batch_size = 5}, Path::glm},
      {"cv", {.batch_size = 5}, Path::per_item},
      {"cv", {.batch_size = 5, .replacement = true}, Path::glm},
      {"cv", {.batch_size = 5, .sampling = Sampling::lipschitz}, Path::glm},
      {"cv", {.batch_size = 5, .sampling = Sampling::lipschitz}, Path::per_item},
      {"svrg", {.batch_size = 5}, Path::glm},
      {"svrg", {.batch_size = 5, .sampling = Sampling::lipschitz}, Path::per_item},
      {"saga", {.batch_size = 5}, Path::glm},
      {"saga", {.batch_size = 20, .replacement = true}, Path::glm},  // repeated items in a batch
      {"saga", {.batch_size = 5, .sampling = Sampling::lipschitz}, Path::glm},
      {"saga", {.batch_size = 5}, Path::per_item},
      {"saga", {.batch_size = 20, .sampling = Sampling::lipschitz}, Path::per_item},
      {"saga", {.batch_size = 5}, Path::neither},
  };
  std::uint64_t seed = 1;
  for (const auto& c : cases) {
    const auto model = with_path(fixture, c.path);
    for (const auto& theta : thetas) {
      const auto truth = test::exact_gradient(*model, theta);
      const auto m = error_moments(estimates_at(c.kind, c.batches, *model, theta, alpha, beta, 20'000, ++seed), truth);
      INFO(c.kind << " [" << test::describe(c.batches) << "] path " << static_cast<int>(c.path) << " θ = " << as_list(theta) << ": mean error "
                  << m.mean << ", T² = " << m.hotelling);
      CHECK(xt::amax(xt::diagonal(m.covariance))() > 0.0);  // they are stochastic estimates
      CHECK(m.hotelling < 30.0);
    }
  }
}

TEST_CASE("cv is exact at θ = θ̂ found by SGD, bit for bit the exact gradient when it evaluates both batch sums") {
  // With two batch sums (a model without the GLM form), ĝ(θ̂) = Σ_i∇f_i(θ̂) + ∇f_0(θ̂) + s·(A - A)
  // where both batch sums A are the same computation: the difference is exactly 0, and Σ_i∇f_i(θ̂)
  // comes from the same full-pass call as the `exact` estimator's, so the two agree bit for bit.
  // The GLM form sums s_i(θ̂) x_i through add_scaled_features instead: equal up to rounding, at
  // most a few ulps of the largest partial sum; the tolerance is 1e-12 of Σ_i ‖∇f_i(θ̂)‖.
  test::GaussianFixture fixture(50, 3);
  for (const Path path : {Path::per_item, Path::glm}) {
    const auto model = with_path(fixture, path);
    test::EstimatorBench bench(*model);
    auto cv = sgmcmc::make_estimator(
        sgmcmc::CvParameters{.batches = {.batch_size = 5}, .sgd_iterations = 200, .sgd = {.step_size = 2e-3}}, *model);
    auto exact = sgmcmc::make_estimator(sgmcmc::ExactParameters{}, *model);
    std::vector<double> theta_hat(3, 0.0);
    cv->prepare(theta_hat, bench.context);
    const std::vector<double> mu(fixture.mean.begin(), fixture.mean.end());
    INFO("θ̂ = " << as_list(theta_hat) << ", posterior mean " << as_list(mu));
    // A smoke check that SGD descends (a sign error would diverge): from θ = 0, ‖μ‖ ≈ 1.2 away,
    // Σ_k h_k λ > 20 contracts the start's distance to nothing, and SGD's own noise at these steps
    // is about 0.1 per coordinate, so θ̂ ends well within half the starting distance.
    CHECK(std::hypot(theta_hat[0] - mu[0], theta_hat[1] - mu[1], theta_hat[2] - mu[2]) <
          0.5 * std::hypot(mu[0], mu[1], mu[2]));
    const auto truth = bench.estimate(*exact, theta_hat);
    const double scale = item_gradient_norm_sum(fixture, theta_hat);
    for (int repeat = 0; repeat < 3; ++repeat) {
      const auto g = bench.estimate(*cv, theta_hat);
      if (path == Path::per_item) {
        CHECK(g == truth);
      } else {
        for (std::size_t j = 0; j < 3; ++j) CHECK(std::abs(g[j] - truth[j]) <= 1e-12 * scale);
      }
    }
  }
}

TEST_CASE("cv's variance grows like ‖θ - θ̂‖² (Baker et al. 2019, Lemma 1): log-log slope 2, below the Lemma 1 bound") {
  // Quantity: v(t) = E‖ĝ(θ) - ∇U(θ)‖² at θ = θ̂ + t·u (u a fixed unit vector), estimated by the mean
  // of q = ‖ĝ - ∇U‖² over R = 4,000 estimates, at t = 1e-3 … 10 posterior sd (0.07 here).
  // Reference: for this model ∇f_i(θ) - ∇f_i(θ̂) = x_i x_iᵀ(θ - θ̂)/σ² is linear in θ - θ̂, so the
  // noise is linear in t and v(t) = t² v(1) exactly: the slope of log v against log t is 2.
  // Lemma 1 bounds v(t) by (1/n) Σ_i (L_i²/p_i) t² = (N/n) Σ_i L_i² t² for uniform p_i (sampling
  // without replacement only lowers the variance).
  // Tolerance: sd(log v̂_k) = sd(q_k)/(√R v̂_k) (delta method); the least-squares slope over
  // x_k = log t_k has sd √(Σ(x_k - x̄)² sd_k²) / Σ(x_k - x̄)²; we allow 5 of those sd. The bound is
  // checked with 5 sd of slack on v̂_k.
  test::GaussianFixture fixture(50, 3);
  const auto& model = *fixture.model;
  const std::vector<double> mu(fixture.mean.begin(), fixture.mean.end());
  const std::size_t n = 5;
  auto cv = sgmcmc::make_estimator(sgmcmc::CvParameters{.batches = {.batch_size = n}, .centre = mu}, model);
  test::EstimatorBench bench(model, 21);
  std::vector<double> start(3, 0.0);
  cv->prepare(start, bench.context);
  REQUIRE(start == mu);  // the chain starts at the given centre

  std::vector<double> bounds(model.num_items());
  model.item_lipschitz_bounds(bounds);
  const double sum_l2 = std::inner_product(bounds.begin(), bounds.end(), bounds.begin(), 0.0);
  const double lemma_constant = static_cast<double>(model.num_items()) / static_cast<double>(n) * sum_l2;

  const std::vector<double> u{0.48, -0.6, 0.64};  // unit length
  const double posterior_sd = 1.0 / std::sqrt(fixture.precision(0, 0));
  std::vector<double> x, log_v, sd_log_v;
  for (const double t_in_sd : {1e-3, 1e-2, 1e-1, 1.0, 10.0}) {
    const double t = t_in_sd * posterior_sd;
    std::vector<double> theta = mu;
    for (std::size_t j = 0; j < 3; ++j) theta[j] += t * u[j];
    const auto truth = test::exact_gradient(model, theta);
    const int repeats = 4'000;
    double sum = 0.0, sum_squares = 0.0;
    for (int r = 0; r < repeats; ++r) {
      const auto g = bench.estimate(*cv, theta);
      double q = 0.0;
      for (std::size_t j = 0; j < 3; ++j) q += (g[j] - truth[j]) * (g[j] - truth[j]);
      sum += q;
      sum_squares += q * q;
    }
    const double v = sum / repeats, sd_v = std::sqrt((sum_squares / repeats - v * v) / repeats);
    INFO("t = " << t << ": v̂ = " << v << " ± " << sd_v << ", Lemma 1 bound " << lemma_constant * t * t);
    CHECK(v < lemma_constant * t * t + 5 * sd_v);
    x.push_back(std::log(t));
    log_v.push_back(std::log(v));
    sd_log_v.push_back(sd_v / v);
  }
  const double x_mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
  const double y_mean = std::accumulate(log_v.begin(), log_v.end(), 0.0) / static_cast<double>(x.size());
  double sxx = 0.0, sxy = 0.0, slope_variance = 0.0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    sxx += (x[k] - x_mean) * (x[k] - x_mean);
    sxy += (x[k] - x_mean) * (log_v[k] - y_mean);
  }
  for (std::size_t k = 0; k < x.size(); ++k) slope_variance += std::pow((x[k] - x_mean) * sd_log_v[k], 2);
  const double slope = sxy / sxx, slope_sd = std::sqrt(slope_variance) / sxx;
  INFO("slope " << slope << " ± " << slope_sd);
  CHECK(std::abs(slope - 2.0) < 5 * slope_sd);
}

TEST_CASE("near the mode cv's variance is far below minibatch's, each matching its finite-population formula") {
  // Quantity: v = E‖ĝ - ∇U‖² at θ = μ + 1 posterior sd along u, for `minibatch` and for `cv`
  // centred at θ̂ = μ, both with n = 20 of N = 2,000 without replacement; v̂ is the mean of
  // q = ‖ĝ - ∇U‖² over R = 4,000 estimates.
  // Reference: (N/n) Σ_{i∈S} a_i over a uniform sample without replacement has covariance
  // N(N-n)/(n(N-1)) Σ_i (a_i - ā)(a_i - ā)ᵀ, so v = N(N-n)/(n(N-1)) Σ_i ‖a_i - ā‖², with
  // a_i = ∇f_i(θ) for minibatch and a_i = ∇f_i(θ) - ∇f_i(θ̂) for cv (computed from the plugin's
  // per-item gradients). Tolerance: 5 sd(v̂) = 5 sd(q)/√R each. "Far below": measured v̂_cv <
  // v̂_minibatch / 100 (the formulas give a ratio near 1e-3 here).
  test::GaussianFixture fixture(2000, 3);
  const auto& model = *fixture.model;
  const std::size_t big_n = model.num_items(), n = 20;
  const std::vector<double> mu(fixture.mean.begin(), fixture.mean.end());
  std::vector<double> theta = mu;
  const std::vector<double> u{0.48, -0.6, 0.64};
  for (std::size_t j = 0; j < 3; ++j) theta[j] += u[j] / std::sqrt(fixture.precision(j, j));
  const auto truth = test::exact_gradient(model, theta);

  std::vector<std::size_t> items(big_n);
  std::iota(items.begin(), items.end(), std::size_t{0});
  auto workspace = model.make_workspace();
  std::vector<double> at_theta(big_n * 3), at_centre(big_n * 3);
  model.item_gradients(theta, items, at_theta, *workspace);
  model.item_gradients(mu, items, at_centre, *workspace);
  const auto population_variance = [&](bool centred) {
    std::vector<double> mean(3, 0.0);
    const auto a = [&](std::size_t i, std::size_t j) { return at_theta[3 * i + j] - (centred ? at_centre[3 * i + j] : 0.0); };
    for (std::size_t i = 0; i < big_n; ++i)
      for (std::size_t j = 0; j < 3; ++j) mean[j] += a(i, j) / static_cast<double>(big_n);
    double sum = 0.0;
    for (std::size_t i = 0; i < big_n; ++i)
      for (std::size_t j = 0; j < 3; ++j) sum += (a(i, j) - mean[j]) * (a(i, j) - mean[j]);
    const double nn = static_cast<double>(big_n), m = static_cast<double>(n);
    return nn * (nn - m) / (m * (nn - 1)) * sum;
  };

  const auto measured = [&](const auto& parameters) {
    auto estimator = sgmcmc::make_estimator(parameters, model);
    test::EstimatorBench bench(model, 5);
    std::vector<double> start(3, 0.0);
    estimator->prepare(start, bench.context);
    const int repeats = 4'000;
    double sum = 0.0, sum_squares = 0.0;
    for (int r = 0; r < repeats; ++r) {
      const auto g = bench.estimate(*estimator, theta);
      double q = 0.0;
      for (std::size_t j = 0; j < 3; ++j) q += (g[j] - truth[j]) * (g[j] - truth[j]);
      sum += q;
      sum_squares += q * q;
    }
    const double v = sum / repeats;
    return std::pair{v, std::sqrt((sum_squares / repeats - v * v) / repeats)};
  };
  const auto [v_minibatch, sd_minibatch] = measured(sgmcmc::MinibatchParameters{.batch_size = n});
  const auto [v_cv, sd_cv] = measured(sgmcmc::CvParameters{.batches = {.batch_size = n}, .centre = mu});
  const double expected_minibatch = population_variance(false), expected_cv = population_variance(true);
  INFO("minibatch " << v_minibatch << " ± " << sd_minibatch << " (formula " << expected_minibatch << "); cv " << v_cv
                    << " ± " << sd_cv << " (formula " << expected_cv << "); ratio " << v_cv / v_minibatch);
  CHECK(std::abs(v_minibatch - expected_minibatch) < 5 * sd_minibatch);
  CHECK(std::abs(v_cv - expected_cv) < 5 * sd_cv);
  CHECK(v_cv < v_minibatch / 100);
}

TEST_CASE("saga: once every entry is refreshed at a fixed θ the estimate is ∇U(θ), compact, full and one-item tables agree") {
  // (1) After the table is filled at α, estimates at a fixed θ refresh the entries of their
  // batches; once every item has been asked for at θ (the MaskedModel records it; for each of the
  // three tables), g_i = ∇f_i(θ)
  // for all i, the batch term is exactly 0, and ĝ = ∇f_0(θ) + G = ∇U(θ) up to the rounding of the
  // running sum G: under 1e4 additions of terms bounded by Σ_i(‖∇f_i(α)‖ + ‖∇f_i(θ)‖), i.e. a
  // relative 1e4 · 1.1e-16 ≈ 1e-12 of that sum; we allow 1e-9 of it. One stale entry would leave
  // an error ‖∇f_i(θ) - ∇f_i(α)‖ of order 1.
  // (2) With the same seed, the compact table (N scalars, GLM form), the full N × d table
  // (item_gradients) and the full table built from one-item batches of add_data_gradient draw
  // the same batches and must give the same estimates along a path of 200 θ, up to the same
  // rounding (the GLM path forms (s - s')x where the others form sx - s'x): tolerance 1e-9 of
  // Σ_i ‖∇f_i(θ)‖ at each θ.
  test::GaussianFixture fixture(50, 3);
  const std::vector<double> mu(fixture.mean.begin(), fixture.mean.end());
  const auto alpha = plus(mu, {0.3, -0.2, 0.1}), theta = plus(mu, {-1.0, 0.5, 2.0});
  const auto item_norm_sum = [&](std::span<const double> at) { return item_gradient_norm_sum(fixture, at); };

  for (const auto [glm, per_item] : {std::pair{true, true}, {false, true}, {false, false}}) {
    const test::MaskedModel model(fixture.model, glm, per_item);
    test::EstimatorBench bench(model);
    auto saga = sgmcmc::make_estimator(sgmcmc::SagaParameters{.batches = {.batch_size = 5}}, model);
    bench.estimate(*saga, alpha);
    model.forget_asked();
    int calls = 0;
    while (!model.asked_every_item() && calls < 10'000) {
      bench.estimate(*saga, theta);
      ++calls;
    }
    REQUIRE(model.asked_every_item());
    const auto g = bench.estimate(*saga, theta), truth = test::exact_gradient(model, theta);
    INFO((glm ? "compact" : per_item ? "full" : "one-item") << " table, every entry refreshed after " << calls << " estimates");
    for (std::size_t j = 0; j < 3; ++j) CHECK(std::abs(g[j] - truth[j]) <= 1e-9 * (item_norm_sum(alpha) + item_norm_sum(theta)));
  }

  const sgmcmc::ItemSamplingParameters batch_kinds[] = {
      {.batch_size = 5}, {.batch_size = 20, .replacement = true}, {.batch_size = 5, .sampling = sgmcmc::Sampling::lipschitz}};
  for (const auto& batches : batch_kinds) {
    const test::MaskedModel full(fixture.model, false, true), one_item(fixture.model, false, false);
    const sgmcmc::Model* models[] = {fixture.model.get(), &full, &one_item};
    std::vector<std::unique_ptr<test::EstimatorBench>> benches;
    std::vector<std::unique_ptr<sgmcmc::Estimator>> sagas;
    for (const auto* model : models) {
      benches.push_back(std::make_unique<test::EstimatorBench>(*model, 77));
      sagas.push_back(sgmcmc::make_estimator(sgmcmc::SagaParameters{.batches = batches}, *model));
    }
    sgmcmc::Rng walk(3, 9);
    std::vector<double> at = mu;
    for (int step = 0; step < 200; ++step) {
      for (double& a : at) a += 0.2 * walk.normal();
      const double tolerance = 1e-9 * item_norm_sum(at);
      const auto compact = benches[0]->estimate(*sagas[0], at);
      for (std::size_t m = 1; m < 3; ++m) {
        const auto other = benches[m]->estimate(*sagas[m], at);
        INFO(test::describe(batches) << ", step " << step << ", table " << m);
        for (std::size_t j = 0; j < 3; ++j) CHECK(std::abs(other[j] - compact[j]) <= tolerance);
      }
    }
  }
}

TEST_CASE("svrg: the estimate at each snapshot is exact, with one full pass every `period` iterations") {
  // One estimate per iteration (as sgld makes): iterations 1, 1 + m, 1 + 2m, ... take a
  // snapshot at their θ and return ∇U(θ) (the GLM sum
  // Σ_i s_i x_i: 1e-12 of Σ_i ‖∇f_i(θ)‖ for rounding, as for cv); the others draw a batch and are
  // stochastic (their error is of order 1 here, far above 1e-6). Cost: N per snapshot, n per
  // other estimate (GLM form).
  test::GaussianFixture fixture(50, 3);
  const auto& model = *fixture.model;
  const std::size_t period = 4, n = 5;
  auto svrg = sgmcmc::make_estimator(sgmcmc::SvrgParameters{.batches = {.batch_size = n}, .period = period}, model);
  test::EstimatorBench bench(model);
  sgmcmc::Rng walk(4, 2);
  std::vector<double> theta(fixture.mean.begin(), fixture.mean.end());
  for (std::size_t call = 0; call < 3 * period; ++call) {
    for (double& t : theta) t += 0.3 * walk.normal();
    bench.context.iteration = call + 1;
    const auto g = bench.estimate(*svrg, theta), truth = test::exact_gradient(model, theta);
    double difference = 0.0;
    for (std::size_t j = 0; j < 3; ++j) difference = std::max(difference, std::abs(g[j] - truth[j]));
    INFO("estimate " << call + 1 << ": max |ĝ - ∇U| = " << difference);
    if (call % period == 0)
      CHECK(difference <= 1e-12 * item_gradient_norm_sum(fixture, theta));
    else
      CHECK(difference > 1e-6);
    CHECK(bench.cost.full_passes == call / period + 1);
  }
  CHECK(bench.cost.item_gradients == 3 * model.num_items() + 3 * (period - 1) * n);
}

TEST_CASE("gaussian plugin: L_i = ‖x_i‖²/σ² is a Lipschitz constant of ∇f_i, attained along x_i") {
  // ∇f_i(θ) - ∇f_i(θ') = x_i x_iᵀ(θ - θ')/σ²: its norm is at most ‖x_i‖²‖θ - θ'‖/σ², with equality
  // when θ - θ' is parallel to x_i. Checked on random pairs (≤, up to 1e-12 relative rounding)
  // and along x_i (=, to 1e-12 relative).
  test::GaussianFixture fixture(20, 3);
  const auto& model = *fixture.model;
  std::vector<double> bounds(model.num_items());
  model.item_lipschitz_bounds(bounds);
  auto workspace = model.make_workspace();
  sgmcmc::Rng rng(6, 1);
  for (std::size_t i = 0; i < model.num_items(); ++i) {
    const std::vector<std::size_t> item{i};
    CHECK(bounds[i] == Approx((fixture.x(i, 0) * fixture.x(i, 0) + fixture.x(i, 1) * fixture.x(i, 1) +
                               fixture.x(i, 2) * fixture.x(i, 2)) / (fixture.noise_sd * fixture.noise_sd)).epsilon(1e-12));
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<double> a(3), b(3), ga(3), gb(3);
      for (std::size_t j = 0; j < 3; ++j) {
        a[j] = rng.normal();
        b[j] = trial == 0 ? a[j] + 0.5 * fixture.x(i, j) : rng.normal();
      }
      model.item_gradients(a, item, ga, *workspace);
      model.item_gradients(b, item, gb, *workspace);
      const double change = std::hypot(ga[0] - gb[0], ga[1] - gb[1], ga[2] - gb[2]);
      const double distance = std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
      if (trial == 0)
        CHECK(change == Approx(bounds[i] * distance).epsilon(1e-12));
      else
        CHECK(change <= bounds[i] * distance * (1 + 1e-12));
    }
  }
}

TEST_CASE("cv's default centring: one SGD pass leaves θ̂ about one posterior sd from the mode, at N = 10⁴ and 10⁵") {
  // Quantity: ‖θ̂ - μ‖²_A / d after prepare() with default settings (batch 100, one pass of
  // K = N/n steps h_k = h_0/k with h_0 = 1/λ̂), averaged over 4 seeds (d = 5).
  // Reference: on a quadratic with curvature λ = 1/h_0 in every direction (here A ≈ (N/σ²) I),
  // e_k = θ_k - μ obeys k e_k = (k-1) e_{k-1} - ζ_k/λ, so e_K = -(1/(λK)) Σ_k ζ_k: the start is
  // forgotten after the first step and what is left is the mean of the K batches' noise, with
  // covariance Var(ζ)/(λ²K) ≈ [(N/n) Σ_i r_i r_iᵀ]/(λ² N/n) ≈ A⁻¹ (r_i = ∇f_i(μ), Σ_i r_i r_iᵀ ≈ A)
  // — the size of a posterior draw, whatever N: the one-pass claim of Baker et al. (2019, §3.4). Then ‖e_K‖²_A/d over
  // 4 seeds is about χ²_20/20 (mean 1), and P(χ²_20/20 > 3) ≈ 6e-6. Tolerance: the average < 3,
  // which also allows λ̂ to miss λ by a few tens of percent. A constant step 1/Σ_i L_i (d times
  // smaller), or no decay, leaves hundreds here.
  for (const std::size_t rows : {10'000u, 100'000u}) {
    test::GaussianFixture fixture(rows, 5);
    const auto& model = *fixture.model;
    double average = 0.0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      auto cv = sgmcmc::make_estimator(sgmcmc::CvParameters{.batches = {.batch_size = 100}}, model);
      test::EstimatorBench bench(model, 100 + seed);
      std::vector<double> theta(5, 0.0);
      cv->prepare(theta, bench.context);
      double squared = 0.0;
      for (std::size_t j = 0; j < 5; ++j)
        for (std::size_t l = 0; l < 5; ++l)
          squared += (theta[j] - fixture.mean(j)) * fixture.precision(j, l) * (theta[l] - fixture.mean(l));
      average += squared / 5 / 4;
      // Cost: 10 curvature probes of 2 batches, one pass of SGD, one full pass.
      CHECK(bench.cost.item_gradients == 10 * 2 * 100 + rows + rows);
      CHECK(bench.cost.full_passes == 1);
    }
    INFO("N = " << rows << ": mean ‖θ̂ - μ‖²_A / d = " << average);
    CHECK(average < 3.0);
  }
}

TEST_CASE("cv's SGLD centring: θ̂ is the mean of the burn-in's second half, distributed as the AR(1) theory says") {
  // Quantity: θ̂ after prepare() with centring = sgld, full batches (n = N, so ∇Û = ∇U exactly),
  // a constant step h = 0.5/λ_max(A) and K = 2,000 steps from θ_0 = (10, ..., 10), far from μ.
  // Reference: ∇U(θ) = A(θ - μ), so in A's eigenbasis (A = QΛQᵀ, z = Qᵀ(θ - μ)) each coordinate
  // is an AR(1), z_k = ρ z_{k-1} + √(2h) η_k with ρ = 1 - hλ and η_k ~ N(0, 1) independent across
  // steps and coordinates (a rotation of N(0, I)). The mean z̄ of z_{B+1..K}, B = K/2, M = K - B,
  // is then Gaussian: writing z_k = ρ^(k-B) z_B + √(2h) Σ_{t=B+1..k} ρ^(k-t) η_t,
  //   E z̄   = ρ^(B+1) (1 - ρ^M) / ((1 - ρ) M) · z_0,
  //   Var z̄ = [ (ρ(1 - ρ^M)/(1 - ρ))² · 2h(1 - ρ^(2B))/(1 - ρ²) + 2h Σ_{s=1..M} ((1 - ρ^s)/(1 - ρ))² ] / M².
  // So T = Σ_j (z̄_j - E z̄_j)² / Var z̄_j is exactly χ²_d, and over 40 seeds χ²_200.
  // Tolerance: its central 1 - 1e-4 interval, [131.4, 287.4] (R: qchisq(c(5e-5, 1 - 5e-5), 200)).
  // The last iterate as θ̂ gives T ≈ 10⁵, the mean of all K iterates (burn-in included) T ≈ 10⁴,
  // and noise √h instead of √(2h) (half the variance) T ≈ 100.
  test::GaussianFixture fixture(200, 5);
  const auto& model = *fixture.model;
  const std::size_t d = 5, rows = 200;
  const auto [eigenvalues, eigenvectors] = xt::linalg::eigh(fixture.precision);
  const double h = 0.5 / xt::amax(eigenvalues)();
  const std::uint64_t steps = 2000, burn_in = steps / 2, averaged = steps - burn_in;
  double statistic = 0.0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    auto cv = sgmcmc::make_estimator(
        sgmcmc::CvParameters{.batches = {.batch_size = rows},
                             .centring = sgmcmc::Centring::sgld,
                             .sgd_iterations = steps,
                             .sgd = {.step_size = h, .schedule = sgmcmc::SgdScheduleKind::constant}},
        model);
    test::EstimatorBench bench(model, 300 + seed);
    std::vector<double> theta(d, 10.0);
    cv->prepare(theta, bench.context);
    // Cost: K full batches, then the full pass at θ̂.
    CHECK(bench.cost.item_gradients == steps * rows + rows);
    for (std::size_t j = 0; j < d; ++j) {
      double z_bar = 0.0, z_0 = 0.0;
      for (std::size_t l = 0; l < d; ++l) {
        z_bar += eigenvectors(l, j) * (theta[l] - fixture.mean(l));
        z_0 += eigenvectors(l, j) * (10.0 - fixture.mean(l));
      }
      const double rho = 1.0 - h * eigenvalues(j), m = static_cast<double>(averaged);
      const double geometric = rho * (1.0 - std::pow(rho, m)) / (1.0 - rho);
      double noise_sum = 0.0;
      for (std::uint64_t s = 1; s <= averaged; ++s) noise_sum += std::pow((1.0 - std::pow(rho, static_cast<double>(s))) / (1.0 - rho), 2);
      const double expected = std::pow(rho, static_cast<double>(burn_in)) * geometric / m * z_0;
      const double at_burn_in = 2 * h * (1.0 - std::pow(rho, 2.0 * static_cast<double>(burn_in))) / (1.0 - rho * rho);
      const double variance = (geometric * geometric * at_burn_in + 2 * h * noise_sum) / (m * m);
      statistic += (z_bar - expected) * (z_bar - expected) / variance;
    }
  }
  INFO("T = " << statistic << " (χ²_200: mean 200, sd 20)");
  CHECK(statistic > 131.4);
  CHECK(statistic < 287.4);
}

TEST_CASE("svrg: `period` counts the chain's iterations, whatever the estimates an iteration makes") {
  // 40 iterations at period 4 take snapshots at iterations 1, 5, ..., 37: 10 full passes, for
  // sgld (one estimate an iteration) as for hmc with 5 leapfrog steps (5 estimates an iteration;
  // counting estimates, as sgmcmc once did, gave hmc at least five times as many). The cost counts
  // the estimator's full passes.
  test::GaussianFixture fixture(50, 3);
  const sgmcmc::ScheduleParameters step{.step_size = 1e-3};
  for (const std::string name : {"sgld", "hmc"}) {
    auto integrator = name == "sgld" ? sgmcmc::make_integrator(sgmcmc::SgldParameters{.schedule = step})
                                     : sgmcmc::make_integrator(sgmcmc::HmcParameters{.schedule = step, .steps = 5});
    auto estimator = sgmcmc::make_estimator(sgmcmc::SvrgParameters{.batches = {.batch_size = 5}, .period = 4}, *fixture.model);
    auto corrector = sgmcmc::make_corrector(sgmcmc::NoCorrectionParameters{}, {*fixture.model, *integrator});
    sgmcmc::Chain chain(fixture.model, std::move(estimator), std::move(integrator), std::move(corrector),
                        sgmcmc::Rng(3, sgmcmc::chain_stream(0)));
    test::Draws draws;
    const auto result = chain.run({.iterations = 40, .thin = 40, .eval_every = 40}, draws);
    INFO(name);
    REQUIRE_FALSE(result.diverged);
    CHECK(result.cost.full_passes == 10);
  }
}

TEST_CASE("cv reports what its centring chose: h_0 = 1/λ̂, and λ̂ near the posterior's largest curvature") {
  // U's Hessian on the gaussian fixture is the posterior precision A, the same at every θ, so the
  // automatic first step's λ̂ (power iterations on minibatch Hessian-vector products, batch n =
  // 100 of N = 2,000, scaled by N/n) estimates λ_max(A). One Rayleigh quotient of a batch is a
  // mean of n terms (x_iᵀv)²/σ², relative sd sqrt(2/n) ≈ 0.14 for Gaussian x; 0.45 is more than
  // 3 such sd either way. A λ̂ without the N/n scale (20× off), or h_0 reported as λ̂, fails.
  test::GaussianFixture fixture(2000, 3);
  const double exact = xt::amax(std::get<0>(xt::linalg::eigh(fixture.precision)))();
  auto integrator = sgmcmc::make_integrator(sgmcmc::SgldParameters{.schedule = {.step_size = 1e-5}});
  auto corrector = sgmcmc::make_corrector(sgmcmc::NoCorrectionParameters{}, {*fixture.model, *integrator});
  auto estimator = sgmcmc::make_estimator(sgmcmc::CvParameters{.batches = {.batch_size = 100}}, *fixture.model);
  sgmcmc::Chain chain(fixture.model, std::move(estimator), std::move(integrator), std::move(corrector),
                      sgmcmc::Rng(8, sgmcmc::chain_stream(0)));
  test::Draws draws;
  const auto result = chain.run({.iterations = 1, .thin = 1, .eval_every = 1}, draws);
  REQUIRE(result.estimator_choices.size() == 2);
  const auto [step_name, first_step] = result.estimator_choices[0];
  const auto [curvature_name, curvature] = result.estimator_choices[1];
  CHECK(step_name == "sgd_first_step");
  CHECK(curvature_name == "largest_curvature");
  CHECK(first_step == 1.0 / curvature);
  INFO("λ̂ = " << curvature << ", λ_max(A) = " << exact);
  CHECK(std::abs(curvature / exact - 1.0) < 0.45);
  // A given centre runs no SGD: nothing to report.
  const std::vector<double> centre(fixture.mean.begin(), fixture.mean.end());
  CHECK(sgmcmc::make_estimator(sgmcmc::CvParameters{.centre = centre}, *fixture.model)->choices().empty());
}
