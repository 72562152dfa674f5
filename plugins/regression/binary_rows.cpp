#include "binary_rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>

import sgmcmc.sdk;

namespace regression {

namespace fs = std::filesystem;

namespace {

bool is_float(npy::Dtype dtype) { return dtype == npy::Dtype::float64 || dtype == npy::Dtype::float32; }

/// Refuses an array that is not 1-D of the wanted kind of numbers, naming its file.
void require_vector(const npy::Header& header, bool floating, const std::string& path) {
  if (header.shape.size() != 1)
    throw sgmcmc::Error(fmt::format("{}: shape ({}); expected a 1-D array", path, fmt::join(header.shape, ", ")));
  if (is_float(header.dtype) != floating)
    throw sgmcmc::Error(fmt::format("{}: dtype '{}'; expected {}", path, npy::descr(header.dtype),
                                    floating ? "'<f8' or '<f4' values" : "'<i8' or '<i4' whole numbers"));
}

void require_rows(const npy::Header& header, std::size_t expected, const std::string& path, const std::string& shape_path) {
  if (header.rows() != expected)
    throw sgmcmc::Error(fmt::format("{}: {} entries, but {} says {} rows: expected one per row", path, header.rows(),
                                    shape_path, expected));
}

double element(const npy::MappedArray& array, std::size_t i) {
  double value = 0.0;
  array.row_as_double(i, {&value, 1});
  return value;
}

void require_finite(double value, const std::string& path, std::string_view index) {
  if (!std::isfinite(value))
    throw sgmcmc::Error(fmt::format("{}: {} is {}; every value must be finite", path, index, value));
}

/// The path of a CSR folder's array `name`, which messages name.
struct CsrFiles {
  std::string folder;
  std::string operator()(const char* name) const { return (fs::path(folder) / (std::string(name) + ".npy")).string(); }
};

/// shape.npy: (rows, features), two non-negative whole numbers.
std::pair<std::size_t, std::size_t> csr_shape(const CsrFiles& file) {
  require_vector(npy::read_header(file("shape")), false, file("shape"));
  const npy::MappedArray shape(file("shape"));
  if (shape.rows() != 2)
    throw sgmcmc::Error(fmt::format("{}: {} entries; expected 2, (rows, features)", file("shape"), shape.rows()));
  if (shape.integer(0) < 0 || shape.integer(1) < 0)
    throw sgmcmc::Error(fmt::format("{}: ({}, {}); expected non-negative counts", file("shape"), shape.integer(0), shape.integer(1)));
  return {static_cast<std::size_t>(shape.integer(0)), static_cast<std::size_t>(shape.integer(1))};
}

}  // namespace

LabelledRows map_npy_rows(const std::string& path, std::size_t declared_features, npy::RowRange range) {
  auto array = std::make_shared<const npy::MappedArray>(path, range);
  if (!is_float(array->dtype()))
    throw sgmcmc::Error(fmt::format("{}: dtype '{}'; expected '<f8' or '<f4' (float64 or float32) values", path,
                                    npy::descr(array->dtype())));
  if (array->dimensions() != 2 || array->columns() < 2)
    throw sgmcmc::Error(fmt::format("{}: a {}-D array of {} column(s); expected 2-D, rows × (the label, then at least one "
                                    "feature): np.column_stack([y, X])",
                                    path, array->dimensions(), array->columns()));
  LabelledRows rows;
  rows.features = array->columns() - 1;
  if (declared_features && declared_features != rows.features)
    throw sgmcmc::Error(fmt::format("{}: {} feature columns, but model.features = {}", path, rows.features, declared_features));
  // One pass over the map: the labels out, every value checked finite (in double: a float32
  // infinity or NaN stays one).
  rows.y.resize(array->rows());
  std::vector<double> row(array->columns());
  for (std::size_t i = 0; i < array->rows(); ++i) {
    array->row_as_double(i, row);
    for (std::size_t j = 0; j < row.size(); ++j)
      if (!std::isfinite(row[j])) require_finite(row[j], path, fmt::format("a[{}, {}]", array->first_row() + i, j));
    rows.y[i] = row[0];
  }
  rows.mapped = std::move(array);
  return rows;
}

LabelledRows read_npy_rows_at(const std::string& path, std::size_t declared_features, std::span<const std::size_t> rows) {
  npy::RowReader reader(path);
  const npy::Header& header = reader.header();
  if (!is_float(header.dtype) || header.shape.size() != 2 || header.columns() < 2)
    return map_npy_rows(path, declared_features, {0, 0});  // its refusal, naming the file
  LabelledRows out;
  out.features = header.columns() - 1;
  if (declared_features && declared_features != out.features)
    throw sgmcmc::Error(fmt::format("{}: {} feature columns, but model.features = {}", path, out.features, declared_features));
  std::vector<double> row;
  out.y.reserve(rows.size());
  out.x.reserve(rows.size() * out.features);
  for (const std::size_t i : rows) {
    reader.read(i, 1, row);
    for (std::size_t j = 0; j < row.size(); ++j)
      if (!std::isfinite(row[j])) require_finite(row[j], path, fmt::format("a[{}, {}]", i, j));
    out.y.push_back(row[0]);
    out.x.insert(out.x.end(), row.begin() + 1, row.end());
  }
  return out;
}

LabelledRows read_npy_rows(const std::string& path, std::size_t declared_features, npy::RowRange range) {
  LabelledRows rows = map_npy_rows(path, declared_features, range);
  materialise(rows);
  return rows;
}

template <class Real>
void copy_features(const LabelledRows& rows, std::size_t i, Real* out) {
  if (rows.mapped) {
    rows.mapped->copy_row(i, 1, std::span<Real>(out, rows.features));  // column 0 is the label
    return;
  }
  const double* row = rows.x.data() + i * rows.features;
  for (std::size_t j = 0; j < rows.features; ++j) out[j] = static_cast<Real>(row[j]);
}

template void copy_features(const LabelledRows&, std::size_t, double*);
template void copy_features(const LabelledRows&, std::size_t, float*);

void materialise(LabelledRows& rows) {
  if (!rows.mapped) return;
  sgmcmc::allocate(rows.x, rows.y.size(), rows.features,
                   fmt::format("{}: {} rows × {} features", rows.mapped->path(), rows.y.size(), rows.features));
  for (std::size_t i = 0; i < rows.y.size(); ++i) copy_features(rows, i, rows.x.data() + i * rows.features);
  rows.mapped.reset();
}

namespace {

/// A .csr folder whose arrays' headers were checked against shape.npy (and model.features)
/// before any of them is read.
struct CsrFolder {
  std::string folder;
  CsrFiles file;
  std::size_t rows = 0, columns = 0, features = 0;  // features: shape[1], or the declared count
  std::int64_t nonzeros = 0;
};

CsrFolder open_csr(const std::string& folder, std::size_t declared_features) {
  if (!fs::is_directory(folder))
    throw sgmcmc::Error(fmt::format("{}: not a folder; a .csr data set is a folder of indptr.npy, indices.npy, data.npy, "
                                    "shape.npy and labels.npy",
                                    folder));
  const CsrFiles file{folder};
  const auto [total_rows, columns] = csr_shape(file);
  const auto indptr_header = npy::read_header(file("indptr")), labels_header = npy::read_header(file("labels"));
  const auto indices_header = npy::read_header(file("indices")), data_header = npy::read_header(file("data"));
  require_vector(indptr_header, false, file("indptr"));
  require_vector(labels_header, true, file("labels"));
  require_vector(indices_header, false, file("indices"));
  require_vector(data_header, true, file("data"));
  require_rows(labels_header, total_rows, file("labels"), file("shape"));
  if (indptr_header.rows() != total_rows + 1)
    throw sgmcmc::Error(fmt::format("{}: {} entries, but {} says {} rows: expected rows + 1 = {}", file("indptr"),
                                    indptr_header.rows(), file("shape"), total_rows, total_rows + 1));
  if (indices_header.rows() != data_header.rows())
    throw sgmcmc::Error(fmt::format("{}: {} entries, but {} has {}: expected one column index per value", file("indices"),
                                    indices_header.rows(), file("data"), data_header.rows()));
  if (declared_features && columns > declared_features)
    throw sgmcmc::Error(fmt::format("{}: {} features, beyond the declared model.features = {}", file("shape"), columns,
                                    declared_features));
  return {folder, file, total_rows, columns, declared_features ? declared_features : columns,
          static_cast<std::int64_t>(data_header.rows())};
}

/// Row `row`'s label and its values k ∈ [from, to) of indices/data (column_at(k), value_at(k))
/// appended to `rows` as a dense row, each checked: a column in range and increasing along the
/// row, every value finite.
template <class ColumnAt, class ValueAt>
void append_csr_row(const CsrFolder& csr, std::size_t row, double label, std::int64_t from, std::int64_t to,
                    ColumnAt column_at, ValueAt value_at, LabelledRows& rows) {
  require_finite(label, csr.file("labels"), fmt::format("labels[{}]", row));
  rows.y.push_back(label);
  const std::size_t first = rows.x.size();
  rows.x.resize(first + rows.features, 0.0);
  std::int64_t previous = -1;
  for (std::int64_t k = from; k < to; ++k) {
    const std::int64_t column = column_at(k);
    if (column < 0 || static_cast<std::size_t>(column) >= csr.columns)
      throw sgmcmc::Error(fmt::format("{}: indices[{}] = {} (row {}); expected a column in 0..{} ({} says {} features)",
                                      csr.file("indices"), k, column, row, csr.columns == 0 ? 0 : csr.columns - 1,
                                      csr.file("shape"), csr.columns));
    if (column <= previous)
      throw sgmcmc::Error(fmt::format("{}: indices[{}] = {} after {} in row {}; columns must increase along a row (scipy: "
                                      "m.sum_duplicates(); m.sort_indices())",
                                      csr.file("indices"), k, column, previous, row));
    previous = column;
    const double value = value_at(k);
    require_finite(value, csr.file("data"), fmt::format("data[{}]", k));
    rows.x[first + static_cast<std::size_t>(column)] = value;
  }
}

LabelledRows empty_csr_rows(const CsrFolder& csr, std::size_t count) {
  LabelledRows rows;
  rows.sparse = true;
  rows.features = csr.features;
  sgmcmc::allocate(rows.x, count, rows.features, fmt::format("{}: {} rows × {} features", csr.folder, count, rows.features));
  rows.x.clear();  // reserved: filled row by row
  rows.y.reserve(count);
  return rows;
}

}  // namespace

LabelledRows read_csr_rows(const std::string& folder, std::size_t declared_features, npy::RowRange range) {
  const CsrFolder csr = open_csr(folder, declared_features);
  const CsrFiles& file = csr.file;
  if (range.first > csr.rows)
    throw sgmcmc::Error(fmt::format("{}: rows from {} asked for, but it has {}", folder, range.first, csr.rows));
  const std::size_t count = std::min(range.count, csr.rows - range.first);

  const npy::MappedArray indptr(file("indptr"), {range.first, count + 1}), labels(file("labels"), {range.first, count});
  const std::int64_t begin = indptr.integer(0), end = indptr.integer(count);
  if (range.first == 0 && begin != 0)
    throw sgmcmc::Error(fmt::format("{}: indptr[0] = {}; expected 0", file("indptr"), begin));
  if (range.first + count == csr.rows && end != csr.nonzeros)
    throw sgmcmc::Error(fmt::format("{}: indptr[{}] = {}, but {} has {} values: expected them equal", file("indptr"),
                                    csr.rows, end, file("data"), csr.nonzeros));
  if (begin < 0 || end < begin || end > csr.nonzeros)
    throw sgmcmc::Error(fmt::format("{}: indptr[{}] = {} and indptr[{}] = {}; expected 0 ≤ the first ≤ the second ≤ {} (the "
                                    "values in {})",
                                    file("indptr"), range.first, begin, range.first + count, end, csr.nonzeros, file("data")));
  const npy::MappedArray indices(file("indices"), {static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin)});
  const npy::MappedArray data(file("data"), {static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin)});

  LabelledRows rows = empty_csr_rows(csr, count);
  for (std::size_t r = 0; r < count; ++r) {
    const std::size_t row = range.first + r;
    const std::int64_t from = indptr.integer(r), to = indptr.integer(r + 1);
    if (to < from || to > end)
      throw sgmcmc::Error(fmt::format("{}: indptr[{}] = {} after indptr[{}] = {}; expected a non-decreasing sequence ending at {}",
                                      file("indptr"), row + 1, to, row, from, end));
    append_csr_row(
        csr, row, element(labels, r), from, to, [&](std::int64_t k) { return indices.integer(static_cast<std::size_t>(k - begin)); },
        [&](std::int64_t k) { return element(data, static_cast<std::size_t>(k - begin)); }, rows);
  }
  return rows;
}

