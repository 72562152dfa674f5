// The combination matrix (issue 15): every estimator × integrator × corrector the catalogues list,
// on three targets with a known posterior, is refused with a reason, or samples the posterior
// exactly (a corrector that tests acceptance), or is biased within a stated bound by a bias that
// shrinks with the step size (no corrector).
//
// Targets (posterior known without the sampler):
//   gaussian  the gaussian plugin, 200 rows, 1 covariate: N(μ, 1/A) in closed form.
//   poisson   PoissonRates (known_posteriors.hpp): Gamma(1, 2) (an exponential, density largest at the
//             boundary 0), closed form; the integrators reflect θ at 0 (momentum negated).
//   gibbs     GibbsNoiseMean (known_posteriors.hpp): θ given a noise precision τ that after_step draws by
//             a Gibbs step; the θ-marginal by 1-D quadrature in this file.
//   mlp       the mlp plugin with no hidden layer and the gaussian family on the first 50 of the
//             gaussian target's rows: linear regression with an intercept, N(μ, A⁻¹) in closed form on
//             the design [x, 1] (its batch passes are the network's GEMMs, its per-item gradients
//             saga's table). 50 rows, not 200: the exact estimator's full pass every iteration was
//             three quarters of the target's CPU, and the closed form, the chain lengths and so the
//             standard errors do not depend on N; the likelihood still outweighs the prior 800 to 1
//             (XᵀX/σ² ≈ 50 · 4 against 1/s² = 1/4), so a noise sd read 10 % too large still moves the
//             variance by 21 %. With N/n = 5, not 20, its minibatch noise is a quarter of the other
//             targets' (σ_g² ≈ 5/s²): its uncorrected biases sit further inside the bounds below.
//             Its start is the plugin's random Glorot draw, up to ~30 sd from the mode: the warmup (a
//             tenth of the chain, hundreds of relaxation times) still forgets it.
//
// Monte Carlo error. Draws are correlated, so standard errors (SE) come from 100 non-overlapping
// batch means (tests/statistics.hpp, Flegal & Jones 2010), trusted only when the batches are long
// next to the chain's memory: each coordinate first needs a lag-(n/100) autocorrelation below
// 0.05 (a cell that fails this is reported FAIL "too short", not passed). With nearly normal batch
// means, |estimate - truth| > 5 SE has two-sided probability ≈ 5.7e-7.
//
// Exact cells (corrector tests acceptance): mean and variance of every coordinate within 5 SE of
// the exact values. mh accepts 3 estimators × 5 integrators (svrg, saga, sgld and sghmc are
// refused), × 5 coordinates (3 targets of 1, mlp's 2) × 2 moments = 150 checks: family-wise false
// alarm ≈ 150 × 5.7e-7 ≈ 1e-4.
//
// Uncorrected cells (corrector none): the chain's law is biased by the discretisation and the
// minibatch noise, so each cell runs at a step h and at h/2 and checks, for mean and variance of
// every coordinate:
//  (a) the bias at h is within a stated bound: |variance - σ²| <= 0.3 σ² and |mean - μ| <= 0.2 σ,
//      each plus 5 SE (the bound is on the sampler's bias, the estimate carries Monte Carlo error).
//      The steps below are chosen from each integrator's known bias (derivations at the table) so
//      that the worst estimator (minibatch, 10 of 200 items) has a variance bias near 10–25 %: a
//      cell beyond 30 % is not a small bias. The mean of a Gaussian target is not biased by these
//      linear schemes at all; on the exponential it moves by a fraction of the variance's relative
//      error (σ = μ there), so 0.2 σ is already well beyond what a correct scheme does at h.
//  (b) the bias shrinks with the step: |bias(h/2)| <= 0.75 |bias(h)| + 5 (SE(h/2) + 0.75 SE(h)).
//      Every integrator here has a weak error of order 1 or 2 in its step at fixed friction per
//      step (SGLD: ε = h², bias ∝ ε, so h/2 quarters it; the splittings and leapfrog: h², a quarter;
//      SGHMC's Euler friction: h, a half), so a correct sampler's bias at h/2 is at most about half
//      that at h; 0.75 leaves room for the next order term. The noise term is a union bound: it is
//      exceeded with probability < 2 × 5.7e-7 when the true biases satisfy the inequality, so a
//      cell whose bias is pure Monte Carlo noise (BAOAB on a Gaussian with exact gradients, exact
//      for the position: Leimkuhler & Matthews 2013) passes, and a bias that stays as h halves fails.
//   50 uncorrected cells × 5 coordinates × 4 checks = 1,000 checks, each false alarm < 1.2e-6:
//   family-wise < 1.2e-3. With the exact cells, the whole matrix raises a false alarm with
//   probability below 1e-3 (seeds are fixed, so a given build passes or fails reproducibly).
//
// A mass per coordinate (issue 17, at the end of this file): every integrator with a diagonal mass
// on an anisotropic Gaussian target, against the exact law of its chain, with the same 5 SE rule.
#include <catch2/catch.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <fmt/format.h>

#include <xtensor/xview.hpp>
#include <xtensor-blas/xlinalg.hpp>

#include "gaussian_fixture.hpp"
#include "matrix/known_posteriors.hpp"
#include "statistics.hpp"
#include "targets.hpp"
#include "reading.hpp"

