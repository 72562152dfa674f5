// Zero-variance control variates (ZV) for MCMC output: Mira, Solgi & Imparato (2013), "Zero
// variance Markov chain Monte Carlo for Bayesian estimators", Statistics and Computing 23; applied
// to SG-MCMC output with cheap gradient estimates in Baker et al. (2019, §4) ("SGLD-ZV");
// modules/README.md, "Zero-variance post-processing".
//
// For a scalar quantity q(θ) and a polynomial P, the Langevin–Stein identity
// E_π[ΔP(θ) + ∇P(θ)·z(θ)] = 0 with z = ∇log π = -∇U (integration by parts, π vanishing at
// infinity) makes h = ΔP + ∇P·z a control variate with known mean 0, so
// q̃ = q + ΔP + ∇P·z has the same expectation as q. P's coefficients c are chosen to minimise the
// sample variance of q̃: a least-squares regression of q on the controls, c* = -Var(h)⁻¹Cov(h, q)
// (Mira et al. 2013; its first-order case is modules/README.md's a* = -Var(z)⁻¹Cov(z, q)).
//
//   order 1, P = aᵀθ:              ΔP = 0, controls h_j = z_j                       (d of them)
//   order 2, P = aᵀθ + θᵀBθ/2 (B symmetric): ∇P = a + Bθ, ΔP = tr B, so B's coefficients give
//            b_jj:        h = 1 + θ_j z_j                                         (d)
//            b_jk, j < k: h = θ_j z_k + θ_k z_j                                   (d(d-1)/2)
//   in all d(d+3)/2 controls (Mira et al. 2013's quadratic polynomials; modules/README.md, "Zero-variance post-processing").
//
// The coefficients are estimated from the same draws, so the estimate has a bias of order 1/T
// (T draws), and its sample variance is optimistic: a least-squares fit cannot raise the sample
// variance, so the in-sample ratio Var(q)/Var(q̃) is at least 1 even when the controls carry no
// information (about 1/(1 - m/T) for m useless controls). zero_variance_cross_fitted corrects each
// half of the draws with coefficients fitted on the other half (two-fold cross-fitting), whose
// ratio is honest: about 1/(1 + m/(T/2)) < 1 for useless controls. The controls' covariance is
// factored once (Cholesky of the correlation matrix) and reused for every quantity. Controls that are linear combinations of earlier ones over the
// draws are dropped as the factor meets them (ZvResult::dropped), which leaves the least-squares
// fit, a projection, unchanged.
module;
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.zero_variance;
import sgmcmc.error;

