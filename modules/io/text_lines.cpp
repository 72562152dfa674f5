// TextLines, in an implementation unit of sgmcmc.io of its own so that zlib's header stays out of
// the module interface that SDK users compile.
module;
#include <cstring>
#include <filesystem>
#include <string>
#include <fmt/format.h>
#include <zlib.h>
module sgmcmc.io;
import sgmcmc.error;

namespace sgmcmc {

namespace {
gzFile handle(void* file) { return static_cast<gzFile>(file); }
}  // namespace

TextLines::TextLines(const std::filesystem::path& path) : path_(path) {
  // zlib opens a file that is not gzip-compressed for transparent reading.
  file_ = gzopen(path.c_str(), "rb");
  if (!file_) throw Error(fmt::format("{}: cannot open ({})", path.string(), std::strerror(errno)));
  gzbuffer(handle(file_), 1 << 17);
}

TextLines::~TextLines() {
  if (file_) gzclose(handle(file_));
}

std::string TextLines::where() const { return fmt::format("{}:{}", path_.string(), line_number_); }

bool TextLines::next(std::string& line) {
  line.clear();
  char buffer[1 << 14];
  while (gzgets(handle(file_), buffer, sizeof buffer)) {
    line += buffer;
    if (!line.empty() && line.back() == '\n') break;
  }
  int status = Z_OK;
  const char* message = gzerror(handle(file_), &status);
  if (status != Z_OK && status != Z_STREAM_END)
    throw Error(fmt::format("{}:{}: read error after this line ({}); is the gzip file truncated?", path_.string(),
                            line_number_, message));
  if (line.empty()) return false;
  ++line_number_;
  if (line.back() == '\n') line.pop_back();
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

}  // namespace sgmcmc
