// `sgmcmc summary DIR` (also printed at the end of `run`): per parameter mean, sd, quantiles,
// bulk and tail ESS, R-hat and the MCSE of the mean across the folder's chains; per chain the
// acceptance rate and status; warnings where Stan would give them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

struct Chains {
  std::vector<std::string> columns;
  std::vector<sgmcmc::StanCsv> files;
  std::size_t draws = 0;  // per chain, the shortest chain's count
};

Chains read_chains(const fs::path& folder) {
  std::map<int, fs::path> paths;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    int k = 0;
    if (std::sscanf(name.c_str(), "chain-%d.csv", &k) == 1 && name == fmt::format("chain-{}.csv", k)) paths[k] = entry.path();
  }
  if (error) throw sgmcmc::Error(fmt::format("summary: '{}': {}", folder.string(), error.message()));
  if (paths.empty()) throw sgmcmc::Error(fmt::format("summary: '{}' has no chain-<k>.csv files", folder.string()));
  Chains chains;
  for (const auto& [k, path] : paths) {
    auto csv = sgmcmc::read_stan_csv(path);
    if (chains.files.empty()) chains.columns = csv.columns;
    if (csv.columns != chains.columns)
      throw sgmcmc::Error(fmt::format("summary: {} has other columns than {}; chains of different runs or models cannot be "
                                      "summarised together",
                                      path.string(), paths.begin()->second.string()));
    chains.files.push_back(std::move(csv));
  }
  chains.draws = chains.files.front().rows.size();
  for (const auto& file : chains.files) chains.draws = std::min(chains.draws, file.rows.size());
  if (chains.draws < 4)
    throw sgmcmc::Error(fmt::format("summary: '{}': {} draw(s) in the shortest chain; at least 4 are needed", folder.string(),
                                    chains.draws));
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

std::string number(double x) { return std::isnan(x) ? "—" : fmt::format("{:.4g}", x); }

}  // namespace

int summary_command(const fs::path& folder, const std::vector<std::string>& wanted, std::size_t max_parameters) {
  const Chains chains = read_chains(folder);
  std::vector<std::size_t> shown;
  for (std::size_t index = 0; index < chains.columns.size(); ++index) {
    const auto& name = chains.columns[index];
    const bool sampler = name.ends_with("__");
    if (wanted.empty() ? !sampler : std::find(wanted.begin(), wanted.end(), name) != wanted.end()) shown.push_back(index);
  }
  for (const auto& name : wanted)
    if (std::find(chains.columns.begin(), chains.columns.end(), name) == chains.columns.end())
      throw sgmcmc::Error(fmt::format("summary: no column '{}' in {}", name, folder.string()));
  const std::size_t total = shown.size();
  if (wanted.empty() && shown.size() > max_parameters) shown.resize(max_parameters);

  fmt::print("{} chains × {} draws{}\n", chains.files.size(), chains.draws,
             total > shown.size() ? fmt::format(" (showing {} of {} parameters; choose with --parameters)", shown.size(), total) : "");
  fmt::print("{:<16} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>7} {:>10}\n", "parameter", "mean", "sd", "5%", "50%", "95%",
             "ess_bulk", "ess_tail", "r_hat", "mcse_mean");
  std::vector<std::string> warnings;
  const double low_ess = 100.0 * static_cast<double>(chains.files.size());
  for (std::size_t index : shown) {
    const auto draws = column(chains, index);
    const auto& name = chains.columns[index];
    std::vector<double> all;
    for (const auto& chain : draws) all.insert(all.end(), chain.begin(), chain.end());
    double mean = 0.0, squares = 0.0;
    for (double x : all) mean += x / static_cast<double>(all.size());
    for (double x : all) squares += (x - mean) * (x - mean);
    const double sd = std::sqrt(squares / static_cast<double>(all.size() - 1));
    const bool undefined = sgmcmc::diagnostics_undefined(draws);
    const double bulk = sgmcmc::ess_bulk(draws), tail = sgmcmc::ess_tail(draws), r_hat = sgmcmc::rhat(draws);
    fmt::print("{:<16} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>7} {:>10}\n", name, number(mean), number(sd),
               number(sgmcmc::quantile(draws, 0.05)), number(sgmcmc::quantile(draws, 0.5)), number(sgmcmc::quantile(draws, 0.95)),
               number(bulk), number(tail), number(r_hat), number(undefined ? std::nan("") : sgmcmc::mcse_mean(draws)));
    if (undefined)
      warnings.push_back(fmt::format("{}: the draws are constant or not finite, so ESS, R-hat and MCSE are undefined", name));
    else if (r_hat > 1.01)
      warnings.push_back(fmt::format("{}: R-hat {:.3f} > 1.01: the chains have not mixed", name, r_hat));
    if (!undefined && std::min(bulk, tail) < low_ess)
      warnings.push_back(fmt::format("{}: {} ESS {:.0f} < {:.0f} (100 per chain): estimates of it are unreliable", name,
                                     bulk < tail ? "bulk" : "tail", std::min(bulk, tail), low_ess));
  }

  const auto accept = std::find(chains.columns.begin(), chains.columns.end(), "accept_stat__");
  nlohmann::json manifest;
  if (std::ifstream in(folder / "manifest.json"); in) manifest = nlohmann::json::parse(in, nullptr, false);
  for (std::size_t k = 0; k < chains.files.size(); ++k) {
    double acceptance = 0.0;
    for (const auto& row : chains.files[k].rows) acceptance += row[static_cast<std::size_t>(accept - chains.columns.begin())];
    std::string status = "status unknown (no manifest.json: an interrupted run?)";
    if (manifest.is_object() && manifest.contains("chains") && k < manifest["chains"].size())
      status = manifest["chains"][k].value("status", "unknown");
    fmt::print("chain {}: {} draws, mean accept_stat__ {:.3f}, {}\n", k + 1, chains.files[k].rows.size(),
               accept == chains.columns.end() ? std::nan("") : acceptance / static_cast<double>(chains.files[k].rows.size()),
               status);
    if (status == "diverged") warnings.push_back(fmt::format("chain {} diverged (see manifest.json)", k + 1));
  }
  for (const auto& warning : warnings) fmt::print("warning: {}\n", warning);
  return 0;
}
