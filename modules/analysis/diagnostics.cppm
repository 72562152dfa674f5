// Convergence diagnostics of MCMC draws: rank-normalised split R-hat, bulk and tail effective
// sample sizes, and the Monte Carlo standard error of the mean (Vehtari, Gelman, Simpson,
// Carpenter & Bürkner 2021, "Rank-normalization, folding, and localization"), computed as the R
// package `posterior` (1.4) computes them, so that the numbers agree to rounding.
//
// Draws of one scalar quantity are given as chains × iterations. A diagnostic that is undefined
// (constant draws, fewer than 3 iterations per split chain, NaN/Inf) is NaN; callers say why.
module;
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <string>
#include <vector>
export module sgmcmc.diagnostics;

export namespace sgmcmc {

using ChainDraws = std::vector<std::vector<double>>;  // [chain][iteration]

/// Quantile of all draws, R's default (type 7: linear interpolation of the order statistics).
double quantile(const ChainDraws& draws, double probability);

/// Geyer's initial-monotone-sequence ESS of the chains as given (`posterior`'s .ess).
double ess_basic(const ChainDraws& draws);
/// ESS of the rank-normalised split chains.
double ess_bulk(const ChainDraws& draws);
/// The smaller ESS of the 5% and 95% quantile indicators (split chains).
double ess_tail(const ChainDraws& draws);
/// ESS of the split chains (for the mean).
double ess_mean(const ChainDraws& draws);
/// max(R-hat of the rank-normalised split chains, R-hat of the folded ones).
double rhat(const ChainDraws& draws);
/// sd / sqrt(ess_mean).
double mcse_mean(const ChainDraws& draws);

/// The standard normal quantile function Φ⁻¹(p), 0 < p < 1.
double normal_quantile(double p);

/// Kernel Stein discrepancy of points x_i with scores s_i = ∇log π(x_i) = -∇U(x_i), for the
/// inverse multiquadric kernel k(x, y) = (c² + ‖x - y‖²)^β (Gorham & Mackey 2017, Thm 8:
/// c > 0, β ∈ (-1, 0) makes KSD detect non-convergence). The V-statistic
/// sqrt((1/n²) Σ_{i,j} k_0(x_i, x_j)) with the Stein kernel
/// k_0 = s_xᵀs_y k + s_xᵀ∇_y k + s_yᵀ∇_x k + ∇_x·∇_y k. O(n² d).
double kernel_stein_discrepancy(const std::vector<std::vector<double>>& points,
                                const std::vector<std::vector<double>>& scores, double c = 1.0, double beta = -0.5);

/// True when a diagnostic of `draws` is undefined: NaN/Inf present or all draws equal.
bool diagnostics_undefined(const ChainDraws& draws);

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

namespace {

std::vector<double> flatten(const ChainDraws& draws) {
  std::vector<double> all;
  for (const auto& chain : draws) all.insert(all.end(), chain.begin(), chain.end());
  return all;
}

ChainDraws reshape(const std::vector<double>& all, const ChainDraws& shape) {
  ChainDraws out;
  std::size_t at = 0;
  for (const auto& chain : shape) {
    out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + chain.size()));
    at += chain.size();
  }
  return out;
}

double mean_of(const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size()); }

/// Sample variance with the n - 1 denominator (R's var).
double variance_of(const std::vector<double>& x) {
  const double m = mean_of(x);
  double sum = 0.0;
  for (double v : x) sum += (v - m) * (v - m);
  return sum / static_cast<double>(x.size() - 1);
}

/// Each chain cut in two halves; an odd middle draw is dropped (`posterior`'s .split_chains).
ChainDraws split_chains(const ChainDraws& draws) {
  ChainDraws halves;
  for (const auto& chain : draws) {
    const std::size_t n = chain.size(), half = n / 2;
    if (n < 2) {
      halves.push_back(chain);
      continue;
    }
    halves.emplace_back(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(half));
    halves.emplace_back(chain.begin() + static_cast<std::ptrdiff_t>(n - half), chain.end());
  }
  return halves;
}

