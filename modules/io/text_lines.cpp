// TextLines and the CRC-32 of output files, in an implementation unit of sgmcmc.io of its own so
// that zlib's header stays out of the module interface that SDK users compile.
module;
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>
#include <string>
#include <system_error>
#include <utility>
#include <fmt/format.h>
#include <zlib.h>
#include <sys/stat.h>
module sgmcmc.io;
import sgmcmc.error;
import sgmcmc.data;

namespace sgmcmc {

namespace {
gzFile handle(void* file) { return static_cast<gzFile>(file); }
}  // namespace

void require_readable_file(const std::filesystem::path& path, std::string_view what) {
  std::error_code ignored;
  const auto type = std::filesystem::status(path, ignored).type();
  // A folder opens for reading and then fails at the first read, which reads like a damaged file.
  if (type == std::filesystem::file_type::directory) throw Error(fmt::format("{}: is a folder, not {}", path.string(), what));
  const char* kind = type == std::filesystem::file_type::character ? "a character device"
                     : type == std::filesystem::file_type::block   ? "a block device"
                     : type == std::filesystem::file_type::socket  ? "a socket"
                                                                   : nullptr;
  if (kind)
    throw Error(fmt::format("{}: is {}, not {} (a regular file or a pipe is read)", path.string(), kind, what));
}

TextLines::TextLines(const std::filesystem::path& path) : path_(path) {
  require_readable_file(path, "a data file");
  budget_ = memory_budget_bytes();
  // zlib opens a file that is not gzip-compressed for transparent reading.
  file_ = gzopen(path.c_str(), "rb");
  if (!file_) throw Error(fmt::format("{}: cannot open ({})", path.string(), std::strerror(errno)));
  gzbuffer(handle(file_), 1 << 17);
}

TextLines::~TextLines() {
  if (file_) gzclose(handle(file_));
}

std::string TextLines::where() const { return fmt::format("{}:{}", path_.string(), line_number_); }

std::string TextLines::where_next() const { return fmt::format("{}:{}", path_.string(), line_number_ + 1); }

void TextLines::unread(std::string line) {
  unread_ = std::move(line);
  --line_number_;
}

/// Reads the next block into buffer_; false at the end of the file. A read error is thrown only
/// once the bytes read before it are used up, so that it names the line it follows.
bool TextLines::refill() {
  if (!read_error_.empty())
    throw Error(fmt::format("{}: read error after this line ({})", where(), read_error_));
  buffer_.resize(1 << 16);
  const int count = gzread(handle(file_), buffer_.data(), static_cast<unsigned>(buffer_.size()));
  buffer_.resize(count > 0 ? static_cast<std::size_t>(count) : 0);
  start_ = 0;
  bytes_read_ += buffer_.size();
  if (budget_ != 0 && bytes_read_ > budget_)
    throw Error(fmt::format("{}: more text (after decompression) than {}, by line {}; is it really a text file of data?",
                            path_.string(), memory_budget_description(), line_number_ + 1));
  int status = Z_OK;
  const char* message = gzerror(handle(file_), &status);
  if (status == Z_ERRNO)
    read_error_ = std::strerror(errno);
  else if (status != Z_OK && status != Z_STREAM_END)
    read_error_ = fmt::format("{}; is the gzip file truncated?", message);
  if (buffer_.empty() && !read_error_.empty()) return refill();  // throws
  return !buffer_.empty();
}

bool TextLines::next(std::string& line) {
  if (unread_) {
    line = std::move(*unread_);
    unread_.reset();
    ++line_number_;
    return true;
  }
  line.clear();
  bool ended = false;  // by a '\n'
  while (!ended && (start_ < buffer_.size() || refill())) {
    const std::size_t newline = buffer_.find('\n', start_);
    ended = newline != std::string::npos;
    const std::size_t end = ended ? newline : buffer_.size();
    // Binary data, or UTF-16 text: a NUL would otherwise cut the line short or join two lines.
    // Looked for in each block as it comes, so /dev/zero through a pipe stops at its first block.
    const std::string_view piece(buffer_.data() + start_, end - start_);  // this line's bytes only
    if (const auto nul = piece.find('\0'); nul != std::string_view::npos)
      throw Error(fmt::format("{}:{}: a NUL byte; a text data file has none (is it binary, or UTF-16?)",
                              where_next(), line.size() + nul + 1));
    line.append(buffer_, start_, end - start_);
    start_ = ended ? end + 1 : end;
    if (line.size() > max_line_bytes)
      throw Error(fmt::format("{}: a line longer than {} MiB; no text file sgmcmc reads has one (is it binary?)",
                              where_next(), max_line_bytes >> 20));
  }
  if (!ended && line.empty()) return false;
  ++line_number_;
  if (line_number_ == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // a UTF-8 byte-order mark
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

std::uint32_t crc32_update(std::uint32_t crc, std::string_view bytes) {
  return static_cast<std::uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

void check_file_prefix(const std::filesystem::path& path, FileMark mark) {
  std::error_code error;
  const std::uint64_t length = std::filesystem::file_size(path, error);
  if (error) throw Error(fmt::format("{}: cannot continue it ({})", path.string(), error.message()));
  if (length < mark.length)
    throw Error(fmt::format("{}: {} bytes, fewer than the {} its checkpoint recorded: the file was cut after the "
                            "checkpoint",
                            path.string(), length, mark.length));
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(1 << 20);
  std::uint32_t crc = 0;
  for (std::uint64_t left = mark.length; left > 0;) {
    const auto chunk = static_cast<std::streamsize>(std::min<std::uint64_t>(left, buffer.size()));
    if (!in.read(buffer.data(), chunk)) throw Error(fmt::format("{}: cannot read it ({})", path.string(), std::strerror(errno)));
    crc = crc32_update(crc, {buffer.data(), static_cast<std::size_t>(chunk)});
    left -= static_cast<std::uint64_t>(chunk);
  }
  if (crc != mark.crc)
    throw Error(fmt::format("{}: its first {} bytes, written before the checkpoint, were changed since (CRC-32 {:08x}, "
                            "the checkpoint recorded {:08x})",
                            path.string(), mark.length, crc, mark.crc));
}

}  // namespace sgmcmc
