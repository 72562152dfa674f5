#include "npy.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>
#include <fmt/format.h>
#include <fmt/ranges.h>

import sgmcmc.sdk;

namespace regression {

BinaryLayout binary_layout(const std::string& path) {
  std::filesystem::path name(path);
  if (!name.has_filename()) name = name.parent_path();  // "x.csr/", as a shell completes a folder
  const std::string extension = name.extension().string();
  if (extension == ".npy") return BinaryLayout::dense_npy;
  if (extension == ".csr") return BinaryLayout::sparse_csr;
  return BinaryLayout::none;
}

}  // namespace regression

namespace regression::npy {

static_assert(std::endian::native == std::endian::little, "the .npy values are read in place as little-endian");

namespace {

constexpr std::string_view magic = "\x93NUMPY";

/// A header's text for a message: its printable characters, at most 200, without the padding.
std::string shown(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 200)) out.push_back(c >= ' ' && c <= '~' ? c : '?');
  while (!out.empty() && (out.back() == ' ' || out.back() == '?')) out.pop_back();
  return out;
}

// ---- The header: a Python dict literal, e.g. {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }

/// A reader of the few Python literals an .npy header holds: quoted strings, True/False, tuples
/// of whole numbers. Any other text is a refusal naming the file.
class Literal {
public:
  Literal(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n')) ++at_;
  }
  bool take(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) return ++at_, true;
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(fmt::format("'{}'", c));
  }
  std::string quoted() {
    skip_space();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) fail("a quoted string");
    const char quote = text_[at_++];
    const auto end = text_.find(quote, at_);
    if (end == std::string_view::npos) fail("the end of a quoted string");
    std::string value(text_.substr(at_, end - at_));
    at_ = end + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}})
      if (text_.substr(at_).starts_with(word)) return at_ += word.size(), value;
    fail("True or False");
  }
  std::vector<std::size_t> whole_number_tuple() {
    expect('(');
    std::vector<std::size_t> values;
    while (!take(')')) {
      skip_space();
      std::size_t value = 0;
      const auto [end, error] = std::from_chars(text_.data() + at_, text_.data() + text_.size(), value);
      if (error != std::errc() || end == text_.data() + at_) fail("a whole number in the shape");
      at_ = static_cast<std::size_t>(end - text_.data());
      values.push_back(value);
      if (!take(',')) {
        expect(')');
        break;
      }
    }
    return values;
  }
  [[noreturn]] void fail(std::string_view expected) const {
    throw sgmcmc::Error(fmt::format("{}: unreadable .npy header '{}': expected {} at character {}", path_,
                                    shown(text_), expected, at_ + 1));
  }

private:
  std::string_view text_;
  const std::string& path_;
  std::size_t at_ = 0;
};

Dtype parse_dtype(const std::string& text, const std::string& path) {
  for (Dtype dtype : {Dtype::float64, Dtype::float32, Dtype::int64, Dtype::int32})
    if (text == descr(dtype)) return dtype;
  throw sgmcmc::Error(fmt::format("{}: dtype '{}' is not supported; expected '<f8' or '<f4' (little-endian float64 or "
                                  "float32; '<i8' or '<i4' for a CSR folder's indices), e.g. a.astype('<f8')",
                                  path, text));
}