export namespace sgmcmc {

/// Rows are draws: rows[t][j].
using DrawMatrix = std::vector<std::vector<double>>;

/// The number of control variates of a polynomial of `order` (1 or 2) in `dimension` parameters:
/// d, or d(d+3)/2.
std::size_t zv_control_count(std::size_t dimension, int order);

/// Names of the controls in zv_controls' order, for messages: "z[1]", "1 + θ[1]z[1]", "θ[1]z[2] + θ[2]z[1]".
std::vector<std::string> zv_control_names(std::size_t dimension, int order);

/// out (zv_control_count entries) ← the controls h(θ, z) of one draw, with z = ∇log π(θ).
void zv_controls(std::span<const double> theta, std::span<const double> score, int order, std::span<double> out);

/// One quantity's estimates.
struct ZvEstimate {
  double mean = 0.0;         // (1/T) Σ q_t: the plain estimate
  double zv_mean = 0.0;      // (1/T) Σ q̃_t
  double variance = 0.0;     // sample variance of q (denominator T - 1)
  double zv_variance = 0.0;  // sample variance of q̃
  std::vector<double> coefficients;  // c*, in zv_controls' order
  std::vector<double> corrected;     // q̃_t, t = 1..T, for the MCSE of zv_mean
  /// Var(q) / Var(q̃): how many times fewer draws the ZV estimate needs for the same variance
  /// (for independent draws; the MCSE of correlated draws also depends on their autocorrelation).
  double variance_ratio() const { return variance / zv_variance; }
};

struct ZvResult {
  std::vector<ZvEstimate> estimates;  // one per quantity
  /// Controls left out because over these draws they are constant or a linear combination of
  /// the controls before them (1 - R² < 1e-12): with collinear features (cover type's indicator
  /// groups sum to the intercept) the gradient's coordinates are too. The fitted q̃ is the
  /// projection on the span of the controls, which the kept ones span as well, so leaving them
  /// out changes no estimate; it only makes the coefficients unique.
  std::vector<std::string> dropped;
};

/// ZV estimates of E_π[q_k] for every column k of `quantities` (T × Q), from draws `points`
/// (T × d) and scores `scores` (T × d, z = ∇log π = -∇U at each draw). Throws an Error when the
/// shapes disagree, when there are not more draws than controls, or when a value is not finite.
ZvResult zero_variance(const DrawMatrix& points, const DrawMatrix& scores, const DrawMatrix& quantities, int order);

/// The same estimates out of sample: the draws in fold 1 (`in_first_fold[t]`) are corrected with
/// the coefficients fitted on fold 2, and fold 2's with fold 1's; the means and variances are over
/// all draws. Each fold needs more draws than controls. `coefficients` are fold 1's fit; `dropped`
/// lists the controls either fold left out.
ZvResult zero_variance_cross_fitted(const DrawMatrix& points, const DrawMatrix& scores, const DrawMatrix& quantities,
                                    int order, const std::vector<bool>& in_first_fold);

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

// Module-linkage helpers in a named namespace: internal-linkage names of a module unit can clash
// with same-named helpers of units that import it under clang 19
// (https://github.com/llvm/llvm-project/issues/90259).
namespace zv_parts {

/// Pivots of the correlation matrix's Cholesky factor at or below this are treated as zero: the
/// squared pivot is 1 - R² of regressing a control on the kept ones before it, so 1e-12 means
/// that control is a linear combination of them to about 12 digits, beyond which its
/// coefficient would be rounding noise amplified by 1/pivot.
constexpr double singular_pivot = 1e-12;

struct Controls {
  std::size_t rows = 0, count = 0;
  std::vector<double> centred;  // rows × count, each column minus its mean
  std::vector<double> means;
  std::vector<double> scale;    // each column's sample sd, or 1 for a constant column
};

/// L Lᵀ = the correlation matrix of the kept controls (row-major, count × count; rows and
/// columns of dropped controls are zero).
struct Factor {
  std::vector<double> l;
  std::vector<bool> kept;
};

Controls centred_controls(const DrawMatrix& points, const DrawMatrix& scores, int order) {
  Controls c;
  c.rows = points.size();
  c.count = zv_control_count(points.front().size(), order);
  c.centred.resize(c.rows * c.count);
  c.means.assign(c.count, 0.0);
  for (std::size_t t = 0; t < c.rows; ++t) {
    std::span<double> row(c.centred.data() + t * c.count, c.count);
    zv_controls(points[t], scores[t], order, row);
    for (std::size_t j = 0; j < c.count; ++j) c.means[j] += row[j];
  }
  for (double& m : c.means) m /= static_cast<double>(c.rows);
  c.scale.assign(c.count, 0.0);
  for (std::size_t t = 0; t < c.rows; ++t)
    for (std::size_t j = 0; j < c.count; ++j) {
      double& x = c.centred[t * c.count + j];
      x -= c.means[j];
      c.scale[j] += x * x;
    }
  // A constant column keeps scale 1: its correlations are 0, so its pivot is 0 and it is dropped.
  for (double& s : c.scale) s = s > 0.0 ? std::sqrt(s / static_cast<double>(c.rows - 1)) : 1.0;
  return c;
}

/// Lower triangle of Σ_t h_t h_tᵀ / ((T - 1) s_i s_j): the controls' sample correlations,
/// accumulated draw by draw so the rows are read in order.
std::vector<double> correlations(const Controls& c) {
  const std::size_t m = c.count;
  std::vector<double> r(m * m, 0.0);
  for (std::size_t t = 0; t < c.rows; ++t) {
    const double* h = c.centred.data() + t * m;
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j <= i; ++j) r[i * m + j] += h[i] * h[j];
  }
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j <= i; ++j) r[i * m + j] /= static_cast<double>(c.rows - 1) * c.scale[i] * c.scale[j];
  return r;
}

