// `sgmcmc summary DIR` (also printed at the end of `run`): per parameter mean, sd, quantiles,
// bulk and tail ESS, R-hat and the MCSE of the mean across the folder's chains; per chain the
// acceptance rate and status; warnings where Stan would give them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "files.hpp"
#include "run_folder.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

std::string number(double x) { return std::isnan(x) ? "—" : fmt::format("{:.4g}", x); }

/// One table row: mean, sd, quantiles, ESS, R-hat and the MCSE of the mean over all chains.
void print_row(const std::string& name, std::size_t width, const std::vector<std::vector<double>>& draws, double bulk,
               double tail, double r_hat, bool undefined) {
  std::vector<double> all;
  for (const auto& chain : draws) all.insert(all.end(), chain.begin(), chain.end());
  double mean = 0.0, squares = 0.0;
  for (double x : all) mean += x / static_cast<double>(all.size());
  for (double x : all) squares += (x - mean) * (x - mean);
  const double sd = std::sqrt(squares / static_cast<double>(all.size() - 1));
  fmt::print("{:<{}} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>7} {:>10}\n", name, width, number(mean), number(sd),
             number(sgmcmc::quantile(draws, 0.05)), number(sgmcmc::quantile(draws, 0.5)), number(sgmcmc::quantile(draws, 0.95)),
             number(bulk), number(tail), number(r_hat), number(undefined ? std::nan("") : sgmcmc::mcse_mean(draws)));
}

/// One kind of warning (R-hat too high, ESS too low, ...) and the parameters it concerns, each
/// with the value that triggered it.
struct WarningKind {
  std::string what;            // "R-hat > 1.01: the chains have not mixed"
  std::string value_format;    // how one parameter's value prints: "{:.3f}"; empty: no value
  bool worst_is_largest;       // R-hat: the largest is the worst; ESS: the smallest
  std::vector<std::pair<std::string, double>> parameters;
};

std::string shown_value(const WarningKind& kind, double value, const std::string& around) {
  if (kind.value_format.empty()) return "";
  return fmt::format(fmt::runtime(around), fmt::format(fmt::runtime(kind.value_format), value));
}

/// A few parameters are named one per line, as Stan does; more (a 55-coefficient regression, a
/// topic model's 10⁵ coordinates) make one line with the count and the worst three, so the
/// warnings stay readable whatever the dimension.
void print_warnings(std::vector<WarningKind>& kinds, std::size_t parameter_count) {
  constexpr std::size_t named_one_per_line = 3, worst_shown = 3;
  for (auto& kind : kinds) {
    auto& found = kind.parameters;
    if (found.empty()) continue;
    if (found.size() <= named_one_per_line) {
      for (const auto& [name, value] : found) fmt::print("warning: {}: {}{}\n", name, kind.what, shown_value(kind, value, " ({})"));
      continue;
    }
    std::sort(found.begin(), found.end(), [&kind](const auto& a, const auto& b) {  // ties by name: a fixed order
      if (a.second != b.second) return kind.worst_is_largest ? a.second > b.second : a.second < b.second;
      return a.first < b.first;
    });
    std::vector<std::string> worst;
    for (std::size_t i = 0; i < std::min(worst_shown, found.size()); ++i)
      worst.push_back(found[i].first + shown_value(kind, found[i].second, " {}"));
    fmt::print("warning: {} for {} of {} parameters (worst: {})\n", kind.what, found.size(), parameter_count,
               fmt::join(worst, ", "));
  }
}

