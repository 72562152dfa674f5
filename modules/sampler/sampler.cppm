// The sampler's shared vocabulary: the state a chain carries, the cost it pays, the context its
// parts share, and the three interfaces a chain composes (Estimator, Integrator, Corrector). The
// components (estimators/, integrators/, correctors/) import this module and the model, never
// each other, so any estimator runs with any integrator and any corrector.
module;
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>
export module sgmcmc.sampler;
export import sgmcmc.model;
export import sgmcmc.catalogue;

export namespace sgmcmc {

/// Work a chain has paid for: item gradients ∇f_i evaluated and full data passes among them.
struct Cost {
  std::uint64_t item_gradients = 0;
  std::uint64_t full_passes = 0;
};

/// What the parts of one chain share: the model, the chain's workspace, random stream and cost.
struct ChainContext {
  const Model& model;
  Workspace& workspace;
  Rng& rng;
  Cost& cost;
  /// The chain's iteration whose step asks for the estimate (ChainState::iteration; 0 while the
  /// estimator prepares). Estimators that refresh on a period (svrg's snapshot) count
  /// iterations with it, not calls: an hmc iteration makes `steps` estimates.
  std::uint64_t iteration = 0;
  /// Ctrl-C or SIGTERM (ChainSchedule::stop_requested), for work before the first iteration that
  /// can take long (cv's centring phase): it polls the flag at every step and throws
  /// StopRequested once it is set, as the chain loop stops at the next block's end.
  const std::atomic<bool>* stop_requested = nullptr;
};

/// Thrown by a chain's preparation (before its first iteration) when a stop was requested;
/// Chain::run ends the chain there, interrupted at iteration 0 with no checkpoint, so that a
/// resumed run starts that chain afresh.
struct StopRequested {};

/// Throws StopRequested when `context`'s stop flag is set.
inline void throw_if_stop_requested(const ChainContext& context) {
  if (context.stop_requested && context.stop_requested->load(std::memory_order_relaxed)) throw StopRequested{};
}

/// What a chain carries from step to step.
struct ChainState {
  std::uint64_t iteration = 0;  // of the step being made, from 1
  std::vector<double> theta;
  std::vector<double> momentum;  // empty for integrators without momentum
  /// An estimate ĝ(θ) at the current θ, when `gradient_valid`. The Hamiltonian splittings reuse
  /// it as the first kick of the next step, so each point's gradient is the *same vector* on both
  /// of its sides (what the MH energy error of Garriga-Alonso & Fortuin 2021, §4, needs); anything
  /// that moves θ outside an integrator (a model's after_step, an MH rejection that restores no
  /// gradient) clears the flag.
  std::vector<double> gradient;
  bool gradient_valid = false;
  /// The integrator's share of the MH energy error ΔH̃ over the current block: the sum over the
  /// block's deterministic, volume-preserving, reversible parts (each half kick B; a drift A,
  /// reflected or not, leaves ½ mᵀM⁻¹m alone) of their change of kinetic energy ½ mᵀM⁻¹m. With
  /// one gradient per point this equals Garriga-Alonso & Fortuin (2021, §4)'s
  ///   -(h/2) Σ_k ⟨g_k + g_{k+1}, M⁻¹ m_{k+1/2}⟩ + (h²/8)(‖g_K‖²_{M⁻¹} - ‖g_0‖²_{M⁻¹}),
  /// since each BAB changes ½mᵀM⁻¹m by -(h/2)⟨g_k + g_{k+1}, M⁻¹m_{k+1/2}⟩ + (h²/8)(‖g_{k+1}‖² - ‖g_k‖²).
  /// The O parts are reversible with respect to N(0, TM) and drop out. A corrector adds
  /// U(θ_K) - U(θ_0) and never needs to know how an integrator made the sum.
  double energy_error = 0.0;
  /// The model's parameters are positive (capability `positive-parameters`): every drift reflects
  /// θ at 0 and negates the momentum of each reflected coordinate, and SGLD's update reflects θ
  /// (Patterson & Teh 2013, mirroring; Neal 2011, §5.5.1.5, for the momentum). The reflection is
  /// part of the position update, so every gradient is taken at a positive θ, and the reflected
  /// drift stays volume-preserving and reversible under a momentum flip, as the MH test needs.
  bool reflect_at_zero = false;
};

/// The float chain's state (run.chain_precision = "float"): θ and the gradient estimate in float,
/// the per-coordinate work of a step done on them. ChainState's θ is then a copy in double (exact:
/// every float is a double) that the chain makes where something reads it (draws, metrics,
/// checkpoints, the end), and a checkpoint's θ read back rounds to the same floats.
struct FloatChainState {
  std::vector<float> theta;
  std::vector<float> gradient;
  /// The divergence bound the chain checks every θ_j against (|θ_j| <= bound, false for NaN/Inf),
  /// and whether the last step left a coordinate beyond it: the check is fused with the move.
  float bound = 0.0f;
  bool beyond = false;
};

class Estimator {
public:
  virtual ~Estimator() = default;
  /// Work before the first iteration (control variates find their centre here); may move the
  /// starting point θ.
  virtual void prepare(std::span<double> /*theta*/, ChainContext& /*context*/) {}
  /// gradient ← an unbiased estimate of ∇U(θ).
  virtual void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) = 0;
  /// Checkpoints (sgmcmc.state): what carries from one estimate to the next (a centre and its
  /// full gradient, a snapshot, a table; a minibatch draw keeps nothing). A restored estimator
  /// continues as if prepare() and every earlier estimate had run. By default there is none.
  virtual void save_state(StateWriter& /*out*/) const {}
  virtual void restore_state(StateReader& /*in*/) {}
  /// The model's data terms f_i changed (Model::after_step returned TargetChange::data): sums of
  /// ∇f_i kept from before (a centre's full gradient, a SAGA table) belong to another target.
  virtual void data_terms_changed(std::span<const double> /*theta*/, ChainContext& /*context*/) {}
  /// What prepare() chose for itself (the SGD centre's first step, the curvature it estimated),
  /// by name, for the run's manifest: a setting of 0 meaning "automatic" is not what ran.
  virtual std::vector<std::pair<std::string, double>> choices() const { return {}; }
  /// The float chain (run.chain_precision = "float"): why this estimator has no float path (empty:
  /// it has), and gradient ← the estimate at θ in float, drawing what estimate() would draw.
  virtual std::string float_refusal() const { return "it keeps sums of item gradients in double; use minibatch or exact"; }
  virtual void estimate_float(std::span<const float> /*theta*/, std::span<float> /*gradient*/, ChainContext& /*context*/) {}
};

