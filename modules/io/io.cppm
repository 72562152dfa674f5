// Files: reading numeric CSV data, writing Stan CSV draws. Every read error names the file, the
// line and, for a bad value, the column, so a user can go straight to it.
module;
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.io;
import sgmcmc.error;

export namespace sgmcmc {

/// Throws, naming the file, when `path` is a folder, a character or block device (/dev/zero,
/// /dev/random) or a socket: reading it to its end would never end, or read what is no file of
/// `what` ("a data file"). Regular files and pipes pass (a FIFO or `<(zcat ...)` is read once).
void require_readable_file(const std::filesystem::path& path, std::string_view what);

/// The longest line a text reader accepts (TextLines, read_stan_csv): far beyond any real file's
/// (a Stan CSV row of 10 million parameters is about 220 MB), but a bound, so that a file without
/// line ends (/dev/zero through a pipe, a binary file) is an error naming it, not all memory.
inline constexpr std::size_t max_line_bytes = std::size_t{256} << 20;

/// The lines of a text file, plain or gzip-compressed (told apart by the gzip magic bytes), so no
/// data reader needs to care. Concatenated gzip members read as one file; bytes after the last
/// member that are not gzip are an error, not dropped. A CR before a line end is dropped, so
/// CRLF files read like LF files. Bounded: a line longer than max_line_bytes, or more text in all
/// (after decompression: a gzip bomb) than the memory budget (memory_budget_bytes: the machine's
/// memory or SGMCMC_MEMORY_LIMIT_MB) is an error naming the file, unless `streamed`: a reader that
/// holds a block of rows at a time (`sgmcmc convert`) reads any length, its lines still bounded.
class TextLines {
public:
  explicit TextLines(const std::filesystem::path& path, bool streamed = false);
  ~TextLines();
  TextLines(const TextLines&) = delete;
  TextLines& operator=(const TextLines&) = delete;
  /// The next line, without its end; false at the end of the file. A UTF-8 byte-order mark
  /// before the first line is dropped. A read error (a truncated gzip stream) or a NUL byte (a
  /// binary or UTF-16 file) throws, naming the file and line.
  bool next(std::string& line);
  /// Gives back the line just read: the next call to next() returns it again, with its number.
  /// Readers that look at the first line to tell a format read the file once (it may be a FIFO).
  void unread(std::string line);
  std::size_t line_number() const { return line_number_; }
  /// "path:line" of the line last read, for error messages.
  std::string where() const;
  const std::filesystem::path& path() const { return path_; }

private:
  bool refill();
  std::string where_next() const;  // "path:line" of the line being read