/// Cholesky factor of the kept controls' correlation matrix, in order: a control whose pivot
/// (1 - R² of it on the kept controls before it) is at most singular_pivot is dropped.
Factor correlation_cholesky(const Controls& c) {
  const std::size_t m = c.count;
  const std::vector<double> r = correlations(c);
  Factor f{std::vector<double>(m * m, 0.0), std::vector<bool>(m, false)};
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (!f.kept[j]) continue;
      double x = r[i * m + j];
      for (std::size_t k = 0; k < j; ++k) x -= f.l[i * m + k] * f.l[j * m + k];
      f.l[i * m + j] = x / f.l[j * m + j];
    }
    double pivot = r[i * m + i];
    for (std::size_t k = 0; k < i; ++k) pivot -= f.l[i * m + k] * f.l[i * m + k];
    f.kept[i] = pivot > singular_pivot;
    if (f.kept[i]) {
      f.l[i * m + i] = std::sqrt(pivot);
    } else {
      for (std::size_t k = 0; k < i; ++k) f.l[i * m + k] = 0.0;
    }
  }
  return f;
}

/// x ← (L Lᵀ)⁻¹ b on the kept controls by forward and back substitution; x = 0 on the dropped.
std::vector<double> cholesky_solve(const Factor& f, std::vector<double> b) {
  const std::size_t m = b.size();
  const auto& l = f.l;
  for (std::size_t i = 0; i < m; ++i) {
    if (!f.kept[i]) {
      b[i] = 0.0;
      continue;
    }
    for (std::size_t k = 0; k < i; ++k) b[i] -= l[i * m + k] * b[k];
    b[i] /= l[i * m + i];
  }
  for (std::size_t i = m; i-- > 0;) {
    if (!f.kept[i]) continue;
    for (std::size_t k = i + 1; k < m; ++k) b[i] -= l[k * m + i] * b[k];
    b[i] /= l[i * m + i];
  }
  return b;
}

double sample_variance(const std::vector<double>& x) {
  double mean = 0.0, sum = 0.0;
  for (double v : x) mean += v / static_cast<double>(x.size());
  for (double v : x) sum += (v - mean) * (v - mean);
  return sum / static_cast<double>(x.size() - 1);
}

/// c* = -Var(h)⁻¹Cov(h, q), solved in the correlation scale (S = D R D, D = diag of sds) where
/// the factor's pivots have a meaning independent of the parameters' units.
ZvEstimate estimate_one(const Controls& c, const Factor& factor, const std::vector<double>& q) {
  const std::size_t m = c.count, rows = c.rows;
  ZvEstimate e;
  for (double v : q) e.mean += v / static_cast<double>(rows);
  std::vector<double> scaled_cov(m, 0.0);  // D⁻¹ Cov(h, q)
  for (std::size_t t = 0; t < rows; ++t)
    for (std::size_t j = 0; j < m; ++j) scaled_cov[j] += c.centred[t * m + j] * (q[t] - e.mean);
  for (std::size_t j = 0; j < m; ++j) scaled_cov[j] /= static_cast<double>(rows - 1) * c.scale[j];
  const std::vector<double> solved = cholesky_solve(factor, scaled_cov);  // R⁻¹ D⁻¹ Cov(h, q)
  e.coefficients.resize(m);
  for (std::size_t j = 0; j < m; ++j) e.coefficients[j] = -solved[j] / c.scale[j];
  // q̃_t = q_t + c*ᵀh_t, with the uncentred controls h_t (their expectation under π is 0).
  e.corrected.resize(rows);
  for (std::size_t t = 0; t < rows; ++t) {
    double correction = 0.0;
    for (std::size_t j = 0; j < m; ++j) correction += e.coefficients[j] * (c.centred[t * m + j] + c.means[j]);
    e.corrected[t] = q[t] + correction;
  }
  for (double v : e.corrected) e.zv_mean += v / static_cast<double>(rows);
  e.variance = sample_variance(q);
  e.zv_variance = sample_variance(e.corrected);
  return e;
}

