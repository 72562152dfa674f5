// Recording, at every saved draw, what post-processing needs and the chain does not: the gradient
// of log π (zero-variance control variates, the kernel Stein discrepancy) and the model's
// quantities of interest q(θ).
//
// The recorder must not perturb the chain: it owns its estimator, its model workspace, its cost
// and its random stream (recording_stream(k), disjoint from the chain's and the data's), and it
// only reads the chain's θ and workspace. The chain's draws are then bit-identical with and
// without recording. Its workspace follows the chain's: before a draw after the target changed
// (hyperparameters drawn by Gibbs steps) it takes a copy of the chain's workspace state, so the
// recorded ∇log π and quantities are those of the chain's current target, not of the starting
// hyperparameters.
module;
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>
export module sgmcmc.recording;
export import sgmcmc.estimators;
export import sgmcmc.fields;
import sgmcmc.error;

export namespace sgmcmc {

/// Where the recorded gradient comes from ([output] gradients).
enum class GradientSource {
  none,       // nothing recorded
  cv,         // a `cv` estimator of its own (the choice of Baker et al. 2019, §4: cheap, low variance near θ̂)
  exact,      // ∇U with a full data pass per draw
  estimator,  // another instance of the run's [estimator], with its own stream
};

/// The [output] section. Its keys are described once, in output_fields(); `written` is what
/// `parameters` selects of the model's parameters.
struct OutputOptions {
  bool zv = false;          // print `sgmcmc zv` at the end of the run
  GradientSource gradients = GradientSource::none;  // unless set: cv when zv, else none
  bool quantities = false;  // the model's quantity_names() as generated-quantity columns; unless set: with gradients
  bool draws = true;        // false writes no parameter
  std::vector<std::string> parameters = {"*"};  // glob patterns on the parameters' names; unless set: none without draws
  /// The parameters written to the draws (and gradients) files, by index, in the model's order:
  /// those whose names match one of the glob patterns of `output.parameters` (all by default;
  /// none with `output.draws = false`), so a model with 10⁵ parameters can write a few, or none.
  std::vector<std::size_t> written;
};

/// [output]'s keys, in the order they are read (a default may depend on a key read before it).
FieldTable<OutputOptions> output_fields();

/// Reads [output] through output_fields and selects the parameters written. Errors name the key
/// and where it was set; a pattern that matches no parameter is one.
OutputOptions read_output_options(SectionReader output, const Model& model);

std::string gradient_source_name(GradientSource source);

/// Chain k draws from stream 2k+1 and the data from 0 (sgmcmc.random); its recorder from 2k+2.
inline constexpr std::uint64_t recording_stream(std::uint64_t chain) { return 2 * chain + 2; }

/// "grad_lp.<name>": the column of ∂ log π / ∂<name> (= ∂lp__/∂<name> = -∂U/∂<name>).
std::vector<std::string> gradient_column_names(const std::vector<std::string>& parameter_names);
inline constexpr std::string_view gradient_column_prefix = "grad_lp.";

/// The estimator of the recorded gradients, read for `model`: `estimator` copies the run's
/// [estimator] (`estimator_section`), `cv` reads its cv keys (batch_size, sampling, centre, sgd_*;
/// their defaults when absent), `exact` none; empty for `none`.
EstimatorRecipe gradient_recipe(GradientSource source, SectionReader estimator_section, const Model& model);

class DrawRecorder {
public:
  /// `gradients` builds the estimator of the recorded gradients (gradient_recipe); empty: none.
  DrawRecorder(std::shared_ptr<const Model> model, const OutputOptions& options, const EstimatorRecipe& gradients,
               Rng rng);

  /// Work before the first draw: a `cv` estimator finds its own centre θ̂ by SGD from the model's
  /// start point (drawn from the recorder's stream), as a chain's would. Polls `stop_requested`
  /// (Ctrl-C or SIGTERM) at every centring step, as the chain's own centring does, and throws
  /// StopRequested once it is set.
  void prepare(const std::atomic<bool>* stop_requested = nullptr);
  /// Takes the chain's current target before a draw is recorded. When the target changed since
  /// the last draw (`target_changes`, the chain's count; a copy is also taken at the first draw)
  /// it copies the state of the chain's workspace into the recorder's, and when the data terms
  /// changed (`data_changes`) it lets the estimator recompute its sums of ∇f_i (a `cv` centre's
  /// full gradient) at θ.
  void follow(const Workspace& chain_workspace, std::uint64_t target_changes, std::uint64_t data_changes,
              std::span<const double> theta);
  /// out ← z = ∇log π(θ) = -ĝ(θ), ĝ the source's estimate of ∇U.
  /// ∇log π at a draw of the chain's iteration `iteration` (what a period of the source counts).
  void score(std::span<const double> theta, std::uint64_t iteration, std::span<double> out);
  /// out ← the model's quantities of interest at θ.
  void quantities(std::span<const double> theta, std::span<double> out);

  /// Checkpoints: the recorder's stream, cost, estimator and workspace. A restored recorder
  /// needs no prepare().
  void save_state(StateWriter& out) const;
  void restore_state(StateReader& in);

