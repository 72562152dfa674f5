// Loading a large data set from text and from its binary conversion (issue 45 item 2): the
// 581,012-row simulated cover type (the logistic plugin's shape: 10 features uniform on [0, 1],
// one of 4 wilderness areas and one of 40 soil types set, a ±1 label) written as CSV with 17
// significant digits, converted by the real `sgmcmc convert` to a dense .npy file, then read back
// by the regression plugins' reader (read_labelled_rows, what `model.data` does) from each. Printed
// figures, not a timed test. The .npy read leaves the features in the map (the plugins copy them
// into their design matrix, as they copy a text file's rows); the copy into double rows, which
// the text readers make, is timed beside it:
//
//   build/release/tests/benchmarks/data_load_benchmark
//
// Each read is the fastest of three (the machine is shared); the files are in the page cache, so
// the figures compare parsing against mapping, not disks. Files go to the system's temporary folder.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fmt/format.h>

#include "binary_rows.hpp"
#include "npy.hpp"
#include "labelled_rows.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

constexpr std::size_t rows = 581'012, continuous = 10, areas = 4, soils = 40;

void write_covtype_csv(const fs::path& path) {
  sgmcmc::Rng rng(1, 0);
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (!out) throw std::runtime_error("cannot write " + path.string());
  std::string line;
  for (std::size_t i = 0; i < rows; ++i) {
    line = rng.uniform() < 0.5 ? "-1" : "1";
    for (std::size_t j = 0; j < continuous; ++j) fmt::format_to(std::back_inserter(line), ",{:.17g}", rng.uniform());
    const std::size_t area = rng.index(areas), soil = rng.index(soils);
    for (std::size_t j = 0; j < areas; ++j) line += j == area ? ",1" : ",0";
    for (std::size_t j = 0; j < soils; ++j) line += j == soil ? ",1" : ",0";
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), out);
  }
  std::fclose(out);
}

double seconds_of(const std::function<void()>& work, int repetitions = 3) {
  double best = 1e300;
  for (int r = 0; r < repetitions; ++r) {
    const auto started = std::chrono::steady_clock::now();
    work();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  return best;
}

double megabytes(const fs::path& path) { return static_cast<double>(fs::file_size(path)) / 1e6; }

}  // namespace

