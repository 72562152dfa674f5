// Helpers shared by the test suites: temporary folders, the real gaussian plugin, the real CLI.
#pragma once
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

namespace test {

/// A fresh folder under the system's temporary folder, removed when the object dies.
class TempDir {
public:
  TempDir() {
    std::random_device device;
    path_ = std::filesystem::temp_directory_path() / ("sgmcmc-test-" + std::to_string(getpid()) + "-" + std::to_string(device()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return path_ / name;
  }

private:
  std::filesystem::path path_;
};

/// The lines of a text, without their ends.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// metrics.csv (chain,iteration,seconds,...) without its wall-clock column, the third.
inline std::string without_seconds(const std::string& metrics) {
  std::string out;
  for (const auto& line : lines_of(metrics)) {
    const auto second = line.find(',', line.find(',') + 1), third = line.find(',', second + 1);
    out += line.substr(0, second) + line.substr(third) + "\n";
  }
  return out;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline const std::filesystem::path gaussian_plugin_path = std::filesystem::path(SGMCMC_PLUGIN_DIR) / "sgmcmc-model-gaussian.so";
inline const std::filesystem::path logistic_plugin_path = std::filesystem::path(SGMCMC_PLUGIN_DIR) / "sgmcmc-model-logistic.so";
inline const std::filesystem::path fixture_plugin_dir = SGMCMC_FIXTURE_PLUGIN_DIR;

struct CliResult {
  int exit_code;     // -1 when killed by a signal (a crash)
  std::string output;  // standard output and standard error together
};

/// Runs the real `sgmcmc` binary with `arguments` (a shell-quoted string) and no terminal.
inline CliResult run_cli(const std::string& arguments) {
  const std::string command = std::string("'") + SGMCMC_CLI + "' " + arguments + " 2>&1 </dev/null";
  std::FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace test
