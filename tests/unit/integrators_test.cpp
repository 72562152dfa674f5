// Integrators: each sub-step and one full step of each integrator against values computed by
// hand from the same random draws; OBABO's limits (γ → 0: leapfrog; c = 0: SGLD with ε = h²);
// reversibility; the energy error's order; SGHMC's unrealisable backward move; BAOAB's O step
// against the exact Ornstein–Uhlenbeck correlation; reflection at 0 for positive parameters.
//
// A "leapfrog" below is obabo with friction 1e-300: γh/2 then rounds away, exp(-γh/2) is exactly 1
// and the O steps' noise sqrt(1 - c²) exactly 0, so the step is a leapfrog step bit for bit
// (friction 0 itself is refused: a chain that never refreshes its momentum does not mix).
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>
#include <fmt/format.h>
#include <xtensor-blas/xlinalg.hpp>

#include "gaussian_fixture.hpp"
#include "matrix/known_posteriors.hpp"
#include "statistics.hpp"
#include "targets.hpp"
#include "reading.hpp"

// Known-value tolerances: 1e-14 relative where the hand computation does the same operations as
// the integrator, possibly in another order (a few ulps); 1e-12 for sums of differences.

namespace {

/// U(x) = (x - μ)²/(2σ²) with μ = 0.5, σ² = 0.8: ∇U(x) = (x - 0.5)/0.8.
constexpr double mu = 0.5, sigma2 = 0.8;
double grad(double x) { return (x - mu) / sigma2; }

struct OneStep {
  std::shared_ptr<const sgmcmc::Model> model = std::make_shared<test::NormalTarget>(mu, std::sqrt(sigma2));
  std::unique_ptr<sgmcmc::Workspace> workspace = model->make_workspace();
  std::unique_ptr<sgmcmc::Estimator> estimator;
  std::unique_ptr<sgmcmc::Integrator> integrator;
  sgmcmc::Rng rng{5, 7};
  sgmcmc::Cost cost;
  sgmcmc::ChainState state;

  /// The integrator of `parameters` (sgmcmc::SgldParameters, ObaboParameters, ...), with exact
  /// gradients, at θ = 1.3 and momentum -0.4 (when it has one).
  template <class Parameters>
  explicit OneStep(const Parameters& parameters) {
    estimator = sgmcmc::make_estimator(sgmcmc::ExactParameters{}, *model);
    integrator = sgmcmc::make_integrator(parameters);
    integrator->initialise(state, 1, rng);
    state.theta[0] = 1.3;
    if (!state.momentum.empty()) state.momentum[0] = -0.4;
    state.iteration = 1;
  }
  /// The random stream as the step will see it, to compute the expected values by hand.
  sgmcmc::Rng stream() const { return rng; }
  void step() {
    sgmcmc::ChainContext context{*model, *workspace, rng, cost};
    integrator->step(state, *estimator, context);
  }
};

}  // namespace

TEST_CASE("sub-steps A, B, O and the kinetic energy on known values") {
  std::vector<double> theta{1.0, -2.0}, momentum{0.5, 3.0};
  const std::vector<double> inverse_mass{2.0, 0.25}, gradient{4.0, -1.0};
  sgmcmc::drift(theta, momentum, inverse_mass, 0.1);  // θ + h M⁻¹ m
  CHECK(theta[0] == Approx(1.1).epsilon(1e-15));
  CHECK(theta[1] == Approx(-1.925).epsilon(1e-15));
  sgmcmc::kick(momentum, gradient, 0.5);  // m - h g
  CHECK(momentum[0] == Approx(-1.5).epsilon(1e-15));
  CHECK(momentum[1] == Approx(3.5).epsilon(1e-15));
  CHECK(sgmcmc::kinetic_energy(momentum, inverse_mass) == Approx(0.5 * (1.5 * 1.5 * 2.0 + 3.5 * 3.5 * 0.25)).epsilon(1e-15));

  // O with c = 1 leaves m alone; with c = 0 it is a fresh N(0, T M) draw; in between it mixes.
  const std::vector<double> sqrt_mass{std::sqrt(0.5), 2.0};
  sgmcmc::Rng rng(1, 2), reference = rng;
  auto m = momentum;
  sgmcmc::ornstein_uhlenbeck(m, 1.0, 2.0, sqrt_mass, rng);
  CHECK(m == momentum);
  reference = rng;
  sgmcmc::ornstein_uhlenbeck(m, 0.3, 2.0, sqrt_mass, rng);
  for (std::size_t j = 0; j < 2; ++j)
    CHECK(m[j] == Approx(0.3 * momentum[j] + std::sqrt((1 - 0.09) * 2.0) * sqrt_mass[j] * reference.normal()).epsilon(1e-14));
}

TEST_CASE("one sgld step: θ - (ε/2)∇U + sqrt(εT)ξ") {
  OneStep s(sgmcmc::SgldParameters{.schedule = {.step_size = 0.1}, .temperature = 1.5});
  auto r = s.stream();
  s.step();
  CHECK(s.state.theta[0] == Approx(1.3 - 0.05 * grad(1.3) + std::sqrt(0.15) * r.normal()).epsilon(1e-14));
}

TEST_CASE("one sgld step with a mass: θ - (ε/2)M⁻¹∇U + sqrt(εT)M^{-1/2}ξ") {
  OneStep s(sgmcmc::SgldParameters{.schedule = {.step_size = 0.1}, .temperature = 1.5, .mass = 4.0});
  auto r = s.stream();
  s.step();
  CHECK(s.state.theta[0] == Approx(1.3 - 0.05 / 4.0 * grad(1.3) + std::sqrt(0.15) / 2.0 * r.normal()).epsilon(1e-14));
}

