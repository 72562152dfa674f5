// Integrators: one step of a discretised Langevin dynamics driven by a gradient estimate
// (modules/README.md, "Integrators"), with a step-size schedule (sgmcmc.schedules). The state they
// move is ChainState. They are built from the exact sub-flows of the partition `substeps`.
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
export module sgmcmc.integrators;
export import sgmcmc.sampler;
export import :metric;
export import :substeps;
export import sgmcmc.schedules;
import sgmcmc.error;

export namespace sgmcmc {

using IntegratorFactory = std::function<std::unique_ptr<Integrator>(const Settings&)>;
const std::vector<CatalogueEntry<IntegratorFactory>>& integrator_catalogue();

inline constexpr const char* default_integrator = "sgld";

/// The integrator named in `section` (default "sgld"). It refuses `scale_step_with_n = true`,
/// which needs the model's number of items: use the overload below (make_chain does).
std::unique_ptr<Integrator> make_integrator(const Settings& section);

/// The same for a model of N = `items` data items. With `scale_step_with_n = true`, step_size is
/// the step for one item, and the integrator gets step_size / N^p (step_exponent), so that a
/// preset's step keeps its meaning when the data size changes (modules/README.md, "Step sizes
/// across data sizes"). Any other key (friction included) is read as given.
std::unique_ptr<Integrator> make_integrator(const Settings& section, std::size_t items);

/// p of the step N^(-p) for the integrator `name`: 1 for a Langevin step ε (sgld, mala), 1/2 for a
/// Hamiltonian step h (the others); 0 for psgld, whose effective step εG depends on N through its
/// preconditioner as well, by a power no single p captures (modules/README.md, pSGLD), so it
/// refuses scale_step_with_n.
double step_exponent(const std::string& name);

// Plain parameters, one struct per catalogue entry, with the defaults of the Settings path. Each
// `from_settings` reads its entry's keys (schedule, temperature, mass, then its own; the first bad
// key is the one reported), with errors naming where a key was set; make_integrator(parameters)
// then builds the integrator, refusing only values no step can use (a non-positive step size,
// temperature, mass or friction, no steps), not the advice from_settings gives (sghmc's γh < 1,
// the range of a decay's c).

/// Step-size adaptation by dual averaging (Hoffman & Gelman 2014, Alg. 5, after Nesterov 2009) to
/// a target acceptance of the MH test, during the warmup; the step is then frozen at the averaged
/// iterate. Only for the integrators an MH test can follow (mala, obabo, baoab, hmc, leapfrog);
/// the assembly refuses it without an MH corrector, the chain without a warmup.
struct StepAdaptation {
  bool adapt = false;              // integrator.adapt_step_size
  double target_acceptance = 0.8;  // δ, 0 < δ < 1: integrator.target_acceptance
};

/// sgld: θ' = θ - (ε/2) M⁻¹ ĝ(θ) + sqrt(εT) M^{-1/2} ξ, the mass acting as the preconditioner M⁻¹.
struct SgldParameters {
  ScheduleParameters schedule = {};  // ε_k
  double temperature = 1.0;          // T > 0; 1 samples the posterior
  Mass mass = {};                    // M > 0; its inverse preconditions the step
  bool adapt_mass = false;  // adapt M during the warmup (Stan's windows), then keep it
  static SgldParameters from_settings(const Settings& section);
};

/// mala: OBABO with c = 0, step_size read as ε = h².
struct MalaParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // M > 0, one number or one per coordinate; as sgld's, M⁻¹ preconditions the step
  bool adapt_mass = false;  // adapt M during the warmup (Stan's windows), then keep it
  StepAdaptation step_adaptation = {};  // adapt_step_size, target_acceptance (mh only)
  static MalaParameters from_settings(const Settings& section);
};

/// obabo (GGMC): step_size = h; each O keeps exp(-γh/2) of the momentum.
struct ObaboParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // the kinetic energy's ½mᵀM⁻¹m
  bool adapt_mass = false;
  std::optional<double> friction = std::nullopt;  // γ > 0; unset: 0.1/h₀ for the first step h₀ (γh₀ = 0.1)
  StepAdaptation step_adaptation = {};  // adapt_step_size, target_acceptance (mh only)
  static ObaboParameters from_settings(const Settings& section);
};

/// baoab: step_size = h; its O keeps exp(-γh). Fields as ObaboParameters.
struct BaoabParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // the kinetic energy's ½mᵀM⁻¹m
  bool adapt_mass = false;
  std::optional<double> friction = std::nullopt;
  StepAdaptation step_adaptation = {};  // adapt_step_size, target_acceptance (mh only)
  static BaoabParameters from_settings(const Settings& section);
};

/// hmc (and its alias leapfrog): `steps` leapfrog steps of size h from a fresh momentum.
struct HmcParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // the kinetic energy's ½mᵀM⁻¹m
  bool adapt_mass = false;
  std::size_t steps = 10;  // L >= 1
  StepAdaptation step_adaptation = {};  // adapt_step_size, target_acceptance (mh only)
  static HmcParameters from_settings(const Settings& section);
};

/// sghmc: step_size = h, momentum decay 1 - γh (from_settings refuses γh >= 1 at the first step).
struct SghmcParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // the kinetic energy's ½mᵀM⁻¹m
  bool adapt_mass = false;
  std::optional<double> friction = std::nullopt;  // as ObaboParameters
  static SghmcParameters from_settings(const Settings& section);
};

std::unique_ptr<Integrator> make_integrator(const SgldParameters& parameters);
/// psgld (Li, Chen, Carlson & Carin 2016, Alg. 1 without Γ): sgld preconditioned by RMSprop's
/// G = diag(1/(λ + sqrt(V))), V the moving average of the squared mean data gradient;
/// step_size = their ε. Its preconditioner is its own, so it reads no `mass`.
struct PsgldParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  double alpha = 0.99;              // 0 <= α < 1: V ← αV + (1 - α) ḡ⊙ḡ
  double lambda = 1e-5;             // λ > 0: bounds G where the gradient history vanishes
  bool freeze_after_warmup = true;  // stop updating V after the warmup: a fixed kernel when sampling (false: refused)
  static PsgldParameters from_settings(const Settings& section);
};

/// sgnht (Ding et al. 2014, Alg. 2): step_size = h; friction is the thermostat ξ.
struct SgnhtParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // the kinetic energy's ½mᵀM⁻¹m
  bool adapt_mass = false;
  double diffusion = 1.0;                                 // A > 0, the injected noise sqrt(2AhT)
  std::optional<double> thermostat_start = std::nullopt;  // ξ₀; unset: A
  static SgnhtParameters from_settings(const Settings& section);
};

/// badodab (Leimkuhler & Shang 2016): sgnht's dynamics integrated by the splitting
/// B A D O D A B; the same keys.
struct BadodabParameters : SgnhtParameters {
  static BadodabParameters from_settings(const Settings& section);
};

