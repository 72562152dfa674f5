// A run's output folder: its files' names, and reading its chains back (see run_folder.hpp).
#include "run_folder.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

import sgmcmc;

namespace fs = std::filesystem;

namespace run_folder {

std::string chain_draws(std::size_t k) { return fmt::format("{}{}.csv", chain_prefix, k); }
std::string chain_gradients(std::size_t k) { return fmt::format("{}{}.csv", gradients_prefix, k); }
std::string chain_checkpoint(std::size_t k) { return fmt::format("{}{}.bin", checkpoint_prefix, k); }
std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "";
}

std::string chain_checkpoint_metrics(std::size_t k) { return fmt::format("{}{}-metrics.bin", checkpoint_prefix, k); }

}  // namespace run_folder

namespace {

/// "pid 1234 on host": what the holder wrote into the lock file, or that it has not yet.
std::string lock_holder(int descriptor) {
  char text[512] = {};
  const ssize_t count = pread(descriptor, text, sizeof text - 1, 0);
  std::string holder = count > 0 ? std::string(text, static_cast<std::size_t>(count)) : std::string();
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\r')) holder.pop_back();
  return holder.empty() ? "a process that has not yet written its pid" : holder;
}

std::string this_process() {
  const std::string host = run_folder::host_name();
  return fmt::format("pid {} on {}", getpid(), host.empty() ? "an unnamed host" : host);
}

/// Whether `descriptor` is still the file at `path`: a holder that released the lock removed the
/// file, and a lock taken on the removed file would not exclude a writer that made a new one.
bool still_linked(int descriptor, const fs::path& path) {
  struct stat held {}, named {};
  return fstat(descriptor, &held) == 0 && stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
         held.st_ino == named.st_ino;
}

}  // namespace

RunFolderLock::RunFolderLock(const fs::path& folder) : path_(folder / run_folder::lock) {
  while (true) {
    descriptor_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (descriptor_ < 0)
      throw sgmcmc::Error(fmt::format("'{}': cannot create its lock file {} ({})", folder.string(), run_folder::lock,
                                      std::strerror(errno)));
    if (flock(descriptor_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const std::string holder = error == EWOULDBLOCK ? lock_holder(descriptor_) : "";
      ::close(descriptor_);
      if (error == EWOULDBLOCK)
        throw sgmcmc::Error(fmt::format("'{}' is in use by another sgmcmc process ({}), which holds its lock file {}; "
                                        "wait until it ends, or choose another folder (nothing was changed)",
                                        folder.string(), holder, run_folder::lock));
      throw sgmcmc::Error(fmt::format("'{}': cannot lock {} ({})", folder.string(), run_folder::lock, std::strerror(error)));
    }
    if (still_linked(descriptor_, path_)) break;
    ::close(descriptor_);  // locked a file its holder removed as it released it: lock the new one
  }
  const std::string holder = this_process() + "\n";
  const bool noted = ftruncate(descriptor_, 0) == 0 && pwrite(descriptor_, holder.data(), holder.size(), 0) > 0;
  (void)noted;  // the lock holds without the note: a refused writer then says the pid is not yet written
}

RunFolderLock::~RunFolderLock() {
  // Removed while still held, so that no writer locks the file being removed (see still_linked).
  ::unlink(path_.c_str());
  ::close(descriptor_);
}

void clear_folder_but_lock(const fs::path& folder) {
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().filename() != run_folder::lock) fs::remove_all(entry.path());
}

nlohmann::json manifest_if_any(const fs::path& folder) {
  nlohmann::json manifest;
  if (std::ifstream in(folder / run_folder::manifest); in) manifest = nlohmann::json::parse(in, nullptr, false);
  return manifest;
}

bool interrupted_run(const nlohmann::json& manifest) {
  return manifest.is_object() && manifest.value("status", "") == "interrupted";
}

std::map<int, fs::path> numbered_files(const fs::path& folder, const std::string& prefix, const std::string& command) {
  std::map<int, fs::path> paths;
  std::error_code error;
  const std::string pattern = prefix + "%d.csv";
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    int k = 0;
    if (std::sscanf(name.c_str(), pattern.c_str(), &k) == 1 && name == fmt::format("{}{}.csv", prefix, k)) paths[k] = entry.path();
  }
  if (error) throw sgmcmc::Error(fmt::format("{}: '{}': {}", command, folder.string(), error.message()));
  return paths;
}

namespace {

/// With a manifest, the folder's chain files are exactly chain-1 … chain-K of its run.chains = K: a
/// file left from an earlier run in the folder, or one lost, would change every statistic.
void check_chains_of_manifest(const fs::path& folder, const std::map<int, fs::path>& paths, const std::string& command) {
  const auto manifest = manifest_if_any(folder);
  const fs::path manifest_path = folder / run_folder::manifest;
  if (!manifest.is_object() && fs::exists(manifest_path))  // a damaged record must not pass for a folder without one
    throw sgmcmc::Error(fmt::format("{}: {} is not a run's manifest (it does not parse as a JSON object); remove it to "
                                    "read the chain files alone",
                                    command, manifest_path.string()));
  if (!manifest.is_object() || !manifest.contains("config")) return;
  const auto chains = manifest["config"].value("run", nlohmann::json::object()).value("chains", 0);
  for (int k = 1; k <= chains; ++k)
    if (!paths.contains(k))
      throw sgmcmc::Error(fmt::format("{}: {} is missing ({} lists {} chain(s))", command,
                                      (folder / run_folder::chain_draws(k)).string(), manifest_path.string(), chains));
  for (const auto& [k, path] : paths)
    if (k > chains)
      throw sgmcmc::Error(fmt::format("{}: {} is not one of the {} chain(s) that {} lists (left from another run?)",
                                      command, path.string(), chains, manifest_path.string()));
}

}  // namespace

Chains read_chains(const fs::path& folder, const std::string& command, std::size_t minimum_draws) {
  const auto paths = numbered_files(folder, run_folder::chain_prefix, command);
  if (paths.empty()) throw sgmcmc::Error(fmt::format("{}: '{}' has no chain-<k>.csv files", command, folder.string()));
  check_chains_of_manifest(folder, paths, command);
  Chains chains;
  for (const auto& [k, path] : paths) {
    auto csv = sgmcmc::read_stan_csv(path);
    if (chains.files.empty()) chains.columns = csv.columns;
    if (csv.columns != chains.columns)
      throw sgmcmc::Error(fmt::format("{}: {} has other columns than {}; chains of different runs or models cannot be "
                                      "summarised together",
                                      command, path.string(), paths.begin()->second.string()));
    chains.files.push_back(std::move(csv));
    chains.paths.push_back(path);
  }
  chains.draws = chains.files.front().rows.size();
  for (const auto& file : chains.files) chains.draws = std::min(chains.draws, file.rows.size());
  if (chains.draws < minimum_draws)
    throw sgmcmc::Error(fmt::format("{}: '{}': {} draw(s) in the shortest chain; at least {} are needed", command,
                                    folder.string(), chains.draws, minimum_draws));
  return chains;
}

sgmcmc::ChainDraws column(const Chains& chains, std::size_t index) {
  sgmcmc::ChainDraws draws;
  for (const auto& file : chains.files) {
    std::vector<double> values;
    for (std::size_t row = 0; row < chains.draws; ++row) values.push_back(file.rows[row][index]);
    draws.push_back(std::move(values));
  }
  return draws;
}
