// Labelled rows in binary files, read without parsing (issue 45): the formats `sgmcmc convert`
// writes, chosen by the data file's name.
//
// - Dense, `NAME.npy`: one 2-D NumPy array, rows × (1 + features), float64 or float32, C order,
//   the label (response) in column 0 and the features after it — the layout of the CSV files, so
//   `np.save("x.npy", np.column_stack([y, X]))` makes one.
// - Sparse, a folder `NAME.csr/` of 1-D .npy arrays named as scipy.sparse.csr_matrix's fields:
//   `indptr` (rows + 1 offsets, int64 or int32), `indices` (0-based feature columns, increasing
//   along a row, int64 or int32), `data` (the nonzero values, float64 or float32), `shape` (rows,
//   features), and `labels` (one per row, float64 or float32). LIBSVM's layout without the text.
//
// Each reads a row range (npy.hpp), so that a process holding a share of the rows maps only that
// share; every value must be finite, and each refusal names the file and what was expected.
#pragma once
#include <cstddef>
#include <span>
#include <string>

#include "labelled_rows.hpp"
#include "npy.hpp"

namespace regression {

/// Rows `range` of a dense .npy file, labels as read (unmapped), the features left in the map
/// (LabelledRows::mapped) after one pass that checks every value finite. `declared_features` (0:
/// none) must equal the file's feature count.
LabelledRows map_npy_rows(const std::string& path, std::size_t declared_features, npy::RowRange range = {});

/// The rows `rows` of a dense .npy file, in that order, read (not mapped) into LabelledRows::x as
/// double, labels as read: the held-out rows of a data-parallel rank, scattered over a file whose
/// other rows the rank does not hold (pread, so that no page but theirs is touched). Every value is
/// checked finite; `declared_features` as map_npy_rows.
LabelledRows read_npy_rows_at(const std::string& path, std::size_t declared_features, std::span<const std::size_t> rows);

/// map_npy_rows with the features copied into LabelledRows::x, as double.
LabelledRows read_npy_rows(const std::string& path, std::size_t declared_features, npy::RowRange range = {});

/// Rows `range` of a .csr folder, densified as a LIBSVM file is, labels as read. The features are
/// shape[1], or `declared_features` when given (refused when shape[1] exceeds it).
LabelledRows read_csr_rows(const std::string& folder, std::size_t declared_features, npy::RowRange range = {});

/// The rows `rows` of a .csr folder, in that order, densified as read_csr_rows does, their
/// entries read with pread (not mapped): read_npy_rows_at's counterpart, for a data-parallel rank's
/// held-out rows.
LabelledRows read_csr_rows_at(const std::string& folder, std::size_t declared_features, std::span<const std::size_t> rows);

/// The rows of a binary data file (a .npy file or a .csr folder), from its headers alone.
std::size_t binary_row_count(const std::string& path);

/// `rows` appended to a dense .npy being written as (label, features) rows: `sgmcmc convert`
/// writes a large file a block of rows at a time.
void append_dense_rows(const LabelledRows& rows, npy::Writer& out);

/// Writes `rows` (labels as read) in `layout` at `path`, values as `dtype` (float64 or float32).
void write_binary_rows(const LabelledRows& rows, BinaryLayout layout, const std::string& path, npy::Dtype dtype);

}  // namespace regression