std::unique_ptr<Integrator> make_integrator(const MalaParameters& parameters);
std::unique_ptr<Integrator> make_integrator(const ObaboParameters& parameters);
std::unique_ptr<Integrator> make_integrator(const BaoabParameters& parameters);
std::unique_ptr<Integrator> make_integrator(const HmcParameters& parameters);
std::unique_ptr<Integrator> make_integrator(const SghmcParameters& parameters);
std::unique_ptr<Integrator> make_integrator(const PsgldParameters& parameters);
std::unique_ptr<Integrator> make_integrator(const SgnhtParameters& parameters);
std::unique_ptr<Integrator> make_integrator(const BadodabParameters& parameters);

/// Refuses, naming the key and where it was set (a chain would refuse the first two too, without
/// the place): an `integrator.mass` array whose length is not d, or d² with metric = "dense"; a
/// dense metric above dense_metric_limit coordinates (d² numbers, d² work per step); a dense
/// metric for a model with positive parameters (the reflection at 0 keeps ½mᵀM⁻¹m only for a
/// diagonal M).
void check_metric(const Settings& section, const Model& model);

}  // namespace sgmcmc

namespace sgmcmc {

// The parts below are not exported. They live in a named namespace, not an anonymous one: clang 19
// makes internal-linkage names of a module unit clash with same-named helpers of units that import
// it (https://github.com/llvm/llvm-project/issues/90259).
namespace integrator_parts {

/// A new estimate at θ, kept as the gradient there.
void new_gradient(ChainState& state, Estimator& estimator, ChainContext& context) {
  estimator.estimate(state.theta, state.gradient, context);
  state.gradient_valid = true;
}

/// The gradient kept at θ, or a new one.
void ensure_gradient(ChainState& state, Estimator& estimator, ChainContext& context) {
  if (!state.gradient_valid) new_gradient(state, estimator, context);
}

/// Nesterov's dual averaging (Nesterov 2009) of the log step size, as Hoffman & Gelman (2014, §3.2.1,
/// Algorithm 5) adapt NUTS's step and the Stan Reference Manual's step-size adaptation states it
/// (the recursion read from both, no code taken). With α_m the acceptance probability of the m-th
/// MH test of the warmup, m = 1, 2, ...:
///   H̄_m = (1 - 1/(m + t₀)) H̄_{m-1} + (δ - α_m)/(m + t₀),    log h_m = μ - (sqrt(m)/γ) H̄_m,
///   log h̄_m = m^{-κ} log h_m + (1 - m^{-κ}) log h̄_{m-1},
/// with H̄_0 = 0, μ = log(10 h₀) (h₀ the step it starts from), γ = 0.05, t₀ = 10, κ = 0.75 (their
/// and Stan's defaults). h_m is the step of the next block; at the end of the warmup the step is
/// frozen at h̄. `restart` starts again from the current step (Stan does so after each update of the
/// metric). h is whatever integrator.step_size means (mala's ε = h², the others' h).
class DualAveraging {
public:
  static constexpr double gamma = 0.05, t0 = 10.0, kappa = 0.75;
  void restart(double step) {
    mu_ = std::log(10.0 * step);
    count_ = 0;
    h_bar_ = 0.0;
    log_averaged_ = 0.0;
  }
  /// One MH test's acceptance probability α (clipped to [0, 1]); returns the next step h_m.
  double learn(double accept_stat, double target) {
    const double alpha = std::isfinite(accept_stat) ? std::clamp(accept_stat, 0.0, 1.0) : 0.0;
    ++count_;
    const double m = static_cast<double>(count_);
    const double eta = 1.0 / (m + t0);
    h_bar_ = (1.0 - eta) * h_bar_ + eta * (target - alpha);
    const double log_step = mu_ - std::sqrt(m) / gamma * h_bar_;
    const double weight = std::pow(m, -kappa);
    log_averaged_ = weight * log_step + (1.0 - weight) * log_averaged_;
    return std::exp(log_step);
  }
  /// h̄ after at least one test; `current` before any (just restarted).
  double averaged(double current) const { return count_ ? std::exp(log_averaged_) : current; }
  void save(StateWriter& out) const {
    out.section("step size adaptation");
    out.count(count_);
    for (double value : {mu_, h_bar_, log_averaged_}) out.number(value);
  }
  void restore(StateReader& in) {
    in.section("step size adaptation");
    count_ = in.count();
    for (double* value : {&mu_, &h_bar_, &log_averaged_}) *value = in.number();
  }

private:
  double mu_ = 0.0, h_bar_ = 0.0, log_averaged_ = 0.0;  // μ, H̄_m, log h̄_m
  std::uint64_t count_ = 0;                            // m
};

/// What every integrator reads: the schedule, the temperature and the diagonal mass M, which
/// `adapt_mass` adapts during the warmup (MassAdaptation) and then keeps.
class ScheduledIntegrator : public Integrator {
public:
  template <class Parameters>
  explicit ScheduledIntegrator(const Parameters& parameters)
      : ScheduledIntegrator(parameters.schedule, parameters.temperature, parameters.mass, parameters.adapt_mass,
                            step_adaptation_of(parameters)) {}
  /// Without `mass` and `adapt_mass` (psgld, whose preconditioner is its own): M = 1, not adapted.
  ScheduledIntegrator(const ScheduleParameters& schedule, double temperature, const Mass& mass = {},
                      bool adapt_mass = false, StepAdaptation step_adaptation = {})
      : schedule_(schedule), temperature_(temperature), mass_(mass), adapt_mass_(adapt_mass), adaptation_(mass.dense, mass.windows),
        step_adaptation_(step_adaptation), adapted_step_(schedule_.at(1)) {
    require_parameter(temperature_ > 0.0, "integrator", "temperature > 0", temperature_);
    if (step_adaptation_.adapt) {
      require_parameter(schedule_.constant(), "integrator", "a constant schedule with adapt_step_size",
                        "another schedule");
      const double target = step_adaptation_.target_acceptance;
      require_parameter(target > 0.0 && target < 1.0, "integrator", "0 < target_acceptance < 1", target);
      dual_averaging_.restart(adapted_step_);
    }
  }
  template <class Parameters>
  static StepAdaptation step_adaptation_of(const Parameters& parameters) {
    if constexpr (requires { parameters.step_adaptation; }) return parameters.step_adaptation;
    else return {};
  }
  void initialise(ChainState& state, std::size_t dimension, Rng& rng) override {
    Integrator::initialise(state, dimension, rng);
    mass_.resize(dimension);
  }
  /// mass = "fisher": the empirical Fisher mass at the chain's point once the estimator has prepared
  /// (cv's centre), the momentum drawn for M = 1 carried to N(0, T M) as a window's new mass is.
  void prepare(ChainState& state, ChainContext& context) override {
    if (!mass_.fisher()) return;
    mass_.set_mass(fisher_mass(context.model, state.theta, context.workspace, mass_.dense(), mass_.ridge()),
                   state.momentum);
    context.cost.item_gradients += context.model.num_items();  // one pass, counted as the centre's is
    ++context.cost.full_passes;
  }
  /// During the warmup, with adapt_mass: a new mass at the end of each slow window, the momentum
  /// rescaled with it (m ~ N(0, T M_old) becomes m ~ N(0, T M_new): m_j × sqrt(M_new,j / M_old,j)).
  /// With adapt_step_size, during the warmup: first one dual-averaging update from the block's
  /// acceptance probability (the block's MH test), then the mass's (when a window closes, the dual
  /// averaging restarts from the current step, as Stan's does after a metric update); the block
  /// that ends the warmup freezes the step at the averaged h̄, so the sampling phase is a fixed kernel.
  void after_block(ChainState& state, std::uint64_t warmup, const Decision& decision) override {
    if (state.iteration > warmup) return;
    const bool adapting_step = step_adaptation_.adapt && !step_frozen_;
    if (adapting_step) adapted_step_ = dual_averaging_.learn(decision.accept_stat, step_adaptation_.target_acceptance);
    if (adapt_mass_) {
      if (auto mass = adaptation_.observe(state.iteration, warmup, state.theta)) {
        mass_.adapt(std::move(*mass), state.momentum);
        if (adapting_step) dual_averaging_.restart(adapted_step_);
      }
    }
    if (adapting_step && state.iteration == warmup) {
      adapted_step_ = dual_averaging_.averaged(adapted_step_);
      step_frozen_ = true;
    }
  }
  std::vector<double> adapted_mass() const override {
    return adapt_mass_ || mass_.fisher() ? mass_.mass() : std::vector<double>{};
  }
  bool adapts_step_size() const override { return step_adaptation_.adapt; }
  std::optional<double> adapted_step_size() const override {
    return step_frozen_ ? std::optional<double>(adapted_step_) : std::nullopt;
  }
  double step_size() const override { return current_; }
  double temperature() const override { return temperature_; }
  bool constant_step_size() const override { return schedule_.constant(); }
  /// A given mass or step is configuration, not state: only what adapts or was computed is saved
  /// (so a checkpoint without either reads as before there was any).
  void save_state(StateWriter& out) const override {
    out.section("integrator");
    out.number(current_);
    if (adapt_mass_) adaptation_.save(out);
    if (adapt_mass_ || mass_.fisher()) mass_.save(out);
    if (step_adaptation_.adapt) {
      dual_averaging_.save(out);
      out.number(adapted_step_);
      out.flag(step_frozen_);
    }
  }
  void restore_state(StateReader& in) override {
    in.section("integrator");
    current_ = in.number();
    if (adapt_mass_) adaptation_.restore(in);
    if (adapt_mass_ || mass_.fisher()) mass_.restore(in);
    if (step_adaptation_.adapt) {
      dual_averaging_.restore(in);
      adapted_step_ = in.number();
      step_frozen_ = in.flag();
    }
  }

protected:
  /// The step of this iteration: the schedule's, or the adapted one (whose schedule is constant).
  double advance(const ChainState& state) {
    return current_ = step_adaptation_.adapt ? adapted_step_ : schedule_.at(state.iteration);
  }
  StepSchedule schedule_;
  double temperature_;
  double current_ = 0.0;
  Metric mass_;  // M: sgld's and mala's preconditioner M⁻¹, the others' kinetic energy ½mᵀM⁻¹m
  bool adapt_mass_;
  MassAdaptation adaptation_;
  StepAdaptation step_adaptation_;
  double adapted_step_;  // with adapt_step_size: the step in use (h_m during the warmup, h̄ after it)
  bool step_frozen_ = false;
  DualAveraging dual_averaging_;
};

/// SGLD as Baker et al. (2019, §2) write it, preconditioned by a constant M⁻¹ (diagonal or dense):
/// θ' = θ - (ε/2) M⁻¹ ĝ(θ) + sqrt(ε T) M^{-1/2} ξ, ξ ~ N(0, I) (Welling & Teh 2011, eq. 4, with M = I),
/// M^{-1/2}ξ standing for any draw of N(0, M⁻¹) (Kξ for a dense metric, Metric).
/// It is the Euler–Maruyama step of the preconditioned Langevin diffusion
/// dθ = -M⁻¹∇U dt + sqrt(2T) M^{-1/2} dW (ε = 2h), which leaves exp(-U/T) invariant for any
/// constant positive M: the MALA proposal with a constant metric (Roberts & Stramer 2002;
/// Girolami & Calderhead 2011, with G(θ) = M). T = 1 samples the posterior. For positive
/// parameters θ' is reflected at 0, θ' ← |θ'| (Patterson & Teh 2013).
class Sgld final : public ScheduledIntegrator {
public:
  explicit Sgld(const SgldParameters& parameters) : ScheduledIntegrator(parameters) {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double epsilon = advance(state), noise = std::sqrt(epsilon * temperature_);
    estimator.estimate(state.theta, state.gradient, context);
    xi_.resize(state.theta.size());
    context.rng.fill_normal(xi_);  // one call, so the update below is a plain vectorisable loop
    if (mass_.dense()) {
      drift_.resize(state.theta.size());
      mass_.times_inverse(state.gradient, drift_);
      mass_.correlate_as_inverse(xi_);  // sqrt(εT) Kξ ~ N(0, εT M⁻¹)
      for (std::size_t j = 0; j < state.theta.size(); ++j) state.theta[j] += -0.5 * epsilon * drift_[j] + noise * xi_[j];
    } else {
      // With M = 1 the factors M⁻¹ and M^{-1/2} are exactly 1: the same bits as without a mass.
      const auto inverse = mass_.inverse(), inverse_sqrt = mass_.inverse_sqrt();
      for (std::size_t j = 0; j < state.theta.size(); ++j)
        state.theta[j] += -0.5 * epsilon * inverse[j] * state.gradient[j] + noise * inverse_sqrt[j] * xi_[j];
    }
    if (state.reflect_at_zero) mirror_positive(state.theta);
    state.gradient_valid = false;  // the estimate was at the old θ
  }

private:
  std::vector<double> xi_, drift_;  // scratch: this step's ξ and, dense, M⁻¹ĝ
};

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
        lambda_(parameters.lambda), freeze_(parameters.freeze_after_warmup) {
    require_parameter(alpha_ >= 0.0 && alpha_ < 1.0, "integrator psgld", "0 <= alpha < 1", alpha_);
    require_parameter(lambda_ > 0.0, "integrator psgld", "lambda > 0", lambda_);
  }
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
  /// The block that ends the warmup freezes V (the chain calls this after every block).
  void after_block(ChainState& state, std::uint64_t warmup, const Decision&) override {
    if (freeze_ && warmup > 0 && state.iteration >= warmup) frozen_ = true;
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

/// The friction γ of the Langevin SDE (`friction`, in units of 1/time). By default γ = 0.1/h₀ for
/// the first step h₀ (`step_size`), so that γh₀ = 0.1: a momentum decay per step in the range
/// Chen, Fox & Guestrin (2014) relate to SGD with momentum for SGHMC. A fixed γ would give γh ≈ 0
/// at a small step, where the friction no longer damps the minibatch noise and the chain heats
/// up; γ = 0 never refreshes the momentum, so the chain does not mix, and is refused.
struct Friction {
  static constexpr double default_per_step = 0.1;
  /// γ, or its default for the schedule's first step h₀ = schedule.at(1).
  Friction(std::optional<double> friction, const StepSchedule& schedule)
      : gamma(friction.value_or(default_gamma(schedule))) {
    require_parameter(gamma > 0.0, "integrator", "friction > 0", gamma);
  }
  static double default_gamma(const StepSchedule& schedule) { return default_per_step / schedule.at(1); }
  double per_step(double h) const { return gamma * h; }
  double gamma;
};

/// Integrators with momentum: mass, and the first momentum drawn from N(0, TM).
class MomentumIntegrator : public ScheduledIntegrator {
public:
  template <class Parameters>
  explicit MomentumIntegrator(const Parameters& parameters) : ScheduledIntegrator(parameters) {}
  void initialise(ChainState& state, std::size_t dimension, Rng& rng) override {
    ScheduledIntegrator::initialise(state, dimension, rng);
    state.momentum.assign(dimension, 0.0);
    refresh(state, 0.0, rng);
  }
  /// pᵀM⁻¹p/d = 2 K(p)/d with the mass in use now: the momentum the step ended with (after the
  /// final O of OBABO, the last kick of BAOAB, SGHMC, SGNHT, BADODAB; hmc and mala have none).
  std::optional<double> kinetic_temperature(const ChainState& state) const override {
    return 2.0 * kinetic_energy(state.momentum, mass_) / static_cast<double>(state.momentum.size());
  }

protected:
  /// O with retention c: m ← c m + sqrt((1 - c²)T) M^{1/2} ξ.
  void refresh(ChainState& state, double retention, Rng& rng) const {
    ornstein_uhlenbeck(state.momentum, retention, temperature_, mass_, rng);
  }
  /// A over h, reflecting at 0 where the model's parameters are positive.
  void move(ChainState& state, double h) const {
    drift(state.theta, state.momentum, mass_, h, state.reflect_at_zero);
  }
  /// B(h/2) with the gradient in state.gradient, adding its change of ½mᵀM⁻¹m to
  /// state.energy_error (for BAOAB, whose O step sits between its two kicks).
  void half_kick(ChainState& state, double h) const {
    const double before = kinetic_energy(state.momentum, mass_);
    kick(state.momentum, state.gradient, h / 2);
    state.energy_error += kinetic_energy(state.momentum, mass_) - before;
  }
  /// BAB with step h (leapfrog): the volume-preserving, reversible core of a step. The first kick
  /// uses the gradient kept at θ (or a fresh one), the second a new estimate at the new θ, kept
  /// for the next step. A drift leaves ½mᵀM⁻¹m alone (a reflection too), so the two kicks'
  /// share of the energy error is the change of ½mᵀM⁻¹m over the whole BAB: two evaluations.
  void kick_drift_kick(ChainState& state, double h, Estimator& estimator, ChainContext& context) const {
    ensure_gradient(state, estimator, context);
    const double before = kinetic_energy(state.momentum, mass_);
    kick(state.momentum, state.gradient, h / 2);
    move(state, h);
    new_gradient(state, estimator, context);
    kick(state.momentum, state.gradient, h / 2);
    state.energy_error += kinetic_energy(state.momentum, mass_) - before;
  }
};

/// OBABO / GGMC (Horowitz 1991; Garriga-Alonso & Fortuin 2021, §4, Alg. 1): O(h/2) B(h/2) A(h)
/// B(h/2) O(h/2), each O keeping c = exp(-γh/2) of the momentum. `mala` is the overdamped limit
/// γ → ∞ (c = 0): the MALA / SGLD update with ε = h². With a mass M, m ~ N(0, TM) then B(h/2) A(h)
/// give θ' = θ - (ε/2) M⁻¹ĝ + sqrt(εT) M^{-1/2} ξ, sgld's preconditioned step; the proposal's
/// density ratio is exp(-Δ(½mᵀM⁻¹m)/T) over the kicks, the kinetic energy the MH test already
/// adds, so MH stays exact for any constant positive M.
class Obabo final : public MomentumIntegrator {
public:
  explicit Obabo(const ObaboParameters& parameters)
      : MomentumIntegrator(parameters), friction_(std::in_place, parameters.friction, schedule_) {}
  /// The `mala` form: c = 0, with step_size read as ε = h².
  explicit Obabo(const MalaParameters& parameters) : MomentumIntegrator(parameters) {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double scheduled = advance(state);
    const double h = friction_ ? scheduled : std::sqrt(scheduled);
    const double retention = friction_ ? std::exp(-friction_->per_step(h) / 2) : 0.0;
    refresh(state, retention, context.rng);
    kick_drift_kick(state, h, estimator, context);
    // With c = 0 the next O replaces the momentum whole, so this O would only burn random numbers;
    // skipping it keeps `mala`'s stream aligned with `sgld`'s (one normal per coordinate per step).
    if (friction_) refresh(state, retention, context.rng);
  }
  /// `mala`'s momentum is redrawn whole at every step's start and never carried: it has none.
  std::optional<double> kinetic_temperature(const ChainState& state) const override {
    return friction_ ? MomentumIntegrator::kinetic_temperature(state) : std::nullopt;
  }

private:
  std::optional<Friction> friction_;  // none for `mala`
};

/// BAOAB (Leimkuhler & Matthews 2013): B(h/2) A(h/2) O(h) A(h/2) B(h/2), the O keeping
/// c = exp(-γh) over the whole step. For the MH energy error the parts between two O's are
/// deterministic, volume-preserving and reversible under a momentum flip (the B A before an O
/// and the A B after it), so ΔH̃ adds their changes of kinetic energy, as for OBABO (derivation
/// in modules/README.md, "Correctors").
class Baoab final : public MomentumIntegrator {
public:
  explicit Baoab(const BaoabParameters& parameters)
      : MomentumIntegrator(parameters), friction_(parameters.friction, schedule_) {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double h = advance(state);
    ensure_gradient(state, estimator, context);
    half_kick(state, h);
    move(state, h / 2);
    refresh(state, std::exp(-friction_.per_step(h)), context.rng);
    move(state, h / 2);
    new_gradient(state, estimator, context);
    half_kick(state, h);
  }

private:
  Friction friction_;
};

/// HMC / leapfrog (Duane et al. 1987; Neal 2011): each step is one trajectory of L BAB steps
/// from a fresh momentum ~ N(0, TM). With the `mh` corrector (every = 1) and exact gradients this
/// is HMC; with stochastic gradients and no corrector, naive SGHMC without friction.
class Hmc final : public MomentumIntegrator {
public:
  explicit Hmc(const HmcParameters& parameters) : MomentumIntegrator(parameters), steps_(parameters.steps) {
    require_parameter(steps_ >= 1, "integrator hmc", "steps >= 1", steps_);
  }

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double h = advance(state);
    refresh(state, 0.0, context.rng);
    for (std::size_t l = 0; l < steps_; ++l) kick_drift_kick(state, h, estimator, context);
  }
  /// None, as `mala`'s: the momentum is redrawn whole at each step's start, so the one carried is
  /// no state of the chain (θ's next move does not depend on it), and after an MH rejection it is
  /// the one saved before the refresh, whose law is not N(0, TM) even for exact HMC (mean
  /// pᵀM⁻¹p/d 0.95 on N(0, 1) at h = 0.5, L = 3; tests/statistical/temperatures_test.cpp).
  std::optional<double> kinetic_temperature(const ChainState&) const override { return std::nullopt; }

private:
  std::size_t steps_;
};

/// SGHMC with the symplectic Euler–Maruyama step (Chen, Fox & Guestrin 2014, without the
/// noise-estimate correction B̂; Garriga-Alonso & Fortuin 2021, eq. 6):
/// m' = (1 - γh) m - h ĝ(θ) + sqrt(2γhT) M^{1/2} ξ,  θ' = θ + h M⁻¹ m'.
class Sghmc final : public MomentumIntegrator {
public:
  explicit Sghmc(const SghmcParameters& parameters)
      : MomentumIntegrator(parameters), friction_(parameters.friction, schedule_) {
    // γh >= 1 makes the decay 1 - γh flip the momentum every step: not a discretisation of SGHMC.
    // The largest step is the first (from_settings makes the same check and names the key).
    const double decay = friction_.per_step(schedule_.at(1));
    require_parameter(decay < 1.0, "integrator sghmc", "friction × step size below 1", decay);
  }

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double h = advance(state), decay = friction_.per_step(h);
    const double noise = std::sqrt(2.0 * decay * temperature_);
    estimator.estimate(state.theta, state.gradient, context);
    euler_momentum(state.momentum, state.gradient, decay, h, noise, mass_, context.rng);
    move(state, h);
    state.gradient_valid = false;
  }

private:
  Friction friction_;
};

/// What sgnht and badodab share: the adaptive Langevin (stochastic gradient Nosé–Hoover)
/// thermostat of Ding et al. (2014) and Leimkuhler & Shang (2016), with a mass M and temperature T,
///   dθ = M⁻¹p dt,  dp = -∇U dt - ξ p dt + sqrt(2AT) M^{1/2} dW,  dξ = (pᵀM⁻¹p/d - T) dt,
/// a scalar ξ in place of a fixed friction, rising while the kinetic temperature pᵀM⁻¹p/d is
/// above T, so the unknown minibatch noise is dissipated without being estimated (the thermostat's
/// mass μ = d, as in Ding et al.'s Alg. 2). Its continuous dynamics leave
/// exp(-U/T) × N(p; 0, TM) × a Gaussian in ξ invariant (Ding et al. 2014, §3). ξ starts at
/// `thermostat_start` (default A) and is chain state, carried by checkpoints.
class ThermostatIntegrator : public MomentumIntegrator {
public:
  template <class Parameters>
  ThermostatIntegrator(const Parameters& parameters, std::string_view name)
      : MomentumIntegrator(parameters), diffusion_(parameters.diffusion),
        thermostat_(parameters.thermostat_start.value_or(parameters.diffusion)) {
    require_parameter(diffusion_ > 0.0, fmt::format("integrator {}", name), "diffusion > 0", diffusion_);
  }
  void save_state(StateWriter& out) const override {
    MomentumIntegrator::save_state(out);
    out.section("thermostat");
    out.number(thermostat_);
  }
  void restore_state(StateReader& in) override {
    MomentumIntegrator::restore_state(in);
    in.section("thermostat");
    thermostat_ = in.number();
  }

protected:
  /// D over t: ξ ← ξ + t (pᵀM⁻¹p/d - T), pᵀM⁻¹p being twice the kinetic energy (a reflection at 0
  /// negates p_j and leaves it alone).
  void adjust_thermostat(const ChainState& state, double t) {
    const double d = static_cast<double>(state.momentum.size());
    thermostat_ += t * (2.0 * kinetic_energy(state.momentum, mass_) / d - temperature_);
  }
  double diffusion_;   // A
  double thermostat_;  // ξ
};

/// SGNHT (Ding, Fang, Babbush, Chen, Skeel & Neven 2014, Algorithm 2; there M = I, T = 1), the
/// Euler step of the thermostat's dynamics:
///   p' = (1 - ξh) p - h ĝ(θ) + sqrt(2AhT) M^{1/2} η,  θ' = θ + h M⁻¹p',  ξ' = ξ + h (p'ᵀM⁻¹p'/d - T),
/// η ~ N(0, I). Biased by O(h), as sghmc's Euler step.
class Sgnht final : public ThermostatIntegrator {
public:
  explicit Sgnht(const SgnhtParameters& parameters) : ThermostatIntegrator(parameters, "sgnht") {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double h = advance(state), noise = std::sqrt(2.0 * diffusion_ * h * temperature_);
    estimator.estimate(state.theta, state.gradient, context);
    euler_momentum(state.momentum, state.gradient, thermostat_ * h, h, noise, mass_, context.rng);
    move(state, h);
    state.gradient_valid = false;
    adjust_thermostat(state, h);
  }
};

/// BADODAB (Leimkuhler & Shang 2016, "Adaptive thermostats for noisy gradient systems", SIAM J.
/// Sci. Comput. 38(2)): the same dynamics as sgnht, split as B(h/2) A(h/2) D(h/2) O(h) D(h/2)
/// A(h/2) B(h/2), with D the thermostat's update over h/2 and O the exact flow of
/// dp = -ξp dt + sqrt(2AT) M^{1/2} dW over h at the current ξ. One gradient per step: the last
/// kick's, at the new θ, is kept for the next step's first (as BAOAB's). Second order, with the
/// superconvergence of BAOAB's configurational averages that Leimkuhler & Shang report.
class Badodab final : public ThermostatIntegrator {
public:
  explicit Badodab(const BadodabParameters& parameters) : ThermostatIntegrator(parameters, "badodab") {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double h = advance(state);
    ensure_gradient(state, estimator, context);
    kick(state.momentum, state.gradient, h / 2);
    move(state, h / 2);
    adjust_thermostat(state, h / 2);
    thermostatted_ornstein_uhlenbeck(state.momentum, thermostat_, diffusion_, temperature_, h, mass_, context.rng);
    adjust_thermostat(state, h / 2);
    move(state, h / 2);
    new_gradient(state, estimator, context);
    kick(state.momentum, state.gradient, h / 2);
  }
};

const std::vector<std::string> schedule_keys = {"step_size",    "scale_step_with_n", "schedule",   "decay_b",
                                                 "decay_c",      "cycle_length",      "temperature"};

std::vector<std::string> with_schedule_keys(std::vector<std::string> keys) {
  keys.insert(keys.begin(), schedule_keys.begin(), schedule_keys.end());
  return keys;
}

/// The schedule's keys, the mass's (mass, metric, mass_ridge, adapt_mass and its windows) and `keys`:
/// those of an integrator with a mass.
std::vector<std::string> with_mass_keys(std::vector<std::string> keys) {
  keys.insert(keys.begin(), {"mass", "metric", "mass_ridge", "adapt_mass", "adapt_init_buffer", "adapt_window",
                             "adapt_term_buffer"});
  return with_schedule_keys(std::move(keys));
}

/// adapt_mass's windows (CmdStan's adapt init_buffer, window and term_buffer): read only with adapt_mass,
/// and refused without it, where they would change nothing.
AdaptationWindows read_adaptation_windows(const Settings& section, bool adapt_mass) {
  AdaptationWindows windows;
  const std::pair<const char*, std::uint64_t*> keys[] = {
      {"adapt_init_buffer", &windows.init_buffer}, {"adapt_window", &windows.window}, {"adapt_term_buffer", &windows.term_buffer}};
  for (const auto& [key, value] : keys) {
    if (!adapt_mass && section.contains(key))
      throw Error(fmt::format("{}: {} sets a window of adapt_mass's adaptation, and adapt_mass is false",
                              section.describe(key), key));
    *value = static_cast<std::uint64_t>(
        section.integer_at_least(key, static_cast<std::int64_t>(*value), std::string_view(key) == "adapt_window" ? 1 : 0));
  }
  return windows;
}

/// What every integrator reads first, in this order: the schedule, the temperature and the mass
/// (one number, an array of d: one per coordinate, or of d² with metric = "dense"; or "fisher",
/// computed at the start, with its `mass_ridge`).
template <class Parameters>
Parameters read_scheduled(const Settings& section) {
  Parameters parameters;
  parameters.schedule = ScheduleParameters::from_settings(section);
  parameters.temperature = section.positive_number("temperature", 1.0);
  const std::string metric = section.text("metric", "diagonal");
  if (metric != "diagonal" && metric != "dense")
    throw Error(fmt::format("{}: expected \"diagonal\" (a mass per coordinate) or \"dense\" (a full mass matrix), "
                            "found \"{}\"",
                            section.describe("metric"), metric));
  const bool fisher = section.contains("mass") && std::holds_alternative<std::string>(section.entries().at("mass").value);
  if (fisher && section.text("mass", "") != "fisher")
    throw Error(fmt::format("{}: expected a number, an array of numbers or \"fisher\" (the empirical Fisher information "
                            "at the chain's start), found \"{}\"",
                            section.describe("mass"), section.text("mass", "")));
  if (!fisher && section.contains("mass_ridge"))
    throw Error(fmt::format("{}: mass_ridge is the ridge of mass = \"fisher\", and the mass here is given",
                            section.describe("mass_ridge")));
  // A dense mass matrix has negative entries off its diagonal: the metric checks it when d is known.
  parameters.mass = fisher ? Mass(1.0)  // where the chain starts; prepare() computes the mass
                    : Mass(metric == "dense" ? section.number_or_numbers("mass", 1.0)
                                             : section.positive_number_or_numbers("mass", 1.0));
  parameters.mass.dense = metric == "dense";
  parameters.mass.fisher = fisher;
  parameters.mass.ridge = section.positive_number("mass_ridge", 1.0);
  parameters.adapt_mass = section.flag("adapt_mass", false);
  parameters.mass.windows = read_adaptation_windows(section, parameters.adapt_mass);
  return parameters;
}

/// `friction`, whose default (Friction) depends on the schedule's first step.
double read_friction(const Settings& section, const ScheduleParameters& schedule) {
  const double gamma = section.number("friction", Friction::default_gamma(StepSchedule(schedule)));
  if (!(gamma > 0.0))
    throw Error(fmt::format("{}: expected a friction γ > 0, found {} (with γ = 0 the momentum is never refreshed and "
                            "the chain does not mix; omit the key for the default γ = {}/step_size)",
                            section.describe("friction"), gamma, Friction::default_per_step));
  return gamma;
}

template <class Parameters>
IntegratorFactory factory() {
  return [](const Settings& section) { return make_integrator(Parameters::from_settings(section)); };
}

}  // namespace integrator_parts