  bool records_gradients() const { return estimator_ != nullptr; }
  std::size_t quantity_count() const { return quantity_count_; }
  const Cost& cost() const { return cost_; }

private:
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Workspace> workspace_;
  std::unique_ptr<Estimator> estimator_;
  Rng rng_;
  Cost cost_;
  std::size_t quantity_count_ = 0;
  // The chain's counts when the recorder last followed it (target: none yet).
  std::optional<std::uint64_t> target_changes_;
  std::uint64_t data_changes_ = 0;
};

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

namespace recording_parts {

GradientSource parse_source(SectionReader output, const std::string& name) {
  for (auto source : {GradientSource::none, GradientSource::cv, GradientSource::exact, GradientSource::estimator})
    if (gradient_source_name(source) == name) return source;
  throw Error(fmt::format("{}: unknown gradient source '{}'; known: none, cv (a control-variate estimator of its own, "
                          "Baker et al. (2019)'s choice for ZV), exact (a full data pass per draw), estimator (another instance "
                          "of [estimator])",
                          output.describe("gradients"), name));
}

EstimatorRecipe named_recipe(const std::string& name, SectionReader section, const Model& model) {
  for (const auto& entry : estimator_catalogue())
    if (entry.name == name) return entry.read(section, model);
  throw Error(fmt::format("internal: no estimator '{}' in the catalogue", name));
}

/// The indices of the parameters whose names match one of `patterns` (fnmatch globs: `*`, `?`,
/// `[...]`); a pattern matching none is an error that shows how the parameters are named.
std::vector<std::size_t> matching_parameters(const std::vector<std::string>& patterns, SectionReader output,
                                             const Model& model) {
  const auto names = model.parameter_names();
  std::vector<std::size_t> written;
  std::vector<bool> used(patterns.size(), false);
  for (std::size_t i = 0; i < names.size(); ++i) {
    bool match = false;
    for (std::size_t p = 0; p < patterns.size(); ++p)
      if (fnmatch(patterns[p].c_str(), names[i].c_str(), 0) == 0) match = used[p] = true;
    if (match) written.push_back(i);
  }
  for (std::size_t p = 0; p < patterns.size(); ++p)
    if (!used[p]) {
      const std::size_t shown = std::min<std::size_t>(names.size(), 3);
      throw Error(fmt::format("{}: '{}' matches no parameter; the model's {} parameters are named {}{}", output.describe("parameters"),
                              patterns[p], names.size(), fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                              names.size() > shown ? fmt::format(", ..., {}", names.back()) : ""));
    }
  return written;
}

}  // namespace recording_parts

std::string gradient_source_name(GradientSource source) {
  switch (source) {
    case GradientSource::none: return "none";
    case GradientSource::cv: return "cv";
    case GradientSource::exact: return "exact";
    case GradientSource::estimator: return "estimator";
  }
  return "none";
}

FieldTable<OutputOptions> output_fields() {
  using recording_parts::parse_source;
  Field<OutputOptions> gradients{
      {"gradients", "none; cv when zv", "none, cv, exact, estimator",
       "record ∇log π at every draw: cv (an estimator of its own), exact (a full pass per draw) or estimator (another [estimator])"},
      [](SectionReader output, OutputOptions& o) {
        o.gradients = parse_source(output, output.text("gradients", gradient_source_name(o.zv ? GradientSource::cv : o.gradients)));
      }};
  Field<OutputOptions> quantities{
      {"quantities", "true when gradients are recorded", "", "the model's quantities of interest as extra columns"},
      [](SectionReader output, OutputOptions& o) {
        o.quantities = output.flag("quantities", o.gradients != GradientSource::none);
      }};
  Field<OutputOptions> parameters{
      {"parameters", "[\"*\"]", "",
       "the parameters the draws hold, as glob patterns on their names (a pattern matching none is an error)"},
      [](SectionReader output, OutputOptions& o) {
        if (!o.draws && output.contains("parameters"))
          throw Error(fmt::format("{} and {}: give one of them (draws = false writes no parameter)", output.describe("draws"),
                                  output.describe("parameters")));
        o.parameters = output.texts("parameters", o.draws ? o.parameters : std::vector<std::string>{});
      }};
  return {flag_field("zv", &OutputOptions::zv, "print the zero-variance estimates (sgmcmc zv) at the end of the run"), std::move(gradients),
          std::move(quantities),
          flag_field("draws", &OutputOptions::draws, "false writes no parameter, the same as parameters = []"),
          std::move(parameters)};
}

OutputOptions read_output_options(SectionReader output, const Model& model) {
  OutputOptions options = read_fields(output_fields(), output);
  options.written = recording_parts::matching_parameters(options.parameters, output, model);
  if (options.written.empty() && options.gradients != GradientSource::none)
    throw Error(fmt::format("{}: gradients are recorded for the parameters written, and output.parameters selects none",
                            output.describe("gradients")));
  if (options.zv && options.gradients == GradientSource::none)
    throw Error(fmt::format("{} = true needs recorded gradients, and output.gradients is \"none\"; choose \"cv\", "
                            "\"exact\" or \"estimator\"",
                            output.describe("zv")));
  // A latent-variable model's gradient depends on latent state the chain's workspace owns and
  // Gibbs-updates; a recorder with its own workspace would see other latents.
  if (options.gradients != GradientSource::none && model.capabilities().latent_gibbs_step)
    throw Error(fmt::format("{}: the model Gibbs-samples latent variables inside its gradient, so a gradient recorded "
                            "apart from the chain would not be the chain's; recording is not supported for it",
                            output.describe("gradients")));
  // What recorded gradients serve (ZV control variates, the kernel Stein discrepancy of `zv`,
  // `summary` and `tune`) rests on Stein's identity E_π[∇·g + g·∇log π] = 0, which integration by
  // parts gives only when the boundary term g·π vanishes. On θ_j > 0 it is g_j π at θ_j = 0,
  // which is not zero for these scores (z_j itself is the first-order control; π need not vanish
  // at 0): their estimates would be biased without a word.
  if (options.gradients != GradientSource::none && model.capabilities().positive_parameters)
    throw Error(fmt::format("{}: the model declares positive parameters (θ > 0, reflected at 0), and what recorded "
                            "gradients serve (zero-variance control variates, the kernel Stein discrepancy, `sgmcmc tune`) "
                            "rests on Stein's identity, whose boundary term at θ = 0 does not vanish for such a model; "
                            "recording is not supported for it",
                            output.describe("gradients")));
  return options;
}

std::vector<std::string> gradient_column_names(const std::vector<std::string>& parameter_names) {
  std::vector<std::string> names;
  for (const auto& name : parameter_names) names.push_back(std::string(gradient_column_prefix) + name);
  return names;
}

EstimatorRecipe gradient_recipe(GradientSource source, SectionReader estimator_section, const Model& model) {
  switch (source) {
    case GradientSource::none: return {};
    case GradientSource::cv: return recording_parts::named_recipe("cv", estimator_section, model);
    case GradientSource::exact: return recording_parts::named_recipe("exact", estimator_section, model);
    case GradientSource::estimator:
      return choose(estimator_catalogue(), estimator_section, default_estimator).read(estimator_section, model);
  }
  return {};
}

DrawRecorder::DrawRecorder(std::shared_ptr<const Model> model, const OutputOptions& options,
                           const EstimatorRecipe& gradients, Rng rng)
    : model_(std::move(model)), workspace_(model_->make_workspace()),
      estimator_(gradients ? gradients(*model_) : nullptr), rng_(rng),
      quantity_count_(options.quantities ? model_->quantity_names().size() : 0) {}

void DrawRecorder::prepare(const std::atomic<bool>* stop_requested) {
  if (!estimator_) return;
  std::vector<double> start(model_->dimension());
  model_->initial_point(start, rng_);
  ChainContext context{*model_, *workspace_, rng_, cost_};
  context.stop_requested = stop_requested;
  estimator_->prepare(start, context);  // moves only this copy of the start point
}

void DrawRecorder::save_state(StateWriter& out) const {
  out.section("draw recorder");
  rng_.save_state(out);
  out.count(cost_.item_gradients);
  out.count(cost_.full_passes);
  out.flag(target_changes_.has_value());
  out.count(target_changes_.value_or(0));
  out.count(data_changes_);
  if (estimator_) estimator_->save_state(out);
  workspace_->save_state(out);
}

void DrawRecorder::restore_state(StateReader& in) {
  in.section("draw recorder");
  rng_.restore_state(in);
  cost_.item_gradients = in.count();
  cost_.full_passes = in.count();
  const bool followed = in.flag();
  const std::uint64_t target_changes = in.count();
  target_changes_ = followed ? std::optional(target_changes) : std::nullopt;
  data_changes_ = in.count();
  if (estimator_) estimator_->restore_state(in);
  workspace_->restore_state(in);
}

void DrawRecorder::follow(const Workspace& chain_workspace, std::uint64_t target_changes, std::uint64_t data_changes,
                          std::span<const double> theta) {
  if (target_changes_ == target_changes) return;
  StateWriter chain_state;
  chain_workspace.save_state(chain_state);
  StateReader copy(chain_state.bytes(), "the chain's model workspace");
  workspace_->restore_state(copy);
  if (estimator_ && data_changes != data_changes_) {
    ChainContext context{*model_, *workspace_, rng_, cost_};
    estimator_->data_terms_changed(theta, context);
  }
  target_changes_ = target_changes;
  data_changes_ = data_changes;
}

void DrawRecorder::score(std::span<const double> theta, std::uint64_t iteration, std::span<double> out) {
  ChainContext context{*model_, *workspace_, rng_, cost_, iteration};
  estimator_->estimate(theta, out, context);
  for (double& g : out) g = -g;  // ∇log π = -∇U
}

void DrawRecorder::quantities(std::span<const double> theta, std::span<double> out) {
  if (out.size() != quantity_count_)
    throw Error(fmt::format("internal: {} slots for the model's {} recorded quantities", out.size(), quantity_count_));
  if (quantity_count_ == 0) return;  // a model may write its quantities without looking at out's size
  model_->evaluate_quantities(theta, *workspace_, out);
}

}  // namespace sgmcmc
