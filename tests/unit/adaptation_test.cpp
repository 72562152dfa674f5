// The warmup's adaptation (sgmcmc.adaptation) on its own, driving an integrator that only records
// what it is told: the step controller against an acceptance curve whose fixed point is known
// exactly, the mass adapter against the windows' sample (co)variances computed apart.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

import sgmcmc;

namespace {

/// An integrator that moves nothing and records what the adaptation sets: the step in use and
/// each window's mass.
class RecordingIntegrator final : public sgmcmc::Integrator {
public:
  explicit RecordingIntegrator(sgmcmc::AdaptationSettings settings) : settings_(settings), step_(settings.first_step) {}
  void step(sgmcmc::ChainState&, sgmcmc::Estimator&, sgmcmc::ChainContext&) override {}
  double step_size() const override { return step_; }
  sgmcmc::AdaptationSettings adaptation() const override { return settings_; }
  void set_step_size(double step) override { step_ = step; }
  void set_adapted_mass(std::vector<double> adapted, sgmcmc::ChainState&) override { masses.push_back(std::move(adapted)); }
  std::vector<std::vector<double>> masses;

private:
  sgmcmc::AdaptationSettings settings_;
  double step_;
};

}  // namespace

// A synthetic acceptance curve α(h) = exp(-h/h*): the step with α(h) = δ is h_δ = h* log(1/δ)
// exactly. Dual averaging (Hoffman & Gelman 2014, Alg. 5) does not land on it exactly after M
// updates: where log h_m has settled at x*, x_m = μ - (sqrt(m)/γ) H̄_m holds only if
// S_m = (m + t₀) H̄_m = γ (μ - x*) (m + t₀)/sqrt(m), so each update's δ - α_m = S_m - S_{m-1} ≈
// γ (μ - x*)/(2 sqrt(m)) (up to O(t₀/m)): the acceptance stays below δ by that much when the
// start was above h_δ (μ = log(10 h₀) > x*), above it when below. The test asks the frozen step
// h̄_M to have α(h̄_M) - δ within half of that prediction (the curve is deterministic: no Monte
// Carlo error; the rest is the averaging's lag and the O(t₀/m) terms, 10 % of it or less for
// M = 5,000 here). A wrong γ, t₀, sign or μ misses by more: at γ = 0.1 the prediction doubles.
TEST_CASE("adaptation: dual averaging freezes the step where a known acceptance curve meets the target, to the rate the recursion predicts") {
  constexpr double h_star = 0.1, delta = 0.8;
  constexpr std::uint64_t warmup = 5000;
  const double h_delta = h_star * std::log(1.0 / delta);
  for (const double h0 : {1.0, 0.001}) {
    INFO("h0 = " << h0);
    RecordingIntegrator integrator({.step = {.adapt = true, .target_acceptance = delta}, .first_step = h0});
    sgmcmc::Adaptation adaptation(integrator, true);
    sgmcmc::ChainState state;
    for (std::uint64_t m = 1; m <= warmup; ++m) {
      state.iteration = m;
      sgmcmc::Decision decision;
      decision.accept_stat = std::exp(-integrator.step_size() / h_star);
      adaptation.after_block(state, warmup, decision);
      CHECK(adaptation.adapted_step_size().has_value() == (m == warmup));
    }
    REQUIRE(adaptation.adapted_step_size());
    const double frozen = *adaptation.adapted_step_size();
    CHECK(integrator.step_size() == frozen);
    const double predicted = -sgmcmc::DualAveraging::gamma * std::log(10.0 * h0 / h_delta) / (2.0 * std::sqrt(double(warmup)));
    const double missed = std::exp(-frozen / h_star) - delta;
    INFO("α(h̄) - δ = " << missed << ", predicted " << predicted << "; h̄ = " << frozen << ", h_δ = " << h_delta);
    CHECK(std::abs(missed - predicted) <= 0.5 * std::abs(predicted));
    // After the warmup the step stays frozen, whatever the acceptance.
    state.iteration = warmup + 1;
    sgmcmc::Decision reject;
    reject.accept_stat = 0.0;
    adaptation.after_block(state, warmup, reject);
    CHECK(integrator.step_size() == frozen);
  }
}

