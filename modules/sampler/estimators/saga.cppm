// SAGA-LD (Dubey et al. 2016): a table of the last gradient seen for every item, held in full
// (N × d), as N scalars for GLM models, or as N × s numbers for sparse item gradients.
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <sys/mman.h>
#include <fmt/format.h>
module sgmcmc.estimators:saga;
import sgmcmc.sampler;
import sgmcmc.error;
import sgmcmc.data_parallel;
import :minibatch;
import :weighted_batches;
import :parameters;
import :item_scalars;

namespace sgmcmc::estimator_parts {

/// table ← `count` zeros, on transparent huge pages where the kernel grants them: a table read at
/// random rows (SAGA's) otherwise misses the TLB on almost every row. The memory is reserved
/// untouched, the 2 MiB-aligned part of it advised (MADV_HUGEPAGE: advice only, ignored if
/// refused), and then filled, so the first touch already maps huge pages.
void assign_zeros_on_huge_pages(std::vector<double>& table, std::size_t count) {
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  table.clear();
  table.shrink_to_fit();
  table.reserve(count);
  const auto begin = reinterpret_cast<std::uintptr_t>(table.data());
  const auto end = begin + count * sizeof(double);
  const std::uintptr_t first = (begin + huge - 1) / huge * huge, last = end / huge * huge;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  table.assign(count, 0.0);
}

// ---- saga: a table of the last gradient seen for every item ------------------------------------

/// The table g_i = ∇f_i(α_i) of SAGA-LD (Dubey et al. 2016), with G = Σ_i g_i.
class GradientTable {
public:
  virtual ~GradientTable() = default;
  /// g_i ← ∇f_i(θ) for every item (one full pass), G ← Σ_i g_i.
  virtual void fill(std::span<const double> theta, ChainContext& context) = 0;
  /// out += Σ_k w_k [∇f_{i_k}(θ) - g_{i_k}] with the table as it was, then g_i ← ∇f_i(θ) and G
  /// updated for the batch's items. `distinct` says no item repeats in the batch.
  virtual void exchange(std::span<const double> theta, const WeightedBatch& draw, bool distinct,
                        std::span<double> out, ChainContext& context) = 0;
  std::span<const double> sum() const { return sum_; }
  /// The table and G, once filled.
  virtual void save_state(StateWriter& out) const = 0;
  virtual void restore_state(StateReader& in) = 0;

protected:
  /// G += Δ and out += scale·Δ, where Δ = Σ_k (fresh_k - old_k) was computed while updating: the
  /// whole estimate in one pass when every weight is `scale` and no item repeats.
  void add_change(std::span<const double> change, double scale, bool change_is_estimate, std::span<double> out) {
    for (std::size_t j = 0; j < sum_.size(); ++j) {
      if (change_is_estimate) out[j] += scale * change[j];
      sum_[j] += change[j];
    }
  }
  std::vector<double> sum_;     // G
  std::vector<double> change_;  // scratch: Δ
};

/// The N × d table, for any model: rows from item_gradients(), or, for a model without that
/// capability, from one-item batches of add_data_gradient (slower: one virtual call per item).
class FullTable final : public GradientTable {
public:
  explicit FullTable(const Model& model)
      : dimension_(model.dimension()), items_(model.num_items()), per_item_(model.capabilities().per_item_gradients) {}

  /// What a checkpoint holds (SavingArchive, sgmcmc.state); the scratch Δ is cleared on restoring.
  template <class Self, class Archive>
  static void saved_fields(Self& self, Archive& archive) {
    archive.section("saga table, N x d");
    archive(Sized{self.rows_, self.items_ * self.dimension_}, Sized{self.sum_, self.dimension_});
    if constexpr (Archive::restoring) self.change_.assign(self.dimension_, 0.0);
  }
  void save_state(StateWriter& out) const override { save_fields(*this, out); }
  void restore_state(StateReader& in) override { restore_fields(*this, in); }

