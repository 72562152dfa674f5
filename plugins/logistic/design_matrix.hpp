// The data of a logistic regression held for speed: labels y ∈ {-1, +1} and rows x_i with the
// intercept first, row-major, each row padded to whole 64-byte cache lines and the block aligned
// to them, so that a random row costs the fewest cache-line fetches. Rows are stored as double
// or, to halve the memory traffic of a random gather, as float (`model.storage`); arithmetic is
// in double either way.
//
// The kernels are the whole per-iteration cost of a minibatch step: one pass over the batch's
// rows, fused (the dot product, the GLM scalar and the axpy while the row is in L1), with the
// rows `prefetch` ahead requested from memory so that several cache misses are in flight at once.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

namespace logistic {

struct StorageOptions {
  bool huge_pages = true;      // ask for transparent huge pages (madvise) on large matrices
  std::size_t prefetch = 8;    // rows prefetched ahead in batch kernels; 0 turns prefetching off
};

template <class Real>
class DesignMatrix {
public:
  DesignMatrix() = default;
  /// rows × (features + 1) with x_i0 = 1 (the intercept) and the rest zero.
  DesignMatrix(std::size_t rows, std::size_t features, StorageOptions options);

  std::size_t rows() const { return rows_; }
  std::size_t columns() const { return columns_; }  // features + 1
  Real* row(std::size_t i) { return data_.get() + i * stride_; }
  const Real* row(std::size_t i) const { return data_.get() + i * stride_; }
  std::size_t prefetch() const { return prefetch_; }
  std::vector<double> y;

private:
  struct Free {
    void operator()(Real* p) const { std::free(p); }
  };
  std::size_t rows_ = 0, columns_ = 0, stride_ = 0, prefetch_ = 0;
  std::unique_ptr<Real[], Free> data_;
};

/// The kernels, for either storage. z_i = x_iᵀβ; f_i = log(1 + exp(-y_i z_i));
/// ∇f_i = s_i x_i with s_i = -y_i σ(-y_i z_i). Empty `weights` means every weight is 1.
template <class Real>
struct Kernels {
  /// gradient += Σ_k w_k ∇f_{items[k]}(β)
  void (*add_weighted_gradients)(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                                 std::span<const double> weights, std::span<const double> beta, std::span<double> gradient);
  /// Σ_k w_k f_{items[k]}(β)
  double (*weighted_potential)(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                               std::span<const double> weights, std::span<const double> beta);
  /// out[k] ← s_{items[k]}(β)
  void (*glm_scalars)(const DesignMatrix<Real>& x, std::span<const std::size_t> items, std::span<const double> beta,
                      std::span<double> out);
  /// gradient += Σ_k scales[k] x_{items[k]}
  void (*add_scaled_rows)(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                          std::span<const double> scales, std::span<double> gradient);
  /// out[i] ← log p(y_i | x_i, β) = -f_i(β) for every row
  void (*log_likelihoods)(const DesignMatrix<Real>& x, std::span<const double> beta, std::span<double> out);
};

/// The kernels for this CPU (see kernels_body.hpp).
template <class Real>
const Kernels<Real>& kernels();
template <>
const Kernels<double>& kernels<double>();
template <>
const Kernels<float>& kernels<float>();

}  // namespace logistic
