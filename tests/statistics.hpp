// Monte Carlo error and goodness-of-fit helpers for statistical tests.
#pragma once
#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>
#include <boost/math/distributions/chi_squared.hpp>

namespace test {

/// χ²(df)'s upper 10⁻⁶ quantile: a correct sampler's Pearson X² exceeds it once in 10⁶ runs.
inline double chi_square_limit(double df) {
  return boost::math::quantile(boost::math::complement(boost::math::chi_squared(df), 1e-6));
}

/// χ²(df)'s lower 10⁻⁶ quantile: counts too even (a split made, not drawn) give an X² below it.
inline double chi_square_floor(double df) { return boost::math::quantile(boost::math::chi_squared(df), 1e-6); }

inline double mean(const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size()); }

inline double variance(const std::vector<double>& x) {
  const double m = mean(x);
  double sum = 0.0;
  for (double v : x) sum += (v - m) * (v - m);
  return sum / static_cast<double>(x.size());
}

/// Standard error of the mean of a correlated series by non-overlapping batch means (Flegal &
/// Jones 2010): with b batches of length ≫ the autocorrelation time the batch means are nearly
/// independent, and their spread / sqrt(b) estimates the standard error.
inline double batch_means_se(const std::vector<double>& x, std::size_t batches = 100) {
  const std::size_t length = x.size() / batches;
  std::vector<double> means(batches);
  for (std::size_t b = 0; b < batches; ++b)
    means[b] = std::accumulate(x.begin() + static_cast<std::ptrdiff_t>(b * length),
                               x.begin() + static_cast<std::ptrdiff_t>((b + 1) * length), 0.0) / static_cast<double>(length);
  return std::sqrt(variance(means) * static_cast<double>(batches) / static_cast<double>(batches - 1) / static_cast<double>(batches));
}

/// The standard error of a sample variance, by batch means of (x - mean)².
inline double variance_se(const std::vector<double>& x, std::size_t batches = 100) {
  const double m = mean(x);
  std::vector<double> squares(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) squares[k] = (x[k] - m) * (x[k] - m);
  return batch_means_se(squares, batches);
}

/// Lag-k autocorrelation.
inline double autocorrelation(const std::vector<double>& x, std::size_t lag) {
  const double m = mean(x), v = variance(x);
  double sum = 0.0;
  for (std::size_t k = 0; k + lag < x.size(); ++k) sum += (x[k] - m) * (x[k + lag] - m);
  return sum / static_cast<double>(x.size() - lag) / v;
}

inline double normal_cdf(double x, double mu, double sd) { return 0.5 * std::erfc(-(x - mu) / (sd * std::sqrt(2.0))); }

/// Kolmogorov–Smirnov statistic D = sup |F_n - F| of a sample against a continuous CDF F.
template <class Cdf>
double ks_statistic(std::vector<double> x, const Cdf& cdf) {
  std::sort(x.begin(), x.end());
  const double n = static_cast<double>(x.size());
  double d = 0.0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double f = cdf(x[k]);
    d = std::max({d, (static_cast<double>(k) + 1) / n - f, f - static_cast<double>(k) / n});
  }
  return d;
}

/// The same against N(μ, sd²).
inline double ks_statistic_normal(std::vector<double> x, double mu, double sd) {
  return ks_statistic(std::move(x), [&](double v) { return normal_cdf(v, mu, sd); });
}

}  // namespace test
