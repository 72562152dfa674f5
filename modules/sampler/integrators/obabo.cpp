// obabo (GGMC) and mala, its overdamped limit (Garriga-Alonso & Fortuin 2021).
// The implementation of the partition obabo.cppm: its class, catalogue entries and key reader.
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

/// OBABO / GGMC (Horowitz 1991; Garriga-Alonso & Fortuin 2021, §4, Alg. 1): O(h/2) B(h/2) A(h)
/// B(h/2) O(h/2), each O keeping c = exp(-γh/2) of the momentum. `mala` is the overdamped limit
/// γ → ∞ (c = 0): the MALA / SGLD update with ε = h². With a mass M, m ~ N(0, TM) then B(h/2) A(h)
/// give θ' = θ - (ε/2) M⁻¹ĝ + sqrt(εT) M^{-1/2} ξ, sgld's preconditioned step; the proposal's
/// density ratio is exp(-Δ(½mᵀM⁻¹m)/T) over the kicks, the kinetic energy the MH test already
/// adds, so MH stays exact for any constant positive M.
class Obabo final : public MomentumIntegrator {
public:
  explicit Obabo(const ObaboParameters& parameters)
      : MomentumIntegrator(parameters), friction_(std::in_place, parameters.friction, schedule_) {}
  /// The `mala` form: c = 0, with step_size read as ε = h².
  explicit Obabo(const MalaParameters& parameters) : MomentumIntegrator(parameters) {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double scheduled = advance(state);
    const double h = friction_ ? scheduled : std::sqrt(scheduled);
    const double retention = friction_ ? std::exp(-friction_->per_step(h) / 2) : 0.0;
    refresh(state, retention, context.rng);
    kick_drift_kick(state, h, estimator, context);
    // With c = 0 the next O replaces the momentum whole, so this O would only burn random numbers;
    // skipping it keeps `mala`'s stream aligned with `sgld`'s (one normal per coordinate per step).
    if (friction_) refresh(state, retention, context.rng);
  }
  /// `mala`'s momentum is redrawn whole at every step's start and never carried: it has none.
  std::optional<double> kinetic_temperature(const ChainState& state) const override {
    return friction_ ? MomentumIntegrator::kinetic_temperature(state) : std::nullopt;
  }

private:
  std::optional<Friction> friction_;  // none for `mala`
};

CatalogueEntry<IntegratorReader> mala_entry() {
  return integrator_entry<MalaParameters>(
      "mala", "OBABO with c = 0: SGLD's update with a gradient at the proposal, for MH (step_size = ε = h²)");
}

CatalogueEntry<IntegratorReader> obabo_entry() {
  return integrator_entry<ObaboParameters>("obabo", "GGMC / OBABO splitting, each O keeps exp(-γh/2) (step_size = h)");
}

}  // namespace sgmcmc::integrator_parts

namespace sgmcmc {

using namespace integrator_parts;

const FieldTable<MalaParameters>& MalaParameters::fields() {
  using P = MalaParameters;
  static const FieldTable<P> table = concat<P>({mass_integrator_fields<P>(), step_adaptation_fields<P>()});
  return table;
}

const FieldTable<ObaboParameters>& ObaboParameters::fields() {
  using P = ObaboParameters;
  static const FieldTable<P> table = concat<P>({mass_integrator_fields<P>(), {friction_field<P>()}, step_adaptation_fields<P>()});
  return table;
}

std::unique_ptr<Integrator> make_integrator(const MalaParameters& parameters) {
  check_fields(MalaParameters::fields(), parameters, "integrator mala");
  return std::make_unique<Obabo>(parameters);
}
std::unique_ptr<Integrator> make_integrator(const ObaboParameters& parameters) {
  check_fields(ObaboParameters::fields(), parameters, "integrator obabo");
  return std::make_unique<Obabo>(parameters);
}

}  // namespace sgmcmc
