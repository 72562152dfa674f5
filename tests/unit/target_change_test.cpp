// A model's after_step that changes the target (Gibbs steps of hyperparameters) makes the chain
// drop what it cached of the old target: the integrators' gradient at θ (obabo, baoab reuse it
// as the next step's first kick), the MH corrector's U(θ_0), and for a change of the data terms
// the estimators' sums (a SAGA table).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "targets.hpp"

namespace target_change_test {

/// U(x) = ½(x - μ)² as a prior with μ in the chain's workspace (0 at the start), one data item
/// with f_1 = 0. after_step at iteration 1 sets μ = 5 and reports `change`. Every prior gradient
/// and potential records the (x, μ) it was evaluated at (the tests are single-threaded).
class ShiftingTarget final : public sgmcmc::Model {
public:
  explicit ShiftingTarget(sgmcmc::TargetChange change) : change_(change) {}
  struct Mu final : sgmcmc::Workspace {
    double mu = 0.0;
  };
  std::size_t dimension() const override { return 1; }
  std::size_t num_items() const override { return 1; }
  std::vector<std::string> parameter_names() const override { return {"x"}; }
  sgmcmc::Capabilities capabilities() const override { return {.exact_log_likelihood = true}; }
  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override { return std::make_unique<Mu>(); }
  double prior_potential(std::span<const double>) const override { return 0.0; }
  void add_prior_gradient(std::span<const double>, std::span<double>) const override {}
  double prior_potential_given(std::span<const double> x, sgmcmc::Workspace& workspace) const override {
    const double mu = static_cast<Mu&>(workspace).mu;
    potentials.emplace_back(x[0], mu);
    return 0.5 * (x[0] - mu) * (x[0] - mu);
  }
  void add_prior_gradient_given(std::span<const double> x, std::span<double> gradient,
                                sgmcmc::Workspace& workspace) const override {
    const double mu = static_cast<Mu&>(workspace).mu;
    gradients.emplace_back(x[0], mu);
    gradient[0] += x[0] - mu;
  }
  void add_data_gradient(std::span<const double>, const sgmcmc::Batch&, std::span<double>, sgmcmc::Workspace&,
                         sgmcmc::Rng&) const override {}
  double data_potential(std::span<const double>, const sgmcmc::Batch&, sgmcmc::Workspace&) const override { return 0.0; }
  sgmcmc::TargetChange after_step(std::uint64_t iteration, std::span<double>, sgmcmc::Workspace& workspace,
                                  sgmcmc::Rng&, const sgmcmc::ItemSums&) const override {
    if (iteration != 1) return sgmcmc::TargetChange::none;
    static_cast<Mu&>(workspace).mu = 5.0;
    return change_;
  }

  mutable std::vector<std::pair<double, double>> gradients, potentials;  // (x, μ) of each call

private:
  sgmcmc::TargetChange change_;
};

bool contains(const std::vector<std::pair<double, double>>& calls, double x, double mu) {
  return std::find(calls.begin(), calls.end(), std::pair{x, mu}) != calls.end();
}

}  // namespace target_change_test

using namespace target_change_test;

TEST_CASE("after a target change the next step's first kick uses the new target's gradient (obabo, baoab)") {
  // Iteration 1 ends at θ_1 with a gradient cached at θ_1 under μ = 0; after_step then moves μ to
  // 5. Iteration 2's first kick must use ∇U(θ_1) under μ = 5: a gradient evaluated at (θ_1, 5).
  // A model that hides the change (reports `none`) shows what the chain did before: the cached
  // gradient is reused and no such evaluation happens, so the check can fail.
  for (const char* integrator : {"obabo", "baoab"})
    for (const auto change : {sgmcmc::TargetChange::prior, sgmcmc::TargetChange::none}) {
      const auto model = std::make_shared<ShiftingTarget>(change);
      const auto run = test::run_chain(model, fmt::format("[estimator]\nname = \"exact\"\n[integrator]\nname = \"{}\"\n"
                                                          "step_size = 0.1\n",
                                                          integrator),
                                       2);
      REQUIRE(run.draws.rows.size() == 2);
      const double theta_1 = run.draws.rows[0][0];
      INFO(integrator << ", after_step reports " << (change == sgmcmc::TargetChange::prior ? "prior" : "none"));
      CHECK(contains(model->gradients, theta_1, 5.0) == (change == sgmcmc::TargetChange::prior));
    }
}

