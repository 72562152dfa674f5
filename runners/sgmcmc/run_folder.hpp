// Reading a run's output folder back: its chain-<k>.csv files (and gradients-<k>.csv files),
// for `summary` and `zv`.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

import sgmcmc;

struct Chains {
  std::vector<std::string> columns;
  std::vector<sgmcmc::StanCsv> files;
  std::vector<std::filesystem::path> paths;
  std::size_t draws = 0;  // per chain, the shortest chain's count
};

/// Files `<prefix><k>.csv` in `folder`, by k.
std::map<int, std::filesystem::path> numbered_files(const std::filesystem::path& folder, const std::string& prefix,
                                                    const std::string& command);

/// Every chain-<k>.csv in `folder`; all must have the same columns and at least `minimum_draws`
/// rows. Errors start with `command` ("summary", "zv").
Chains read_chains(const std::filesystem::path& folder, const std::string& command, std::size_t minimum_draws = 4);

/// One column's draws, chains × draws (each chain cut to the shortest's length).
sgmcmc::ChainDraws column(const Chains& chains, std::size_t index);
