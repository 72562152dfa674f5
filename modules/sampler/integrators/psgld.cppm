// psgld: sgld preconditioned by RMSprop (Li, Chen, Carlson & Carin 2016).
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
export module sgmcmc.integrators:psgld;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;
import :scheduled;

export namespace sgmcmc {

/// psgld (Li, Chen, Carlson & Carin 2016, Alg. 1 without Γ): sgld preconditioned by RMSprop's
/// G = diag(1/(λ + sqrt(V))), V the moving average of the squared mean data gradient;
/// step_size = their ε. Its preconditioner is its own, so it reads no `mass`.
struct PsgldParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  double alpha = 0.99;              // α: V ← αV + (1 - α) ḡ⊙ḡ
  double lambda = 1e-5;             // λ: bounds G where the gradient history vanishes
  bool freeze_after_warmup = true;  // stop updating V after the warmup: a fixed kernel when sampling (false: refused)
  static const FieldTable<PsgldParameters>& fields();
  static PsgldParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

std::unique_ptr<Integrator> make_integrator(const PsgldParameters& parameters);

}  // namespace sgmcmc

namespace sgmcmc::integrator_parts {

// The catalogue's entry (integrators.cppm). The class and the bodies are in psgld.cpp, so that
// editing them recompiles that file alone.
CatalogueEntry<IntegratorReader> psgld_entry();

}  // namespace sgmcmc::integrator_parts
