// Whole files in and out (see files.hpp).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <fmt/format.h>

#include "files.hpp"

import sgmcmc;

namespace fs = std::filesystem;

std::string read_file(const fs::path& path, std::string_view what) {
  // A folder opens as an empty stream: its "contents" would be parsed as an empty file.
  if (std::error_code ignored; fs::is_directory(path, ignored))
    throw sgmcmc::Error(fmt::format("{}: is a folder, not {}", path.string(), what));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sgmcmc::Error(fmt::format("{}: cannot open {}", path.string(), what));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
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