Header parse_header(std::string_view text, std::size_t data_offset, const std::string& path) {
  Literal literal(text, path);
  Header header;
  header.data_offset = data_offset;
  bool have_descr = false, have_order = false, have_shape = false, fortran_order = false;
  literal.expect('{');
  while (!literal.take('}')) {
    const std::string key = literal.quoted();
    literal.expect(':');
    if (key == "descr") {
      header.dtype = parse_dtype(literal.quoted(), path), have_descr = true;
    } else if (key == "fortran_order") {
      fortran_order = literal.boolean(), have_order = true;
    } else if (key == "shape") {
      header.shape = literal.whole_number_tuple(), have_shape = true;
    } else {
      literal.fail("the key 'descr', 'fortran_order' or 'shape'");
    }
    if (!literal.take(',')) {
      literal.expect('}');
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape)
    throw sgmcmc::Error(fmt::format("{}: the .npy header '{}' lacks '{}'", path, shown(text),
                                    !have_descr ? "descr" : !have_order ? "fortran_order" : "shape"));
  if (fortran_order)
    throw sgmcmc::Error(fmt::format("{}: fortran_order is True (column-major); expected a C-order array: save "
                                    "np.ascontiguousarray(a)",
                                    path));
  if (header.shape.size() != 1 && header.shape.size() != 2)
    throw sgmcmc::Error(fmt::format("{}: shape ({}) has {} dimensions; expected 1 or 2 (rows, or rows × columns)", path,
                                    fmt::join(header.shape, ", "), header.shape.size()));
  return header;
}

/// The whole file's size, or a refusal naming it.
std::size_t file_size(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0)
    throw sgmcmc::Error(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  if (!S_ISREG(status.st_mode)) throw sgmcmc::Error(fmt::format("{}: not a regular file; expected an .npy file", path));
  return static_cast<std::size_t>(status.st_size);
}

/// The bytes the shape's values take, refused when they overflow or exceed what the file holds.
void check_length(const Header& header, std::size_t size, const std::string& path) {
  std::size_t count = 1;
  for (const std::size_t extent : header.shape)
    if (extent != 0 && count > std::numeric_limits<std::size_t>::max() / item_size(header.dtype) / extent)
      throw sgmcmc::Error(fmt::format("{}: shape ({}) is too large to address", path, fmt::join(header.shape, ", ")));
    else
      count *= extent;
  const std::size_t needed = count * item_size(header.dtype);
  if (size - header.data_offset < needed)
    throw sgmcmc::Error(fmt::format("{}: truncated: shape ({}) of '{}' needs {} bytes after the {}-byte header, the file "
                                    "has {}",
                                    path, fmt::join(header.shape, ", "), descr(header.dtype), needed, header.data_offset,
                                    size - header.data_offset));
}

}  // namespace

const char* descr(Dtype dtype) {
  switch (dtype) {
    case Dtype::float64: return "<f8";
    case Dtype::float32: return "<f4";
    case Dtype::int64: return "<i8";
    case Dtype::int32: return "<i4";
  }
  return "";
}

std::size_t item_size(Dtype dtype) { return dtype == Dtype::float64 || dtype == Dtype::int64 ? 8 : 4; }