/// Ranks of all draws (ties get their average rank) mapped to normal scores Φ⁻¹((r - 3/8)/(S + 1/4)).
ChainDraws z_scale(const ChainDraws& draws) {
  const std::vector<double> all = flatten(draws);
  std::vector<std::size_t> order(all.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return all[a] < all[b]; });  // ties share a rank below
  std::vector<double> scores(all.size());
  const double count = static_cast<double>(all.size()), c = 3.0 / 8.0;
  for (std::size_t begin = 0; begin < order.size();) {
    std::size_t end = begin;
    while (end < order.size() && all[order[end]] == all[order[begin]]) ++end;
    const double rank = (static_cast<double>(begin + 1) + static_cast<double>(end)) / 2.0;  // average of begin+1..end
    for (std::size_t k = begin; k < end; ++k) scores[order[k]] = normal_quantile((rank - c) / (count - 2 * c + 1));
    begin = end;
  }
  return reshape(scores, draws);
}

/// Biased autocovariance (1/n) Σ_t y_t y_{t+k}, y = x - mean, for k = 0 .. n-1.
std::vector<double> autocovariance(const std::vector<double>& x) {
  const std::size_t n = x.size();
  const double m = mean_of(x);
  std::vector<double> y(n), acov(n, 0.0);
  for (std::size_t t = 0; t < n; ++t) y[t] = x[t] - m;
  for (std::size_t k = 0; k < n; ++k) {
    double sum = 0.0;
    for (std::size_t t = 0; t + k < n; ++t) sum += y[t] * y[t + k];
    acov[k] = sum / static_cast<double>(n);
  }
  return acov;
}

ChainDraws fold(const ChainDraws& draws) {
  const double median = quantile(draws, 0.5);
  ChainDraws folded = draws;
  for (auto& chain : folded)
    for (double& x : chain) x = std::abs(x - median);
  return folded;
}

/// R-hat of chains as given (`posterior`'s .rhat).
double rhat_basic(const ChainDraws& draws) {
  if (diagnostics_undefined(draws)) return std::nan("");
  const double n = static_cast<double>(draws.front().size());
  std::vector<double> means, variances;
  for (const auto& chain : draws) {
    means.push_back(mean_of(chain));
    variances.push_back(variance_of(chain));
  }
  const double between = n * variance_of(means), within = mean_of(variances);
  return std::sqrt((between / within + n - 1) / n);
}

}  // namespace

bool diagnostics_undefined(const ChainDraws& draws) {
  const auto all = flatten(draws);
  if (all.empty()) return true;
  for (double x : all)
    if (!std::isfinite(x)) return true;
  const auto [low, high] = std::minmax_element(all.begin(), all.end());
  return std::abs(*high - *low) < std::numeric_limits<double>::epsilon();
}

double quantile(const ChainDraws& draws, double probability) {
  std::vector<double> all = flatten(draws);
  std::sort(all.begin(), all.end());
  const double h = (static_cast<double>(all.size()) - 1) * probability;
  const auto low = static_cast<std::size_t>(std::floor(h));
  const std::size_t high = std::min(low + 1, all.size() - 1);
  return all[low] + (h - static_cast<double>(low)) * (all[high] - all[low]);
}

double ess_basic(const ChainDraws& draws) {
  const std::size_t chains = draws.size(), n = draws.front().size();
  if (n < 3 || diagnostics_undefined(draws)) return std::nan("");
  // Mean autocovariance over chains at each lag, computed lazily: Geyer's sum stops early.
  std::vector<std::vector<double>> acov;
  for (const auto& chain : draws) acov.push_back(autocovariance(chain));
  const auto mean_acov = [&](std::size_t lag) {
    double sum = 0.0;
    for (const auto& a : acov) sum += a[lag];
    return sum / static_cast<double>(chains);
  };
  const double nd = static_cast<double>(n);
  const double mean_var = mean_acov(0) * nd / (nd - 1);
  double var_plus = mean_var * (nd - 1) / nd;
  if (chains > 1) {
    std::vector<double> means;
    for (const auto& chain : draws) means.push_back(mean_of(chain));
    var_plus += variance_of(means);
  }
  // Autocorrelations ρ_t summed in pairs until a pair sum turns negative (Geyer 1992).
  std::vector<double> rho(n, 0.0);
  const auto rho_at = [&](std::size_t lag) { return 1 - (mean_var - mean_acov(lag)) / var_plus; };
  std::size_t t = 0;
  double even = 1.0, odd = rho_at(1);
  rho[0] = even;
  rho[1] = odd;
  while (t + 5 < n && !std::isnan(even + odd) && even + odd > 0) {
    t += 2;
    even = rho_at(t);
    odd = rho_at(t + 1);
    if (even + odd >= 0) {
      rho[t] = even;
      rho[t + 1] = odd;
    }
  }
  const std::size_t max_t = t;
  if (even > 0) rho[max_t] = even;
  // Initial monotone sequence: pair sums may not increase.
  for (t = 2; t + 2 <= max_t; t += 2)
    if (rho[t] + rho[t + 1] > rho[t - 2] + rho[t - 1]) rho[t] = rho[t + 1] = (rho[t - 2] + rho[t - 1]) / 2;
  const double total = static_cast<double>(chains) * nd;
  // `posterior` sums rho[1:max_t] in R, which for max_t = 0 is rho[1]: one term, kept for agreement.
  const auto summed = static_cast<std::ptrdiff_t>(std::max<std::size_t>(max_t, 1));
  double tau = -1 + 2 * std::accumulate(rho.begin(), rho.begin() + summed, 0.0) + rho[max_t];
  tau = std::max(tau, 1 / std::log10(total));  // the cap `posterior` applies for antithetic chains
  return total / tau;
}

