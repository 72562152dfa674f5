// Correctors: what happens at the end of a block of integrator steps (modules/README.md, "Correctors").
// `none` accepts every move (SGLD, SGHMC, SGLD-CV as in Baker et al. 2019); `mh` is the Metropolis–Hastings
// test over K stochastic-gradient steps of Garriga-Alonso & Fortuin (2021, §4–5, app. C),
// using the integrator's ChainState::energy_error and the model's exact potential at the ends.
module;
#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.correctors;
export import sgmcmc.integrators;
export import sgmcmc.config;
import sgmcmc.error;

export namespace sgmcmc {

struct Decision {
  double accept_stat = 1.0;   // acceptance probability of the block (Stan CSV's accept_stat__)
  bool accepted = true;
  double delta_energy = 0.0;  // ΔH̃ of the block
  bool non_finite = false;    // the proposal's potential or ΔH̃ was NaN/Inf: rejected
};

class Corrector {
public:
  virtual ~Corrector() = default;
  /// K, the number of integrator steps per block.
  virtual std::size_t block_length() const { return 1; }
  /// True for a Metropolis–Hastings test (its draws carry ΔH̃ and the decision).
  virtual bool tests_acceptance() const { return false; }
  /// Called before the first step of a block (an MH corrector saves (θ_0, m_0) here).
  virtual void begin_block(ChainState& state, ChainContext& context) = 0;
  /// Called after the last step of a block; may restore the saved state.
  virtual Decision end_block(ChainState& state, ChainContext& context) = 0;
  /// The estimator for the last step of a block (exact gradients at the endpoints), or nullptr
  /// for the chain's own.
  virtual Estimator* endpoint_estimator() { return nullptr; }
  /// Checkpoints, which the chain takes at the ends of blocks only: what carries from one block
  /// to the next. By default there is none.
  virtual void save_state(StateWriter& /*out*/) const {}
  virtual void restore_state(StateReader& /*in*/) {}
  /// The model's after_step changed the target between blocks: drop what was cached of the old one.
  virtual void target_changed() {}
};

using CorrectorFactory = std::function<std::unique_ptr<Corrector>(const Settings&, const Model&, const Integrator&)>;
const std::vector<CatalogueEntry<CorrectorFactory>>& corrector_catalogue();

/// The corrector of `config`'s [corrector] section (default "none") for this model and integrator.
/// A combination that cannot be exact is refused with the reason: MH after an estimator or
/// integrator that declares an `mh_refusal` in its catalogue entry, after a changing step size, or
/// on a model without an exact log-likelihood.
std::unique_ptr<Corrector> make_corrector(const RunConfig& config, const Model& model, const Integrator& integrator);

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

namespace {

/// Accepts every move: the chain is the integrator's Markov chain, biased by its discretisation.
class NoCorrection final : public Corrector {
public:
  void begin_block(ChainState& state, ChainContext&) override { state.energy_error = 0.0; }
  Decision end_block(ChainState&, ChainContext&) override { return {}; }
};

/// Metropolis–Hastings over a block of K steps (Garriga-Alonso & Fortuin 2021, §4–5, app. C; modules/README.md "Correctors"):
/// save (θ_0, m_0), run K steps, accept with probability min(1, exp(-ΔH̃/T)) where
/// ΔH̃ = U(θ_K) - U(θ_0) + (the integrator's energy error); on rejection restore (θ_0, m_0) and
/// negate the momentum (the next O step then mixes it). The minibatches are auxiliary variables
/// drawn independently of the state, so the test is exact with stochastic kicks.
class MetropolisHastings final : public Corrector {
public:
  MetropolisHastings(const Settings& section, const Model& model, const Integrator& integrator)
      : every_(static_cast<std::size_t>(section.integer_at_least("every", 1, 1))),
        temperature_(integrator.temperature()),
        all_items_(every_item(model)) {
    if (section.flag("exact_endpoints", true)) {
      Settings exact("estimator");
      exact.set("name", {std::string("exact"), "corrector.exact_endpoints"});
      exact_ = make_estimator(exact, model);
    }
  }

  std::size_t block_length() const override { return every_; }
  bool tests_acceptance() const override { return true; }
  Estimator* endpoint_estimator() override { return exact_.get(); }
  /// U(θ_0) of the next block is then computed afresh under the new target (its gradient too:
  /// the chain clears gradient_valid).
  void target_changed() override { start_potential_.reset(); }

