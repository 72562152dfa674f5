// The implementation of integrators.cppm: the catalogue, the builders by name, the step exponents
// and the metric's checks.
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
import sgmcmc.error;
import sgmcmc.data_parallel;

namespace sgmcmc {

using namespace integrator_parts;

const std::vector<CatalogueEntry<IntegratorReader>>& integrator_catalogue() {
  static const std::vector<CatalogueEntry<IntegratorReader>> catalogue = {
      sgld_entry(), mala_entry(), obabo_entry(), baoab_entry(), hmc_entry(), leapfrog_entry(),
      sghmc_entry(), psgld_entry(), sgnht_entry(), badodab_entry(), ubu_entry()};
  return catalogue;
}

namespace {
IntegratorRecipe read_unscaled(SectionReader section) {
  const auto& entry = choose(integrator_catalogue(), section, default_integrator);
  if (read_fields(StepScaling::fields(), section).scale_step_with_n)
    throw Error(fmt::format("{}: a step for one data item needs the model's number of items; read the integrator "
                            "with the model (plan_chain)",
                            section.describe("scale_step_with_n")));
  return entry.read(section);
}
}  // namespace

std::unique_ptr<Integrator> make_integrator(SectionReader section) { return read_unscaled(section)(); }

std::unique_ptr<Integrator> make_integrator(SectionReader section, std::size_t items) {
  return read_integrator(section, items)();
}

double step_exponent(const std::string& name) {
  // A Gaussian posterior of curvature λ (which grows like N): SGLD's stationary variance is
  // 1/(λ(1 - ελ/4)), a function of ελ alone, and OBABO's (any friction) 1/(λ(1 - h²λ/4)), of h²λ
  // (modules/README.md, "Step sizes across data sizes"). mala's step_size is ε = h².
  const std::pair<const char*, double> langevin_or_none[] = {{"sgld", 1.0}, {"mala", 1.0}, {"psgld", 0.0}};
  for (const auto& [integrator, exponent] : langevin_or_none)
    if (name == integrator) return exponent;
  return 0.5;
}

IntegratorRecipe read_integrator(SectionReader section, std::size_t items) {
  if (!read_fields(StepScaling::fields(), section).scale_step_with_n) return read_unscaled(section);
  const auto& entry = choose(integrator_catalogue(), section, default_integrator);
  const double exponent = step_exponent(entry.name);
  if (exponent == 0.0)
    throw Error(fmt::format("{}: {}'s step has no per-item form: its preconditioner G = 1/(λ + sqrt(V)) also "
                            "changes with N, by a power that depends on whether minibatch noise or the gradient "
                            "itself dominates V; give step_size as is, tuned at the data size you run",
                            section.describe("scale_step_with_n"), entry.name));
  // A mass computed from the data (mass = "fisher") or adapted to the draws (adapt_mass) already
  // grows like N, so the step is then in units of the posterior's spread: dividing it by N^p as
  // well would shrink it a second time. Peeked at, not read: the integrator reads both keys.
  const auto& entries = section.entries();
  const auto mass = entries.find("mass");
  const auto adapt = entries.find("adapt_mass");
  const bool computed = mass != entries.end() && std::holds_alternative<std::string>(mass->second.value);
  const bool adapted = adapt != entries.end() && std::holds_alternative<bool>(adapt->second.value) &&
                       std::get<bool>(adapt->second.value);
  if (computed || adapted)
    throw Error(fmt::format("{}: a mass {} grows with the data size N, so its step_size is already in units of the "
                            "posterior's spread and needs no scaling by N; give step_size as is (scale_step_with_n = "
                            "false)",
                            section.describe("scale_step_with_n"),
                            computed ? fmt::format("computed from the data ({})", section.describe("mass"))
                                     : fmt::format("adapted to the draws ({})", section.describe("adapt_mass"))));
  if (!section.contains("step_size"))
    throw Error(fmt::format("{}: give integrator.step_size, the step for one data item, which is then divided by "
                            "N^{}",
                            section.describe("scale_step_with_n"), exponent));
  if (items == 0)
    throw Error(fmt::format("{}: the model has no data items to scale the step by", section.describe("scale_step_with_n")));
  const double per_item = section.positive_number("step_size", ScheduleParameters{}.step_size);  // given: checked above
  Settings scaled = section.settings();
  scaled.set("step_size", {per_item * std::pow(static_cast<double>(items), -exponent),
                           fmt::format("{} (÷ N^{} with N = {})", section.entries().at("step_size").origin, exponent, items)});
  SectionReads scaled_reads;
  auto recipe = entry.read(SectionReader(scaled, scaled_reads));
  section.add_reads(scaled_reads);  // every key it read counts as read; step_size stays recorded as given
  return recipe;
}

void check_metric(SectionReader section, const Model& model) {
  const std::size_t d = model.dimension();
  // Read without marking the key as known: an integrator without a metric (psgld) refuses it as unknown.
  const auto* metric = section.contains("metric") ? std::get_if<std::string>(&section.entries().at("metric").value) : nullptr;
  const bool dense = metric && *metric == "dense";
  if (section.contains("mass") && std::holds_alternative<std::string>(section.entries().at("mass").value)) {
    // Under run.data_parallel, those of the model that evaluates this rank's rows (fisher_mass).
    const Capabilities capabilities = local_rows(model).model->capabilities();
    if (!capabilities.per_item_gradients && !capabilities.sparse_item_gradients)
      throw Error(fmt::format("{}: the Fisher mass sums ∇f_i ∇f_iᵀ over the items, and this model declares neither "
                              "'per-item-gradients' nor 'sparse-item-gradients' (give the mass, or adapt_mass)",
                              section.describe("mass")));
  }
  if (section.contains("mass")) {
    const auto* array = std::get_if<std::vector<double>>(&section.entries().at("mass").value);
    if (array && array->size() != d && !(dense && array->size() == d * d))
      throw Error(fmt::format("{}: expected one number or an array of d = {} numbers (the model's dimension){}, found "
                              "an array of {}",
                              section.describe("mass"), d,
                              dense ? fmt::format(", or of d² = {} (the mass matrix row by row)", d * d)
                                    : fmt::format(", or of d² = {} with metric = \"dense\"", d * d),
                              array->size()));
    if (array && dense && array->size() == d * d)
      if (const std::string problem = dense_mass_problem(*array, d); !problem.empty())
        throw Error(fmt::format("{}: the mass matrix {}", section.describe("mass"), problem));
  }
  if (!dense) return;
  if (d > dense_metric_limit)
    throw Error(fmt::format("{}: a dense metric holds d² numbers and costs d² operations per use; the model has d = {} "
                            "coordinates, above the limit of {} (use metric = \"diagonal\")",
                            section.describe("metric"), d, dense_metric_limit));
  if (model.capabilities().positive_parameters)
    throw Error(fmt::format("{}: this model's parameters are positive, and the integrators reflect a coordinate that "
                            "crosses 0, which keeps the kinetic energy ½mᵀM⁻¹m only for a diagonal M (use metric = "
                            "\"diagonal\")",
                            section.describe("metric")));
}

}  // namespace sgmcmc
