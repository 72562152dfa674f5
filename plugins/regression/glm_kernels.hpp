// The batch kernels of the GLM likelihoods, one set per likelihood, shared by the `glm` plugin
// (every family but categorical) and `logistic` (bernoulli_logit): one pass over a batch's rows
// (row_blocks.hpp), fused (the dot product, the likelihood's scalar and the axpy while the row is
// in L1), with rows `prefetch` ahead requested from memory. z_i = x_iᵀβ (+ the row's offset);
// f_i = loss(y_i, z_i); ∇f_i = s_i x_i with s_i = ∂f_i/∂z_i (likelihood_math.hpp). Empty
// `weights` means every weight is 1.
#pragma once
#include <cstddef>
#include <span>

#include "design_matrix.hpp"
#include "likelihoods.hpp"

namespace regression {

template <class Real>
struct GlmKernels {
  /// gradient += Σ_k w_k ∇f_{items[k]}(β)
  void (*add_weighted_gradients)(const LikelihoodConstants& c, const DesignMatrix<Real>& x,
                                 std::span<const std::size_t> items, std::span<const double> weights,
                                 std::span<const double> beta, std::span<double> gradient);
  /// Σ_k w_k f_{items[k]}(β)
  double (*weighted_potential)(const LikelihoodConstants& c, const DesignMatrix<Real>& x,
                               std::span<const std::size_t> items, std::span<const double> weights,
                               std::span<const double> beta);
  /// Both in one pass over the rows: gradient += Σ_k w_k ∇f_{items[k]}(β), returning Σ_k w_k f_{items[k]}(β)
  /// (the same sums, in the same order, as the two kernels above)
  double (*add_weighted_gradients_and_potential)(const LikelihoodConstants& c, const DesignMatrix<Real>& x,
                                                 std::span<const std::size_t> items, std::span<const double> weights,
                                                 std::span<const double> beta, std::span<double> gradient);
  /// out[k] ← s_{items[k]}(β)
  void (*glm_scalars)(const LikelihoodConstants& c, const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                      std::span<const double> beta, std::span<double> out);
  /// gradient += Σ_k scales[k] x_{items[k]}
  void (*add_scaled_rows)(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                          std::span<const double> scales, std::span<double> gradient);
  /// out[i] ← log p(y_i | x_i, β) = -f_i(β) for every row
  void (*log_likelihoods)(const LikelihoodConstants& c, const DesignMatrix<Real>& x, std::span<const double> beta,
                          std::span<double> out);
};

/// The kernels of `likelihood` for this CPU.
template <class Real>
const GlmKernels<Real>& glm_kernels(Likelihood likelihood);

}  // namespace regression