TEST_CASE("one obabo step with mass and temperature, and its energy error") {
  // Each O is the exact OU flow over h/2: c = exp(-γh/2), noise variance (1 - c²)T·M.
  const double h = 0.2, gamma = 0.7, mass = 2.0, temperature = 1.5, c = std::exp(-gamma * h / 2);
  OneStep s(sgmcmc::ObaboParameters{
      .schedule = {.step_size = h}, .temperature = temperature, .mass = mass, .friction = gamma});
  auto r = s.stream();
  double m = c * -0.4 + std::sqrt((1 - c * c) * temperature) * std::sqrt(mass) * r.normal();
  const double kinetic_before = 0.5 * m * m / mass;
  m -= h / 2 * grad(1.3);
  const double theta = 1.3 + h * m / mass;
  m -= h / 2 * grad(theta);
  const double energy_error = 0.5 * m * m / mass - kinetic_before;
  m = c * m + std::sqrt((1 - c * c) * temperature) * std::sqrt(mass) * r.normal();
  s.step();
  CHECK(s.state.theta[0] == Approx(theta).epsilon(1e-14));
  CHECK(s.state.momentum[0] == Approx(m).epsilon(1e-14));
  CHECK(s.state.energy_error == Approx(energy_error).epsilon(1e-12));
  CHECK(s.state.gradient_valid);  // the gradient at the new θ is kept for the next first kick
  CHECK(s.state.gradient[0] == Approx(grad(theta)).epsilon(1e-14));
}

TEST_CASE("one baoab step with mass and temperature, and its energy error") {
  // Leimkuhler & Matthews (2013): the O step is the exact OU flow over the whole step h,
  // c = exp(-γh), noise variance (1 - c²)T·M; drifts move θ by (h/2)M⁻¹m. The energy error adds
  // the change of ½m²/M over each half kick (the O step between them is left out).
  const double h = 0.2, gamma = 0.7, mass = 2.0, temperature = 1.5, c = std::exp(-gamma * h);
  OneStep s(sgmcmc::BaoabParameters{
      .schedule = {.step_size = h}, .temperature = temperature, .mass = mass, .friction = gamma});
  auto r = s.stream();
  double m = -0.4 - h / 2 * grad(1.3);
  double energy_error = 0.5 * (m * m - 0.4 * 0.4) / mass;
  double theta = 1.3 + h / 2 * m / mass;
  m = c * m + std::sqrt((1 - c * c) * temperature) * std::sqrt(mass) * r.normal();
  theta += h / 2 * m / mass;
  const double before = m;
  m -= h / 2 * grad(theta);
  energy_error += 0.5 * (m * m - before * before) / mass;
  s.step();
  CHECK(s.state.theta[0] == Approx(theta).epsilon(1e-14));
  CHECK(s.state.momentum[0] == Approx(m).epsilon(1e-14));
  CHECK(s.state.energy_error == Approx(energy_error).epsilon(1e-12));
}

TEST_CASE("baoab's O step keeps exp(-γh) of the momentum: the lag-1 correlation of a free particle") {
  // Quantity: the lag-1 autocorrelation of the momentum on a flat potential (∇U ≈ 0: N(0, 10²⁰⁰)),
  // where BAOAB's momentum is the O step alone. Reference: the Ornstein–Uhlenbeck process
  // dm = -γm dt + sqrt(2γ) dW has correlation exp(-γt) at lag t (an exact property of the SDE,
  // not of the code). With γh = 1: exp(-1) = 0.368; half the friction would give exp(-1/2) = 0.607.
  // Tolerance: the sample lag-1 correlation of an AR(1) series of length n has standard error
  // sqrt((1 - ρ²)/n) ≈ 0.0029 for n = 10⁵; 0.02 is 7 of those and well below the 0.24 gap.
  const double h = 0.5, gamma = 2.0;
  std::shared_ptr<const sgmcmc::Model> flat = std::make_shared<test::NormalTarget>(0.0, 1e100);
  auto workspace = flat->make_workspace();
  auto estimator = sgmcmc::make_estimator(sgmcmc::ExactParameters{}, *flat);
  auto integrator = sgmcmc::make_integrator(sgmcmc::BaoabParameters{.schedule = {.step_size = h}, .friction = gamma});
  sgmcmc::Rng rng(8, 3);
  sgmcmc::Cost cost;
  sgmcmc::ChainContext context{*flat, *workspace, rng, cost};
  sgmcmc::ChainState state;
  integrator->initialise(state, 1, rng);
  std::vector<double> momenta;
  for (int k = 0; k < 100'000; ++k) {
    integrator->step(state, *estimator, context);
    momenta.push_back(state.momentum[0]);
  }
  CHECK(std::abs(test::autocorrelation(momenta, 1) - std::exp(-gamma * h)) < 0.02);
}

TEST_CASE("a reflected drift bounces off 0: θ ← -θ and m ← -m together, other coordinates untouched") {
  std::vector<double> theta{0.1, 0.3}, momentum{-2.0, -1.0};
  const std::vector<double> inverse_mass{1.0, 1.0};
  sgmcmc::drift(theta, momentum, inverse_mass, 0.2, true);  // 0.1 - 0.4 = -0.3 → 0.3; 0.3 - 0.2 = 0.1
  CHECK(theta[0] == Approx(0.3).epsilon(1e-15));
  CHECK(momentum[0] == 2.0);
  CHECK(theta[1] == Approx(0.1).epsilon(1e-15));
  CHECK(momentum[1] == -1.0);
  // Reversible under a momentum flip, as the MH test needs: flip, drift again, flip back.
  for (double& m : momentum) m = -m;
  sgmcmc::drift(theta, momentum, inverse_mass, 0.2, true);
  CHECK(theta[0] == Approx(0.1).epsilon(1e-15));
  CHECK(theta[1] == Approx(0.3).epsilon(1e-15));
  CHECK(momentum[0] == 2.0);
  CHECK(momentum[1] == 1.0);
}

TEST_CASE("friction 0, or negative, is refused with the reason") {
  for (const char* name : {"obabo", "baoab", "sghmc"})
    for (const char* friction : {"0", "-1"}) {
      auto config = sgmcmc::parse_config(fmt::format("[integrator]\nname = \"{}\"\nfriction = {}\n", name, friction), "f.toml");
      INFO(name << " friction " << friction);
      CHECK_THROWS_WITH(sgmcmc::make_integrator(sgmcmc::SectionReader(config["integrator"])),
                        Catch::Matchers::Contains("f.toml:3: integrator.friction") &&
                            Catch::Matchers::Contains("never refreshed"));
    }
}

