// Batch-level building blocks for neural-network likelihoods, with their adjoints: a dense layer
// over a whole batch as matrix products (BLAS), activations, and the negative log densities of the
// usual output heads. A model's batch potential Σ_k w_k f_k(θ) and its gradient are written as one
// forward pass over the batch and one backward pass (reverse mode by hand), every layer a GEMM:
//
//   forward:   Z_l = A_{l-1} W_l + 1 b_lᵀ,   A_l = φ(Z_l)          (A_0 = X, the batch's rows)
//   head:      U = Σ_k w_k f(y_k, z_k),      D_L = ∂U/∂Z_L          (the *_potential functions)
//   backward:  ∇W_l += A_{l-1}ᵀ D_l,  ∇b_l += 1ᵀ D_l,  D_{l-1} = (D_l W_lᵀ) ⊙ φ'(Z_{l-1})
//
// Layout: every matrix row-major, one row per batch item; W_l is in × out (row i holds the
// weights from input i), so Z = X W needs no transpose. Real is double or float (storage and
// arithmetic; the potentials are summed in double). The signs follow the framework's: f = -log p,
// and every adjoint is of f, so a model adds them to ∇U as they are.
//
// Needs a CBLAS (OpenBLAS): `sgmcmc_add_model_plugin(<name> SOURCES ... LAYERS)` links it.
// plugins/mlp is written with these blocks; tests/unit/layers_test.cpp checks each against finite
// differences of independent scalar loops.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>
#include <string_view>

#include <cblas.h>

