// ubu: the UBU splitting of underdamped Langevin dynamics (Sanz-Serna & Zygalakis 2021): one kick
// The implementation of the partition ubu.cppm: its class, catalogue entry and key reader.
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
module sgmcmc.integrators;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;

namespace sgmcmc::integrator_parts {

/// UBU (Sanz-Serna & Zygalakis 2021, JMLR 22(242), §2, the splitting they call UBU): U(h/2) B(h)
/// U(h/2), where U is the exact flow of everything but the force (free_flow, with the mass M:
/// θ moves by M⁻¹ of the momentum-space increment, the noise coloured by M^{1/2}) and B the kick
/// m ← m - h ĝ(θ) with one gradient estimate at the middle point. Second order in h with exact
/// gradients, as BAOAB, at one gradient per step. For the MH energy error each U is reversible
/// under a momentum flip with respect to Lebesgue measure in θ times N(0, TM) in m (as an O
/// step), so ΔH̃ adds only the kick's change of ½mᵀM⁻¹m (modules/README.md, "UBU"). For positive
/// parameters a coordinate a U leaves below 0 is folded back, θ_j ← -θ_j, m_j ← -m_j: the force-free
/// flow is symmetric under that map, so the folded flow keeps the same reversibility.
class Ubu final : public MomentumIntegrator {
public:
  explicit Ubu(const UbuParameters& parameters)
      : MomentumIntegrator(parameters), friction_(parameters.friction, schedule_) {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double h = advance(state);
    flow_without_force(state, h / 2, context.rng);
    new_gradient(state, estimator, context);
    const double before = kinetic_energy(state.momentum, mass_);
    kick(state.momentum, state.gradient, h);
    state.energy_error += kinetic_energy(state.momentum, mass_) - before;
    flow_without_force(state, h / 2, context.rng);
    state.gradient_valid = false;  // the kick's gradient was at the middle point
  }

private:
  /// U over t: with ξ₁, ξ₂ ~ N(0, I) coloured as a = M^{1/2}ξ₁, b = M^{1/2}ξ₂ (the whitened
  /// momentum q = M^{-1/2}m follows the unit-mass flow, and θ moves by M^{-1/2}q dt),
  ///   θ ← θ + M⁻¹(drift m + joint a + position b),   m ← retention m + momentum_noise a.
  void flow_without_force(ChainState& state, double t, Rng& rng) {
    const FreeFlow flow = free_flow(friction_.gamma, t, temperature_);
    const std::size_t d = state.theta.size();
    first_.resize(d);
    second_.resize(d);
    rng.fill_normal(first_);
    rng.fill_normal(second_);
    for (auto* normals : {&first_, &second_}) colour_as_mass(*normals);
    increment_.resize(d);
    for (std::size_t j = 0; j < d; ++j) {
      increment_[j] = flow.drift * state.momentum[j] + flow.joint_noise * first_[j] + flow.position_noise * second_[j];
      state.momentum[j] = flow.retention * state.momentum[j] + flow.momentum_noise * first_[j];
    }
    if (mass_.dense()) {
      velocity_.resize(d);
      mass_.times_inverse(increment_, velocity_);
      for (std::size_t j = 0; j < d; ++j) state.theta[j] += velocity_[j];
    } else {
      const auto inverse = mass_.inverse();
      for (std::size_t j = 0; j < d; ++j) state.theta[j] += inverse[j] * increment_[j];
    }
    if (state.reflect_at_zero)
      for (std::size_t j = 0; j < d; ++j)
        if (state.theta[j] < 0.0) {
          state.theta[j] = -state.theta[j];
          state.momentum[j] = -state.momentum[j];
        }
  }
  /// ξ ← M^{1/2}ξ ~ N(0, M).
  void colour_as_mass(std::vector<double>& normals) const {
    if (mass_.dense()) return mass_.correlate_as_mass(normals);
    const auto sqrt_mass = mass_.sqrt();
    for (std::size_t j = 0; j < normals.size(); ++j) normals[j] *= sqrt_mass[j];
  }

  Friction friction_;
  std::vector<double> first_, second_, increment_, velocity_;  // scratch: ξ₁, ξ₂ coloured; the increment; M⁻¹ of it
};

CatalogueEntry<IntegratorReader> ubu_entry() {
  return integrator_entry<UbuParameters>(
      "ubu", "UBU splitting: one kick between two exact force-free flows U(h/2) (Sanz-Serna & Zygalakis 2021; step_size "
             "= h, second order, one gradient per step)");
}

}  // namespace sgmcmc::integrator_parts

namespace sgmcmc {

using namespace integrator_parts;

FreeFlow free_flow(double friction, double t, double temperature) {
  const double a = friction * t, retained = std::exp(-a), lost = -std::expm1(-a);  // η and 1 - η
  // 2a - 3 + 4η - η² = 2a - 2(1 - η) - (1 - η)², which cancels to (2/3)a³ + O(a⁴): below a = 1e-3
  // its Taylor series (four terms: relative error below 1e-12) replaces the difference.
  const double spread = a < 1e-3 ? a * a * a * (2.0 / 3 - a / 2 + 7.0 / 30 * a * a - a * a * a / 12)
                                  : 2.0 * a - 2.0 * lost - lost * lost;
  const double momentum_variance = temperature * lost * (2.0 - lost);  // T(1 - η²)
  const double covariance = temperature * lost * lost / friction;
  const double position_variance = temperature * spread / (friction * friction);
  const double momentum_noise = std::sqrt(momentum_variance);
  const double joint_noise = momentum_noise > 0.0 ? covariance / momentum_noise : 0.0;
  const double position_noise = std::sqrt(std::max(position_variance - joint_noise * joint_noise, 0.0));
  return {retained, lost / friction, momentum_noise, joint_noise, position_noise};
}

const FieldTable<UbuParameters>& UbuParameters::fields() {
  using P = UbuParameters;
  static const FieldTable<P> table = concat<P>({mass_integrator_fields<P>(), {friction_field<P>()}, step_adaptation_fields<P>()});
  return table;
}

std::unique_ptr<Integrator> make_integrator(const UbuParameters& parameters) {
  check_fields(UbuParameters::fields(), parameters, "integrator ubu");
  return std::make_unique<Ubu>(parameters);
}

}  // namespace sgmcmc