namespace {

// ---- Targets --------------------------------------------------------------------------------

/// A model and the exact mean and variance of every coordinate of its posterior.
struct Target {
  std::string name;
  std::shared_ptr<const sgmcmc::Model> model;
  std::vector<double> mean, variance;
  /// The smallest posterior standard deviation: step sizes are given in its units.
  double scale() const { return std::sqrt(*std::min_element(variance.begin(), variance.end())); }
};

Target gaussian_target(const test::GaussianFixture& fixture) {
  return {"gaussian", fixture.model, {fixture.mean(0)}, {1.0 / fixture.precision(0, 0)}};
}

Target poisson_target() {
  auto model = matrix::poisson_target();
  Target target{"poisson", model, {}, {}};
  const double rate = model->posterior_rate();
  for (std::size_t j = 0; j < model->dimension(); ++j) {  // Gamma(shape, rate): mean a/b, variance a/b²
    const double shape = model->posterior_shape(j);
    target.mean.push_back(shape / rate);
    target.variance.push_back(shape / (rate * rate));
  }
  return target;
}

/// The θ-marginal p(θ | y) ∝ exp(-λ0 θ²/2) (b + Σ(y_i - θ)²/2)^-(a + N/2) of the Gibbs target,
/// its mean and variance by the trapezoidal rule on 200,001 points over ȳ ± 40 sd_0, where
/// sd_0 = s_y/sqrt(N) is the plain standard error of ȳ: the density is below e^-700 of its peak
/// at the ends and the grid spacing is 4e-4 sd_0, far finer than the curvature.
Target gibbs_target() {
  auto model = matrix::gibbs_target();
  const auto& y = model->data();
  const double n = static_cast<double>(y.size());
  const double y_bar = test::mean(y), sd0 = std::sqrt(test::variance(y) / n);
  const double a = matrix::GibbsNoiseMean::noise_shape, b = matrix::GibbsNoiseMean::noise_rate,
               lambda0 = matrix::GibbsNoiseMean::prior_precision;
  const auto log_density = [&](double theta) {
    double squares = 0.0;
    for (double value : y) squares += (value - theta) * (value - theta);
    return -0.5 * lambda0 * theta * theta - (a + n / 2) * std::log(b + squares / 2);
  };
  constexpr int points = 200'001;
  const double low = y_bar - 40 * sd0, step = 80 * sd0 / (points - 1), peak = log_density(y_bar);
  double mass = 0.0, first = 0.0, second = 0.0;
  for (int k = 0; k < points; ++k) {
    const double theta = low + k * step, weight = (k == 0 || k == points - 1 ? 0.5 : 1.0) * std::exp(log_density(theta) - peak);
    mass += weight;
    first += weight * theta;
    second += weight * theta * theta;
  }
  const double mean = first / mass;
  return {"gibbs", model, {mean}, {second / mass - mean * mean}};
}

/// The mlp plugin with `layers = []` and `family = "gaussian"` on a gaussian fixture's rows (the
/// first 50 of the gaussian target's: the same stream): z = w x + b, y ~ N(z, σ²), w, b ~ N(0, s²)
/// (plugins/mlp/README.md), so (w, b) | y is the closed-form Bayesian linear regression posterior on
/// the design [x, 1] (θ holds W then b).
struct MlpTarget {
  test::GaussianFixture rows{50, 1};
  sgmcmc::LoadedPlugin plugin = sgmcmc::load_plugin_file(test::mlp_plugin_path);
  Target target() {
    auto config = sgmcmc::parse_config(fmt::format("[model]\ndata = \"{}\"\ntest_size = 0\nlayers = []\nfamily = \"gaussian\"\n"
                                                   "noise_sd = {}\nprior_scale = {}\n",
                                                   (rows.dir.path() / "data.csv").string(), rows.noise_sd, rows.prior_sd),
                                       "mlp.toml");
    std::shared_ptr<const sgmcmc::Model> model = test::checked_model(plugin, config["model"], 1);
    xt::xtensor<double, 2> design = xt::ones<double>({rows.x.shape(0), std::size_t{2}});
    xt::view(design, xt::all(), 0) = xt::view(rows.x, xt::all(), 0);
    const auto posterior = test::gaussian_posterior(design, rows.y, rows.noise_sd, rows.prior_sd);
    const auto covariance = xt::linalg::inv(posterior.precision);
    return {"mlp", model, {posterior.mean(0), posterior.mean(1)}, {covariance(0, 0), covariance(1, 1)}};
  }
};

// ---- Building a chain: the one place (the runner's order, as test::run_chain) -------------------

struct ChainUnderTest {
  std::unique_ptr<sgmcmc::Chain> chain;
  bool tests_acceptance = false;
  std::size_t block_length = 1;
};

/// Builds the chain the runner would from the [estimator], [integrator] and [corrector] sections
/// of `toml`. Throws sgmcmc::Error for a combination the runner refuses.
ChainUnderTest build_chain(std::shared_ptr<const sgmcmc::Model> model, const std::string& toml, std::uint64_t seed) {
  auto config = sgmcmc::parse_config(toml, "matrix.toml");
  auto chain = sgmcmc::make_chain(test::checked_plan(config, *model), model, sgmcmc::Rng(seed, sgmcmc::chain_stream(0)));
  const auto& corrector = chain->corrector();
  return {std::move(chain), corrector.tests_acceptance(), corrector.block_length()};
}

// ---- The settings of a cell ----------------------------------------------------------------------
//
// Steps are in units of s, the target's smallest posterior sd (so ω = 1/s is its largest
// frequency). With batches of 10 of N = 200 items, the minibatch gradient's variance near the
// mode is about σ_g² ≈ (N/n) λ ≈ 19/s² on the gaussian and gibbs targets (each item's gradient
// spread is about the per-item curvature) and 3.9/s² on the poisson target (known_posteriors.hpp);
// cv's is far smaller, exact's is 0.
//
// Uncorrected (expected relative variance bias at h for minibatch, the worst estimator):
//  sgld   ε = (0.2 s)²: discretisation ελ/4 = 1 %, noise εσ_g²/4 ≈ 19 % (Welling & Teh 2011's
//         update on a Gaussian: variance (1 + εσ_g²/4) / (λ(1 - ελ/4))).
//  mala   uncorrected it is SGLD with a gradient at the proposal: the same ε.
//  obabo, baoab, ubu  h = 0.1 s, retention a = e^{-γh} = 0.5 per step at both steps (γ = ln 2 / h):
//         the kicks add momentum variance ≈ h²σ_g² ≈ 0.19 per step against 1 - a = 0.5 dissipated,
//         ≈ 20 %; the discretisation error (h/s)² ≈ 1 % (none for BAOAB's positions on Gaussians).
//  hmc    h = 0.1 s, 5 leapfrog steps from fresh momentum: 5 kicks of noise h σ_g per trajectory,
//         the same order as obabo's.
//  sghmc  h = 0.05 s, γ = 2/s fixed (retention 1 - γh = 0.9, and 0.95 at h/2): the Euler friction
//         heats the momentum to 1/(1 - γh/2) ≈ 5 % and the noise adds h σ_g²/(2γ) ≈ 24 %; both are
//         of order h at fixed γ (a fixed γh would leave the friction's bias as h → 0).
//  psgld  ε = h² s / N with h = 0.2 (Li et al. 2016's ε, whose preconditioner G = 1/(λ + sqrt(V)) is
//         about N/|∇U|): at stationarity V ≈ E[ḡ²] with ḡ = (data gradient)/N, so G ≈ N s on the
//         gaussian and gibbs targets with exact gradients (E[(∇U)²] = 1/s²), G ≈ N s/sqrt(1 + σ_g²s²)
//         ≈ 0.22 N s with minibatch, and G = 2 N s (exact) or 0.5 N s (minibatch) on the poisson target
//         (data gradient Σt_i = 1, s = 1/2). The effective sgld step εG is then 0.01–0.08 s², and the
//         bias, once the preconditioner is frozen after the warmup (the default), is sgld's at that
//         step: εGλ/4 ≤ 2 % (discretisation), εGσ_g²/4 ≈ 4 % (minibatch noise). V's moving average
//         (α = 0.99: 100 steps, one or two relaxation times) makes the frozen G random by a factor
//         of about 2, so the step at h/2 is a quarter of that at h only within that factor; the biases
//         are a few % either way, within the noise term of (b).
//  sgnht  h = 0.05 s, diffusion A = 2/s (sghmc's γ): the thermostat holds the kinetic temperature at
//         T whatever the minibatch noise (ξ settles near A + hσ_g²/2 ≈ 2.5/s), and on a Gaussian the
//         position variance of this Euler step is then σ²(1 - ξ̄h/2) to first order (derivation at the
//         sgnht test below): -6 % at h, -3 % at h/2 for minibatch; -5 %, -2.5 % for exact gradients.
//  badodab h = 0.1 s, diffusion A = 2/s: the same thermostat, split B A D O D A B (Leimkuhler &
//         Shang 2016): second order with exact gradients ((h/s)² ≈ 1 %); the minibatch noise in its
//         kicks is absorbed by ξ as in sgnht.
// With mh: K stochastic kicks per block with noise σ_g each give the energy error a variance of
// about K h² σ_g² (tests/statistical/mh_test.cpp); keeping K h² σ_g² within 1–2 keeps minibatch's
// acceptance usable: obabo and baoab h = 0.1 s with every = 4 (0.8; ubu, one kick of h per step, 1.5), mala h = 0.15 s (ε = h²) with
// every = 4 (1.7), hmc h = 0.1 s, 5 steps, every = 2 (1.9). hmc takes every = 2, not 1: the mh
// corrector hands its exact endpoint estimator to the last step of a block, and an hmc step is a
// whole trajectory, so with every = 1 the chain's own estimator would never run and every
// estimator's cell would be plain exact HMC (identical draws: seen, and reported).
// Lengths: the mixing time τ at these steps is ~100 iterations for sgld/mala/obabo/baoab/sghmc
// at h (4× at h/2) and a few trajectories for hmc; n ≳ 2000 τ puts the lag-n/100 autocorrelation
// near e^-20 and the variance's SE near sqrt(2 · 2τ/n) ≈ 2 % at h/2, a tenth of the biases the
// steps are chosen to show. Times per target: tests/README.md.
/// What step_size is for h (in units of s): h s (time), ε = (h s)² (sgld, mala), or psgld's ε = h² s / N.
enum class StepUnit { time, squared, preconditioned };

struct Plan {
  std::string_view integrator;
  StepUnit unit;
  double h, h_mh;       // in units of s
  double friction;      // γ s, or sgnht's diffusion A s; 0: γ = ln 2 / h (per-step retention 1/2 at every step)
  std::uint64_t iterations, iterations_mh;  // at h (4× as many at h/2), and with mh
  std::uint64_t record_every;               // iterations between recorded draws (sample(), below)
};

constexpr Plan plans[] = {
    {"sgld", StepUnit::squared, 0.2, 0.1, 0.0, 400'000, 0, 10},
    {"mala", StepUnit::squared, 0.2, 0.15, 0.0, 400'000, 1'000'000, 10},
    {"obabo", StepUnit::time, 0.1, 0.1, 0.0, 400'000, 1'000'000, 10},
    {"baoab", StepUnit::time, 0.1, 0.1, 0.0, 400'000, 1'000'000, 10},
    {"hmc", StepUnit::time, 0.1, 0.1, 0.0, 100'000, 200'000, 1},
    {"leapfrog", StepUnit::time, 0.1, 0.1, 0.0, 100'000, 200'000, 1},
    {"sghmc", StepUnit::time, 0.05, 0.05, 2.0, 400'000, 0, 10},
    {"psgld", StepUnit::preconditioned, 0.2, 0.2, 0.0, 400'000, 0, 10},
    {"sgnht", StepUnit::time, 0.05, 0.05, 2.0, 400'000, 0, 10},
    {"badodab", StepUnit::time, 0.1, 0.1, 2.0, 400'000, 0, 10},
    {"ubu", StepUnit::time, 0.1, 0.1, 0.0, 400'000, 1'000'000, 10},
};

double step_size(const Plan& plan, double h, double s, std::size_t items) {
  switch (plan.unit) {
    case StepUnit::time: return h * s;
    case StepUnit::squared: return (h * s) * (h * s);
    case StepUnit::preconditioned: return h * h * s / static_cast<double>(items);
  }
  return 0.0;
}

const Plan* plan_of(std::string_view integrator) {
  for (const Plan& plan : plans)
    if (plan.integrator == integrator) return &plan;
  return nullptr;
}

template <class Entry>
bool declares(const Entry& entry, std::string_view key) {
  return std::find(entry.keys.begin(), entry.keys.end(), key) != entry.keys.end();
}

template <class Catalogue>
const auto& entry_named(const Catalogue& catalogue, const std::string& name) {
  return *std::find_if(catalogue.begin(), catalogue.end(), [&](const auto& entry) { return entry.name == name; });
}

struct Cell {
  std::string estimator, integrator, corrector;
  std::string name(const Target& target) const { return fmt::format("{} {} {} {}", target.name, estimator, integrator, corrector); }
};

/// The configuration of `cell` at step `h` (in units of s) on a target of `items` items: only keys
/// the chosen entries declare.
std::string cell_toml(const Cell& cell, const Plan& plan, double h, double s, std::size_t items) {
  std::string toml = fmt::format("[estimator]\nname = \"{}\"\n", cell.estimator);
  if (declares(entry_named(sgmcmc::estimator_catalogue(), cell.estimator), "batch_size")) toml += "batch_size = 10\n";
  toml += fmt::format("[integrator]\nname = \"{}\"\nstep_size = {}\n", cell.integrator, step_size(plan, h, s, items));
  const auto& integrator = entry_named(sgmcmc::integrator_catalogue(), cell.integrator);
  if (declares(integrator, "friction"))
    toml += fmt::format("friction = {}\n", plan.friction > 0 ? plan.friction / s : std::log(2.0) / (h * s));
  if (declares(integrator, "diffusion")) toml += fmt::format("diffusion = {}\n", plan.friction / s);
  if (declares(integrator, "steps")) toml += "steps = 5\n";
  toml += fmt::format("[corrector]\nname = \"{}\"\n", cell.corrector);
  if (declares(entry_named(sgmcmc::corrector_catalogue(), cell.corrector), "every"))
    toml += fmt::format("every = {}\n", declares(integrator, "steps") ? 2 : 4);
  return toml;
}

/// Every estimator × integrator × corrector of the catalogues, for the correctors `wanted` picks.
template <class Predicate>
std::vector<Cell> cells(Predicate wanted) {
  std::vector<Cell> all;
  for (const auto& corrector : sgmcmc::corrector_catalogue())
    if (wanted(corrector.name))
      for (const auto& estimator : sgmcmc::estimator_catalogue())
        for (const auto& integrator : sgmcmc::integrator_catalogue())
          all.push_back({estimator.name, integrator.name, corrector.name});
  return all;
}

// ---- Running and judging -------------------------------------------------------------------------

struct Moments {
  double mean, se_mean, variance, se_variance, autocorrelation;
  bool long_enough() const { return std::abs(autocorrelation) < 0.05; }
};

Moments moments(const std::vector<double>& x) {
  return {test::mean(x), test::batch_means_se(x), test::variance(x), test::variance_se(x),
          test::autocorrelation(x, x.size() / 100)};
}

/// Runs `built` for `iterations` after a warmup of a tenth as many (every start here is within
/// about 15 sd of the mode; a tenth of the chain is hundreds of relaxation times), recording a
/// block end about every `record_every` iterations, and returns the moments of each coordinate;
/// nullopt if it diverged.
///
/// Thinning by m iterations costs these moments almost nothing where the chain's integrated
/// autocorrelation time τ is far above m: their SEs are batch means over 100 batches of the run
/// (test::batch_means_se), batches whose length in iterations thinning leaves as it is, and for a
/// chain with per-iteration correlation ρ = (τ - 1)/(τ + 1) (an AR(1)) the thinned chain's time is
/// τ_m = (1 + ρ^m)/(1 - ρ^m), so its effective size (N/m)/τ_m is N/99.3 against N/100 at τ = 100,
/// m = 10 (the plans' τ ~ 100 at h, 4× that at h/2); an MH cell's m = 8 is 2 blocks of 4 at τ ≈ 25
/// blocks: N_b/25.2 against N_b/25. hmc and leapfrog, whose τ is a few trajectories, record every
/// block (m = 1). Recording every iteration made half of a gaussian cell's CPU time the chain's
/// clock reads around each draw's bookkeeping (perf), and stored 1.6 million draws per run.
std::optional<std::vector<Moments>> sample(ChainUnderTest& built, std::uint64_t iterations, std::uint64_t record_every) {
  const std::uint64_t k = built.block_length, warmup = iterations / 10 / k * k;
  const std::uint64_t thin = std::max(k, record_every / k * k);
  iterations = iterations / thin * thin;
  test::Draws draws;
  const auto result = built.chain->run({.warmup = warmup, .iterations = iterations, .thin = thin, .eval_every = iterations}, draws);
  if (result.diverged) return std::nullopt;
  std::vector<Moments> out;
  for (std::size_t j = 0; j < built.chain->state().theta.size(); ++j) out.push_back(moments(draws.coordinate(j)));
  return out;
}

/// One line of the printed matrix, and whether the cell passed.
struct Verdict {
  bool passed = true;
  std::string text;
};

std::string too_short(const std::vector<Moments>& runs) {
  std::string text;
  for (std::size_t j = 0; j < runs.size(); ++j)
    if (!runs[j].long_enough()) text += fmt::format(" too short: coordinate {} lag-n/100 autocorrelation {:.3f};", j + 1, runs[j].autocorrelation);
  return text;
}

Verdict judge_exact(const Target& target, const std::vector<Moments>& run) {
  Verdict verdict;
  verdict.text = too_short(run);
  verdict.passed = verdict.text.empty();
  for (std::size_t j = 0; j < run.size(); ++j) {
    const double mean_z = (run[j].mean - target.mean[j]) / run[j].se_mean;
    const double variance_z = (run[j].variance - target.variance[j]) / run[j].se_variance;
    verdict.passed = verdict.passed && std::abs(mean_z) < 5 && std::abs(variance_z) < 5;
    verdict.text += fmt::format(" [{}] mean {:+.4f}σ ({:+.1f} SE) variance {:+.2f}% ({:+.1f} SE)", j + 1,
                                (run[j].mean - target.mean[j]) / std::sqrt(target.variance[j]), mean_z,
                                100 * (run[j].variance / target.variance[j] - 1), variance_z);
  }
  verdict.text = (verdict.passed ? "pass" : "FAIL") + verdict.text;
  return verdict;
}

constexpr double mean_bound = 0.2, variance_bound = 0.3;  // (a): |mean bias| <= 0.2 σ, |variance bias| <= 0.3 σ²
constexpr double shrink = 0.75;     // (b): |bias(h/2)| <= 0.75 |bias(h)| + noise

Verdict judge_biased(const Target& target, const std::vector<Moments>& at_h, const std::vector<Moments>& at_half) {
  Verdict verdict;
  verdict.text = too_short(at_h) + too_short(at_half);
  verdict.passed = verdict.text.empty();
  for (std::size_t j = 0; j < at_h.size(); ++j) {
    const double sd = std::sqrt(target.variance[j]), var = target.variance[j];
    const double mean_h = at_h[j].mean - target.mean[j], mean_half = at_half[j].mean - target.mean[j];
    const double var_h = at_h[j].variance - var, var_half = at_half[j].variance - var;
    const bool bounded = std::abs(mean_h) <= mean_bound * sd + 5 * at_h[j].se_mean &&
                         std::abs(var_h) <= variance_bound * var + 5 * at_h[j].se_variance;
    const bool shrinks =
        std::abs(mean_half) <= shrink * std::abs(mean_h) + 5 * (at_half[j].se_mean + shrink * at_h[j].se_mean) &&
        std::abs(var_half) <= shrink * std::abs(var_h) + 5 * (at_half[j].se_variance + shrink * at_h[j].se_variance);
    verdict.passed = verdict.passed && bounded && shrinks;
    verdict.text += fmt::format(" [{}] mean {:+.3f}σ→{:+.3f}σ (SE {:.3f}) variance {:+.1f}%→{:+.1f}% (SE {:.1f}%){}{}", j + 1,
                                mean_h / sd, mean_half / sd, at_half[j].se_mean / sd, 100 * var_h / var,
                                100 * var_half / var, 100 * at_half[j].se_variance / var, bounded ? "" : " beyond bound",
                                shrinks ? "" : " not shrinking");
  }
  verdict.text = (verdict.passed ? "bias" : "FAIL bias") + verdict.text;
  return verdict;
}

bool uncorrected(const std::string& corrector) { return corrector == "none"; }
bool corrected(const std::string& corrector) { return corrector != "none"; }

/// The reason a corrected cell must be refused: the estimator's or the integrator's declared
/// mh_refusal (the first that has one), or "" if the cell must run.
std::string declared_refusal(const Cell& cell) {
  if (uncorrected(cell.corrector)) return "";
  for (const auto* reason : {&entry_named(sgmcmc::estimator_catalogue(), cell.estimator).mh_refusal,
                             &entry_named(sgmcmc::integrator_catalogue(), cell.integrator).mh_refusal})
    if (!reason->empty()) return *reason;
  return "";
}

/// Decides one cell: refused (with its reason), exact, or biased within bounds.
Verdict run_cell(const Target& target, const Cell& cell) {
  constexpr std::uint64_t seed = 2024;
  const Plan* plan = plan_of(cell.integrator);
  if (!plan) return {false, fmt::format("FAIL no step plan for integrator '{}': add it to `plans`", cell.integrator)};
  const double s = target.scale();
  const std::size_t items = target.model->num_items();
  // A corrector refuses exactly the cells whose estimator or integrator declares an mh_refusal,
  // with that reason; any other error (a bad key, a refused setting) fails the cell.
  const std::string expected_refusal = declared_refusal(cell);
  ChainUnderTest built;
  try {
    built = build_chain(target.model, cell_toml(cell, *plan, plan->h, s, items), seed);  // refused, or which kind
  } catch (const sgmcmc::Error& refusal) {
    const std::string reason = refusal.what();
    const bool expected = !expected_refusal.empty() && reason.find(expected_refusal) != std::string::npos;
    return {expected, (expected ? "refused: " : "FAIL refused unexpectedly: ") + reason};
  }
  if (!expected_refusal.empty())
    return {false, "FAIL accepted, though a component declares: " + expected_refusal};
  if (built.tests_acceptance) {
    built = build_chain(target.model, cell_toml(cell, *plan, plan->h_mh, s, items), seed);
    const auto run = sample(built, plan->iterations_mh, plan->record_every);
    if (!run) return {false, "FAIL diverged"};
    return judge_exact(target, *run);
  }
  auto half = build_chain(target.model, cell_toml(cell, *plan, plan->h / 2, s, items), seed);
  const auto at_h = sample(built, plan->iterations, plan->record_every),
             at_half = sample(half, 4 * plan->iterations, plan->record_every);
  if (!at_h || !at_half) return {false, "FAIL diverged"};
  return judge_biased(target, *at_h, *at_half);
}

/// Runs every cell of `target` whose corrector `wanted` picks, checks each and prints the matrix.
template <class Predicate>
void run_matrix(const Target& target, Predicate wanted) {
  std::vector<std::string> lines;
  for (const Cell& cell : cells(wanted)) {
    const auto start = std::chrono::steady_clock::now();
    const Verdict verdict = run_cell(target, cell);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(cell.name(target) << ": " << verdict.text);
    CHECK(verdict.passed);
    lines.push_back(fmt::format("{} → {}  ({:.1f} s)", cell.name(target), verdict.text, seconds));
  }
  for (const auto& line : lines) fmt::print("{}\n", line);
}

}  // namespace

TEST_CASE("combination matrix: gaussian target cells without corrector") {
  test::GaussianFixture fixture(200, 1);
  run_matrix(gaussian_target(fixture), uncorrected);
}
TEST_CASE("combination matrix: gaussian target cells with a corrector") {
  test::GaussianFixture fixture(200, 1);
  run_matrix(gaussian_target(fixture), corrected);
}
TEST_CASE("combination matrix: poisson target cells without corrector") { run_matrix(poisson_target(), uncorrected); }
TEST_CASE("combination matrix: poisson target cells with a corrector") { run_matrix(poisson_target(), corrected); }
TEST_CASE("combination matrix: gibbs target cells without corrector") { run_matrix(gibbs_target(), uncorrected); }
TEST_CASE("combination matrix: gibbs target cells with a corrector") { run_matrix(gibbs_target(), corrected); }
TEST_CASE("combination matrix: mlp target cells without corrector") {
  MlpTarget mlp;
  run_matrix(mlp.target(), uncorrected);
}
TEST_CASE("combination matrix: mlp target cells with a corrector") {
  MlpTarget mlp;
  run_matrix(mlp.target(), corrected);
}

// ---- A mass per coordinate (issue 17) --------------------------------------------------------------
//
// The anisotropic target (known_posteriors.hpp): N(ȳ_j, σ_j²) with σ = (0.1, 1, 10), 100× apart.
// Every integrator runs with exact gradients and a diagonal mass that matches the target,
// M_j = 1/σ_j², so that every coordinate moves like a unit normal (frequency ω_j = 1/(σ_j √M_j) = 1),
// and with one that deliberately differs, M_j = r_j/σ_j² with r = (1, 4, 1/4) (ω = 1, 1/2, 2). The
// steps are in those time units (h = 0.3, or ε = 0.1 = h² for sgld and mala); with the mass ignored
// in any one update, the coordinate with σ = 0.1 would see hω = 3 (the leapfrog is unstable beyond
// 2) and the one with σ = 10 a hundredth of its scale, so a mass that does not act per coordinate
// cannot pass.
//
// The exact values. With the mh corrector (mala, obabo, baoab, hmc) the chain's law is the
// posterior, N(ȳ_j, σ_j²). sgld and sghmc cannot take mh; on a Gaussian with exact gradients they
// are linear autoregressions per coordinate, whose stationary mean is ȳ_j exactly and whose
// stationary variance follows from their one-step map (sgld_variance, sghmc_variance below): the
// exact law of the discretised chain, not a bias bound, so again only Monte Carlo error is allowed.
//
// Monte Carlo error as above (judge_exact): batch-means SEs trusted only with the lag-n/100
// autocorrelation below 0.05, |estimate - exact| < 5 SE (two-sided probability 5.7e-7 each).
// 6 integrators × 2 masses × 3 coordinates × 2 moments = 72 checks: a false alarm with
// probability ≈ 72 × 5.7e-7 ≈ 4e-5. Lengths: the slowest coordinate (ω = 1/2) relaxes in about
// γ/ω² = 8 time units with friction γ = 2 (27 steps of h = 0.3, 80 of sghmc's h = 0.1) and in
// 2/(εω²) = 80 sgld steps; 400,000 iterations are thousands of relaxation times (hmc: 100,000
// trajectories of 5 steps).

namespace {

struct MassPlan {
  std::string_view integrator, corrector;  // mh wherever the integrator takes it
  double step_size;                        // ε for sgld and mala, h for the others
  double friction;                         // γ, where the integrator has one
  std::uint64_t iterations;
};

constexpr MassPlan mass_plans[] = {
    {"sgld", "none", 0.1, 0.0, 400'000},  {"mala", "mh", 0.1, 0.0, 400'000},   {"obabo", "mh", 0.3, 2.0, 400'000},
    {"baoab", "mh", 0.3, 2.0, 400'000},   {"hmc", "mh", 0.3, 0.0, 100'000},    {"sghmc", "none", 0.1, 2.0, 400'000},
};

const MassPlan& mass_plan(std::string_view integrator) {
  return *std::find_if(std::begin(mass_plans), std::end(mass_plans),
                       [&](const MassPlan& p) { return p.integrator == integrator; });
}

/// One printed line of a test that checks several cells, and its check.
void report(const std::string& line, bool passed) {
  INFO(line);
  CHECK(passed);
  fmt::print("{}\n", line);
}

/// SGLD on a coordinate of variance σ² with mass M: x' = (1 - εω²/2) x + sqrt(ε/M) ξ, ω² = 1/(σ²M),
/// an AR(1) with stationary variance (ε/M)/(1 - (1 - εω²/2)²) = σ²/(1 - εω²/4).
double sgld_variance(double variance, double mass, double epsilon) {
  return variance / (1.0 - epsilon / (variance * mass) / 4.0);
}

/// SGHMC's Euler step on x = θ_j - ȳ_j and m, with λ = 1/σ², c = 1 - γh, s = sqrt(2γhM):
///   m' = c m - hλx + sξ,  x' = x + (h/M) m',
/// that is (x', m') = A (x, m) + b ξ with A = [[1 - h²λ/M, hc/M], [-hλ, c]] and b = (hs/M, s). The
/// stationary covariance is Σ_k (A^k b)(A^k b)ᵀ; its x entry is summed here until A^k b has decayed
/// (the slowest eigenvalue of A at these steps is about 1 - hω²/γ ≥ 0.98 per step: 10⁵ terms leave
/// less than e^-2000).
double sghmc_variance(double variance, double mass, double h, double gamma) {
  const double lambda = 1.0 / variance, c = 1.0 - gamma * h, s = std::sqrt(2.0 * gamma * h * mass);
  double x = h * s / mass, m = s, sum = 0.0;
  for (int k = 0; k < 100'000; ++k) {
    sum += x * x;
    const double next_x = (1.0 - h * h * lambda / mass) * x + h * c / mass * m;
    m = -h * lambda * x + c * m;
    x = next_x;
  }
  return sum;
}

/// The exact mean and variance of every coordinate under `plan`'s chain with `mass` (see above).
Target mass_target(std::shared_ptr<const matrix::AnisotropicGaussian> model, const MassPlan& plan,
                   const std::vector<double>& mass) {
  Target target{"anisotropic", model, {}, {}};
  for (std::size_t j = 0; j < model->dimension(); ++j) {
    const double variance = model->posterior_variance(j);
    target.mean.push_back(model->posterior_mean(j));
    target.variance.push_back(plan.integrator == "sgld"    ? sgld_variance(variance, mass[j], plan.step_size)
                              : plan.integrator == "sghmc" ? sghmc_variance(variance, mass[j], plan.step_size, plan.friction)
                                                           : variance);
  }
  return target;
}

/// `mass`: integrator.mass as TOML; `extra`: more [integrator] lines.
std::string mass_toml(const MassPlan& plan, const std::string& mass, const std::string& extra = "") {
  const auto& integrator = entry_named(sgmcmc::integrator_catalogue(), std::string(plan.integrator));
  std::string toml = fmt::format("[estimator]\nname = \"exact\"\n[integrator]\nname = \"{}\"\nstep_size = {}\nmass = {}\n",
                                 plan.integrator, plan.step_size, mass);
  if (declares(integrator, "friction")) toml += fmt::format("friction = {}\n", plan.friction);
  if (declares(integrator, "steps")) toml += "steps = 5\n";
  toml += extra;
  toml += fmt::format("[corrector]\nname = \"{}\"\n", plan.corrector);
  if (plan.corrector == "mh") toml += fmt::format("every = {}\n", declares(integrator, "steps") ? 2 : 4);
  return toml;
}
std::string mass_toml(const MassPlan& plan, const std::vector<double>& mass, const std::string& extra = "") {
  return mass_toml(plan, fmt::format("[{}]", fmt::join(mass, ", ")), extra);
}

/// Runs `integrator` on the anisotropic target with the matching mass and with the differing one.
void run_mass_cells(std::string_view integrator) {
  const auto model = matrix::anisotropic_target();
  const MassPlan& plan = mass_plan(integrator);
  const std::vector<double> ratios = {1.0, 4.0, 0.25};
  for (const bool matching : {true, false}) {
    std::vector<double> mass;
    for (std::size_t j = 0; j < model->dimension(); ++j)
      mass.push_back((matching ? 1.0 : ratios[j]) / model->posterior_variance(j));
    auto built = build_chain(model, mass_toml(plan, mass), 2024);
    const auto run = sample(built, plan.iterations, 1);
    const Verdict verdict = run ? judge_exact(mass_target(model, plan, mass), *run) : Verdict{false, "FAIL diverged"};
    report(fmt::format("anisotropic {} {} mass {} → {}", integrator, plan.corrector, matching ? "1/σ²" : "(1, 4, 1/4)/σ²",
                       verdict.text),
           verdict.passed);
  }
}

}  // namespace

TEST_CASE("diagonal mass: sgld on an anisotropic gaussian") { run_mass_cells("sgld"); }
TEST_CASE("diagonal mass: mala with mh on an anisotropic gaussian") { run_mass_cells("mala"); }
TEST_CASE("diagonal mass: obabo with mh on an anisotropic gaussian") { run_mass_cells("obabo"); }
TEST_CASE("diagonal mass: baoab with mh on an anisotropic gaussian") { run_mass_cells("baoab"); }
TEST_CASE("diagonal mass: hmc with mh on an anisotropic gaussian") { run_mass_cells("hmc"); }
TEST_CASE("diagonal mass: sghmc on an anisotropic gaussian") { run_mass_cells("sghmc"); }

// ---- An adapted mass (issue 17) -------------------------------------------------------------------
//
// obabo with mh (the plan above) on the anisotropic target, started from the deliberately wrong
// mass (1, 4, 1/4)/σ², with integrator.adapt_mass = true and a warmup of W = 100,000 iterations.
// Stan's windows (MassAdaptation) then end at iterations 100, 150, 250, 450, …, 25,650 (fast
// interval 75, windows of 25 doubling), and the next would end at 51,250 with one more not fitting
// before the terminal interval at 99,950, so it is stretched there. A window closes at the first
// block end (every 4th iteration) at or after its end, so the last one holds the block ends
// 25,656 … 99,952: n = (99,952 - 25,656)/4 + 1 = 18,575 draws. Its regularised variance
// v_j = n/(n+5) s_j² + 10⁻³ · 5/(n+5) = 1/M_j estimates σ_j² with the bias (5/(n+5))(10⁻³ - σ_j²) and a
// Monte Carlo error measured on the sampling phase: it runs with the adapted mass, close to the
// last window's (whose own mass came from a window half as long), so its draws have the same law
// and nearly the same autocorrelation; the batch-means SE of their sample variance, SE_N over N
// draws (trusted when the lag-N/100 autocorrelation is below 0.05, as above), scales to
// SE_n = SE_N sqrt(N/n) for the window's n draws. Check |1/M_j - σ_j²| <= 5 SE_n + |bias| for each
// of the 3 coordinates: a false alarm with probability ≈ 3 × 5.7e-7.
TEST_CASE("adapted mass: obabo's warmup brings a wrong mass to 1/σ² per coordinate (Stan's windows)") {
  const auto model = matrix::anisotropic_target();
  const MassPlan& plan = mass_plan("obabo");
  const std::vector<double> ratios = {1.0, 4.0, 0.25};
  std::vector<double> start;
  for (std::size_t j = 0; j < model->dimension(); ++j) start.push_back(ratios[j] / model->posterior_variance(j));
  auto built = build_chain(model, mass_toml(plan, start, "adapt_mass = true\n"), 2024);
  constexpr std::uint64_t warmup = 100'000, iterations = 100'000, block = 4;
  constexpr double n = (99'952.0 - 25'656.0) / block + 1;
  test::Draws draws;
  const auto result = built.chain->run({.warmup = warmup, .iterations = iterations, .thin = block, .eval_every = iterations}, draws);
  REQUIRE_FALSE(result.diverged);
  REQUIRE(result.adapted_mass.size() == model->dimension());
  for (std::size_t j = 0; j < model->dimension(); ++j) {
    const auto x = draws.coordinate(j);
    const Moments sampled = moments(x);
    const double variance = model->posterior_variance(j), adapted = 1.0 / result.adapted_mass[j];
    const double se = sampled.se_variance * std::sqrt(static_cast<double>(x.size()) / n);
    const double bias = 5.0 / (n + 5.0) * std::abs(1e-3 - variance);
    const std::string line = fmt::format("adapted mass [{}]: 1/M = {:.6g} against σ² = {:.6g} ({:+.2f}%, {:+.1f} SE of "
                                         "{:.2f}%); the draws after it: variance {:+.2f}% (SE {:.2f}%), lag-N/100 "
                                         "autocorrelation {:.3f}",
                                         j + 1, adapted, variance, 100 * (adapted / variance - 1),
                                         (adapted - variance) / se, 100 * se / variance,
                                         100 * (sampled.variance / variance - 1), 100 * sampled.se_variance / variance,
                                         sampled.autocorrelation);
    INFO(line);
    CHECK(sampled.long_enough());
    CHECK(std::abs(adapted - variance) <= 5 * se + bias);
    fmt::print("{}\n", line);
  }
}

// ---- A dense mass (issue 17) ----------------------------------------------------------------------
//
// The correlated target (known_posteriors.hpp): N(μ, Σ) in two dimensions, sd (0.1, 10), correlation
// 0.99, so its principal standard deviations are 10.0 and 0.014. No diagonal mass makes both
// directions move at one speed: with M = diag(1/σ²) their frequencies are 1/sqrt(1 ± ρ), 0.71 and 7.1,
// and a leapfrog step h = 0.3 sees hω = 2.1, beyond its stability limit of 2. With
// integrator.metric = "dense" and the matching mass M = Σ⁻¹ (given as its 4 numbers), the whitened
// coordinates z = K⁻¹(θ - μ), KKᵀ = Σ, are independent unit normals moving at frequency 1, like the
// matching diagonal cells' coordinates; the steps are those cells' (mass_plans). The differing
// mass is M' = Σ'⁻¹ with the same sd and correlation 0.95: frequencies sqrt(eig(Σ'Σ⁻¹)) = 0.99 and 2.24.
//
// The exact laws. With mh (mala, obabo, baoab, hmc): N(μ, Σ) for any mass. sgld with M' (M = Σ⁻¹ is the
// case Σ' = Σ): θ' - μ = A(θ - μ) + sqrt(ε) η with A = I - (ε/2)Σ'Σ⁻¹ and η ~ N(0, Σ'), an AR(1) in
// two dimensions with mean μ and stationary covariance S = A S Aᵀ + εΣ', that is
// S = Σ_k A^k (εΣ') (A^k)ᵀ, summed here until A^k has decayed (its eigenvalues are
// 1 - εω²/2 <= 0.95, so 2,000 terms leave less than e^-100); with M = Σ⁻¹ this is Σ/(1 - ε/4),
// sgld_variance's value per whitened coordinate. sghmc with M = Σ⁻¹: each whitened coordinate is the
// diagonal cells' chain with σ² = M = 1, so its law is Σ × sghmc_variance(1, 1, h, γ).
//
// Checks, as judge_exact: both means, both variances and the covariance, each |estimate - exact| <
// 5 SE by batch means (the covariance's from the product series (θ_1 - μ_1)(θ_2 - μ_2), whose mean
// is the covariance since μ is exact), trusted with the lag-n/100 autocorrelation below 0.05 in
// both coordinates. 11 cells × 5 checks: a false alarm with probability ≈ 55 × 5.7e-7 ≈ 3e-5.

namespace {

/// A 2 × 2 symmetric matrix, row by row.
using Matrix2 = std::array<double, 4>;

Matrix2 times(const Matrix2& a, const Matrix2& b) {
  return {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
}
Matrix2 inverse(const Matrix2& a) {
  const double det = a[0] * a[3] - a[1] * a[2];
  return {a[3] / det, -a[1] / det, -a[2] / det, a[0] / det};
}
Matrix2 covariance_of(double sd_1, double sd_2, double correlation) {
  return {sd_1 * sd_1, correlation * sd_1 * sd_2, correlation * sd_1 * sd_2, sd_2 * sd_2};
}

/// sgld's stationary covariance with preconditioner P = M⁻¹ on precision Λ (derived above).
Matrix2 sgld_covariance(const Matrix2& preconditioner, const Matrix2& precision, double epsilon) {
  const Matrix2 pl = times(preconditioner, precision);
  const Matrix2 a = {1.0 - epsilon / 2 * pl[0], -epsilon / 2 * pl[1], -epsilon / 2 * pl[2], 1.0 - epsilon / 2 * pl[3]};
  const Matrix2 a_transposed = {a[0], a[2], a[1], a[3]};
  Matrix2 term = {epsilon * preconditioner[0], epsilon * preconditioner[1], epsilon * preconditioner[2],
                  epsilon * preconditioner[3]};
  Matrix2 sum = {};
  for (int k = 0; k < 2000; ++k) {
    for (int e = 0; e < 4; ++e) sum[e] += term[e];
    term = times(times(a, term), a_transposed);
  }
  return sum;
}

/// Moments of both coordinates and of the centred product, from a chain's draws.
struct JointMoments {
  std::vector<Moments> coordinates;
  Moments product;  // of (θ_1 - μ_1)(θ_2 - μ_2)
};

std::optional<JointMoments> sample_joint(ChainUnderTest& built, std::uint64_t warmup, std::uint64_t iterations,
                                         const matrix::CorrelatedGaussian& model) {
  test::Draws draws;
  const std::uint64_t k = built.block_length;
  const auto result = built.chain->run({.warmup = warmup / k * k, .iterations = iterations / k * k, .thin = k,
                                        .eval_every = iterations / k * k},
                                       draws);
  if (result.diverged) return std::nullopt;
  JointMoments out;
  for (std::size_t j = 0; j < 2; ++j) out.coordinates.push_back(moments(draws.coordinate(j)));
  std::vector<double> product;
  for (const auto& row : draws.rows) product.push_back((row[0] - model.posterior_mean(0)) * (row[1] - model.posterior_mean(1)));
  out.product = moments(product);
  return out;
}

/// judge_exact for the two coordinates, plus the covariance.
Verdict judge_joint(const matrix::CorrelatedGaussian& model, const Matrix2& exact, const JointMoments& run) {
  Target target{"correlated", nullptr, {model.posterior_mean(0), model.posterior_mean(1)}, {exact[0], exact[3]}};
  Verdict verdict = judge_exact(target, run.coordinates);
  const double z = (run.product.mean - exact[1]) / run.product.se_mean;
  const bool passed = std::abs(z) < 5;
  verdict.text += fmt::format(" [cov] {:+.2f}% ({:+.1f} SE){}", 100 * (run.product.mean / exact[1] - 1), z, passed ? "" : " FAIL");
  verdict.passed = verdict.passed && passed;
  return verdict;
}

std::string dense_mass_toml(const MassPlan& plan, const Matrix2& mass, const std::string& extra = "") {
  return mass_toml(plan, std::vector<double>(mass.begin(), mass.end()), "metric = \"dense\"\n" + extra);
}

/// Runs `integrator` (one of mass_plans) on the correlated target with the matching dense mass and,
/// where the exact law is derived above, the differing one.
void run_dense_mass_cells(std::string_view integrator) {
  const auto model = matrix::correlated_target();
  const MassPlan& plan = mass_plan(integrator);
  const Matrix2 sigma = model->covariance(), differing = covariance_of(0.1, 10.0, 0.95);
  for (const bool matching : {true, false}) {
    if (!matching && integrator == "sghmc") continue;  // its law with M' is not derived here
    const Matrix2 inverse_mass = matching ? sigma : differing;
    Matrix2 exact = sigma;
    if (integrator == "sgld") exact = sgld_covariance(inverse_mass, model->precision(), plan.step_size);
    if (integrator == "sghmc")
      for (double& entry : exact) entry *= sghmc_variance(1.0, 1.0, plan.step_size, plan.friction);
    auto built = build_chain(model, dense_mass_toml(plan, inverse(inverse_mass)), 2024);
    const auto run = sample_joint(built, plan.iterations / 10, plan.iterations, *model);
    const Verdict verdict = run ? judge_joint(*model, exact, *run) : Verdict{false, "FAIL diverged"};
    report(fmt::format("correlated {} {} dense mass {} → {}", integrator, plan.corrector,
                       matching ? "Σ⁻¹" : "Σ'⁻¹ (correlation 0.95)", verdict.text),
           verdict.passed);
  }
}

}  // namespace

TEST_CASE("dense mass: sgld on a correlated gaussian") { run_dense_mass_cells("sgld"); }
TEST_CASE("dense mass: mala with mh on a correlated gaussian") { run_dense_mass_cells("mala"); }
TEST_CASE("dense mass: obabo with mh on a correlated gaussian") { run_dense_mass_cells("obabo"); }
TEST_CASE("dense mass: baoab with mh on a correlated gaussian") { run_dense_mass_cells("baoab"); }
TEST_CASE("dense mass: hmc with mh on a correlated gaussian") { run_dense_mass_cells("hmc"); }
TEST_CASE("dense mass: sghmc on a correlated gaussian") { run_dense_mass_cells("sghmc"); }

// The thermostats with a dense mass. sgnht and badodab with M = Σ⁻¹ and exact gradients see, in the
// whitened coordinates, two independent unit normals with the mass 1, where the thermostat's
// derivation below (sgnht's Euler step; BADODAB's bias is of higher order) gives a variance bias of
// -ξ̄h/2 with ξ̄ = A when there is no gradient noise: B = Ah/2 = 2.5 % at h = 0.05, A = 1, relative to
// every entry of Σ. The check allows 2B for the O(h²) terms plus 5 SE on both variances and the
// covariance, and 5 SE on the means. Relaxation takes about 60 steps at this h; 2,000,000
// iterations after 200,000 keep the lag-n/100 autocorrelation below 0.05.
TEST_CASE("dense mass: sgnht and badodab on a correlated gaussian, within the thermostat's O(h) bias") {
  const auto model = matrix::correlated_target();
  const Matrix2 sigma = model->covariance(), mass = inverse(sigma);
  constexpr double h = 0.05, diffusion = 1.0, bound = 2.0 * diffusion * h / 2.0;
  for (const std::string integrator : {"sgnht", "badodab"}) {
    auto built = build_chain(model,
                             fmt::format("[estimator]\nname = \"exact\"\n[integrator]\nname = \"{}\"\nstep_size = {}\n"
                                         "diffusion = {}\nmetric = \"dense\"\nmass = [{}]\n[corrector]\nname = \"none\"\n",
                                         integrator, h, diffusion, fmt::join(mass, ", ")),
                             2024);
    const auto run = sample_joint(built, 200'000, 2'000'000, *model);
    REQUIRE(run);
    std::string line = fmt::format("correlated {} dense mass Σ⁻¹, h = {}:", integrator, h);
    bool passed = run->coordinates[0].long_enough() && run->coordinates[1].long_enough();
    for (std::size_t j = 0; j < 2; ++j) {
      const Moments& m = run->coordinates[j];
      const double mean_z = (m.mean - model->posterior_mean(j)) / m.se_mean, exact = sigma[3 * j];
      passed = passed && std::abs(mean_z) < 5 && std::abs(m.variance - exact) <= bound * exact + 5 * m.se_variance;
      line += fmt::format(" [{}] mean {:+.1f} SE, variance {:+.2f}% (SE {:.2f}%)", j + 1, mean_z, 100 * (m.variance / exact - 1),
                          100 * m.se_variance / exact);
    }
    const Moments& c = run->product;
    passed = passed && std::abs(c.mean - sigma[1]) <= bound * sigma[1] + 5 * c.se_mean;
    line += fmt::format(" [cov] {:+.2f}% (SE {:.2f}%); bound ±{:.1f}% + 5 SE", 100 * (c.mean / sigma[1] - 1),
                        100 * c.se_mean / sigma[1], 100 * bound);
    report(line, passed);
  }
}

// An adapted dense mass. obabo with mh (every 4) on the correlated target from the mass M = I, with
// metric = "dense", adapt_mass and adapt_step_size (the step must first shrink to the narrow
// direction's scale, 0.014, and grow again as the metric whitens it), warmup W = 100,000: Stan's
// windows as in the diagonal test above, so the last one holds n = 18,575 block ends, and its
// regularised covariance v = n/(n+5) S + 10⁻³ · 5/(n+5) I = M⁻¹ estimates Σ with the bias
// (5/(n+5))(10⁻³ I - Σ) and a Monte Carlo error measured, as there, on the sampling phase, which
// runs with nearly the same metric: SE_n = SE_N sqrt(N/n) for the two variances and the
// covariance (the product series' SE). Check |v_ij - Σ_ij| <= 5 SE_n + |bias_ij| for the three
// entries: a false alarm with probability ≈ 3 × 5.7e-7.
TEST_CASE("adapted dense mass: obabo's warmup brings M⁻¹ from I to the posterior covariance (Stan's windows)") {
  const auto model = matrix::correlated_target();
  const MassPlan& plan = mass_plan("obabo");
  auto built = build_chain(model, dense_mass_toml(plan, {1.0, 0.0, 0.0, 1.0}, "adapt_mass = true\nadapt_step_size = true\n"), 2024);
  constexpr std::uint64_t warmup = 100'000, iterations = 100'000, block = 4;
  constexpr double n = (99'952.0 - 25'656.0) / block + 1;
  test::Draws draws;
  const auto result = built.chain->run({.warmup = warmup, .iterations = iterations, .thin = block, .eval_every = iterations}, draws);
  REQUIRE_FALSE(result.diverged);
  REQUIRE(result.adapted_mass.size() == 4);
  const Matrix2 adapted = inverse({result.adapted_mass[0], result.adapted_mass[1], result.adapted_mass[2], result.adapted_mass[3]});
  const Matrix2& sigma = model->covariance();
  std::vector<double> product;
  for (const auto& row : draws.rows) product.push_back((row[0] - model->posterior_mean(0)) * (row[1] - model->posterior_mean(1)));
  const Moments sampled[3] = {moments(draws.coordinate(0)), moments(product), moments(draws.coordinate(1))};
  const double scale = std::sqrt(static_cast<double>(draws.rows.size()) / n);
  constexpr std::size_t entries[3] = {0, 1, 3};  // Σ_11, Σ_12, Σ_22 row by row; sampled[] in that order
  for (std::size_t e = 0; e < 3; ++e) {
    const std::size_t at = entries[e];
    const double exact = sigma[at], se = (e == 1 ? sampled[e].se_mean : sampled[e].se_variance) * scale;
    const double bias = 5.0 / (n + 5.0) * std::abs((e == 1 ? 0.0 : 1e-3) - exact);
    const std::string line = fmt::format("adapted dense mass, M⁻¹ entry ({}, {}): {:.6g} against Σ's {:.6g} ({:+.2f}%, {:+.1f} "
                                         "SE of {:.2f}%); step {:.4g}; lag-N/100 autocorrelation {:.3f}",
                                         at / 2 + 1, at % 2 + 1, adapted[at], exact, 100 * (adapted[at] / exact - 1),
                                         (adapted[at] - exact) / se, 100 * se / exact,
                                         result.adapted_step_size.value_or(0.0), sampled[e].autocorrelation);
    INFO(line);
    CHECK(sampled[e].long_enough());
    CHECK(std::abs(adapted[at] - exact) <= 5 * se + bias);
    fmt::print("{}\n", line);
  }
}

// ---- The Fisher mass (issue 17) -------------------------------------------------------------------
//
// integrator.mass = "fisher" computes M = Σ_i ∇f_i(θ_0)∇f_i(θ_0)ᵀ + rI at the point the chain starts from
// once its estimator has prepared (here estimator exact, so θ_0 = 0, the model's start). The split
// correlated target (known_posteriors.hpp) has the posterior N(μ, Σ) of the dense cells above, from
// N = 8 items whose empirical Fisher information has the closed form F(θ) = Σ⁻¹ + Σ⁻¹(θ - μ)(θ - μ)ᵀΣ⁻¹/N,
// derived there from how the items are placed, not from their gradients.
//
// The value. The mass the chain reports (adapted_mass: M read back from the factor it runs with) is
// F(0) + rI, dense and diagonal (then F's diagonal), from dense and from sparse per-item gradients,
// to 10⁻⁹ of the largest entry: the Cholesky round trip loses about cond(M) ≈ 10⁴ ulps, and the start's
// own term Σ⁻¹μμᵀΣ⁻¹/N is 3.1 and 3·10⁻⁴ on the diagonal against a tolerance of 5·10⁻⁶.
//
// The law. sgld (uncorrected: its law depends on M, S = Σ_k A^k (εM⁻¹) (A^k)ᵀ with A = I - (ε/2)M⁻¹Σ⁻¹,
// as for the dense cells) and mala, obabo with mh (exact for any M: N(μ, Σ)), with M = F(0) + rI at
// the dense cells' steps; judged as they are (5 SE on both means, both variances and the
// covariance). r = 0.01 is the weakest principal precision (1/10²): a ridge far above it would make
// that direction's whitened frequency sqrt(0.01/(0.01 + r)) small, and the chain too slow for the
// lag-n/100 criterion. With M = I instead (the mass the chain starts from) sgld's step would be unstable.

namespace {

Matrix2 fisher_mass_at_start(const matrix::CorrelatedGaussian& model, double ridge) {
  Matrix2 mass = model.fisher_information({0.0, 0.0});
  mass[0] += ridge;
  mass[3] += ridge;
  return mass;
}

std::string fisher_toml(const MassPlan& plan, bool dense, double ridge) {
  return mass_toml(plan, "\"fisher\"", fmt::format("metric = \"{}\"\nmass_ridge = {}\n", dense ? "dense" : "diagonal", ridge));
}

}  // namespace

TEST_CASE("fisher mass: the chain's mass is F(θ₀) + rI, dense and diagonal, from dense and sparse item gradients") {
  constexpr double ridge = 0.5;
  for (const bool sparse : {false, true})
    for (const bool dense : {true, false}) {
      const auto model = matrix::split_correlated_target(sparse);
      auto built = build_chain(model, fisher_toml(mass_plan("obabo"), dense, ridge), 2024);
      test::Draws draws;
      const auto result = built.chain->run({.iterations = 4, .thin = 4, .eval_every = 4}, draws);
      const Matrix2 exact = fisher_mass_at_start(*model, ridge);
      const std::vector<double> expected = dense ? std::vector<double>(exact.begin(), exact.end()) : std::vector{exact[0], exact[3]};
      REQUIRE(result.adapted_mass.size() == expected.size());
      for (std::size_t e = 0; e < expected.size(); ++e) {
        INFO((sparse ? "sparse" : "dense") << " item gradients, " << (dense ? "dense" : "diagonal") << " mass, entry " << e
                                           << ": " << result.adapted_mass[e] << " against " << expected[e]);
        CHECK(std::abs(result.adapted_mass[e] - expected[e]) <= 1e-9 * exact[0]);
      }
    }
}

TEST_CASE("fisher mass: sgld, mala and obabo with a dense Fisher mass sample their exact laws") {
  const auto model = matrix::split_correlated_target();
  constexpr double ridge = 0.01;
  const Matrix2 mass = fisher_mass_at_start(*model, ridge), sigma = model->covariance();
  for (const std::string integrator : {"sgld", "mala", "obabo"}) {
    const MassPlan& plan = mass_plan(integrator);
    const Matrix2 exact = integrator == "sgld" ? sgld_covariance(inverse(mass), model->precision(), plan.step_size) : sigma;
    auto built = build_chain(model, fisher_toml(plan, true, ridge), 2024);
    const auto run = sample_joint(built, plan.iterations / 10, plan.iterations, *model);
    const Verdict verdict = run ? judge_joint(*model, exact, *run) : Verdict{false, "FAIL diverged"};
    report(fmt::format("correlated (8 items) {} {} Fisher mass → {}", integrator, plan.corrector, verdict.text), verdict.passed);
  }
}

// ---- pSGLD and SGNHT (issue 17, item 3) -----------------------------------------------------------
//
// The matrix cells above check both against the posterior with the generic bias bound. The tests
// below check each against an exact law with the 5 SE rule (a false alarm with probability about
// 5.7e-7 per check), on in-test Gaussian targets with exact gradients unless said otherwise.

namespace {

struct ThinnedRun {
  std::vector<Moments> moments;
  sgmcmc::ChainResult result;
};

/// Runs `built` for `iterations` after `warmup`, keeping every `thin`-th draw (long 1-D chains would
/// otherwise hold tens of millions of draws).
ThinnedRun run_thinned(ChainUnderTest& built, std::uint64_t warmup, std::uint64_t iterations, std::uint64_t thin) {
  test::Draws draws;
  ThinnedRun out;
  out.result = built.chain->run({.warmup = warmup, .iterations = iterations, .thin = thin, .eval_every = iterations}, draws);
  if (!out.result.diverged)
    for (std::size_t j = 0; j < built.chain->state().theta.size(); ++j) out.moments.push_back(moments(draws.coordinate(j)));
  return out;
}

/// A 1-D Gaussian N(ȳ, 1): N = 20 items y_i = spread · ξ_i from a fixed stream, f_i = (θ - y_i)²/(2N).
/// Each item's gradient N∇f_i = θ - y_i, so a minibatch of one item has gradient noise of variance
/// σ_g² = (1/N) Σ (y_i - ȳ)², the spread of the items, with the posterior N(ȳ, 1) whatever it is.
struct UnitGaussian {
  std::shared_ptr<const matrix::AnisotropicGaussian> model;
  double noise;  // σ_g²
};

UnitGaussian unit_gaussian(double spread) {
  sgmcmc::Rng rng(19, 7);
  std::vector<double> y(20);
  for (double& value : y) value = spread * rng.normal();
  const double mean = test::mean(y);
  double noise = 0.0;
  for (double value : y) noise += (value - mean) * (value - mean) / static_cast<double>(y.size());
  return {std::make_shared<matrix::AnisotropicGaussian>(std::vector<double>{1.0}, std::move(y)), noise};
}

}  // namespace

// pSGLD, preconditioner frozen after the warmup (freeze_after_warmup, the default). The sampling
// phase is then sgld with the constant mass M = λ + sqrt(V) that the chain reports (adapted_mass),
// so on the anisotropic target (σ = 0.1, 1, 10; N = 20) its exact law is sgld's AR(1):
// mean ȳ_j, variance σ_j²/(1 - εG_jλ_j/4) with G_j = 1/M_j, λ_j = 1/σ_j² (sgld_variance). RMSprop's
// G_j ≈ 1/sqrt(E ḡ_j²) = N σ_j makes the effective step εG_jλ_j = εN/σ_j: with ε = 0.02/N it is
// 0.2, 0.02, 0.002 (a variance 5 % above σ² on the first coordinate, which the reference includes;
// without the preconditioner the three scales 100× apart would need 10⁴× different steps).
// α = 0.9999: V averages over 10,000 steps, ten relaxation times 2/(εGλ) of the slowest coordinate,
// so the frozen G is within tens of % of N σ_j (checked within a factor 4; the reference uses the
// frozen value itself). V starts at 0, so RMSprop's first steps are large (G ≈ 1/(sqrt(1 - α)|ḡ|)
// at the first step; a drift bounded by (ε/2)N/sqrt(1 - α) = 1, ten sd of the narrowest coordinate): a warmup of 200,000
// steps leaves e^-20 of that start in the frozen V. 1,000,000 iterations after it: lag-10,000
// autocorrelation e^-10 for the slowest coordinate. 3 coordinates × 2 moments at 5 SE.
TEST_CASE("psgld with its preconditioner frozen after the warmup samples sgld's exact law with mass λ + sqrt(V)") {
  const auto model = matrix::anisotropic_target();
  const double items = static_cast<double>(model->num_items()), epsilon = 0.02 / items;
  auto built = build_chain(model,
                           fmt::format("[estimator]\nname = \"exact\"\n[integrator]\nname = \"psgld\"\nstep_size = {}\n"
                                       "alpha = 0.9999\n[corrector]\nname = \"none\"\n",
                                       epsilon),
                           2024);
  const auto run = run_thinned(built, 200'000, 1'000'000, 1);
  REQUIRE_FALSE(run.result.diverged);
  const auto& mass = run.result.adapted_mass;
  REQUIRE(mass.size() == model->dimension());
  Target target{"anisotropic", model, {}, {}};
  for (std::size_t j = 0; j < model->dimension(); ++j) {
    const double variance = model->posterior_variance(j), sigma = std::sqrt(variance);
    target.mean.push_back(model->posterior_mean(j));
    target.variance.push_back(sgld_variance(variance, mass[j], epsilon));
    const double ratio = 1.0 / (mass[j] * items * sigma);  // G_j / (N σ_j)
    INFO("coordinate " << j + 1 << ": G = " << 1.0 / mass[j] << ", N σ = " << items * sigma);
    CHECK(ratio > 0.25);
    CHECK(ratio < 4.0);
    fmt::print("psgld frozen [{}]: G/(Nσ) = {:.3f}, effective step εGλ = {:.4f}, exact variance {:+.2f}% from σ²\n", j + 1,
               ratio, epsilon / (mass[j] * variance), 100 * (target.variance[j] / variance - 1));
  }
  const Verdict verdict = judge_exact(target, run.moments);
  INFO(verdict.text);
  CHECK(verdict.passed);
  fmt::print("psgld frozen on the anisotropic target → {}\n", verdict.text);
}

// pSGLD's bias without Γ, measured. With α = 0 and no freezing, V = ḡ(θ)² at every step, so
// G(θ) = 1/(λ + |ḡ(θ)|) is a function of the current θ and the update is the Euler–Maruyama step
// (ε = 2dt) of dθ = -G U' dt + sqrt(2G) dW, whose stationary density solves (G p)' = -U' G p:
// p ∝ exp(-U)/G, not exp(-U) (Li et al. 2016's Γ = G' is the drift that would restore it). On the
// unit Gaussian (spread 1, exact gradients) ḡ = (θ - ȳ)/N; with λ = 1/N, 1/G = (1 + |x|)/N for
// x = θ - ȳ, so p(x) ∝ (1 + |x|) exp(-x²/2): mean ȳ, variance (1 + E|z|³)/(1 + E|z|) with
// E|z| = sqrt(2/π), E|z|³ = 2 sqrt(2/π): 1.4437, 44 % above the posterior's 1. The discretisation
// adds sgld's relative bias εGλ/4 with λ = 1 and G ≤ N: at ε = 0.02/N below 0.5 %; the check
// allows 1 % for it, plus 5 SE. 4,000,000 iterations (thinned by 4) after 400,000: the relaxation
// time 2/(εG) is about 200 steps, the lag-10,000 autocorrelation negligible. 2 moments.
// This bias does not shrink with ε, so a chain refuses a V that never freezes (checked first);
// the law is measured by making the integrator's steps here, as such a chain would.
TEST_CASE("psgld adapting its preconditioner at every step (alpha = 0) samples exp(-U)/G, the bias Γ would remove") {
  const auto model = unit_gaussian(1.0).model;
  const double items = static_cast<double>(model->num_items()), epsilon = 0.02 / items;
  const std::string toml = fmt::format("[estimator]\nname = \"exact\"\n[integrator]\nname = \"psgld\"\nstep_size = {}\n"
                                       "alpha = 0.0\nlambda = {}\nfreeze_after_warmup = false\n[corrector]\nname = \"none\"\n",
                                       epsilon, 1.0 / items);
  auto built = build_chain(model, toml, 2024);
  test::Draws refused;
  CHECK_THROWS_WITH(built.chain->run({.warmup = 4, .iterations = 4, .thin = 4, .eval_every = 4}, refused),
                    Catch::Matchers::Contains("freeze_after_warmup = false"));
  auto config = sgmcmc::parse_config(toml, "matrix.toml");
  auto integrator = sgmcmc::make_integrator(sgmcmc::SectionReader(config["integrator"]), model->num_items());
  auto estimator = sgmcmc::make_estimator(sgmcmc::SectionReader(config["estimator"]), *model);
  auto workspace = model->make_workspace();
  sgmcmc::Rng rng(2024, sgmcmc::chain_stream(0));
  sgmcmc::Cost cost;
  sgmcmc::ChainState state;
  integrator->initialise(state, model->dimension(), rng);  // θ = 0
  sgmcmc::ChainContext context{*model, *workspace, rng, cost};
  estimator->prepare(state.theta, context);
  constexpr std::uint64_t warmup = 400'000, iterations = 4'000'000, thin = 4;
  std::vector<double> kept;
  for (std::uint64_t t = 1; t <= warmup + iterations; ++t) {
    state.iteration = context.iteration = t;
    integrator->step(state, *estimator, context);
    if (t > warmup && (t - warmup) % thin == 0) kept.push_back(state.theta[0]);
  }
  REQUIRE(std::isfinite(kept.back()));
  CHECK(integrator->adapted_mass().empty());  // never frozen
  const double e1 = std::sqrt(2.0 / std::numbers::pi), limit = (1.0 + 2.0 * e1) / (1.0 + e1);
  const Moments m = moments(kept);
  const double mean_z = (m.mean - model->posterior_mean(0)) / m.se_mean;
  const double variance_error = std::abs(m.variance - limit);
  const std::string line = fmt::format("psgld alpha = 0: mean {:+.4f} ({:+.1f} SE), variance {:.4f} against exp(-U)/G's {:.4f} "
                                       "({:+.2f}%, SE {:.2f}%) and the posterior's 1; lag-n/100 autocorrelation {:.3f}",
                                       m.mean - model->posterior_mean(0), mean_z, m.variance, limit,
                                       100 * (m.variance / limit - 1), 100 * m.se_variance / limit, m.autocorrelation);
  INFO(line);
  CHECK(m.long_enough());
  CHECK(std::abs(mean_z) < 5);
  CHECK(variance_error <= 0.01 * limit + 5 * m.se_variance);
  fmt::print("{}\n", line);
}

// SGNHT's thermostat absorbs the minibatch noise. On the unit Gaussian with items spread 10
// (σ_g² ≈ 100 for a minibatch of one, measured from the data) at h = 0.01, A = 1 (M = 1, T = 1):
// in a stationary chain E[ξ' - ξ] = 0 holds exactly, so E[p'²] = T, and then θ's stationarity,
// E[θ'²] = E[θ²] with θ' = θ + hp', gives E[θp'] = -hT/2 and E[θ'p'] = hT/2; the momentum update
// (its noise independent of θ, ξ independent of (θ, p) up to O(h)) gives
// E[θp'] = (1 - ξ̄h) E[θp] - hλ E[θ²], so λ E[θ²] = T(1 - ξ̄h/2) + O(h²) with λ = 1: a variance bias
// of -ξ̄h/2, where ξ̄ = A + hσ_g²/2 + O(h) (the momentum's balance of injected and dissipated
// energy). That is B = (1 + 0.5) × 0.005 = 0.75 %; the check allows 2B for the O(h²) terms, plus
// 5 SE. sghmc with the same friction γ = A, without the thermostat, is heated by hσ_g²/(2γ) ≈ 50 %
// (its momentum noise per step has variance 2γh + h²σ_g² instead of 2γh, which scales its
// Gaussian chain's variance by 1 + hσ_g²/(2γ)): run alongside, it must fall outside the bound, or
// the check could not tell a heated chain from a thermostatted one.
// 10,000,000 iterations (thinned by 10) after 1,000,000: relaxation about 300 steps.
namespace {

/// Runs `thermostatted` (diffusion A) and `fixed` (friction γ = A, no thermostat) on the unit
/// Gaussian with items spread 10, minibatches of one item, h = 0.01, and checks the first against
/// the bound derived above; the second must fall outside it.
void check_thermostat_absorbs_noise(const std::string& thermostatted, const std::string& fixed_friction) {
  const auto [model, noise] = unit_gaussian(10.0);
  const double h = 0.01, diffusion = 1.0;
  const double bound = 2.0 * (diffusion + h * noise / 2.0) * h / 2.0;
  const auto toml = [&](const std::string& integrator, const std::string& key) {
    return fmt::format("[estimator]\nname = \"minibatch\"\nbatch_size = 1\nreplacement = true\n[integrator]\nname = \"{}\"\n"
                       "step_size = {}\n{} = {}\n[corrector]\nname = \"none\"\n",
                       integrator, h, key, diffusion);
  };
  auto with = build_chain(model, toml(thermostatted, "diffusion"), 2024);
  auto without = build_chain(model, toml(fixed_friction, "friction"), 2024);
  const auto thermostat = run_thinned(with, 1'000'000, 10'000'000, 10), fixed = run_thinned(without, 1'000'000, 10'000'000, 10);
  REQUIRE_FALSE(thermostat.result.diverged);
  REQUIRE_FALSE(fixed.result.diverged);
  const Moments &m = thermostat.moments[0], &f = fixed.moments[0];
  const double mean_z = (m.mean - model->posterior_mean(0)) / m.se_mean;
  const std::string line =
      fmt::format("{}, σ_g² = {:.1f}, h = {}: mean {:+.4f} ({:+.1f} SE), variance {:+.2f}% (SE {:.2f}%, bound ±{:.2f}% + 5 SE), "
                  "lag-n/100 autocorrelation {:.3f}; {} γ = A: variance {:+.1f}% (SE {:.1f}%, expected about {:+.0f}%)",
                  thermostatted, noise, h, m.mean - model->posterior_mean(0), mean_z, 100 * (m.variance - 1),
                  100 * m.se_variance, 100 * bound, m.autocorrelation, fixed_friction, 100 * (f.variance - 1),
                  100 * f.se_variance, 100 * h * noise / (2 * diffusion));
  INFO(line);
  CHECK(m.long_enough());
  CHECK(std::abs(mean_z) < 5);
  CHECK(std::abs(m.variance - 1.0) <= bound + 5 * m.se_variance);
  CHECK(std::abs(f.variance - 1.0) > bound + 5 * m.se_variance);  // the check tells a heated chain apart
  fmt::print("{}\n", line);
}

}  // namespace

TEST_CASE("sgnht's thermostat absorbs minibatch noise: the variance is within its O(h) bias where sghmc's is heated") {
  check_thermostat_absorbs_noise("sgnht", "sghmc");
}

// BADODAB, the same dynamics split B A D O D A B, in the same setting against baoab at γ = A, whose
// kicks add the same noise h²σ_g² per step to a momentum that its O step dissipates at the rate
// 1 - e^{-2γh} ≈ 2γh: heated by about hσ_g²/(2γ) too. The derivation above used sgnht's Euler
// step; Leimkuhler & Shang (2016) show BADODAB's configurational bias is of higher order for exact
// gradients, so sgnht's first-order bound B is conservative here (not tight), and the check is
// that the thermostat removes the heating of the noise, which baoab alongside shows to be ≈ 60 %.
TEST_CASE("badodab's thermostat absorbs minibatch noise: the variance is within sgnht's bound where baoab's is heated") {
  check_thermostat_absorbs_noise("badodab", "baoab");
}

// ---- An adapted step size (issue 17, item 5) -------------------------------------------------------
//
// integrator.adapt_step_size: dual averaging of the step (Hoffman & Gelman 2014, Alg. 5) to the
// target acceptance δ during the warmup, then the step frozen at x̄. Each MH integrator of the mass
// plans above (hmc stands for leapfrog too: the same catalogue parameters and class), on the
// anisotropic target with the matching mass 1/σ² (every coordinate then has frequency 1), exact
// gradients, started from 3× the plan's step (so the adaptation has to move it).
//
// (1) The exact law. After the warmup the kernel is the fixed MH kernel at the frozen step, so the
// sampling phase must sample the posterior: mean and variance of every coordinate within 5 SE, as
// judge_exact above (4 integrators × 3 coordinates × 2 moments = 24 checks, ≈ 1.4e-5 false alarms).
// Every draw must carry the frozen step (the draws' step_size equals the reported adapted step):
// a step that kept adapting would not be a fixed kernel.
//
// (2) The acceptance rate. C = 16 chains of independent streams, W blocks of warmup, then n = 10,000
// blocks whose mean acceptance probability ā_k (ChainResult::mean_accept_stat) each chain reports.
// The ā_k are independent, so their mean ā has the standard error SE = sd(ā_k)/sqrt(C) (the spread
// of whole chains: the sampling phase's Monte Carlo error and the adaptation's, both); (ā - E ā)/SE
// is t-distributed with 15 degrees of freedom, |t| > 5 with probability 1.6e-4.
// E ā is δ only as W → ∞. Dual averaging is a stochastic approximation of the root of
// α(x) = δ (x = log h) with gain 1/(γ sqrt(m)) at the m-th test; its iterates scatter around the root
// with a variance of order σ_α²/(β γ sqrt(W)) (σ_α² the variance of one test's α, β = |dα/dx|), so
// the frozen x̄ misses the root by a bias of the same order, W^{-1/2}: through α's curvature
// (δ = E α(x_m) ≈ α(x*) + α''(x*) var(x_m)/2) and through the correlation of the chain's state with
// the step it is moving. Its constant depends on the integrator and target (measured here: about
// 0.01 at W = 20,000, either sign), so the check is the rate, as the uncorrected matrix cells check
// a discretisation bias: with b(W) = ā(W) - δ,
//   |b(4W)| <= 0.75 |b(W)| + 5 (SE(4W) + 0.75 SE(W)),   W = 5,000 blocks,
// where b(4W) ≈ b(W)/2 for a correct adaptation, 0.75 leaving room for the next order; a step that
// is not driven to α = δ (wrong sign, a wrong target, freezing another value) leaves a bias that
// does not halve. The noise term is exceeded with probability < 2 × 1.6e-4 per integrator.

namespace {

struct AdaptPlan {
  std::string_view integrator;
};
constexpr AdaptPlan adapt_plans[] = {{"mala"}, {"obabo"}, {"baoab"}, {"hmc"}};

/// The anisotropic target's [estimator]/[integrator]/[corrector] for `integrator` with the matching
/// mass, its plan's step × 3 and adapt_step_size.
std::string adapt_toml(std::shared_ptr<const matrix::AnisotropicGaussian> model, std::string_view integrator) {
  MassPlan plan = *std::find_if(std::begin(mass_plans), std::end(mass_plans),
                                [&](const MassPlan& p) { return p.integrator == integrator; });
  plan.step_size *= 3;
  std::vector<double> mass;
  for (std::size_t j = 0; j < model->dimension(); ++j) mass.push_back(1.0 / model->posterior_variance(j));
  return mass_toml(plan, mass, "adapt_step_size = true\n");
}

}  // namespace

TEST_CASE("adapted step: mala, obabo, baoab and hmc with mh sample the exact law with the step frozen after the warmup") {
  const auto model = matrix::anisotropic_target();
  for (const AdaptPlan& adapt : adapt_plans) {
    auto built = build_chain(model, adapt_toml(model, adapt.integrator), 2024);
    const std::uint64_t k = built.block_length, warmup = 20'000 * k;
    const std::uint64_t iterations = (adapt.integrator == "hmc" ? 100'000 : 400'000) / k * k;
    test::Draws draws;
    const auto result = built.chain->run({.warmup = warmup, .iterations = iterations, .thin = k, .eval_every = iterations}, draws);
    REQUIRE_FALSE(result.diverged);
    REQUIRE(result.adapted_step_size.has_value());
    const double step = *result.adapted_step_size;
    const bool frozen = std::all_of(draws.step_sizes.begin(), draws.step_sizes.end(), [&](double s) { return s == step; });
    std::vector<Moments> run;
    for (std::size_t j = 0; j < model->dimension(); ++j) run.push_back(moments(draws.coordinate(j)));
    Target target{"anisotropic", model, {}, {}};
    for (std::size_t j = 0; j < model->dimension(); ++j) {
      target.mean.push_back(model->posterior_mean(j));
      target.variance.push_back(model->posterior_variance(j));
    }
    const Verdict verdict = judge_exact(target, run);
    const std::string line = fmt::format("adapted step {} mh: step {:.4g}, acceptance {:.3f}, every draw at it: {} → {}",
                                         adapt.integrator, step, result.mean_accept_stat, frozen, verdict.text);
    INFO(line);
    CHECK(frozen);
    CHECK(verdict.passed);
    fmt::print("{}\n", line);
  }
}

TEST_CASE("adapted step: the sampling phase's acceptance rate goes to the target acceptance as W^{-1/2}, over 16 chains") {
  const auto model = matrix::anisotropic_target();
  constexpr double delta = 0.8;  // the default target_acceptance
  constexpr int chains = 16;
  constexpr std::uint64_t short_warmup = 5'000, blocks = 10'000;  // in blocks
  for (const AdaptPlan& adapt : adapt_plans) {
    double bias[2], se[2];
    for (const int longer : {0, 1}) {
      const std::uint64_t warmup_blocks = short_warmup * (longer ? 4 : 1);
      std::vector<double> acceptance;
      for (int c = 0; c < chains; ++c) {
        auto config = sgmcmc::parse_config(adapt_toml(model, adapt.integrator), "matrix.toml");
        auto chain = sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(2024, sgmcmc::chain_stream(static_cast<std::uint64_t>(c))));
        const std::uint64_t k = chain->corrector().block_length();
        test::Draws draws;
        const auto result = chain->run(
            {.warmup = warmup_blocks * k, .iterations = blocks * k, .thin = blocks * k, .eval_every = blocks * k}, draws);
        REQUIRE_FALSE(result.diverged);
        REQUIRE(result.blocks == blocks);
        acceptance.push_back(result.mean_accept_stat);
      }
      bias[longer] = test::mean(acceptance) - delta;
      se[longer] = std::sqrt(test::variance(acceptance) / chains);
    }
    const bool shrinks = std::abs(bias[1]) <= 0.75 * std::abs(bias[0]) + 5 * (se[1] + 0.75 * se[0]);
    const std::string line = fmt::format("adapted step {} mh: acceptance - δ over {} chains {:+.4f} (SE {:.4f}) after W = {} "
                                         "blocks of warmup, {:+.4f} (SE {:.4f}) after 4W{}",
                                         adapt.integrator, chains, bias[0], se[0], short_warmup, bias[1], se[1],
                                         shrinks ? "" : ": NOT shrinking");
    INFO(line);
    CHECK(shrinks);
    fmt::print("{}\n", line);
  }
}
