// Whole files in and out, as every command of the runner reads and writes them.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

/// The most read_file reads unless told otherwise: configurations, sweep files and records are
/// kilobytes; 64 MiB is far beyond any, and a bound, so that a FIFO fed from /dev/zero is an error
/// naming the file rather than all memory.
inline constexpr std::uint64_t max_small_file_bytes = std::uint64_t{64} << 20;

/// The file's bytes; an sgmcmc::Error naming the file and `what` it should be when it cannot be
/// opened, is a folder or a device (sgmcmc::require_readable_file), or holds more than `max_bytes`.
std::string read_file(const std::filesystem::path& path, std::string_view what,
                      std::uint64_t max_bytes = max_small_file_bytes);

/// Throws an sgmcmc::Error naming `out` if it exists and is not a folder (a file, /dev/null): an
/// output folder's checks (is it empty?) would otherwise fail with a misleading message or an
/// internal error.
void require_folder_or_absent(const std::filesystem::path& out);

/// Whole or absent: written to a temporary name, then renamed, so a reader never sees half a
/// file and a folder without it is one whose writer was interrupted.
void write_atomically(const std::filesystem::path& path, const std::string& text);

/// The comma-separated fields of one line of the CSV files the runner writes itself (metrics.csv,
/// results.csv: no quoted commas), a trailing empty field included.
std::vector<std::string> split_csv_line(const std::string& line);
