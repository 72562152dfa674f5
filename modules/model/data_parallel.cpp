// The data-parallel decorator's definitions (its interface, sgmcmc.data_parallel, is
// modules/model/data_parallel.cppm, which says what is forwarded, reduced and hidden).
module;
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
module sgmcmc.data_parallel;

import sgmcmc.error;

namespace sgmcmc {

namespace data_parallel_parts {

/// The items of a batch that one rank owns, in the batch's order, with their weights.
struct OwnedItems {
  std::vector<std::size_t> items;
  std::vector<double> weights;
  Batch batch() const { return Batch{items, weights}; }
};

class DataParallelModel final : public Model {
public:
  DataParallelModel(std::shared_ptr<const Model> model, std::shared_ptr<RankGroup> ranks)
      : model_(std::move(model)), ranks_(std::move(ranks)), rank_(ranks_->rank()), size_(ranks_->size()),
        items_(model_->total_items()), first_(row_block_start(items_, rank_, size_)),
        end_(row_block_start(items_, rank_ + 1, size_)), sharded_(model_->capabilities().row_shares),
        offset_(sharded_ ? first_ : 0), latent_(model_->capabilities().latent_gibbs_step) {
    if (sharded_ && model_->num_items() != end_ - first_)
      throw Error("internal: a model with row shares holds " + std::to_string(model_->num_items()) + " items on rank " +
                  std::to_string(rank_) + " of " + std::to_string(size_) + ", but the block of its " +
                  std::to_string(items_) + " is " + std::to_string(end_ - first_));
  }

  std::size_t dimension() const override { return model_->dimension(); }
  std::size_t num_items() const override { return items_; }
  std::size_t rows_held() const { return model_->num_items(); }
  ItemBlock block() const { return {first_, end_}; }
  ItemBlock evaluated_items() const override { return block(); }
  LocalRows local_rows() const { return {model_.get(), {first_ - offset_, end_ - offset_}}; }
  void sum_over_ranks(std::span<double> values) const {
    const std::vector<double> mine(values.begin(), values.end());
    sum_parts(mine, values);
  }
  std::vector<std::string> parameter_names() const override { return model_->parameter_names(); }
  Capabilities capabilities() const override {
    Capabilities c = model_->capabilities();
    c.per_item_gradients = c.sparse_item_gradients = c.float_gradient = false;
    c.row_shares = false;  // to its callers the decorated model has every item, numbered globally
    return c;
  }
  std::unique_ptr<Workspace> make_workspace() const override { return model_->make_workspace(); }
  void initial_point(std::span<double> theta, Rng& rng) const override { model_->initial_point(theta, rng); }

  double prior_potential(std::span<const double> theta) const override { return model_->prior_potential(theta); }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    model_->add_prior_gradient(theta, gradient);
  }
  double prior_potential_given(std::span<const double> theta, Workspace& workspace) const override {
    return model_->prior_potential_given(theta, workspace);
  }
  void add_prior_gradient_given(std::span<const double> theta, std::span<double> gradient,
                                Workspace& workspace) const override {
    model_->add_prior_gradient_given(theta, gradient, workspace);
  }

  void add_data_gradient(std::span<const double> theta, const Batch& batch, std::span<double> gradient,
                         Workspace& workspace, Rng& rng) const override {
    const std::size_t d = gradient.size();
    auto& part = start_part(gradient, latent_ ? 1 : 0);
    model_->add_data_gradient(theta, owned(batch), std::span(part).first(d), workspace, rng);
    if (!latent_) return sum_parts(part, gradient);
    sum_marked_parts(part, total_, rng);
    std::copy_n(total_.begin(), d, gradient.begin());
  }

  double data_potential(std::span<const double> theta, const Batch& batch, Workspace& workspace) const override {
    const double part = model_->data_potential(theta, owned(batch), workspace);
    double total = 0.0;
    sum_parts(std::span(&part, 1), std::span(&total, 1));
    return total;
  }

