// A sweep across the ranks of a cluster (cluster.hpp): rank 0's plan on every rank, each rank's
// share of the cells run on its own threads, finished cells sent to rank 0, which writes them
// into the sweep's folder. With one rank, the cells of a plain `sgmcmc sweep`.
#pragma once
#include <optional>

#include "cluster.hpp"
#include "commands.hpp"
#include "sweep_plan.hpp"

/// Rank 0's plan on every rank (the other ranks parse rank 0's copy of the file), or the exit code
/// of a sweep rank 0 refused: then rank 0 alone has printed why, and every rank exits with it.
struct Shared {
  std::optional<Plan> plan;
  int refused = 0;
};

/// Rank 0 makes the plan and reports a refusal itself, once; the other ranks parse its copy of the
/// sweep file.
Shared share_plan(const Cluster& cluster, const SweepOptions& options, unsigned jobs);

/// Rank 0: runs its share, writes the cells the other ranks send, until every rank is done.
void run_on_root(const Cluster& cluster, Plan& plan, const SweepOptions& options, unsigned jobs);

/// Any other rank: runs its share in a scratch folder of this machine (a cluster need not share
/// a file system with rank 0), sends each cell to rank 0 as it finishes, then says it is done.
void run_on_worker(const Cluster& cluster, Plan& plan, const SweepOptions& options, unsigned jobs);