using namespace integrator_parts;

const std::vector<CatalogueEntry<IntegratorFactory>>& integrator_catalogue() {
  static const std::string friction = "friction γ (default 0.1/step_size: γh = 0.1), mass (1, or \"fisher\")";
  static const std::string adapt_step =
      "with corrector mh: adapt_step_size (false: dual averaging of step_size to target_acceptance (0.8) during the "
      "warmup, then frozen; Hoffman & Gelman 2014, Alg. 5)";
  static const std::vector<CatalogueEntry<IntegratorFactory>> catalogue = {
      {"sgld", "overdamped Langevin, θ' = θ - (ε/2)M⁻¹ĝ + sqrt(εT)M^{-1/2}ξ (step_size = ε); mass M (1, or \"fisher\")",
       with_mass_keys({}),
       factory<SgldParameters>(),
       "sgld computes no gradient at its proposal, which the MH energy error needs; use integrator 'mala' (the same "
       "update, step_size = ε, written as OBABO with c = 0)"},
      {"mala", "OBABO with c = 0: SGLD's update with a gradient at the proposal, for MH (step_size = ε = h²); " +
                   adapt_step,
       with_mass_keys({"adapt_step_size", "target_acceptance"}), factory<MalaParameters>()},
      {"obabo", "GGMC / OBABO splitting, each O keeps exp(-γh/2) (step_size = h); keys " + friction + "; " + adapt_step,
       with_mass_keys({"friction", "adapt_step_size", "target_acceptance"}),
       factory<ObaboParameters>()},
      {"baoab", "BAOAB splitting, its O keeps exp(-γh) (step_size = h); keys " + friction + "; " + adapt_step,
       with_mass_keys({"friction", "adapt_step_size", "target_acceptance"}),
       factory<BaoabParameters>()},
      {"hmc",
       "one leapfrog trajectory of `steps` (10) steps per iteration from fresh momentum (step_size = h); " + adapt_step,
       with_mass_keys({"steps", "adapt_step_size", "target_acceptance"}),
       factory<HmcParameters>()},
      {"leapfrog", "the same as hmc",
       with_mass_keys({"steps", "adapt_step_size", "target_acceptance"}),
       factory<HmcParameters>()},
      {"sghmc", "SGHMC, symplectic Euler-Maruyama, momentum decay 1 - γh (step_size = h); keys " + friction,
       with_mass_keys({"friction"}), factory<SghmcParameters>(),
       "sghmc's Euler-Maruyama step has no realisable backward move (its momentum update is not an OU flow composed "
       "with reversible kicks), so every MH acceptance probability is exactly 0 (Garriga-Alonso & Fortuin 2021, "
       "Thm. 1); use 'obabo', which keeps a non-zero acceptance"},
      {"psgld",
       "pSGLD: sgld preconditioned by RMSprop, G = 1/(λ + sqrt(V)), V ← αV + (1-α)ḡ² (Li et al. 2016, Alg. 1, "
       "without Γ: biased while G changes, so it needs run.warmup > 0, after which V is frozen and the chain is sgld "
       "with mass λ + sqrt(V); step_size = their ε); keys alpha (0.99), lambda (1e-5), "
       "freeze_after_warmup (true; false is refused: a V that never freezes leaves a bias no step size removes)",
       with_schedule_keys({"alpha", "lambda", "freeze_after_warmup"}), factory<PsgldParameters>(),
       "psgld computes no gradient at its proposal, and its preconditioner changes with the gradient history (its "
       "chain is biased without the Γ term, which needs second derivatives), so no MH test can correct it; use "
       "'mala' with a mass, or adapt_mass for one learnt during the warmup"},
      {"sgnht",
       "SGNHT: sghmc's Euler step with a thermostat ξ for friction, ξ' = ξ + h(pᵀM⁻¹p/d - T) (Ding et al. 2014, "
       "Alg. 2; step_size = h); keys diffusion A (1), thermostat_start ξ₀ (A), mass (1, or \"fisher\")",
       with_mass_keys({"diffusion", "thermostat_start"}), factory<SgnhtParameters>(),
       "sgnht's Euler-Maruyama momentum step has no realisable backward move, as sghmc's (Garriga-Alonso & Fortuin "
       "2021, Thm. 1), and its thermostat ξ changes with every step's momentum; use 'obabo'"},
      {"badodab",
       "BADODAB: sgnht's thermostat, split B A D O D A B with D the thermostat's half step and O exact at the current ξ "
       "(Leimkuhler & Shang 2016; step_size = h); keys diffusion A (1), thermostat_start ξ₀ (A), mass (1, or \"fisher\")",
       with_mass_keys({"diffusion", "thermostat_start"}), factory<BadodabParameters>(),
       "badodab's O step has the friction ξ but the noise sqrt(2AT), so it keeps N(0, TM) invariant only when ξ = A; "
       "the MH energy error drops every O step as reversible with respect to N(0, TM), which then fails (and ξ, which "
       "its D steps change with the momentum, is state the test does not carry); use 'baoab'"},
  };
  return catalogue;
}

