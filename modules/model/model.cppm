// The Model interface: what a model plugin implements and the samplers call.
//
// Sign convention, used everywhere: U(θ) = -log π(θ) = f_0(θ) + Σ_{i=1..N} f_i(θ), with
// f_0 = -log p(θ) (the prior) and f_i = -log p(x_i | θ) (item i). Gradients are of U.
//
// A Model is immutable once built and shared by all chains. Whatever a chain mutates (latent
// variables, scratch buffers, running metric averages) lives in a Workspace the model makes for
// that chain. Data terms are evaluated in batches of item indices, never one item per virtual
// call, so the per-item loop stays inside the plugin where it can use BLAS.
module;
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>
export module sgmcmc.model;
export import sgmcmc.random;
export import sgmcmc.settings;
import sgmcmc.error;

export namespace sgmcmc {

/// Bumped whenever Model, Workspace, Batch, Capabilities, PluginInfo or ModelContext change;
/// a plugin built against another version is refused before its factory is touched.
inline constexpr std::uint32_t model_interface_version = 15;  // 2: lipschitz_bounds, 3: quantities,
                                                             // 4: prior terms given the workspace,
                                                             // 5: Workspace save_state/restore_state
                                                             // 6: sparse item gradients, after_step
                                                             //    returns the TargetChange
                                                             // 7: prior_simulation, simulated_parameters
                                                             // 8: Workspace::restart_averages
                                                             // 9: prediction (sgmcmc predict)
                                                             // 10: data_potential_and_gradient
                                                             // 11: float_gradient (the float chain)
                                                             // 12: ModelContext::rows, row_shares,
                                                             //     total_items
                                                             // 13: ModelContext::settings is a
                                                             //     SectionReader
                                                             // 14: after_step sums over the data
                                                             //     through ItemSums
                                                             // 15: evaluated_items

/// What a model can do beyond the required gradient. The runner refuses, naming the missing
/// capability, any combination that needs one the model lacks.
struct Capabilities {
  bool exact_log_likelihood = false;  // data_potential() is exact: MH correction, lp__
  bool per_item_gradients = false;    // item_gradients(): SAGA's table
  bool sparse_item_gradients = false; // item_gradient_support()/sparse_item_gradients(): SAGA's N × s table
  bool glm_gradients = false;         // ∇f_i(θ) = s_i(θ) x_i: glm_scalars()/add_scaled_features()
  bool lipschitz_bounds = false;      // item_lipschitz_bounds(): sampling with p_i ∝ L_i
  bool latent_gibbs_step = false;     // the gradient Gibbs-samples latent variables (LDA)
  bool positive_parameters = false;   // the integrators reflect θ at 0 (momentum negated with it)
  bool simulation = false;            // simulates its own data when none is given
  bool prior_simulation = false;      // model.simulate_from_prior: data simulated from a prior draw θ*
                                      // (simulated_parameters()), for simulation-based calibration
  bool prediction = false;            // read_prediction_rows()/predict_rows(): `sgmcmc predict`
  bool float_gradient = false;        // scaled_gradient_float(): run.chain_precision = "float"; such a
                                      // model's after_step does nothing (the float chain skips it)
  bool row_shares = false;            // given ModelContext::rows = part r of P, holds only that block of
                                      // its training items: num_items() and item indices are the block's
};

/// "exact-log-likelihood, per-item-gradients, ...": the names `sgmcmc list` shows.
std::vector<std::string> capability_names(const Capabilities& capabilities);

/// Items of one batch with optional weights (for sampling probabilities p_i ≠ 1/N):
/// the model adds Σ_{k} w_k ∇f_{items[k]}(θ). Empty `weights` means every weight is 1.
struct Batch {
  std::span<const std::size_t> items;
  std::span<const double> weights = {};
  double weight(std::size_t k) const { return weights.empty() ? 1.0 : weights[k]; }
};

/// What a model's after_step did to the target π(θ | workspace) the chain samples, so that the
/// chain drops what it cached of the old one.
enum class TargetChange {
  none,   // nothing the target depends on
  prior,  // f_0 changed (hyperparameters of the prior): cached gradients and potentials are stale
  data,   // the data terms f_i changed too (a noise precision): so are the estimators' sums of ∇f_i
};

/// The items [first, end): a contiguous block of the data items.
struct ItemBlock {
  std::size_t first = 0, end = 0;
  std::size_t size() const { return end - first; }
  bool holds(std::size_t item) const { return item >= first && item < end; }
};

/// How a step between gradient steps (after_step) sums over the training items when its draw
/// reads them (pmf's noise precision τ is drawn given Σ e², the squared residuals of all ratings):
/// the model adds its terms over items() into a vector of sums, then calls complete() on that
/// vector, which adds the other ranks' sums on a data-parallel run (the same total, bit for bit,
/// on every rank) and does nothing in one process. A model calls complete() at the same
/// iterations on every rank (it decides from the iteration and its options, never from its data).
class ItemSums {
public:
  virtual ~ItemSums() = default;
  virtual ItemBlock items() const = 0;  // in the model's own numbering
  virtual void complete(std::span<double> sums) const = 0;
};

/// The one-process ItemSums: every item of the model, nothing to add.
class AllItems final : public ItemSums {
public:
  explicit AllItems(std::size_t items) : items_(items) {}
  ItemBlock items() const override { return {0, items_}; }
  void complete(std::span<double>) const override {}

private:
  std::size_t items_;
};

/// Per-chain mutable state of a model. Models that keep none use this empty one.
class Workspace {
public:
  virtual ~Workspace() = default;
  /// What a checkpoint must keep for a resumed chain to continue bit for bit: state that carries
  /// from one iteration to the next (Gibbs-updated hyperparameters, running predictive averages,
  /// latent variables). Scratch buffers are not state. restore_state reads the same values in
  /// the same order into a workspace fresh from make_workspace(). By default there is none.
  virtual void save_state(StateWriter& /*out*/) const {}
  virtual void restore_state(StateReader& /*in*/) {}
  /// Called once when the warmup ends (after its last iteration's metrics, never without a
  /// warmup): running averages over draws behind the metrics (a posterior predictive) start
  /// again, so that after the warmup they average the sampling phase's draws only, not the
  /// start's. By default nothing is kept.
  virtual void restart_averages() {}
};

/// Rows of a file a model predicts on (`sgmcmc predict`), read by the model's own reader in the
/// layout of its data; the model derives from this to keep them in its own form.
class PredictionRows {
public:
  virtual ~PredictionRows() = default;
  std::size_t count = 0;
  /// Each row's observed response, coded as the prediction is: a class index 0..K-1 (1 or 0 for
  /// a single probability column), or the response itself; empty when the file has no labels.
  std::vector<double> responses;
};

/// What a model predicts for one row at one θ, and how `sgmcmc predict` averages it over draws.
struct PredictionForm {
  /// true: `names` are class probabilities p(y = c | x, θ), averaged over draws; a single name
  /// ("p") is p(y = 1 | x, θ) of a binary response. false: two values, E[y | x, θ] and
  /// Var[y | x, θ], mixed over draws (the mean of the means; the mean of variance + mean², less
  /// the mean squared).
  bool probabilities = true;
  std::vector<std::string> names = {};
};

class Model {
public:
  virtual ~Model() = default;