/// The temperature columns of metrics.csv (run.temperatures), if any: per column, chain by chain,
/// the rows after the warmup (run.warmup of the manifest; every row without one). Fields are read
/// with strtod, so a model metric written as nan in another column does not stop it.
void metric_temperatures(const fs::path& folder, const nlohmann::json& manifest) {
  std::ifstream in(folder / run_folder::metrics);
  std::string line;
  if (!in || !std::getline(in, line)) return;
  const auto header = split_csv_line(line);
  const auto index_of = [&header](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  struct Column {
    std::string name, meaning;
    std::size_t index;
    sgmcmc::ChainDraws chains;
  };
  std::vector<Column> columns;
  for (const auto& [name, meaning] :
       {std::pair<std::string, std::string>{sgmcmc::kinetic_temperature_column, "<pᵀM⁻¹p>/d"},
        {sgmcmc::configurational_temperature_column, "<θ·∇U>/d, full-data gradient"}})
    if (index_of(name) < header.size()) columns.push_back({name, meaning, index_of(name), {}});
  if (columns.empty()) return;
  const std::size_t chain_index = index_of("chain"), iteration_index = index_of("iteration");
  std::uint64_t warmup = 0;
  if (manifest.is_object() && manifest.contains("config") && manifest["config"].contains("run"))
    warmup = manifest["config"]["run"].value("warmup", sgmcmc::ChainSchedule{}.warmup);
  while (std::getline(in, line)) {
    const auto fields = split_csv_line(line);
    if (fields.size() != header.size()) continue;
    const auto chain = std::strtoull(fields[chain_index].c_str(), nullptr, 10);
    if (chain == 0 || std::strtoull(fields[iteration_index].c_str(), nullptr, 10) <= warmup) continue;
    for (auto& column : columns) {
      if (column.chains.size() < chain) column.chains.resize(chain);
      column.chains[chain - 1].push_back(std::strtod(fields[column.index].c_str(), nullptr));
    }
  }
  for (auto& column : columns) {
    // ESS and MCSE need chains of one length: a chain that diverged early shortens them all.
    std::size_t rows = column.chains.empty() ? 0 : column.chains.front().size();
    for (const auto& chain : column.chains) rows = std::min(rows, chain.size());
    for (auto& chain : column.chains) chain.resize(rows);
    if (rows < 4) {
      fmt::print("{}: {} rows after the warmup in metrics.csv, too few for an MCSE\n", column.name, rows);
      continue;
    }
    double mean = 0.0;
    for (const auto& chain : column.chains)
      for (double x : chain) mean += x / static_cast<double>(rows * column.chains.size());
    const double mcse = sgmcmc::diagnostics_undefined(column.chains) ? std::nan("") : sgmcmc::mcse_mean(column.chains);
    fmt::print("{} {} = {} (mcse {}; T for an exact sampler at temperature T; {} chains × {} rows of metrics.csv)\n",
               column.name, column.meaning, number(mean), number(mcse), column.chains.size(), rows);
  }
}

}  // namespace

/// Above this many parameters (a network's weights, pmf's factors) `summary` leads with the
/// model's quantities: R-hat and ESS of single weights mean little where permutations and sign
/// flips of hidden units leave the posterior unchanged, and computing them for every one of
/// thousands costs seconds after every run.
constexpr std::size_t many_parameters = 1000;