TEST_CASE("after a target change the MH corrector recomputes U(θ_0) under the new target") {
  // obabo + mh (every = 1): the block of iteration 2 starts at θ_1 (the state after iteration 1's
  // decision, the first draw); its U(θ_0) must be evaluated at (θ_1, μ = 5), not kept from
  // iteration 1's end under μ = 0. Hidden change: no such evaluation.
  for (const auto change : {sgmcmc::TargetChange::prior, sgmcmc::TargetChange::none}) {
    const auto model = std::make_shared<ShiftingTarget>(change);
    const auto run = test::run_chain(model, "[estimator]\nname = \"exact\"\n[integrator]\nname = \"obabo\"\n"
                                            "step_size = 0.1\n[corrector]\nname = \"mh\"\n",
                                     2);
    REQUIRE(run.draws.rows.size() == 2);
    const double theta_1 = run.draws.rows[0][0];
    CHECK(contains(model->potentials, theta_1, 5.0) == (change == sgmcmc::TargetChange::prior));
  }
}

TEST_CASE("a change of the data terms makes saga refill its table, a prior change does not") {
  // saga fills its table with one full pass at the first estimate. TargetChange::data after
  // iteration 1 costs exactly one more full pass (the refill at iteration 2); `prior` costs none.
  for (const auto& [change, passes] : {std::pair{sgmcmc::TargetChange::data, 2u}, std::pair{sgmcmc::TargetChange::prior, 1u}}) {
    const auto model = std::make_shared<ShiftingTarget>(change);
    const auto run = test::run_chain(model, "[estimator]\nname = \"saga\"\nbatch_size = 1\n[integrator]\nname = \"sgld\"\n"
                                            "step_size = 0.1\n",
                                     3);
    CHECK(run.result.cost.full_passes == passes);
  }
}

TEST_CASE("psgld's V holds the data term alone: the prior it subtracts is the one given the chain's current hyperparameters") {
  // pSGLD's V averages ḡ⊙ḡ with ḡ = (ĝ - ∇f_0)/N, the mean data gradient (Li et al. 2016, Alg. 1).
  // ShiftingTarget has no data term (f_1 = 0) and a prior whose centre μ lives in the workspace
  // (0, then 5 from iteration 1 on, as a Gibbs step of a hyperparameter would set it): the exact
  // ĝ is the prior's gradient given μ, so ḡ = 0 and V = 0 at every step, and the mass frozen
  // after the warmup is λ + sqrt(V) = λ exactly. Subtracting the prior without the workspace
  // (add_prior_gradient, here 0) leaves ḡ = x - μ ≈ -5 from iteration 2 on: V of order 10 (the
  // mass was 1.83 when this was broken on purpose).
  const auto model = std::make_shared<ShiftingTarget>(sgmcmc::TargetChange::prior);
  const auto run = test::run_chain(model, "[estimator]\nname = \"exact\"\n[integrator]\nname = \"psgld\"\nstep_size = 0.1\n"
                                          "alpha = 0.5\nlambda = 0.001\n",
                                   2, 1, 2024, 3);
  CHECK(run.result.adapted_mass == std::vector<double>{0.001});
}

TEST_CASE("psgld is refused without a warmup, or with a preconditioner that never freezes, with the reason") {
  const auto model = std::make_shared<ShiftingTarget>(sgmcmc::TargetChange::prior);
  const std::string psgld = "[estimator]\nname = \"exact\"\n[integrator]\nname = \"psgld\"\nstep_size = 0.1\n";
  CHECK_THROWS_WITH(test::run_chain(model, psgld, 2), Catch::Matchers::Contains("psgld needs a warmup (run.warmup > 0)") &&
                                                          Catch::Matchers::Contains("Γ(θ)"));
  CHECK_THROWS_WITH(test::run_chain(model, psgld + "freeze_after_warmup = false\n", 2, 1, 2024, 3),
                    Catch::Matchers::Contains("freeze_after_warmup = false") && Catch::Matchers::Contains("frozen after a warmup"));
  CHECK_NOTHROW(test::run_chain(model, psgld, 2, 1, 2024, 3));
}