  virtual std::size_t dimension() const = 0;
  /// N, the number of data items f_i.
  virtual std::size_t num_items() const = 0;
  /// N, the training items of all the row shares together, when the model holds a share
  /// (row-shares capability, ModelContext::rows); num_items() is then the share's. Else num_items().
  virtual std::size_t total_items() const { return num_items(); }
  /// The items whose data terms this process evaluates, numbered as num_items() numbers them:
  /// every item, but on a rank of a data-parallel chain only its block (the decorator,
  /// sgmcmc.data_parallel, drops a batch's other items, which other ranks add). An estimator whose
  /// batch only feeds add_data_gradient may draw just the batch's items in this block.
  virtual ItemBlock evaluated_items() const { return {0, num_items()}; }
  /// One name per coordinate of θ, in Stan's style ("beta.1", "beta.2", ...).
  virtual std::vector<std::string> parameter_names() const = 0;
  virtual Capabilities capabilities() const = 0;

  virtual std::unique_ptr<Workspace> make_workspace() const { return std::make_unique<Workspace>(); }
  /// Where a chain starts; zeros unless the model knows better.
  virtual void initial_point(std::span<double> theta, Rng& rng) const;

  /// f_0(θ) up to a constant, and gradient += ∇f_0(θ).
  virtual double prior_potential(std::span<const double> theta) const = 0;
  virtual void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const = 0;

