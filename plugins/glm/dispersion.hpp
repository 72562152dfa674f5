// The negative binomial's dispersion r sampled with the coefficients, when the configuration
// does not fix it (model.family = "negative_binomial" without model.dispersion). The parameter
// is u = log r, the last coordinate of θ = (β, u): unconstrained, so every integrator moves it by
// the same gradient step as β, and an MH corrector sees the joint exact density.
//
// Prior: r ~ Gamma(a, b) (shape a = model.dispersion_shape, rate b = model.dispersion_rate;
// a = b = 1 is the exponential(1) prior that rstanarm puts on the negative binomial's reciprocal
// dispersion, Goodrich et al. 2020). With the Jacobian dr/du = r of u = log r,
//   f_0(u) = b e^u - a u                       (up to a constant)
//   ∂f_0/∂u = b e^u - a.
// Data term (NB2, Hilbe 2011; likelihood_math.hpp gives f_i and ∂f_i/∂z), with μ = e^z:
//   ∂f_i/∂r = ψ(r) - ψ(y + r) + log(1 + μ/r) + (y - μ)/(r + μ)
//   ∂f_i/∂u = r ∂f_i/∂r                        (ψ the digamma function).
#pragma once
#include <span>
#include <vector>

import sgmcmc.sdk;

namespace glm {

struct DispersionPrior {
  double shape = 1.0;  // a
  double rate = 1.0;   // b

  double potential(double u) const;
  double derivative(double u) const;
  /// u = log r with r ~ Gamma(a, b).
  double draw(sgmcmc::Rng& rng) const;
};

/// ∂f_i/∂u of a negative binomial row with response y, linear predictor z, u = log r.
double negative_binomial_log_dispersion_derivative(double y, double z, double u);

}  // namespace glm
