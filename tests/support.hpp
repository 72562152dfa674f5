// Helpers shared by the test suites: temporary folders, the real gaussian plugin, the real CLI.
#pragma once
#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <fcntl.h>
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

/// A CSV line's comma-separated fields, a trailing empty one included; a field in double quotes
/// may hold commas (a sweep table's `reason`).
inline std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) fields.emplace_back();
    else fields.back() += c;
  }
  return fields;
}

/// A table with a header (metrics.csv, a sweep's results.csv and summary.csv) without its timing
/// columns, `seconds`, `cpu_seconds` and `concurrent_cells`: clocks differ between any two runs,
/// everything else must not.
inline std::string without_seconds(const std::string& table) {
  const auto lines = lines_of(table);
  if (lines.empty()) return "";
  const auto header = csv_fields(lines.front());
  std::string out;
  for (const auto& line : lines) {
    const auto fields = csv_fields(line);
    std::string separator;
    for (std::size_t f = 0; f < fields.size(); ++f)
      if (f >= header.size() || (header[f] != "seconds" && header[f] != "cpu_seconds" && header[f] != "concurrent_cells")) {
        out += separator + fields[f];
        separator = ",";
      }
    out += "\n";
  }
  return out;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A chain's Stan CSV without its closing "Elapsed Time" comment lines: wall-clock seconds differ
/// between any two runs, as metrics.csv's seconds column does; everything else must not.
inline std::string draws_without_elapsed_time(const std::filesystem::path& path) {
  const std::string text = read_text(path);
  const auto at = text.find("# \n#  Elapsed Time:");
  return at == std::string::npos ? text : text.substr(0, at);
}

inline const std::filesystem::path gaussian_plugin_path = std::filesystem::path(SGMCMC_PLUGIN_DIR) / "sgmcmc-model-gaussian.so";
inline const std::filesystem::path mlp_plugin_path = std::filesystem::path(SGMCMC_PLUGIN_DIR) / "sgmcmc-model-mlp.so";
inline const std::filesystem::path logistic_plugin_path = std::filesystem::path(SGMCMC_PLUGIN_DIR) / "sgmcmc-model-logistic.so";
inline const std::filesystem::path fixture_plugin_dir = SGMCMC_FIXTURE_PLUGIN_DIR;

struct CliResult {
  int exit_code;     // -1 when killed by a signal (a crash)
  std::string output;  // standard output and standard error together
};

/// REQUIRE_THAT(result, test::ExitsWith(0)): a failure shows the command's output in the check's
/// own lines, ahead of the INFO messages, which a long log may cut off.
struct ExitsWith : Catch::MatcherBase<CliResult> {
  explicit ExitsWith(int code) : code(code) {}
  bool match(const CliResult& result) const override { return result.exit_code == code; }
  std::string describe() const override { return "exits with " + std::to_string(code); }
  int code;
};

/// Runs a shell command with no terminal; returns its exit code and output.
inline CliResult shell(const std::string& command) {
  std::FILE* pipe = popen((command + " 2>&1 </dev/null").c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// Starts a program (arguments[0], a path) in a child process; its standard output and error go
/// to the file `output` (discarded by default).
inline pid_t spawn(std::vector<std::string> arguments, const std::string& output = "/dev/null") {
  std::vector<char*> argv;
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {  // only async-signal-safe calls between fork and exec
    const int file = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(file, 1);
    dup2(file, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

/// Starts the real `sgmcmc` binary with `arguments` in a child process, output to `output`.
inline pid_t spawn_cli(std::vector<std::string> arguments, const std::string& output = "/dev/null") {
  arguments.insert(arguments.begin(), SGMCMC_CLI);
  return spawn(std::move(arguments), output);
}

/// Waits until `ready()` holds, then sends `signal` to `child` and waits for it to end; returns
/// its wait status, or nothing when it ended first or nothing was ready within two minutes.
template <class Ready>
std::optional<int> signal_when(pid_t child, int signal, Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  int status = 0;
  while (!ready()) {
    if (waitpid(child, &status, WNOHANG) == child) return std::nullopt;
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill(child, signal);
  waitpid(child, &status, 0);
  if (!ready()) return std::nullopt;
  return status;
}

/// Waits until `ready()` holds, then kills `child` with SIGKILL (a power cut, as far as its files
/// know). False when the child ended first or nothing was ready within two minutes.
template <class Ready>
bool kill_when(pid_t child, Ready ready) {
  const auto status = signal_when(child, SIGKILL, ready);
  return status && WIFSIGNALED(*status);
}

/// What a figure script of runners/figures/ leaves when it worked: exit code 0, its settling
/// table for SGLD, SGLD-CV and SAGA, a PNG of two rows of panels with three curves each (over
/// 20 kB), and the runs' metrics.csv in `folder`.
inline void check_figure(const CliResult& result, const std::filesystem::path& folder, const std::string& png,
                         std::initializer_list<const char*> runs) {
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Matchers::Contains("Within 0.01 nats") && Catch::Matchers::Contains("SGLD-CV") &&
                                Catch::Matchers::Contains("SAGA"));
  REQUIRE(std::filesystem::exists(folder / png));
  CHECK(std::filesystem::file_size(folder / png) > 20'000);
  for (const char* run : runs) CHECK(std::filesystem::exists(folder / run / "metrics.csv"));
}

/// Runs the real `sgmcmc` binary with `arguments` (a shell-quoted string) and no terminal.
inline CliResult run_cli(const std::string& arguments) { return shell(std::string("'") + SGMCMC_CLI + "' " + arguments); }

}  // namespace test

template <>
struct Catch::StringMaker<test::CliResult> {
  static std::string convert(const test::CliResult& result) {
    return "exit code " + std::to_string(result.exit_code) + ", saying:\n" + result.output;
  }
};
