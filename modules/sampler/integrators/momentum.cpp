// The implementation of the partition momentum.cppm: the friction's default and the moves of the
// integrators with a momentum.
module;
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>
module sgmcmc.integrators;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;

namespace sgmcmc::integrator_parts {

Friction::Friction(std::optional<double> friction, const StepSchedule& schedule)
    : gamma(friction.value_or(default_gamma(schedule))) {}

double Friction::default_gamma(const StepSchedule& schedule) { return default_per_step / schedule.at(1); }

double Friction::per_step(double h) const { return gamma * h; }

void MomentumIntegrator::initialise(ChainState& state, std::size_t dimension, Rng& rng) {
  ScheduledIntegrator::initialise(state, dimension, rng);
  state.momentum.assign(dimension, 0.0);
  refresh(state, 0.0, rng);
}

std::optional<double> MomentumIntegrator::kinetic_temperature(const ChainState& state) const {
  return 2.0 * kinetic_energy(state.momentum, mass_) / static_cast<double>(state.momentum.size());
}

void MomentumIntegrator::refresh(ChainState& state, double retention, Rng& rng) const {
  ornstein_uhlenbeck(state.momentum, retention, temperature_, mass_, rng);
}

void MomentumIntegrator::move(ChainState& state, double h) const {
  drift(state.theta, state.momentum, mass_, h, state.reflect_at_zero);
}

void MomentumIntegrator::half_kick(ChainState& state, double h) const {
  const double before = kinetic_energy(state.momentum, mass_);
  kick(state.momentum, state.gradient, h / 2);
  state.energy_error += kinetic_energy(state.momentum, mass_) - before;
}

void MomentumIntegrator::kick_drift_kick(ChainState& state, double h, Estimator& estimator, ChainContext& context) const {
  ensure_gradient(state, estimator, context);
  const double before = kinetic_energy(state.momentum, mass_);
  kick(state.momentum, state.gradient, h / 2);
  move(state, h);
  new_gradient(state, estimator, context);
  kick(state.momentum, state.gradient, h / 2);
  state.energy_error += kinetic_energy(state.momentum, mass_) - before;
}

}  // namespace sgmcmc::integrator_parts
