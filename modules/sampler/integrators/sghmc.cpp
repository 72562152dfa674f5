// sghmc: the symplectic Euler-Maruyama step of SGHMC (Chen, Fox & Guestrin 2014).
// The implementation of the partition sghmc.cppm: its class, catalogue entry and key reader.
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

/// SGHMC with the symplectic Euler–Maruyama step (Chen, Fox & Guestrin 2014, without the
/// noise-estimate correction B̂; Garriga-Alonso & Fortuin 2021, eq. 6):
/// m' = (1 - γh) m - h ĝ(θ) + sqrt(2γhT) M^{1/2} ξ,  θ' = θ + h M⁻¹ m'.
class Sghmc final : public MomentumIntegrator {
public:
  explicit Sghmc(const SghmcParameters& parameters)
      : MomentumIntegrator(parameters), friction_(parameters.friction, schedule_) {
    // γh >= 1 makes the decay 1 - γh flip the momentum every step: not a discretisation of SGHMC.
    // The largest step is the first (from_settings makes the same check and names the key).
    const double decay = friction_.per_step(schedule_.at(1));
    require_parameter(decay < 1.0, "integrator sghmc", "friction × step size below 1", decay);
  }

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double h = advance(state), decay = friction_.per_step(h);
    const double noise = std::sqrt(2.0 * decay * temperature_);
    estimator.estimate(state.theta, state.gradient, context);
    euler_momentum(state.momentum, state.gradient, decay, h, noise, mass_, context.rng);
    move(state, h);
    state.gradient_valid = false;
  }

private:
  Friction friction_;
};

CatalogueEntry<IntegratorFactory> sghmc_entry() {
  return {"sghmc", "SGHMC, symplectic Euler-Maruyama, momentum decay 1 - γh (step_size = h); keys " + friction_doc(),
       with_mass_keys({"friction"}), factory<SghmcParameters>(),
       "sghmc's Euler-Maruyama step has no realisable backward move (its momentum update is not an OU flow composed "
       "with reversible kicks), so every MH acceptance probability is exactly 0 (Garriga-Alonso & Fortuin 2021, "
       "Thm. 1); use 'obabo', which keeps a non-zero acceptance"};
}

}  // namespace sgmcmc::integrator_parts

namespace sgmcmc {

using namespace integrator_parts;

SghmcParameters SghmcParameters::from_settings(const Settings& section) {
  auto parameters = read_scheduled<SghmcParameters>(section);
  parameters.friction = read_friction(section, parameters.schedule);
  // Every schedule takes its largest step first (schedule.at(1)), so one check covers the run.
  if (const double decay = *parameters.friction * StepSchedule(parameters.schedule).at(1); !(decay < 1.0))
    throw Error(fmt::format("{}: friction × step size = {} must be below 1, or sghmc's momentum decay 1 - γh flips "
                            "the momentum's sign every step; choose a smaller friction or step_size",
                            section.describe("friction"), decay));
  return parameters;
}

std::unique_ptr<Integrator> make_integrator(const SghmcParameters& parameters) {
  return std::make_unique<Sghmc>(parameters);
}

}  // namespace sgmcmc