  void fill(std::span<const double> theta, ChainContext& context) override {
    const auto items = every_item(context.model);
    rows_.assign(items.size() * dimension_, 0.0);
    item_rows(theta, items, rows_, context);
    sum_.assign(dimension_, 0.0);
    change_.assign(dimension_, 0.0);
    for (std::size_t i = 0; i < items.size(); ++i)
      for (std::size_t j = 0; j < dimension_; ++j) sum_[j] += rows_[i * dimension_ + j];
    context.cost.full_passes += 1;
  }

  void exchange(std::span<const double> theta, const WeightedBatch& draw, bool distinct, std::span<double> out,
                ChainContext& context) override {
    const auto items = draw.batch.items;
    const bool one_pass = distinct && draw.batch.weights.empty();
    fresh_.resize(items.size() * dimension_);
    item_rows(theta, items, fresh_, context);
    if (!one_pass)  // the estimate from the table as it was, before any repeated item changes it
      for (std::size_t k = 0; k < items.size(); ++k)
        for (std::size_t j = 0; j < dimension_; ++j)
          out[j] += draw.weight(k) * (fresh_[k * dimension_ + j] - rows_[items[k] * dimension_ + j]);
    set_zero(change_);
    for (std::size_t k = 0; k < items.size(); ++k)  // in order: a repeated item adds 0 the second time
      for (std::size_t j = 0; j < dimension_; ++j) {
        double& stored = rows_[items[k] * dimension_ + j];
        change_[j] += fresh_[k * dimension_ + j] - stored;
        stored = fresh_[k * dimension_ + j];
      }
    add_change(change_, draw.scale, one_pass, out);
  }

private:
  void item_rows(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                 ChainContext& context) const {
    if (per_item_) {
      context.model.item_gradients(theta, items, out, context.workspace);
    } else {
      set_zero(out);
      for (std::size_t k = 0; k < items.size(); ++k)
        context.model.add_data_gradient(theta, Batch{items.subspan(k, 1)}, out.subspan(k * dimension_, dimension_),
                                        context.workspace, context.rng);
    }
    context.cost.item_gradients += items.size();
  }

  std::size_t dimension_, items_;
  bool per_item_;
  std::vector<double> rows_;   // g_i, row-major N × d
  std::vector<double> fresh_;  // scratch: ∇f_i(θ) of the batch
};

/// N scalars for a GLM model: g_i = s_i(α_i) x_i is stored as s_i(α_i) (modules/README.md, "SAGA").
/// A rank of a data-parallel chain keeps only the scalars of its block of items (ItemScalars), and
/// G's update, reduced as every add_scaled_features is, is the global one.
class CompactTable final : public GradientTable {
public:
  explicit CompactTable(const Model& model) : dimension_(model.dimension()), scalars_(model, true) {}

  /// What a checkpoint holds (SavingArchive, sgmcmc.state): all N scalars (ItemScalars) and G; the
  /// scratch Δ is cleared on restoring.
  template <class Self, class Archive>
  static void saved_fields(Self& self, Archive& archive) {
    archive.section("saga table, N scalars");
    ItemScalars::saved_fields(self.scalars_, archive);
    archive(Sized{self.sum_, self.dimension_});
    if constexpr (Archive::restoring) self.change_.assign(self.dimension_, 0.0);
  }
  void save_state(StateWriter& out) const override { save_fields(*this, out); }
  void restore_state(StateReader& in) override { restore_fields(*this, in); }

  void fill(std::span<const double> theta, ChainContext& context) override {
    sum_.assign(theta.size(), 0.0);
    change_.assign(theta.size(), 0.0);
    scalars_.fill(theta, sum_, context);
    context.cost.item_gradients += context.model.num_items();
    context.cost.full_passes += 1;
  }

