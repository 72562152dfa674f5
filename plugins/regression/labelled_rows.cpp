#include "labelled_rows.hpp"

#include "binary_rows.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <fmt/format.h>

import sgmcmc.sdk;

namespace regression {

namespace {

/// Raw labels as read, with the file line of each row, before they are mapped to ±1.
struct RawRows {
  std::vector<double> label;
  std::vector<std::size_t> line;
  std::vector<double> x;
  std::size_t features = 0;
  bool header = false;  // a CSV header line was skipped
};

// ---- LIBSVM: `label index:value index:value ...`, 1-based ascending indices, zeros omitted ----

struct SparseEntry {
  std::size_t row, index;  // index is 1-based
  double value;
};

bool next_token(std::string_view& rest, std::string_view& token) {
  const auto begin = rest.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return false;
  rest.remove_prefix(begin);
  const auto end = std::min(rest.find_first_of(" \t"), rest.size());
  token = rest.substr(0, end);
  rest.remove_prefix(end);
  return true;
}

void parse_libsvm_line(std::string_view line, const sgmcmc::TextLines& in, std::size_t declared_features,
                       RawRows& rows, std::vector<SparseEntry>& entries) {
  std::string_view token;
  next_token(line, token);
  double label = 0.0;
  if (const auto kind = sgmcmc::read_number_field(token, label); kind != sgmcmc::NumberField::finite)
    throw sgmcmc::Error(fmt::format("{}: label {}", in.where(), sgmcmc::number_field_problem(kind, token)));
  const std::size_t row = rows.label.size();
  std::size_t previous = 0;
  while (next_token(line, token)) {
    const auto colon = token.find(':');
    std::size_t index = 0;
    double value = 0.0;
    const auto index_text = token.substr(0, colon);
    const auto [end, error] = std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
    const auto kind = colon == std::string_view::npos ? sgmcmc::NumberField::text
                                                      : sgmcmc::read_number_field(token.substr(colon + 1), value);
    if (error != std::errc() || end != index_text.data() + index_text.size() || kind == sgmcmc::NumberField::text)
      throw sgmcmc::Error(fmt::format("{}: '{}' is not index:value", in.where(), token));
    if (kind != sgmcmc::NumberField::finite)
      throw sgmcmc::Error(fmt::format("{}: '{}': the value {}", in.where(), token,
                                      sgmcmc::number_field_problem(kind, token.substr(colon + 1))));
    if (index == 0) throw sgmcmc::Error(fmt::format("{}: feature index 0 in '{}'; LIBSVM indices start at 1", in.where(), token));
    if (declared_features && index > declared_features)
      throw sgmcmc::Error(fmt::format("{}: feature index {} is beyond the declared model.features = {}", in.where(), index,
                                      declared_features));
    if (index <= previous)
      throw sgmcmc::Error(fmt::format("{}: feature index {} after {}; LIBSVM indices must increase along a line",
                                      in.where(), index, previous));
    previous = index;
    entries.push_back({row, index, value});
    rows.features = std::max(rows.features, index);
  }
  rows.label.push_back(label);
  rows.line.push_back(in.line_number());
}

/// Parses the next non-blank lines of `in`, up to `max_rows` of them, into `rows` (labels and
/// lines) and `entries`; false when none was left.
bool parse_libsvm_lines(sgmcmc::TextLines& in, std::size_t declared_features, std::size_t max_rows, RawRows& rows,
                        std::vector<SparseEntry>& entries) {
  std::string line;
  const std::size_t before = rows.label.size();
  while (rows.label.size() - before < max_rows && in.next(line))
    if (line.find_first_not_of(" \t") != std::string::npos) parse_libsvm_line(line, in, declared_features, rows, entries);
  return rows.label.size() > before;
}

/// rows.x, dense, `width` features wide, from `entries`.
void fill_dense(RawRows& rows, const std::vector<SparseEntry>& entries, std::size_t width, const std::string& path) {
  rows.features = width;
  sgmcmc::allocate(rows.x, rows.label.size(), rows.features,
                   fmt::format("{}: {} rows × {} features (the largest feature index)", path, rows.label.size(), rows.features));
  for (const auto& entry : entries) rows.x[entry.row * rows.features + entry.index - 1] = entry.value;
}

RawRows read_libsvm(sgmcmc::TextLines& in, std::size_t declared_features) {
  RawRows rows;
  std::vector<SparseEntry> entries;
  parse_libsvm_lines(in, declared_features, std::numeric_limits<std::size_t>::max(), rows, entries);
  fill_dense(rows, entries, declared_features ? declared_features : rows.features, in.path().string());
  return rows;
}

/// The feature count of a LIBSVM file: its largest index (one pass that keeps no row).
std::size_t libsvm_width(const std::string& path) {
  sgmcmc::TextLines in(path, /*streamed=*/true);
  std::size_t width = 0;
  for (RawRows rows; true; rows = {}) {
    std::vector<SparseEntry> entries;
    if (!parse_libsvm_lines(in, 0, 1 << 16, rows, entries)) return width;
    width = std::max(width, rows.features);
  }
}

// ---- CSV: label, then the features; optional header ------------------------------------------

/// A CSV table's rows as RawRows: the label column, then the features.
RawRows csv_rows(const sgmcmc::NumericTable& table, std::size_t declared_features, const std::string& path) {
  if (table.columns < 2)
    throw sgmcmc::Error(fmt::format("{}: {} column(s); expected the label then at least one feature", path, table.columns));
  RawRows rows;
  rows.features = table.columns - 1;
  if (declared_features && declared_features != rows.features)
    throw sgmcmc::Error(fmt::format("{}: {} feature columns, but model.features = {}", path, rows.features, declared_features));
  rows.line = table.line_numbers;
  rows.header = !table.header.empty();
  rows.label.resize(table.rows);
  rows.x.resize(table.rows * rows.features);
  for (std::size_t i = 0; i < table.rows; ++i) {
    rows.label[i] = table.at(i, 0);
    std::copy_n(table.values.begin() + static_cast<std::ptrdiff_t>(i * table.columns + 1), rows.features,
                rows.x.begin() + static_cast<std::ptrdiff_t>(i * rows.features));
  }
  return rows;
}

RawRows read_csv(sgmcmc::TextLines& in, std::size_t declared_features) {
  return csv_rows(sgmcmc::read_numeric_csv(in), declared_features, in.path().string());
}

// ---- Labels ---------------------------------------------------------------------------------

/// The two raw values of each coding: first ↦ -1, second ↦ +1 (the larger value is the positive class).
std::pair<double, double> coding_values(LabelCoding coding) {
  switch (coding) {
    case LabelCoding::zero_one: return {0.0, 1.0};
    case LabelCoding::one_two: return {1.0, 2.0};
    default: return {-1.0, 1.0};
  }
}

/// The coding the labels present fit: the value other than 1 tells (0, 2 or -1).
LabelCoding detect_coding(const std::map<double, std::size_t>& first_line_of, const std::string& path) {
  for (auto coding : {LabelCoding::zero_one, LabelCoding::one_two, LabelCoding::minus_plus}) {
    const auto [negative, positive] = coding_values(coding);
    const double distinctive = negative == 1.0 ? positive : negative;
    if (first_line_of.contains(distinctive)) return coding;
  }
  throw sgmcmc::Error(fmt::format("{}: every label is 1, so the coding (0/1, 1/2 or -1/+1) cannot be told; set "
                                  "model.labels",
                                  path));
}

/// "path:line" of a text file's line, or, as row_place says it, "path: data row i+1" of a binary
/// file's row i, which has no lines.
std::string label_place(const std::string& path, const std::vector<std::size_t>& lines, std::size_t number) {
  return lines.empty() ? fmt::format("{}: data row {}", path, number + 1) : fmt::format("{}:{}", path, number);
}

/// A first non-blank line with a ':' is LIBSVM; anything else is CSV. That line is given back to
/// `in`: the file is read once, so a FIFO or a process substitution works.
FileFormat sniff_format(sgmcmc::TextLines& in) {
  std::string line;
  while (in.next(line))
    if (line.find_first_not_of(" \t") != std::string::npos) {
      const auto format = line.find(':') != std::string::npos ? FileFormat::libsvm : FileFormat::csv;
      in.unread(std::move(line));
      return format;
    }
  throw sgmcmc::Error(fmt::format("{}: no data rows", in.path().string()));
}

/// Runs `read`; an error reading a file whose format was sniffed as CSV says why it was read as
/// CSV: a LIBSVM file whose first row has no features has no ':' on its first line.
template <class Read>
void with_format_hint(bool sniffed, FileFormat format, Read read) {
  try {
    read();
  } catch (const sgmcmc::Error& error) {
    if (!sniffed || format != FileFormat::csv) throw;
    throw sgmcmc::Error(fmt::format("{} (read as CSV, since its first data line has no ':'; for a LIBSVM file whose first "
                                    "row has no features, set model.format = \"libsvm\")",
                                    error.what()));
  }
}

LabelledRows labelled(RawRows raw, FileFormat format) {
  return {std::move(raw.label), std::move(raw.x), raw.features, format == FileFormat::libsvm, std::move(raw.line)};
}

}  // namespace

void map_labels(std::vector<double>& labels, const std::vector<std::size_t>& lines, LabelCoding coding,
                const std::string& path) {
  std::map<double, std::size_t> first_line_of;
  for (std::size_t i = 0; i < labels.size(); ++i) first_line_of.try_emplace(labels[i], lines.empty() ? i : lines[i]);
  for (const auto& [value, line] : first_line_of)
    if (value != -1.0 && value != 0.0 && value != 1.0 && value != 2.0)
      throw sgmcmc::Error(fmt::format("{}: label {} is not binary; expected 0/1, 1/2 or -1/+1", label_place(path, lines, line),
                                      value));
  if (coding == LabelCoding::automatic) coding = detect_coding(first_line_of, path);
  const auto [negative, positive] = coding_values(coding);
  for (const auto& [value, line] : first_line_of)
    if (value != negative && value != positive)
      throw sgmcmc::Error(fmt::format("{}: label {} does not belong to the coding {}/{}{}", label_place(path, lines, line),
                                      value, negative, positive, " (set model.labels to choose another)"));
  for (double& label : labels) label = label == positive ? 1.0 : -1.0;
}

LabelCoding parse_label_coding(const std::string& text, const std::string& where) {
  const std::pair<const char*, LabelCoding> table[] = {{"auto", LabelCoding::automatic},
                                                      {"0/1", LabelCoding::zero_one},
                                                      {"1/2", LabelCoding::one_two},
                                                      {"-1/+1", LabelCoding::minus_plus}};
  for (const auto& [name, coding] : table)
    if (text == name) return coding;
  throw sgmcmc::Error(fmt::format("{}: '{}' is not a label coding; expected auto, 0/1, 1/2 or -1/+1", where, text));
}

FileFormat parse_file_format(const std::string& text, const std::string& where) {
  const std::pair<const char*, FileFormat> table[] = {
      {"auto", FileFormat::automatic}, {"libsvm", FileFormat::libsvm}, {"csv", FileFormat::csv}};
  for (const auto& [name, format] : table)
    if (text == name) return format;
  throw sgmcmc::Error(fmt::format("{}: '{}' is not a data format; expected auto, libsvm or csv", where, text));
}

LabelledRows read_labelled_rows(const std::string& path, FileFormat format, LabelCoding coding,
                                std::size_t declared_features) {
  // A binary data set is told by its name (binary_rows.hpp); model.format is for text files.
  if (const auto layout = binary_layout(path); layout != BinaryLayout::none) {
    LabelledRows rows = layout == BinaryLayout::dense_npy ? map_npy_rows(path, declared_features)
                                                          : read_csr_rows(path, declared_features);
    if (rows.y.empty()) throw sgmcmc::Error(fmt::format("{}: no data rows", path));
    sgmcmc::note_rows_read(path, rows.y.size(), false);
    if (coding != LabelCoding::as_read) map_labels(rows.y, rows.lines, coding, path);
    return rows;
  }
  sgmcmc::TextLines in(path);
  const bool sniffed = format == FileFormat::automatic;
  if (sniffed) format = sniff_format(in);
  RawRows raw;
  with_format_hint(sniffed, format, [&] {
    raw = format == FileFormat::libsvm ? read_libsvm(in, declared_features) : read_csv(in, declared_features);
  });
  if (raw.label.empty()) throw sgmcmc::Error(fmt::format("{}: no data rows", path));
  sgmcmc::note_rows_read(path, raw.label.size(), raw.header);
  if (coding != LabelCoding::as_read) map_labels(raw.label, raw.line, coding, path);
  return labelled(std::move(raw), format);
}

namespace {
/// An error of for_each_row_block's consumer, carried past with_format_hint (whose hint is about
/// parsing) and rethrown as it was.
struct ConsumerError {
  std::exception_ptr error;
};
}  // namespace

std::size_t for_each_row_block(const std::string& path, FileFormat format, std::size_t declared_features,
                               std::size_t block_values, const std::function<void(const LabelledRows&)>& each) {
  if (binary_layout(path) != BinaryLayout::none) {  // mapped, not parsed: one block
    const LabelledRows rows = read_labelled_rows(path, format, LabelCoding::as_read, declared_features);
    each(rows);
    return rows.y.size();
  }
  sgmcmc::TextLines in(path, /*streamed=*/true);
  const bool sniffed = format == FileFormat::automatic;
  if (sniffed) format = sniff_format(in);
  std::size_t total = 0;
  bool header = false;
  const auto deliver = [&](RawRows raw) {
    if (raw.label.empty()) return;
    total += raw.label.size();
    try {
      each(labelled(std::move(raw), format));
    } catch (...) {
      throw ConsumerError{std::current_exception()};
    }
  };
  const auto rows_per_block = [&](std::size_t columns) { return std::max<std::size_t>(1, block_values / std::max<std::size_t>(1, columns)); };
  try {
    with_format_hint(sniffed, format, [&] {
      if (format == FileFormat::libsvm) {
        // A pipe is read once: without a declared width its rows are held whole, as a run reads them.
        if (!declared_features && !std::filesystem::is_regular_file(path)) return deliver(read_libsvm(in, 0));
        const std::size_t width = declared_features ? declared_features : libsvm_width(path);
        for (RawRows raw; true; raw = {}) {
          std::vector<SparseEntry> entries;
          // Bounded by the width (a file that grew between the passes is refused, not overrun).
          if (!parse_libsvm_lines(in, width, rows_per_block(width + 1), raw, entries)) return;
          fill_dense(raw, entries, width, path);
          deliver(std::move(raw));
        }
      }
      sgmcmc::NumericCsvReader reader(in);
      std::size_t rows = 1;  // the first block is one row, which tells the width
      for (sgmcmc::NumericTable table; reader.append_rows(table, rows); table.values.clear(), table.line_numbers.clear(), table.rows = 0) {
        RawRows raw = csv_rows(table, declared_features, path);
        header = raw.header;
        rows = rows_per_block(table.columns);
        deliver(std::move(raw));
      }
    });
  } catch (const ConsumerError& consumer) {
    std::rethrow_exception(consumer.error);
  }
  if (total == 0) throw sgmcmc::Error(fmt::format("{}: no data rows", path));
  sgmcmc::note_rows_read(path, total, header);
  return total;
}

std::string row_place(const LabelledRows& rows, std::size_t i, const std::string& path) {
  if (i < rows.lines.size()) return fmt::format("{}:{}", path, rows.lines[i]);
  return fmt::format("{}: data row {}", path, i + 1);
}

PredictionFile read_prediction_file(const std::string& path, FileFormat format, LabelCoding coding,
                                    std::size_t features) {
  PredictionFile file{read_labelled_rows(path, format, LabelCoding::as_read, 0)};
  LabelledRows& rows = file.rows;
  materialise(rows);  // an unlabelled file's rows are rebuilt below
  if (rows.sparse) {
    if (rows.features > features)
      throw sgmcmc::Error(fmt::format("{}: feature index {} is beyond the model's {} features", path, rows.features,
                                      features));
    if (rows.features < features) widen(rows, features);
  } else if (rows.features + 1 == features) {  // no label column: the "label" read is the first feature
    std::vector<double> x(rows.y.size() * features);
    for (std::size_t i = 0; i < rows.y.size(); ++i) {
      x[i * features] = rows.y[i];
      std::copy_n(rows.x.data() + i * rows.features, rows.features, x.data() + i * features + 1);
    }
    rows.x = std::move(x);
    rows.features = features;
    std::fill(rows.y.begin(), rows.y.end(), 0.0);
    file.labelled = false;
    return file;
  } else if (rows.features != features) {
    throw sgmcmc::Error(fmt::format("{}: {} columns, but the model's data have {} features: expected {} (the label, "
                                    "then the features) or {} (the features alone)",
                                    path, rows.features + 1, features, features + 1, features));
  }
  if (coding != LabelCoding::as_read) map_labels(rows.y, rows.lines, coding, path);
  return file;
}

void take_offset_column(LabelledRows& rows, const std::string& where) {
  materialise(rows);
  if (rows.features == 0)
    throw sgmcmc::Error(fmt::format("{}: model.offset takes the offset from the first column after the response, but "
                                    "the rows have no such column",
                                    where));
  const std::size_t count = rows.y.size(), features = rows.features - 1;
  std::vector<double> x(count * features);
  rows.offset.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const double* row = rows.x.data() + i * rows.features;
    rows.offset[i] = row[0];
    std::copy_n(row + 1, features, x.data() + i * features);
  }
  rows.x = std::move(x);
  rows.features = features;
}

void widen(LabelledRows& rows, std::size_t features) {
  materialise(rows);
  std::vector<double> x(rows.y.size() * features, 0.0);
  for (std::size_t i = 0; i < rows.y.size(); ++i)
    std::copy_n(rows.x.data() + i * rows.features, rows.features, x.data() + i * features);  // no x[k] of an empty row
  rows.x = std::move(x);
  rows.features = features;
}

}  // namespace regression