TEST_CASE("sghmc with friction × step size >= 1 is refused, from TOML and from its parameter struct") {
  // 1 - γh <= 0 would flip (or zero) the momentum every step.
  auto config = sgmcmc::parse_config("[integrator]\nname = \"sghmc\"\nstep_size = 0.1\nfriction = 10\n", "f.toml");
  CHECK_THROWS_WITH(sgmcmc::make_integrator(sgmcmc::SectionReader(config["integrator"])),
                    Catch::Matchers::Contains("f.toml:4: integrator.friction") && Catch::Matchers::Contains("below 1"));
  CHECK_THROWS_WITH(sgmcmc::make_integrator(sgmcmc::SghmcParameters{.schedule = {.step_size = 0.1}, .friction = 10.0}),
                    Catch::Matchers::Contains("integrator sghmc") && Catch::Matchers::Contains("below 1"));
  CHECK_NOTHROW(sgmcmc::make_integrator(sgmcmc::SghmcParameters{.schedule = {.step_size = 0.1}, .friction = 9.0}));
}

TEST_CASE("one sghmc (Euler-Maruyama) step") {
  const double h = 0.1, gamma = 2.0, mass = 0.5;
  OneStep s(sgmcmc::SghmcParameters{.schedule = {.step_size = h}, .mass = mass, .friction = gamma});
  auto r = s.stream();
  const double m = (1 - h * gamma) * -0.4 - h * grad(1.3) + std::sqrt(2 * gamma * h) * std::sqrt(mass) * r.normal();
  s.step();
  CHECK(s.state.momentum[0] == Approx(m).epsilon(1e-14));
  CHECK(s.state.theta[0] == Approx(1.3 + h * m / mass).epsilon(1e-14));
}

TEST_CASE("one hmc step: fresh momentum, then L leapfrog steps") {
  const double h = 0.3;
  OneStep s(sgmcmc::HmcParameters{.schedule = {.step_size = h}, .steps = 3});
  auto r = s.stream();
  double m = r.normal(), theta = 1.3;
  for (int l = 0; l < 3; ++l) {
    m -= h / 2 * grad(theta);
    theta += h * m;
    m -= h / 2 * grad(theta);
  }
  s.step();
  CHECK(s.state.theta[0] == Approx(theta).epsilon(1e-14));
  CHECK(s.state.momentum[0] == Approx(m).epsilon(1e-14));
  CHECK(s.cost.item_gradients == 4);  // one gradient per point: θ_0 and the three new points
}

TEST_CASE("one mala step is SGLD's update with h = sqrt(ε)") {
  const double epsilon = 0.09;
  OneStep s(sgmcmc::MalaParameters{.schedule = {.step_size = epsilon}});
  auto r = s.stream();
  const double xi = r.normal();
  s.step();
  CHECK(s.state.theta[0] == Approx(1.3 - epsilon / 2 * grad(1.3) + std::sqrt(epsilon) * xi).epsilon(1e-14));
}

TEST_CASE("obabo with γ → 0 is a leapfrog step, bit for bit") {
  OneStep s(sgmcmc::ObaboParameters{.schedule = {.step_size = 0.25}, .friction = 1e-300});
  double m = -0.4 - 0.125 * grad(1.3);
  const double theta = 1.3 + 0.25 * m;
  m -= 0.125 * grad(theta);
  s.step();
  CHECK(s.state.theta[0] == theta);
  CHECK(s.state.momentum[0] == m);
}

namespace {

/// 200 steps of sgld at ε and of mala at the same ε from the same stream, with the mass given
/// (mala first draws its initial momentum, d normals, which sgld's stream skips): θ must agree to
/// rounding, as mala is OBABO with c = 0.
void expect_mala_reproduces_sgld(const sgmcmc::Mass& mass) {
  test::GaussianFixture fixture(30, 3);
  const double epsilon = 1e-3;
  auto estimator = sgmcmc::make_estimator(sgmcmc::ExactParameters{}, *fixture.model);
  auto sgld = sgmcmc::make_integrator(sgmcmc::SgldParameters{.schedule = {.step_size = epsilon}, .mass = mass});
  auto mala = sgmcmc::make_integrator(sgmcmc::MalaParameters{.schedule = {.step_size = epsilon}, .mass = mass});
  sgmcmc::Rng sgld_rng(3, 1), mala_rng(3, 1);
  sgmcmc::Cost cost;
  auto workspace = fixture.model->make_workspace();
  sgmcmc::ChainState sgld_state, mala_state;
  sgld->initialise(sgld_state, 3, sgld_rng);
  mala->initialise(mala_state, 3, mala_rng);
  for (int j = 0; j < 3; ++j) sgld_rng.normal();
  for (std::uint64_t k = 1; k <= 200; ++k) {
    sgld_state.iteration = mala_state.iteration = k;
    sgmcmc::ChainContext sgld_context{*fixture.model, *workspace, sgld_rng, cost}, mala_context{*fixture.model, *workspace, mala_rng, cost};
    sgld->step(sgld_state, *estimator, sgld_context);
    mala->step(mala_state, *estimator, mala_context);
  }
  for (std::size_t j = 0; j < 3; ++j) CHECK(mala_state.theta[j] == Approx(sgld_state.theta[j]).epsilon(1e-10));
}

}  // namespace

TEST_CASE("mala (obabo with a = 0) reproduces sgld with ε = h² over a whole trajectory") {
  // Same gradients, same normals in the same order (mala first draws the initial momentum, d
  // normals, which sgld's stream skips here); the only difference is sqrt(ε)·sqrt(T) against
  // sqrt(εT) and (ε/2)g against h·(h/2)g, rounding of order 1e-16 per step.
  expect_mala_reproduces_sgld(1.0);
}

TEST_CASE("with one mass per coordinate, mala still reproduces sgld: M⁻¹ is sgld's preconditioner") {
  // As above, with M = (0.5, 2, 8): mala's m ~ N(0, M) then A(h) θ += h M⁻¹ m gives sgld's noise
  // sqrt(ε) M^{-1/2} ξ, and its kicks the drift (ε/2) M⁻¹ g.
  expect_mala_reproduces_sgld(std::vector<double>{0.5, 2.0, 8.0});
}