std::unique_ptr<Integrator> make_integrator(const Settings& section) {
  const auto& entry = choose(integrator_catalogue(), section, default_integrator);
  if (section.flag("scale_step_with_n", false))
    throw Error(fmt::format("{}: a step for one data item needs the model's number of items; build the integrator "
                            "with the model (make_chain)",
                            section.describe("scale_step_with_n")));
  return entry.make(section);
}

double step_exponent(const std::string& name) {
  // A Gaussian posterior of curvature λ (which grows like N): SGLD's stationary variance is
  // 1/(λ(1 - ελ/4)), a function of ελ alone, and OBABO's (any friction) 1/(λ(1 - h²λ/4)), of h²λ
  // (modules/README.md, "Step sizes across data sizes"). mala's step_size is ε = h².
  const std::pair<const char*, double> langevin_or_none[] = {{"sgld", 1.0}, {"mala", 1.0}, {"psgld", 0.0}};
  for (const auto& [integrator, exponent] : langevin_or_none)
    if (name == integrator) return exponent;
  return 0.5;
}

std::unique_ptr<Integrator> make_integrator(const Settings& section, std::size_t items) {
  if (!section.flag("scale_step_with_n", false)) return make_integrator(section);
  const auto& entry = choose(integrator_catalogue(), section, default_integrator);
  const double exponent = step_exponent(entry.name);
  if (exponent == 0.0)
    throw Error(fmt::format("{}: {}'s step has no per-item form: its preconditioner G = 1/(λ + sqrt(V)) also "
                            "changes with N, by a power that depends on whether minibatch noise or the gradient "
                            "itself dominates V; give step_size as is, tuned at the data size you run",
                            section.describe("scale_step_with_n"), entry.name));
  if (!section.contains("step_size"))
    throw Error(fmt::format("{}: give integrator.step_size, the step for one data item, which is then divided by "
                            "N^{}",
                            section.describe("scale_step_with_n"), exponent));
  if (items == 0)
    throw Error(fmt::format("{}: the model has no data items to scale the step by", section.describe("scale_step_with_n")));
  const double per_item = section.positive_number("step_size", 1.0);
  Settings scaled = section;
  scaled.set("step_size", {per_item * std::pow(static_cast<double>(items), -exponent),
                           fmt::format("{} (÷ N^{} with N = {})", section.entries().at("step_size").origin, exponent, items)});
  auto integrator = entry.make(scaled);
  section.adopt_reads(scaled);  // every key it read counts as read; step_size stays recorded as given
  return integrator;
}