namespace sgmcmc::layers {

/// A row-major rows × cols block; `stride` elements between rows (cols unless a view of wider rows).
template <class Real>
struct Matrix {
  Real* data = nullptr;
  std::size_t rows = 0, cols = 0, stride = 0;
  Matrix() = default;
  Matrix(Real* data_, std::size_t rows_, std::size_t cols_) : data(data_), rows(rows_), cols(cols_), stride(cols_) {}
  Matrix(Real* data_, std::size_t rows_, std::size_t cols_, std::size_t stride_)
      : data(data_), rows(rows_), cols(cols_), stride(stride_) {}
  Real* row(std::size_t i) const { return data + i * stride; }
  Real& operator()(std::size_t i, std::size_t j) const { return data[i * stride + j]; }
  /// The same block, read-only.
  operator Matrix<const Real>() const { return {data, rows, cols, stride}; }
};

namespace detail {

inline void gemm(CBLAS_TRANSPOSE a_transposed, CBLAS_TRANSPOSE b_transposed, std::size_t m, std::size_t n,
                 std::size_t k, double alpha, const double* a, std::size_t lda, const double* b, std::size_t ldb,
                 double beta, double* c, std::size_t ldc) {
  cblas_dgemm(CblasRowMajor, a_transposed, b_transposed, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}
inline void gemm(CBLAS_TRANSPOSE a_transposed, CBLAS_TRANSPOSE b_transposed, std::size_t m, std::size_t n,
                 std::size_t k, float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                 float beta, float* c, std::size_t ldc) {
  cblas_sgemm(CblasRowMajor, a_transposed, b_transposed, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

inline double weight(std::span<const double> weights, std::size_t k) { return weights.empty() ? 1.0 : weights[k]; }

}  // namespace detail

// ---- Dense layer ---------------------------------------------------------------------------------

/// Z ← X W + 1 bᵀ: X rows × in, W in × out (row-major, contiguous), b of length out, Z rows × out.
template <class Real>
void dense_forward(Matrix<const Real> x, const Real* w, const Real* b, Matrix<Real> z) {
  for (std::size_t i = 0; i < z.rows; ++i) std::copy_n(b, z.cols, z.row(i));
  detail::gemm(CblasNoTrans, CblasNoTrans, x.rows, z.cols, x.cols, Real(1), x.data, x.stride, w, z.cols, Real(1),
               z.data, z.stride);
}

/// The parameters' part of dense_forward's adjoint, given D = ∂U/∂Z (rows × out):
/// ∇W += Xᵀ D and ∇b += 1ᵀ D.
template <class Real>
void dense_parameter_adjoint(Matrix<const Real> x, Matrix<const Real> d, Real* grad_w, Real* grad_b) {
  detail::gemm(CblasTrans, CblasNoTrans, x.cols, d.cols, x.rows, Real(1), x.data, x.stride, d.data, d.stride, Real(1),
               grad_w, d.cols);
  for (std::size_t i = 0; i < d.rows; ++i) {
    const Real* row = d.row(i);
    for (std::size_t j = 0; j < d.cols; ++j) grad_b[j] += row[j];
  }
}

/// The input's part: dX ← D Wᵀ (∂U/∂X, rows × in), W in × out.
template <class Real>
void dense_input_adjoint(const Real* w, Matrix<const Real> d, Matrix<Real> dx) {
  detail::gemm(CblasNoTrans, CblasTrans, d.rows, dx.cols, d.cols, Real(1), d.data, d.stride, w, d.cols, Real(0),
               dx.data, dx.stride);
}

/// Both: ∇W += Xᵀ D, ∇b += 1ᵀ D and, when `dx.data` is not null, dX ← D Wᵀ (the first layer's
/// input needs none).
template <class Real>
void dense_backward(Matrix<const Real> x, const Real* w, Matrix<const Real> d, Real* grad_w, Real* grad_b,
                    Matrix<Real> dx) {
  dense_parameter_adjoint(x, d, grad_w, grad_b);
  if (dx.data) dense_input_adjoint(w, d, dx);
}

// ---- Activations ---------------------------------------------------------------------------------

enum class Activation { tanh, relu, gelu };

/// "tanh", "relu", "gelu" → Activation; false for anything else.
inline bool parse_activation(std::string_view name, Activation& out) {
  if (name == "tanh") out = Activation::tanh;
  else if (name == "relu") out = Activation::relu;
  else if (name == "gelu") out = Activation::gelu;
  else return false;
  return true;
}

namespace detail {
/// Φ(z), the standard normal distribution function, and φ(z) its density.
inline double normal_cdf(double z) { return 0.5 * std::erfc(-z * std::numbers::sqrt2 / 2); }
inline double normal_pdf(double z) { return std::exp(-0.5 * z * z) * (std::numbers::inv_sqrtpi / std::numbers::sqrt2); }

/// tanh(z) in a form a compiler vectorises when it has a vector exp (clang with
/// -fveclib=libmvec -fno-math-errno: glibc's libmvec), which glibc's scalar tanh is not (it was
/// 55% of a digits MLP's gradient): (1 - t)/(1 + t) with t = e^{-2|z|} and z's sign, and for
/// |z| < 0.04, where 1 - t would lose digits, the Taylor series to z⁹ (its first omitted term
/// is below 1e-16 relative). Relative error below 3e-15 everywhere (tests/unit/layers_test.cpp).
/// Beware -fveclib=libmvec on float storage in a baseline (SSE2) build: clang 19 widens floats
/// to double 4 at a time and calls libmvec's AVX2 exp with SSE registers, which gives wrong values
/// (plugins/mlp/network.cpp compiles only its double passes with it).
inline double tanh(double z) {
  const double x = std::abs(z), x2 = x * x;
  const double t = std::exp(-2.0 * x);
  const double quotient = (1.0 - t) / (1.0 + t);
  const double series =
      x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * (62.0 / 2835.0)))));
  return std::copysign(x < 0.04 ? series : quotient, z);
}
}  // namespace detail

/// A ← φ(Z) elementwise over n values (A may be Z): tanh; relu max(z, 0); gelu z Φ(z), the exact
/// (erf) form of Hendrycks & Gimpel (2016), PyTorch's default.
template <class Real>
void activate(Activation f, const Real* z, Real* a, std::size_t n) {
  switch (f) {
    case Activation::tanh:
      for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<Real>(detail::tanh(z[i]));
      break;
    case Activation::relu:
      for (std::size_t i = 0; i < n; ++i) a[i] = z[i] > Real(0) ? z[i] : Real(0);
      break;
    case Activation::gelu:
      for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<Real>(z[i] * detail::normal_cdf(z[i]));
      break;
  }
}

/// D ← D ⊙ φ'(Z) over n values, given Z and A = φ(Z): tanh 1 - a²; relu 1{z > 0}; gelu
/// Φ(z) + z φ(z).
template <class Real>
void activation_backward(Activation f, const Real* z, const Real* a, Real* d, std::size_t n) {
  switch (f) {
    case Activation::tanh:
      for (std::size_t i = 0; i < n; ++i) d[i] *= Real(1) - a[i] * a[i];
      break;
    case Activation::relu:
      for (std::size_t i = 0; i < n; ++i) {
        const Real incoming = d[i];  // read unconditionally: a conditional read kept clang from vectorising
        d[i] = z[i] > Real(0) ? incoming : Real(0);
      }
      break;
    case Activation::gelu:
      for (std::size_t i = 0; i < n; ++i) {
        const double x = z[i];
        d[i] = static_cast<Real>(d[i] * (detail::normal_cdf(x) + x * detail::normal_pdf(x)));
      }
      break;
  }
}

