// badodab: sgnht's thermostat split B A D O D A B (Leimkuhler & Shang 2016).
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
export module sgmcmc.integrators:badodab;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;
import :scheduled;
import :momentum;
import :thermostat;

export namespace sgmcmc {

/// badodab (Leimkuhler & Shang 2016): sgnht's dynamics integrated by the splitting
/// B A D O D A B; the same keys.
struct BadodabParameters : SgnhtParameters {
  static const FieldTable<BadodabParameters>& fields();
  static BadodabParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};
std::unique_ptr<Integrator> make_integrator(const BadodabParameters& parameters);

}  // namespace sgmcmc

namespace sgmcmc::integrator_parts {

// The catalogue's entry (integrators.cppm). The class and the bodies are in badodab.cpp, so that
// editing them recompiles that file alone.
CatalogueEntry<IntegratorReader> badodab_entry();

}  // namespace sgmcmc::integrator_parts
