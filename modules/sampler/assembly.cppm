// Assembly: a run configuration's [estimator], [integrator] and [corrector] sections read once into
// a ChainPlan, which every check of the combination has passed, and chains built from the plan
// without reading text again. The runner, the sweep, the burn-in and the tests all plan and build
// their chains here, so a combination is checked, refused or built the same way everywhere.
module;
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <fmt/format.h>
export module sgmcmc.assembly;
export import sgmcmc.estimators;
export import sgmcmc.integrators;
export import sgmcmc.correctors;
export import sgmcmc.chain;
import sgmcmc.error;

export namespace sgmcmc {

/// A chain's parts as read from a run configuration for one model: the catalogue names chosen and,
/// for each part, a recipe holding its keys read and checked into typed parameters. A plan has
/// passed every check of the combination; make_chain builds from it as often as there are chains
/// (and a burn-in's chain each time it runs).
struct ChainPlan {
  std::string estimator, integrator, corrector;  // the catalogue names chosen
  EstimatorRecipe make_estimator;
  IntegratorRecipe make_integrator;
  CorrectorRecipe make_corrector;
};

/// Reads `config`'s [estimator], [integrator] and [corrector] sections (defaults "minibatch", "sgld",
/// "none") for `model`. Throws sgmcmc::Error, naming the key and the reason, for a combination that
/// cannot be exact: MH after an estimator or integrator that declares an `mh_refusal` in its
/// catalogue entry, after a changing step size, or on a model without an exact log-likelihood; a
/// step-size adaptation without an MH test; a metric the model cannot take (check_metric).
ChainPlan plan_chain(ConfigReader config, const Model& model);

/// A chain of `plan`'s parts for `model` (the model the plan was read for), drawing from `rng` (the
/// chain's own stream, sgmcmc::chain_stream).
std::unique_ptr<Chain> make_chain(const ChainPlan& plan, std::shared_ptr<const Model> model, Rng rng);

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

namespace {

/// plan_chain's refusals of a corrector after the parts it follows: on the parts built once from
/// their recipes, since the integrator's step schedule and adaptation and the corrector's block
/// are properties of the built objects.
void check_corrector(ConfigReader config, const Model& model, const CatalogueEntry<EstimatorReader>& estimator,
                     const CatalogueEntry<IntegratorReader>& integrator_entry, const Integrator& integrator,
                     Corrector& corrector) {
  if (!corrector.tests_acceptance()) {
    if (integrator.adaptation().step.adapt)
      throw Error(fmt::format("{}: adapt_step_size = true needs corrector.name = \"mh\": the step size is adapted to a "
                              "target MH acceptance rate, and without an MH test there is no acceptance signal (for an "
                              "uncorrected chain, `sgmcmc tune` chooses the step by the kernel Stein discrepancy of "
                              "pilot chains)",
                              config["integrator"].describe("adapt_step_size")));
    return;
  }
  const std::string where = config["corrector"].describe("name");
  for (const auto& [kind, name, reason] : {std::tuple{"estimator", estimator.name, estimator.mh_refusal},
                                           std::tuple{"integrator", integrator_entry.name, integrator_entry.mh_refusal}})
    if (!reason.empty())
      throw Error(fmt::format("{}: the mh corrector cannot follow {} '{}': {}", where, kind, name, reason));
  if (!integrator.constant_step_size())
    throw Error(fmt::format("{}: the mh corrector needs a constant step size (integrator.schedule = \"constant\"): a "
                            "block run backwards must be as likely as forwards",
                            where));
  if (!model.capabilities().exact_log_likelihood)
    throw Error(fmt::format("{}: the mh corrector needs the model's 'exact-log-likelihood' capability, which this "
                            "model does not declare (its likelihood is intractable or not implemented)",
                            where));
  // Blocks of one step with exact endpoints hand the exact estimator to every step (each is the
  // last of its block), so a stochastic estimator would never be called and each step would cost a
  // full data pass while the configuration says minibatches.
  if (corrector.block_length() == 1 && corrector.endpoint_estimator() && estimator.name != "exact")
    throw Error(fmt::format("{}: with corrector.every = 1 and exact_endpoints = true (the defaults) every step ends a "
                            "block and takes exact gradients, so estimator '{}' would never be used and each step "
                            "would cost a full data pass; set estimator.name = \"exact\" (MALA, HMC, exact OBABO), "
                            "or corrector.every = K >= 2 for one MH test over K stochastic-gradient steps "
                            "(Garriga-Alonso & Fortuin 2021), or exact_endpoints = false",
                            where, estimator.name));
}

}  // namespace

ChainPlan plan_chain(ConfigReader config, const Model& model) {
  // Read in this order, so that of several mistakes the first reported is the one it always was.
  const auto& integrator_entry = choose(integrator_catalogue(), config["integrator"], default_integrator);
  auto make_integrator = read_integrator(config["integrator"], model.num_items());
  check_metric(config["integrator"], model);
  const auto& corrector_entry = choose(corrector_catalogue(), config["corrector"], default_corrector);
  auto make_corrector = corrector_entry.read(config["corrector"]);
  const auto& estimator_entry = choose(estimator_catalogue(), config["estimator"], default_estimator);
  const auto integrator = make_integrator();
  check_corrector(config, model, estimator_entry, integrator_entry, *integrator, *make_corrector({model, *integrator}));
  return {estimator_entry.name, integrator_entry.name, corrector_entry.name,
          estimator_entry.read(config["estimator"], model), std::move(make_integrator), std::move(make_corrector)};
}

std::unique_ptr<Chain> make_chain(const ChainPlan& plan, std::shared_ptr<const Model> model, Rng rng) {
  auto integrator = plan.make_integrator();
  auto corrector = plan.make_corrector({*model, *integrator});
  auto estimator = plan.make_estimator(*model);
  return std::make_unique<Chain>(std::move(model), std::move(estimator), std::move(integrator), std::move(corrector),
                                 std::move(rng));
}

}  // namespace sgmcmc