  std::filesystem::path path_;
  void* file_ = nullptr;  // text_lines.cpp's Decoder: zlib stays out of the interface
  std::size_t line_number_ = 0;
  std::uint64_t bytes_read_ = 0;  // after decompression, against budget_
  std::uint64_t budget_ = 0;      // memory_budget_bytes(); 0 if unknown
  std::string buffer_;  // bytes read and not yet returned start at start_
  std::size_t start_ = 0;
  std::string read_error_;  // a read error seen after the bytes in buffer_, thrown once they are used
  std::optional<std::string> unread_;
};

/// A dense table of numbers, row-major.
struct NumericTable {
  std::vector<std::string> header;  // empty when the file has none
  std::size_t rows = 0;
  std::size_t columns = 0;
  std::vector<double> values;
  std::vector<std::size_t> line_numbers;  // the file line of each row, for error messages
  double at(std::size_t row, std::size_t column) const { return values[row * columns + column]; }
};

/// Comma-separated numbers, one row per line, plain or gzip-compressed. A first line that is
/// non-numeric in every field is a header; any other line is data, and each of its fields must be
/// a finite number (errors name file:line:column). CRLF line ends and blank lines are tolerated;
/// every row must have as many fields as the first.
NumericTable read_numeric_csv(const std::filesystem::path& path);
/// The same from lines already opened (and perhaps looked at: see TextLines::unread).
NumericTable read_numeric_csv(TextLines& in);

/// read_numeric_csv a block of rows at a time, for a file too large to hold (`sgmcmc convert`):
/// the same rows, checks and errors, without keeping the rows already handed out.
class NumericCsvReader {
public:
  explicit NumericCsvReader(TextLines& in) : in_(in) {}
  /// Appends up to `max_rows` of the next rows to `table` (setting its header and columns); false
  /// once the file has no more. A file without any data row is an error, as in read_numeric_csv.
  bool append_rows(NumericTable& table, std::size_t max_rows);

private:
  TextLines& in_;
  std::vector<std::string> header_;
  std::size_t columns_ = 0, first_data_line_ = 0, rows_ = 0;
};

/// Parses a whole field as a double (a leading '+' is allowed); false if it is not a number.
bool parse_double(std::string_view field, double& value);

/// A field of a data file read as a number, or why it is not one. Data must be finite: a NaN or
/// an infinity in a data file would surface much later as a "diverged" chain or a metric of
/// -inf, blaming the step size; a number beyond a double's range is no value at all.
enum class NumberField { finite, text, not_finite, out_of_range };
NumberField read_number_field(std::string_view field, double& value);
/// Why a field that is not NumberField::finite is refused: "'0.2x' is not a number", ...
std::string number_field_problem(NumberField kind, std::string_view field);
/// A header line: no field reads as a number of any kind (so a typo or an overflow on the first
/// line of data is an error, not a header to drop).
bool is_header(std::span<const std::string_view> fields);

/// Where a file written through OutputFile stood: its length and the CRC-32 (zlib's) of those
/// bytes. A checkpoint records it, so that a resumed run continues only a file whose bytes up to
/// the checkpoint are still the ones written.
struct FileMark {
  std::uint64_t length = 0;
  std::uint32_t crc = 0;
};

/// Throws, naming the file, unless `path` has at least `mark.length` bytes and those have the
/// CRC-32 `mark.crc` (it reads them). Changes nothing, so every file of a run can be checked
/// before any is continued.
void check_file_prefix(const std::filesystem::path& path, FileMark mark);

/// A file written through a buffered stdio stream; errors name the file.
class OutputFile {
public:
  explicit OutputFile(const std::filesystem::path& path);
  /// Continues an existing file after its first `keep.length` bytes (where a checkpoint left it;
  /// check_file_prefix checks them first); what follows them, written after the checkpoint by an
  /// interrupted run, is cut off.
  OutputFile(const std::filesystem::path& path, FileMark keep);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  void write(std::string_view text);
  /// Flushes and closes; throws if anything could not be written (a full disk).
  void close();
  /// Flushes to the operating system; returns the file's length and CRC-32.
  FileMark flush();
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::uint32_t crc_ = 0;  // of every byte in the file, kept as they are written
};

/// Draws in Stan's CSV format (CmdStan guide, "Stan CSV file format"): `#` comment lines, a
/// header of sampler columns (names ending in __: lp__, accept_stat__, stepsize__, ...) and
/// parameters, then one line per draw. ArviZ's from_cmdstan and CmdStan's stansummary read it.
class StanCsvWriter {
public:
  StanCsvWriter(const std::filesystem::path& path, std::span<const std::string> comment_lines,
                std::span<const std::string> sampler_columns, std::span<const std::string> parameter_names);
  void write_draw(std::span<const double> sampler_values, std::span<const double> theta);
  /// Continues a file this writer wrote, after its first `keep.length` bytes (see OutputFile).
  StanCsvWriter(const std::filesystem::path& path, FileMark keep) : file_(path, keep) {}
  void write_comment(std::string_view line);
  void close() { file_.close(); }
  FileMark flush() { return file_.flush(); }

private:
  OutputFile file_;
  std::string line_;
};

/// A Stan CSV file read back: column names and draws (rows), comment lines skipped.
struct StanCsv {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
};

/// Reads a Stan CSV file such as chain-<k>.csv; errors name the file, line and column.
StanCsv read_stan_csv(const std::filesystem::path& path);

/// Shortest text that reads back as the same double ("nan", "inf" for the non-finite).
void append_number(std::string& out, double value);

}  // namespace sgmcmc

