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
      : MomentumIntegrator(parameters), friction_(parameters.friction, schedule_) {}

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

/// friction, also refused where γh >= 1 makes the decay 1 - γh flip (or zero) the momentum every
/// step: not a discretisation of SGHMC. Every schedule takes its largest step first, so one check
/// covers the run.
Field<SghmcParameters> sghmc_friction_field() {
  Field<SghmcParameters> field = friction_field<SghmcParameters>();
  field.problem = [positive_friction = field.problem](const SghmcParameters& p) {
    if (std::string problem = positive_friction(p); !problem.empty()) return problem;
    const double decay = Friction(p.friction, StepSchedule(p.schedule)).per_step(StepSchedule(p.schedule).at(1));
    if (decay < 1.0) return std::string();
    return fmt::format("expected friction × step size below 1, found {}: sghmc's momentum decay 1 - γh would flip the "
                       "momentum's sign every step; choose a smaller friction or step_size",
                       decay);
  };
  return field;
}

CatalogueEntry<IntegratorReader> sghmc_entry() {
  return integrator_entry<SghmcParameters>(
      "sghmc", "SGHMC, symplectic Euler-Maruyama, momentum decay 1 - γh (step_size = h)",
       "sghmc's Euler-Maruyama step has no realisable backward move (its momentum update is not an OU flow composed "
       "with reversible kicks), so every MH acceptance probability is exactly 0 (Garriga-Alonso & Fortuin 2021, "
       "Thm. 1); use 'obabo', which keeps a non-zero acceptance");
}

}  // namespace sgmcmc::integrator_parts

namespace sgmcmc {

using namespace integrator_parts;

const FieldTable<SghmcParameters>& SghmcParameters::fields() {
  using P = SghmcParameters;
  static const FieldTable<P> table = concat<P>({mass_integrator_fields<P>(), {sghmc_friction_field()}});
  return table;
}

std::unique_ptr<Integrator> make_integrator(const SghmcParameters& parameters) {
  check_fields(SghmcParameters::fields(), parameters, "integrator sghmc");
  return std::make_unique<Sghmc>(parameters);
}

}  // namespace sgmcmc