TEST_CASE("a mass array whose length is not the model's dimension is refused, naming key, length and d") {
  auto model = std::make_shared<test::NormalTarget>(0.0, 1.0);  // d = 1
  for (const char* name : {"sgld", "mala", "obabo", "baoab", "hmc", "sghmc"}) {
    INFO(name);
    auto config = sgmcmc::parse_config(fmt::format("[integrator]\nname = \"{}\"\nmass = [1.0, 2.0]\n", name), "m.toml");
    CHECK_THROWS_WITH(sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(1, 1)),
                      Catch::Matchers::Contains("m.toml:3: integrator.mass") && Catch::Matchers::Contains("d = 1") &&
                          Catch::Matchers::Contains("found an array of 2"));
  }
  // Built from parameters, the integrator refuses it when the chain's dimension is known.
  auto integrator = sgmcmc::make_integrator(sgmcmc::HmcParameters{.mass = std::vector<double>{1.0, 2.0}});
  sgmcmc::ChainState state;
  sgmcmc::Rng rng(1, 1);
  CHECK_THROWS_WITH(integrator->initialise(state, 3, rng),
                    Catch::Matchers::Contains("mass has 2 numbers") && Catch::Matchers::Contains("d = 3"));
  // The field table's check, as from TOML: the key, and which number.
  CHECK_THROWS_WITH(sgmcmc::make_integrator(sgmcmc::SgldParameters{.mass = std::vector<double>{1.0, 0.0}}),
                    Catch::Matchers::Contains("integrator sgld: mass: expected numbers > 0, found 0 at position 2"));
  // One number, or d numbers, are accepted.
  auto one = sgmcmc::parse_config("[integrator]\nmass = [2.0]\n", "m.toml");
  CHECK_NOTHROW(sgmcmc::make_chain(test::plan_chain(one, *model), model, sgmcmc::Rng(1, 1)));
}

// ---- A dense metric (Metric, metric = "dense") ------------------------------------------------------

namespace {

sgmcmc::Metric dense_metric(std::vector<double> mass) {
  sgmcmc::Mass given(std::move(mass));
  given.dense = true;
  sgmcmc::Metric metric(given);
  metric.resize(2);
  return metric;
}

}  // namespace

TEST_CASE("a dense metric on known values: M⁻¹v, ½vᵀM⁻¹v and M read back") {
  // M = [[2, 1], [1, 3]], det 5, M⁻¹ = [[0.6, -0.2], [-0.2, 0.4]]: for v = (1, 2), M⁻¹v = (0.2, 0.6)
  // and ½vᵀM⁻¹v = ½(0.2 + 1.2) = 0.7.
  const auto metric = dense_metric({2.0, 1.0, 1.0, 3.0});
  const std::vector<double> v = {1.0, 2.0};
  std::vector<double> out(2);
  metric.times_inverse(v, out);
  CHECK(out[0] == Approx(0.2).epsilon(1e-14));
  CHECK(out[1] == Approx(0.6).epsilon(1e-14));
  CHECK(metric.half_inverse_norm(v) == Approx(0.7).epsilon(1e-14));
  CHECK(sgmcmc::kinetic_energy(v, metric) == Approx(0.7).epsilon(1e-14));
  const auto mass = metric.mass();
  REQUIRE(mass.size() == 4);
  for (std::size_t e = 0; e < 4; ++e) CHECK(mass[e] == Approx(std::vector{2.0, 1.0, 1.0, 3.0}[e]).epsilon(1e-13));
  // A drift moves θ by h M⁻¹m.
  std::vector<double> theta = {1.0, -1.0}, momentum = v;
  sgmcmc::drift(theta, momentum, metric, 0.5);
  CHECK(theta[0] == Approx(1.1).epsilon(1e-14));
  CHECK(theta[1] == Approx(-0.7).epsilon(1e-14));
}

TEST_CASE("a dense metric's draws: K⁻ᵀξ has covariance M and Kξ has covariance M⁻¹") {
  // 200,000 draws of each from ξ ~ N(0, I). For zero-mean normals the mean of x_i x_j estimates
  // C_ij with variance (C_ii C_jj + C_ij²)/n (Isserlis); each of the 6 entries within 5 SE (a false
  // alarm with probability ≈ 6 × 5.7e-7). Swapping the two transforms, or K for Kᵀ, misses by
  // hundreds of SE here (M and M⁻¹ differ by a factor 5 in their determinant).
  const std::vector<double> m = {2.0, 1.0, 1.0, 3.0}, m_inverse = {0.6, -0.2, -0.2, 0.4};
  const auto metric = dense_metric(m);
  sgmcmc::Rng rng(7, 1);
  constexpr int n = 200'000;
  for (const bool as_mass : {true, false}) {
    const auto& exact = as_mass ? m : m_inverse;
    std::vector<double> sums(4, 0.0), xi(2);
    for (int k = 0; k < n; ++k) {
      xi = {rng.normal(), rng.normal()};
      if (as_mass) metric.correlate_as_mass(xi);
      else metric.correlate_as_inverse(xi);
      for (std::size_t e = 0; e < 4; ++e) sums[e] += xi[e / 2] * xi[e % 2];
    }
    for (std::size_t e = 0; e < 4; ++e) {
      const std::size_t i = e / 2, j = e % 2;
      const double se = std::sqrt((exact[3 * i] * exact[3 * j] + exact[e] * exact[e]) / n);
      INFO((as_mass ? "N(0, M)" : "N(0, M⁻¹)") << " entry " << e << ": " << sums[e] / n << " against " << exact[e]);
      CHECK(std::abs(sums[e] / n - exact[e]) < 5 * se);
    }
  }
}