void check_shapes(const DrawMatrix& points, const DrawMatrix& scores, const DrawMatrix& quantities, int order) {
  if (order != 1 && order != 2) throw Error(fmt::format("zero variance: order {} is not 1 or 2", order));
  if (points.empty()) throw Error("zero variance: no draws");
  const std::size_t d = points.front().size(), rows = points.size();
  if (scores.size() != rows || quantities.size() != rows)
    throw Error(fmt::format("zero variance: {} draws but {} gradients and {} rows of quantities", rows, scores.size(),
                            quantities.size()));
  for (std::size_t t = 0; t < rows; ++t) {
    if (points[t].size() != d || scores[t].size() != d)
      throw Error(fmt::format("zero variance: draw {} has {} parameters and {} gradient entries, expected {}", t + 1,
                              points[t].size(), scores[t].size(), d));
    for (std::size_t j = 0; j < d; ++j)
      if (!std::isfinite(points[t][j]) || !std::isfinite(scores[t][j]))
        throw Error(fmt::format("zero variance: draw {} has a non-finite parameter or gradient (coordinate {})", t + 1, j + 1));
    if (quantities[t].size() != quantities.front().size())
      throw Error(fmt::format("zero variance: draw {} has {} quantities, expected {}", t + 1, quantities[t].size(),
                              quantities.front().size()));
    for (double v : quantities[t])
      if (!std::isfinite(v)) throw Error(fmt::format("zero variance: draw {} has a non-finite quantity", t + 1));
  }
  const std::size_t controls = zv_control_count(d, order);
  // The sample covariance of m controls from T draws has rank at most T - 1.
  if (rows <= controls)
    throw Error(fmt::format("zero variance of order {}: {} draws, but its {} control variates (d = {}) need more draws "
                            "than controls, at least {}",
                            order, rows, controls, d, controls + 1));
}

}  // namespace zv_parts

std::size_t zv_control_count(std::size_t dimension, int order) {
  return order == 1 ? dimension : dimension * (dimension + 3) / 2;
}

std::vector<std::string> zv_control_names(std::size_t d, int order) {
  std::vector<std::string> names;
  for (std::size_t j = 1; j <= d; ++j) names.push_back(fmt::format("z[{}]", j));
  if (order == 1) return names;
  for (std::size_t j = 1; j <= d; ++j) names.push_back(fmt::format("1 + θ[{}]z[{}]", j, j));
  for (std::size_t j = 1; j <= d; ++j)
    for (std::size_t k = j + 1; k <= d; ++k) names.push_back(fmt::format("θ[{}]z[{}] + θ[{}]z[{}]", j, k, k, j));
  return names;
}

void zv_controls(std::span<const double> theta, std::span<const double> z, int order, std::span<double> out) {
  const std::size_t d = theta.size();
  std::size_t at = 0;
  for (std::size_t j = 0; j < d; ++j) out[at++] = z[j];  // ∂P/∂a_j · z = z_j
  if (order == 1) return;
  // b_jj: ΔP contributes 1 and ∇P·z contributes θ_j z_j (P's θ_j²/2 term).
  for (std::size_t j = 0; j < d; ++j) out[at++] = 1.0 + theta[j] * z[j];
  // b_jk = b_kj, j < k: P's θ_j θ_k term has ∇ = (θ_k e_j + θ_j e_k) and no Laplacian.
  for (std::size_t j = 0; j < d; ++j)
    for (std::size_t k = j + 1; k < d; ++k) out[at++] = theta[j] * z[k] + theta[k] * z[j];
}

