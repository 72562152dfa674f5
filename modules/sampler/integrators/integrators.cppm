// Integrators: one step of a discretised Langevin dynamics driven by a gradient estimate
// (modules/README.md, "Integrators"), with a step-size schedule (sgmcmc.schedules). The state they
// move is ChainState. They are built from the exact sub-flows of the partition `substeps`.
// Each integrator is one partition, its parameters and declarations, and one implementation unit
// beside it (<name>.cpp): its class, its key reader and its catalogue entry, so that editing a
// step recompiles that file alone (modules/README.md, "How to add an integrator").
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
export module sgmcmc.integrators;
export import sgmcmc.sampler;
export import :metric;
export import :substeps;
export import sgmcmc.schedules;
export import :scheduled;
export import :momentum;
export import :sgld;
export import :psgld;
export import :obabo;
export import :baoab;
export import :hmc;
export import :sghmc;
export import :thermostat;
export import :sgnht;
export import :badodab;
export import :ubu;
import sgmcmc.error;

export namespace sgmcmc {

const std::vector<CatalogueEntry<IntegratorReader>>& integrator_catalogue();

inline constexpr const char* default_integrator = "sgld";

/// The integrator named in `section` (default "sgld"), read and checked, to build once per chain,
/// for a model of N = `items` data items. With `scale_step_with_n = true`, step_size is the step
/// for one item, and the integrator gets step_size / N^p (step_exponent), so that a preset's step
/// keeps its meaning when the data size changes (modules/README.md, "Step sizes across data
/// sizes"). Any other key (friction included) is read as given.
IntegratorRecipe read_integrator(SectionReader section, std::size_t items);

/// read_integrator's integrator, built once.
std::unique_ptr<Integrator> make_integrator(SectionReader section, std::size_t items);

/// The same without a model: it refuses `scale_step_with_n = true`, which needs N.
std::unique_ptr<Integrator> make_integrator(SectionReader section);

/// p of the step N^(-p) for the integrator `name`: 1 for a Langevin step ε (sgld, mala), 1/2 for a
/// Hamiltonian step h (the others); 0 for psgld, whose effective step εG depends on N through its
/// preconditioner as well, by a power no single p captures (modules/README.md, pSGLD), so it
/// refuses scale_step_with_n.
double step_exponent(const std::string& name);


/// Refuses, naming the key and where it was set (a chain would refuse the first two too, without
/// the place): an `integrator.mass` array whose length is not d, or d² with metric = "dense"; a
/// dense metric above dense_metric_limit coordinates (d² numbers, d² work per step); a dense
/// metric for a model with positive parameters (the reflection at 0 keeps ½mᵀM⁻¹m only for a
/// diagonal M).
void check_metric(SectionReader section, const Model& model);

}  // namespace sgmcmc