  /// The gradient's d numbers, the potential and whether the model gave it, in one gather.
  std::optional<double> data_potential_and_gradient(std::span<const double> theta, const Batch& batch,
                                                    std::span<double> gradient, Workspace& workspace,
                                                    Rng& rng) const override {
    const std::size_t d = gradient.size();
    auto& part = start_part(gradient, latent_ ? 3 : 2);
    const auto potential =
        model_->data_potential_and_gradient(theta, owned(batch), std::span(part).first(d), workspace, rng);
    part[d] = potential.value_or(0.0);
    part[d + 1] = potential ? 1.0 : 0.0;
    auto& total = total_;
    sum_marked_parts(part, total, rng);
    std::copy(total.begin(), total.begin() + static_cast<std::ptrdiff_t>(d), gradient.begin());
    // Every rank's model answers alike (one model, replicated): all parts have it or none has.
    if (total[d + 1] != static_cast<double>(size_)) return std::nullopt;
    return total[d];
  }

  /// out[k] ← s_{items[k]}(θ) from the rank that owns the item: picked, not summed, so exact.
  void glm_scalars(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                   Workspace& workspace) const override {
    // In the scratch buffers (no allocation per call once they have grown: saga and cv call this
    // every iteration): the owned items' positions in the batch, then their scalars.
    auto& positions = positions_;
    positions.clear();
    mine_.items.clear();
    for (std::size_t k = 0; k < items.size(); ++k)
      if (owns(items[k])) {
        positions.push_back(k);
        mine_.items.push_back(items[k] - offset_);
      }
    auto& scalars = total_;
    scalars.resize(mine_.items.size());
    model_->glm_scalars(theta, mine_.items, scalars, workspace);
    auto& part = part_;
    part.assign(items.size(), 0.0);
    for (std::size_t k = 0; k < positions.size(); ++k) part[positions[k]] = scalars[k];
    auto& all = all_;
    all.resize(size_ * items.size());
    gather(part, all);
    for (std::size_t k = 0; k < items.size(); ++k) out[k] = all[owner(items[k]) * items.size() + k];
  }

  void add_scaled_features(std::span<const std::size_t> items, std::span<const double> scales,
                           std::span<double> gradient) const override {
    owned(Batch{items, scales});  // the owned items with their scales as weights
    auto& part = start_part(gradient, 0);
    model_->add_scaled_features(mine_.items, mine_.weights, std::span(part).first(gradient.size()));
    sum_parts(part, gradient);
  }

  /// L_i of every item on every rank (lipschitz sampling draws the global batch from all N): each
  /// rank's block, padded to the largest block, gathered. A model holding every row answers alone.
  /// The estimator asks while the chain is built, inside the ranks' set-up: the runner's group
  /// then first exchanges the set-up's outcome, so that a rank whose set-up failed is not left in
  /// a gather of another size (runners/sgmcmc/data_parallel_run.hpp, ClusterRanks::setting_up).
  void item_lipschitz_bounds(std::span<double> out) const override {
    if (!sharded_) return model_->item_lipschitz_bounds(out);
    std::vector<double> mine(end_ - first_);
    model_->item_lipschitz_bounds(mine);
    gather_blocks(mine, out);
  }

  /// out[i] ← the value of item i (all N, globally numbered) from the rank whose block holds it,
  /// `mine` being this rank's block's: the blocks, padded to the widest, gathered.
  void gather_blocks(std::span<const double> mine, std::span<double> out) const {
    const std::size_t widest = row_block_start(items_, 1, size_) + (items_ % size_ != 0 ? 1 : 0);
    std::vector<double> padded(widest, 0.0), all(size_ * widest);
    std::copy(mine.begin(), mine.end(), padded.begin());
    gather(padded, all);
    for (std::size_t r = 0; r < size_; ++r) {
      const std::size_t first = row_block_start(items_, r, size_), end = row_block_start(items_, r + 1, size_);
      std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(r * widest), end - first,
                  out.begin() + static_cast<std::ptrdiff_t>(first));
    }
  }