// Stan's windows, as the Stan Reference Manual describes them (fast interval, slow windows doubling,
// the last stretched to the terminal interval when the next would not fit twice). For a warmup of
// 1,000 with the defaults (75, 25, 50) the windows end at 100, 150, 250, 450 and 950: Stan's
// documented schedule. With adapt_init_buffer = 10, adapt_window = 5, adapt_term_buffer = 5 and a
// warmup of 100: 15, 25, 45, then 85, but the window after it (80) would not fit in the 10 left before
// the terminal interval at 95, so this one is stretched to 95.
TEST_CASE("adapt_mass's windows end where Stan's rule puts them, for the default and for given intervals") {
  const auto windows_closing = [](sgmcmc::AdaptationWindows windows, std::uint64_t warmup) {
    sgmcmc::MassAdaptation adaptation(false, windows);
    std::vector<std::uint64_t> closed;
    for (std::uint64_t iteration = 1; iteration <= warmup; ++iteration) {
      const double value = static_cast<double>(iteration % 7);  // the values do not move the windows
      if (adaptation.observe(iteration, warmup, std::span<const double>(&value, 1))) closed.push_back(iteration);
    }
    return closed;
  };
  CHECK(windows_closing({}, 1000) == std::vector<std::uint64_t>{100, 150, 250, 450, 950});
  CHECK(windows_closing({.init_buffer = 10, .window = 5, .term_buffer = 5}, 100) == std::vector<std::uint64_t>{15, 25, 45, 95});
  const auto correlated = matrix::correlated_target();
  auto refused = sgmcmc::parse_config("[integrator]\nname = \"obabo\"\nadapt_init_buffer = 500\n", "m.toml");
  CHECK_THROWS_WITH(sgmcmc::make_chain(test::plan_chain(refused, *correlated), correlated, sgmcmc::Rng(1, 1)),
                    Catch::Matchers::Contains("m.toml:3: integrator.adapt_init_buffer: adapt_init_buffer sets a window of "
                                              "adapt_mass's adaptation, and adapt_mass is false"));
}

TEST_CASE("a dense metric or a Fisher mass is refused, naming the key, where it cannot be right, and 1, d or d² numbers are accepted") {
  const auto correlated = matrix::correlated_target();  // d = 2
  const auto refused = [](std::shared_ptr<const sgmcmc::Model> model, const std::string& lines, const std::string& expected) {
    INFO(lines);
    auto config = sgmcmc::parse_config("[integrator]\nname = \"obabo\"\n" + lines, "m.toml");
    CHECK_THROWS_WITH(sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(1, 1)), Catch::Matchers::Contains(expected));
  };
  refused(correlated, "metric = \"full\"\n", "m.toml:3: integrator.metric");
  refused(correlated, "metric = \"dense\"\nmass = [1, 2, 3]\n", "or of d² = 4");
  refused(correlated, "mass = [1, 0.5, 0.5, 1]\n", "or of d² = 4 with metric = \"dense\"");
  refused(correlated, "metric = \"dense\"\nmass = [1, 0.5, 0.4, 1]\n", "m.toml:4: integrator.mass: the mass matrix is not symmetric");
  refused(correlated, "metric = \"dense\"\nmass = [1, 2, 2, 1]\n", "m.toml:4: integrator.mass: the mass matrix is not positive definite");
  refused(matrix::poisson_target(), "metric = \"dense\"\n", "parameters are positive");
  refused(correlated, "mass = \"laplace\"\n", "m.toml:3: integrator.mass: expected a number, an array of numbers or \"fisher\"");
  refused(correlated, "mass_ridge = 2.0\n", "m.toml:3: integrator.mass_ridge: mass_ridge is the ridge of mass = \"fisher\"");
  refused(correlated, "mass = \"fisher\"\n", "m.toml:3: integrator.mass: the Fisher mass sums ∇f_i ∇f_iᵀ over the items, and this "
                                            "model declares neither 'per-item-gradients' nor 'sparse-item-gradients'");
  refused(matrix::split_correlated_target(), "mass = \"fisher\"\nmass_ridge = 0\n", "m.toml:4: integrator.mass_ridge: expected a number > 0");
  const auto wide = std::make_shared<matrix::AnisotropicGaussian>(std::vector<double>(1001, 1.0), std::vector<double>(1001, 0.0));
  refused(wide, "metric = \"dense\"\n", "d = 1001 coordinates, above the limit of 1000");
  // psgld has its own preconditioner and no metric: the key is unknown to it.
  auto psgld = sgmcmc::parse_config("[integrator]\nname = \"psgld\"\nmetric = \"dense\"\n", "m.toml");
  sgmcmc::ConfigReads psgld_reads;
  auto chain = sgmcmc::make_chain(sgmcmc::plan_chain({psgld, psgld_reads}, *correlated), correlated, sgmcmc::Rng(1, 1));
  CHECK_THROWS_WITH(sgmcmc::reject_unknown_keys(psgld["integrator"], psgld_reads["integrator"]), Catch::Matchers::Contains("metric"));
  for (const char* mass : {"2.0", "[2.0, 3.0]", "[2.0, 1.0, 1.0, 3.0]"}) {
    INFO(mass);
    auto config = sgmcmc::parse_config(fmt::format("[integrator]\nname = \"obabo\"\nmetric = \"dense\"\nmass = {}\n", mass), "m.toml");
    test::Draws draws;
    CHECK_NOTHROW(sgmcmc::make_chain(test::plan_chain(config, *correlated), correlated, sgmcmc::Rng(1, 1))->run({.iterations = 10, .eval_every = 10}, draws));
  }
}

TEST_CASE("a leapfrog trajectory run forward, momentum flipped, run again, returns to its start") {
  test::GaussianFixture fixture(30, 3);
  auto estimator = sgmcmc::make_estimator(sgmcmc::ExactParameters{}, *fixture.model);
  auto integrator = sgmcmc::make_integrator(sgmcmc::ObaboParameters{.schedule = {.step_size = 0.01}, .friction = 1e-300});
  sgmcmc::Rng rng(4, 4);
  sgmcmc::Cost cost;
  auto workspace = fixture.model->make_workspace();
  sgmcmc::ChainContext context{*fixture.model, *workspace, rng, cost};
  sgmcmc::ChainState state;
  integrator->initialise(state, 3, rng);
  state.theta = {0.2, -0.5, 1.0};
  const auto start_theta = state.theta;
  const auto start_momentum = state.momentum;
  for (int k = 0; k < 40; ++k) integrator->step(state, *estimator, context);
  for (double& m : state.momentum) m = -m;
  for (int k = 0; k < 40; ++k) integrator->step(state, *estimator, context);
  for (std::size_t j = 0; j < 3; ++j) {
    CHECK(std::abs(state.theta[j] - start_theta[j]) < 1e-12);
    CHECK(std::abs(state.momentum[j] + start_momentum[j]) < 1e-12);
  }
}

