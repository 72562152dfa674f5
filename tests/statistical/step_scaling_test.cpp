// integrator.scale_step_with_n: a step written for one item gives the same chain, relative to the
// posterior, at every data size (modules/README.md, "Step sizes across data sizes").
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "statistics.hpp"
#include "targets.hpp"

import sgmcmc;

namespace {

/// N items y_i = 0 with f_i(θ) = θ²/2 and a flat prior: U = Nθ²/2, the posterior N(0, 1/N), whose
/// curvature λ = N grows with the data as a likelihood's does.
class ItemsOfUnitCurvature final : public sgmcmc::Model {
public:
  explicit ItemsOfUnitCurvature(std::size_t items) : items_(items) {}
  std::size_t dimension() const override { return 1; }
  std::size_t num_items() const override { return items_; }
  std::vector<std::string> parameter_names() const override { return {"theta"}; }
  sgmcmc::Capabilities capabilities() const override { return {.exact_log_likelihood = true}; }
  double prior_potential(std::span<const double>) const override { return 0.0; }
  void add_prior_gradient(std::span<const double>, std::span<double>) const override {}
  void add_data_gradient(std::span<const double> theta, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, sgmcmc::Rng&) const override {
    for (std::size_t k = 0; k < batch.items.size(); ++k) gradient[0] += batch.weight(k) * theta[0];
  }
  double data_potential(std::span<const double> theta, const sgmcmc::Batch& batch, sgmcmc::Workspace&) const override {
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) sum += batch.weight(k) * 0.5 * theta[0] * theta[0];
    return sum;
  }

private:
  std::size_t items_;
};

}  // namespace

TEST_CASE("a step given for one item keeps N·Var(θ) at its exact value at N = 10 and N = 1,000") {
  // Quantity: N times the chain's variance of θ, exact gradients, step_size = 1 for one item.
  // Reference, derived for a Gaussian of curvature λ (here λ = N; modules/README.md derives both):
  // - sgld and mala (ε = 1/N, ελ = 1): θ' = (1 - ελ/2)θ + sqrt(ε)ξ is an AR(1) of variance
  //   ε/(1 - (1 - ελ/2)²) = 1/(λ(1 - ελ/4)), so N·Var = 4/3;
  // - obabo (h = 1/sqrt(N), h²λ = 1): its B A B map keeps ½m² + ½λ(1 - h²λ/4)θ² and its O steps
  //   keep m ~ N(0, 1), so Var θ = 1/(λ(1 - h²λ/4)) at any friction: 4/3 again;
  // - baoab (h²λ = 1): its θ marginal is exact on a quadratic (Leimkuhler & Matthews 2013): 1.
  // A step not divided by N (or divided by the wrong power) gives ελ ≥ 30 at N = 1,000 and
  // diverges, or, at N = 10 with the wrong power, N·Var far from the reference (ε = 1/sqrt(10):
  // ελ = 3.2, N·Var = 4.8).
  // Tolerance: 5 batch-means standard errors of the sample variance (100 batches of 2,000 draws,
  // each batch much longer than the chains' autocorrelation times: at most ~20 steps for obabo's
  // γh = 0.1 momentum refresh), about 1-2% of the reference: a 5 SE miss has probability < 1e-6.
  struct Case {
    const char* integrator;
    double reference;
  };
  const Case cases[] = {{"sgld", 4.0 / 3.0}, {"mala", 4.0 / 3.0}, {"obabo", 4.0 / 3.0}, {"baoab", 1.0}};
  for (const std::size_t items : {std::size_t{10}, std::size_t{1000}})
    for (const auto& [integrator, reference] : cases) {
      INFO(integrator << " at N = " << items);
      const auto model = std::make_shared<const ItemsOfUnitCurvature>(items);
      const auto run = test::run_chain(model,
                                       fmt::format("[estimator]\nname = \"exact\"\n[integrator]\nname = \"{}\"\n"
                                                   "step_size = 1.0\nscale_step_with_n = true\n",
                                                   integrator),
                                       201000);
      REQUIRE_FALSE(run.result.diverged);
      const auto draws = run.draws.coordinate(0, 1000);  // the first 1,000 iterations: burn-in from θ = 0
      const double n = static_cast<double>(items);
      const double scaled_variance = n * test::variance(draws), se = n * test::variance_se(draws);
      INFO("N·Var = " << scaled_variance << " ± " << se << ", reference " << reference);
      CHECK(std::abs(scaled_variance - reference) < 5.0 * se);
    }
}
