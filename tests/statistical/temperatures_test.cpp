// The kinetic and configurational temperatures of run.temperatures (modules/README.md,
// "Temperatures") on the target N(0, 1/λ), λ = 1, with exact gradients, against exact values:
// 1 for exact samplers (obabo + mh with a mass M = 4, baoab + mh), and, for samplers without a
// correction, the stationary moments of their linear maps derived below.
//
// Derivation of the biased references. On U(θ) = λθ²/2 with exact gradients and M = T = 1, one
// step of each integrator is a linear map x' = F x + G ξ of x = (θ, p) with Gaussian noise, so the
// chain's stationary law is N(0, Σ) with Σ the solution of the discrete Lyapunov equation
// Σ = F Σ Fᵀ + G Gᵀ (solved symbolically, and checked by simulating the maps in double precision):
//  - sghmc (Chen, Fox & Guestrin 2014, symplectic Euler; ours: p' = (1 - γh)p - hλθ + sqrt(2γh)ξ,
//    θ' = θ + hp'): Σ_pp = 1/(1 - γh/2 - h²λ/4), λΣ_θθ = (1 - γh/2)/(1 - γh/2 - h²λ/4).
//  - baoab: λΣ_θθ = 1 exactly for every h < 2/sqrt(λ) (BAOAB samples a harmonic oscillator's
//    configurations without bias: Leimkuhler & Matthews 2013, "Rational construction of stochastic
//    numerical methods for molecular sampling", AMRX), while the momentum after the step's last
//    kick has Σ_pp = 1 - h²λ/4 (derived here); the momentum right after the O step (the midpoint)
//    has variance exactly 1, so a kinetic temperature read there would show no bias.
//  - obabo (Horowitz 1991; ours with c = exp(-γh/2)): the leapfrog map B A B keeps
//    p²/2 + (λ/2)(1 - h²λ/4)θ² exactly, the O steps keep N(0, 1) in p, so the product
//    N(θ; 0, 1/(λ(1 - h²λ/4))) N(p; 0, 1) is invariant: Σ_pp = 1 exactly (the kinetic temperature
//    does not see this bias), λΣ_θθ = 1/(1 - h²λ/4).
// The kinetic temperature of a row is p²/M (d = 1), the configurational θ·U'(θ) = λθ²; their means
// are the Σ entries above. The chains are read at every iteration (eval_every = 1).
//
// Monte Carlo error: as in mh_test.cpp, standard errors from 100 non-overlapping batch means
// (tests/statistics.hpp), trusted after checking that the autocorrelation at the batch length is
// below 0.05; tolerance 5 standard errors (two-sided p ≈ 6e-7 per check for normal batch means).
// The biased references differ from 1 by 0.25 to 0.45, tens of standard errors at 200 000 rows
// (the rows' variance is 2Σ², so the se is about sqrt(2Σ²·τ/200000) ≈ 0.01 for an autocorrelation
// time τ of a few dozen steps), so each check also separates the biased value from 1.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "statistics.hpp"
#include "targets.hpp"
#include "reading.hpp"

namespace {

struct Rows final : sgmcmc::ChainObserver {
  std::vector<std::vector<double>> values;
  void on_draw(const sgmcmc::Draw&) override {}
  void on_metrics(const sgmcmc::MetricsRow& row) override { values.emplace_back(row.values.begin(), row.values.end()); }
};

struct Temperatures {
  std::vector<std::string> names;
  std::vector<double> kinetic, configurational;  // empty kinetic: no such column
};

constexpr std::uint64_t iterations = 200000;

/// One chain on N(0, 1) with the sections of `toml`, the temperatures evaluated at every
/// iteration; the first 1 % of rows dropped (the chain starts at θ = 0).
Temperatures run_temperatures(const std::string& toml) {
  const auto model = std::make_shared<test::NormalTarget>(0.0, 1.0);
  auto config = sgmcmc::parse_config(toml, "test.toml");
  auto chain = sgmcmc::make_chain(test::checked_plan(config, *model), model, sgmcmc::Rng(2024, sgmcmc::chain_stream(0)));
  const sgmcmc::ChainSchedule schedule{.iterations = iterations, .thin = iterations, .eval_every = 1, .temperatures = true};
  Rows rows;
  chain->run(schedule, rows);
  Temperatures result{chain->metric_names(schedule), {}, {}};
  const auto column = [&](const char* name) {
    std::vector<double> values;
    const auto found = std::find(result.names.begin(), result.names.end(), name);
    if (found == result.names.end()) return values;
    const auto index = static_cast<std::size_t>(found - result.names.begin());
    for (std::size_t k = rows.values.size() / 100; k < rows.values.size(); ++k) values.push_back(rows.values[k][index]);
    return values;
  };
  result.kinetic = column(sgmcmc::kinetic_temperature_column);
  result.configurational = column(sgmcmc::configurational_temperature_column);
  return result;
}

void check_mean(const std::vector<double>& rows, double exact, const char* what) {
  REQUIRE(!rows.empty());
  const double se = test::batch_means_se(rows);
  INFO(what << ": mean " << test::mean(rows) << " vs exact " << exact << " (se " << se << ")");
  REQUIRE(std::abs(test::autocorrelation(rows, rows.size() / 100)) < 0.05);
  CHECK(std::abs(test::mean(rows) - exact) < 5 * se);
}

}  // namespace

