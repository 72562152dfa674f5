// Correctors: what happens at the end of a block of integrator steps (modules/README.md, "Correctors").
// `none` accepts every move (SGLD, SGHMC, SGLD-CV as in Baker et al. 2019); `mh` is the Metropolis–Hastings
// test over K stochastic-gradient steps of Garriga-Alonso & Fortuin (2021, §4–5, app. C),
// using the integrator's ChainState::energy_error and the model's exact potential at the ends.
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.correctors;
export import sgmcmc.sampler;
import sgmcmc.error;

export namespace sgmcmc {

/// What a corrector is built for.
struct CorrectorTarget {
  const Model& model;
  const Integrator& integrator;
};

/// A corrector whose keys are read and checked, ready to build for a chain's model and integrator.
using CorrectorRecipe = std::function<std::unique_ptr<Corrector>(const CorrectorTarget&)>;
using CorrectorReader = std::function<CorrectorRecipe(SectionReader)>;
const std::vector<CatalogueEntry<CorrectorReader>>& corrector_catalogue();

inline constexpr const char* default_corrector = "none";

/// none: accept every move; it has no keys.
struct NoCorrectionParameters {
  static const FieldTable<NoCorrectionParameters>& fields();
  static NoCorrectionParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

/// mh: a Metropolis–Hastings test at the end of every block of `every` integrator steps.
struct MhParameters {
  std::size_t every = 1;        // K >= 1, the block length
  bool exact_endpoints = true;  // exact gradients at a block's ends, with U(θ) in the same data pass
  /// The keys, their constraints and docs (sgmcmc.fields); the member initialisers are the defaults.
  static const FieldTable<MhParameters>& fields();
  static MhParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

/// Each corrector from its plain parameters. The checks of a combination (MH after an estimator or
/// integrator that refuses it, ...) are sgmcmc.assembly's plan_chain, which
/// knows the catalogue entries; these build what they are given.
std::unique_ptr<Corrector> make_corrector(const NoCorrectionParameters& parameters, const CorrectorTarget& target);
std::unique_ptr<Corrector> make_corrector(const MhParameters& parameters, const CorrectorTarget& target);

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

/// The exact gradient ∇U(θ) = ∇f_0(θ) + Σ_i ∇f_i(θ) at a block's ends (corrector.exact_endpoints),
/// with U(θ) from the same full data pass when the model computes it there
/// (Model::data_potential_and_gradient), since the MH test needs U at the very point where the
/// last step takes its gradient. It keeps that U and the θ it belongs to, so the corrector's
/// U(θ_K) costs nothing more; the same values, bit for bit, as the `exact` estimator's gradient
/// and a separate potential pass. A model that does not fuse them costs what it did before.
class ExactEndpoint final : public Estimator {
public:
  explicit ExactEndpoint(const Model& model) : all_items_(every_item(model)) {}

  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    std::fill(gradient.begin(), gradient.end(), 0.0);
    potential_ = add_gradient_and_potential(context.model, theta, all_items_, gradient, context.workspace, context.rng);
    at_.assign(theta.begin(), theta.end());
    context.cost.full_passes += 1;
    context.cost.item_gradients += all_items_.size();
  }
  /// U(θ) if the last estimate was at θ under the current target and the model gave it, else none.
  std::optional<double> potential_at(std::span<const double> theta) const {
    if (!potential_ || !std::equal(theta.begin(), theta.end(), at_.begin(), at_.end())) return std::nullopt;
    return potential_;
  }
  /// The model's after_step changed the target: the kept U is of the old one.
  void forget() { potential_.reset(); }

private:
  std::vector<std::size_t> all_items_;
  std::optional<double> potential_;
  std::vector<double> at_;  // the θ of potential_
};

/// Metropolis–Hastings over a block of K steps (Garriga-Alonso & Fortuin 2021, §4–5, app. C; modules/README.md "Correctors"):
/// save (θ_0, m_0), run K steps, accept with probability min(1, exp(-ΔH̃/T)) where
/// ΔH̃ = U(θ_K) - U(θ_0) + (the integrator's energy error); on rejection restore (θ_0, m_0) and
/// negate the momentum (the next O step then mixes it). The minibatches are auxiliary variables
/// drawn independently of the state, so the test is exact with stochastic kicks.
class MetropolisHastings final : public Corrector {
public:
  MetropolisHastings(const MhParameters& parameters, const CorrectorTarget& target)
      : every_(parameters.every), temperature_(target.integrator.temperature()), all_items_(every_item(target.model)) {
    if (parameters.exact_endpoints) exact_ = std::make_unique<ExactEndpoint>(target.model);
  }