namespace sgmcmc {
/// zlib's CRC-32 of `bytes`, continuing `crc` (in text_lines.cpp, which keeps zlib's header out
/// of this interface).
std::uint32_t crc32_update(std::uint32_t crc, std::string_view bytes);
}  // namespace sgmcmc

module :private;

namespace sgmcmc {

bool parse_double(std::string_view field, double& value) {
  const auto kind = read_number_field(field, value);
  return kind == NumberField::finite || kind == NumberField::not_finite;
}

NumberField read_number_field(std::string_view field, double& value) {
  while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) field.remove_prefix(1);
  while (!field.empty() && (field.back() == ' ' || field.back() == '\t')) field.remove_suffix(1);
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || end != field.data() + field.size() || error == std::errc::invalid_argument) return NumberField::text;
  if (error == std::errc::result_out_of_range) return NumberField::out_of_range;
  return std::isfinite(value) ? NumberField::finite : NumberField::not_finite;
}

std::string number_field_problem(NumberField kind, std::string_view field) {
  switch (kind) {
    case NumberField::not_finite: return fmt::format("'{}' is not a finite number (data must be finite)", field);
    case NumberField::out_of_range: return fmt::format("'{}' is beyond the range of a double", field);
    default: return fmt::format("'{}' is not a number", field);
  }
}

bool is_header(std::span<const std::string_view> fields) {
  double ignored = 0.0;
  return std::all_of(fields.begin(), fields.end(),
                     [&](std::string_view field) { return read_number_field(field, ignored) == NumberField::text; });
}