LabelledRows read_csr_rows_at(const std::string& folder, std::size_t declared_features, std::span<const std::size_t> which) {
  const CsrFolder csr = open_csr(folder, declared_features);
  npy::RowReader indptr(csr.file("indptr")), labels(csr.file("labels")), indices(csr.file("indices")), data(csr.file("data"));
  LabelledRows rows = empty_csr_rows(csr, which.size());
  std::vector<double> bounds, label, columns, values;
  for (const std::size_t row : which) {
    if (row >= csr.rows) throw sgmcmc::Error(fmt::format("{}: row {} asked for, but it has {}", folder, row, csr.rows));
    indptr.read(row, 2, bounds);
    const auto from = static_cast<std::int64_t>(bounds[0]), to = static_cast<std::int64_t>(bounds[1]);
    if (from < 0 || to < from || to > csr.nonzeros)
      throw sgmcmc::Error(fmt::format("{}: indptr[{}] = {} and indptr[{}] = {}; expected 0 ≤ the first ≤ the second ≤ {} (the "
                                      "values in {})",
                                      csr.file("indptr"), row, from, row + 1, to, csr.nonzeros, csr.file("data")));
    indices.read(static_cast<std::size_t>(from), static_cast<std::size_t>(to - from), columns);
    data.read(static_cast<std::size_t>(from), static_cast<std::size_t>(to - from), values);
    labels.read(row, 1, label);
    append_csr_row(
        csr, row, label[0], from, to, [&](std::int64_t k) { return static_cast<std::int64_t>(columns[k - from]); },
        [&](std::int64_t k) { return values[static_cast<std::size_t>(k - from)]; }, rows);
  }
  return rows;
}

