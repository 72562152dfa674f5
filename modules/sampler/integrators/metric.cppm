// The mass matrix M of the integrators: the kinetic energy ½mᵀM⁻¹m of those with a momentum, the
// preconditioner M⁻¹ of sgld and mala. Diagonal (one number per coordinate, Stan's diag_e) or dense
// (Stan's dense_e: M⁻¹ close to the posterior covariance makes a posterior whose directions
// differ in scale and are correlated look like a unit normal to the integrator). Given, or adapted
// during the warmup in Stan's windows (the chain's MassAdaptation, sgmcmc.adaptation), or computed
// before the first iteration from the empirical Fisher information of the data terms (fisher_mass).
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.integrators:metric;
import sgmcmc.error;
import sgmcmc.model;
import sgmcmc.state;
import sgmcmc.settings;
import sgmcmc.fields;
import sgmcmc.sampler;  // AdaptationWindows

export namespace sgmcmc {

/// The mass M as configured: one number for every coordinate, d numbers (a diagonal), or, with
/// `dense` (integrator.metric = "dense"), d² numbers, M row by row, symmetric positive definite.
/// Implicit from a number, so `.mass = 2.0` reads as before there were vectors.
struct Mass {
  Mass(double every = 1.0) : values{every} {}  // NOLINT(google-explicit-constructor)
  Mass(std::vector<double> each) : values(std::move(each)) {}  // NOLINT(google-explicit-constructor)
  std::vector<double> values;
  bool dense = false;
  /// integrator.mass = "fisher": computed at the chain's start (fisher_mass), `ridge` on its diagonal.
  bool fisher = false;
  double ridge = 1.0;
  /// With adapt_mass: the windows the chain's adaptation adapts it in.
  AdaptationWindows windows = {};
};

/// The keys of the mass: metric, mass (one number, an array of d: one per coordinate, or of d² with
/// metric = "dense"; or "fisher", computed at the start) and mass_ridge, in that order. The windows'
/// keys are adapt_mass's (adaptation_window_fields), which lives beside the mass in the parameters.
const FieldTable<Mass>& mass_fields();

/// adapt_init_buffer, adapt_window and adapt_term_buffer.
const FieldTable<AdaptationWindows>& adaptation_window_fields();

/// The empirical Fisher information of the data terms at θ, plus a ridge r on the diagonal:
///   M = Σ_i ∇f_i(θ) ∇f_i(θ)ᵀ + r I,
/// d² numbers row by row (dense) or its diagonal (d numbers). Near the posterior mode of a model
/// that fits its data, E[∇f_i ∇f_iᵀ] = E[∇²f_i] (the information identity), so M approximates the
/// posterior precision (the Laplace approximation's) from one pass of per-item gradients, with no
/// second derivative (Ahn, Korattikara & Welling 2012 precondition stochastic gradient Fisher scoring
/// with the same matrix). The ridge stands in for the prior's curvature, which the data
/// terms lack: along a direction the data do not identify the Fisher matrix is 0 and the prior
/// alone holds θ (a Laplace prior of scale b has variance 2b², so r ≈ 1/(2b²) there). Needs the
/// model's per-item gradients, dense or sparse (capability `per-item-gradients` or
/// `sparse-item-gradients`).
std::vector<double> fisher_mass(const Model& model, std::span<const double> theta, Workspace& workspace, bool dense,
                                double ridge);

/// A dense metric needs d² numbers and d² operations per use: refused above this dimension.
inline constexpr std::size_t dense_metric_limit = 1000;

/// Why the d × d matrix `m` (row by row) cannot be a mass matrix ("is not symmetric: ...", "is not
/// positive definite ..."), or "" if it can.
std::string dense_mass_problem(std::span<const double> m, std::size_t d);

/// M as the integrators use it. Diagonal: M⁻¹, M^{1/2} and M^{-1/2} per coordinate. Dense: the lower
/// Cholesky factor K of M⁻¹ = KKᵀ, so that, for ξ ~ N(0, I),
///   M⁻¹v = K(Kᵀv),   ½vᵀM⁻¹v = ½|Kᵀv|²,   K⁻ᵀξ ~ N(0, M),   Kξ ~ N(0, M⁻¹).
/// (K⁻ᵀK⁻¹ = (KKᵀ)⁻¹ = M.) Factoring M⁻¹ rather than M makes the adapted metric, whose M⁻¹ is a
/// covariance, a factorisation without an inversion, and the per-step products triangular.
class Metric {
public:
  explicit Metric(const Mass& mass);
  /// integrator.mass = "fisher": the integrator computes the mass at the chain's start (set_mass).
  bool fisher() const { return fisher_; }
  double ridge() const { return ridge_; }
  /// Expands the configured mass to d coordinates; a dense one is factored here, refused (naming
  /// integrator.mass) unless symmetric positive definite.
  void resize(std::size_t dimension);
  bool dense() const { return dense_; }
  /// M = I as configured (the default mass 1): the float chain's sgld has no other.
  bool unit() const {
    return !dense_ && !fisher_ && std::all_of(given_.begin(), given_.end(), [](double m) { return m == 1.0; });
  }
  std::size_t dimension() const { return dimension_; }

  // Diagonal only: the numbers per coordinate.
  std::span<const double> inverse() const { return inverse_; }
  std::span<const double> sqrt() const { return sqrt_; }
  std::span<const double> inverse_sqrt() const { return inverse_sqrt_; }

  // Dense only (K as above); each writes into `out` or transforms in place.
  void times_inverse(std::span<const double> v, std::span<double> out) const;  // M⁻¹v
  double half_inverse_norm(std::span<const double> v) const;                   // ½vᵀM⁻¹v
  void correlate_as_mass(std::span<double> xi) const;                          // ξ ← K⁻ᵀξ ~ N(0, M)
  void correlate_as_inverse(std::span<double> xi) const;                       // ξ ← Kξ ~ N(0, M⁻¹)

  /// The adapted metric of a window: d numbers of M (diagonal) or d² of M⁻¹, the regularised
  /// covariance (dense). The momentum m ~ N(0, T M_old) is carried to N(0, T M_new): whitened by the
  /// old metric and coloured by the new one (diagonal: m_j × sqrt(M_new,j / M_old,j)).
  void adapt(std::vector<double> adapted, std::span<double> momentum);
  /// M itself (d numbers, or d² row by row), the momentum carried as by adapt(); refused (naming
  /// integrator.mass) unless positive (definite, and invertible in double precision).
  void set_mass(std::span<const double> m, std::span<double> momentum);
  /// M: d numbers, or d² row by row (dense).
  std::vector<double> mass() const;
  /// What a checkpoint holds: M (diagonal) or K (dense), bit for bit.
  void save(StateWriter& out) const;
  void restore(StateReader& in);

private:
  void set_diagonal(std::vector<double> values);
  void set_inverse_factor(std::vector<double> factor);

  bool dense_;
  bool fisher_;
  double ridge_;
  std::vector<double> given_;  // as configured: 1, d or (dense) d² numbers
  std::size_t dimension_ = 0;
  std::vector<double> values_, inverse_, sqrt_, inverse_sqrt_;  // diagonal
  std::vector<double> factor_;                                  // dense: K, row-major, lower
  mutable std::vector<double> scratch_;                         // dense: Kᵀv
};

}  // namespace sgmcmc
