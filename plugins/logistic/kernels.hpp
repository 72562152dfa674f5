// Logistic regression's batch kernels: the whole per-iteration cost of a minibatch step, one pass
// over the batch's rows (../regression/row_blocks.hpp), fused (the dot product, the GLM scalar
// and the axpy while the row is in L1), with the rows `prefetch` ahead requested from memory so
// that several cache misses are in flight at once.
#pragma once
#include <cstddef>
#include <span>

#include "design_matrix.hpp"

namespace logistic {

using regression::DesignMatrix;

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
  /// Both in one pass over the rows: gradient += Σ_k w_k ∇f_{items[k]}(β), returning Σ_k w_k f_{items[k]}(β)
  /// (the same sums, in the same order, as the two kernels above)
  double (*add_weighted_gradients_and_potential)(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                                                 std::span<const double> weights, std::span<const double> beta,
                                                 std::span<double> gradient);
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
