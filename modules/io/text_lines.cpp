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
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
module sgmcmc.io;
import sgmcmc.error;
import sgmcmc.data;

namespace sgmcmc {

namespace {

/// The bytes of a data file, inflated when it is gzip-compressed (RFC 1952). Our own loop over
/// zlib's inflate, not gzread: gzread silently drops whatever follows a gzip member that is not
/// another member (plain rows appended to a .gz file would vanish), and says "unexpected end of
/// file" for a cut stream without saying where. Read through a file descriptor, so a pipe works.
class Decoder {
public:
  explicit Decoder(const std::filesystem::path& path) : path_(path) {
    do fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) throw Error(fmt::format("{}: cannot open ({})", path.string(), std::strerror(errno)));
    // Two bytes tell gzip (1f 8b) from text; a pipe may deliver them one at a time.
    while (end_ < 2 && fill()) {}
    compressed_ = end_ >= 2 && input_[0] == 0x1f && input_[1] == 0x8b;
    if (compressed_ && inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) {
      ::close(fd_);
      throw Error(fmt::format("{}: zlib cannot start inflating ({})", path.string(), stream_.msg ? stream_.msg : "no memory"));
    }
  }
  ~Decoder() {
    if (compressed_) inflateEnd(&stream_);
    ::close(fd_);
  }
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  /// Up to `capacity` bytes of text into `out`; 0 at the end. Throws Error on a read error or a
  /// damaged, cut or extended gzip stream.
  std::size_t read(char* out, std::size_t capacity) {
    if (!pending_error_.empty()) throw Error(pending_error_);
    if (!compressed_) return read_plain(out, capacity);
    std::size_t produced = 0;
    while (produced == 0) {
      if (begin_ == end_ && !ended_) fill();
      if (member_ended_ && !start_next_member()) return 0;
      if (begin_ == end_ && ended_)
        throw Error(fmt::format("{}: the gzip stream stops after {} bytes without its end: is the gzip file truncated?",
                                path_.string(), consumed_ + begin_));
      stream_.next_in = input_.data() + begin_;
      stream_.avail_in = static_cast<uInt>(end_ - begin_);
      stream_.next_out = reinterpret_cast<Bytef*>(out + produced);
      stream_.avail_out = static_cast<uInt>(capacity - produced);
      const int status = inflate(&stream_, Z_NO_FLUSH);
      begin_ = end_ - stream_.avail_in;
      produced = capacity - stream_.avail_out;
      if (status == Z_STREAM_END) member_ended_ = true;
      else if (status == Z_DATA_ERROR || status == Z_NEED_DICT || status == Z_MEM_ERROR) {
        // The text inflated before the damage is returned first; the error comes with the next read.
        pending_error_ = fmt::format("{}: a damaged gzip stream near byte {} ({}): is the gzip file corrupt?",
                                     path_.string(), consumed_ + begin_, stream_.msg ? stream_.msg : "zlib error");
        if (produced == 0) throw Error(pending_error_);
      }
    }
    return produced;
  }

private:
  /// Reads more of the file after the unread input; false at its end.
  bool fill() {
    if (begin_ > 0) {  // keep the unread bytes at the front
      std::memmove(input_.data(), input_.data() + begin_, end_ - begin_);
      consumed_ += begin_;
      end_ -= begin_;
      begin_ = 0;
    }
    ssize_t count;
    do count = ::read(fd_, input_.data() + end_, input_.size() - end_);
    while (count < 0 && errno == EINTR);
    if (count < 0) throw Error(fmt::format("{}: read error ({})", path_.string(), std::strerror(errno)));
    end_ += static_cast<std::size_t>(count);
    ended_ = count == 0;
    return count > 0;
  }

  std::size_t read_plain(char* out, std::size_t capacity) {
    if (begin_ == end_ && !fill()) return 0;
    const std::size_t count = std::min(capacity, end_ - begin_);
    std::memcpy(out, input_.data() + begin_, count);
    begin_ += count;
    return count;
  }

  /// After a member's end: another member (a concatenation of gzip files is one gzip file, RFC
  /// 1952 section 2.2) or the end of the file; anything else is refused, not dropped.
  bool start_next_member() {
    while (end_ - begin_ < 2 && fill()) {}
    if (begin_ == end_) return false;
    if (end_ - begin_ >= 2 && input_[begin_] == 0x1f && input_[begin_ + 1] == 0x8b) {
      inflateReset(&stream_);
      member_ended_ = false;
      return true;
    }
    throw Error(fmt::format("{}: bytes that are not gzip follow the end of its compressed data at byte {} (plain text "
                            "appended to a gzip file? decompress it, append, and compress the whole again)",
                            path_.string(), consumed_ + begin_));
  }

  std::filesystem::path path_;
  int fd_ = -1;
  bool compressed_ = false;
  z_stream stream_{};
  std::vector<unsigned char> input_ = std::vector<unsigned char>(1 << 17);
  std::size_t begin_ = 0, end_ = 0;  // the unread input
  std::uint64_t consumed_ = 0;       // file bytes before input_[0], for messages
  bool ended_ = false;               // the file has no more bytes
  bool member_ended_ = false;        // inflate reached a member's end
  std::string pending_error_;        // thrown by the next read
};

Decoder& decoder(void* file) { return *static_cast<Decoder*>(file); }

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

TextLines::TextLines(const std::filesystem::path& path, bool streamed) : path_(path) {
  require_readable_file(path, "a data file");
  budget_ = streamed ? 0 : memory_budget_bytes();
  file_ = new Decoder(path);
}

TextLines::~TextLines() {
  delete &decoder(file_);
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
  if (!read_error_.empty()) throw Error(fmt::format("{} (after line {})", read_error_, line_number_));
  buffer_.resize(1 << 16);
  std::size_t count = 0;
  try {
    count = decoder(file_).read(buffer_.data(), buffer_.size());
  } catch (const Error& error) {
    read_error_ = error.what();
  }
  buffer_.resize(count);
  start_ = 0;
  bytes_read_ += buffer_.size();
  if (budget_ != 0 && bytes_read_ > budget_)
    throw Error(fmt::format("{}: more text (after decompression) than {}, by line {}; is it really a text file of data?",
                            path_.string(), memory_budget_description(), line_number_ + 1));
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
