// One chain whose data terms are split across the ranks of a job (run.data_parallel; issue 45):
// a decorator around a Model, so that estimators, integrators and correctors stay unaware.
//
// θ and the chain's state are replicated: every rank runs the same chain with the same stream and
// draws the same global minibatch. Rank r owns the contiguous block of items [⌊N·r/P⌋, ⌊N·(r+1)/P⌋)
// (row_block_start, sgmcmc.model). Each data term the chain asks for (a batch's gradient or
// potential, a full pass) is split by owner; every rank evaluates the items it owns, and one
// all-gather per evaluation brings the P partial results to every rank, where they are summed in
// rank order. The sum is then the same, bit for bit, on every rank and in every run with the same
// rank count. With one rank it is the undecorated model's value, bit for bit (rank 0's part is
// added onto the caller's vector as the model itself adds; the other ranks' parts start from zero).
//
// Sharded rows (stage 2): a model with the row-shares capability, built with ModelContext::rows =
// part r of P, holds only its block, numbered from 0, and tells N (Model::total_items). The
// decorator checks that the model holds its block's count, reports N, and routes each global item
// index it owns to its local index (no communication: blocks follow from N, P and r).
// A model without the capability holds every item on every rank (stage 1) and is given global
// indices.
//
// Forwarded unchanged (they read θ, the prior or the held-out data every rank holds): the prior
// terms, metrics, quantities, and after_step, whose sums over the data (ItemSums: pmf's Gibbs draw
// of its noise precision) run over this rank's rows and are then added across the ranks. Reduced: add_data_gradient,
// data_potential, data_potential_and_gradient, glm_scalars, add_scaled_features,
// item_lipschitz_bounds (gathered when sharded), and sums over the local rows of the undecorated
// model (local_rows, sum_over_ranks: the Fisher mass); saga's table keeps only this rank's block
// (evaluated_items), since the reduced add_scaled_features reads only the scales of owned items.
// A gradient that Gibbs-samples latent variables (lda) samples those of the items this rank owns,
// each from a stream of its own derived from one draw of the chain's (the model's part), and the
// ranks' streams are checked to stay one at every gradient. Hidden (their capabilities are off, so
// the run refuses what needs them): per-item and sparse item gradients of arbitrary items (saga's
// table) and the float chain's gradient.
//
// The library links no MPI: the collective is a RankGroup, which the runner implements on MPI.
module;
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>
export module sgmcmc.data_parallel;
export import sgmcmc.model;

export namespace sgmcmc {

/// The ranks of one data-parallel chain: who this is, how many there are, and the one collective
/// the decorator needs. Every rank calls all_gather as often, in the same order and with the same
/// sizes (the replicated chain guarantees it).
class RankGroup {
public:
  virtual ~RankGroup() = default;
  virtual std::size_t rank() const = 0;
  virtual std::size_t size() const = 0;
  /// all[r·m, (r+1)·m) ← rank r's `mine`, on every rank (m = mine.size(), all.size() = P·m).
  virtual void all_gather(std::span<const double> mine, std::span<double> all) = 0;
};

/// `model` with its data terms split across `ranks` as described above. Not thread-safe: one
/// chain, on the thread that may call the group's collective.
std::shared_ptr<const Model> data_parallel_model(std::shared_ptr<const Model> model, std::shared_ptr<RankGroup> ranks);

/// This rank's block, in the global numbering, under data_parallel_model (whether its model holds
/// only those rows or all):
/// what a per-item state of the chain (saga's table) keeps on this rank. Every item of any other
/// model.
ItemBlock evaluated_items(const Model& model);

/// The rows this process evaluates and the model that evaluates them: for a model
/// data_parallel_model made, the undecorated model (with every capability it has, per-item
/// gradients among them) and this rank's block in that model's own numbering; for any other model,
/// itself and all its items. A sum over the items (the Fisher mass) runs over these rows and is
/// then completed by sum_over_ranks.
struct LocalRows {
  const Model* model;
  ItemBlock items;
};
LocalRows local_rows(const Model& model);

/// values ← Σ_r values_r, rank r's `values` added in rank order, the same bit for bit on every rank,
/// for a model data_parallel_model made (one all-gather); unchanged for any other model, and with
/// one rank.
void sum_over_ranks(const Model& model, std::span<double> values);

/// Every item's value (N of them, globally numbered) from the rank whose block holds the item,
/// `mine` holding this rank's block's (evaluated_items), the same on every rank, for a model
/// data_parallel_model made (one all-gather: every rank calls it at the same point, and holds P
/// blocks for the while); a copy of `mine` for any other model.
std::vector<double> gather_item_blocks(const Model& model, std::span<const double> mine);

/// The training items this rank's model holds, of a model data_parallel_model made: its block's
/// size when the model holds only its rows, else N (the runner gathers them into the manifest's
/// rows_per_rank). 0 for any other model.
std::size_t rows_held(const Model& model);

}  // namespace sgmcmc
