// The implementation of the partition scheduled.cppm: the bodies of ScheduledIntegrator (the step,
// the setters the chain's adaptation calls, the checkpoint state) and the readers of the keys every
// integrator reads.
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
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

void new_gradient(ChainState& state, Estimator& estimator, ChainContext& context) {
  estimator.estimate(state.theta, state.gradient, context);
  state.gradient_valid = true;
}

void ensure_gradient(ChainState& state, Estimator& estimator, ChainContext& context) {
  if (!state.gradient_valid) new_gradient(state, estimator, context);
}

// ---- ScheduledIntegrator ------------------------------------------------------------------------

ScheduledIntegrator::ScheduledIntegrator(const ScheduleParameters& schedule, double temperature, const Mass& mass,
                                         bool adapt_mass, StepAdaptation step_adaptation)
    : schedule_(schedule), temperature_(temperature), mass_(mass),
      adaptation_{.mass = adapt_mass, .dense = mass.dense, .windows = mass.windows, .step = step_adaptation,
                  .first_step = schedule_.at(1)} {
  // The values were checked against the parameters' field table (make_integrator).
}

void ScheduledIntegrator::initialise(ChainState& state, std::size_t dimension, Rng& rng) {
  Integrator::initialise(state, dimension, rng);
  mass_.resize(dimension);
}

void ScheduledIntegrator::prepare(ChainState& state, ChainContext& context) {
  if (!mass_.fisher()) return;
  mass_.set_mass(fisher_mass(context.model, state.theta, context.workspace, mass_.dense(), mass_.ridge()),
                 state.momentum);
  context.cost.item_gradients += context.model.num_items();  // one pass, counted as the centre's is
  ++context.cost.full_passes;
}

AdaptationSettings ScheduledIntegrator::adaptation() const { return adaptation_; }

void ScheduledIntegrator::set_step_size(double step) { set_step_ = step; }

void ScheduledIntegrator::set_adapted_mass(std::vector<double> adapted, ChainState& state) {
  mass_.adapt(std::move(adapted), state.momentum);
}

void ScheduledIntegrator::set_adapted_precision(std::vector<double> mass, ChainState& state) {
  mass_.set_mass(mass, state.momentum);
}

std::vector<double> ScheduledIntegrator::adapted_mass() const {
  return adaptation_.mass || mass_.fisher() ? mass_.mass() : std::vector<double>{};
}

double ScheduledIntegrator::step_size() const { return current_; }

double ScheduledIntegrator::temperature() const { return temperature_; }

bool ScheduledIntegrator::constant_step_size() const { return schedule_.constant(); }

void ScheduledIntegrator::save_state(StateWriter& out) const {
  out.section("integrator");
  out.number(current_);
  if (adaptation_.mass || mass_.fisher()) mass_.save(out);
}

void ScheduledIntegrator::restore_state(StateReader& in) {
  in.section("integrator");
  current_ = in.number();
  if (adaptation_.mass || mass_.fisher()) mass_.restore(in);
}

double ScheduledIntegrator::advance(const ChainState& state) {
  return current_ = set_step_ ? *set_step_ : schedule_.at(state.iteration);
}

}  // namespace sgmcmc::integrator_parts

namespace sgmcmc {

const FieldTable<StepScaling>& StepScaling::fields() {
  static const FieldTable<StepScaling> table = {
      flag_field("scale_step_with_n", &StepScaling::scale_step_with_n,
                 "true: step_size is the step for one data item, divided by N^p (see Samplers)")};
  return table;
}

}  // namespace sgmcmc