// ---- Output heads: U = Σ_k w_k f(y_k, z_k) and D = ∂U/∂Z ------------------------------------------
// `weights` empty means every w_k = 1. `d.data` null: the potential only.

/// log Σ_c exp(z_c) of one row, shifted by its maximum (no overflow at any finite z).
template <class Real>
double log_sum_exp(const Real* z, std::size_t n) {
  double high = z[0];
  for (std::size_t c = 1; c < n; ++c) high = std::max(high, static_cast<double>(z[c]));
  double sum = 0.0;
  for (std::size_t c = 0; c < n; ++c) sum += std::exp(static_cast<double>(z[c]) - high);
  return high + std::log(sum);
}

/// Each row of Z (rows × K logits) → its log-softmax, log p_c = z_c - log Σ exp(z); out may be Z.
template <class Real>
void log_softmax(Matrix<const Real> z, Matrix<Real> out) {
  for (std::size_t i = 0; i < z.rows; ++i) {
    const double normaliser = log_sum_exp(z.row(i), z.cols);
    for (std::size_t c = 0; c < z.cols; ++c) out(i, c) = static_cast<Real>(z(i, c) - normaliser);
  }
}

/// Categorical with logits (softmax): f_k = -log softmax(z_k)_{y_k} = log Σ_c e^{z_kc} - z_{k y_k},
/// D_k = w_k (softmax(z_k) - e_{y_k}). Labels are class indices 0..K-1.
template <class Real>
double categorical_potential(Matrix<const Real> z, std::span<const std::uint32_t> labels,
                             std::span<const double> weights, Matrix<Real> d) {
  double total = 0.0;
  for (std::size_t k = 0; k < z.rows; ++k) {
    const Real* logits = z.row(k);
    const double normaliser = log_sum_exp(logits, z.cols), w = detail::weight(weights, k);
    total += w * (normaliser - logits[labels[k]]);
    if (!d.data) continue;
    Real* adjoint = d.row(k);
    for (std::size_t c = 0; c < z.cols; ++c)
      adjoint[c] = static_cast<Real>(w * std::exp(static_cast<double>(logits[c]) - normaliser));
    adjoint[labels[k]] -= static_cast<Real>(w);
  }
  return total;
}

/// Bernoulli with a logit (one column of Z), y ∈ {0, 1}: f_k = log(1 + e^{z_k}) - y_k z_k,
/// D_k = w_k (σ(z_k) - y_k).
template <class Real>
double bernoulli_logit_potential(Matrix<const Real> z, std::span<const double> y, std::span<const double> weights,
                                 Matrix<Real> d) {
  double total = 0.0;
  for (std::size_t k = 0; k < z.rows; ++k) {
    const double logit = z(k, 0), w = detail::weight(weights, k);
    // log(1 + e^z) without overflow: max(z, 0) + log1p(e^{-|z|}).
    total += w * (std::max(logit, 0.0) + std::log1p(std::exp(-std::abs(logit))) - y[k] * logit);
    if (!d.data) continue;
    const double p = logit >= 0 ? 1.0 / (1.0 + std::exp(-logit)) : std::exp(logit) / (1.0 + std::exp(logit));
    d(k, 0) = static_cast<Real>(w * (p - y[k]));
  }
  return total;
}

/// Gaussian with mean z_k (one column of Z) and a fixed sd σ:
/// f_k = (y_k - z_k)²/(2σ²) + log σ + ½ log 2π, D_k = w_k (z_k - y_k)/σ².
template <class Real>
double gaussian_potential(Matrix<const Real> z, std::span<const double> y, double sd, std::span<const double> weights,
                          Matrix<Real> d) {
  const double precision = 1.0 / (sd * sd), constant = std::log(sd) + 0.5 * std::log(2.0 * std::numbers::pi);
  double total = 0.0;
  for (std::size_t k = 0; k < z.rows; ++k) {
    const double residual = static_cast<double>(z(k, 0)) - y[k], w = detail::weight(weights, k);
    total += w * (0.5 * precision * residual * residual + constant);
    if (d.data) d(k, 0) = static_cast<Real>(w * precision * residual);
  }
  return total;
}

}  // namespace sgmcmc::layers