/// The intervals of Stan's windowed adaptation of the mass (MassAdaptation, sgmcmc.adaptation), in
/// iterations: CmdStan's adapt init_buffer, window and term_buffer (integrator.adapt_init_buffer,
/// adapt_window, adapt_term_buffer).
struct AdaptationWindows {
  std::uint64_t init_buffer = 75;  // the fast interval: the chain finds its typical set
  std::uint64_t window = 25;       // the first slow window; each next one is twice as long
  std::uint64_t term_buffer = 50;  // the terminal interval (the step size settles at the final metric)
};

/// Step-size adaptation by dual averaging (Hoffman & Gelman 2014, Alg. 5, after Nesterov 2009) to
/// a target acceptance of the MH test, during the warmup; the step is then frozen at the averaged
/// iterate. Only for the integrators an MH test can follow (mala, obabo, baoab, ubu, hmc, leapfrog);
/// the assembly refuses it without an MH corrector, the chain without a warmup.
struct StepAdaptation {
  bool adapt = false;              // integrator.adapt_step_size
  double target_acceptance = 0.8;  // δ: integrator.target_acceptance
};

/// What an integrator's configuration asks the chain's Adaptation (sgmcmc.adaptation) to adapt
/// during the warmup: its mass (adapt_mass, in `windows`, diagonal or `dense`) and its step size.
/// The keys are the integrator's; the adapting is the chain's.
struct AdaptationSettings {
  bool mass = false;  // integrator.adapt_mass
  bool dense = false;  // integrator.metric = "dense"
  AdaptationWindows windows = {};
  StepAdaptation step = {};
  double first_step = 0.0;  // the step the dual averaging starts from (integrator.step_size, scaled)
  bool any() const { return mass || step.adapt; }
};

struct Decision {
  double accept_stat = 1.0;   // acceptance probability of the block (Stan CSV's accept_stat__)
  bool accepted = true;
  double delta_energy = 0.0;  // ΔH̃ of the block
  bool non_finite = false;    // the proposal's potential or ΔH̃ was NaN/Inf: rejected
};

