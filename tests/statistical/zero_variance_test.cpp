// Zero-variance control variates (sgmcmc.zero_variance; Mira, Solgi & Imparato 2013; Baker et al. 2019, §4)
// on Gaussian targets N(μ, Σ) with precision P = Σ⁻¹, where every reference is derived in closed
// form: z = ∇log π(θ) = -P(θ - μ).
//
// Independent draws (not a chain) isolate the estimator: its sample variances then have the
// textbook Monte Carlo errors used for the tolerances. The last tests run real chains with the
// recorder (sgmcmc.recording) on the gaussian plugin.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <xtensor/xtensor.hpp>
#include <xtensor-blas/xlinalg.hpp>

#include "gaussian_fixture.hpp"
#include "statistics.hpp"
#include "matrix/known_posteriors.hpp"
#include "targets.hpp"
#include "reading.hpp"

namespace fs = std::filesystem;

namespace {

struct GaussianSample {
  xt::xtensor<double, 1> mu;
  xt::xtensor<double, 2> precision, covariance;
  sgmcmc::DrawMatrix points, scores;
};

/// T independent draws θ = μ + Lξ (LLᵀ = Σ) of a correlated 3-d Gaussian, with exact scores, plus
/// independent N(0, τ²) noise on every score coordinate (τ = 0: exact).
GaussianSample gaussian_sample(std::size_t draws, double tau, std::uint64_t seed) {
  GaussianSample s;
  s.mu = {1.5, -2.0, 0.5};
  s.precision = {{4.0, 1.0, 0.5}, {1.0, 2.0, -0.3}, {0.5, -0.3, 1.0}};
  s.covariance = xt::linalg::inv(s.precision);
  const xt::xtensor<double, 2> l = xt::linalg::cholesky(s.covariance);
  sgmcmc::Rng rng(seed, 1);
  for (std::size_t t = 0; t < draws; ++t) {
    std::vector<double> xi(3), theta(3), z(3, 0.0);
    rng.fill_normal(xi);
    for (std::size_t i = 0; i < 3; ++i) {
      theta[i] = s.mu(i);
      for (std::size_t k = 0; k <= i; ++k) theta[i] += l(i, k) * xi[k];
    }
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t k = 0; k < 3; ++k) z[i] -= s.precision(i, k) * (theta[k] - s.mu(k));
      z[i] += tau * rng.normal();
    }
    s.points.push_back(std::move(theta));
    s.scores.push_back(std::move(z));
  }
  return s;
}