  /// The same given the chain's workspace, which the chain, the estimators and the checks call.
  /// A model whose prior depends on per-chain state (hyperparameters that `after_step` refreshes
  /// by Gibbs steps: `pmf`) overrides these; by default the workspace is ignored.
  virtual double prior_potential_given(std::span<const double> theta, Workspace& workspace) const;
  virtual void add_prior_gradient_given(std::span<const double> theta, std::span<double> gradient,
                                        Workspace& workspace) const;

  /// gradient += Σ_k w_k ∇f_{items[k]}(θ). Models with a latent Gibbs step draw from `rng` as
  /// often whatever the batch holds (lda: one key, then item i's latents from the stream (key, i)),
  /// so that the ranks of a data-parallel chain, each given its own items, keep one stream.
  virtual void add_data_gradient(std::span<const double> theta, const Batch& batch,
                                 std::span<double> gradient, Workspace& workspace, Rng& rng) const = 0;

  /// Σ_k w_k f_{items[k]}(θ); only models with `exact_log_likelihood`.
  virtual double data_potential(std::span<const double> theta, const Batch& batch,
                                Workspace& workspace) const;

  /// gradient += Σ_k w_k ∇f_{items[k]}(θ) as add_data_gradient does, and Σ_k w_k f_{items[k]}(θ)
  /// returned when the model computes it in the same pass; none by default (add_data_gradient
  /// alone). The MH corrector's exact gradient at a block's end calls this and needs U there too:
  /// a model whose gradient pass yields the potential on the way (a network's forward pass, a GLM's
  /// x_iᵀβ) overrides it to make one full pass of two. The default returns none rather than calling
  /// data_potential too, since integrators that take several exact gradients per step (hmc) would
  /// then pay a potential pass for each. An override must return data_potential's value and add
  /// add_data_gradient's, bit for bit (the same sums in the same order): runs must not depend on it.
  virtual std::optional<double> data_potential_and_gradient(std::span<const double> theta, const Batch& batch,
                                                            std::span<double> gradient, Workspace& workspace,
                                                            Rng& rng) const;

  /// The float chain's gradient (run.chain_precision = "float"; only models with `float_gradient`):
  /// gradient ← scale · Σ_k ∇f_{items[k]}(θ) + ∇f_0(θ), θ and the gradient in float, so that a
  /// model that stores float (mlp's storage = "float") converts neither. Overwrites `gradient`.
  virtual void scaled_gradient_float(std::span<const float> theta, std::span<const std::size_t> items, double scale,
                                     std::span<float> gradient, Workspace& workspace) const;

  /// Row k of `out` (items.size() × dimension(), row-major) ← ∇f_{items[k]}(θ);
  /// only models with `per_item_gradients`.
  virtual void item_gradients(std::span<const double> theta, std::span<const std::size_t> items,
                              std::span<double> out, Workspace& workspace) const;

  /// Sparse form: ∇f_i is zero outside a fixed set of s coordinates, its support (pmf: U_i and
  /// V_j, s = 2 × rank), the same for every θ. Only models with `sparse_item_gradients`.
  /// s:
  virtual std::size_t item_gradient_support_size() const;
  /// Row k of `coordinates` (items.size() × s, row-major) ← the support of item items[k]:
  virtual void item_gradient_support(std::span<const std::size_t> items, std::span<std::size_t> coordinates) const;
  /// Row k of `values` (items.size() × s) ← ∇f_{items[k]}(θ) on that support, in its order.
  virtual void sparse_item_gradients(std::span<const double> theta, std::span<const std::size_t> items,
                                     std::span<double> values, Workspace& workspace) const;

  /// GLM form ∇f_i(θ) = s_i(θ) x_i; only models with `glm_gradients`.
  /// out[k] ← s_{items[k]}(θ); and gradient += Σ_k scales[k] x_{items[k]}.
  virtual void glm_scalars(std::span<const double> theta, std::span<const std::size_t> items,
                           std::span<double> out, Workspace& workspace) const;
  virtual void add_scaled_features(std::span<const std::size_t> items, std::span<const double> scales,
                                   std::span<double> gradient) const;

  /// out[i] ← L_i for every item i = 0..N-1, a Lipschitz constant of ∇f_i:
  /// ‖∇f_i(θ) - ∇f_i(θ')‖ ≤ L_i ‖θ - θ'‖ for all θ, θ' (Baker et al. 2019, Assumption 2). Control-variate
  /// estimators then sample items with p_i ∝ L_i, which minimises Baker et al. (2019)'s Lemma 1 bound
  /// (1/n) Σ_i (L_i²/p_i) ‖θ - θ̂‖². Only models with `lipschitz_bounds`.
  virtual void item_lipschitz_bounds(std::span<double> out) const;

