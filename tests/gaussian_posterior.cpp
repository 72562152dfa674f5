// gaussian_posterior.hpp's closed form (Bishop 2006, eq. 3.53-3.54).
#include "gaussian_posterior.hpp"

#include <utility>
#include <xtensor-blas/xlinalg.hpp>

namespace test {

GaussianPosterior gaussian_posterior(const xt::xtensor<double, 2>& x, const xt::xtensor<double, 1>& y, double noise_sd,
                                     double prior_sd) {
  xt::xtensor<double, 2> precision = xt::linalg::dot(xt::transpose(x), x) / (noise_sd * noise_sd) +
                                     xt::eye<double>(x.shape(1)) / (prior_sd * prior_sd);
  xt::xtensor<double, 1> mean = xt::linalg::solve(precision, xt::linalg::dot(xt::transpose(x), y) / (noise_sd * noise_sd));
  return {std::move(precision), std::move(mean)};
}

}  // namespace test
