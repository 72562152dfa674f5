// The kernels' bodies, compiled once per instruction set: kernels_x86_64_v3.cpp (AVX2 + FMA)
// and kernels_baseline.cpp include this file with LOGISTIC_ISA naming their namespace, and
// design_matrix.cpp picks one when the plugin loads. Whole files, not attributes on functions,
// so that every inlined helper gets the instruction set too.
#include <algorithm>
#include <cmath>
#include <span>

#include "design_matrix.hpp"

#ifndef LOGISTIC_ISA
#error "define LOGISTIC_ISA to the namespace of this instruction set"
#endif

namespace logistic::LOGISTIC_ISA {

template <class Real>
void prefetch_row(const DesignMatrix<Real>& x, std::span<const std::size_t> items, std::size_t k) {
  if (k >= items.size()) return;
  const char* row = reinterpret_cast<const char*>(x.row(items[k]));
  for (std::size_t byte = 0; byte < x.columns() * sizeof(Real); byte += 64) __builtin_prefetch(row + byte);
}

/// Starts the first rows' fetches; `k`-th step then asks for row k + distance.
template <class Real>
void prefetch_start(const DesignMatrix<Real>& x, std::span<const std::size_t> items) {
  for (std::size_t k = 0; k < x.prefetch(); ++k) prefetch_row(x, items, k);
}

template <class Real>
void prefetch_ahead(const DesignMatrix<Real>& x, std::span<const std::size_t> items, std::size_t k) {
  if (x.prefetch()) prefetch_row(x, items, k + x.prefetch());
}

template <class Real>
double dot(const Real* row, std::span<const double> beta) {
#pragma clang fp reassociate(on)
  double sum = 0.0;
  for (std::size_t j = 0; j < beta.size(); ++j) sum += static_cast<double>(row[j]) * beta[j];
  return sum;
}

template <class Real>
void axpy(double scale, const Real* row, std::span<double> out) {
  for (std::size_t j = 0; j < out.size(); ++j) out[j] += scale * static_cast<double>(row[j]);
}

/// s = -y σ(-y z) = -y / (1 + exp(y z)); exp overflowing to inf gives the right limit 0.
double glm_scalar(double y, double z) { return -y / (1.0 + std::exp(y * z)); }

/// log(1 + exp(t)) = max(t, 0) + log(1 + exp(-|t|)): no overflow for large t, no loss of
/// precision for very negative t, and no branch, so a loop of it vectorises.
double softplus(double t) { return std::max(t, 0.0) + std::log1p(std::exp(-std::abs(t))); }

double weight(std::span<const double> weights, std::size_t k) { return weights.empty() ? 1.0 : weights[k]; }

// Batch kernels work in blocks of rows: the dot products of a block first, then its GLM scalars
// in one loop that the compiler vectorises, exp included (glibc's libmvec, -fveclib), then the
// axpys while the block's rows are still in L1. One exp per row would otherwise cost as much as
// the row's arithmetic.
constexpr std::size_t block_rows = 16;

struct Block {
  std::size_t first = 0, size = 0;  // positions in the batch
  double y[block_rows], z[block_rows];  // labels and x_iᵀβ of the block's rows
};

/// Calls `use(block)` for consecutive blocks of `items` with their labels and dot products.
template <class Real, class Use>
void for_each_block(const DesignMatrix<Real>& x, std::span<const std::size_t> items, std::span<const double> beta,
                           Use use) {
  prefetch_start(x, items);
  Block block;
  for (block.first = 0; block.first < items.size(); block.first += block_rows) {
    block.size = std::min(block_rows, items.size() - block.first);
    for (std::size_t k = 0; k < block.size; ++k) {
      prefetch_ahead(x, items, block.first + k);
      const std::size_t i = items[block.first + k];
      block.y[k] = x.y[i];
      block.z[k] = dot(x.row(i), beta);
    }
    use(block);
  }
}

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
void glm_scalars_body(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                             std::span<const double> beta, std::span<double> out) {
  for_each_block(x, items, beta, [&](const Block& block) {
    for (std::size_t k = 0; k < block.size; ++k) out[block.first + k] = glm_scalar(block.y[k], block.z[k]);
  });
}

template <class Real>
void add_scaled_rows_body(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                                 std::span<const double> scales, std::span<double> gradient) {
  prefetch_start(x, items);
  for (std::size_t k = 0; k < items.size(); ++k) {
    prefetch_ahead(x, items, k);
    axpy(scales[k], x.row(items[k]), gradient);
  }
}

template <class Real>
void log_likelihoods_body(const DesignMatrix<Real>& x, std::span<const double> beta, std::span<double> out) {
  for (std::size_t i = 0; i < x.rows(); ++i) out[i] = dot(x.row(i), beta);
  for (std::size_t i = 0; i < x.rows(); ++i) out[i] = -softplus(-x.y[i] * out[i]);
}

template <class Real>
constexpr Kernels<Real> kernels_for{add_weighted_gradients_body<Real>, weighted_potential_body<Real>,
                                    glm_scalars_body<Real>, add_scaled_rows_body<Real>, log_likelihoods_body<Real>};
extern const Kernels<double> double_kernels = kernels_for<double>;
extern const Kernels<float> float_kernels = kernels_for<float>;

}  // namespace logistic::LOGISTIC_ISA
