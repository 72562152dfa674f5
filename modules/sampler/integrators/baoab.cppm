// baoab: the BAOAB splitting of underdamped Langevin (Leimkuhler & Matthews 2013).
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
export module sgmcmc.integrators:baoab;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;
import :scheduled;
import :momentum;

export namespace sgmcmc {

/// baoab: step_size = h; its O keeps exp(-γh). Fields as ObaboParameters.
struct BaoabParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // the kinetic energy's ½mᵀM⁻¹m
  bool adapt_mass = false;
  std::optional<double> friction = std::nullopt;
  StepAdaptation step_adaptation = {};  // adapt_step_size, target_acceptance (mh only)
  static const FieldTable<BaoabParameters>& fields();
  static BaoabParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

std::unique_ptr<Integrator> make_integrator(const BaoabParameters& parameters);

}  // namespace sgmcmc

namespace sgmcmc::integrator_parts {

// The catalogue's entry (integrators.cppm). The class and the bodies are in baoab.cpp, so that
// editing them recompiles that file alone.
CatalogueEntry<IntegratorReader> baoab_entry();

}  // namespace sgmcmc::integrator_parts