  void begin_block(ChainState& state, ChainContext& context) override {
    // With exact endpoints every block ends on an exact gradient (the chain passes
    // endpoint_estimator() to the last step); only a gradient invalidated since, or the first
    // block's, needs computing here.
    if (exact_ && !state.gradient_valid) {
      exact_->estimate(state.theta, state.gradient, context);
      state.gradient_valid = true;
    }
    if (!start_potential_) start_potential_ = potential(state.theta, context);
    saved_ = state;
    state.energy_error = 0.0;
  }

  Decision end_block(ChainState& state, ChainContext& context) override {
    const double end_potential = potential(state.theta, context);
    Decision decision;
    decision.delta_energy = end_potential - *start_potential_ + state.energy_error;
    decision.non_finite = !std::isfinite(decision.delta_energy);
    decision.accept_stat = decision.non_finite ? 0.0 : std::min(1.0, std::exp(-decision.delta_energy / temperature_));
    decision.accepted = context.rng.uniform() < decision.accept_stat;
    if (decision.accepted) {
      start_potential_ = end_potential;
    } else {
      state = saved_;
      for (double& m : state.momentum) m = -m;
    }
    return decision;
  }

  /// U(θ_0) of the next block (saved at a block's end, so (θ_0, m_0) are the chain's state).
  void save_state(StateWriter& out) const override {
    out.section("corrector mh");
    out.flag(start_potential_.has_value());
    out.number(start_potential_.value_or(0.0));
  }
  void restore_state(StateReader& in) override {
    in.section("corrector mh");
    const bool known = in.flag();
    const double value = in.number();
    start_potential_ = known ? std::optional<double>(value) : std::nullopt;
  }

private:
  /// U(θ) = f_0(θ) + Σ_i f_i(θ): one full pass over the data, counted as such and as N item
  /// evaluations, so that methods compare by cost with their corrections included.
  double potential(std::span<const double> theta, ChainContext& context) const {
    context.cost.full_passes += 1;
    context.cost.item_gradients += all_items_.size();
    return sgmcmc::potential(context.model, theta, all_items_, context.workspace);
  }

  std::size_t every_;
  double temperature_;
  std::vector<std::size_t> all_items_;
  std::unique_ptr<Estimator> exact_;
  std::optional<double> start_potential_;  // U(θ_0), kept from the last accepted block's end
  ChainState saved_;
};

}  // namespace

const std::vector<CatalogueEntry<CorrectorFactory>>& corrector_catalogue() {
  static const std::vector<CatalogueEntry<CorrectorFactory>> catalogue = {
      {"none", "accept every move (no Metropolis-Hastings test)", {},
       [](const Settings&, const Model&, const Integrator&) -> std::unique_ptr<Corrector> {
         return std::make_unique<NoCorrection>();
       }},
      {"mh", "Metropolis-Hastings test every `every` (1) steps with the exact potential; exact_endpoints (true)",
       {"every", "exact_endpoints"},
       [](const Settings& section, const Model& model, const Integrator& integrator) -> std::unique_ptr<Corrector> {
         return std::make_unique<MetropolisHastings>(section, model, integrator);
       }},
  };
  return catalogue;
}

std::unique_ptr<Corrector> make_corrector(const RunConfig& config, const Model& model, const Integrator& integrator) {
  const Settings& section = config["corrector"];
  auto corrector = choose(corrector_catalogue(), section, "none").make(section, model, integrator);
  if (!corrector->tests_acceptance()) return corrector;
  const std::string where = section.describe("name");
  const auto& estimator_entry = choose(estimator_catalogue(), config["estimator"], default_estimator);
  const auto& integrator_entry = choose(integrator_catalogue(), config["integrator"], default_integrator);
  for (const auto& [kind, name, reason] : {std::tuple{"estimator", estimator_entry.name, estimator_entry.mh_refusal},
                                           std::tuple{"integrator", integrator_entry.name, integrator_entry.mh_refusal}})
    if (!reason.empty())
      throw Error(fmt::format("{}: the mh corrector cannot follow {} '{}': {}", where, kind, name, reason));
  if (!integrator.constant_step_size())
    throw Error(fmt::format("{}: the mh corrector needs a constant step size (integrator.schedule = \"constant\"): a "
                            "block run backwards must be as likely as forwards",
                            where));
  if (!model.capabilities().exact_log_likelihood)
    throw Error(fmt::format("{}: the mh corrector needs the model's 'exact-log-likelihood' capability, which this "
                            "model does not declare (its likelihood is intractable or not implemented)",
                            where));
  return corrector;
}

}  // namespace sgmcmc
