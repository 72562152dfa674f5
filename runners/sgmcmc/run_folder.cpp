// A run's output folder: its files' names, and reading its chains back (see run_folder.hpp).
#include "run_folder.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

import sgmcmc;

namespace fs = std::filesystem;

namespace run_folder {

std::string chain_draws(std::size_t k) { return fmt::format("{}{}.csv", chain_prefix, k); }
std::string chain_gradients(std::size_t k) { return fmt::format("{}{}.csv", gradients_prefix, k); }
std::string chain_checkpoint(std::size_t k) { return fmt::format("{}{}.bin", checkpoint_prefix, k); }

}  // namespace run_folder

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

Chains read_chains(const fs::path& folder, const std::string& command, std::size_t minimum_draws) {
  const auto paths = numbered_files(folder, run_folder::chain_prefix, command);
  if (paths.empty()) throw sgmcmc::Error(fmt::format("{}: '{}' has no chain-<k>.csv files", command, folder.string()));
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