namespace zv_parts {

struct Fold {
  DrawMatrix points, scores, quantities;
  std::vector<std::size_t> rows;  // their rows in the whole
};

std::array<Fold, 2> split(const DrawMatrix& points, const DrawMatrix& scores, const DrawMatrix& quantities,
                          const std::vector<bool>& in_first_fold) {
  if (in_first_fold.size() != points.size())
    throw Error(fmt::format("zero variance: {} fold labels for {} draws", in_first_fold.size(), points.size()));
  std::array<Fold, 2> folds;
  for (std::size_t t = 0; t < points.size(); ++t) {
    Fold& fold = folds[in_first_fold[t] ? 0 : 1];
    fold.points.push_back(points[t]);
    fold.scores.push_back(scores[t]);
    fold.quantities.push_back(quantities[t]);
    fold.rows.push_back(t);
  }
  return folds;
}

}  // namespace zv_parts

ZvResult zero_variance_cross_fitted(const DrawMatrix& points, const DrawMatrix& scores, const DrawMatrix& quantities,
                                    int order, const std::vector<bool>& in_first_fold) {
  zv_parts::check_shapes(points, scores, quantities, order);
  const auto folds = zv_parts::split(points, scores, quantities, in_first_fold);
  const ZvResult fits[2] = {zero_variance(folds[0].points, folds[0].scores, folds[0].quantities, order),
                            zero_variance(folds[1].points, folds[1].scores, folds[1].quantities, order)};
  ZvResult result;
  result.dropped = fits[0].dropped;
  for (const auto& name : fits[1].dropped)
    if (std::find(result.dropped.begin(), result.dropped.end(), name) == result.dropped.end()) result.dropped.push_back(name);
  std::vector<double> controls(zv_control_count(points.front().size(), order)), q(points.size());
  for (std::size_t k = 0; k < quantities.front().size(); ++k) {
    ZvEstimate e;
    e.coefficients = fits[0].estimates[k].coefficients;
    e.corrected.resize(points.size());
    for (std::size_t f = 0; f < 2; ++f) {
      const auto& other = fits[1 - f].estimates[k].coefficients;
      for (std::size_t i = 0; i < folds[f].rows.size(); ++i) {
        zv_controls(folds[f].points[i], folds[f].scores[i], order, controls);
        double correction = 0.0;
        for (std::size_t j = 0; j < controls.size(); ++j) correction += other[j] * controls[j];
        e.corrected[folds[f].rows[i]] = folds[f].quantities[i][k] + correction;
      }
    }
    for (std::size_t t = 0; t < points.size(); ++t) q[t] = quantities[t][k];
    for (std::size_t t = 0; t < points.size(); ++t) {
      e.mean += q[t] / static_cast<double>(points.size());
      e.zv_mean += e.corrected[t] / static_cast<double>(points.size());
    }
    e.variance = zv_parts::sample_variance(q);
    e.zv_variance = zv_parts::sample_variance(e.corrected);
    result.estimates.push_back(std::move(e));
  }
  return result;
}

ZvResult zero_variance(const DrawMatrix& points, const DrawMatrix& scores, const DrawMatrix& quantities, int order) {
  zv_parts::check_shapes(points, scores, quantities, order);
  const auto controls = zv_parts::centred_controls(points, scores, order);
  const auto factor = zv_parts::correlation_cholesky(controls);
  const auto names = zv_control_names(points.front().size(), order);
  ZvResult result;
  for (std::size_t j = 0; j < names.size(); ++j)
    if (!factor.kept[j]) result.dropped.push_back(names[j]);
  std::vector<double> q(points.size());
  for (std::size_t k = 0; k < quantities.front().size(); ++k) {
    for (std::size_t t = 0; t < points.size(); ++t) q[t] = quantities[t][k];
    result.estimates.push_back(zv_parts::estimate_one(controls, factor, q));
  }
  return result;
}

}  // namespace sgmcmc
