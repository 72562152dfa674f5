// run.data_parallel = true (issue 45): `mpirun -n P sgmcmc run ...` runs ONE chain whose
// data terms are split across the P ranks. sgmcmc.data_parallel (modules/model/data_parallel.cppm)
// splits them; this file is the runner's side: the MPI collective it reduces with (counted for the
// manifest), the start-up refusals of what this stage does not support, and the agreement of the
// ranks on the run's set-up (a refusal on one rank ends every rank, none waits on another forever).
//
// Every rank builds the same model (holding only its rows when the plugin can: ModelContext::rows),
// the same chain and the same files; rank 0 writes them into the
// run's folder, the others into a scratch folder they remove at the end, so that every rank runs
// the same code and calls the collective as often and in the same order.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "cluster.hpp"
#include "commands.hpp"
#include "prepared_run.hpp"

import sgmcmc;

/// run.data_parallel = true in `config` (read, so the key counts as known).
bool wants_data_parallel(const sgmcmc::RunConfig& config);

/// A data-parallel chain's collective on the MPI job, with what it cost this rank so far.
class ClusterRanks final : public sgmcmc::RankGroup {
public:
  explicit ClusterRanks(const Cluster& cluster) : cluster_(cluster) {}
  std::size_t rank() const override { return static_cast<std::size_t>(cluster_.rank()); }
  std::size_t size() const override { return static_cast<std::size_t>(cluster_.size()); }
  void all_gather(std::span<const double> mine, std::span<double> all) override;

  std::uint64_t gathers = 0;
  std::uint64_t bytes = 0;  // sent and received: a gather of m doubles sends m and receives (P-1)·m
  double seconds = 0.0;     // wall time inside the collective, waiting for slower ranks included

  /// While the ranks set up (DataParallelJob::agree): a gather the model asks for then (lipschitz
  /// sampling's bounds, while the chain is built) is preceded by the exchange of one number agree
  /// makes, so that a rank whose set-up already failed, waiting in agree's exchange, meets one of
  /// its size (not a gather of another size, which corrupts its buffer). Every rank's code is then
  /// kept in `failed_codes` and the gather refused: agree uses those codes instead of exchanging.
  bool setting_up = false;
  std::vector<double> failed_codes;

  /// Stopping together (SIGTERM or SIGINT: mpirun, signalled, sends every rank SIGTERM; a user or
  /// a batch system may signal one rank): each rank's signal lands at its own moment, and a rank
  /// that stopped alone would leave the others waiting in the collective forever. So while `signalled` (this process's flag, set by the handler) is
  /// given, every gather carries one more double, the sender's flag, and `stop` (what the chain
  /// reads) becomes true on every rank after the same gather: the ranks stop at the same block end.
  const std::atomic<bool>* signalled = nullptr;
  std::atomic<bool> stop{false};

private:
  const Cluster& cluster_;
};

/// This process's place in a data-parallel run.
class DataParallelJob {
public:
  /// Joins the MPI job; refuses, naming run.data_parallel, when no MPI launcher started the process.
  explicit DataParallelJob(const sgmcmc::Settings& run);

  const Cluster& cluster() const { return cluster_; }
  bool root() const { return cluster_.root(); }
  std::shared_ptr<sgmcmc::RankGroup> ranks() const { return ranks_; }
  /// The flag the chain reads to stop (ClusterRanks::stop), agreed on through the gathers from
  /// each rank's `signalled`.
  const std::atomic<bool>& stop_together(const std::atomic<bool>& signalled) const;

  /// Runs `step` on every rank, then the ranks agree: 0 when it succeeded on every rank, else the
  /// exit code (rank 0's when it failed), after rank 0 printed its error, or the failing rank its
  /// own when rank 0 succeeded.
  int agree(const std::function<void()>& step) const;
  /// Runs `step`; an error on any rank is printed by that rank and ends the whole job (the other
  /// ranks would otherwise wait in the collective forever).
  template <class Step>
  auto or_abort(Step&& step) const -> decltype(step()) {
    try {
      return step();
    } catch (const std::exception& error) {
      cluster_.abort(report_error(error, where()));
    }
  }

  /// A worker's scratch folder for the run's files (created, removed when the run ends).
  std::filesystem::path scratch() const;
  /// Each rank's `held` (the training rows its model holds), rank by rank, on every rank; called by
  /// every rank once the set-up agreed, so that none waits alone.
  std::vector<std::size_t> gather_rows(std::size_t held) const;
  /// The manifest's `data_parallel` record: the N items, the rows each rank holds, and the
  /// communication per chain iteration (warmup included) as run.
  nlohmann::json record(std::size_t items, const std::vector<std::size_t>& rows_per_rank, std::uint64_t iterations) const;

private:
  std::string where() const;  // " on rank r" (P > 1)

  Cluster cluster_;
  std::shared_ptr<ClusterRanks> ranks_;
};

/// Refuses, each naming its key, what is not split: more than one chain, saga on a model without
/// glm-gradients, the float chain and a burn-in. `sweep`, `sbc` and `tune` (no rank group)
/// are refused the key altogether.
void check_data_parallel(sgmcmc::ConfigReader config, const sgmcmc::RunSchedule& schedule, const sgmcmc::Model& model,
                         bool have_ranks);

/// Checkpoints (stage 3). The chain's whole state is replicated: θ, the integrator's and
/// corrector's state, the stream, and the estimators' state (minibatch and exact: none beyond the
/// stream; cv: its centre and the centre's full gradient, a reduced pass; svrg: its snapshot and
/// the snapshot's reduced full gradient; saga: its table's sum G, and its scalars, of which each
/// rank keeps its own block: the checkpoint holds all N, gathered from the ranks, and a resumed
/// rank takes back its block). A rank holds no other part of its own (its rows are read again from
/// the data), so every rank writes the same checkpoint, rank 0 into the run's folder.
/// `--resume` reads that folder on every rank (the folder must be visible to every rank, as the
/// configuration is): a worker copies its files into its scratch folder and continues them there.
void copy_run_for_worker(const std::filesystem::path& folder, const std::filesystem::path& scratch);

/// checkpoint.json's `data_parallel` record: {"ranks": P}.
nlohmann::json data_parallel_checkpoint_record(std::size_t ranks);

/// Refuses, naming checkpoint.json's data_parallel.ranks, to resume with another rank count than
/// the run was checkpointed with: the batch's partial sums would be added in another order, so
/// the chain would not continue bit for bit (the law is the same; the draws would differ by
/// rounding, which an MH decision or a long chain can amplify).
void check_resumed_ranks(const std::filesystem::path& folder, std::size_t ranks);