  /// Chain hook after every iteration (after the corrector's decision, so at
  /// the ends of MH blocks only): Gibbs updates of hyperparameters or anything else a model does
  /// between gradient steps. Returns what it changed of the target, so the chain can recompute
  /// cached gradients, the MH corrector's U(θ_0) and, for `data`, the estimators' sums of ∇f_i.
  /// A draw that reads the data sums over it through `data` (ItemSums). The default does nothing
  /// and returns `none`.
  virtual TargetChange after_step(std::uint64_t iteration, std::span<double> theta, Workspace& workspace, Rng& rng,
                                  const ItemSums& data) const;

  /// Held-out metrics, evaluated every run.eval_every iterations. A model that averages over
  /// draws (a running posterior-predictive average) keeps the running sums in its workspace.
  virtual std::vector<std::string> metric_names() const { return {}; }
  virtual void evaluate_metrics(std::span<const double> theta, Workspace& workspace,
                                std::span<double> out) const;

  /// Scalar quantities of interest q(θ) of a single draw, for post-processing such as
  /// zero-variance control variates (Baker et al. 2019, §4): e.g. the mean held-out log predictive density
  /// (1/J) Σ_j log p(y*_j | θ). Unlike metrics they keep no running state across draws.
  virtual std::vector<std::string> quantity_names() const { return {}; }
  virtual void evaluate_quantities(std::span<const double> theta, Workspace& workspace,
                                   std::span<double> out) const;

  /// θ*, the parameters the data were simulated from when they were drawn from the prior
  /// (`prior_simulation`, model.simulate_from_prior = true; one value per coordinate, in
  /// parameter_names() order): what `sgmcmc sbc` ranks among the draws. Empty otherwise.
  virtual std::vector<double> simulated_parameters() const { return {}; }