int main() {
  const fs::path folder = fs::temp_directory_path() / "sgmcmc-data-load-benchmark";
  fs::remove_all(folder);
  fs::create_directories(folder);
  const auto csv = folder / "covtype.csv", npy = folder / "covtype.npy", npy32 = folder / "covtype32.npy";
  write_covtype_csv(csv);
  const auto convert = [&](const fs::path& out, const char* options) {
    const std::string command = fmt::format("'{}' convert '{}' '{}' --replace {} 2>/dev/null", SGMCMC_CLI, csv.string(),
                                            out.string(), options);
    if (std::system(command.c_str()) != 0) {
      fmt::print(stderr, "failed: {}\n", command);
      std::exit(1);
    }
  };
  const double convert_seconds = seconds_of([&] { convert(npy, ""); }, 1);
  convert(npy32, "--dtype float32");
  std::size_t read_rows = 0;
  const auto read = [&](const fs::path& path) {
    return [&, path] {
      read_rows = regression::read_labelled_rows(path.string(), regression::FileFormat::automatic,
                                                 regression::LabelCoding::automatic, 0).y.size();
    };
  };
  const double csv_seconds = seconds_of(read(csv)), npy_seconds = seconds_of(read(npy)), npy32_seconds = seconds_of(read(npy32));
  const double copied_seconds = seconds_of([&] { read_rows = regression::read_npy_rows(npy.string(), 0).y.size(); });
  const double open_seconds = seconds_of([&] { read_rows = regression::npy::MappedArray(npy.string()).rows(); });
  const double half_seconds = seconds_of([&] {
    read_rows = regression::read_npy_rows(npy.string(), 0, {rows / 2, rows - rows / 2}).y.size();
  });
  // The whole start of a run through the CLI: read, split, design matrix, one iteration, one
  // held-out evaluation.
  const auto run_seconds = [&](const fs::path& data, const char* storage) {
    return seconds_of([&] {
      const std::string command = fmt::format(
          "'{}' run --preset covtype-baker2019 --set model.data='\"{}\"' --set model.storage='\"{}\"' --set run.iterations=1 "
          "--set run.thin=1 --set run.eval_every=1 --set run.chains=1 --replace --quiet --out '{}' 2>/dev/null",
          SGMCMC_CLI, data.string(), storage, (folder / "run").string());
      if (std::system(command.c_str()) != 0) {
        fmt::print(stderr, "failed: {}\n", command);
        std::exit(1);
      }
    });
  };
  // The peak resident memory of one such run, its own process (fork, exec, wait4).
  const auto run_megabytes = [&](const fs::path& data, const char* storage) {
    const std::vector<std::string> arguments{SGMCMC_CLI, "run", "--preset", "covtype-baker2019", "--set",
                                             fmt::format("model.data=\"{}\"", data.string()), "--set",
                                             fmt::format("model.storage=\"{}\"", storage), "--set", "run.iterations=1",
                                             "--set", "run.thin=1", "--set", "run.eval_every=1", "--set", "run.chains=1",
                                             "--replace", "--quiet", "--out", (folder / "run").string()};
    const pid_t child = fork();
    if (child == 0) {
      std::vector<char*> argv;
      for (const auto& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
      argv.push_back(nullptr);
      std::freopen("/dev/null", "w", stderr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    int status = 0;
    rusage usage{};
    if (wait4(child, &status, 0, &usage) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fmt::print(stderr, "failed: sgmcmc run on {}\n", data.string());
      std::exit(1);
    }
    return static_cast<double>(usage.ru_maxrss) / 1024.0;  // kB → MiB
  };
  const double rss_csv = run_megabytes(csv, "double"), rss_npy = run_megabytes(npy, "double");
  const double rss_csv_float = run_megabytes(csv, "float"), rss_npy32 = run_megabytes(npy32, "float");
  const double run_csv = run_seconds(csv, "double"), run_npy = run_seconds(npy, "double");
  const double run_csv_float = run_seconds(csv, "float"), run_npy32 = run_seconds(npy32, "float");
  fmt::print("simulated cover type, {} rows × 54 features + label\n", rows);
  fmt::print("{:<44} {:>9} {:>10}\n", "", "seconds", "MB");
  fmt::print("{:<44} {:>9.2f} {:>10.0f}\n", "sgmcmc convert CSV → .npy (float64)", convert_seconds, megabytes(npy));
  fmt::print("{:<44} {:>9.2f} {:>10.0f}\n", "read the CSV (parse)", csv_seconds, megabytes(csv));
  fmt::print("{:<44} {:>9.2f} {:>10.0f}\n", "read the .npy, float64 (map)", npy_seconds, megabytes(npy));
  fmt::print("{:<44} {:>9.2f} {:>10.0f}\n", "read the .npy, float32 (map)", npy32_seconds, megabytes(npy32));
  fmt::print("{:<44} {:>9.2f}\n", "  float64, features copied to double rows", copied_seconds);
  fmt::print("{:<44} {:>9.2f}\n", "  its second half's rows only, copied", half_seconds);
  fmt::print("{:<44} {:>9.6f}\n", "open the .npy alone (header checked, mapped)", open_seconds);
  fmt::print("CSV read / .npy read: {:.1f}× (float64), {:.1f}× (float32)\n", csv_seconds / npy_seconds,
             csv_seconds / npy32_seconds);
  fmt::print("sgmcmc run, 1 iteration (covtype-baker2019): CSV {:.2f} s, .npy {:.2f} s ({:.1f}×); float storage: CSV {:.2f} s, "
             "float32 .npy {:.2f} s ({:.1f}×)\n",
             run_csv, run_npy, run_csv / run_npy, run_csv_float, run_npy32, run_csv_float / run_npy32);
  fmt::print("its peak resident memory: CSV {:.0f} MiB, .npy {:.0f} MiB; float storage: CSV {:.0f} MiB, float32 .npy {:.0f} MiB\n",
             rss_csv, rss_npy, rss_csv_float, rss_npy32);
  fs::remove_all(folder);
  return 0;
}
