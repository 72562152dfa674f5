#include "design_matrix.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace regression {

template <class Real>
DesignMatrix<Real>::DesignMatrix(std::size_t rows, std::size_t features, StorageOptions options)
    : rows_(rows), features_(features), columns_(features + (options.intercept ? 1 : 0)), prefetch_(options.prefetch) {
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
  if (options.intercept)
    for (std::size_t i = 0; i < rows_; ++i) row(i)[0] = Real{1};
  y.assign(rows_, 1.0);
}

template class DesignMatrix<double>;
template class DesignMatrix<float>;

template <class Real>
DesignMatrix<Real> design_matrix(const LabelledRows& data, std::span<const std::size_t> rows, StorageOptions options) {
  DesignMatrix<Real> x(rows.size(), data.features, options);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    x.y[r] = data.y[rows[r]];
    copy_features(data, rows[r], x.row(r) + x.first_feature());
  }
  for (const std::size_t r : rows)
    if (!data.offset.empty()) x.offset.push_back(data.offset[r]);
  return x;
}

template DesignMatrix<double> design_matrix(const LabelledRows&, std::span<const std::size_t>, StorageOptions);
template DesignMatrix<float> design_matrix(const LabelledRows&, std::span<const std::size_t>, StorageOptions);

}  // namespace regression
