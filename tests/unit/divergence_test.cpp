// The chain's divergence stop (Chain::divergence): a θ that is not finite stops the chain with a
// message, whether or not run.divergence_threshold is set; a finite θ within the threshold does not.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include "targets.hpp"
#include "reading.hpp"

import sgmcmc;

namespace {

sgmcmc::ChainResult run_sgld(double mu, double divergence_threshold) {
  // N(μ, 1) with μ = NaN: the first gradient x - μ is NaN, and so is θ after the first step (not
  // an Inf: a check of |θ_j| > bound alone would let it through, since NaN > bound is false).
  auto model = std::make_shared<const test::NormalTarget>(mu, 1.0);
  auto config = sgmcmc::parse_config("[integrator]\nname = \"sgld\"\nstep_size = 0.1\n", "test.toml");
  auto chain = sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(7, sgmcmc::chain_stream(0)));
  test::Draws draws;
  return chain->run({.iterations = 50, .thin = 1, .eval_every = 50, .divergence_threshold = divergence_threshold}, draws);
}

}  // namespace

TEST_CASE("a chain whose θ becomes NaN stops as diverged, with or without a divergence threshold") {
  for (const double threshold : {0.0, 1e10}) {
    INFO("run.divergence_threshold = " << threshold);
    const auto result = run_sgld(std::numeric_limits<double>::quiet_NaN(), threshold);
    CHECK(result.diverged);
    CHECK(result.iterations == 0);  // it stopped in the first iteration, which is not counted as completed
    CHECK_THAT(result.message, Catch::Contains("no longer finite"));
  }
  const auto finite = run_sgld(0.0, 1e10);
  CHECK_FALSE(finite.diverged);
  CHECK(finite.iterations == 50);
}
