// Each likelihood's per-row arithmetic as a function of the response y and the linear predictor
// z = xᵀβ (McCullagh & Nelder 1989, ch. 2): loss(y, z) = f_i = -log p(y | z), normalised, and
// scalar(y, z) = ∂f_i/∂z, so that ∇f_i(β) = scalar · x_i (the GLM form). Included inside the
// instruction-set namespace of glm_kernels_body.hpp, like the pass over the rows, so that every
// copy inlines its own.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "likelihoods.hpp"

#ifndef REGRESSION_ISA
#error "define REGRESSION_ISA to the namespace of this instruction set"
#endif

namespace regression::REGRESSION_ISA {

/// log(1 + exp(t)) without overflow or loss of precision, and without a branch (it vectorises).
inline double softplus(double t) { return std::max(t, 0.0) + std::log1p(std::exp(-std::abs(t))); }

/// log Γ(y + 1) = log y!, by lgamma_r: lgamma writes the global signgam, a race between chains.
inline double log_factorial(double y) {
  int sign = 0;
  return lgamma_r(y + 1.0, &sign);
}

/// y ∈ {-1, +1}, p(y | z) = σ(y z): f = log(1 + exp(-y z)), ∂f/∂z = -y σ(-y z) = -y / (1 + exp(y z)).
struct BernoulliLogit {
  static double loss(double y, double z, const LikelihoodConstants&) { return softplus(-y * z); }
  static double scalar(double y, double z, const LikelihoodConstants&) { return -y / (1.0 + std::exp(y * z)); }
};

/// y ∈ {-1, +1}, p(y | z) = Φ(y z): f = -log Φ(y z), ∂f/∂z = -y φ(z) / Φ(y z). Φ(t) = erfc(-t/√2)/2
/// keeps its precision for negative t down to t ≈ -37, where erfc reaches the subnormals; below,
/// log Φ(t) is the asymptotic series -t²/2 - log(-t) - log(2π)/2 + log(1 - 1/t² + 3/t⁴ - 15/t⁶)
/// (Abramowitz & Stegun 1964, 26.2.12; the next term is below 1e-10 there), so that neither f nor
/// the ratio φ/Φ → -t becomes 0/0.
struct BernoulliProbit {
  static double log_phi(double t) {
    if (t >= -37.0) return std::log(0.5 * std::erfc(-t * std::numbers::sqrt2 / 2.0));
    const double u = 1.0 / (t * t);
    return -0.5 * t * t - std::log(-t) - 0.5 * std::log(2.0 * std::numbers::pi) + std::log1p(-u + 3.0 * u * u - 15.0 * u * u * u);
  }
  static double loss(double y, double z, const LikelihoodConstants&) { return -log_phi(y * z); }
  static double scalar(double y, double z, const LikelihoodConstants&) {
    const double t = y * z;
    const double log_density = -0.5 * t * t - 0.5 * std::log(2.0 * std::numbers::pi);
    return -y * std::exp(log_density - log_phi(t));
  }
};

/// y ∈ {0, 1, 2, ...}, μ = exp(z): f = μ - y z + log y!, ∂f/∂z = μ - y.
struct PoissonLog {
  static double loss(double y, double z, const LikelihoodConstants&) { return std::exp(z) - y * z + log_factorial(y); }
  static double scalar(double y, double z, const LikelihoodConstants&) { return std::exp(z) - y; }
};

/// y real, y ~ N(z, σ²): f = (y - z)²/(2σ²) + log σ + log(2π)/2, ∂f/∂z = (z - y)/σ².
struct GaussianIdentity {
  static double loss(double y, double z, const LikelihoodConstants& c) {
    const double r = (y - z) / c.noise_sd;
    return 0.5 * r * r + std::log(c.noise_sd) + 0.5 * std::log(2.0 * std::numbers::pi);
  }
  static double scalar(double y, double z, const LikelihoodConstants& c) { return (z - y) / (c.noise_sd * c.noise_sd); }
};

/// y ∈ {0, 1, 2, ...}, μ = exp(z), dispersion r (Hilbe 2011, NB2): p(y) = Γ(y + r)/(Γ(r) y!) ·
/// (r/(r + μ))^r (μ/(r + μ))^y, so f = -log Γ(y + r) + log Γ(r) + log y! - r log r - y z
/// + (y + r) log(r + μ), and ∂f/∂z = (y + r) μ/(r + μ) - y = r (μ - y)/(r + μ).
struct NegativeBinomialLog {
  /// log(r + e^z) = log r + softplus(z - log r): finite for any z.
  static double log_r_plus_mu(double z, double r) { return std::log(r) + softplus(z - std::log(r)); }
  static double loss(double y, double z, const LikelihoodConstants& c) {
    const double r = c.dispersion;
    int sign = 0;
    return -lgamma_r(y + r, &sign) + lgamma_r(r, &sign) + log_factorial(y) - r * std::log(r) - y * z +
           (y + r) * log_r_plus_mu(z, r);
  }
  /// r (μ - y)/(r + μ) = r/(1 + r e^{-z}) - y r/(r + e^z): each term bounded, no inf/inf.
  static double scalar(double y, double z, const LikelihoodConstants& c) {
    const double r = c.dispersion;
    return r / (1.0 + r * std::exp(-z)) - y * r / (r + std::exp(z));
  }
};

}  // namespace regression::REGRESSION_ISA
