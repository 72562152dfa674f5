// The pass over a batch's rows that every regression kernel makes, compiled once per instruction
// set: a kernel file defines REGRESSION_ISA to its namespace (x86_64_v3 or baseline) before
// including this, so that every inlined helper gets that file's instruction set and the two
// copies never meet at link time. glm_kernels_body.hpp makes each likelihood's kernels from it,
// which differ only in the per-row scalar they compute from (y_i, z_i).
#include <algorithm>
#include <cmath>
#include <span>

#include "design_matrix.hpp"

#ifndef REGRESSION_ISA
#error "define REGRESSION_ISA to the namespace of this instruction set"
#endif

namespace regression::REGRESSION_ISA {

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

inline double weight(std::span<const double> weights, std::size_t k) { return weights.empty() ? 1.0 : weights[k]; }

// Batch kernels work in blocks of rows: the dot products of a block first, then its GLM scalars
// in one loop that the compiler vectorises, exp included (glibc's libmvec, -fveclib), then the
// axpys while the block's rows are still in L1. One exp per row would otherwise cost as much as
// the row's arithmetic.
constexpr std::size_t block_rows = 16;

struct Block {
  std::size_t first = 0, size = 0;  // positions in the batch
  double y[block_rows], z[block_rows];  // labels and x_iᵀβ (+ o_i) of the block's rows
};

/// Calls `use(block)` for consecutive blocks of `items` with their labels and dot products.
template <class Real, class Use>
void for_each_block(const DesignMatrix<Real>& x, std::span<const std::size_t> items, std::span<const double> beta,
                    Use use) {
  prefetch_start(x, items);
  const double* offset = x.offset.empty() ? nullptr : x.offset.data();  // glm's model.offset
  Block block;
  for (block.first = 0; block.first < items.size(); block.first += block_rows) {
    block.size = std::min(block_rows, items.size() - block.first);
    for (std::size_t k = 0; k < block.size; ++k) {
      prefetch_ahead(x, items, block.first + k);
      const std::size_t i = items[block.first + k];
      block.y[k] = x.y[i];
      block.z[k] = dot(x.row(i), beta);
    }
    if (offset)  // one test per block, outside the rows' loop (logistic's kernels have none)
      for (std::size_t k = 0; k < block.size; ++k) block.z[k] += offset[items[block.first + k]];
    use(block);
  }
}

/// gradient += Σ_k scales[k] x_{items[k]}: the GLM form's second half.
template <class Real>
void add_scaled_rows_body(const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                          std::span<const double> scales, std::span<double> gradient) {
  prefetch_start(x, items);
  for (std::size_t k = 0; k < items.size(); ++k) {
    prefetch_ahead(x, items, k);
    axpy(scales[k], x.row(items[k]), gradient);
  }
}

}  // namespace regression::REGRESSION_ISA