  void exchange(std::span<const double> theta, const WeightedBatch& draw, bool distinct, std::span<double> out,
                ChainContext& context) override {
    const auto items = draw.batch.items;
    const bool one_pass = distinct && draw.batch.weights.empty();
    fresh_.resize(items.size());
    differences_.resize(items.size());
    context.model.glm_scalars(theta, items, fresh_, context.workspace);
    context.cost.item_gradients += items.size();
    // Items of other ranks get 0: their owners add their terms.
    if (!one_pass) {  // the estimate from the table as it was, before any repeated item changes it
      for (std::size_t k = 0; k < items.size(); ++k)
        differences_[k] = scalars_.holds(items[k]) ? draw.weight(k) * (fresh_[k] - scalars_[items[k]]) : 0.0;
      context.model.add_scaled_features(items, differences_, out);
    }
    for (std::size_t k = 0; k < items.size(); ++k) {  // in order: a repeated item adds 0 the second time
      differences_[k] = 0.0;
      if (!scalars_.holds(items[k])) continue;
      double& stored = scalars_[items[k]];
      differences_[k] = fresh_[k] - stored;
      stored = fresh_[k];
    }
    set_zero(change_);
    context.model.add_scaled_features(items, differences_, change_);
    add_change(change_, draw.scale, one_pass, out);
  }

private:
  std::size_t dimension_;
  ItemScalars scalars_;              // s_i(α_i)
  std::vector<double> fresh_;        // scratch: s_i(θ) of the batch
  std::vector<double> differences_;  // scratch
};

/// N × s numbers for a model whose item gradients have a fixed support of s coordinates
/// (`sparse-item-gradients`; pmf: U_i and V_j, s = 2 × rank): g_i is kept on its support only and
/// the dense G = Σ_i g_i is updated on the batch's supports only. SAGA's update (Baker et al. 2019, §3.1,
/// end; modules/README.md "SAGA"; Dubey et al. 2016) G += ∇f_i(θ) - g_i, g_i ← ∇f_i(θ) touches no
/// coordinate outside item i's support, where both vectors are zero, so this is the same
/// arithmetic as the N × d table's on the non-zeros: O(n·s) per estimate and N·s·8 bytes instead
/// of O(n·d) and N·d·8 (pmf at the 100k shape: 29 MB against 37 GB). The supports are not stored:
/// the model gives them per batch.
class SparseTable final : public GradientTable {
public:
  explicit SparseTable(const Model& model)
      : support_size_(model.item_gradient_support_size()), dimension_(model.dimension()), items_(model.num_items()) {}

  /// What a checkpoint holds (SavingArchive, sgmcmc.state).
  template <class Self, class Archive>
  static void saved_fields(Self& self, Archive& archive) {
    archive.section("saga table, N x s");
    archive(Sized{self.values_, self.items_ * self.support_size_}, Sized{self.sum_, self.dimension_});
  }
  void save_state(StateWriter& out) const override { save_fields(*this, out); }
  void restore_state(StateReader& in) override { restore_fields(*this, in); }

  void fill(std::span<const double> theta, ChainContext& context) override {
    const auto items = every_item(context.model);
    assign_zeros_on_huge_pages(values_, items.size() * support_size_);
    sum_.assign(theta.size(), 0.0);
    // In chunks, so that the supports' scratch stays small next to the table.
    constexpr std::size_t chunk = 4096;
    for (std::size_t first = 0; first < items.size(); first += chunk) {
      const auto part = std::span<const std::size_t>(items).subspan(first, std::min(chunk, items.size() - first));
      const auto rows = std::span<double>(values_).subspan(first * support_size_, part.size() * support_size_);
      support_.resize(rows.size());
      context.model.item_gradient_support(part, support_);
      context.model.sparse_item_gradients(theta, part, rows, context.workspace);
      for (std::size_t k = 0; k < rows.size(); ++k) sum_[support_[k]] += rows[k];
    }
    context.cost.item_gradients += items.size();
    context.cost.full_passes += 1;
  }

