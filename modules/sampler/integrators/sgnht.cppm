// sgnht: the Euler step of the stochastic gradient Nosé-Hoover thermostat (Ding et al. 2014).
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
export module sgmcmc.integrators:sgnht;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;
import :scheduled;
import :momentum;
import :thermostat;

export namespace sgmcmc {

std::unique_ptr<Integrator> make_integrator(const SgnhtParameters& parameters);

}  // namespace sgmcmc

namespace sgmcmc::integrator_parts {

// The catalogue's entry (integrators.cppm). The class and the bodies are in sgnht.cpp, so that
// editing them recompiles that file alone.
CatalogueEntry<IntegratorReader> sgnht_entry();

}  // namespace sgmcmc::integrator_parts
