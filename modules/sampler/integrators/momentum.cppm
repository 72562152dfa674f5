// What the integrators with a momentum share: the friction γ and the base class MomentumIntegrator
// (the first momentum, the O, A and B substeps, and the leapfrog core BAB).
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
export module sgmcmc.integrators:momentum;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;
import :scheduled;


namespace sgmcmc::integrator_parts {

/// The friction γ of the Langevin SDE (`friction`, in units of 1/time). By default γ = 0.1/h₀ for
/// the first step h₀ (`step_size`), so that γh₀ = 0.1: a momentum decay per step in the range
/// Chen, Fox & Guestrin (2014) relate to SGD with momentum for SGHMC. A fixed γ would give γh ≈ 0
/// at a small step, where the friction no longer damps the minibatch noise and the chain heats
/// up; γ = 0 never refreshes the momentum, so the chain does not mix, and is refused.
struct Friction {
  static constexpr double default_per_step = 0.1;
  /// γ, or its default for the schedule's first step h₀ = schedule.at(1) (checked by friction_field).
  Friction(std::optional<double> friction, const StepSchedule& schedule);
  static double default_gamma(const StepSchedule& schedule);
  double per_step(double h) const;
  double gamma;
};

/// Integrators with momentum: mass, and the first momentum drawn from N(0, TM).
class MomentumIntegrator : public ScheduledIntegrator {
public:
  template <class Parameters>
  explicit MomentumIntegrator(const Parameters& parameters) : ScheduledIntegrator(parameters) {}
  void initialise(ChainState& state, std::size_t dimension, Rng& rng) override;
  /// pᵀM⁻¹p/d = 2 K(p)/d with the mass in use now: the momentum the step ended with (after the
  /// final O of OBABO, the last kick of BAOAB, SGHMC, SGNHT, BADODAB; hmc and mala have none).
  std::optional<double> kinetic_temperature(const ChainState& state) const override;

protected:
  /// O with retention c: m ← c m + sqrt((1 - c²)T) M^{1/2} ξ.
  void refresh(ChainState& state, double retention, Rng& rng) const;
  /// A over h, reflecting at 0 where the model's parameters are positive.
  void move(ChainState& state, double h) const;
  /// B(h/2) with the gradient in state.gradient, adding its change of ½mᵀM⁻¹m to
  /// state.energy_error (for BAOAB, whose O step sits between its two kicks).
  void half_kick(ChainState& state, double h) const;
  /// BAB with step h (leapfrog): the volume-preserving, reversible core of a step. The first kick
  /// uses the gradient kept at θ (or a fresh one), the second a new estimate at the new θ, kept
  /// for the next step. A drift leaves ½mᵀM⁻¹m alone (a reflection too), so the two kicks'
  /// share of the energy error is the change of ½mᵀM⁻¹m over the whole BAB: two evaluations.
  void kick_drift_kick(ChainState& state, double h, Estimator& estimator, ChainContext& context) const;
};

/// `friction`, whose default (Friction) depends on the schedule's first step, read before it.
template <class P>
Field<P> friction_field() {
  const Constraint positive_friction{
      "> 0",
      fmt::format("a friction γ > 0 (with γ = 0 the momentum is never refreshed and the chain does not mix; omit the "
                  "key for the default γ = {}/step_size)",
                  Friction::default_per_step),
      [](double gamma) { return gamma > 0.0; }};
  return number_field<P>(
      "friction", &P::friction, [](const P& p) { return Friction::default_gamma(StepSchedule(p.schedule)); },
      fmt::format("{}/step_size", Friction::default_per_step), "γ, the momentum's friction", positive_friction);
}

}  // namespace sgmcmc::integrator_parts
