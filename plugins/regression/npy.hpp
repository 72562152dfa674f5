// NumPy's .npy files (the format of `np.save`, NEP 1): a magic string, a version, a header that is a
// Python dict literal naming the dtype, the memory order and the shape, then the values raw. The
// data are read without parsing: the file is memory-mapped and its values used where they lie.
// Only what numerical data need is accepted — little-endian float64/float32 values, int32/int64
// indices, C order, 1 or 2 dimensions — and anything else is refused naming the file. Shared by the
// regression plugins' readers (labelled_rows.cpp) and `sgmcmc convert`, which writes these files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace regression {

/// The binary layouts a data file's name picks: a dense `NAME.npy`, a sparse `NAME.csr/` folder of
/// 1-D .npy arrays (scipy.sparse.csr_matrix's fields; regression rows in binary_rows.hpp, lda's
/// documents in ../lda/corpus.hpp), or none (a text file).
enum class BinaryLayout { none, dense_npy, sparse_csr };

/// The layout `path` names by its extension: ".npy", ".csr" (a folder, with or without a trailing
/// slash), or none.
BinaryLayout binary_layout(const std::string& path);

}  // namespace regression

namespace regression::npy {

enum class Dtype { float64, float32, int64, int32 };

/// NumPy's name of the type: "<f8", "<f4", "<i8", "<i4".
const char* descr(Dtype dtype);
std::size_t item_size(Dtype dtype);

/// Rows [first, first + count) of an array; the default is every row. A process that reads a
/// share of a file's rows (issue 45's data-parallel ranks) maps only that share's pages.
struct RowRange {
  std::size_t first = 0;
  std::size_t count = std::numeric_limits<std::size_t>::max();  // up to the last row
};

/// What an .npy header says, checked: the dtype, the shape (1 or 2 dimensions), and where the
/// values start.
struct Header {
  Dtype dtype = Dtype::float64;
  std::vector<std::size_t> shape;
  std::size_t data_offset = 0;
  std::size_t rows() const { return shape[0]; }
  std::size_t columns() const { return shape.size() == 2 ? shape[1] : 1; }
};

/// A read-only memory map of an .npy file's rows `range` (only the pages holding them). Every
/// refusal — no file, a wrong magic, an unsupported version, dtype, Fortran order or number of
/// dimensions, fewer bytes than the shape needs, a range beyond the rows — is an sgmcmc::Error
/// naming the file and what was expected.
class MappedArray {
public:
  explicit MappedArray(const std::string& path, RowRange range = {});
  MappedArray(MappedArray&& other) noexcept;
  MappedArray& operator=(MappedArray&& other) noexcept;
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;
  ~MappedArray();

  const std::string& path() const { return path_; }
  Dtype dtype() const { return header_.dtype; }
  std::size_t dimensions() const { return header_.shape.size(); }
  std::size_t total_rows() const { return header_.rows(); }
  std::size_t first_row() const { return first_row_; }
  std::size_t rows() const { return rows_; }  // in the mapped range
  std::size_t columns() const { return header_.columns(); }

  /// Row i of the range (0 ≤ i < rows()) converted to double into `out` (columns() values);
  /// float64 values are copied unchanged, float32 values widened exactly.
  void row_as_double(std::size_t i, std::span<double> out) const;
  /// Columns [first_column, first_column + out.size()) of row i of the range, as Real: unchanged
  /// when the file holds Real (float32 into float storage: a copy, no conversion), otherwise cast as
  /// C++ casts (float32 widened exactly; float64 rounded to float as a double value would be).
  template <class Real>
  void copy_row(std::size_t i, std::size_t first_column, std::span<Real> out) const;
  /// Element i of the range of a 1-D array (or column 0 of a 2-D one) as an integer; for int32 or
  /// int64 arrays only (callers check the dtype).
  std::int64_t integer(std::size_t i) const;

private:
  const std::byte* row_bytes(std::size_t i) const { return values_ + i * header_.columns() * item_size(header_.dtype); }
  std::int64_t integer_at(const std::byte* at) const;
  void unmap();

  std::string path_;
  Header header_;
  std::size_t first_row_ = 0, rows_ = 0;
  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0;
  const std::byte* values_ = nullptr;  // the first value of the range, inside the mapping
};

/// Rows of an .npy file read with pread, not mapped, as doubles: a process that keeps few of a
/// file's rows (a data-parallel rank's held-out rows, or a stream it indexes and mostly drops) holds
/// none of its pages in its memory. The header is checked as MappedArray checks it.
class RowReader {
public:
  explicit RowReader(const std::string& path);
  ~RowReader();
  RowReader(const RowReader&) = delete;
  RowReader& operator=(const RowReader&) = delete;
  const Header& header() const { return header_; }
  /// Rows [first, first + count) into `out`, row-major, columns() values a row: float64 unchanged,
  /// float32 widened exactly, integers converted. Rows beyond the file are an error naming it.
  void read(std::size_t first, std::size_t count, std::vector<double>& out);

private:
  std::string path_;
  Header header_;
  int descriptor_ = -1;
  std::vector<std::byte> bytes_;
};

/// Reads and checks the header of `path` (the checks of MappedArray but the range).
Header read_header(const std::string& path);

/// Writes `values` (shape[0] × shape[1], or shape[0] for a 1-D array, row-major) as an .npy
/// version 1.0 file of `dtype`, converting each value; a write that fails (a full disk, a folder
/// that is not there) is an sgmcmc::Error naming the file.
void write(const std::string& path, Dtype dtype, std::span<const std::size_t> shape, std::span<const double> values);

/// An .npy file written a block of rows at a time (`sgmcmc convert` of a file too large to hold):
/// the header first, its row count then rewritten by finish(). The file is the one `write` makes
/// of all the rows: the header's padded length (128 bytes) is the same for any row count below
/// 10²⁰. A failed write is an sgmcmc::Error naming the file.
class Writer {
public:
  /// `columns` values a row (0: a 1-D array).
  Writer(std::string path, Dtype dtype, std::size_t columns);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  /// Rows of `columns` values each, row-major (any number of values for a 1-D array).
  void append(std::span<const double> values);
  /// Writes the row count into the header and closes the file.
  void finish();
  std::size_t rows() const;

private:
  struct File;
  std::string path_;
  Dtype dtype_;
  std::size_t columns_, values_ = 0;
  std::unique_ptr<File> file_;
};

}  // namespace regression::npy
