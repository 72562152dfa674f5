// [burn_in]: a first phase of every chain under a sampler of its own, whose last θ is where the
// run's own sampler starts. OBABO + MH on a network, for one, accepts nothing from a random start
// and only after an SGHMC burn-in (Garriga-Alonso & Fortuin 2021); one run now does both.
//
//   [burn_in]
//   iterations = 2000          # run, not recorded: no draws, no metrics.csv rows
//   [burn_in.integrator]       # each of [burn_in.estimator], [burn_in.integrator] and
//   name = "sghmc"             # [burn_in.corrector] given replaces the run's own section whole
//   step_size = 1e-2           # for the burn-in (keys not merged: another sampler's keys,
//   [burn_in.corrector]        # adapt_step_size say, would not mean the same); one not given
//   name = "none"              # is the run's own section
//
// The burn-in of chain k starts where the chain would (run.init, or the model's own start) and
// draws from Rng(burn_in_seed(run.seed), chain_stream(k)): another generator than the run's chains,
// so that a run without [burn_in] draws what it always drew, and one that a plain run reproduces:
// the burn-in of chain k is the first burn_in.iterations iterations of chain k of a run of the
// burn-in's sampler with run.seed = burn_in_seed, the run's run.data_seed and run.warmup =
// burn_in.iterations (the whole burn-in is warmup, so a step it adapts is frozen at its end; for a
// sampler that adapts nothing the warmup changes nothing). The run's own chain then starts at the
// burn-in's last θ as at a run.init start: fresh momentum, its own warmup and adaptation.
// Resume: a chain whose checkpoint lies after its burn-in continues from the checkpoint, which
// also carries the burn-in's record for the manifest; one stopped during its burn-in has no
// checkpoint and replays the burn-in from the seed (it is deterministic).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

import sgmcmc;

/// The burn-in's configuration, iterations and seed, for the manifest (its plan is
/// sgmcmc::BurnInPlan, read with the run's by sgmcmc::plan_run).
nlohmann::json burn_in_record(const sgmcmc::BurnInPlan& plan);

/// One chain's burn-in: its own chain of the burn-in's sampler, and what it did.
class BurnIn {
public:
  /// Chain `k`'s burn-in of `plan`, which plan_run has checked; its chain is built when it runs.
  BurnIn(const sgmcmc::BurnInPlan& plan, std::shared_ptr<const sgmcmc::Model> model, std::uint64_t k);

  /// Where the burn-in starts instead of the model's initial point (run.init).
  void start_at(std::vector<double> theta) { start_ = std::move(theta); }

  /// Runs the burn-in and starts `main` at its last θ. When the burn-in ended the chain instead
  /// (interrupted by `main_schedule.stop_requested`, or diverged), returns the chain's result,
  /// iteration 0 of its own sampler, with the reason.
  std::optional<sgmcmc::ChainResult> run(sgmcmc::Chain& main, const sgmcmc::ChainSchedule& main_schedule,
                                         std::atomic<std::uint64_t>* progress);

  /// What the burn-in cost and did, for the chain's entry in the manifest.
  nlohmann::json record() const { return record_; }

  /// A checkpoint of the run's own chain carries the record (a resumed run does not repeat the burn-in).
  void save_record(sgmcmc::StateWriter& out) const;
  void restore_record(sgmcmc::StateReader& in);

private:
  /// The burn-in's chain, built from its plan.
  std::unique_ptr<sgmcmc::Chain> build() const;

  sgmcmc::ChainPlan plan_;    // the burn-in's sampler (BurnInPlan::chain)
  sgmcmc::ChainSchedule schedule_;  // all warmup (BurnInPlan::schedule)
  bool own_integrator_;       // [burn_in.integrator] given: its keys, not [integrator]'s, are the burn-in's
  std::shared_ptr<const sgmcmc::Model> model_;
  sgmcmc::Rng rng_;           // the burn-in's own generator (burn_in_seed, chain_stream(k))
  std::optional<std::vector<double>> start_;
  std::unique_ptr<sgmcmc::Chain> chain_;  // only while it runs
  nlohmann::json record_ = nlohmann::json::object();
};

/// Hands a chain's output to `files` and adds its burn-in's record to every checkpoint.
class WithBurnInRecord final : public sgmcmc::ChainObserver {
public:
  WithBurnInRecord(sgmcmc::ChainObserver& files, const BurnIn& burn_in) : files_(files), burn_in_(burn_in) {}
  void on_draw(const sgmcmc::Draw& draw) override { files_.on_draw(draw); }
  void on_metrics(const sgmcmc::MetricsRow& row) override { files_.on_metrics(row); }
  void on_checkpoint(std::uint64_t iteration, sgmcmc::StateWriter& state) override {
    burn_in_.save_record(state);
    files_.on_checkpoint(iteration, state);
  }

private:
  sgmcmc::ChainObserver& files_;
  const BurnIn& burn_in_;
};
