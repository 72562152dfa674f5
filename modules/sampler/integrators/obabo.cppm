// obabo (GGMC) and mala, its overdamped limit (Garriga-Alonso & Fortuin 2021).
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
export module sgmcmc.integrators:obabo;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;
import :scheduled;
import :momentum;

export namespace sgmcmc {

/// mala: OBABO with c = 0, step_size read as ε = h².
struct MalaParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // M > 0, one number or one per coordinate; as sgld's, M⁻¹ preconditions the step
  bool adapt_mass = false;  // adapt M during the warmup (Stan's windows), then keep it
  StepAdaptation step_adaptation = {};  // adapt_step_size, target_acceptance (mh only)
  static const FieldTable<MalaParameters>& fields();
  static MalaParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

/// obabo (GGMC): step_size = h; each O keeps exp(-γh/2) of the momentum.
struct ObaboParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // the kinetic energy's ½mᵀM⁻¹m
  bool adapt_mass = false;
  std::optional<double> friction = std::nullopt;  // γ > 0; unset: 0.1/h₀ for the first step h₀ (γh₀ = 0.1)
  StepAdaptation step_adaptation = {};  // adapt_step_size, target_acceptance (mh only)
  static const FieldTable<ObaboParameters>& fields();
  static ObaboParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

std::unique_ptr<Integrator> make_integrator(const MalaParameters& parameters);
std::unique_ptr<Integrator> make_integrator(const ObaboParameters& parameters);

}  // namespace sgmcmc

namespace sgmcmc::integrator_parts {

// The catalogue's entries (integrators.cppm). The class and the bodies are in obabo.cpp, so that
// editing them recompiles that file alone.
CatalogueEntry<IntegratorReader> mala_entry();
CatalogueEntry<IntegratorReader> obabo_entry();

}  // namespace sgmcmc::integrator_parts
