// The kernels' bodies, compiled once per instruction set: kernels_x86_64_v3.cpp (AVX2 + FMA)
// and kernels_baseline.cpp include this file with REGRESSION_ISA naming their namespace, and
// kernels.cpp picks one when the plugin loads. Whole files, not attributes on functions, so that
// every inlined helper gets the instruction set too. The pass over the rows is the shared one of
// ../regression/row_blocks.hpp; what is logistic here is the scalar of each row.
#include "kernels.hpp"
#include "row_blocks.hpp"

namespace logistic::REGRESSION_ISA {

using namespace regression::REGRESSION_ISA;

/// s = -y σ(-y z) = -y / (1 + exp(y z)); exp overflowing to inf gives the right limit 0.
double glm_scalar(double y, double z) { return -y / (1.0 + std::exp(y * z)); }

/// log(1 + exp(t)) = max(t, 0) + log(1 + exp(-|t|)): no overflow for large t, no loss of
/// precision for very negative t, and no branch, so a loop of it vectorises.
double softplus(double t) { return std::max(t, 0.0) + std::log1p(std::exp(-std::abs(t))); }

// The bodies, shared by both storages; the exported kernels below instantiate them.

template <class Real>
void add_weighted_gradients_body(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                                 std::span<const double> weights, std::span<const double> beta,
                                 std::span<double> gradient) {
  for_each_block(x, items, beta, [&](const Block& block) {
    double scale[block_rows];
    for (std::size_t k = 0; k < block.size; ++k) scale[k] = glm_scalar(block.y[k], block.z[k]);
    for (std::size_t k = 0; k < block.size; ++k)
      axpy(weight(weights, block.first + k) * scale[k], x.row(items[block.first + k]), gradient);
  });
}

template <class Real>
double weighted_potential_body(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                               std::span<const double> weights, std::span<const double> beta) {
  double sum = 0.0;
  for_each_block(x, items, beta, [&](const Block& block) {
    double term[block_rows];
    for (std::size_t k = 0; k < block.size; ++k) term[k] = softplus(-block.y[k] * block.z[k]);
    for (std::size_t k = 0; k < block.size; ++k) sum += weight(weights, block.first + k) * term[k];
  });
  return sum;
}

template <class Real>
double add_weighted_gradients_and_potential_body(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                                                 std::span<const double> weights, std::span<const double> beta,
                                                 std::span<double> gradient) {
  double sum = 0.0;
  for_each_block(x, items, beta, [&](const Block& block) {
    double scale[block_rows], term[block_rows];
    for (std::size_t k = 0; k < block.size; ++k) scale[k] = glm_scalar(block.y[k], block.z[k]);
    for (std::size_t k = 0; k < block.size; ++k)
      axpy(weight(weights, block.first + k) * scale[k], x.row(items[block.first + k]), gradient);
    for (std::size_t k = 0; k < block.size; ++k) term[k] = softplus(-block.y[k] * block.z[k]);
    for (std::size_t k = 0; k < block.size; ++k) sum += weight(weights, block.first + k) * term[k];
  });
  return sum;
}

template <class Real>
void glm_scalars_body(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                      std::span<const double> beta, std::span<double> out) {
  for_each_block(x, items, beta, [&](const Block& block) {
    for (std::size_t k = 0; k < block.size; ++k) out[block.first + k] = glm_scalar(block.y[k], block.z[k]);
  });
}

template <class Real>
void log_likelihoods_body(const DesignMatrix<Real>& x, std::span<const double> beta, std::span<double> out) {
  for (std::size_t i = 0; i < x.rows(); ++i) out[i] = dot(x.row(i), beta);
  for (std::size_t i = 0; i < x.rows(); ++i) out[i] = -softplus(-x.y[i] * out[i]);
}

template <class Real>
constexpr Kernels<Real> kernels_for{add_weighted_gradients_body<Real>, weighted_potential_body<Real>,
                                    add_weighted_gradients_and_potential_body<Real>, glm_scalars_body<Real>, add_scaled_rows_body<Real>, log_likelihoods_body<Real>};
extern const Kernels<double> double_kernels = kernels_for<double>;
extern const Kernels<float> float_kernels = kernels_for<float>;

}  // namespace logistic::REGRESSION_ISA
