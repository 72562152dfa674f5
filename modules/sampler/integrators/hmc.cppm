// hmc and its alias leapfrog: one leapfrog trajectory from a fresh momentum (Duane et al. 1987).
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
export module sgmcmc.integrators:hmc;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;
import :scheduled;
import :momentum;

export namespace sgmcmc {

/// hmc (and its alias leapfrog): `steps` leapfrog steps of size h from a fresh momentum.
struct HmcParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // the kinetic energy's ½mᵀM⁻¹m
  bool adapt_mass = false;
  std::size_t steps = 10;  // L
  StepAdaptation step_adaptation = {};  // adapt_step_size, target_acceptance (mh only)
  static const FieldTable<HmcParameters>& fields();
  static HmcParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

std::unique_ptr<Integrator> make_integrator(const HmcParameters& parameters);

}  // namespace sgmcmc

namespace sgmcmc::integrator_parts {

// The catalogue's entries (integrators.cppm). The class and the bodies are in hmc.cpp, so that
// editing them recompiles that file alone.
CatalogueEntry<IntegratorReader> hmc_entry();
CatalogueEntry<IntegratorReader> leapfrog_entry();

}  // namespace sgmcmc::integrator_parts
