// sgnht: the Euler step of the stochastic gradient Nosé-Hoover thermostat (Ding et al. 2014).
// The implementation of the partition sgnht.cppm: its class, catalogue entry and key reader.
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

/// SGNHT (Ding, Fang, Babbush, Chen, Skeel & Neven 2014, Algorithm 2; there M = I, T = 1), the
/// Euler step of the thermostat's dynamics:
///   p' = (1 - ξh) p - h ĝ(θ) + sqrt(2AhT) M^{1/2} η,  θ' = θ + h M⁻¹p',  ξ' = ξ + h (p'ᵀM⁻¹p'/d - T),
/// η ~ N(0, I). Biased by O(h), as sghmc's Euler step.
class Sgnht final : public ThermostatIntegrator {
public:
  explicit Sgnht(const SgnhtParameters& parameters) : ThermostatIntegrator(parameters) {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double h = advance(state), noise = std::sqrt(2.0 * diffusion_ * h * temperature_);
    estimator.estimate(state.theta, state.gradient, context);
    euler_momentum(state.momentum, state.gradient, thermostat_ * h, h, noise, mass_, context.rng);
    move(state, h);
    state.gradient_valid = false;
    adjust_thermostat(state, h);
  }
};

CatalogueEntry<IntegratorReader> sgnht_entry() {
  return integrator_entry<SgnhtParameters>(
       "sgnht",
       "SGNHT: sghmc's Euler step with a thermostat ξ for friction, ξ' = ξ + h(pᵀM⁻¹p/d - T) (Ding et al. 2014, "
       "Alg. 2; step_size = h)",
       "sgnht's Euler-Maruyama momentum step has no realisable backward move, as sghmc's (Garriga-Alonso & Fortuin "
       "2021, Thm. 1), and its thermostat ξ changes with every step's momentum; use 'obabo'");
}

}  // namespace sgmcmc::integrator_parts

namespace sgmcmc {

using namespace integrator_parts;

const FieldTable<SgnhtParameters>& SgnhtParameters::fields() {
  static const FieldTable<SgnhtParameters> table = thermostat_fields<SgnhtParameters>();
  return table;
}

std::unique_ptr<Integrator> make_integrator(const SgnhtParameters& parameters) {
  check_fields(SgnhtParameters::fields(), parameters, "integrator sgnht");
  return std::make_unique<Sgnht>(parameters);
}

}  // namespace sgmcmc
