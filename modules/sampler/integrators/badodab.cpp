// badodab: sgnht's thermostat split B A D O D A B (Leimkuhler & Shang 2016).
// The implementation of the partition badodab.cppm: its class, catalogue entry and key reader.
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

/// BADODAB (Leimkuhler & Shang 2016, "Adaptive thermostats for noisy gradient systems", SIAM J.
/// Sci. Comput. 38(2)): the same dynamics as sgnht, split as B(h/2) A(h/2) D(h/2) O(h) D(h/2)
/// A(h/2) B(h/2), with D the thermostat's update over h/2 and O the exact flow of
/// dp = -ξp dt + sqrt(2AT) M^{1/2} dW over h at the current ξ. One gradient per step: the last
/// kick's, at the new θ, is kept for the next step's first (as BAOAB's). Second order, with the
/// superconvergence of BAOAB's configurational averages that Leimkuhler & Shang report.
class Badodab final : public ThermostatIntegrator {
public:
  explicit Badodab(const BadodabParameters& parameters) : ThermostatIntegrator(parameters) {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double h = advance(state);
    ensure_gradient(state, estimator, context);
    kick(state.momentum, state.gradient, h / 2);
    move(state, h / 2);
    adjust_thermostat(state, h / 2);
    thermostatted_ornstein_uhlenbeck(state.momentum, thermostat_, diffusion_, temperature_, h, mass_, context.rng);
    adjust_thermostat(state, h / 2);
    move(state, h / 2);
    new_gradient(state, estimator, context);
    kick(state.momentum, state.gradient, h / 2);
  }
};

CatalogueEntry<IntegratorReader> badodab_entry() {
  return integrator_entry<BadodabParameters>(
       "badodab",
       "BADODAB: sgnht's thermostat, split B A D O D A B with D the thermostat's half step and O exact at the current ξ "
       "(Leimkuhler & Shang 2016; step_size = h)",
       "badodab's O step has the friction ξ but the noise sqrt(2AT), so it keeps N(0, TM) invariant only when ξ = A; "
       "the MH energy error drops every O step as reversible with respect to N(0, TM), which then fails (and ξ, which "
       "its D steps change with the momentum, is state the test does not carry); use 'baoab'");
}

}  // namespace sgmcmc::integrator_parts

namespace sgmcmc {

using namespace integrator_parts;

const FieldTable<BadodabParameters>& BadodabParameters::fields() {
  static const FieldTable<BadodabParameters> table = thermostat_fields<BadodabParameters>();
  return table;
}

std::unique_ptr<Integrator> make_integrator(const BadodabParameters& parameters) {
  check_fields(BadodabParameters::fields(), parameters, "integrator badodab");
  return std::make_unique<Badodab>(parameters);
}

}  // namespace sgmcmc
