// The per-item scalars a GLM model's estimators keep (∇f_i = s_i x_i): SAGA's table of s_i(α_i)
// and the control variate's s_i(c) at its centre. A data-parallel rank keeps only its block's.
module;
#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>
module sgmcmc.estimators:item_scalars;
import sgmcmc.sampler;
import sgmcmc.data_parallel;

namespace sgmcmc::estimator_parts {

/// s_i at some point for the items this process evaluates (evaluated_items: all of them in one
/// process, its block on a data-parallel rank). The reduced add_scaled_features adds s_i x_i for
/// the items a rank owns only, so a rank never reads the other ranks' scalars: N/P of them per
/// rank, not N. An estimator built for a model without glm-gradients keeps none.
class ItemScalars {
public:
  ItemScalars(const Model& model, bool kept)
      : model_(&model), items_(kept ? model.num_items() : 0), block_(kept ? evaluated_items(model) : ItemBlock{}) {}

  /// s_i(θ) of every item (this process keeping its block's), and sum += Σ_i s_i(θ) x_i, reduced
  /// over the ranks: one full data pass, which the caller counts. In one process a single pass; a
  /// rank passes the same chunks as every other rank (glm_scalars and add_scaled_features are
  /// collectives there), so the scalars gathered at once stay at P·chunk, not P·N.
  void fill(std::span<const double> theta, std::span<double> sum, ChainContext& context) {
    if (block_.size() == items_) {
      const auto items = every_item(context.model);
      scalars_.assign(items.size(), 0.0);
      context.model.glm_scalars(theta, items, scalars_, context.workspace);
      context.model.add_scaled_features(items, scalars_, sum);
      return;
    }
    constexpr std::size_t chunk = 65536;
    scalars_.assign(block_.size(), 0.0);
    for (std::size_t first = 0; first < items_; first += chunk) {
      chunk_items_.resize(std::min(chunk, items_ - first));
      for (std::size_t k = 0; k < chunk_items_.size(); ++k) chunk_items_[k] = first + k;
      chunk_scalars_.resize(chunk_items_.size());
      context.model.glm_scalars(theta, chunk_items_, chunk_scalars_, context.workspace);
      context.model.add_scaled_features(chunk_items_, chunk_scalars_, sum);
      for (std::size_t k = 0; k < chunk_items_.size(); ++k)
        if (block_.holds(chunk_items_[k])) (*this)[chunk_items_[k]] = chunk_scalars_[k];
    }
  }

  /// Whether this process keeps item i's scalar (and evaluates its terms).
  bool holds(std::size_t item) const { return block_.holds(item); }
  double& operator[](std::size_t item) { return scalars_[item - block_.first]; }
  double operator[](std::size_t item) const { return scalars_[item - block_.first]; }

  /// What a checkpoint holds (SavingArchive, sgmcmc.state): all N scalars. A data-parallel rank
  /// saves the ranks' blocks gathered (every rank checkpoints at the same block end), so that the
  /// checkpoint rank 0 writes holds them all, as a one-process checkpoint does, and takes its own
  /// block back on resuming.
  template <class Self, class Archive>
  static void saved_fields(Self& self, Archive& archive) {
    if (self.block_.size() == self.items_) {
      archive(Sized{self.scalars_, self.items_});
    } else if constexpr (Archive::restoring) {
      std::vector<double> table;
      archive(Sized{table, self.items_});
      const auto at = [&](std::size_t item) { return table.begin() + static_cast<std::ptrdiff_t>(item); };
      self.scalars_.assign(at(self.block_.first), at(self.block_.end));
    } else {
      const std::vector<double> table = gather_item_blocks(*self.model_, self.scalars_);
      archive(Sized{table, self.items_});
    }
  }

private:
  const Model* model_;  // the chain's, which outlives its estimator
  std::size_t items_;   // N (0: none kept)
  ItemBlock block_;     // the items whose scalars this process keeps
  std::vector<double> scalars_;  // s_i of the block's items
  std::vector<std::size_t> chunk_items_;  // scratch of a rank's chunked pass
  std::vector<double> chunk_scalars_;
};

}  // namespace sgmcmc::estimator_parts
