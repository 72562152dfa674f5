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

/// The seed of the burn-in's generators: splitmix64 of the run's seed (Steele et al. 2014),
/// less its top bit so that it is a valid run.seed.
std::uint64_t burn_in_seed(std::uint64_t run_seed);

/// The section of the run's own sampler that a burn-in section replaces ("burn_in.integrator" ->
/// "integrator"); any other name unchanged.
std::string main_section_of(const std::string& section);

/// What [burn_in] asks for: its length and the configuration its chains are built from (the
/// run's, with the burn-in's [estimator], [integrator] and [corrector] in place).
struct BurnInPlan {
  std::uint64_t iterations = 0;
  std::uint64_t seed = 0;
  sgmcmc::RunConfig config;
  /// The burn-in's configuration, iterations and seed, for the manifest.
  nlohmann::json record() const;
};

/// None without a [burn_in] section. Throws, naming the key, for a burn-in table without
/// iterations, an unknown key in [burn_in] itself.
std::optional<BurnInPlan> read_burn_in(const sgmcmc::RunConfig& config, std::uint64_t run_seed);

/// One chain's burn-in: its own chain of the burn-in's sampler, and what it did.
class BurnIn {
public:
  /// Builds chain `k`'s burn-in and checks it can run (a refused combination or length throws,
  /// naming the [burn_in] keys). Marks the burn-in sections' keys as read in `config`.
  BurnIn(const BurnInPlan& plan, std::shared_ptr<const sgmcmc::Model> model, std::uint64_t k, sgmcmc::RunConfig& config);

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

  sgmcmc::ChainPlan plan_;  // the burn-in's sampler, read from the run's sections with the burn-in's in place
  std::shared_ptr<const sgmcmc::Model> model_;
  sgmcmc::Rng rng_;           // the burn-in's own generator (burn_in_seed, chain_stream(k))
  bool own_integrator_;       // [burn_in.integrator] given: its keys, not [integrator]'s, are the burn-in's
  std::optional<std::vector<double>> start_;
  std::unique_ptr<sgmcmc::Chain> chain_;  // only while it is built for a check or running
  sgmcmc::ChainSchedule schedule_;
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
