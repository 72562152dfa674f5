// [burn_in] (burn_in.hpp).
#include <utility>
#include <variant>
#include <fmt/format.h>

#include "burn_in.hpp"
#include "prepared_run.hpp"  // resolved_section

using nlohmann::json;

namespace {

constexpr std::string_view burn_in_prefix = "burn_in.";
constexpr const char* sampler_sections[] = {"estimator", "integrator", "corrector"};

/// A burn-in section the configuration holds, with at least one key.
const sgmcmc::Settings* given_section(const sgmcmc::RunConfig& config, const std::string& part) {
  const auto found = config.sections.find(std::string(burn_in_prefix) + part);
  return found == config.sections.end() || found->second.entries().empty() ? nullptr : &found->second;
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

std::optional<BurnInPlan> read_burn_in(const sgmcmc::RunConfig& config, std::uint64_t run_seed) {
  bool any = false;
  for (const auto& [name, settings] : config.sections)
    any = any || ((name == "burn_in" || name.starts_with(burn_in_prefix)) && !settings.entries().empty());
  if (!any) return std::nullopt;
  const auto found = config.sections.find("burn_in");
  const sgmcmc::Settings empty("burn_in");
  const sgmcmc::Settings& section = found == config.sections.end() ? empty : found->second;
  BurnInPlan plan;
  // A misspelt key first (did-you-mean iterations), then a missing length.
  const bool given = section.contains("iterations");
  plan.iterations = static_cast<std::uint64_t>(section.integer_at_least("iterations", 1, 1));
  section.reject_unknown_keys();  // [burn_in] holds only iterations (and the sampler's tables)
  if (!given)
    throw sgmcmc::Error("[burn_in]: a burn-in needs its length, burn_in.iterations = N (>= 1); its sampler's tables "
                        "alone do not say it");
  plan.seed = burn_in_seed(run_seed);
  plan.config = config;
  for (const char* part : sampler_sections)
    if (const auto* given = given_section(config, part)) plan.config[part] = *given;
  return plan;
}

json BurnInPlan::record() const {
  json record = {{"iterations", iterations}, {"seed", seed}};
  for (const char* part : sampler_sections) record[part] = resolved_section(config[part]);
  return record;
}

BurnIn::BurnIn(const BurnInPlan& plan, std::shared_ptr<const sgmcmc::Model> model, std::uint64_t k,
               sgmcmc::RunConfig& config)
    : model_(std::move(model)), rng_(plan.seed, sgmcmc::chain_stream(k)),
      own_integrator_(given_section(config, "integrator") != nullptr) {
  try {
    plan_ = sgmcmc::plan_chain(plan.config, *model_);  // its reads are what the manifest's burn_in records
  } catch (const sgmcmc::Error& error) {
    throw sgmcmc::Error(fmt::format("[burn_in]: {}", error.what()));
  }
  for (const char* part : sampler_sections)
    if (given_section(config, part)) config[std::string(burn_in_prefix) + part].adopt_reads(plan.config[part]);
  chain_ = build();
  // The whole burn-in is warmup: nothing recorded, a step it adapts frozen at its end. Draws and
  // metrics come at block ends only, so thin and eval_every are the block length and beyond the end.
  const std::uint64_t block = chain_->corrector().block_length();
  if (plan.iterations % block != 0)
    throw sgmcmc::Error(fmt::format("[burn_in]: burn_in.iterations = {} must be a multiple of the burn-in's corrector.every "
                                    "= {}: the burn-in ends at the end of an MH block",
                                    plan.iterations, block));
  schedule_.warmup = plan.iterations;
  schedule_.iterations = 0;
  schedule_.thin = block;
  schedule_.eval_every = block * (plan.iterations / block + 1);
  try {
    chain_->check(schedule_);
  } catch (const sgmcmc::Error& error) {
    throw sgmcmc::Error(fmt::format("[burn_in] (its {} iterations are the burn-in's warmup): {}", plan.iterations, error.what()));
  }
  chain_.reset();  // built again when it runs: only the burn-ins running hold their parts
}

std::unique_ptr<sgmcmc::Chain> BurnIn::build() const {
  try {
    return sgmcmc::make_chain(plan_, model_, rng_);
  } catch (const sgmcmc::Error& error) {
    throw sgmcmc::Error(fmt::format("[burn_in]: {}", error.what()));
  }
}

namespace {
/// The burn-in records nothing.
struct Discard final : sgmcmc::ChainObserver {
  void on_draw(const sgmcmc::Draw&) override {}
  void on_metrics(const sgmcmc::MetricsRow&) override {}
};
}  // namespace

std::optional<sgmcmc::ChainResult> BurnIn::run(sgmcmc::Chain& main, const sgmcmc::ChainSchedule& main_schedule,
                                               std::atomic<std::uint64_t>* progress) {
  schedule_.stop_requested = main_schedule.stop_requested;
  schedule_.divergence_threshold = main_schedule.divergence_threshold;
  chain_ = build();
  if (start_) chain_->start_at(*start_);
  Discard nothing;
  const auto result = chain_->run(schedule_, nothing, progress);
  record_ = {{"iterations", result.iterations},
             {"item_gradients", result.cost.item_gradients},
             {"full_passes", result.cost.full_passes},
             {"seconds", result.seconds},
             {"cpu_seconds", result.cpu_seconds},
             {"step_size", chain_->integrator().step_size()}};
  const bool completed = !result.diverged && !result.stopped;
  if (completed) main.start_at(chain_->state().theta);
  chain_.reset();  // its memory is not needed any more
  if (completed) return std::nullopt;
  sgmcmc::ChainResult ended;  // of the run's own chain, which has not started
  ended.diverged = result.diverged;
  ended.stopped = ended.interrupted = result.stopped;
  std::string why = result.message;  // the step to lower is the burn-in's, when it has its own
  if (const auto at = why.find("integrator.step_size"); own_integrator_ && at != std::string::npos) why.insert(at, "burn_in.");
  ended.message = result.diverged
                      ? fmt::format("in its burn-in, {}", why)
                      : fmt::format("interrupted in its burn-in, after iteration {} of {}; a resumed run replays the "
                                    "burn-in from the seed",
                                    result.iterations, schedule_.warmup);
  return ended;
}

void BurnIn::save_record(sgmcmc::StateWriter& out) const {
  out.section("burn-in");
  out.text(record_.dump());
}

void BurnIn::restore_record(sgmcmc::StateReader& in) {
  in.section("burn-in");
  record_ = json::parse(in.text());  // the checkpoint lies after the burn-in: it does not run again
}