void check_metric(const Settings& section, const Model& model) {
  const std::size_t d = model.dimension();
  // Read without marking the key as known: an integrator without a metric (psgld) refuses it as unknown.
  const auto* metric = section.contains("metric") ? std::get_if<std::string>(&section.entries().at("metric").value) : nullptr;
  const bool dense = metric && *metric == "dense";
  if (section.contains("mass") && std::holds_alternative<std::string>(section.entries().at("mass").value)) {
    const Capabilities capabilities = model.capabilities();
    if (!capabilities.per_item_gradients && !capabilities.sparse_item_gradients)
      throw Error(fmt::format("{}: the Fisher mass sums ∇f_i ∇f_iᵀ over the items, and this model declares neither "
                              "'per-item-gradients' nor 'sparse-item-gradients' (give the mass, or adapt_mass)",
                              section.describe("mass")));
  }
  if (section.contains("mass")) {
    const auto* array = std::get_if<std::vector<double>>(&section.entries().at("mass").value);
    if (array && array->size() != d && !(dense && array->size() == d * d))
      throw Error(fmt::format("{}: expected one number or an array of d = {} numbers (the model's dimension){}, found "
                              "an array of {}",
                              section.describe("mass"), d,
                              dense ? fmt::format(", or of d² = {} (the mass matrix row by row)", d * d)
                                    : fmt::format(", or of d² = {} with metric = \"dense\"", d * d),
                              array->size()));
    if (array && dense && array->size() == d * d)
      if (const std::string problem = dense_mass_problem(*array, d); !problem.empty())
        throw Error(fmt::format("{}: the mass matrix {}", section.describe("mass"), problem));
  }
  if (!dense) return;
  if (d > dense_metric_limit)
    throw Error(fmt::format("{}: a dense metric holds d² numbers and costs d² operations per use; the model has d = {} "
                            "coordinates, above the limit of {} (use metric = \"diagonal\")",
                            section.describe("metric"), d, dense_metric_limit));
  if (model.capabilities().positive_parameters)
    throw Error(fmt::format("{}: this model's parameters are positive, and the integrators reflect a coordinate that "
                            "crosses 0, which keeps the kinetic energy ½mᵀM⁻¹m only for a diagonal M (use metric = "
                            "\"diagonal\")",
                            section.describe("metric")));
}

