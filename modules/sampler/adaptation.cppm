// The warmup's adaptation, owned by the chain, not by the integrator it adapts.
//
// Design. An integrator keeps its schedule, temperature and mass M and runs a step; it adapts
// nothing. Its configuration (integrator.adapt_mass and its windows, adapt_step_size,
// target_acceptance) says what is to be adapted, which the integrator hands on as
// Integrator::adaptation(). The chain owns one Adaptation built from that and calls it after the
// decision of every corrector block of the warmup, with the block's Decision (the MH test's
// acceptance probability) and the block's end state (θ, for the mass). It has two parts:
//   - a step controller: dual averaging of the step to a target acceptance (DualAveraging), the
//     step frozen at the averaged iterate when the warmup ends;
//   - a mass adapter: Stan's windows of draws, each closing with a regularised covariance
//     estimate (MassAdaptation).
// It acts on the integrator through two setters only, Integrator::set_step_size and
// Integrator::set_adapted_mass (which carries the momentum to the new mass), and keeps its own
// state in the checkpoint, in the part "adaptation" after the integrator's (written only when
// something adapts, so a checkpoint of a chain without adaptation reads as before). The mass it
// set is the integrator's state and is saved by the integrator.
module;
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>
export module sgmcmc.adaptation;
export import sgmcmc.sampler;

export namespace sgmcmc {

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
  void restart(double step);
  /// One MH test's acceptance probability α (clipped to [0, 1]; NaN counts as 0); returns the next step h_m.
  double learn(double accept_stat, double target);
  /// h̄ after at least one test; `current` before any (just restarted).
  double averaged(double current) const;
  void save(StateWriter& out) const;
  void restore(StateReader& in);

private:
  double mu_ = 0.0, h_bar_ = 0.0, log_averaged_ = 0.0;  // μ, H̄_m, log h̄_m
  std::uint64_t count_ = 0;                            // m
};

/// Stan's windowed adaptation of the metric (Stan Development Team, Stan Reference Manual, "HMC
/// algorithm parameters: automatic parameter tuning"; the window rules and the shrinkage as Stan's
/// windowed_adaptation, var_adaptation and covar_adaptation apply them, no code taken) for a
/// warmup of W iterations: an initial fast interval (init_buffer, 75 by default) in which the chain
/// only finds the typical set, then slow windows (window, 25) doubling in length, the last one
/// stretched to the start of a terminal interval (term_buffer, 50) whenever the next window would
/// not fit twice. A warmup shorter than the three together is split 15 % / 75 % / 10 %; one below
/// 20 iterations is not adapted. At the end of each slow window the metric becomes the regularised covariance
/// of the window's n draws, shrunk towards 10⁻³ I:
///   diagonal  M_j⁻¹ = n/(n + 5) s_j² + 10⁻³ · 5/(n + 5)   (s_j² the sample variance of θ_j),
///   dense     M⁻¹  = n/(n + 5) S + 10⁻³ · 5/(n + 5) I     (S the sample covariance),
/// and the window's statistics restart. Draws are the states at the ends of corrector blocks,
/// iterations count from 1 (a window ends at the first block end at or after its last iteration).
class MassAdaptation {
public:
  explicit MassAdaptation(bool dense = false, AdaptationWindows windows = {}) : dense_(dense), windows_(windows) {}
  /// θ at the end of the block that ended at `iteration` (<= warmup); the new metric when a slow
  /// window closes there, in Integrator::set_adapted_mass's form: d numbers of M, or d² of M⁻¹ (dense).
  std::optional<std::vector<double>> observe(std::uint64_t iteration, std::uint64_t warmup,
                                             std::span<const double> theta);
  void save(StateWriter& out) const;
  void restore(StateReader& in);

private:
  void plan(std::uint64_t warmup);
  void add(std::span<const double> theta);
  void restart();
  void next_window();
  std::vector<double> regularised() const;

  bool dense_;
  AdaptationWindows windows_;
  bool planned_ = false, done_ = false;
  std::uint64_t fast_end_ = 0, slow_end_ = 0, window_size_ = 0, window_end_ = 0;  // iterations
  std::uint64_t count_ = 0;                                                       // draws in the window
  std::vector<double> mean_;
  std::vector<double> squares_;  // Σ (θ - θ̄)(θ - θ̄)ᵀ: d numbers (diagonal) or d² (dense)
  std::vector<double> before_;   // add()'s scratch: θ - θ̄ before the update
};

/// The chain's adaptation of its integrator during the warmup (the design above).
class Adaptation {
public:
  /// `integrator` is the one it adapts, owned by the same chain (so it outlives this object).
  explicit Adaptation(Integrator& integrator);
  const AdaptationSettings& settings() const { return settings_; }
  /// After the decision of a block that ended at state.iteration, for a warmup of `warmup`
  /// iterations (nothing after it). With adapt_step_size: first one dual-averaging update from
  /// the block's acceptance probability, then the mass's (when a window closes, the dual averaging
  /// restarts from the current step, as Stan's does after a metric update); the block that ends
  /// the warmup freezes the step at the averaged h̄, so the sampling phase is a fixed kernel. With
  /// adapt_mass: a new mass at the end of each slow window, the momentum carried with it.
  void after_block(ChainState& state, std::uint64_t warmup, const Decision& decision);
  /// The step frozen at the end of the warmup; none when the step is not adapted or the warmup
  /// has not ended.
  std::optional<double> adapted_step_size() const;
  /// Checkpoints: the part "adaptation" (nothing when nothing adapts). Restoring gives the
  /// integrator back the step in use.
  void save_state(StateWriter& out) const;
  void restore_state(StateReader& in);

private:
  Integrator& integrator_;
  AdaptationSettings settings_;
  MassAdaptation mass_;
  DualAveraging dual_averaging_;
  double step_;  // with adapt_step_size: the step in use (h_m during the warmup, h̄ after it)
  bool step_frozen_ = false;
};

}  // namespace sgmcmc