int summary_command(const fs::path& folder, const std::vector<std::string>& wanted, std::size_t max_parameters) {
  const Chains chains = read_chains(folder, "summary");
  const nlohmann::json manifest = manifest_if_any(folder);
  const bool has_model = manifest.is_object() && manifest.contains("model") && manifest["model"].is_object();
  std::vector<std::string> quantities;
  if (has_model && manifest["model"].contains("quantities"))
    quantities = manifest["model"]["quantities"].get<std::vector<std::string>>();
  const bool is_quantity_led = wanted.empty() && has_model && manifest["model"].value("dimension", std::size_t{0}) > many_parameters;
  std::vector<std::size_t> shown, quantity_columns;
  for (std::size_t index = 0; index < chains.columns.size(); ++index) {
    const auto& name = chains.columns[index];
    const bool sampler = name.ends_with("__");
    if (std::find(quantities.begin(), quantities.end(), name) != quantities.end()) quantity_columns.push_back(index);
    if (wanted.empty() ? !sampler : std::find(wanted.begin(), wanted.end(), name) != wanted.end()) shown.push_back(index);
  }
  for (const auto& name : wanted)
    if (std::find(chains.columns.begin(), chains.columns.end(), name) == chains.columns.end())
      throw sgmcmc::Error(fmt::format("summary: no column '{}' in {}", name, folder.string()));
  if (is_quantity_led && !quantity_columns.empty()) shown = quantity_columns;
  // Warnings cover every parameter, shown or not; with many, only what is shown.
  const std::vector<std::size_t> checked = shown;
  if (wanted.empty() && shown.size() > max_parameters) shown.resize(max_parameters);
  const std::size_t total = is_quantity_led ? shown.size() : checked.size();
  if (is_quantity_led)
    fmt::print("{} parameters: the model's {} lead; R-hat and ESS of single weights are shown with --parameters\n",
               manifest["model"]["dimension"].get<std::size_t>(),
               quantity_columns.empty() ? "first parameters (no quantities were recorded: output.quantities = true)"
                                        : "quantities");

  fmt::print("{} chains × {} draws{}\n", chains.files.size(), chains.draws,
             total > shown.size() ? fmt::format(" (showing {} of {} parameters; choose with --parameters)", shown.size(), total) : "");
  std::size_t width = 16;  // the name column fits the longest shown name (generated quantities can be long)
  for (std::size_t index : shown) width = std::max(width, chains.columns[index].size());
  fmt::print("{:<{}} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>7} {:>10}\n", "parameter", width, "mean", "sd", "5%", "50%", "95%",
             "ess_bulk", "ess_tail", "r_hat", "mcse_mean");
  const double low_ess = 100.0 * static_cast<double>(chains.files.size());
  std::vector<WarningKind> kinds = {
      {"the draws are constant or not finite, so ESS, R-hat and MCSE are undefined", "", true, {}},
      {"R-hat > 1.01: the chains have not mixed", "{:.3f}", true, {}},
      {fmt::format("bulk or tail ESS < {:.0f} (100 per chain): estimates are unreliable", low_ess), "{:.0f}", false, {}}};
  auto& undefined_draws = kinds[0].parameters;
  auto& high_r_hat = kinds[1].parameters;
  auto& low_ess_found = kinds[2].parameters;
  for (std::size_t index : is_quantity_led ? shown : checked) {
    const auto draws = column(chains, index);
    const auto& name = chains.columns[index];
    const bool undefined = sgmcmc::diagnostics_undefined(draws);
    const double bulk = sgmcmc::ess_bulk(draws), tail = sgmcmc::ess_tail(draws), r_hat = sgmcmc::rhat(draws);
    if (std::find(shown.begin(), shown.end(), index) != shown.end()) print_row(name, width, draws, bulk, tail, r_hat, undefined);
    if (undefined)
      undefined_draws.emplace_back(name, std::nan(""));
    else if (r_hat > 1.01)
      high_r_hat.emplace_back(name, r_hat);
    if (!undefined && std::min(bulk, tail) < low_ess) low_ess_found.emplace_back(name, std::min(bulk, tail));
  }

  const auto accept = std::find(chains.columns.begin(), chains.columns.end(), "accept_stat__");
  std::vector<std::size_t> diverged;
  for (std::size_t k = 0; k < chains.files.size(); ++k) {
    double acceptance = 0.0;
    for (const auto& row : chains.files[k].rows) acceptance += row[static_cast<std::size_t>(accept - chains.columns.begin())];
    std::string status = "status unknown (no manifest.json: an interrupted run?)";
    if (manifest.is_object() && manifest.contains("chains") && k < manifest["chains"].size())
      status = manifest["chains"][k].value("status", "unknown");
    fmt::print("chain {}: {} draws, mean accept_stat__ {:.3f}, {}\n", k + 1, chains.files[k].rows.size(),
               accept == chains.columns.end() ? std::nan("") : acceptance / static_cast<double>(chains.files[k].rows.size()),
               status);
    if (status == "diverged") diverged.push_back(k + 1);
  }
  gradient_diagnostics(folder);
  metric_temperatures(folder, manifest);
  print_warnings(kinds, total);
  for (std::size_t k : diverged) fmt::print("warning: chain {} diverged (see manifest.json)\n", k);
  return 0;
}

Command add_summary_command(CLI::App& app) {
  struct Options {
    fs::path folder;
    std::vector<std::string> parameters;
    std::size_t max_parameters = 20;
  };
  const auto summary = std::make_shared<Options>();
  auto* command = app.add_subcommand("summary", "ESS, R-hat, MCSE and quantiles of a run's chains");
  command->footer("Example: sgmcmc summary runs/demo --parameters beta.1,beta.2");
  command->add_option("folder", summary->folder, "a run's output folder")->required();
  command->add_option("--parameters", summary->parameters, "the columns to summarise")->delimiter(',');
  command->add_option("--max-parameters", summary->max_parameters, "without --parameters, the first this many (20)");
  return {command, [summary] { return summary_command(summary->folder, summary->parameters, summary->max_parameters); }};
}
