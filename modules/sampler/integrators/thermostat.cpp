// The implementation of the partition thermostat.cppm: the thermostat's D step and its checkpoint state.
module;
#include <cstddef>
#include <span>
#include <string>
#include <vector>
module sgmcmc.integrators;
import sgmcmc.sampler;
import sgmcmc.error;

namespace sgmcmc::integrator_parts {

void ThermostatIntegrator::save_state(StateWriter& out) const {
  MomentumIntegrator::save_state(out);
  out.section("thermostat");
  out.number(thermostat_);
}

void ThermostatIntegrator::restore_state(StateReader& in) {
  MomentumIntegrator::restore_state(in);
  in.section("thermostat");
  thermostat_ = in.number();
}

void ThermostatIntegrator::adjust_thermostat(const ChainState& state, double t) {
  const double d = static_cast<double>(state.momentum.size());
  thermostat_ += t * (2.0 * kinetic_energy(state.momentum, mass_) / d - temperature_);
}

}  // namespace sgmcmc::integrator_parts
