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
//     estimate (MassAdaptation) when an MH test corrects the chain; without one, the same windows
//     closing with a regularised second moment of the chain's gradients (the score-based estimate,
//     MassAdaptation's `scores`), whose feedback on the chain's own spread is negative.
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
///
/// With `scores` (the chains without an MH corrector) the same windows hold the chain's gradient
/// estimates ĝ instead of its draws, and M itself becomes their second moment at the temperature T
/// (the Fisher identity: under π ∝ exp(-U/T), E_π[∇U ∇Uᵀ] = T E_π[∇²U], the mass = "fisher"
/// matrix's expectation), shrunk towards the mass M₀ in use during the window with ν pseudo-draws:
///   M = (n Ĝ/T + ν M₀)/(n + ν),   Ĝ = (1/n) Σ ĝ ĝᵀ (its diagonal, diagonal metric),
/// ν = 5 (diagonal, Stan's 5) or d + 5 (dense: so that a window of fewer than d draws, whose Ĝ is
/// singular, cannot shrink M, and so grow the step, by more than a factor (n + ν)/ν in the directions
/// it did not explore). A fixed point of the unshrunk map is one of the shrunk map: the shrinkage
/// slows the adaptation, it does not move where it settles. Why not the draws' covariance there: an
/// uncorrected Langevin chain's spread includes its discretisation's inflation, and a larger M⁻¹ is a
/// larger step, which inflates the next window more (positive feedback: SGLD on a Gaussian has no
/// fixed point beyond ε = 1 in the posterior's units); the gradients' second moment grows with the
/// spread, so a wider window gives a larger M, a smaller step (negative feedback; modules/README.md,
/// "Mass adaptation without an MH test", derives both maps).
class MassAdaptation {
public:
  explicit MassAdaptation(bool dense = false, AdaptationWindows windows = {}, bool scores = false,
                          double temperature = 1.0)
      : dense_(dense), scores_(scores), temperature_(temperature), windows_(windows) {}
  /// Stan's adaptation (not `scores`): θ at the end of the block that ended at `iteration`
  /// (<= warmup); the new metric when a slow window closes there, in Integrator::set_adapted_mass's
  /// form: d numbers of M, or d² of M⁻¹ (dense).
  std::optional<std::vector<double>> observe(std::uint64_t iteration, std::uint64_t warmup,
                                             std::span<const double> theta);
  /// Either adaptation in two parts: the sample of the block that ended at `iteration` (θ, or with
  /// `scores` the last gradient estimate ĝ the integrator computed in the block); true when a slow
  /// window closes there, whose metric close_window() then gives (none from fewer than 2 samples).
  bool add_sample(std::uint64_t iteration, std::uint64_t warmup, std::span<const double> sample);
  /// With `scores`: M itself, d or d² numbers (set_adapted_precision's form), from `in_use`, the mass
  /// M₀ of the window (Integrator::adapted_mass()); otherwise observe()'s form, `in_use` unread.
  std::optional<std::vector<double>> close_window(std::span<const double> in_use);
  bool scores() const { return scores_; }
  void save(StateWriter& out) const;
  void restore(StateReader& in);

private:
  void plan(std::uint64_t warmup);
  void add(std::span<const double> theta);
  void restart();
  void next_window();
  std::vector<double> regularised() const;
  std::vector<double> shrunk_scores(std::span<const double> in_use) const;

  bool dense_;
  bool scores_;
  double temperature_;
  AdaptationWindows windows_;
  bool planned_ = false, done_ = false;
  std::uint64_t fast_end_ = 0, slow_end_ = 0, window_size_ = 0, window_end_ = 0;  // iterations
  std::uint64_t count_ = 0;                                                       // draws in the window
  std::vector<double> mean_;
  std::vector<double> squares_;  // Σ (x - x̄)(x - x̄)ᵀ of the samples x (θ or ĝ): d numbers (diagonal) or d² (dense)
  std::vector<double> before_;   // add()'s scratch: θ - θ̄ before the update
};

/// The chain's adaptation of its integrator during the warmup (the design above).
class Adaptation {
public:
  /// `integrator` is the one it adapts, owned by the same chain (so it outlives this object).
  /// `mh_corrected`: an MH test follows the integrator's blocks (Stan's covariance of the draws);
  /// otherwise the mass is adapted from the gradients' second moment (MassAdaptation's `scores`).
  Adaptation(Integrator& integrator, bool mh_corrected);
  const AdaptationSettings& settings() const { return settings_; }
  /// After the decision of a block that ended at state.iteration, for a warmup of `warmup`
  /// iterations (nothing after it). With adapt_step_size: first one dual-averaging update from
  /// the block's acceptance probability, then the mass's (when a window closes, the dual averaging
  /// restarts from the current step, as Stan's does after a metric update); the block that ends
  /// the warmup freezes the step at the averaged h̄, so the sampling phase is a fixed kernel. With
  /// adapt_mass: a new mass at the end of each slow window, the momentum carried with it (the
  /// window's samples: the block's end θ, or without an MH test its last gradient estimate).
  void after_block(ChainState& state, std::uint64_t warmup, const Decision& decision);
  /// The step frozen at the end of the warmup; none when the step is not adapted or the warmup
  /// has not ended.
  std::optional<double> adapted_step_size() const;
  /// Checkpoints: the part "adaptation" (nothing when nothing adapts). Restoring gives the
  /// integrator back the step in use.
  void save_state(StateWriter& out) const;
  void restore_state(StateReader& in);

private:
  /// The block's sample into the mass's window; the window's new mass when it closes.
  std::optional<std::vector<double>> next_mass(const ChainState& state, std::uint64_t warmup);

  Integrator& integrator_;
  AdaptationSettings settings_;
  MassAdaptation mass_;
  DualAveraging dual_averaging_;
  double step_;  // with adapt_step_size: the step in use (h_m during the warmup, h̄ after it)
  bool step_frozen_ = false;
};

}  // namespace sgmcmc
