// The conjugate pieces of Bayesian PMF's hyperparameter updates, free of the plugin interface so
// that the tests check the very functions the plugin runs: a Gamma variate, and one draw of
// (μ, λ) from the Normal–Gamma full conditional of one coordinate of the factor prior.
//
// Header only and templated on the random stream (anything with uniform() on [0, 1) and normal()),
// so it needs no module import.
#pragma once
#include <cmath>
#include <cstddef>
#include <span>

namespace pmf {

/// A Gamma(shape, rate) variate (density ∝ x^(shape-1) e^(-rate x)).
/// shape ≥ 1: Marsaglia & Tsang (2000), "A simple method for generating gamma variables", ACM TOMS
/// 26(3): with d = shape - 1/3 and c = 1/sqrt(9d), v = (1 + c z)³ for standard normal z is accepted
/// when log u < z²/2 + d - d v + d log v; then d v is Gamma(shape, 1).
/// shape < 1: the same paper's boost, Gamma(a) = Gamma(a + 1) · u^(1/a).
template <class Random>
double gamma_variate(double shape, double rate, Random& rng) {
  if (shape < 1.0) {
    const double u = 1.0 - rng.uniform();  // (0, 1]
    return gamma_variate(shape + 1.0, rate, rng) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double z = rng.normal();
    const double t = 1.0 + c * z;
    if (t <= 0.0) continue;
    const double v = t * t * t;
    const double u = 1.0 - rng.uniform();  // (0, 1]: log u is finite
    if (std::log(u) < 0.5 * z * z + d - d * v + d * std::log(v)) return d * v / rate;
  }
}

/// Normal–Gamma hyperprior of one coordinate k of a factor prior (Salakhutdinov & Mnih 2008):
///   λ ~ Gamma(shape, rate),  μ | λ ~ N(mean, 1 / (mean_weight · λ)),  x_i | μ, λ ~ N(μ, 1/λ).
struct NormalGammaPrior {
  double mean = 0.0;         // μ_0
  double mean_weight = 1.0;  // β_0: the prior of μ is worth β_0 observations
  double shape = 1.0;        // a_0
  double rate = 1.0;         // b_0
};

/// The full conditional of (μ, λ) given n values x_1..x_n, in the same family (the standard
/// conjugate update, e.g. Murphy 2007, "Conjugate Bayesian analysis of the Gaussian
/// distribution", eqs. 85-89; Salakhutdinov & Mnih 2008 eq. 14 is its multivariate form):
///   β_n = β_0 + n,  μ_n = (β_0 μ_0 + n x̄) / β_n,  a_n = a_0 + n/2,
///   b_n = b_0 + ½ Σ(x_i - x̄)² + β_0 n (x̄ - μ_0)² / (2 β_n).
/// Derivation: the joint log density in (μ, λ) is (a_0 - 1 + (n+1)/2) log λ - b_0 λ
/// - (λ/2)[β_0(μ - μ_0)² + Σ(x_i - μ)²]; completing the square in μ gives the bracket
/// β_n(μ - μ_n)² + Σ(x_i - x̄)² + β_0 n (x̄ - μ_0)²/β_n, whence the four numbers above.
struct NormalGammaPosterior {
  double mean, mean_weight, shape, rate;
};

/// Sufficient statistics of the values x_i = values[i * stride + offset], i = 0..count-1 (one
/// column of a row-major factor matrix): two passes, so the sum of squares is not a difference
/// of large numbers.
inline NormalGammaPosterior normal_gamma_posterior(const NormalGammaPrior& prior, std::span<const double> values,
                                                   std::size_t count, std::size_t stride, std::size_t offset) {
  const double n = static_cast<double>(count);
  double sum = 0.0;
  for (std::size_t i = 0; i < count; ++i) sum += values[i * stride + offset];
  const double mean = count ? sum / n : 0.0;
  double squares = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    const double deviation = values[i * stride + offset] - mean;
    squares += deviation * deviation;
  }
  const double weight = prior.mean_weight + n;
  const double shift = mean - prior.mean;
  return {.mean = (prior.mean_weight * prior.mean + n * mean) / weight,
          .mean_weight = weight,
          .shape = prior.shape + 0.5 * n,
          .rate = prior.rate + 0.5 * squares + prior.mean_weight * n * shift * shift / (2.0 * weight)};
}

/// A Gamma(shape, rate) prior of a precision λ, and the full conditional of λ given n values
/// x_i ~ N(0, 1/λ) of known mean 0 (the bias terms; the residuals e_ij for the noise precision τ):
///   Gamma(a + n/2, b + ½ Σ x_i²),
/// since the log density in λ is (a - 1) log λ - bλ + (n/2) log λ - (λ/2) Σ x_i² (the conjugate
/// pair; Murphy 2007, §4 with the mean known; Salakhutdinov & Mnih 2008 keep α = τ fixed).
struct GammaPrior {
  double shape = 1.0, rate = 1.0;
};

inline GammaPrior precision_posterior(const GammaPrior& prior, double count, double sum_of_squares) {
  return {.shape = prior.shape + 0.5 * count, .rate = prior.rate + 0.5 * sum_of_squares};
}

inline GammaPrior precision_posterior(const NormalGammaPrior& prior, double count, double sum_of_squares) {
  return precision_posterior(GammaPrior{.shape = prior.shape, .rate = prior.rate}, count, sum_of_squares);
}

struct MeanAndPrecision {
  double mean, precision;
};

/// One Gibbs draw from the Normal–Gamma posterior: λ ~ Gamma(a_n, b_n), then μ | λ ~ N(μ_n, 1/(β_n λ)).
template <class Random>
MeanAndPrecision draw_normal_gamma(const NormalGammaPosterior& posterior, Random& rng) {
  const double precision = gamma_variate(posterior.shape, posterior.rate, rng);
  const double mean = posterior.mean + rng.normal() / std::sqrt(posterior.mean_weight * precision);
  return {mean, precision};
}

}  // namespace pmf