namespace {

struct Field {
  std::string_view text;
  std::size_t column;  // 1-based character column where the field starts
};

std::vector<Field> split_fields(std::string_view line) {
  std::vector<Field> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    const std::size_t end = comma == std::string_view::npos ? line.size() : comma;
    fields.push_back({line.substr(start, end - start), start + 1});
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

std::vector<std::string_view> texts_of(const std::vector<Field>& fields) {
  std::vector<std::string_view> texts;
  for (const auto& field : fields) texts.push_back(field.text);
  return texts;
}

}  // namespace

NumericTable read_numeric_csv(const std::filesystem::path& path) {
  TextLines in(path);
  return read_numeric_csv(in);
}

NumericTable read_numeric_csv(TextLines& in) {
  NumericTable table;
  NumericCsvReader(in).append_rows(table, std::numeric_limits<std::size_t>::max());
  return table;
}

bool NumericCsvReader::append_rows(NumericTable& table, std::size_t max_rows) {
  std::string line;
  std::size_t added = 0;
  while (added < max_rows && in_.next(line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const auto fields = split_fields(line);
    if (columns_ == 0 && header_.empty() && is_header(texts_of(fields))) {
      for (const auto& field : fields) header_.emplace_back(field.text);
      continue;
    }
    const std::size_t expected = columns_ ? columns_ : header_.size();
    if (expected && fields.size() != expected)
      throw Error(fmt::format("{}: {} fields, expected {} as in line {}", in_.where(), fields.size(), expected,
                              first_data_line_ ? first_data_line_ : 1));
    for (const auto& field : fields) {
      double value = 0.0;
      if (const auto kind = read_number_field(field.text, value); kind != NumberField::finite)
        throw Error(fmt::format("{}:{}: {}", in_.where(), field.column, number_field_problem(kind, field.text)));
      table.values.push_back(value);
    }
    if (columns_ == 0) {
      columns_ = fields.size();
      first_data_line_ = in_.line_number();
    }
    table.line_numbers.push_back(in_.line_number());
    ++table.rows;
    ++rows_;
    ++added;
  }
  table.header = header_;
  table.columns = columns_;
  if (rows_ == 0) throw Error(fmt::format("{}: no data rows", in_.path().string()));
  return added > 0;
}

StanCsv read_stan_csv(const std::filesystem::path& path) {
  TextLines in(path);  // bounded: see TextLines
  StanCsv csv;
  std::string line;
  while (in.next(line)) {
    const std::size_t line_number = in.line_number();
    if (line.empty() || line.starts_with("#")) continue;
    const auto fields = split_fields(line);
    if (csv.columns.empty()) {
      for (const auto& field : fields) csv.columns.emplace_back(field.text);
      continue;
    }
    if (fields.size() != csv.columns.size())
      throw Error(fmt::format("{}:{}: {} fields, expected {} as in the header", path.string(), line_number, fields.size(),
                              csv.columns.size()));
    std::vector<double> row(fields.size());
    for (std::size_t k = 0; k < fields.size(); ++k)
      if (!parse_double(fields[k].text, row[k]))
        throw Error(fmt::format("{}:{}:{}: '{}' is not a number", path.string(), line_number, fields[k].column, fields[k].text));
    csv.rows.push_back(std::move(row));
  }
  if (csv.columns.empty()) throw Error(fmt::format("{}: no header line (not a Stan CSV file)", path.string()));
  return csv;
}

OutputFile::OutputFile(const std::filesystem::path& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) throw Error(fmt::format("{}: cannot write ({})", path.string(), std::strerror(errno)));
}

OutputFile::OutputFile(const std::filesystem::path& path, FileMark keep) : path_(path), crc_(keep.crc) {
  std::error_code error;
  const std::uint64_t length = std::filesystem::file_size(path, error);
  if (error) throw Error(fmt::format("{}: cannot continue it ({})", path.string(), error.message()));
  if (length < keep.length)
    throw Error(fmt::format("{}: {} bytes, fewer than the {} its checkpoint recorded; the file was changed after the "
                            "checkpoint",
                            path.string(), length, keep.length));
  std::filesystem::resize_file(path, keep.length, error);
  if (error) throw Error(fmt::format("{}: cannot cut it to {} bytes ({})", path.string(), keep.length, error.message()));
  file_ = std::fopen(path.c_str(), "ab");
  if (!file_ || std::fseek(file_, 0, SEEK_END) != 0)  // so that ftell (flush) tells the length
    throw Error(fmt::format("{}: cannot write ({})", path.string(), std::strerror(errno)));
}

FileMark OutputFile::flush() {
  if (std::fflush(file_) != 0) throw Error(fmt::format("{}: write failed ({})", path_.string(), std::strerror(errno)));
  const long position = std::ftell(file_);
  if (position < 0) throw Error(fmt::format("{}: cannot tell its length ({})", path_.string(), std::strerror(errno)));
  return {static_cast<std::uint64_t>(position), crc_};
}

OutputFile::~OutputFile() {
  if (file_) std::fclose(file_);
}

void OutputFile::write(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size())
    throw Error(fmt::format("{}: write failed ({})", path_.string(), std::strerror(errno)));
  crc_ = crc32_update(crc_, text);
}

void OutputFile::close() {
  if (!file_) return;
  const bool failed = std::fflush(file_) != 0 || std::ferror(file_);
  const bool close_failed = std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed || close_failed) throw Error(fmt::format("{}: write failed", path_.string()));
}

void append_number(std::string& out, double value) {
  fmt::format_to(std::back_inserter(out), "{}", value);
}

StanCsvWriter::StanCsvWriter(const std::filesystem::path& path, std::span<const std::string> comment_lines,
                             std::span<const std::string> sampler_columns, std::span<const std::string> parameter_names)
    : file_(path) {
  for (const auto& comment : comment_lines) write_comment(comment);
  std::string header;
  for (const auto& name : sampler_columns) header += (header.empty() ? "" : ",") + name;
  for (const auto& name : parameter_names) header += "," + name;
  file_.write(header + "\n");
}

void StanCsvWriter::write_comment(std::string_view line) { file_.write(fmt::format("# {}\n", line)); }

void StanCsvWriter::write_draw(std::span<const double> sampler_values, std::span<const double> theta) {
  line_.clear();
  for (double value : sampler_values) {
    if (!line_.empty()) line_ += ',';
    append_number(line_, value);
  }
  for (double value : theta) {
    line_ += ',';
    append_number(line_, value);
  }
  line_ += '\n';
  file_.write(line_);
}

}  // namespace sgmcmc
