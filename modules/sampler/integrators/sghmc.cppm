// sghmc: the symplectic Euler-Maruyama step of SGHMC (Chen, Fox & Guestrin 2014).
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
export module sgmcmc.integrators:sghmc;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;
import :scheduled;
import :momentum;

export namespace sgmcmc {

/// sghmc: step_size = h, momentum decay 1 - γh (γh >= 1 at the first step is refused).
struct SghmcParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // the kinetic energy's ½mᵀM⁻¹m
  bool adapt_mass = false;
  std::optional<double> friction = std::nullopt;  // as ObaboParameters
  static const FieldTable<SghmcParameters>& fields();
  static SghmcParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

std::unique_ptr<Integrator> make_integrator(const SghmcParameters& parameters);

}  // namespace sgmcmc

namespace sgmcmc::integrator_parts {

// The catalogue's entry (integrators.cppm). The class and the bodies are in sghmc.cpp, so that
// editing them recompiles that file alone.
CatalogueEntry<IntegratorReader> sghmc_entry();

}  // namespace sgmcmc::integrator_parts
