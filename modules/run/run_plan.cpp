// plan_run (run_plan.cppm): the run's sections read once, in the order their mistakes are reported.
module;
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <fmt/format.h>
module sgmcmc.run_plan;
import sgmcmc.error;

namespace sgmcmc {
namespace {

constexpr std::string_view burn_in_prefix = "burn_in.";
constexpr const char* sampler_sections[] = {"estimator", "integrator", "corrector"};

/// A burn-in section the configuration holds, with at least one key.
const Settings* given_section(const RunConfig& config, const std::string& part) {
  const auto found = config.sections.find(std::string(burn_in_prefix) + part);
  return found == config.sections.end() || found->second.entries().empty() ? nullptr : &found->second;
}

bool has_burn_in(const RunConfig& config) {
  for (const auto& [name, settings] : config.sections)
    if ((name == "burn_in" || name.starts_with(burn_in_prefix)) && !settings.entries().empty()) return true;
  return false;
}

/// [burn_in] itself: its length, read before its sampler's sections so that a misspelt key
/// (did-you-mean iterations) is reported before a missing length.
std::uint64_t read_burn_in_length(ConfigReader run) {
  const auto found = run.config().sections.find("burn_in");
  const Settings empty("burn_in");
  const Settings& settings = found == run.config().sections.end() ? empty : found->second;
  SectionReads& reads = run.reads()["burn_in"];
  const SectionReader section(settings, reads);
  const bool given = section.contains("iterations");
  const auto iterations = static_cast<std::uint64_t>(section.integer_at_least("iterations", 1, 1));
  reject_unknown_keys(settings, reads);  // [burn_in] holds only iterations (and the sampler's tables)
  if (!given)
    throw Error("[burn_in]: a burn-in needs its length, burn_in.iterations = N (>= 1); its sampler's tables alone do "
                "not say it");
  return iterations;
}

/// The burn-in's chain planned and checked once, on a chain built from the plan: its length must
/// end an MH block, and its schedule (all warmup) must suit its sampler.
std::optional<BurnInPlan> plan_burn_in(ConfigReader run, std::uint64_t run_seed,
                                       const std::shared_ptr<const Model>& model) {
  const RunConfig& config = run.config();
  if (!has_burn_in(config)) return std::nullopt;
  BurnInPlan plan;
  plan.iterations = read_burn_in_length(run);
  plan.seed = burn_in_seed(run_seed);
  plan.config = config;
  for (const char* part : sampler_sections)
    if (const auto* given = given_section(config, part)) plan.config[part] = *given;
  plan.own_integrator = given_section(config, "integrator") != nullptr;
  try {
    plan.chain = plan_chain(ConfigReader(plan.config, plan.reads), *model);
  } catch (const Error& error) {
    throw Error(fmt::format("[burn_in]: {}", error.what()));
  }
  // The burn-in sections' keys were read on the copy; the run's own [burn_in.*] sections are
  // where the unknown-key check looks.
  for (const char* part : sampler_sections)
    if (given_section(config, part)) run.reads()[std::string(burn_in_prefix) + part].add(plan.reads[part]);
  const auto chain = make_chain(plan.chain, model, Rng(plan.seed, chain_stream(0)));
  const std::uint64_t block = chain->corrector().block_length();
  if (plan.iterations % block != 0)
    throw Error(fmt::format("[burn_in]: burn_in.iterations = {} must be a multiple of the burn-in's corrector.every = {}: "
                            "the burn-in ends at the end of an MH block",
                            plan.iterations, block));
  // Draws and metrics come at block ends only, so thin and eval_every are the block length and
  // beyond the end: nothing is recorded.
  plan.schedule.warmup = plan.iterations;
  plan.schedule.iterations = 0;
  plan.schedule.thin = block;
  plan.schedule.eval_every = block * (plan.iterations / block + 1);
  try {
    chain->check(plan.schedule);
  } catch (const Error& error) {
    throw Error(fmt::format("[burn_in] (its {} iterations are the burn-in's warmup): {}", plan.iterations, error.what()));
  }
  return plan;
}

}  // namespace

std::uint64_t burn_in_seed(std::uint64_t run_seed) {
  std::uint64_t z = run_seed + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) >> 1;
}

std::string main_section_of(const std::string& section) {
  return section.starts_with(burn_in_prefix) ? section.substr(burn_in_prefix.size()) : section;
}

RunPlan plan_run(ConfigReader config, RunSchedule schedule, const std::shared_ptr<const Model>& model) {
  RunPlan plan;
  plan.schedule = std::move(schedule);
  plan.output = read_output_options(config["output"], *model);
  if (plan.schedule.chain.compute_lp && !model->capabilities().exact_log_likelihood)
    throw Error(fmt::format("{}: the model has no exact log-likelihood (its 'exact-log-likelihood' capability), so "
                            "lp__ cannot be computed",
                            config["run"].describe("lp")));
  // saga's tables of all the chains together are checked before any is allocated.
  if (const auto refusal = estimator_memory_refusal(config["estimator"], *model, plan.schedule.chains); !refusal.empty())
    throw Error(refusal);
  plan.chain = plan_chain(config, *model);
  plan.recorded_gradients = gradient_recipe(plan.output.gradients, config["estimator"], *model);
  plan.burn_in = plan_burn_in(config, plan.schedule.seed, model);
  return plan;
}

}  // namespace sgmcmc
