// The glm plugin's batch kernels, one set per likelihood: the same one pass over a batch's rows
// as logistic's (../regression/row_blocks.hpp), with the likelihood's scalar in place of the
// logistic one. z_i = x_iᵀβ; f_i = loss(y_i, z_i); ∇f_i = s_i x_i with s_i = ∂f_i/∂z_i
// (likelihood_math.hpp). Empty `weights` means every weight is 1.
#pragma once
#include <cstddef>
#include <span>

#include "design_matrix.hpp"
#include "likelihoods.hpp"

namespace glm {

using regression::DesignMatrix;

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

}  // namespace glm