sgmcmc::DrawMatrix squares(const sgmcmc::DrawMatrix& points) {
  sgmcmc::DrawMatrix out;
  for (const auto& theta : points) {
    std::vector<double> row;
    for (double x : theta) row.push_back(x * x);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

TEST_CASE("ZV-1 with exact scores: the mean of a Gaussian has zero variance and equals μ") {
  // Why exact: θ = μ - Σz, so q = θ_j = μ_j - (Σe_j)ᵀz is linear in the control z, and the
  // regression coefficient c* = -Var(z)⁻¹Cov(z, θ_j) = Σe_j (Var z = P, Cov(z, θ_j) = -e_j)
  // makes q̃ = q + c*ᵀz = μ_j for every draw. What is left is rounding: z carries relative errors
  // of a few ε ≈ 1e-16 and the 3 × 3 solve multiplies them by cond(P) < 10, so the residual sd
  // is below ~1e-14 of sd(q). The checks allow 1e-10 (variance ratio > 1e20), far above rounding
  // and far below any real failure (a wrong sign or a wrong control leaves a ratio near 1).
  const auto s = gaussian_sample(2000, 0.0, 11);
  const auto estimates = sgmcmc::zero_variance(s.points, s.scores, s.points, 1).estimates;
  for (std::size_t j = 0; j < 3; ++j) {
    INFO("θ_" << j + 1 << ": plain " << estimates[j].mean << ", ZV " << estimates[j].zv_mean << ", ratio "
              << estimates[j].variance_ratio());
    CHECK(estimates[j].variance_ratio() > 1e20);
    CHECK(std::abs(estimates[j].zv_mean - s.mu(j)) < 1e-10 * std::sqrt(s.covariance(j, j)));
    for (std::size_t k = 0; k < 3; ++k) CHECK(estimates[j].coefficients[k] == Approx(s.covariance(k, j)).epsilon(1e-10));
  }
}

TEST_CASE("ZV-2 with exact scores removes the variance of θ_j², where ZV-1 removes only its linear part") {
  // θ_j² = μ_j² + 2μ_j(θ_j - μ_j) + (θ_j - μ_j)². Second order: with P = aᵀθ + θᵀBθ/2 and
  // z = -P(θ - μ), ΔP + ∇P·z = tr B - (a + Bθ)ᵀP(θ - μ), whose quadratic part is
  // -θᵀ(BP + PB)θ/2. For any symmetric Q the Lyapunov equation BP + PB = -2Q has a solution
  // (P's eigenvalues are positive, so no two sum to 0), and a then matches the linear part as P
  // is invertible: every quadratic in θ is a constant plus a combination of the controls, so
  // q̃ = E[θ_j²] = μ_j² + Σ_jj at every draw, up to rounding as in the first-order case.
  // First order: the controls are linear in θ; (θ_j - μ_j)² is uncorrelated with every linear
  // function (odd central moments vanish), so the residual variance is Var((θ_j - μ_j)²) = 2Σ_jj²
  // and the variance ratio is (4μ_j²Σ_jj + 2Σ_jj²) / (2Σ_jj²) = 1 + 2μ_j²/Σ_jj.
  // Its tolerance: for T draws the relative sd of a sample variance is sqrt((κ - 1)/T), κ the
  // kurtosis; both q and the residual have κ ≤ 15 (that of a χ²₁), so sd(log ratio) ≤
  // 2 sqrt(14/T) = 0.053 at T = 20,000, and 5 sd is 0.27. Estimating c* adds O(d/T), negligible.
  const std::size_t draws = 20000;
  const auto s = gaussian_sample(draws, 0.0, 12);
  const auto q = squares(s.points);
  const auto first = sgmcmc::zero_variance(s.points, s.scores, q, 1).estimates;
  const auto second = sgmcmc::zero_variance(s.points, s.scores, q, 2).estimates;
  const double log_tolerance = 5 * 2 * std::sqrt(14.0 / static_cast<double>(draws));
  for (std::size_t j = 0; j < 3; ++j) {
    const double sigma2 = s.covariance(j, j), expected_first = 1 + 2 * s.mu(j) * s.mu(j) / sigma2;
    INFO("θ_" << j + 1 << "²: ZV-1 ratio " << first[j].variance_ratio() << " (derived " << expected_first << "), ZV-2 ratio "
              << second[j].variance_ratio() << ", ZV-2 " << second[j].zv_mean << " vs " << s.mu(j) * s.mu(j) + sigma2);
    CHECK(std::abs(std::log(first[j].variance_ratio() / expected_first)) < log_tolerance);
    CHECK(second[j].variance_ratio() > 1e20);
    CHECK(std::abs(second[j].zv_mean - (s.mu(j) * s.mu(j) + sigma2)) < 1e-10 * std::sqrt(second[j].variance));
  }
}

TEST_CASE("cross-fitted ZV: exact out of sample where the fit is exact, each half corrected by the other's coefficients") {
  // q = θ_j is linear in z with exact scores (see the first test), so the coefficients fitted on
  // either half are Σe_j up to rounding, and applied to the other half they give q̃ = μ_j at every
  // draw. A draw corrected with another draw's q, or a half left uncorrected, would leave a
  // variance ratio near 1. Folds: alternate draws, so both hold 1,000.
  const auto s = gaussian_sample(2000, 0.0, 11);
  std::vector<bool> first_fold(s.points.size());
  for (std::size_t t = 0; t < first_fold.size(); ++t) first_fold[t] = t % 2 == 0;
  const auto estimates = sgmcmc::zero_variance_cross_fitted(s.points, s.scores, s.points, 1, first_fold).estimates;
  for (std::size_t j = 0; j < 3; ++j) {
    INFO("θ_" << j + 1 << ": ZV " << estimates[j].zv_mean << ", ratio " << estimates[j].variance_ratio());
    CHECK(estimates[j].variance_ratio() > 1e20);
    CHECK(std::abs(estimates[j].zv_mean - s.mu(j)) < 1e-10 * std::sqrt(s.covariance(j, j)));
    for (std::size_t t = 0; t < s.points.size(); ++t) REQUIRE(std::abs(estimates[j].corrected[t] - s.mu(j)) < 1e-9);
  }
}

TEST_CASE("cross-fitted ZV: useless controls lower the variance ratio below 1, where the in-sample fit raises it above") {
  // Controls that carry nothing: θ ~ N(0, I_d) with exact scores z = -θ as the d = 10 controls,
  // and a quantity q ~ N(0, 1) drawn independently of θ, over T = 200 draws. Derived references:
  // - in sample, Var(q̃) is the least-squares residual variance RSS/(T - 1) and the ratio is
  //   1/(1 - R²), with R² ~ Beta(d/2, (T - 1 - d)/2) for a regression on d independent Gaussian
  //   regressors with an intercept: its mean is d/(T - 1), so the ratio is 1/(1 - 10/199) = 1.053
  //   (to first order), and ≥ 1 in every replication by construction;
  // - cross-fitted (halves of T/2 = 100), a draw of one half gets q̃ = q - β̂ᵀh with β̂ fitted
  //   on the other half, β̂ ~ N(0, (HᵀH)⁻¹) with HᵀH ~ Wishart(T/2 - 1, I) once centred, so
  //   E‖β̂‖² = d/(T/2 - 1 - d - 1) = 10/88 and the ratio is 1/(1 + 10/88) = 0.898 (first order).
  // Monte Carlo error over R = 200 replications: sd(R²) = sqrt(ab/((a+b)²(a+b+1))) = 0.022 for
  // a = 5, b = 94.5, so the in-sample mean ratio has a standard error of 0.022/sqrt(200) = 0.0016;
  // ‖β̂‖² has sd ≈ 0.114 sqrt(2/10) = 0.051, so the cross-fitted mean has an error of about
  // 0.0036. The checks allow ±0.01 in sample (6 standard errors; the Beta mean's second-order
  // term, Var(R²) = 5e-4, moves it by less) and ±0.02 cross-fitted (5.5 standard errors, more
  // than Jensen's gap of Var/(1+m)³ ≈ 0.002 and the folds' different means, O(1/T)).
  constexpr std::size_t d = 10, draws = 200, replications = 200;
  sgmcmc::Rng rng(23, 1);
  std::vector<bool> first_fold(draws);
  for (std::size_t t = 0; t < draws; ++t) first_fold[t] = t < draws / 2;
  double in_sample = 0.0, cross_fitted = 0.0;
  for (std::size_t r = 0; r < replications; ++r) {
    sgmcmc::DrawMatrix points(draws, std::vector<double>(d)), scores(draws, std::vector<double>(d)), q(draws, std::vector<double>(1));
    for (std::size_t t = 0; t < draws; ++t) {
      rng.fill_normal(points[t]);
      for (std::size_t j = 0; j < d; ++j) scores[t][j] = -points[t][j];
      q[t][0] = rng.normal();
    }
    const double fitted = sgmcmc::zero_variance(points, scores, q, 1).estimates[0].variance_ratio();
    REQUIRE(fitted >= 1.0);
    in_sample += fitted / replications;
    cross_fitted += sgmcmc::zero_variance_cross_fitted(points, scores, q, 1, first_fold).estimates[0].variance_ratio() / replications;
  }
  INFO("mean variance ratio in sample " << in_sample << " (derived 1.053), cross-fitted " << cross_fitted << " (derived 0.898)");
  CHECK(std::abs(in_sample - 1.0 / (1.0 - 10.0 / 199.0)) < 0.01);
  CHECK(std::abs(cross_fitted - 1.0 / (1.0 + 10.0 / 88.0)) < 0.02);
}

TEST_CASE("ZV-1 with noisy scores: the derived variance ratio, and the mean within Monte Carlo error") {
  // Scores z + τη (η ~ N(0, I) independent of θ), like an unbiased stochastic gradient. Then
  // Var(z + τη) = P + τ²I and Cov(z + τη, θ_j) = -e_j, so the best linear residual of q = θ_j has
  // variance Σ_jj - e_jᵀ(P + τ²I)⁻¹e_j (regression dilution: noise weakens the control but the
  // estimate stays unbiased, as E[τη] = 0).
  // Tolerances: q and q̃ are Gaussian, so a sample variance has relative sd sqrt(2/T) and
  // sd(log ratio) ≤ 2 sqrt(2/T) = 0.02 at T = 20,000 (5 sd: 0.1); the ZV mean has sd
  // sqrt(Var(q̃)/T) (draws are independent; estimating c* adds O(1/T)), checked to 5 sd.
  const std::size_t draws = 20000;
  const double tau = 1.0;
  const auto s = gaussian_sample(draws, tau, 13);
  const auto estimates = sgmcmc::zero_variance(s.points, s.scores, s.points, 1).estimates;
  const xt::xtensor<double, 2> diluted = xt::linalg::inv(s.precision + tau * tau * xt::eye<double>(3));
  for (std::size_t j = 0; j < 3; ++j) {
    const double residual = s.covariance(j, j) - diluted(j, j), expected = s.covariance(j, j) / residual;
    const double se = std::sqrt(residual / static_cast<double>(draws));
    INFO("θ_" << j + 1 << ": ratio " << estimates[j].variance_ratio() << " (derived " << expected << "), ZV mean "
              << estimates[j].zv_mean << " vs μ " << s.mu(j) << " (se " << se << ")");
    CHECK(expected > 1.5);  // the design has a real reduction to detect
    CHECK(std::abs(std::log(estimates[j].variance_ratio() / expected)) < 5 * 2 * std::sqrt(2.0 / static_cast<double>(draws)));
    CHECK(std::abs(estimates[j].zv_mean - s.mu(j)) < 5 * se);
  }
}

namespace {

/// Keeps each draw with the recorder's score of it, as the runner's files do. `follows_chain`
/// false leaves out the recorder's follow() (its workspace keeps the starting hyperparameters):
/// the defect a Gibbs-updated hyperparameter exposes, kept to show the check can fail.
struct RecordedDraws final : sgmcmc::ChainObserver {
  sgmcmc::DrawRecorder recorder;
  sgmcmc::DrawMatrix points, scores;
  bool follows_chain = true;
  RecordedDraws(std::shared_ptr<const sgmcmc::Model> model, const std::string& source, std::uint64_t seed)
      : recorder(model, options(*model, source), gradients(*model, source), sgmcmc::Rng(seed, sgmcmc::recording_stream(0))) {
    recorder.prepare();
  }
  static sgmcmc::OutputOptions options(const sgmcmc::Model& model, const std::string& source) {
    auto config = sgmcmc::parse_config(fmt::format("[output]\ngradients = \"{}\"\n", source), "test.toml");
    return sgmcmc::read_output_options(sgmcmc::SectionReader(config["output"]), model);
  }
  static sgmcmc::EstimatorRecipe gradients(const sgmcmc::Model& model, const std::string& source) {
    const auto config = sgmcmc::parse_config("[estimator]\nname = \"cv\"\nbatch_size = 10\n", "recorder.toml");
    return sgmcmc::gradient_recipe(options(model, source).gradients, sgmcmc::SectionReader(config["estimator"]), model);
  }
  void on_draw(const sgmcmc::Draw& draw) override {
    if (follows_chain) recorder.follow(draw.workspace, draw.target_changes, draw.data_changes, draw.theta);
    points.emplace_back(draw.theta.begin(), draw.theta.end());
    scores.emplace_back(draw.theta.size());
    recorder.score(draw.theta, draw.iteration, scores.back());
  }
  void on_metrics(const sgmcmc::MetricsRow&) override {}
};

double largest_eigenvalue(const test::GaussianFixture& fixture) {
  return xt::amax(std::get<0>(xt::linalg::eigh(fixture.precision)))();
}
double smallest_eigenvalue(const test::GaussianFixture& fixture) {
  return xt::amin(std::get<0>(xt::linalg::eigh(fixture.precision)))();
}

constexpr std::uint64_t sgld_iterations = 40000, sgld_thin = 10;

/// SGLD with exact gradients on the fixture's posterior, every 10th of 40,000 iterations at
/// ε = 0.5/λ_max, with each draw's score recorded by a recorder of `source`.
RecordedDraws recorded_sgld(const test::GaussianFixture& fixture, const std::string& source) {
  const double lambda = largest_eigenvalue(fixture);
  auto config = sgmcmc::parse_config(fmt::format("[estimator]\nname = \"exact\"\n[integrator]\nname = \"sgld\"\nstep_size = {}\n",
                                                 0.5 / lambda),
                                     "chain.toml");
  auto chain = sgmcmc::make_chain(test::plan_chain(config, *fixture.model), fixture.model, sgmcmc::Rng(7, sgmcmc::chain_stream(0)));
  RecordedDraws recorded(fixture.model, source, 7);
  chain->run({.iterations = sgld_iterations, .thin = sgld_thin, .eval_every = sgld_iterations}, recorded);
  return recorded;
}

}  // namespace

TEST_CASE("recorded exact gradients on an SGLD chain: ZV-1 returns the closed-form posterior mean") {
  // SGLD's draws are not from π (their covariance is (A - εA²/4)⁻¹, not A⁻¹), but the identity
  // θ = μ - A⁻¹z holds at every draw whatever their law, so ZV-1 with exact scores returns μ up to
  // rounding (same bound as the independent-draw test: z sums N = 200 item gradients, relative
  // error ~ Nε ≈ 1e-13 of the largest, far below the 1e-8 allowed here).
  const test::GaussianFixture fixture(200, 3);
  const auto recorded = recorded_sgld(fixture, "exact");
  const auto estimates = sgmcmc::zero_variance(recorded.points, recorded.scores, recorded.points, 1).estimates;
  for (std::size_t j = 0; j < 3; ++j) {
    INFO("β_" << j + 1 << ": ZV " << estimates[j].zv_mean << " vs μ " << fixture.mean(j) << ", ratio " << estimates[j].variance_ratio());
    CHECK(std::abs(estimates[j].zv_mean - fixture.mean(j)) < 1e-8 * std::sqrt(estimates[j].variance));
    CHECK(estimates[j].variance_ratio() > 1e16);
  }
}

TEST_CASE("recorded cv gradients on an SGLD chain: ZV-1 reduces the variance and agrees with μ within MC error") {
  // A cv recorder (batch 10 of 200, its own centre and stream) gives unbiased, noisy scores: the
  // control is weaker than with exact ones but still correlated with θ, so the variance ratio
  // must be > 1, by more than its Monte Carlo error: for Gaussian q, q̃ a sample variance from
  // T_eff effectively independent draws has relative sd sqrt(2/T_eff), so sd(log ratio) ≤
  // 2 sqrt(2/T_eff), and the check asks for log ratio > 5 of those. T_eff is the AR(1) value
  // T(1 - ρ)/(1 + ρ) of the slowest mode: exact-gradient SGLD contracts it by 1 - ελ_min/2 per
  // step, so ρ = (1 - 0.25 λ_min/λ_max)^10 between recorded draws.
  // SGLD with a linear gradient has stationary mean μ exactly, and the ZV estimate stays unbiased
  // (E[noise | θ] = 0), so it agrees with μ within 5 standard errors, by batch means of q̃.
  const test::GaussianFixture fixture(200, 3);
  const auto recorded = recorded_sgld(fixture, "cv");
  const auto estimates = sgmcmc::zero_variance(recorded.points, recorded.scores, recorded.points, 1).estimates;
  const double rho = std::pow(1 - 0.25 * smallest_eigenvalue(fixture) / largest_eigenvalue(fixture), sgld_thin);
  const double effective = static_cast<double>(recorded.points.size()) * (1 - rho) / (1 + rho);
  const double least_ratio = std::exp(5 * 2 * std::sqrt(2 / effective));
  for (std::size_t j = 0; j < 3; ++j) {
    const double se = test::batch_means_se(estimates[j].corrected, 20);
    INFO("β_" << j + 1 << ": ZV " << estimates[j].zv_mean << " vs μ " << fixture.mean(j) << " (se " << se << "), ratio "
              << estimates[j].variance_ratio() << " (must exceed " << least_ratio << "; ρ " << rho << ")");
    CHECK(estimates[j].variance_ratio() > least_ratio);
    CHECK(std::abs(estimates[j].zv_mean - fixture.mean(j)) < 5 * se);
  }
}

TEST_CASE("KSD from the CLI's recorded gradients: SGLD with a big step above an MH-corrected run of equal size") {
  // The in-memory KSD test (mh_test.cpp) repeated through the files a run writes: the same 1-d
  // posterior, ε λ = 1.5 (exact-gradient SGLD's variance 1.6 times the posterior's) against MALA +
  // MH at the same ε (exact), 2,000 draws each (every 20th of 40,000), scores read from
  // gradients-1.csv. The derivation there: an exact sample's KSD is about 0.02 at this size, the
  // biased one about 0.18, so a factor 2 is the bound. First, each recorded score must be exactly
  // -∇U at the draw of its row (same arithmetic as the exact estimator; numbers round-trip).
  test::GaussianFixture fixture(100, 1);
  const double lambda = fixture.precision(0, 0), epsilon = 1.5 / lambda;
  const auto run = [&](const std::string& name, const std::string& sampler) {
    const auto config = fixture.dir.write(name + ".toml", fmt::format(R"([model]
name = "gaussian"
data = "{}"
test_size = 0
noise_sd = {}
prior_sd = {}
[estimator]
name = "exact"
{}
[run]
iterations = 40000
thin = 20
[output]
gradients = "exact"
)",
                                                                     (fixture.dir.path() / "data.csv").string(), fixture.noise_sd,
                                                                     fixture.prior_sd, sampler));
    const auto out = fixture.dir.path() / name;
    const auto result = test::run_cli(fmt::format("run --config '{}' --quiet --out '{}'", config.string(), out.string()));
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
    return out;
  };
  const auto ksd_of = [&](const fs::path& out) {
    const auto draws = sgmcmc::read_stan_csv(out / "chain-1.csv"), gradients = sgmcmc::read_stan_csv(out / "gradients-1.csv");
    REQUIRE(draws.rows.size() == 2000);
    REQUIRE(gradients.rows.size() == 2000);
    const auto beta = static_cast<std::size_t>(std::find(draws.columns.begin(), draws.columns.end(), "beta.1") - draws.columns.begin());
    REQUIRE(beta < draws.columns.size());
    auto workspace = fixture.model->make_workspace();
    const auto items = sgmcmc::every_item(*fixture.model);
    sgmcmc::Rng unused(0, 0);
    std::vector<std::vector<double>> points, scores;
    for (std::size_t t = 0; t < draws.rows.size(); ++t) {
      const std::vector<double> theta{draws.rows[t][beta]};
      std::vector<double> gradient(1, 0.0);
      fixture.model->add_data_gradient(theta, {items}, gradient, *workspace, unused);
      fixture.model->add_prior_gradient(theta, gradient);
      CHECK(gradients.rows[t][0] == -gradient[0]);
      // Standardised so the kernel's length scale c = 1 matches the posterior's scale.
      points.push_back({(theta[0] - fixture.mean(0)) * std::sqrt(lambda)});
      scores.push_back({gradients.rows[t][0] / std::sqrt(lambda)});
    }
    return sgmcmc::kernel_stein_discrepancy(points, scores);
  };
  const double biased = ksd_of(run("sgld", fmt::format("[integrator]\nname = \"sgld\"\nstep_size = {}", epsilon)));
  const double corrected = ksd_of(run("mala", fmt::format("[integrator]\nname = \"mala\"\nstep_size = {}\n[corrector]\nname = \"mh\"", epsilon)));
  INFO("KSD SGLD " << biased << ", MALA+MH " << corrected);
  CHECK(biased > 2 * corrected);
}

TEST_CASE("recorded scores follow the chain's Gibbs-updated noise precision: mean 0 under the chain") {
  // Quantity: the mean of the recorded score z = ∂ log π(θ | τ, y)/∂θ over an exact chain of the
  // joint (θ, τ) (mala + mh for θ | τ, an exact Gibbs draw of τ | θ every 4 iterations; the model
  // of tests/matrix/known_posteriors.hpp). Reference: E[z] = 0 exactly, since for every τ the integral of
  // ∂p(θ, τ | y)/∂θ over θ vanishes. Data: 50 values y_i = 5 + 0.25ξ_i, so the posterior
  // precision τ ≈ 16 is far from the workspace's starting τ₀ = 1. A recorder stuck at τ₀ records
  // z₀ = -λ₀θ - τ₀Σ(θ - y_i) = -λ₀θ(1 - τ₀/τ) + (τ₀/τ)z, of mean ≈ -λ₀E[θ](1 - 1/16) ≈ -4.7,
  // about 20 standard errors (z has sd ≈ sqrt(τN) ≈ 28; batch-means SE ≈ 0.25 at this length).
  // Tolerance: 5 batch-means standard errors, after checking that the batches are nearly
  // independent. Both sources that read the workspace are checked: `exact`, and `cv`, whose
  // centre's full gradient must be recomputed after every change of τ (TargetChange::data).
  sgmcmc::Rng data_rng(21, 4);
  std::vector<double> y(50);
  for (double& value : y) value = 5.0 + 0.25 * data_rng.normal();
  const auto model = std::make_shared<const matrix::GibbsNoiseMean>(y);
  // Posterior sd of θ given τ ≈ 1/sqrt(16·50) ≈ 0.035; mala's ε = 0.5·sd² accepts most proposals.
  const auto config = sgmcmc::parse_config("[estimator]\nname = \"exact\"\n[integrator]\nname = \"mala\"\n"
                                           "step_size = 6e-4\n[corrector]\nname = \"mh\"\n",
                                           "chain.toml");
  const auto recorded = [&](const std::string& source, bool follows_chain) {
    auto chain = sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(11, sgmcmc::chain_stream(0)));
    RecordedDraws draws(model, source, 11);
    draws.follows_chain = follows_chain;
    chain->run({.warmup = 1000, .iterations = 200'000, .thin = 20, .eval_every = 200'000}, draws);
    std::vector<double> z;
    for (const auto& score : draws.scores) z.push_back(score[0]);
    return z;
  };
  for (const std::string source : {"exact", "cv"}) {
    INFO("source " << source);
    const auto z = recorded(source, true);
    const double se = test::batch_means_se(z);
    INFO("mean score " << test::mean(z) << " (se " << se << ")");
    REQUIRE(std::abs(test::autocorrelation(z, z.size() / 100)) < 0.05);
    CHECK(std::abs(test::mean(z)) < 5 * se);
    const auto stale = recorded(source, false);
    INFO("mean score at the starting τ " << test::mean(stale));
    CHECK(std::abs(test::mean(stale)) > 5 * se);
  }
}
