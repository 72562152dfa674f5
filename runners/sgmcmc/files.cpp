// Whole files in and out (see files.hpp).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <fmt/format.h>

#include "files.hpp"

import sgmcmc;

namespace fs = std::filesystem;

std::string read_file(const fs::path& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sgmcmc::Error(fmt::format("{}: cannot open {}", path.string(), what));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_atomically(const fs::path& path, const std::string& text) {
  fs::path temporary = path;
  temporary += ".partial";
  sgmcmc::OutputFile file(temporary);
  file.write(text);
  file.close();
  fs::rename(temporary, path);
}
