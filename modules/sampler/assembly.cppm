// Assembly: a run configuration's [estimator], [integrator] and [corrector] sections made into one
// chain. The runner, the sweep and the tests all build their chains here, so a combination is
// checked, refused or built the same way everywhere.
module;
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

/// The corrector of `config`'s [corrector] section (default "none") for this model and integrator.
/// A combination that cannot be exact is refused with the reason: MH after an estimator or
/// integrator that declares an `mh_refusal` in its catalogue entry, after a changing step size, or
/// on a model without an exact log-likelihood; and a step-size adaptation without an MH test.
std::unique_ptr<Corrector> make_corrector(const RunConfig& config, const Model& model, const Integrator& integrator);

/// The chain `config` describes, for `model`, drawing from `rng` (the chain's own stream,
/// sgmcmc::chain_stream). Throws sgmcmc::Error, with the reason, for a combination that is refused.
std::unique_ptr<Chain> make_chain(const RunConfig& config, std::shared_ptr<const Model> model, Rng rng);

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

std::unique_ptr<Corrector> make_corrector(const RunConfig& config, const Model& model, const Integrator& integrator) {
  const Settings& section = config["corrector"];
  const CorrectorTarget target{model, integrator};
  auto corrector = choose(corrector_catalogue(), section, default_corrector).make(section, target);
  if (!corrector->tests_acceptance()) {
    if (integrator.adaptation().step.adapt)
      throw Error(fmt::format("{}: adapt_step_size = true needs corrector.name = \"mh\": the step size is adapted to a "
                              "target MH acceptance rate, and without an MH test there is no acceptance signal (for an "
                              "uncorrected chain, `sgmcmc tune` chooses the step by the kernel Stein discrepancy of "
                              "pilot chains)",
                              config["integrator"].describe("adapt_step_size")));
    return corrector;
  }
  const std::string where = section.describe("name");
  const auto& estimator_entry = choose(estimator_catalogue(), config["estimator"], default_estimator);
  const auto& integrator_entry = choose(integrator_catalogue(), config["integrator"], default_integrator);
  for (const auto& [kind, name, reason] : {std::tuple{"estimator", estimator_entry.name, estimator_entry.mh_refusal},
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
  if (corrector->block_length() == 1 && corrector->endpoint_estimator() && estimator_entry.name != "exact")
    throw Error(fmt::format("{}: with corrector.every = 1 and exact_endpoints = true (the defaults) every step ends a "
                            "block and takes exact gradients, so estimator '{}' would never be used and each step "
                            "would cost a full data pass; set estimator.name = \"exact\" (MALA, HMC, exact OBABO), "
                            "or corrector.every = K >= 2 for one MH test over K stochastic-gradient steps "
                            "(Garriga-Alonso & Fortuin 2021), or exact_endpoints = false",
                            where, estimator_entry.name));
  return corrector;
}

std::unique_ptr<Chain> make_chain(const RunConfig& config, std::shared_ptr<const Model> model, Rng rng) {
  auto integrator = make_integrator(config["integrator"], model->num_items());
  check_metric(config["integrator"], *model);
  auto corrector = make_corrector(config, *model, *integrator);
  auto estimator = make_estimator(config["estimator"], *model);
  return std::make_unique<Chain>(std::move(model), std::move(estimator), std::move(integrator), std::move(corrector),
                                 std::move(rng));
}

}  // namespace sgmcmc
