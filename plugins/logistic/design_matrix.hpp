// The data of a logistic regression held for speed: labels y ∈ {-1, +1} and rows x_i with the
// intercept first, row-major, each row padded to whole 64-byte cache lines and the block aligned
// to them, so that a random row costs the fewest cache-line fetches. The kernels below are the
// whole per-iteration cost of a minibatch step: one pass over the batch's rows, fused (the dot
// product, the GLM scalar and the axpy while the row is in L1), with the next rows prefetched.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

namespace logistic {

class DesignMatrix {
public:
  DesignMatrix() = default;
  /// rows × (features + 1) with x_i0 = 1 (the intercept) and the rest zero.
  DesignMatrix(std::size_t rows, std::size_t features);

  std::size_t rows() const { return rows_; }
  std::size_t columns() const { return columns_; }  // features + 1
  std::size_t stride() const { return stride_; }    // columns rounded up to 8 doubles
  double* row(std::size_t i) { return data_.get() + i * stride_; }
  const double* row(std::size_t i) const { return data_.get() + i * stride_; }
  std::vector<double> y;

private:
  struct Free {
    void operator()(double* p) const { std::free(p); }
  };
  std::size_t rows_ = 0, columns_ = 0, stride_ = 0;
  std::unique_ptr<double[], Free> data_;
};

// The kernels. z_i = x_iᵀβ; f_i = log(1 + exp(-y_i z_i)); ∇f_i = s_i x_i, s_i = -y_i σ(-y_i z_i).
// `weights` empty means every weight is 1.

/// gradient += Σ_k w_k ∇f_{items[k]}(β)
void add_weighted_gradients(const DesignMatrix& x, std::span<const std::size_t> items, std::span<const double> weights,
                            std::span<const double> beta, std::span<double> gradient);
/// Σ_k w_k f_{items[k]}(β)
double weighted_potential(const DesignMatrix& x, std::span<const std::size_t> items, std::span<const double> weights,
                          std::span<const double> beta);
/// out[k] ← s_{items[k]}(β)
void glm_scalars(const DesignMatrix& x, std::span<const std::size_t> items, std::span<const double> beta,
                 std::span<double> out);
/// gradient += Σ_k scales[k] x_{items[k]}
void add_scaled_rows(const DesignMatrix& x, std::span<const std::size_t> items, std::span<const double> scales,
                     std::span<double> gradient);
/// out[i] ← log p(y_i | x_i, β) = -f_i(β) for every row
void log_likelihoods(const DesignMatrix& x, std::span<const double> beta, std::span<double> out);

}  // namespace logistic
