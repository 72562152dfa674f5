// The data of a regression held for speed: responses y and rows x_i, the intercept first when
// there is one, row-major, each row padded to whole 64-byte cache lines and the block aligned
// to them, so that a random row costs the fewest cache-line fetches. Rows are stored as double
// or, to halve the memory traffic of a random gather, as float (`model.storage`); arithmetic is
// in double either way. Shared by the `logistic` and `glm` plugins, whose kernels
// (row_blocks.hpp) make one pass over a batch's rows.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "labelled_rows.hpp"

namespace regression {

struct StorageOptions {
  bool huge_pages = true;      // ask for transparent huge pages (madvise) on large matrices
  std::size_t prefetch = 8;    // rows prefetched ahead in batch kernels; 0 turns prefetching off
  bool intercept = true;       // a first column x_i0 = 1
};

template <class Real>
class DesignMatrix {
public:
  DesignMatrix() = default;
  /// rows × (features + 1) with x_i0 = 1 (the intercept) and the rest zero; rows × features
  /// of zeros without the intercept.
  DesignMatrix(std::size_t rows, std::size_t features, StorageOptions options);

  std::size_t rows() const { return rows_; }
  std::size_t columns() const { return columns_; }  // features (+ 1 with the intercept)
  std::size_t first_feature() const { return columns_ - features_; }  // 1 with the intercept, else 0
  Real* row(std::size_t i) { return data_.get() + i * stride_; }
  const Real* row(std::size_t i) const { return data_.get() + i * stride_; }
  std::size_t prefetch() const { return prefetch_; }
  std::vector<double> y;
  std::vector<double> offset;  // o_i added to x_iᵀβ (glm's model.offset); empty: none

private:
  struct Free {
    void operator()(Real* p) const { std::free(p); }
  };
  std::size_t rows_ = 0, features_ = 0, columns_ = 0, stride_ = 0, prefetch_ = 0;
  std::unique_ptr<Real[], Free> data_;
};

/// The given rows of `data` (in that order) as a design matrix, with their offsets if any.
template <class Real>
DesignMatrix<Real> design_matrix(const LabelledRows& data, std::span<const std::size_t> rows, StorageOptions options);

}  // namespace regression