/// `adapt_step_size` and `target_acceptance` of the integrators an MH test can follow. The
/// refusals that need more than this section (no MH corrector, no warmup) are the assembly's and
/// the chain's.
StepAdaptation read_step_adaptation(const Settings& section, const ScheduleParameters& schedule) {
  StepAdaptation adaptation;
  adaptation.adapt = section.flag("adapt_step_size", false);
  adaptation.target_acceptance = section.number("target_acceptance", adaptation.target_acceptance);
  if (!(adaptation.target_acceptance > 0.0 && adaptation.target_acceptance < 1.0))
    throw Error(fmt::format("{}: expected 0 < target_acceptance < 1 (the mean MH acceptance probability the step "
                            "size is adapted to), found {}",
                            section.describe("target_acceptance"), adaptation.target_acceptance));
  if (adaptation.adapt && schedule.schedule != ScheduleKind::constant)
    throw Error(fmt::format("{}: adapt_step_size = true needs integrator.schedule = \"constant\": the adaptation "
                            "chooses the one step the run then keeps, and a schedule would change it again",
                            section.describe("adapt_step_size")));
  return adaptation;
}

SgldParameters SgldParameters::from_settings(const Settings& section) { return read_scheduled<SgldParameters>(section); }
MalaParameters MalaParameters::from_settings(const Settings& section) {
  auto parameters = read_scheduled<MalaParameters>(section);
  parameters.step_adaptation = read_step_adaptation(section, parameters.schedule);
  return parameters;
}

