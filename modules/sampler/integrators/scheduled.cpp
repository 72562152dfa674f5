// The implementation of the partition scheduled.cppm: the bodies of ScheduledIntegrator (the step,
// the adaptation of the mass and of the step, their checkpoint state), of the dual averaging, and
// the readers of the keys every integrator reads.
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

// ---- DualAveraging (Hoffman & Gelman 2014, Alg. 5) ----------------------------------------------

void DualAveraging::restart(double step) {
  mu_ = std::log(10.0 * step);
  count_ = 0;
  h_bar_ = 0.0;
  log_averaged_ = 0.0;
}

double DualAveraging::learn(double accept_stat, double target) {
  const double alpha = std::isfinite(accept_stat) ? std::clamp(accept_stat, 0.0, 1.0) : 0.0;
  ++count_;
  const double m = static_cast<double>(count_);
  const double eta = 1.0 / (m + t0);
  h_bar_ = (1.0 - eta) * h_bar_ + eta * (target - alpha);
  const double log_step = mu_ - std::sqrt(m) / gamma * h_bar_;
  const double weight = std::pow(m, -kappa);
  log_averaged_ = weight * log_step + (1.0 - weight) * log_averaged_;
  return std::exp(log_step);
}

double DualAveraging::averaged(double current) const { return count_ ? std::exp(log_averaged_) : current; }

void DualAveraging::save(StateWriter& out) const {
  out.section("step size adaptation");
  out.count(count_);
  for (double value : {mu_, h_bar_, log_averaged_}) out.number(value);
}

void DualAveraging::restore(StateReader& in) {
  in.section("step size adaptation");
  count_ = in.count();
  for (double* value : {&mu_, &h_bar_, &log_averaged_}) *value = in.number();
}

// ---- ScheduledIntegrator ------------------------------------------------------------------------

ScheduledIntegrator::ScheduledIntegrator(const ScheduleParameters& schedule, double temperature, const Mass& mass,
                                         bool adapt_mass, StepAdaptation step_adaptation)
    : schedule_(schedule), temperature_(temperature), mass_(mass), adapt_mass_(adapt_mass), adaptation_(mass.dense, mass.windows),
      step_adaptation_(step_adaptation), adapted_step_(schedule_.at(1)) {
  // The values were checked against the parameters' field table (make_integrator).
  if (step_adaptation_.adapt) dual_averaging_.restart(adapted_step_);
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

void ScheduledIntegrator::after_block(ChainState& state, std::uint64_t warmup, const Decision& decision) {
  if (state.iteration > warmup) return;
  const bool adapting_step = step_adaptation_.adapt && !step_frozen_;
  if (adapting_step) adapted_step_ = dual_averaging_.learn(decision.accept_stat, step_adaptation_.target_acceptance);
  if (adapt_mass_) {
    if (auto mass = adaptation_.observe(state.iteration, warmup, state.theta)) {
      mass_.adapt(std::move(*mass), state.momentum);
      if (adapting_step) dual_averaging_.restart(adapted_step_);
    }
  }
  if (adapting_step && state.iteration == warmup) {
    adapted_step_ = dual_averaging_.averaged(adapted_step_);
    step_frozen_ = true;
  }
}

std::vector<double> ScheduledIntegrator::adapted_mass() const {
  return adapt_mass_ || mass_.fisher() ? mass_.mass() : std::vector<double>{};
}

bool ScheduledIntegrator::adapts_step_size() const { return step_adaptation_.adapt; }

std::optional<double> ScheduledIntegrator::adapted_step_size() const {
  return step_frozen_ ? std::optional<double>(adapted_step_) : std::nullopt;
}

double ScheduledIntegrator::step_size() const { return current_; }

double ScheduledIntegrator::temperature() const { return temperature_; }

bool ScheduledIntegrator::constant_step_size() const { return schedule_.constant(); }

void ScheduledIntegrator::save_state(StateWriter& out) const {
  out.section("integrator");
  out.number(current_);
  if (adapt_mass_) adaptation_.save(out);
  if (adapt_mass_ || mass_.fisher()) mass_.save(out);
  if (step_adaptation_.adapt) {
    dual_averaging_.save(out);
    out.number(adapted_step_);
    out.flag(step_frozen_);
  }
}

void ScheduledIntegrator::restore_state(StateReader& in) {
  in.section("integrator");
  current_ = in.number();
  if (adapt_mass_) adaptation_.restore(in);
  if (adapt_mass_ || mass_.fisher()) mass_.restore(in);
  if (step_adaptation_.adapt) {
    dual_averaging_.restore(in);
    adapted_step_ = in.number();
    step_frozen_ = in.flag();
  }
}

double ScheduledIntegrator::advance(const ChainState& state) {
  return current_ = step_adaptation_.adapt ? adapted_step_ : schedule_.at(state.iteration);
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