namespace {

/// The window's sample covariance of coordinates i and j, two-pass (mean first), divisor n - 1.
double sample_covariance(const std::vector<std::vector<double>>& draws, std::size_t i, std::size_t j) {
  const double n = static_cast<double>(draws.size());
  double mean_i = 0.0, mean_j = 0.0;
  for (const auto& draw : draws) {
    mean_i += draw[i] / n;
    mean_j += draw[j] / n;
  }
  double sum = 0.0;
  for (const auto& draw : draws) sum += (draw[i] - mean_i) * (draw[j] - mean_j);
  return sum / (n - 1.0);
}

}  // namespace

// Stan's regularised window estimate, as adapt_mass documents it (runners/README.md, MassAdaptation):
// diagonal M_j = 1/(n/(n + 5) s_j² + 10⁻³·5/(n + 5)), dense M⁻¹ = n/(n + 5) S + 10⁻³·5/(n + 5) I, from
// the n draws of the window alone. The windows for a warmup of 100 with intervals 10, 5, 5 close
// at 15, 25, 45 and 95 (the windows test of integrators_test), so they hold the draws 11-15,
// 16-25, 26-45 and 46-95. The reference is computed apart (two-pass, not the adapter's Welford
// updates): 1e-12 relative covers the two orders of summation.
TEST_CASE("adaptation: each window's mass is the regularised sample (co)variance of that window's draws, diagonal and dense") {
  constexpr std::uint64_t warmup = 100;
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> windows{{11, 15}, {16, 25}, {26, 45}, {46, 95}};
  std::vector<std::vector<double>> draws(warmup + 1);  // draws[k]: θ after iteration k
  sgmcmc::Rng rng(11, 3);
  for (std::uint64_t k = 1; k <= warmup; ++k) {
    const double a = rng.normal(), b = rng.normal();
    draws[k] = {3.0 + 2.0 * a, -1.0 + 0.5 * (0.6 * a + 0.8 * b)};  // correlated, of unequal scales
  }
  for (const bool dense : {false, true}) {
    INFO((dense ? "dense" : "diagonal"));
    RecordingIntegrator integrator(
        {.mass = true, .dense = dense, .windows = {.init_buffer = 10, .window = 5, .term_buffer = 5}});
    sgmcmc::Adaptation adaptation(integrator, true);
    sgmcmc::ChainState state;
    for (std::uint64_t k = 1; k <= warmup; ++k) {
      state.iteration = k;
      state.theta = draws[k];
      adaptation.after_block(state, warmup, sgmcmc::Decision{});
    }
    REQUIRE(integrator.masses.size() == windows.size());
    for (std::size_t w = 0; w < windows.size(); ++w) {
      const std::vector<std::vector<double>> window(draws.begin() + windows[w].first, draws.begin() + windows[w].second + 1);
      const double n = static_cast<double>(window.size()), weight = n / (n + 5.0), shrinkage = 1e-3 * 5.0 / (n + 5.0);
      std::vector<double> expected;
      if (dense)
        for (std::size_t i = 0; i < 2; ++i)
          for (std::size_t j = 0; j < 2; ++j) expected.push_back(weight * sample_covariance(window, i, j) + (i == j ? shrinkage : 0.0));
      else
        for (std::size_t j = 0; j < 2; ++j) expected.push_back(1.0 / (weight * sample_covariance(window, j, j) + shrinkage));
      const auto& adapted = integrator.masses[w];
      REQUIRE(adapted.size() == expected.size());
      for (std::size_t e = 0; e < expected.size(); ++e) {
        INFO("window " << w + 1 << " (n = " << n << "), entry " << e << ": " << adapted[e] << " against " << expected[e]);
        CHECK_THAT(adapted[e], Catch::Matchers::WithinRel(expected[e], 1e-12));
      }
    }
  }
}