  std::size_t block_length() const override { return every_; }
  bool tests_acceptance() const override { return true; }
  Estimator* endpoint_estimator() override { return exact_.get(); }
  /// U(θ_0) of the next block is then computed afresh under the new target (its gradient too:
  /// the chain clears gradient_valid).
  void target_changed() override {
    start_potential_.reset();
    if (exact_) exact_->forget();
  }

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
  /// What a checkpoint holds (SavingArchive, sgmcmc.state).
  template <class Self, class Archive>
  static void saved_fields(Self& self, Archive& archive) {
    archive.section("corrector mh");
    archive(self.start_potential_);
  }
  void save_state(StateWriter& out) const override { save_fields(*this, out); }
  void restore_state(StateReader& in) override { restore_fields(*this, in); }

private:
  /// U(θ) = f_0(θ) + Σ_i f_i(θ): kept from the exact endpoint's gradient pass at θ when there
  /// was one (no further cost), else one full pass over the data, counted as such and as N item
  /// evaluations, so that methods compare by cost with their corrections included.
  double potential(std::span<const double> theta, ChainContext& context) const {
    if (exact_)
      if (const auto kept = exact_->potential_at(theta)) return *kept;
    context.cost.full_passes += 1;
    context.cost.item_gradients += all_items_.size();
    return sgmcmc::potential(context.model, theta, all_items_, context.workspace);
  }

  std::size_t every_;
  double temperature_;
  std::vector<std::size_t> all_items_;
  std::unique_ptr<ExactEndpoint> exact_;
  std::optional<double> start_potential_;  // U(θ_0), kept from the last accepted block's end
  ChainState saved_;
};

/// A catalogue entry whose keys are those of `Parameters::fields()`: its recipe is
/// `make_corrector(Parameters::from_settings(section), target)`.
template <class Parameters>
CatalogueEntry<CorrectorReader> corrector_entry(std::string name, std::string description) {
  std::vector<KeyDoc> documented = key_docs(Parameters::fields());
  return {std::move(name), std::move(description), keys_of(documented),
          [](SectionReader section) -> CorrectorRecipe {
            return [parameters = Parameters::from_settings(section)](const CorrectorTarget& target) {
              return make_corrector(parameters, target);
            };
          },
          {}, std::move(documented)};
}

}  // namespace

const std::vector<CatalogueEntry<CorrectorReader>>& corrector_catalogue() {
  // The keys, their defaults and docs are the parameter structs' field tables (`sgmcmc list`).
  static const std::vector<CatalogueEntry<CorrectorReader>> catalogue = {
      corrector_entry<NoCorrectionParameters>("none", "accept every move (no Metropolis-Hastings test)"),
      corrector_entry<MhParameters>("mh", "Metropolis-Hastings test at the end of every block of `every` steps, with "
                                          "the exact potential (Garriga-Alonso & Fortuin 2021)"),
  };
  return catalogue;
}

const FieldTable<NoCorrectionParameters>& NoCorrectionParameters::fields() {
  static const FieldTable<NoCorrectionParameters> none;
  return none;
}

const FieldTable<MhParameters>& MhParameters::fields() {
  using P = MhParameters;
  static const FieldTable<P> table = {
      integer_field("every", &P::every, "K, the integrator steps of a block, each block then one MH test", at_least(1)),
      flag_field("exact_endpoints", &P::exact_endpoints,
                 "exact gradients at a block's ends, with U(θ) in the same data pass (with every = 1 every gradient "
                 "is then exact, and the estimator must be 'exact')")};
  return table;
}

std::unique_ptr<Corrector> make_corrector(const NoCorrectionParameters&, const CorrectorTarget&) {
  return std::make_unique<NoCorrection>();
}

std::unique_ptr<Corrector> make_corrector(const MhParameters& parameters, const CorrectorTarget& target) {
  check_fields(MhParameters::fields(), parameters, "corrector mh");
  return std::make_unique<MetropolisHastings>(parameters, target);
}

}  // namespace sgmcmc