double ess_bulk(const ChainDraws& draws) {
  return diagnostics_undefined(draws) ? std::nan("") : ess_basic(z_scale(split_chains(draws)));
}

double ess_mean(const ChainDraws& draws) { return ess_basic(split_chains(draws)); }

double ess_tail(const ChainDraws& draws) {
  if (diagnostics_undefined(draws)) return std::nan("");
  double smallest = INFINITY;
  for (double probability : {0.05, 0.95}) {
    const double q = quantile(draws, probability);
    ChainDraws indicator = draws;
    for (auto& chain : indicator)
      for (double& x : chain) x = x <= q ? 1.0 : 0.0;
    smallest = std::min(smallest, ess_basic(split_chains(indicator)));
  }
  return smallest;
}

double rhat(const ChainDraws& draws) {
  if (diagnostics_undefined(draws)) return std::nan("");
  return std::max(rhat_basic(z_scale(split_chains(draws))), rhat_basic(z_scale(split_chains(fold(draws)))));
}

double mcse_mean(const ChainDraws& draws) {
  return std::sqrt(variance_of(flatten(draws))) / std::sqrt(ess_mean(draws));
}

double kernel_stein_discrepancy(const std::vector<std::vector<double>>& points,
                                const std::vector<std::vector<double>>& scores, double c, double beta) {
  const std::size_t n = points.size(), d = n ? points.front().size() : 0;
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      // With r = x - y and u = c² + ‖r‖²: k = u^β, ∇_x k = 2βu^{β-1} r = -∇_y k,
      // ∇_x·∇_y k = -2βd u^{β-1} - 4β(β-1) u^{β-2} ‖r‖².
      double r2 = 0.0, ss = 0.0, sx_r = 0.0, sy_r = 0.0;
      for (std::size_t k = 0; k < d; ++k) {
        const double r = points[i][k] - points[j][k];
        r2 += r * r;
        ss += scores[i][k] * scores[j][k];
        sx_r += scores[i][k] * r;
        sy_r += scores[j][k] * r;
      }
      const double u = c * c + r2, kernel = std::pow(u, beta), u1 = std::pow(u, beta - 1), u2 = std::pow(u, beta - 2);
      sum += ss * kernel + 2 * beta * u1 * (sy_r - sx_r) - 2 * beta * static_cast<double>(d) * u1 -
             4 * beta * (beta - 1) * u2 * r2;
    }
  return std::sqrt(sum) / static_cast<double>(n);
}

double normal_quantile(double p) {
  // Start from Abramowitz & Stegun 26.2.23 (|error| < 4.5e-4), then Halley steps on
  // Φ(z) = ½ erfc(-z/√2) - p, which converge cubically to the double-precision root.
  const double tail = std::min(p, 1 - p), t = std::sqrt(-2 * std::log(tail));
  double z = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t);
  if (p < 0.5) z = -z;
  for (int step = 0; step < 3; ++step) {
    const double error = 0.5 * std::erfc(-z / std::numbers::sqrt2) - p;
    const double u = error * std::sqrt(2 * std::numbers::pi) * std::exp(z * z / 2);
    z -= u / (1 + z * u / 2);
  }
  return z;
}

}  // namespace sgmcmc