namespace {

/// An integrator that moves nothing, at temperature T, and reports as its mass the last one the
/// score-based adaptation set (starting from `start`), as ScheduledIntegrator::adapted_mass does.
class RecordingPrecisionIntegrator final : public sgmcmc::Integrator {
public:
  RecordingPrecisionIntegrator(sgmcmc::AdaptationSettings settings, double temperature, std::vector<double> start)
      : settings_(settings), temperature_(temperature), mass_(std::move(start)) {}
  void step(sgmcmc::ChainState&, sgmcmc::Estimator&, sgmcmc::ChainContext&) override {}
  double step_size() const override { return 0.1; }
  double temperature() const override { return temperature_; }
  sgmcmc::AdaptationSettings adaptation() const override { return settings_; }
  void set_adapted_mass(std::vector<double>, sgmcmc::ChainState&) override { stan_calls++; }
  void set_adapted_precision(std::vector<double> mass, sgmcmc::ChainState&) override {
    mass_ = mass;
    masses.push_back(std::move(mass));
  }
  std::vector<double> adapted_mass() const override { return mass_; }
  std::vector<std::vector<double>> masses;
  int stan_calls = 0;

private:
  sgmcmc::AdaptationSettings settings_;
  double temperature_;
  std::vector<double> mass_;
};

}  // namespace

// Without an MH test (modules/README.md, "Mass adaptation without an MH test") each window's M is
// the second moment of the window's gradients ĝ (the chain state's gradient, not θ) at the
// temperature T, shrunk towards the mass in use M₀ with ν pseudo-draws (5 diagonal, d + 5 dense):
//   M = (Σ ĝĝᵀ/T + ν M₀)/(n + ν),
// not centred. Same windows as above (draws 11-15, 16-25, 26-45, 46-95), T = 2, gradients with a
// non-zero mean (so a centred estimate would differ), θ set to something else (so an estimate from
// θ would differ). The reference is summed directly, not from Welford's updates: 1e-12 relative.
TEST_CASE("adaptation: without MH each window's mass is the shrunk second moment of that window's gradients over T") {
  constexpr std::uint64_t warmup = 100;
  constexpr double temperature = 2.0;
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> windows{{11, 15}, {16, 25}, {26, 45}, {46, 95}};
  std::vector<std::vector<double>> gradients(warmup + 1);
  sgmcmc::Rng rng(12, 3);
  for (std::uint64_t k = 1; k <= warmup; ++k) {
    const double a = rng.normal(), b = rng.normal();
    gradients[k] = {0.5 + 2.0 * a, -1.0 + 0.5 * (0.6 * a + 0.8 * b)};
  }
  for (const bool dense : {false, true}) {
    INFO((dense ? "dense" : "diagonal"));
    const std::vector<double> start = dense ? std::vector{3.0, 0.5, 0.5, 2.0} : std::vector{3.0, 2.0};
    RecordingPrecisionIntegrator integrator(
        {.mass = true, .dense = dense, .windows = {.init_buffer = 10, .window = 5, .term_buffer = 5}}, temperature, start);
    sgmcmc::Adaptation adaptation(integrator, false);
    sgmcmc::ChainState state;
    for (std::uint64_t k = 1; k <= warmup; ++k) {
      state.iteration = k;
      state.gradient = gradients[k];
      state.theta = {100.0 + static_cast<double>(k), -7.0};
      adaptation.after_block(state, warmup, sgmcmc::Decision{});
    }
    CHECK(integrator.stan_calls == 0);
    REQUIRE(integrator.masses.size() == windows.size());
    std::vector<double> in_use = start;
    const double nu = dense ? 2.0 + 5.0 : 5.0;
    for (std::size_t w = 0; w < windows.size(); ++w) {
      const double n = static_cast<double>(windows[w].second - windows[w].first + 1);
      std::vector<double> expected;
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 2; ++j) {
          if (!dense && i != j) continue;
          double sum = 0.0;
          for (std::uint64_t k = windows[w].first; k <= windows[w].second; ++k) sum += gradients[k][i] * gradients[k][j];
          expected.push_back((sum / temperature + nu * in_use[expected.size()]) / (n + nu));
        }
      const auto& adapted = integrator.masses[w];
      REQUIRE(adapted.size() == expected.size());
      for (std::size_t e = 0; e < expected.size(); ++e) {
        INFO("window " << w + 1 << " (n = " << n << "), entry " << e << ": " << adapted[e] << " against " << expected[e]);
        CHECK_THAT(adapted[e], Catch::Matchers::WithinRel(expected[e], 1e-12));
      }
      in_use = expected;
    }
  }
}