  /// The model's Gibbs step sums over this rank's rows (in its own numbering) and completes the
  /// sums with the other ranks' (RankSums); the one-process `data` is not this chain's.
  TargetChange after_step(std::uint64_t iteration, std::span<double> theta, Workspace& workspace, Rng& rng,
                          const ItemSums& /*data*/) const override {
    return model_->after_step(iteration, theta, workspace, rng, RankSums(*this));
  }

  std::vector<std::string> metric_names() const override { return model_->metric_names(); }
  void evaluate_metrics(std::span<const double> theta, Workspace& workspace, std::span<double> out) const override {
    model_->evaluate_metrics(theta, workspace, out);
  }
  std::vector<std::string> quantity_names() const override { return model_->quantity_names(); }
  void evaluate_quantities(std::span<const double> theta, Workspace& workspace, std::span<double> out) const override {
    model_->evaluate_quantities(theta, workspace, out);
  }
  std::vector<double> simulated_parameters() const override { return model_->simulated_parameters(); }
  PredictionForm prediction_form() const override { return model_->prediction_form(); }
  std::unique_ptr<PredictionRows> read_prediction_rows(const std::string& path) const override {
    return model_->read_prediction_rows(path);
  }
  void predict_rows(std::span<const double> theta, const PredictionRows& rows, std::span<double> out,
                    std::span<double> log_densities) const override {
    model_->predict_rows(theta, rows, out, log_densities);
  }

private:
  bool owns(std::size_t item) const { return item >= first_ && item < end_; }

  /// The rank whose block holds `item`: the r with ⌊N·r/P⌋ <= item < ⌊N·(r+1)/P⌋.
  std::size_t owner(std::size_t item) const {
    const std::size_t n = items_;
    std::size_t r = static_cast<std::size_t>(static_cast<unsigned __int128>(item) * size_ / std::max<std::size_t>(n, 1));
    while (r + 1 < size_ && row_block_start(n, r + 1, size_) <= item) ++r;
    while (r > 0 && row_block_start(n, r, size_) > item) --r;
    return r;
  }

  /// The items of `batch` this rank owns, in the batch's order, with their weights (in mine_).
  Batch owned(const Batch& batch) const {
    mine_.items.clear();
    mine_.weights.clear();
    for (std::size_t k = 0; k < batch.items.size(); ++k)
      if (owns(batch.items[k])) {
        mine_.items.push_back(batch.items[k] - offset_);  // the model's own numbering
        if (!batch.weights.empty()) mine_.weights.push_back(batch.weights[k]);
      }
    return mine_.batch();
  }

  /// This rank's part (in part_), `extra` numbers longer than `given`: rank 0 starts from the
  /// caller's vector (so that with one rank the model adds onto it exactly as undecorated), the
  /// others from zero.
  std::vector<double>& start_part(std::span<const double> given, std::size_t extra) const {
    part_.assign(given.size() + extra, 0.0);
    if (rank_ == 0) std::copy(given.begin(), given.end(), part_.begin());
    return part_;
  }