TEST_CASE("temperatures of exact samplers: obabo + mh with a mass M = 4 and baoab + mh give 1") {
  // An exact sampler leaves π(θ) N(p; 0, TM) invariant, so E[pᵀM⁻¹p]/d = T = 1 whatever M (a
  // kinetic temperature without M⁻¹ would give 4 here), and E[θ·∇U]/d = T by integration by parts.
  const auto obabo = run_temperatures(
      "[estimator]\nname = \"exact\"\n[integrator]\nname = \"obabo\"\nstep_size = 1.0\nfriction = 1.0\nmass = 4.0\n"
      "[corrector]\nname = \"mh\"\n");
  CHECK(obabo.names == std::vector<std::string>{"kinetic_temperature", "configurational_temperature", "accept_rate",
                                                "accept_rate_window"});
  check_mean(obabo.kinetic, 1.0, "obabo + mh, kinetic");
  check_mean(obabo.configurational, 1.0, "obabo + mh, configurational");
  // BAOAB's O sits between deterministic parts reversible under a momentum flip, so the block's
  // MH test keeps the joint law (modules/README.md, "Correctors"): 1 for both, at a step where
  // BAOAB without the test has kinetic temperature 0.75 (the next case).
  const auto baoab = run_temperatures(
      "[estimator]\nname = \"exact\"\n[integrator]\nname = \"baoab\"\nstep_size = 1.0\nfriction = 1.0\n"
      "[corrector]\nname = \"mh\"\n");
  check_mean(baoab.kinetic, 1.0, "baoab + mh, kinetic");
  check_mean(baoab.configurational, 1.0, "baoab + mh, configurational");
}

TEST_CASE("temperatures of biased samplers match their stationary moments: sghmc, baoab and obabo without mh") {
  const double lambda = 1.0;
  {
    const double h = 0.5, gamma = 1.0, denominator = 1.0 - gamma * h / 2 - h * h * lambda / 4;  // 0.6875
    const auto sghmc = run_temperatures(fmt::format(
        "[estimator]\nname = \"exact\"\n[integrator]\nname = \"sghmc\"\nstep_size = {}\nfriction = {}\n", h, gamma));
    check_mean(sghmc.kinetic, 1.0 / denominator, "sghmc, kinetic (1.4545)");
    check_mean(sghmc.configurational, (1.0 - gamma * h / 2) / denominator, "sghmc, configurational (1.0909)");
  }
  {
    const double h = 1.0;
    const auto baoab = run_temperatures(fmt::format(
        "[estimator]\nname = \"exact\"\n[integrator]\nname = \"baoab\"\nstep_size = {}\nfriction = 1.0\n", h));
    check_mean(baoab.kinetic, 1.0 - h * h * lambda / 4, "baoab, kinetic after the step (0.75)");
    check_mean(baoab.configurational, 1.0, "baoab, configurational (exact)");
    const auto obabo = run_temperatures(fmt::format(
        "[estimator]\nname = \"exact\"\n[integrator]\nname = \"obabo\"\nstep_size = {}\nfriction = 1.0\n", h));
    check_mean(obabo.kinetic, 1.0, "obabo, kinetic after the last O (exact)");
    check_mean(obabo.configurational, 1.0 / (1.0 - h * h * lambda / 4), "obabo, configurational (4/3)");
  }
}

TEST_CASE("integrators without a momentum of their own have no kinetic temperature column") {
  // hmc and leapfrog redraw the momentum whole at each step's start, as mala does: the one they
  // carry is not a state of the chain, and after an MH rejection it is the one saved before the
  // refresh, so even exact HMC's would not have mean T (0.95 at h = 0.5, L = 3 on N(0, 1), with 200,000
  // rows and a batch-means se of 0.003, when hmc still reported it).
  for (const char* integrator : {"sgld", "mala", "psgld", "hmc", "leapfrog"}) {
    INFO(integrator);
    const auto model = std::make_shared<test::NormalTarget>(0.0, 1.0);
    auto config = sgmcmc::parse_config(
        fmt::format("[estimator]\nname = \"exact\"\n[integrator]\nname = \"{}\"\nstep_size = 0.1\n", integrator), "test.toml");
    const auto chain = sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(1, sgmcmc::chain_stream(0)));
    CHECK(chain->metric_names({.temperatures = true}) == std::vector<std::string>{"configurational_temperature"});
    CHECK(chain->metric_names({}).empty());
  }
}