ObaboParameters ObaboParameters::from_settings(const Settings& section) {
  auto parameters = read_scheduled<ObaboParameters>(section);
  parameters.friction = read_friction(section, parameters.schedule);
  parameters.step_adaptation = read_step_adaptation(section, parameters.schedule);
  return parameters;
}

BaoabParameters BaoabParameters::from_settings(const Settings& section) {
  auto parameters = read_scheduled<BaoabParameters>(section);
  parameters.friction = read_friction(section, parameters.schedule);
  parameters.step_adaptation = read_step_adaptation(section, parameters.schedule);
  return parameters;
}

HmcParameters HmcParameters::from_settings(const Settings& section) {
  auto parameters = read_scheduled<HmcParameters>(section);
  parameters.steps = static_cast<std::size_t>(section.integer_at_least("steps", 10, 1));
  parameters.step_adaptation = read_step_adaptation(section, parameters.schedule);
  return parameters;
}

SghmcParameters SghmcParameters::from_settings(const Settings& section) {
  auto parameters = read_scheduled<SghmcParameters>(section);
  parameters.friction = read_friction(section, parameters.schedule);
  // Every schedule takes its largest step first (schedule.at(1)), so one check covers the run.
  if (const double decay = *parameters.friction * StepSchedule(parameters.schedule).at(1); !(decay < 1.0))
    throw Error(fmt::format("{}: friction × step size = {} must be below 1, or sghmc's momentum decay 1 - γh flips "
                            "the momentum's sign every step; choose a smaller friction or step_size",
                            section.describe("friction"), decay));
  return parameters;
}