  /// out[j] ← Σ_r part_r[j] in rank order, r = 0..P-1, the same on every rank. `out` has the size
  /// of `part`.
  void sum_parts(std::span<const double> part, std::span<double> out) const {
    const std::size_t m = part.size();
    auto& all = all_;
    all.resize(size_ * m);
    gather(part, all);
    std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(m), out.begin());
    for (std::size_t r = 1; r < size_; ++r)
      for (std::size_t j = 0; j < m; ++j) out[j] += all[r * m + j];
  }

  /// total ← the ranks' parts summed in rank order (sum_parts). A gradient that Gibbs-samples
  /// latent variables draws from the chain's stream, which must stay the same on every rank: each
  /// rank must draw as often whatever items it holds (lda draws one key per call,
  /// Model::add_data_gradient). For such a model the last slot of `part`, which the caller
  /// reserved, carries the stream's next value (its top 53 bits, exact in a double), so that a
  /// model that breaks this ends the run on every rank at once instead of letting the chains part.
  void sum_marked_parts(std::vector<double>& part, std::vector<double>& total, const Rng& rng) const {
    const std::size_t m = part.size();
    if (latent_) {
      Rng next = rng;
      part.back() = static_cast<double>(next.bits() >> 11);
    }
    total.resize(m);  // sum_parts writes every entry
    sum_parts(part, total);
    if (!latent_) return;
    for (std::size_t r = 1; r < size_; ++r)
      if (all_[r * m + m - 1] != all_[m - 1])
        throw Error("model: its gradient drew from the chain's random stream differently on rank " + std::to_string(r) +
                    " than on rank 0, so their chains would part: a latent Gibbs step must draw as often on every "
                    "rank, whatever items it holds (a key per call, then a stream per item: Model::add_data_gradient)");
  }

  /// This rank's rows, and the ranks' sums added in rank order (sum_over_ranks).
  class RankSums final : public ItemSums {
  public:
    explicit RankSums(const DataParallelModel& model) : model_(model) {}
    ItemBlock items() const override { return model_.local_rows().items; }
    void complete(std::span<double> sums) const override { model_.sum_over_ranks(sums); }

  private:
    const DataParallelModel& model_;
  };

  void gather(std::span<const double> mine, std::span<double> all) const {
    if (size_ == 1) {
      std::copy(mine.begin(), mine.end(), all.begin());
      return;
    }
    ranks_->all_gather(mine, all);
  }

  std::shared_ptr<const Model> model_;
  std::shared_ptr<RankGroup> ranks_;
  std::size_t rank_, size_;
  std::size_t items_;        // N, every rank's items together
  std::size_t first_, end_;  // this rank's rows [first_, end_)
  bool sharded_;             // the model holds only its block (row shares), numbered from 0
  std::size_t offset_;       // first_ when sharded, else 0: global item - offset_ = the model's
  bool latent_;             // the gradient Gibbs-samples latent variables: its stream draws are checked
  // Scratch reused by every evaluation, so that a step allocates nothing here once the buffers
  // have grown: one decorator serves one chain on one thread (the interface's contract).
  mutable OwnedItems mine_;
  mutable std::vector<std::size_t> positions_;
  mutable std::vector<double> part_, all_, total_;
};

}  // namespace data_parallel_parts

namespace {
/// `model` as data_parallel_model made it, or nullptr for any other model.
const data_parallel_parts::DataParallelModel* split_of(const Model& model) {
  return dynamic_cast<const data_parallel_parts::DataParallelModel*>(&model);
}
}  // namespace

ItemBlock evaluated_items(const Model& model) {
  const auto* split = split_of(model);
  return split ? split->block() : ItemBlock{0, model.num_items()};
}

LocalRows local_rows(const Model& model) {
  const auto* split = split_of(model);
  return split ? split->local_rows() : LocalRows{&model, {0, model.num_items()}};
}

std::vector<double> gather_item_blocks(const Model& model, std::span<const double> mine) {
  const auto* split = split_of(model);
  if (!split) return {mine.begin(), mine.end()};
  std::vector<double> all(model.num_items());
  split->gather_blocks(mine, all);
  return all;
}

void sum_over_ranks(const Model& model, std::span<double> values) {
  if (const auto* split = split_of(model)) split->sum_over_ranks(values);
}

std::size_t rows_held(const Model& model) {
  const auto* split = split_of(model);
  return split ? split->rows_held() : 0;
}

std::shared_ptr<const Model> data_parallel_model(std::shared_ptr<const Model> model, std::shared_ptr<RankGroup> ranks) {
  if (!model || !ranks || ranks->size() == 0 || ranks->rank() >= ranks->size())
    throw Error("internal: data_parallel_model needs a model and a rank group with this rank in it");
  return std::make_shared<const data_parallel_parts::DataParallelModel>(std::move(model), std::move(ranks));
}

}  // namespace sgmcmc
