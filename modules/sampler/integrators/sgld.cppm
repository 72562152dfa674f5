// sgld: overdamped Langevin with a constant preconditioner (Welling & Teh 2011; Baker et al. 2019).
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
export module sgmcmc.integrators:sgld;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;
import :scheduled;

export namespace sgmcmc {

/// sgld: θ' = θ - (ε/2) M⁻¹ ĝ(θ) + sqrt(εT) M^{-1/2} ξ, the mass acting as the preconditioner M⁻¹.
struct SgldParameters {
  ScheduleParameters schedule = {};  // ε_k
  double temperature = 1.0;          // T > 0; 1 samples the posterior
  Mass mass = {};                    // M > 0; its inverse preconditions the step
  bool adapt_mass = false;  // adapt M during the warmup (Stan's windows), then keep it
  static const FieldTable<SgldParameters>& fields();
  static SgldParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

std::unique_ptr<Integrator> make_integrator(const SgldParameters& parameters);

}  // namespace sgmcmc

namespace sgmcmc::integrator_parts {

// The catalogue's entry (integrators.cppm). The class and the bodies are in sgld.cpp, so that
// editing them recompiles that file alone.
CatalogueEntry<IntegratorReader> sgld_entry();

}  // namespace sgmcmc::integrator_parts