std::size_t binary_row_count(const std::string& path) {
  return binary_layout(path) == BinaryLayout::sparse_csr ? open_csr(path, 0).rows : npy::read_header(path).rows();
}

void append_dense_rows(const LabelledRows& rows, npy::Writer& out) {
  // In chunks of about 2²⁰ values (8 MB), whatever the width.
  const std::size_t columns = rows.features + 1, block = std::max<std::size_t>(1, (std::size_t{1} << 20) / columns);
  std::vector<double> values;
  for (std::size_t first = 0; first < rows.y.size(); first += block) {
    const std::size_t count = std::min(block, rows.y.size() - first);
    values.resize(count * columns);
    for (std::size_t i = 0; i < count; ++i) {
      values[i * columns] = rows.y[first + i];
      copy_features(rows, first + i, values.data() + i * columns + 1);
    }
    out.append(values);
  }
}

namespace {

void write_dense(const LabelledRows& rows, const std::string& path, npy::Dtype dtype) {
  npy::Writer out(path, dtype, rows.features + 1);
  append_dense_rows(rows, out);
  out.finish();
}

void write_sparse(const LabelledRows& rows, const std::string& folder, npy::Dtype dtype) {
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw sgmcmc::Error(fmt::format("{}: cannot create the folder ({})", folder, error.message()));
  std::vector<double> indptr{0.0}, indices, data, row(rows.features);
  for (std::size_t i = 0; i < rows.y.size(); ++i) {
    copy_features(rows, i, row.data());
    for (std::size_t j = 0; j < rows.features; ++j)
      if (const double value = row[j]; value != 0.0) {
        indices.push_back(static_cast<double>(j));
        data.push_back(value);
      }
    indptr.push_back(static_cast<double>(data.size()));
  }
  const CsrFiles file{folder};
  const std::size_t shape[] = {2}, rows_plus_one[] = {indptr.size()}, nonzeros[] = {data.size()}, count[] = {rows.y.size()};
  const double shape_values[] = {static_cast<double>(rows.y.size()), static_cast<double>(rows.features)};
  // scipy's own choice: 32-bit column indices while the features fit.
  const auto index_type = rows.features <= std::size_t{INT32_MAX} ? npy::Dtype::int32 : npy::Dtype::int64;
  npy::write(file("shape"), npy::Dtype::int64, shape, shape_values);
  npy::write(file("indptr"), npy::Dtype::int64, rows_plus_one, indptr);
  npy::write(file("indices"), index_type, nonzeros, indices);
  npy::write(file("data"), dtype, nonzeros, data);
  npy::write(file("labels"), dtype, count, rows.y);
}

}  // namespace

void write_binary_rows(const LabelledRows& rows, BinaryLayout layout, const std::string& path, npy::Dtype dtype) {
  if (layout == BinaryLayout::dense_npy) write_dense(rows, path, dtype);
  if (layout == BinaryLayout::sparse_csr) write_sparse(rows, path, dtype);
}

}  // namespace regression