  void exchange(std::span<const double> theta, const WeightedBatch& draw, bool distinct, std::span<double> out,
                ChainContext& context) override {
    const auto items = draw.batch.items;
    const std::size_t s = support_size_;
    support_.resize(items.size() * s);
    fresh_.resize(items.size() * s);
    context.model.item_gradient_support(items, support_);
    context.model.sparse_item_gradients(theta, items, fresh_, context.workspace);
    context.cost.item_gradients += items.size();
    const bool one_pass = distinct && draw.batch.weights.empty();
    if (!one_pass)  // the estimate from the table as it was, before any repeated item changes it
      for (std::size_t k = 0; k < items.size(); ++k)
        for (std::size_t j = 0; j < s; ++j)
          out[support_[k * s + j]] += draw.weight(k) * (fresh_[k * s + j] - values_[items[k] * s + j]);
    constexpr std::size_t ahead = 8;  // the table is large and its rows are at random places
    for (std::size_t k = 0; k < items.size(); ++k) {  // in order: a repeated item adds 0 the second time
      if (k + ahead < items.size()) prefetch_row(items[k + ahead]);
      for (std::size_t j = 0; j < s; ++j) {
        double& stored = values_[items[k] * s + j];
        const double change = fresh_[k * s + j] - stored;
        stored = fresh_[k * s + j];
        sum_[support_[k * s + j]] += change;
        if (one_pass) out[support_[k * s + j]] += draw.scale * change;
      }
    }
  }

private:
  void prefetch_row(std::size_t item) const {
    const char* row = reinterpret_cast<const char*>(&values_[item * support_size_]);
    for (std::size_t byte = 0; byte < support_size_ * sizeof(double); byte += 64) __builtin_prefetch(row + byte, 1);
  }

  std::size_t support_size_, dimension_, items_;
  std::vector<double> values_;         // g_i on its support, row-major N × s
  std::vector<std::size_t> support_;   // scratch: the supports of a batch (or a chunk)
  std::vector<double> fresh_;          // scratch: ∇f_i(θ) of the batch on its supports
};

/// Why a data-parallel rank runs saga only on a GLM model: a table of per-item gradient vectors
/// would be filled and updated one collective per item, and held whole on every rank.
inline constexpr const char* data_parallel_refusal_of_table =
    "estimator 'saga' under run.data_parallel keeps each rank's block of its table in the GLM form only (a model "
    "with the glm-gradients capability): a table of per-item gradient vectors would cost one collective per item "
    "and be held whole on every rank";

/// SAGA-LD (Dubey et al. 2016; modules/README.md "SAGA"): ĝ(θ) = ∇f_0(θ) + G + Σ_k w_k [∇f_{i_k}(θ) - g_{i_k}]
/// with w_k = 1/(n p_{i_k}) (N/n when uniform), then g_i ← ∇f_i(θ) for the batch. The table is
/// filled by one full pass at the first θ, whose estimate is then exact. Keys: memory_limit_mb
/// (default 1024, for the tables of all of a run's chains together): the table's size is checked
/// when the estimator is built, and a run's chains together before any is built.
class SagaEstimator final : public Estimator {
public:
  SagaEstimator(const SagaParameters& parameters, const Model& model) : sampler_(parameters.batches, model) {
    if (const std::string refusal = table_refusal(model, parameters.memory_limit_mb); !refusal.empty())
      throw Error("estimator.memory_limit_mb: " + refusal);
    const Capabilities capabilities = model.capabilities();
    if (!capabilities.glm_gradients && evaluated_items(model).size() != model.num_items())
      throw Error(data_parallel_refusal_of_table);
    if (capabilities.glm_gradients)
      table_ = std::make_unique<CompactTable>(model);
    else if (capabilities.sparse_item_gradients)
      table_ = std::make_unique<SparseTable>(model);
    else
      table_ = std::make_unique<FullTable>(model);
  }

