// baoab: the BAOAB splitting of underdamped Langevin (Leimkuhler & Matthews 2013).
// The implementation of the partition baoab.cppm: its class, catalogue entry and key reader.
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

/// BAOAB (Leimkuhler & Matthews 2013): B(h/2) A(h/2) O(h) A(h/2) B(h/2), the O keeping
/// c = exp(-γh) over the whole step. For the MH energy error the parts between two O's are
/// deterministic, volume-preserving and reversible under a momentum flip (the B A before an O
/// and the A B after it), so ΔH̃ adds their changes of kinetic energy, as for OBABO (derivation
/// in modules/README.md, "Correctors").
class Baoab final : public MomentumIntegrator {
public:
  explicit Baoab(const BaoabParameters& parameters)
      : MomentumIntegrator(parameters), friction_(parameters.friction, schedule_) {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double h = advance(state);
    ensure_gradient(state, estimator, context);
    half_kick(state, h);
    move(state, h / 2);
    refresh(state, std::exp(-friction_.per_step(h)), context.rng);
    move(state, h / 2);
    new_gradient(state, estimator, context);
    half_kick(state, h);
  }

private:
  Friction friction_;
};

CatalogueEntry<IntegratorReader> baoab_entry() {
  return integrator_entry<BaoabParameters>("baoab", "BAOAB splitting, its O keeps exp(-γh) (step_size = h)");
}

}  // namespace sgmcmc::integrator_parts

namespace sgmcmc {

using namespace integrator_parts;

const FieldTable<BaoabParameters>& BaoabParameters::fields() {
  using P = BaoabParameters;
  static const FieldTable<P> table = concat<P>({mass_integrator_fields<P>(), {friction_field<P>()}, step_adaptation_fields<P>()});
  return table;
}

std::unique_ptr<Integrator> make_integrator(const BaoabParameters& parameters) {
  check_fields(BaoabParameters::fields(), parameters, "integrator baoab");
  return std::make_unique<Baoab>(parameters);
}

}  // namespace sgmcmc