TEST_CASE("the energy error of a leapfrog trajectory shrinks as h²") {
  // Quantity: max over a trajectory of duration 1 of |ΔH| = |U(θ_k) - U(θ_0) + energy_error|,
  // with exact gradients (obabo, γ = 0). Leapfrog's energy error is h²·c(t) + O(h⁴) (Hairer,
  // Lubich & Wanner, Geometric Numerical Integration, IX.8), so halving h divides it by 4 up to a
  // relative O(h²λ) correction: with h·sqrt(λ_max) ≤ 0.16 that is below 3%, and the log-log slope
  // over h, h/2, h/4, h/8 is 2 within ±0.1. A first-order error (slope 1) fails.
  test::GaussianFixture fixture(30, 3);
  const auto eigenvalues = std::get<0>(xt::linalg::eigh(fixture.precision));
  const double h0 = 0.16 / std::sqrt(xt::amax(eigenvalues)());
  std::vector<double> log_h, log_error;
  auto workspace = fixture.model->make_workspace();
  std::vector<std::size_t> items(fixture.model->num_items());
  std::iota(items.begin(), items.end(), std::size_t{0});
  const auto potential = [&](const std::vector<double>& theta) {
    return fixture.model->prior_potential(theta) + fixture.model->data_potential(theta, {items}, *workspace);
  };
  for (double h : {h0, h0 / 2, h0 / 4, h0 / 8}) {
    auto estimator = sgmcmc::make_estimator(sgmcmc::ExactParameters{}, *fixture.model);
    auto integrator = sgmcmc::make_integrator(sgmcmc::ObaboParameters{.schedule = {.step_size = h}, .friction = 1e-300});
    sgmcmc::Rng rng(9, 9);
    sgmcmc::Cost cost;
    sgmcmc::ChainContext context{*fixture.model, *workspace, rng, cost};
    sgmcmc::ChainState state;
    integrator->initialise(state, 3, rng);
    state.theta = {fixture.mean(0) + 0.1, fixture.mean(1) - 0.2, fixture.mean(2)};
    const double start = potential(state.theta);
    double worst = 0.0;
    const int steps = static_cast<int>(std::lround(1.0 / (h * std::sqrt(xt::amax(eigenvalues)()))));
    for (int k = 0; k < steps; ++k) {
      integrator->step(state, *estimator, context);
      worst = std::max(worst, std::abs(potential(state.theta) - start + state.energy_error));
    }
    log_h.push_back(std::log(h));
    log_error.push_back(std::log(worst));
  }
  const double slope = (log_error.front() - log_error.back()) / (log_h.front() - log_h.back());
  INFO("slope " << slope);
  CHECK(std::abs(slope - 2.0) < 0.1);
}

TEST_CASE("sghmc's backward move is not realisable, so an MH test could never accept") {
  // Garriga-Alonso & Fortuin (2021), Thm 1: from (θ', -m') a symplectic Euler-Maruyama step moves θ by h M⁻¹ m_b with
  // its *new* momentum m_b; to return to (θ, -m) it needs m_b = -m, and then lands at
  // θ' - hM⁻¹m = θ + hM⁻¹(m' - m), which is θ only if m' = m: an event of probability 0 under
  // the Gaussian noise. Over many random steps the miss is never 0.
  OneStep s(sgmcmc::SghmcParameters{.schedule = {.step_size = 0.1}, .friction = 1.0});
  double smallest_miss = INFINITY;
  for (int k = 0; k < 1000; ++k) {
    const double theta = s.state.theta[0], m = s.state.momentum[0];
    s.step();
    const double miss = std::abs((s.state.theta[0] - 0.1 * m) - theta);  // θ' - h m - θ
    CHECK(miss == Approx(std::abs(0.1 * (s.state.momentum[0] - m))).epsilon(1e-9));
    smallest_miss = std::min(smallest_miss, miss);
  }
  CHECK(smallest_miss > 0.0);
}

TEST_CASE("step-size schedules: constant, polynomial decay, cyclical cosine") {
  const sgmcmc::StepSchedule polynomial(
      {.step_size = 0.5, .schedule = sgmcmc::ScheduleKind::polynomial, .decay_b = 3, .decay_c = 0.6});
  CHECK(polynomial.at(1) == Approx(0.5 * std::pow(4.0, -0.6)).epsilon(1e-15));
  CHECK(polynomial.at(97) == Approx(0.5 * std::pow(100.0, -0.6)).epsilon(1e-15));
  const sgmcmc::StepSchedule cyclical({.step_size = 0.5, .schedule = sgmcmc::ScheduleKind::cyclical, .cycle_length = 4});
  const double expected[] = {0.5, 0.25 * (std::cos(M_PI / 4) + 1), 0.25, 0.25 * (std::cos(3 * M_PI / 4) + 1), 0.5};
  for (int k = 0; k < 5; ++k) CHECK(cyclical.at(k + 1) == Approx(expected[k]).epsilon(1e-15));
  CHECK(sgmcmc::StepSchedule({.step_size = 0.5}).at(1000) == 0.5);
  // The range of c is the Settings adapter's check, which names where the key was set.
  auto bad = sgmcmc::parse_config("[integrator]\nschedule = \"polynomial\"\ndecay_c = 1.5\n", "b.toml");
  CHECK_THROWS_WITH(sgmcmc::ScheduleParameters::from_settings(sgmcmc::SectionReader(bad["integrator"])),
                    Catch::Matchers::Contains("b.toml:3: integrator.decay_c"));
}

