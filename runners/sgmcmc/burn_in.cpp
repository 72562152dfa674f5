// [burn_in] (burn_in.hpp).
#include <utility>
#include <variant>
#include <fmt/format.h>

#include "burn_in.hpp"
#include "prepared_run.hpp"  // resolved_section

using nlohmann::json;

json burn_in_record(const sgmcmc::BurnInPlan& plan) {
  json record = {{"iterations", plan.iterations}, {"seed", plan.seed}};
  for (const auto& [part, reads] : plan.reads) record[part] = resolved_section(reads);  // the sampler's sections
  return record;
}

BurnIn::BurnIn(const sgmcmc::BurnInPlan& plan, std::shared_ptr<const sgmcmc::Model> model, std::uint64_t k)
    : plan_(plan.chain), schedule_(plan.schedule), own_integrator_(plan.own_integrator), model_(std::move(model)),
      rng_(plan.seed, sgmcmc::chain_stream(k)) {}

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
