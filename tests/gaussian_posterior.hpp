// The closed-form posterior of Bayesian linear regression with known noise (Bishop 2006,
// eq. 3.53-3.54): y = Xβ + ε, ε ~ N(0, σ²), β ~ N(0, s² I) gives β | y ~ N(μ, A⁻¹) with
// A = XᵀX/σ² + I/s² and μ = A⁻¹ Xᵀy/σ². No sgmcmc import: include it before headers that import.
// Computed in gaussian_posterior.cpp, compiled once for every suite (tests/CMakeLists.txt): its
// xtensor-blas expressions cost each test file that instantiated them several CPU seconds.
#pragma once
#include <xtensor/xtensor.hpp>

namespace test {

struct GaussianPosterior {
  xt::xtensor<double, 2> precision;  // A
  xt::xtensor<double, 1> mean;       // μ
};

GaussianPosterior gaussian_posterior(const xt::xtensor<double, 2>& x, const xt::xtensor<double, 1>& y, double noise_sd,
                                     double prior_sd);

}  // namespace test
