// The sampled negative binomial dispersion (dispersion.hpp).
#include "dispersion.hpp"

#include <algorithm>
#include <cmath>
#include <boost/math/special_functions/digamma.hpp>

namespace glm {

double DispersionPrior::potential(double u) const { return rate * std::exp(u) - shape * u; }

double DispersionPrior::derivative(double u) const { return rate * std::exp(u) - shape; }

double DispersionPrior::draw(sgmcmc::Rng& rng) const { return std::log(rng.gamma(shape, rate)); }

namespace {

/// ψ(y + r) - ψ(r): for a small count the finite sum Σ_{k<y} 1/(r + k) (ψ's recurrence), exact
/// where the digamma difference of a large r cancels.
double digamma_difference(double y, double r) {
  if (y >= 32.0) return boost::math::digamma(y + r) - boost::math::digamma(r);
  double sum = 0.0;
  for (double k = 0.0; k < y; k += 1.0) sum += 1.0 / (r + k);
  return sum;
}

}  // namespace

double negative_binomial_log_dispersion_derivative(double y, double z, double u) {
  const double r = std::exp(u);
  // log(1 + μ/r) = softplus(z - u), and (y - μ)/(r + μ) = y/(r + μ) - 1/(1 + r/μ): each finite
  // for any z, also where μ = e^z overflows to inf or underflows to 0 (then inf/inf or 0/0).
  const double t = z - u, mu = std::exp(z);
  const double log1p_ratio = std::max(t, 0.0) + std::log1p(std::exp(-std::abs(t)));
  const double residual = y / (r + mu) - 1.0 / (1.0 + r / mu);
  return r * (log1p_ratio + residual - digamma_difference(y, r));
}

}  // namespace glm
