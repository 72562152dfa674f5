// psgld: sgld preconditioned by RMSprop (Li, Chen, Carlson & Carin 2016).
// The implementation of the partition psgld.cppm: its class, catalogue entry and key reader.
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>
#include <fmt/format.h>
module sgmcmc.integrators;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;

namespace sgmcmc::integrator_parts {

/// pSGLD (Li, Chen, Carlson & Carin 2016, Algorithm 1, with their Γ term dropped): SGLD
/// preconditioned by RMSprop's diagonal G = diag(1/(λ + sqrt(V))), where V is a moving average of
/// the squared mean data gradient ḡ = (ĝ(θ) - ∇f_0(θ))/N (their ḡ, the minibatch mean of
/// ∇f_i; from any estimator, its estimate of the data term divided by N):
///   V ← αV + (1 - α) ḡ⊙ḡ (V starts at 0),   θ' = θ - (ε/2) G ĝ(θ) + sqrt(εT) G^{1/2} ξ.
/// The paper's ε, λ and α mean the same here (their scaling: G ≈ N/|∇U|, so ε is about N times
/// smaller than an sgld step with the same effect). Γ_i = ∂G_ii/∂θ_i would need the diagonal of
/// the Hessian of the data term (V depends on θ through ḡ(θ)), which no estimator gives; the
/// paper drops it too (its §"Preconditioned SGLD": negligible for α near 1). Without it a changing
/// G makes the chain's law differ from the posterior (a position-dependent preconditioner without
/// its divergence term), which is why MH refuses psgld, and why a run without a warmup, or with
/// `freeze_after_warmup = false`, is refused (warmup_refusal). V stops changing at the end of the
/// warmup: the sampling phase is then sgld with the constant mass M = λ + sqrt(V), reported as
/// adapted_mass(), whose only bias is sgld's, which shrinks with ε.
class Psgld final : public ScheduledIntegrator {
public:
  explicit Psgld(const PsgldParameters& parameters)
      : ScheduledIntegrator(parameters.schedule, parameters.temperature), alpha_(parameters.alpha),
        lambda_(parameters.lambda), freeze_(parameters.freeze_after_warmup) {}
  void initialise(ChainState& state, std::size_t dimension, Rng& rng) override {
    ScheduledIntegrator::initialise(state, dimension, rng);
    second_moment_.assign(dimension, 0.0);
  }

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double epsilon = advance(state), noise = std::sqrt(epsilon * temperature_);
    estimator.estimate(state.theta, state.gradient, context);
    if (!frozen_) update_second_moment(state, context);
    xi_.resize(state.theta.size());
    context.rng.fill_normal(xi_);
    for (std::size_t j = 0; j < state.theta.size(); ++j) {
      const double g = 1.0 / (lambda_ + std::sqrt(second_moment_[j]));  // G_jj
      state.theta[j] += -0.5 * epsilon * g * state.gradient[j] + noise * std::sqrt(g) * xi_[j];
    }
    if (state.reflect_at_zero) mirror_positive(state.theta);
    state.gradient_valid = false;
  }
  /// A V that never stops changing leaves the bias of the dropped Γ term, which does not shrink
  /// with ε (a position-dependent preconditioner without its divergence term: the chain samples
  /// about π/G, see the class comment), so V must be frozen after a warmup.
  std::string warmup_refusal(std::uint64_t warmup) const override {
    const std::string reason = "the preconditioner must be frozen after a warmup for the chain to target π as ε → 0 "
                               "(Li et al. 2016 drop the Γ(θ) term, so while G changes the chain is biased by an amount "
                               "no step size removes)";
    if (!freeze_) return "integrator.freeze_after_warmup = false: psgld would never freeze its preconditioner; " + reason;
    if (warmup == 0) return "integrator psgld needs a warmup (run.warmup > 0): " + reason;
    return {};
  }
  /// The block that ends the warmup freezes V (warmup_refusal ensures there is one).
  void end_warmup() override {
    if (freeze_) frozen_ = true;
  }
  /// Once frozen, the sampling phase is sgld with this mass: M = 1/G = λ + sqrt(V).
  std::vector<double> adapted_mass() const override {
    if (!frozen_) return {};
    std::vector<double> mass(second_moment_.size());
    for (std::size_t j = 0; j < mass.size(); ++j) mass[j] = lambda_ + std::sqrt(second_moment_[j]);
    return mass;
  }
  void save_state(StateWriter& out) const override {
    ScheduledIntegrator::save_state(out);
    out.section("psgld");
    out.numbers(second_moment_);
    out.flag(frozen_);
  }
  void restore_state(StateReader& in) override {
    ScheduledIntegrator::restore_state(in);
    in.section("psgld");
    in.numbers(second_moment_, second_moment_.size());
    frozen_ = in.flag();
  }

private:
  /// V ← αV + (1 - α) ḡ⊙ḡ with ḡ = (ĝ - ∇f_0(θ))/N (Li et al. 2016, Alg. 1). ∇f_0 is the
  /// prior's gradient given the chain's workspace, as the estimator added it to ĝ (pmf's
  /// Gibbs-drawn precisions), so that ḡ holds the data term alone.
  void update_second_moment(const ChainState& state, ChainContext& context) {
    prior_.assign(state.theta.size(), 0.0);
    context.model.add_prior_gradient_given(state.theta, prior_, context.workspace);
    const double items = static_cast<double>(std::max<std::size_t>(context.model.num_items(), 1));
    for (std::size_t j = 0; j < second_moment_.size(); ++j) {
      const double mean = (state.gradient[j] - prior_[j]) / items;
      second_moment_[j] = alpha_ * second_moment_[j] + (1.0 - alpha_) * mean * mean;
    }
  }

