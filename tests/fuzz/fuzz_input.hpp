// What the fuzz targets share. Each target hands libFuzzer's bytes to one reader the way a user's
// file reaches it, and accepts two outcomes only: the reader returns something that satisfies
// its documented guarantees (checked by the target), or it refuses with an sgmcmc::Error whose
// message names the file. Anything else — a crash, a sanitizer report, another exception type
// (std::bad_alloc, std::out_of_range, ...), a broken guarantee — aborts, and libFuzzer keeps the
// input that did it.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

import sgmcmc;

namespace fuzz {

/// Stops the run with `what`: libFuzzer reports the abort and writes the input to a crash file.
[[noreturn]] inline void broken(std::string_view what) {
  std::fprintf(stderr, "fuzz: broken guarantee: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

inline void require(bool holds, std::string_view what) {
  if (!holds) broken(what);
}

/// Readers plan their memory with SGMCMC_MEMORY_LIMIT_MB (sgmcmc::memory_budget_bytes): 256 MB
/// here, well below libFuzzer's 2 GB (-rss_limit_mb), so a size beyond the budget must be refused
/// with an Error and one within it may be allocated. Not 1 GB: a one-line LIBSVM file with index
/// 1.3·10⁸ then made a 1 GB matrix, which under ASan took 17 s and tripped the 10 s timeout
/// (legitimately allowed, and no finding, but it stopped the run).
inline const bool memory_limit_set = (setenv("SGMCMC_MEMORY_LIMIT_MB", "256", 0), true);

/// The bytes as one scratch file of this process, rewritten for every input: the readers take
/// paths, as users give them (plain or gzip; the gzip seeds of the corpora reach zlib's path).
/// In /dev/shm when there is one, so tens of thousands of inputs a second touch no disk.
inline std::string as_file(const std::uint8_t* data, std::size_t size, std::string_view name = "input") {
  static const std::filesystem::path folder =
      std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm") : std::filesystem::temp_directory_path();
  const auto path = folder / ("sgmcmc-fuzz-" + std::to_string(getpid()) + "-" + std::string(name));
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                 static_cast<std::streamsize>(size));
  static const bool cleanup_registered = [] {
    std::atexit([] {
      std::error_code ignored;
      for (const auto& entry : std::filesystem::directory_iterator(folder, ignored))
        if (entry.path().filename().string().starts_with("sgmcmc-fuzz-" + std::to_string(getpid()) + "-"))
          std::filesystem::remove(entry.path(), ignored);
    });
    return true;
  }();
  (void)cleanup_registered;
  return path.string();
}

/// Runs `read`; a refusal must be an sgmcmc::Error whose message names `source` (the file, so
/// that a user with many files knows which one is wrong). Other exceptions escape and abort.
template <class Read>
void read_or_refuse(const std::string& source, Read&& read) {
  try {
    read();
  } catch (const sgmcmc::Error& error) {
    require(std::string_view(error.what()).find(source) != std::string_view::npos,
            std::string("the refusal does not name the file: ") + error.what());
  }
}

/// A configuration that was accepted survives the trip a checkpointed run makes: format_config
/// writes it as config.toml and `--resume` parses that back, to the same values and bits.
inline void require_round_trip(const sgmcmc::RunConfig& config) {
  const std::string written = sgmcmc::format_config(config);
  try {
    const std::string rewritten = sgmcmc::format_config(sgmcmc::parse_config(written, "config.toml"));
    require(rewritten == written, "format_config's output reads back to another configuration:\n" + written + "\nthen\n" + rewritten);
  } catch (const sgmcmc::Error& error) {
    broken(std::string("format_config's output is refused: ") + error.what() + "\n" + written);
  }
}

}  // namespace fuzz
