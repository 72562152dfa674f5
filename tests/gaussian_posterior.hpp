// The closed-form posterior of Bayesian linear regression with known noise (Bishop 2006,
// eq. 3.53-3.54): y = Xβ + ε, ε ~ N(0, σ²), β ~ N(0, s² I) gives β | y ~ N(μ, A⁻¹) with
// A = XᵀX/σ² + I/s² and μ = A⁻¹ Xᵀy/σ². No sgmcmc import: include it before headers that import.
#pragma once
#include <xtensor/xtensor.hpp>
#include <xtensor-blas/xlinalg.hpp>

namespace test {

struct GaussianPosterior {
  xt::xtensor<double, 2> precision;  // A
  xt::xtensor<double, 1> mean;       // μ
};

inline GaussianPosterior gaussian_posterior(const xt::xtensor<double, 2>& x, const xt::xtensor<double, 1>& y,
                                            double noise_sd, double prior_sd) {
  xt::xtensor<double, 2> precision = xt::linalg::dot(xt::transpose(x), x) / (noise_sd * noise_sd) +
                                     xt::eye<double>(x.shape(1)) / (prior_sd * prior_sd);
  xt::xtensor<double, 1> mean = xt::linalg::solve(precision, xt::linalg::dot(xt::transpose(x), y) / (noise_sd * noise_sd));
  return {std::move(precision), std::move(mean)};
}

}  // namespace test
