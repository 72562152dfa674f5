// Whole files in and out (see files.hpp).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>
#include <fmt/format.h>

#include "files.hpp"

import sgmcmc;

namespace fs = std::filesystem;

std::string read_file(const fs::path& path, std::string_view what, std::uint64_t max_bytes) {
  // A folder opens as an empty stream: its "contents" would be parsed as an empty file.
  sgmcmc::require_readable_file(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sgmcmc::Error(fmt::format("{}: cannot open {}", path.string(), what));
  std::string text;
  std::vector<char> block(1 << 16);
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    text.append(block.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes)
      throw sgmcmc::Error(fmt::format("{}: more than {} bytes, too many for {}", path.string(), max_bytes, what));
  }
  return text;
}

void require_folder_or_absent(const fs::path& out) {
  if (fs::exists(out) && !fs::is_directory(out))
    throw sgmcmc::Error(fmt::format("--out '{}' is not a folder; the output goes into a folder", out.string()));
}

void write_atomically(const fs::path& path, const std::string& text) {
  fs::path temporary = path;
  temporary += ".partial";
  sgmcmc::OutputFile file(temporary);
  file.write(text);
  file.close();
  fs::rename(temporary, path);
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (std::size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1)
    fields.push_back(line.substr(start, comma - start));
  fields.push_back(line.substr(start));
  return fields;
}