PsgldParameters PsgldParameters::from_settings(const Settings& section) {
  PsgldParameters parameters;
  parameters.schedule = ScheduleParameters::from_settings(section);
  parameters.temperature = section.positive_number("temperature", 1.0);
  parameters.alpha = section.number("alpha", parameters.alpha);
  if (!(parameters.alpha >= 0.0 && parameters.alpha < 1.0))
    throw Error(fmt::format("{}: expected 0 <= alpha < 1 (the weight of the past in V's moving average), found {}",
                            section.describe("alpha"), parameters.alpha));
  parameters.lambda = section.positive_number("lambda", parameters.lambda);
  parameters.freeze_after_warmup = section.flag("freeze_after_warmup", parameters.freeze_after_warmup);
  return parameters;
}

/// sgnht's and badodab's keys: the schedule, temperature and mass, then `diffusion` and `thermostat_start`.
template <class Parameters>
Parameters read_thermostat(const Settings& section) {
  auto parameters = read_scheduled<Parameters>(section);
  // A = 0 leaves only the minibatch noise: with exact gradients, deterministic Nosé–Hoover dynamics,
  // which are not ergodic.
  parameters.diffusion = section.positive_number("diffusion", parameters.diffusion);
  parameters.thermostat_start = section.number("thermostat_start", parameters.diffusion);
  return parameters;
}

SgnhtParameters SgnhtParameters::from_settings(const Settings& section) { return read_thermostat<SgnhtParameters>(section); }
BadodabParameters BadodabParameters::from_settings(const Settings& section) {
  return read_thermostat<BadodabParameters>(section);
}

std::unique_ptr<Integrator> make_integrator(const SgldParameters& parameters) {
  return std::make_unique<Sgld>(parameters);
}
std::unique_ptr<Integrator> make_integrator(const MalaParameters& parameters) {
  return std::make_unique<Obabo>(parameters);
}
std::unique_ptr<Integrator> make_integrator(const ObaboParameters& parameters) {
  return std::make_unique<Obabo>(parameters);
}
std::unique_ptr<Integrator> make_integrator(const BaoabParameters& parameters) {
  return std::make_unique<Baoab>(parameters);
}
std::unique_ptr<Integrator> make_integrator(const HmcParameters& parameters) { return std::make_unique<Hmc>(parameters); }
std::unique_ptr<Integrator> make_integrator(const SghmcParameters& parameters) {
  return std::make_unique<Sghmc>(parameters);
}
std::unique_ptr<Integrator> make_integrator(const PsgldParameters& parameters) {
  return std::make_unique<Psgld>(parameters);
}
std::unique_ptr<Integrator> make_integrator(const SgnhtParameters& parameters) {
  return std::make_unique<Sgnht>(parameters);
}
std::unique_ptr<Integrator> make_integrator(const BadodabParameters& parameters) {
  return std::make_unique<Badodab>(parameters);
}

}  // namespace sgmcmc
