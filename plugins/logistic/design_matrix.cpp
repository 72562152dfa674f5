#include "design_matrix.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <new>

namespace logistic {

DesignMatrix::DesignMatrix(std::size_t rows, std::size_t features)
    : rows_(rows), columns_(features + 1), stride_((features + 1 + 7) / 8 * 8) {
  const std::size_t bytes = std::max<std::size_t>(rows_ * stride_ * sizeof(double), 64);
  // Aligned to 2 MiB when large, so that transparent huge pages can back it: a random row then
  // rarely misses the TLB as well as the cache.
  const std::size_t alignment = bytes >= (std::size_t{4} << 20) ? std::size_t{2} << 20 : 64;
  void* memory = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (!memory) throw std::bad_alloc();
  if (alignment > 64) madvise(memory, bytes, MADV_HUGEPAGE);  // advice only: failure changes nothing
  data_.reset(static_cast<double*>(memory));
  std::fill_n(data_.get(), rows_ * stride_, 0.0);
  for (std::size_t i = 0; i < rows_; ++i) row(i)[0] = 1.0;
  y.assign(rows_, 1.0);
}

// The kernels are compiled twice, for x86-64-v3 (AVX2 + FMA) and for the baseline, and picked
// when the plugin loads: the same plugin is fast on current CPUs and runs on old ones.
// `reassociate` lets the compiler split the dot product's sum across vector lanes; the result
// is still the same for the same binary, CPU and inputs, so runs stay reproducible.
#define LOGISTIC_KERNEL __attribute__((target_clones("arch=x86-64-v3", "default")))

namespace {

// How many rows ahead to prefetch: enough to cover a DRAM latency (~100 ns) with a few rows'
// work in flight, measured on the covtype shape (see tests/benchmarks/logistic_benchmark.cpp).
constexpr std::size_t prefetch_distance = 8;

inline void prefetch_row(const DesignMatrix& x, std::span<const std::size_t> items, std::size_t k) {
  if (k >= items.size()) return;
  const char* row = reinterpret_cast<const char*>(x.row(items[k]));
  for (std::size_t byte = 0; byte < x.columns() * sizeof(double); byte += 64) __builtin_prefetch(row + byte);
}

inline double dot(const double* row, std::span<const double> beta) {
#pragma clang fp reassociate(on)
  double sum = 0.0;
  for (std::size_t j = 0; j < beta.size(); ++j) sum += row[j] * beta[j];
  return sum;
}

inline void axpy(double scale, const double* row, std::span<double> out) {
  for (std::size_t j = 0; j < out.size(); ++j) out[j] += scale * row[j];
}

/// s = -y σ(-y z) = -y / (1 + exp(y z)); exp overflowing to inf gives the right limit 0.
inline double glm_scalar(double y, double z) { return -y / (1.0 + std::exp(y * z)); }

/// log(1 + exp(t)) without overflow for large t or loss of precision for very negative t.
inline double softplus(double t) { return t > 0.0 ? t + std::log1p(std::exp(-t)) : std::log1p(std::exp(t)); }

inline double weight(std::span<const double> weights, std::size_t k) { return weights.empty() ? 1.0 : weights[k]; }

}  // namespace

LOGISTIC_KERNEL
void add_weighted_gradients(const DesignMatrix& x, std::span<const std::size_t> items, std::span<const double> weights,
                            std::span<const double> beta, std::span<double> gradient) {
  for (std::size_t k = 0; k < prefetch_distance; ++k) prefetch_row(x, items, k);
  for (std::size_t k = 0; k < items.size(); ++k) {
    prefetch_row(x, items, k + prefetch_distance);
    const double* row = x.row(items[k]);
    axpy(weight(weights, k) * glm_scalar(x.y[items[k]], dot(row, beta)), row, gradient);
  }
}

LOGISTIC_KERNEL
double weighted_potential(const DesignMatrix& x, std::span<const std::size_t> items, std::span<const double> weights,
                          std::span<const double> beta) {
  double sum = 0.0;
  for (std::size_t k = 0; k < items.size(); ++k) {
    prefetch_row(x, items, k + prefetch_distance);
    const std::size_t i = items[k];
    sum += weight(weights, k) * softplus(-x.y[i] * dot(x.row(i), beta));
  }
  return sum;
}

LOGISTIC_KERNEL
void glm_scalars(const DesignMatrix& x, std::span<const std::size_t> items, std::span<const double> beta,
                 std::span<double> out) {
  for (std::size_t k = 0; k < items.size(); ++k) {
    prefetch_row(x, items, k + prefetch_distance);
    out[k] = glm_scalar(x.y[items[k]], dot(x.row(items[k]), beta));
  }
}

LOGISTIC_KERNEL
void add_scaled_rows(const DesignMatrix& x, std::span<const std::size_t> items, std::span<const double> scales,
                     std::span<double> gradient) {
  for (std::size_t k = 0; k < items.size(); ++k) {
    prefetch_row(x, items, k + prefetch_distance);
    axpy(scales[k], x.row(items[k]), gradient);
  }
}

LOGISTIC_KERNEL
void log_likelihoods(const DesignMatrix& x, std::span<const double> beta, std::span<double> out) {
  for (std::size_t i = 0; i < x.rows(); ++i) out[i] = -softplus(-x.y[i] * dot(x.row(i), beta));
}

}  // namespace logistic