Header read_header(const std::string& path) {
  const std::size_t size = file_size(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sgmcmc::Error(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  // Magic (6), version (2), header length (2 bytes in version 1.0, 4 in 2.0 and 3.0).
  char start[12] = {};
  in.read(start, std::min<std::size_t>(size, sizeof start));
  if (size < 10 || std::string_view(start, magic.size()) != magic)
    throw sgmcmc::Error(fmt::format("{}: not a NumPy .npy file (it does not start with \\x93NUMPY)", path));
  const auto major = static_cast<unsigned char>(start[6]);
  if (major < 1 || major > 3)
    throw sgmcmc::Error(fmt::format("{}: .npy format version {}.{}; expected 1.0, 2.0 or 3.0", path, major,
                                    static_cast<unsigned char>(start[7])));
  const std::size_t length_bytes = major == 1 ? 2 : 4, prefix = 8 + length_bytes;
  if (size < prefix) throw sgmcmc::Error(fmt::format("{}: truncated within the .npy header", path));
  std::size_t header_length = 0;
  for (std::size_t b = 0; b < length_bytes; ++b) header_length |= std::size_t{static_cast<unsigned char>(start[8 + b])} << (8 * b);
  // NumPy itself reads headers of at most 10,000 bytes by default (max_header_size); a length far
  // beyond that is damage, refused before a buffer of that size is made.
  constexpr std::size_t longest_header = std::size_t{1} << 20;
  if (header_length > longest_header)
    throw sgmcmc::Error(fmt::format("{}: the .npy header says it is {} bytes long; expected at most {}", path,
                                    header_length, longest_header));
  if (size - prefix < header_length)
    throw sgmcmc::Error(fmt::format("{}: truncated: the .npy header says {} bytes, the file has {} after its start", path,
                                    header_length, size - prefix));
  std::string text(header_length, '\0');
  in.seekg(static_cast<std::streamoff>(prefix));
  in.read(text.data(), static_cast<std::streamsize>(header_length));
  if (!in) throw sgmcmc::Error(fmt::format("{}: could not read the .npy header", path));
  Header header = parse_header(text, prefix + header_length, path);
  check_length(header, size, path);
  return header;
}

MappedArray::MappedArray(const std::string& path, RowRange range) : path_(path), header_(read_header(path)) {
  if (range.first > header_.rows())
    throw sgmcmc::Error(fmt::format("{}: rows from {} asked for, but the array has {}", path, range.first, header_.rows()));
  first_row_ = range.first;
  rows_ = std::min(range.count, header_.rows() - range.first);
  const std::size_t row_size = header_.columns() * item_size(header_.dtype);
  if (rows_ == 0 || row_size == 0) return;
  // mmap wants a page-aligned offset: map from the page holding the range's first byte.
  const std::size_t begin = header_.data_offset + first_row_ * row_size, end = begin + rows_ * row_size;
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t map_begin = begin / page * page;
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) throw sgmcmc::Error(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  void* mapping = ::mmap(nullptr, end - map_begin, PROT_READ, MAP_SHARED, descriptor, static_cast<off_t>(map_begin));
  const int map_error = errno;
  ::close(descriptor);  // the mapping keeps the file
  if (mapping == MAP_FAILED)
    throw sgmcmc::Error(fmt::format("{}: cannot map its {} bytes of values into memory ({})", path, end - begin,
                                    std::strerror(map_error)));
  mapping_ = mapping;
  mapping_bytes_ = end - map_begin;
  values_ = static_cast<const std::byte*>(mapping) + (begin - map_begin);
  ::madvise(mapping_, mapping_bytes_, MADV_SEQUENTIAL);  // advice only: read once, front to back
}

MappedArray::MappedArray(MappedArray&& other) noexcept
    : path_(std::move(other.path_)), header_(std::move(other.header_)), first_row_(other.first_row_), rows_(other.rows_),
      mapping_(std::exchange(other.mapping_, nullptr)), mapping_bytes_(std::exchange(other.mapping_bytes_, 0)),
      values_(std::exchange(other.values_, nullptr)) {}

MappedArray& MappedArray::operator=(MappedArray&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    header_ = std::move(other.header_);
    first_row_ = other.first_row_;
    rows_ = other.rows_;
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    values_ = std::exchange(other.values_, nullptr);
  }
  return *this;
}

MappedArray::~MappedArray() { unmap(); }

void MappedArray::unmap() {
  if (mapping_) ::munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
}

namespace {

/// The values at `bytes`, of `dtype`, as doubles into `out`. memcpy, not a cast of the pointer: a
/// header of odd length leaves the values unaligned.
void values_as_double(const std::byte* bytes, Dtype dtype, std::span<double> out) {
  const auto convert = [&]<class Stored>(Stored) {
    for (std::size_t j = 0; j < out.size(); ++j) {
      Stored value;
      std::memcpy(&value, bytes + j * sizeof(Stored), sizeof(Stored));
      out[j] = static_cast<double>(value);
    }
  };
  switch (dtype) {
    case Dtype::float64: std::memcpy(out.data(), bytes, out.size() * sizeof(double)); break;
    case Dtype::float32: convert(float{}); break;
    case Dtype::int64: convert(std::int64_t{}); break;
    case Dtype::int32: convert(std::int32_t{}); break;
  }
}

}  // namespace

void MappedArray::row_as_double(std::size_t i, std::span<double> out) const {
  values_as_double(row_bytes(i), header_.dtype, out);
}

RowReader::RowReader(const std::string& path) : path_(path), header_(read_header(path)) {
  descriptor_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor_ < 0) throw sgmcmc::Error(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
}

RowReader::~RowReader() { ::close(descriptor_); }

void RowReader::read(std::size_t first, std::size_t count, std::vector<double>& out) {
  const std::size_t row_bytes = header_.columns() * item_size(header_.dtype);
  bytes_.resize(count * row_bytes);
  const auto at = static_cast<off_t>(header_.data_offset + first * row_bytes);
  if (first + count > header_.rows() ||
      (count && ::pread(descriptor_, bytes_.data(), bytes_.size(), at) != static_cast<ssize_t>(bytes_.size())))
    throw sgmcmc::Error(fmt::format("{}: cannot read rows {} to {} of its {}", path_, first, first + count, header_.rows()));
  out.resize(count * header_.columns());
  values_as_double(bytes_.data(), header_.dtype, out);
}

template <class Real>
void MappedArray::copy_row(std::size_t i, std::size_t first_column, std::span<Real> out) const {
  const std::byte* at = row_bytes(i) + first_column * item_size(header_.dtype);
  const auto copy_as = [&]<class Stored>(Stored) {
    if constexpr (std::is_same_v<Stored, Real>) {
      std::memcpy(out.data(), at, out.size() * sizeof(Real));  // memcpy: the values may be unaligned
    } else {
      for (std::size_t j = 0; j < out.size(); ++j) {
        Stored value;
        std::memcpy(&value, at + j * sizeof(Stored), sizeof(Stored));
        out[j] = static_cast<Real>(value);
      }
    }
  };
  if (header_.dtype == Dtype::float64) copy_as(double{});
  else copy_as(float{});  // callers hold float arrays only (binary_rows.cpp checks)
}

template void MappedArray::copy_row(std::size_t, std::size_t, std::span<double>) const;
template void MappedArray::copy_row(std::size_t, std::size_t, std::span<float>) const;

std::int64_t MappedArray::integer(std::size_t i) const { return integer_at(row_bytes(i)); }

std::int64_t MappedArray::integer_at(const std::byte* at) const {
  if (header_.dtype == Dtype::int64) {
    std::int64_t value;
    std::memcpy(&value, at, sizeof value);
    return value;
  }
  std::int32_t value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

namespace {

/// Magic, version, header length and the dict, padded with spaces and ended by '\n' so that the
/// values start on a multiple of 64 bytes (NEP 1).
std::string header_bytes(const std::string& path, Dtype dtype, std::span<const std::size_t> shape) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}{}), }}", descr(dtype),
                                 fmt::join(shape, ", "), shape.size() == 1 ? "," : "");
  const std::size_t prefix = magic.size() + 4, total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  if (total - prefix > 0xffff) throw sgmcmc::Error(fmt::format("{}: the .npy header would be too long", path));
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  const auto length = static_cast<std::uint16_t>(dict.size());
  const char version_and_length[4] = {1, 0, static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
  return std::string(magic) + std::string(version_and_length, 4) + dict;
}