class Integrator {
public:
  virtual ~Integrator() = default;
  /// Sizes the state for dimension d (and draws the first momentum ~ N(0, TM) where there is one).
  virtual void initialise(ChainState& state, std::size_t dimension, Rng& /*rng*/) {
    state.theta.resize(dimension);
    state.gradient.resize(dimension);
  }
  /// Work before the first iteration, after the estimator's prepare() (so at cv's centre): an
  /// integrator whose mass is computed from the target (integrator.mass = "fisher") computes it here.
  /// Not called on resume: what it computed is in the checkpoint.
  virtual void prepare(ChainState& /*state*/, ChainContext& /*context*/) {}
  /// One step from state.theta (and momentum) at iteration state.iteration; `estimator` gives
  /// every gradient the step needs.
  virtual void step(ChainState& state, Estimator& estimator, ChainContext& context) = 0;
  /// The step size of the last step, as written in Stan CSV's stepsize__.
  virtual double step_size() const = 0;
  virtual double temperature() const { return 1.0; }
  /// False when a schedule changes the step size from step to step.
  virtual bool constant_step_size() const { return true; }
  /// Checkpoints: state of the integrator itself between steps. θ, the momentum and the kept
  /// gradient are ChainState, which the chain saves; restore_state follows initialise().
  virtual void save_state(StateWriter& /*out*/) const {}
  virtual void restore_state(StateReader& /*in*/) {}
  /// What the chain's Adaptation is to adapt (nothing by default). It acts on the integrator only
  /// through the two setters below, which it calls only when asked to adapt that.
  virtual AdaptationSettings adaptation() const { return {}; }
  /// The step of the iterations from now on (adapt_step_size; the schedule is then constant), in
  /// the units of integrator.step_size.
  virtual void set_step_size(double /*step*/) {}
  /// A window's new mass (adapt_mass): d numbers of M, or d² of M⁻¹ row by row (dense, the
  /// regularised covariance); `state`'s momentum, m ~ N(0, T M_old), is carried to N(0, T M_new).
  virtual void set_adapted_mass(std::vector<double> /*adapted*/, ChainState& /*state*/) {}
  /// A window's new mass given as M itself, d numbers or d² row by row (dense): the score-based
  /// adaptation of a chain without an MH corrector (sgmcmc.adaptation); the momentum is carried as
  /// by set_adapted_mass.
  virtual void set_adapted_precision(std::vector<double> /*mass*/, ChainState& /*state*/) {}
  /// Called after the decision of the block that ends the warmup: a kernel that changes during the
  /// warmup of its own accord (psgld's preconditioner) is frozen here.
  virtual void end_warmup() {}
  /// The mass learnt from the target, adapted during the warmup or computed by prepare() (d numbers,
  /// or d² row by row for a dense metric), or empty when the mass is given.
  virtual std::vector<double> adapted_mass() const { return {}; }
  /// Why this integrator cannot target π with a warmup of `warmup` iterations (empty: it can).
  /// One whose kernel changes until the end of the warmup freezes it needs a warmup that ends.
  virtual std::string warmup_refusal(std::uint64_t /*warmup*/) const { return {}; }
  /// The kinetic temperature pᵀM⁻¹p/d of `state`'s momentum under the mass in use now (the
  /// adapted one after adapt_mass), which is T for momentum ~ N(0, TM); none for an integrator
  /// without a momentum of its own (sgld, psgld, and mala, hmc and leapfrog, whose momentum is
  /// redrawn whole every step). Read at the ends of corrector blocks (run.temperatures; modules/README.md,
  /// "Temperatures").
  virtual std::optional<double> kinetic_temperature(const ChainState& /*state*/) const { return std::nullopt; }
  /// The float chain (run.chain_precision = "float"): why this integrator, with its settings, has
  /// no float path (empty: it has), and one step of `floats` (θ and gradient in float; `state`
  /// gives the iteration) that sets floats.beyond when a coordinate of the new θ is beyond
  /// floats.bound.
  virtual std::string float_refusal() const { return "only sgld has a float path"; }
  virtual void step_float(ChainState& /*state*/, FloatChainState& /*floats*/, Estimator& /*estimator*/,
                          ChainContext& /*context*/) {}
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

/// Whether every value is finite (a diverged chain, a failed SGD centre, a non-finite gradient).
inline bool all_finite(std::span<const double> values) {
  return std::all_of(values.begin(), values.end(), [](double x) { return std::isfinite(x); });
}

/// θ ← |θ|: the mirroring that keeps a model's positive parameters positive after a move without
/// momentum (Patterson & Teh 2013): SGLD's update and the SGD centring phase.
inline void mirror_positive(std::span<double> theta) {
  for (double& x : theta) x = std::abs(x);
}

}  // namespace sgmcmc
