// hmc and its alias leapfrog: one leapfrog trajectory from a fresh momentum (Duane et al. 1987).
// The implementation of the partition hmc.cppm: its class, catalogue entries and key reader.
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>
#include <fmt/format.h>
module sgmcmc.integrators;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;

namespace sgmcmc::integrator_parts {

/// HMC / leapfrog (Duane et al. 1987; Neal 2011): each step is one trajectory of L BAB steps
/// from a fresh momentum ~ N(0, TM). With the `mh` corrector (every = 1) and exact gradients this
/// is HMC; with stochastic gradients and no corrector, naive SGHMC without friction.
class Hmc final : public MomentumIntegrator {
public:
  explicit Hmc(const HmcParameters& parameters) : MomentumIntegrator(parameters), steps_(parameters.steps) {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double h = advance(state);
    refresh(state, 0.0, context.rng);
    for (std::size_t l = 0; l < steps_; ++l) kick_drift_kick(state, h, estimator, context);
  }
  /// None, as `mala`'s: the momentum is redrawn whole at each step's start, so the one carried is
  /// no state of the chain (θ's next move does not depend on it), and after an MH rejection it is
  /// the one saved before the refresh, whose law is not N(0, TM) even for exact HMC (mean
  /// pᵀM⁻¹p/d 0.95 on N(0, 1) at h = 0.5, L = 3; tests/statistical/temperatures_test.cpp).
  std::optional<double> kinetic_temperature(const ChainState&) const override { return std::nullopt; }

private:
  std::size_t steps_;
};

CatalogueEntry<IntegratorReader> hmc_entry() {
  return integrator_entry<HmcParameters>(
      "hmc", "one leapfrog trajectory of `steps` steps per iteration from fresh momentum (step_size = h)");
}

CatalogueEntry<IntegratorReader> leapfrog_entry() {
  return integrator_entry<HmcParameters>("leapfrog", "the same as hmc");
}

}  // namespace sgmcmc::integrator_parts

namespace sgmcmc {

using namespace integrator_parts;

const FieldTable<HmcParameters>& HmcParameters::fields() {
  using P = HmcParameters;
  static const FieldTable<P> table = concat<P>(
      {mass_integrator_fields<P>(),
       {integer_field<P>("steps", &P::steps, "L, the leapfrog steps of a trajectory", at_least(1))},
       step_adaptation_fields<P>()});
  return table;
}

std::unique_ptr<Integrator> make_integrator(const HmcParameters& parameters) {
  check_fields(HmcParameters::fields(), parameters, "integrator hmc");
  return std::make_unique<Hmc>(parameters);
}

}  // namespace sgmcmc