/// `values` in `dtype`'s bytes, little-endian as the machine (the readers check it is).
void write_values(std::ofstream& out, Dtype dtype, std::span<const double> values) {
  // In chunks, so that a 10⁸-row file is never held twice in memory.
  std::vector<char> chunk;
  constexpr std::size_t chunk_values = 1 << 16;
  for (std::size_t start = 0; start < values.size(); start += chunk_values) {
    const auto part = values.subspan(start, std::min(chunk_values, values.size() - start));
    chunk.resize(part.size() * item_size(dtype));
    for (std::size_t k = 0; k < part.size(); ++k) {
      char* at = chunk.data() + k * item_size(dtype);
      switch (dtype) {
        case Dtype::float64: std::memcpy(at, &part[k], 8); break;
        case Dtype::float32: { const auto v = static_cast<float>(part[k]); std::memcpy(at, &v, 4); break; }
        case Dtype::int64: { const auto v = static_cast<std::int64_t>(part[k]); std::memcpy(at, &v, 8); break; }
        case Dtype::int32: { const auto v = static_cast<std::int32_t>(part[k]); std::memcpy(at, &v, 4); break; }
      }
    }
    out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  }
}

std::vector<std::size_t> shape_of(std::size_t rows, std::size_t columns) {
  return columns ? std::vector<std::size_t>{rows, columns} : std::vector<std::size_t>{rows};
}

}  // namespace

void write(const std::string& path, Dtype dtype, std::span<const std::size_t> shape, std::span<const double> values) {
  Writer writer(path, dtype, shape.size() == 2 ? shape[1] : 0);
  writer.append(values);
  writer.finish();
}

struct Writer::File {
  std::ofstream out;
};

Writer::Writer(std::string path, Dtype dtype, std::size_t columns)
    : path_(std::move(path)), dtype_(dtype), columns_(columns), file_(std::make_unique<File>()) {
  file_->out.open(path_, std::ios::binary | std::ios::trunc);
  if (!file_->out) throw sgmcmc::Error(fmt::format("{}: cannot create ({})", path_, std::strerror(errno)));
  file_->out << header_bytes(path_, dtype_, shape_of(0, columns_));
}

Writer::~Writer() = default;

std::size_t Writer::rows() const { return columns_ ? values_ / columns_ : values_; }

void Writer::append(std::span<const double> values) {
  write_values(file_->out, dtype_, values);
  values_ += values.size();
  if (!file_->out) throw sgmcmc::Error(fmt::format("{}: writing failed ({})", path_, std::strerror(errno)));
}

void Writer::finish() {
  const std::string header = header_bytes(path_, dtype_, shape_of(rows(), columns_));
  if (header.size() != header_bytes(path_, dtype_, shape_of(0, columns_)).size())
    throw sgmcmc::Error(fmt::format("{}: {} rows do not fit the header written before them", path_, rows()));
  file_->out.seekp(0);
  file_->out << header;
  file_->out.close();
  if (!file_->out) throw sgmcmc::Error(fmt::format("{}: writing failed ({})", path_, std::strerror(errno)));
}

}  // namespace regression::npy