  /// Why `chains` tables of `model` (one per chain) do not fit in `limit_mb`, or "" when they
  /// do: checked before anything is allocated.
  static std::string table_refusal(const Model& model, double limit_mb, std::uint64_t chains = 1) {
    const Capabilities capabilities = model.capabilities();
    const bool compact = capabilities.glm_gradients, sparse = !compact && capabilities.sparse_item_gradients;
    const std::size_t per_item = compact ? 1 : sparse ? model.item_gradient_support_size() : model.dimension();
    const std::size_t items = compact ? evaluated_items(model).size() : model.num_items();  // a rank's block in the GLM form
    const double bytes = static_cast<double>(items) * static_cast<double>(per_item) * sizeof(double);
    const double total = bytes * static_cast<double>(chains);
    if (total <= limit_mb * 1024.0 * 1024.0) return "";
    return fmt::format("estimator 'saga' needs a gradient table of {:.0f} bytes ({:.2f} MB = N {} items × {} × 8 bytes) "
                       "per chain{}, more than the limit of {} MB for all chains together; raise the limit, or use "
                       "estimator 'svrg' or 'cv', which keep no table",
                       bytes, bytes / (1024.0 * 1024.0), items,
                       compact  ? std::string("1 scalar (GLM form)")
                       : sparse ? fmt::format("s {} (sparse item gradients)", per_item)
                                : fmt::format("d {}", per_item),
                       chains > 1 ? fmt::format(", {:.2f} MB for {} chains", total / (1024.0 * 1024.0), chains) : "",
                       limit_mb);
  }

  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    if (!filled_) {
      table_->fill(theta, context);
      filled_ = true;
      copy_sum_plus_prior(theta, gradient, context);
      return;
    }
    copy_sum_plus_prior(theta, gradient, context);
    table_->exchange(theta, sampler_.draw(context.rng), sampler_.distinct_items(), gradient, context);
  }

  /// What a checkpoint holds (SavingArchive, sgmcmc.state): the table only once it is filled.
  template <class Self, class Archive>
  static void saved_fields(Self& self, Archive& archive) {
    archive.section("estimator saga");
    archive(self.filled_);
    if (self.filled_) archive.nested(*self.table_);
    archive.nested(self.sampler_);
  }
  void save_state(StateWriter& out) const override { save_fields(*this, out); }
  void restore_state(StateReader& in) override { restore_fields(*this, in); }
  /// The table is refilled at the next estimate (a full pass under the new data terms).
  void data_terms_changed(std::span<const double>, ChainContext&) override { filled_ = false; }

private:
  void copy_sum_plus_prior(std::span<const double> theta, std::span<double> gradient, ChainContext& context) const {
    const auto sum = table_->sum();
    std::copy(sum.begin(), sum.end(), gradient.begin());
    context.model.add_prior_gradient_given(theta, gradient, context.workspace);
  }

  ItemSampler sampler_;
  std::unique_ptr<GradientTable> table_;
  bool filled_ = false;
};

}  // namespace sgmcmc::estimator_parts

namespace sgmcmc {

namespace estimator_parts {

/// saga's own key, after the batch's.
const FieldTable<SagaParameters>& saga_table_fields() {
  using P = SagaParameters;
  static const FieldTable<P> table = {number_field<P>(
      "memory_limit_mb", &P::memory_limit_mb,
      "the most all chains' gradient tables may take together, in MB; more is refused before allocation", positive())};
  return table;
}

}  // namespace estimator_parts

const FieldTable<SagaParameters>& SagaParameters::fields() {
  static const FieldTable<SagaParameters> table = concat<SagaParameters>(
      {nested<SagaParameters>(&SagaParameters::batches, ItemSamplingParameters::fields()), estimator_parts::saga_table_fields()});
  return table;
}

SagaParameters SagaParameters::from_settings(SectionReader section, const Model& model) {
  const auto parameters =
      read_fields_from(estimator_parts::saga_table_fields(), section, SagaParameters{.batches = ItemSamplingParameters::from_settings(section, model)});
  if (const auto refusal = estimator_parts::SagaEstimator::table_refusal(model, parameters.memory_limit_mb);
      !refusal.empty())
    throw Error(fmt::format("{}: {}", section.describe("memory_limit_mb"), refusal));
  return parameters;
}

}  // namespace sgmcmc
