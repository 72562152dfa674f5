#include "design_matrix.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <new>

namespace logistic {

template <class Real>
DesignMatrix<Real>::DesignMatrix(std::size_t rows, std::size_t features, StorageOptions options)
    : rows_(rows), columns_(features + 1), prefetch_(options.prefetch) {
  constexpr std::size_t per_line = 64 / sizeof(Real);
  stride_ = (columns_ + per_line - 1) / per_line * per_line;
  const std::size_t bytes = std::max<std::size_t>(rows_ * stride_ * sizeof(Real), 64);
  // Aligned to 2 MiB when large, so that transparent huge pages can back it: a random row then
  // rarely misses the TLB as well as the cache.
  const bool huge = options.huge_pages && bytes >= (std::size_t{4} << 20);
  const std::size_t alignment = huge ? std::size_t{2} << 20 : 64;
  void* memory = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (!memory) throw std::bad_alloc();
  if (huge) madvise(memory, bytes, MADV_HUGEPAGE);  // advice only: if refused, nothing changes
  data_.reset(static_cast<Real*>(memory));
  std::fill_n(data_.get(), rows_ * stride_, Real{0});
  for (std::size_t i = 0; i < rows_; ++i) row(i)[0] = Real{1};
  y.assign(rows_, 1.0);
}

template class DesignMatrix<double>;
template class DesignMatrix<float>;

namespace x86_64_v3 {
extern const Kernels<double> double_kernels;
extern const Kernels<float> float_kernels;
}  // namespace x86_64_v3
namespace baseline {
extern const Kernels<double> double_kernels;
extern const Kernels<float> float_kernels;
}  // namespace baseline

namespace {
/// The kernels compiled for x86-64-v3 where the CPU has AVX2 and FMA, else the baseline ones.
/// The choice depends on the CPU only, so a machine's runs stay bit-for-bit reproducible.
bool has_x86_64_v3() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
}  // namespace

template <>
const Kernels<double>& kernels<double>() {
  static const Kernels<double>& chosen = has_x86_64_v3() ? x86_64_v3::double_kernels : baseline::double_kernels;
  return chosen;
}
template <>
const Kernels<float>& kernels<float>() {
  static const Kernels<float>& chosen = has_x86_64_v3() ? x86_64_v3::float_kernels : baseline::float_kernels;
  return chosen;
}

}  // namespace logistic
