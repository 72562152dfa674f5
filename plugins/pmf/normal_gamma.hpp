// The conjugate pieces of Bayesian PMF's hyperparameter updates, free of the plugin interface so
// that the tests check the very functions the plugin runs: one draw of (μ, λ) from the
// Normal–Gamma full conditional of one coordinate of the factor prior.
//
// Header only and templated on the random stream (anything with normal() and gamma(shape, rate),
// as sgmcmc::Rng), so it needs no module import.
#pragma once
#include <cmath>
#include <cstddef>
#include <span>

namespace pmf {

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
  const double precision = rng.gamma(posterior.shape, posterior.rate);
  const double mean = posterior.mean + rng.normal() / std::sqrt(posterior.mean_weight * precision);
  return {mean, precision};
}

}  // namespace pmf