  double alpha_, lambda_;
  bool freeze_;
  bool frozen_ = false;
  std::vector<double> second_moment_;  // V
  std::vector<double> prior_, xi_;     // scratch: ∇f_0(θ) and this step's ξ
};

CatalogueEntry<IntegratorReader> psgld_entry() {
  return integrator_entry<PsgldParameters>(
       "psgld",
       "pSGLD: sgld preconditioned by RMSprop, G = 1/(λ + sqrt(V)), V ← αV + (1-α)ḡ² (Li et al. 2016, Alg. 1, "
       "without Γ: biased while G changes, so it needs run.warmup > 0, after which V is frozen and the chain is sgld "
       "with mass λ + sqrt(V); step_size = their ε)",
       "psgld computes no gradient at its proposal, and its preconditioner changes with the gradient history (its "
       "chain is biased without the Γ term, which needs second derivatives), so no MH test can correct it; use "
       "'mala' with a mass, or adapt_mass for one learnt during the warmup");
}

}  // namespace sgmcmc::integrator_parts

namespace sgmcmc {

using namespace integrator_parts;

const FieldTable<PsgldParameters>& PsgldParameters::fields() {
  using P = PsgldParameters;
  static const FieldTable<P> table = concat<P>(
      {schedule_fields<P>(),
       {number_field<P>("alpha", &P::alpha, "α of V's moving average, V ← αV + (1 - α)ḡ⊙ḡ",
                        Constraint{"in [0, 1)", "0 <= alpha < 1 (the weight of the past in V's moving average)",
                                   [](double alpha) { return alpha >= 0.0 && alpha < 1.0; }}),
        number_field<P>("lambda", &P::lambda, "λ, bounds G = 1/(λ + sqrt(V)) where the gradient history vanishes",
                        positive()),
        flag_field<P>("freeze_after_warmup", &P::freeze_after_warmup,
                      "stop updating V after the warmup (false is refused: a V that never freezes leaves a bias)")}});
  return table;
}

std::unique_ptr<Integrator> make_integrator(const PsgldParameters& parameters) {
  check_fields(PsgldParameters::fields(), parameters, "integrator psgld");
  return std::make_unique<Psgld>(parameters);
}

}  // namespace sgmcmc