TEST_CASE("scale_step_with_n: refused where it has no meaning, naming the key, recorded as given") {
  auto model = std::make_shared<test::NormalTarget>(0.0, 1.0);
  const auto refusal = [&](const std::string& toml) {
    auto config = sgmcmc::parse_config(toml, "s.toml");
    try {
      sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(1, 1));
    } catch (const sgmcmc::Error& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  // psgld's RMSprop preconditioner already divides by the gradients' size.
  CHECK_THAT(refusal("[integrator]\nname = \"psgld\"\nstep_size = 1.0\nscale_step_with_n = true\n"),
             Catch::Matchers::Contains("s.toml:4: integrator.scale_step_with_n") && Catch::Matchers::Contains("psgld"));
  // Without step_size, the default 1e-4 would silently be read as a step for one item.
  CHECK_THAT(refusal("[integrator]\nname = \"sgld\"\nscale_step_with_n = true\n"),
             Catch::Matchers::Contains("integrator.scale_step_with_n") && Catch::Matchers::Contains("give integrator.step_size"));
  // A computed or adapted mass grows with N already: the step would be divided a second time.
  CHECK_THAT(refusal("[integrator]\nname = \"sgld\"\nstep_size = 1.0\nscale_step_with_n = true\nmass = \"fisher\"\n"),
             Catch::Matchers::Contains("s.toml:4: integrator.scale_step_with_n") &&
                 Catch::Matchers::Contains("computed from the data (s.toml:5: integrator.mass)"));
  CHECK_THAT(refusal("[integrator]\nname = \"obabo\"\nstep_size = 1.0\nscale_step_with_n = true\nadapt_mass = true\n"),
             Catch::Matchers::Contains("s.toml:4: integrator.scale_step_with_n") &&
                 Catch::Matchers::Contains("adapted to the draws (s.toml:5: integrator.adapt_mass)"));
  CHECK(refusal("[integrator]\nname = \"obabo\"\nstep_size = 1.0\nscale_step_with_n = true\nadapt_mass = false\n") ==
        "accepted");
  // Without the model, no N to divide by.
  auto config = sgmcmc::parse_config("[integrator]\nstep_size = 1.0\nscale_step_with_n = true\n", "s.toml");
  CHECK_THROWS_WITH(sgmcmc::make_integrator(sgmcmc::SectionReader(config["integrator"])), Catch::Matchers::Contains("number of items"));
  // The configuration keeps the step as given; the integrator gets it divided by N^p (N = 1 here).
  auto scaled = sgmcmc::parse_config("[integrator]\nname = \"obabo\"\nstep_size = 0.5\nscale_step_with_n = true\n", "s.toml");
  sgmcmc::ConfigReads reads;
  const auto chain = sgmcmc::make_chain(sgmcmc::plan_chain({scaled, reads}, *model), model, sgmcmc::Rng(1, 1));
  CHECK(std::get<double>(reads["integrator"].in_force.at("step_size")) == 0.5);
  CHECK(std::get<bool>(reads["integrator"].in_force.at("scale_step_with_n")));
  CHECK(sgmcmc::reject_unknown_keys(scaled["integrator"], reads["integrator"]).empty());
}

// ---- Step-size adaptation by dual averaging (issue 17, item 5) -----------------------------------

namespace {

/// Hoffman & Gelman (2014, Algorithm 5) written out again from the paper, for the known values
/// below: H̄_m = (1 - 1/(m + t₀)) H̄_{m-1} + (δ - α_m)/(m + t₀), x_m = μ - sqrt(m)/γ H̄_m,
/// x̄_m = m^{-κ} x_m + (1 - m^{-κ}) x̄_{m-1}, μ = log(10 h₀), γ = 0.05, t₀ = 10, κ = 0.75.
struct HandDualAveraging {
  double mu, h_bar = 0.0, x = 0.0, x_bar = 0.0;
  int m = 0;
  explicit HandDualAveraging(double h0) : mu(std::log(10.0 * h0)) {}
  void learn(double alpha, double delta) {
    ++m;
    h_bar = (1.0 - 1.0 / (m + 10.0)) * h_bar + (delta - alpha) / (m + 10.0);
    x = mu - std::sqrt(double(m)) / 0.05 * h_bar;
    x_bar = std::pow(m, -0.75) * x + (1.0 - std::pow(m, -0.75)) * x_bar;
  }
};

}  // namespace

TEST_CASE("dual averaging of the step: each MH test's acceptance moves the next step as Hoffman & Gelman's Alg. 5, and the warmup's end freezes it at x̄") {
  // mala reads step_size as ε: ε is the adapted quantity. Three blocks of warmup with acceptance
  // probabilities 0.3, 0.95, 0.6 against δ = 0.7; each block's step is the previous update's
  // exp(x_m) (known values, 1e-12 relative: the same operations in the same order up to a few
  // ulps); after the third (the warmup's end) the step is exp(x̄_3) and stays there.
  constexpr double epsilon0 = 0.04, delta = 0.7;
  OneStep one(sgmcmc::MalaParameters{.schedule = {.step_size = epsilon0},
                                     .step_adaptation = {.adapt = true, .target_acceptance = delta}});
  HandDualAveraging hand(epsilon0);
  sgmcmc::Adaptation adaptation(*one.integrator, true);  // the chain's (with an MH test), which sets the integrator's step
  CHECK(adaptation.settings().step.adapt);
  one.step();
  CHECK(one.integrator->step_size() == epsilon0);
  const double alphas[] = {0.3, 0.95, 0.6};
  for (int m = 1; m <= 3; ++m) {
    one.state.iteration = static_cast<std::uint64_t>(m);
    sgmcmc::Decision decision;
    decision.accept_stat = alphas[m - 1];
    adaptation.after_block(one.state, 3, decision);
    hand.learn(alphas[m - 1], delta);
    one.state.iteration = static_cast<std::uint64_t>(m + 1);
    one.step();
    const double expected = m < 3 ? std::exp(hand.x) : std::exp(hand.x_bar);
    INFO("block " << m);
    CHECK_THAT(one.integrator->step_size(), Catch::Matchers::WithinRel(expected, 1e-12));
    CHECK(adaptation.adapted_step_size().has_value() == (m == 3));
  }
  // Low acceptance (0.3 < δ) first: the step must have shrunk below ε₀·10 = exp(μ) at once.
  CHECK(std::exp(hand.mu - std::sqrt(1.0) / 0.05 * (delta - 0.3) / 11.0) < 10 * epsilon0);
  // After the warmup: frozen, whatever the acceptance.
  sgmcmc::Decision reject;
  reject.accept_stat = 0.0;
  one.state.iteration = 4;
  adaptation.after_block(one.state, 3, reject);
  one.state.iteration = 5;
  one.step();
  CHECK_THAT(one.integrator->step_size(), Catch::Matchers::WithinRel(std::exp(hand.x_bar), 1e-12));
  CHECK_THAT(*adaptation.adapted_step_size(), Catch::Matchers::WithinRel(std::exp(hand.x_bar), 1e-12));
}

TEST_CASE("step-size adaptation is refused, naming the key and the reason, where it cannot be meaningful") {
  const auto model = std::make_shared<test::NormalTarget>(0.0, 1.0);
  const auto chain = [&](const std::string& integrator, const std::string& corrector) {
    auto config = sgmcmc::parse_config(
        fmt::format("[integrator]\n{}\n[corrector]\nname = \"{}\"\n[estimator]\nname = \"exact\"\n", integrator, corrector),
        "a.toml");
    return sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(1, 2));
  };
  using Catch::Matchers::Contains;
  for (const char* name : {"mala", "obabo", "baoab", "hmc", "leapfrog"}) {
    INFO(name);
    const std::string adapt = fmt::format("name = \"{}\"\nstep_size = 0.1\nadapt_step_size = true", name);
    // No MH test: no acceptance signal.
    CHECK_THROWS_WITH(chain(adapt, "none"), Contains("a.toml:4: integrator.adapt_step_size") &&
                                                Contains("corrector.name = \"mh\"") && Contains("Stein"));
    // A schedule that is not constant.
    CHECK_THROWS_WITH(chain(adapt + "\nschedule = \"polynomial\"", "mh"),
                      Contains("a.toml:4: integrator.adapt_step_size") && Contains("schedule = \"constant\""));
    // A target acceptance outside (0, 1).
    for (const char* target : {"0", "1", "1.5", "-0.2"})
      CHECK_THROWS_WITH(chain(adapt + "\ntarget_acceptance = " + target, "mh"),
                        Contains("a.toml:5: integrator.target_acceptance") && Contains("0 < target_acceptance < 1"));
    // No warmup: refused when the run's schedule is checked, before anything runs.
    const auto built = chain(adapt, "mh");
    CHECK_THROWS_WITH(built->check({.warmup = 0, .iterations = 10}),
                      Contains("integrator.adapt_step_size") && Contains("run.warmup > 0"));
    CHECK_NOTHROW(built->check({.warmup = 10, .iterations = 10}));
    // Without adapt_step_size the same settings are not refused.
    CHECK_NOTHROW(chain(fmt::format("name = \"{}\"\nstep_size = 0.1", name), "none")->check({.warmup = 0, .iterations = 10}));
  }
  // From the parameter struct (no TOML): the same conditions.
  CHECK_THROWS_WITH(sgmcmc::make_integrator(sgmcmc::ObaboParameters{
                        .schedule = {.step_size = 0.1}, .step_adaptation = {.adapt = true, .target_acceptance = 1.0}}),
                    Contains("target_acceptance"));
  CHECK_THROWS_WITH(sgmcmc::make_integrator(sgmcmc::HmcParameters{
                        .schedule = {.step_size = 0.1, .schedule = sgmcmc::ScheduleKind::cyclical},
                        .step_adaptation = {.adapt = true}}),
                    Contains("constant schedule"));
}

