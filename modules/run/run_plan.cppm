// The run planned once: a run configuration's sections read for one model into typed parts that
// every check of the run has passed, before any chain exists. The runner's subcommands (run,
// sweep, tune, gradient-variance, sbc) build every chain, burn-in and draw recorder from the plan
// and read no text again; the sections' reads are what the manifest records as the resolved
// configuration.
module;
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
export module sgmcmc.run_plan;
export import sgmcmc.assembly;
export import sgmcmc.run_section;
export import sgmcmc.recording;

export namespace sgmcmc {

/// [burn_in]: a first phase of every chain under a sampler of its own, whose last θ is where the
/// run's own sampler starts (runners/README.md, "Burn-in"). Planned once for all chains.
struct BurnInPlan {
  std::uint64_t iterations = 0;  // burn_in.iterations, all of them warmup
  std::uint64_t seed = 0;        // burn_in_seed(run.seed): the burn-in's generators
  /// The run's configuration with [burn_in.estimator], [burn_in.integrator] and [burn_in.corrector],
  /// where given, in place of the run's own sections: what the burn-in's chain was read from (the
  /// manifest records its resolved sections).
  RunConfig config;
  ConfigReads reads;  // what the burn-in's chain read of `config`: the manifest's resolved sections
  ChainPlan chain;
  /// The burn-in's schedule: warmup only, nothing recorded, the step it adapts frozen at its end.
  ChainSchedule schedule;
  /// [burn_in.integrator] is given: a divergence message names burn_in.integrator.step_size.
  bool own_integrator = false;
};

/// The seed of the burn-in's generators: splitmix64 of the run's seed (Steele et al. 2014), less
/// its top bit so that it is a valid run.seed.
std::uint64_t burn_in_seed(std::uint64_t run_seed);

/// The section of the run's own sampler that a burn-in section replaces ("burn_in.integrator" ->
/// "integrator"); any other name unchanged.
std::string main_section_of(const std::string& section);

/// A run as read from its configuration for one model.
struct RunPlan {
  RunSchedule schedule;  // [run], read before the model (its data seed builds the model)
  OutputOptions output;  // [output]
  /// The estimator of the gradients recorded with each draw ([output] gradients); empty for none.
  EstimatorRecipe recorded_gradients;
  ChainPlan chain;  // [estimator], [integrator], [corrector]
  std::optional<BurnInPlan> burn_in;  // none without a [burn_in] section
};

/// Reads [output], the sampler's sections and [burn_in] of `config` for `model`, given [run] as
/// read. Throws sgmcmc::Error, naming the key and the reason, for any refusal: those of plan_chain,
/// run.lp on a model without an exact log-likelihood, saga tables of all the chains beyond their
/// memory limit, a burn-in without iterations or whose sampler is refused or whose length is not a
/// multiple of its corrector's block, and an unknown key in [burn_in] itself.
/// The reads are noted in `config`'s record, which the unknown-key check and the manifest use.
RunPlan plan_run(ConfigReader config, RunSchedule schedule, const std::shared_ptr<const Model>& model);

}  // namespace sgmcmc