  /// Posterior prediction (`sgmcmc predict`); only models with `prediction`. The form of one
  /// row's prediction:
  virtual PredictionForm prediction_form() const;
  /// The rows of `path`, read as the model reads its data (the response first, or without it);
  /// errors name the file and line.
  virtual std::unique_ptr<PredictionRows> read_prediction_rows(const std::string& path) const;
  /// Row j of `out` (rows.count × prediction_form().names.size(), row-major, or × 2 for a mean
  /// and variance) ← row j's prediction at θ; when `rows` has responses, log_densities[j] ←
  /// log p(y_j | x_j, θ) (an empty span otherwise).
  virtual void predict_rows(std::span<const double> theta, const PredictionRows& rows, std::span<double> out,
                            std::span<double> log_densities) const;
};

/// 0, 1, ..., count-1: every row of a data set, in order.
std::vector<std::size_t> index_range(std::size_t count);

/// 0, 1, ..., N-1: the batch of every item (exact gradients, potentials).
std::vector<std::size_t> every_item(const Model& model);

/// U(θ) = f_0(θ) + Σ_i f_i(θ) over `every` (from every_item): one full data pass; only models
/// with `exact_log_likelihood`. Used by the MH corrector and for lp__.
double potential(const Model& model, std::span<const double> theta, std::span<const std::size_t> every,
                 Workspace& workspace);

/// gradient += ∇U(θ) = ∇f_0(θ) + Σ_i ∇f_i(θ) over `every` (from every_item): one full data pass.
/// `rng` is what a model with a Gibbs-estimated gradient draws from (latent-gibbs-step).
void add_gradient(const Model& model, std::span<const double> theta, std::span<const std::size_t> every,
                  std::span<double> gradient, Workspace& workspace, Rng& rng);

/// gradient += ∇U(θ) over `every` as add_gradient() does, and U(θ) as potential() gives it when the
/// model computes its data term in the same pass (Model::data_potential_and_gradient), else none.
std::optional<double> add_gradient_and_potential(const Model& model, std::span<const double> theta,
                                                 std::span<const std::size_t> every, std::span<double> gradient,
                                                 Workspace& workspace, Rng& rng);

/// What a plugin tells without building a model (`sgmcmc list`).
struct PluginInfo {
  std::string name;
  std::string description;
  std::string parameters;  // what θ is, in words: "beta[1..dim]: regression coefficients"
  Capabilities capabilities;
  /// Without `prior_simulation`: why the model cannot simulate data from a prior draw (the
  /// reason `sgmcmc sbc` gives when it refuses the model).
  std::string no_prior_simulation = {};
};

/// ⌊N·r/P⌋, the first item of part r of P; part r is [row_block_start(N, r, P),
/// row_block_start(N, r + 1, P)), so parts differ in size by at most one item.
std::size_t row_block_start(std::size_t items, std::size_t rank, std::size_t ranks);

/// Part `rank` of `ranks` of a data set's training items (run.data_parallel: this process is one
/// rank of a job running one chain together). A model with the row-shares capability holds only
/// the items [row_block_start(N, rank, ranks), row_block_start(N, rank + 1, ranks)) of its N
/// training items, numbered from 0; the others ignore it and hold every item.
struct RowShare {
  std::size_t rank = 0;
  std::size_t ranks = 1;
  bool whole() const { return ranks == 1; }
};

/// `share`'s block of `training` (a data set's training items, in their order): the part a model
/// with row shares keeps. Throws, naming both counts, when there are fewer items than ranks.
std::vector<std::size_t> share_of(const std::vector<std::size_t>& training, RowShare share);

/// The positions of that block among `items` training items (what share_of keeps, without a list
/// of them); the same refusal.
ItemBlock share_block(std::size_t items, RowShare share);

/// What a plugin's factory gets: its [model] settings, the run's seed (for simulated data and
/// train/test splits) and the share of the training rows this process holds. The factory reads
/// every key it knows; unread keys are reported as unknown.
///
/// The share is part of the context, not a [model] key the runner sets, so that it can never be
/// recorded in a run's configuration (a one-process run replayed from that record would otherwise
/// hold a part of the data and sample another posterior) nor set by a user, and so that a plugin
/// without row shares is not refused for a key it does not know; it is part r of P rather than a
/// row range because only the plugin knows N (a file's header, the rows left after the test set).
struct ModelContext {
  SectionReader settings;
  std::uint64_t seed;
  RowShare rows = {};
};

/// The two functions every plugin exports (see sgmcmc/plugin.hpp for the macro that does it).
using PluginInfoFunction = PluginInfo();
using ModelFactoryFunction = std::unique_ptr<Model>(const ModelContext&);

/// Symbol names of a plugin's exports.
inline constexpr const char* interface_version_symbol = "sgmcmc_interface_version";
inline constexpr const char* build_fingerprint_symbol = "sgmcmc_build_fingerprint";
inline constexpr const char* plugin_info_symbol = "sgmcmc_plugin_info";
inline constexpr const char* model_factory_symbol = "sgmcmc_create_model";

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

std::vector<std::string> capability_names(const Capabilities& c) {
  const std::pair<bool, const char*> table[] = {
      {c.exact_log_likelihood, "exact-log-likelihood"}, {c.per_item_gradients, "per-item-gradients"},
      {c.sparse_item_gradients, "sparse-item-gradients"},
      {c.glm_gradients, "glm-gradients"},               {c.lipschitz_bounds, "lipschitz-bounds"},
      {c.latent_gibbs_step, "latent-gibbs-step"},       {c.positive_parameters, "positive-parameters"},
      {c.simulation, "simulation"},                     {c.prior_simulation, "prior-simulation"},
      {c.prediction, "prediction"},                     {c.float_gradient, "float-gradient"},
      {c.row_shares, "row-shares"}};
  std::vector<std::string> names;
  for (const auto& [present, name] : table)
    if (present) names.emplace_back(name);
  return names;
}

std::size_t row_block_start(std::size_t items, std::size_t rank, std::size_t ranks) {
  // N·r can pass 2^64 only beyond 10^9 rows and 10^10 ranks; 128 bits rule it out anyway.
  return static_cast<std::size_t>(static_cast<unsigned __int128>(items) * rank / ranks);
}

ItemBlock share_block(std::size_t items, RowShare share) {
  if (items < share.ranks)
    throw Error("model: " + std::to_string(items) + " training rows cannot be shared by " + std::to_string(share.ranks) +
                " ranks of a data-parallel run; run fewer ranks");
  return {row_block_start(items, share.rank, share.ranks), row_block_start(items, share.rank + 1, share.ranks)};
}

std::vector<std::size_t> share_of(const std::vector<std::size_t>& training, RowShare share) {
  const ItemBlock block = share_block(training.size(), share);
  return {training.begin() + static_cast<std::ptrdiff_t>(block.first), training.begin() + static_cast<std::ptrdiff_t>(block.end)};
}

std::vector<std::size_t> index_range(std::size_t count) {
  std::vector<std::size_t> indices(count);
  std::iota(indices.begin(), indices.end(), std::size_t{0});
  return indices;
}

std::vector<std::size_t> every_item(const Model& model) { return index_range(model.num_items()); }

double potential(const Model& model, std::span<const double> theta, std::span<const std::size_t> every,
                 Workspace& workspace) {
  return model.prior_potential_given(theta, workspace) + model.data_potential(theta, Batch{every}, workspace);
}

void add_gradient(const Model& model, std::span<const double> theta, std::span<const std::size_t> every,
                  std::span<double> gradient, Workspace& workspace, Rng& rng) {
  model.add_data_gradient(theta, Batch{every}, gradient, workspace, rng);
  model.add_prior_gradient_given(theta, gradient, workspace);
}

std::optional<double> add_gradient_and_potential(const Model& model, std::span<const double> theta,
                                                 std::span<const std::size_t> every, std::span<double> gradient,
                                                 Workspace& workspace, Rng& rng) {
  const auto data = model.data_potential_and_gradient(theta, Batch{every}, gradient, workspace, rng);
  model.add_prior_gradient_given(theta, gradient, workspace);
  if (!data) return std::nullopt;
  return model.prior_potential_given(theta, workspace) + *data;
}

namespace {
[[noreturn]] void missing_capability(const char* function, const char* capability) {
  throw Error(std::string("Model::") + function + " called on a model without the '" + capability +
              "' capability");
}
}  // namespace

double Model::prior_potential_given(std::span<const double> theta, Workspace&) const {
  return prior_potential(theta);
}
void Model::add_prior_gradient_given(std::span<const double> theta, std::span<double> gradient, Workspace&) const {
  add_prior_gradient(theta, gradient);
}
void Model::initial_point(std::span<double> theta, Rng&) const {
  for (double& x : theta) x = 0.0;
}
double Model::data_potential(std::span<const double>, const Batch&, Workspace&) const {
  missing_capability("data_potential", "exact-log-likelihood");
}
std::optional<double> Model::data_potential_and_gradient(std::span<const double> theta, const Batch& batch,
                                                         std::span<double> gradient, Workspace& workspace,
                                                         Rng& rng) const {
  add_data_gradient(theta, batch, gradient, workspace, rng);
  return std::nullopt;
}
void Model::scaled_gradient_float(std::span<const float>, std::span<const std::size_t>, double, std::span<float>,
                                  Workspace&) const {
  missing_capability("scaled_gradient_float", "float-gradient");
}
void Model::item_gradients(std::span<const double>, std::span<const std::size_t>, std::span<double>,
                           Workspace&) const {
  missing_capability("item_gradients", "per-item-gradients");
}
std::size_t Model::item_gradient_support_size() const {
  missing_capability("item_gradient_support_size", "sparse-item-gradients");
}
void Model::item_gradient_support(std::span<const std::size_t>, std::span<std::size_t>) const {
  missing_capability("item_gradient_support", "sparse-item-gradients");
}
void Model::sparse_item_gradients(std::span<const double>, std::span<const std::size_t>, std::span<double>,
                                  Workspace&) const {
  missing_capability("sparse_item_gradients", "sparse-item-gradients");
}
void Model::glm_scalars(std::span<const double>, std::span<const std::size_t>, std::span<double>,
                        Workspace&) const {
  missing_capability("glm_scalars", "glm-gradients");
}
void Model::add_scaled_features(std::span<const std::size_t>, std::span<const double>,
                                std::span<double>) const {
  missing_capability("add_scaled_features", "glm-gradients");
}
void Model::item_lipschitz_bounds(std::span<double>) const {
  missing_capability("item_lipschitz_bounds", "lipschitz-bounds");
}
TargetChange Model::after_step(std::uint64_t, std::span<double>, Workspace&, Rng&, const ItemSums&) const {
  return TargetChange::none;
}
void Model::evaluate_metrics(std::span<const double>, Workspace&, std::span<double>) const {}
void Model::evaluate_quantities(std::span<const double>, Workspace&, std::span<double>) const {}
PredictionForm Model::prediction_form() const { missing_capability("prediction_form", "prediction"); }
std::unique_ptr<PredictionRows> Model::read_prediction_rows(const std::string&) const {
  missing_capability("read_prediction_rows", "prediction");
}
void Model::predict_rows(std::span<const double>, const PredictionRows&, std::span<double>, std::span<double>) const {
  missing_capability("predict_rows", "prediction");
}

}  // namespace sgmcmc