TEST_CASE("ubu's force-free flow has the moments of the integrated Ornstein-Uhlenbeck process, by quadrature") {
  // Reference, derived apart from the closed form: the flow z = (θ, m) of dz = A z dt + B dW with
  // A = [[0, 1], [0, -γ]], B = (0, sqrt(2γT)) has mean e^{At} z and covariance ∫_0^t Φ(s)BBᵀΦ(s)ᵀ ds,
  // Φ(s) = e^{As} = [[1, (1 - e^{-γs})/γ], [0, e^{-γs}]], integrated here by Simpson's rule on
  // 20,000 intervals: its error, (t/n)⁴ t/180 times the integrands' fourth derivative, is below
  // 1e-15 of each moment for every γt below. The closed form cancels to (2/3)(γt)³ in Var θ; its
  // rounding there stays below 1e-10 relative at γt = 1e-3 (where it switches to a series): 1e-8.
  constexpr double temperature = 1.7;
  for (const double friction : {0.3, 2.0})
    for (const double a : {1e-7, 1e-4, 9.99e-4, 1.001e-3, 0.05, 1.0, 20.0}) {
      const double t = a / friction;
      const auto integral = [&](auto f) {
        constexpr int n = 20'000;
        double sum = f(0.0) + f(t);
        for (int k = 1; k < n; ++k) sum += (k % 2 ? 4.0 : 2.0) * f(t * k / n);
        return sum * t / (3.0 * n);
      };
      const auto position_gain = [&](double s) { return -std::expm1(-friction * s) / friction; };
      const auto momentum_gain = [&](double s) { return std::exp(-friction * s); };
      const double scale = 2.0 * friction * temperature;
      const double theta_theta = scale * integral([&](double s) { return position_gain(s) * position_gain(s); });
      const double theta_m = scale * integral([&](double s) { return position_gain(s) * momentum_gain(s); });
      const double m_m = scale * integral([&](double s) { return momentum_gain(s) * momentum_gain(s); });
      const auto flow = sgmcmc::free_flow(friction, t, temperature);
      INFO("γ = " << friction << ", γt = " << a);
      CHECK(flow.retention == Approx(std::exp(-a)).epsilon(1e-14));
      CHECK(flow.drift == Approx(integral(momentum_gain)).epsilon(1e-8));
      CHECK(flow.momentum_noise * flow.momentum_noise == Approx(m_m).epsilon(1e-8));
      CHECK(flow.joint_noise * flow.momentum_noise == Approx(theta_m).epsilon(1e-8));
      CHECK(flow.joint_noise * flow.joint_noise + flow.position_noise * flow.position_noise ==
            Approx(theta_theta).epsilon(1e-8));
    }
}
