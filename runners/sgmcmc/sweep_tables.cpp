// A sweep's two tables (see sweep_tables.hpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "files.hpp"
#include "run_folder.hpp"
#include "sweep_tables.hpp"

import sgmcmc;

namespace fs = std::filesystem;
using nlohmann::json;

std::string number_text(double value) {
  std::string text;
  sgmcmc::append_number(text, value);
  return text;
}

namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

/// A cell's metrics.csv: its header and rows, fields as written (so the table repeats them exactly).
struct MetricsTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

MetricsTable read_metrics(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sgmcmc::Error(fmt::format("{}: cannot open a finished cell's metrics", path.string()));
  MetricsTable table;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto fields = split_csv_line(line);
    if (table.header.empty()) {
      table.header = std::move(fields);
    } else if (fields.size() != table.header.size()) {
      throw sgmcmc::Error(fmt::format("{}:{}: {} fields, the header has {}", path.string(), number, fields.size(), table.header.size()));
    } else {
      table.rows.push_back(std::move(fields));
    }
  }
  return table;
}

constexpr std::array<const char*, 5> run_columns = {"chain", "iteration", "seconds", "cpu_seconds", "item_gradients"};

/// A finished cell's metrics.csv against its manifest: each chain's rows are one per `eval_every`
/// iterations it ran, and every field of the run columns is a number. A cut or damaged file (a
/// full disk, a copy stopped mid-way) would otherwise enter results.csv as if it were the run's.
void check_metrics(const MetricsTable& table, const json& manifest, const fs::path& path) {
  const auto damaged = [&](const std::string& what) {
    return sgmcmc::Error(fmt::format("{}: {}; the cell's files are damaged: delete its folder and run the sweep again "
                                     "with --resume",
                                     path.string(), what));
  };
  const auto chain_column = std::find(table.header.begin(), table.header.end(), "chain") - table.header.begin();
  const auto iteration_column = std::find(table.header.begin(), table.header.end(), "iteration") - table.header.begin();
  if (chain_column == std::ssize(table.header) || iteration_column == std::ssize(table.header))
    throw damaged("no chain or iteration column");
  const std::uint64_t every = manifest["config"]["run"].value("eval_every", sgmcmc::ChainSchedule{}.eval_every);
  std::vector<std::uint64_t> rows(manifest["chains"].size(), 0);
  for (const auto& row : table.rows) {
    for (std::size_t k = 0; k < row.size(); ++k) {
      char* end = nullptr;
      std::strtod(row[k].c_str(), &end);
      if (row[k].empty() || *end != '\0') throw damaged(fmt::format("{} = '{}' is not a number", table.header[k], row[k]));
    }
    const auto chain = std::strtoull(row[chain_column].c_str(), nullptr, 10);
    if (chain < 1 || chain > rows.size()) throw damaged(fmt::format("chain {} is not one of the run's", row[chain_column]));
    ++rows[chain - 1];
  }
  const bool has_metrics = table.header.size() > run_columns.size();  // a chain without metrics writes no row
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const std::uint64_t expected = has_metrics ? manifest["chains"][k].value("iterations", std::uint64_t{0}) / every : 0;
    if (rows[k] != expected)
      throw damaged(fmt::format("{} row(s) of chain {}, but the manifest's {} iterations at eval_every = {} make {}", rows[k],
                                k + 1, manifest["chains"][k].value("iterations", std::uint64_t{0}), every, expected));
  }
}

json read_manifest(const fs::path& path) {
  std::ifstream in(path);
  try {
    return json::parse(in);
  } catch (const json::exception& error) {
    throw sgmcmc::Error(fmt::format("{}: {}", path.string(), error.what()));
  }
}


/// The cell column and the axis values that start every row of both tables.
std::string cell_prefix(const Sweep& sweep, const Cell& cell) {
  std::string line = csv_field(cell.name);
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) line += "," + csv_field(format_value(sweep.axes[a].values[cell.choice[a]].value));
  return line;
}

std::string axes_header(const Sweep& sweep) {
  std::string line = "cell";
  for (const auto& axis : sweep.axes) line += "," + csv_field(axis.key);
  return line;
}

/// Metric names over all cells in order of first appearance (cells may run different models).
std::vector<std::string> metric_union(const std::vector<MetricsTable>& tables) {
  std::vector<std::string> names;
  for (const auto& table : tables)
    for (std::size_t c = run_columns.size(); c < table.header.size(); ++c)
      if (std::find(names.begin(), names.end(), table.header[c]) == names.end()) names.push_back(table.header[c]);
  return names;
}

std::string field_or_empty(const MetricsTable& table, const std::vector<std::string>& row, const std::string& column) {
  const auto it = std::find(table.header.begin(), table.header.end(), column);
  return it == table.header.end() ? "" : row[static_cast<std::size_t>(it - table.header.begin())];
}

std::string results_csv(const Sweep& sweep, const std::vector<Cell>& cells, const std::vector<MetricsTable>& tables,
                        const std::vector<std::string>& metrics) {
  std::string text = axes_header(sweep);
  for (const char* column : run_columns) text += fmt::format(",{}", column);
  for (const auto& metric : metrics) text += "," + csv_field(metric);
  text += "\n";
  for (std::size_t c = 0; c < cells.size(); ++c) {
    for (const auto& row : tables[c].rows) {
      text += cell_prefix(sweep, cells[c]);
      for (const char* column : run_columns) text += "," + field_or_empty(tables[c], row, column);
      for (const auto& metric : metrics) text += "," + field_or_empty(tables[c], row, metric);
      text += "\n";
    }
  }
  return text;
}

/// Per metric, the mean over chains of each chain's last row: the cell's final value.
std::vector<std::string> final_metrics(const MetricsTable& table, const std::vector<std::string>& metrics) {
  std::map<std::string, const std::vector<std::string>*> last_by_chain;
  for (const auto& row : table.rows) last_by_chain[row[0]] = &row;
  std::vector<std::string> values;
  for (const auto& metric : metrics) {
    const auto it = std::find(table.header.begin(), table.header.end(), metric);
    if (it == table.header.end() || last_by_chain.empty()) {
      values.emplace_back();
      continue;
    }
    double sum = 0.0;
    for (const auto& [chain, row] : last_by_chain) sum += std::stod((*row)[static_cast<std::size_t>(it - table.header.begin())]);
    values.push_back(number_text(sum / static_cast<double>(last_by_chain.size())));
  }
  return values;
}

/// Per cell, the most cells (itself included) that were running at one moment of its run on its
/// machine (from the manifests' start and end times and host): cells that shared cores and memory
/// bandwidth have wall seconds that cannot be compared, while their CPU seconds can. 0 for a cell
/// without a manifest.
std::vector<std::size_t> concurrent_cells(const std::vector<json>& manifests) {
  struct Span {
    std::string host;
    double start, end;
  };
  std::vector<std::optional<Span>> spans(manifests.size());
  for (std::size_t c = 0; c < manifests.size(); ++c)
    if (!manifests[c].is_null()) {
      const auto& timings = manifests[c]["timings"];
      spans[c] = Span{timings.value("host", ""), timings.value("started", 0.0), timings.value("finished", 0.0)};
    }
  const auto running_at = [&](const std::string& host, double t) {
    std::size_t count = 0;
    for (const auto& span : spans) count += span && span->host == host && span->start <= t && t < span->end;
    return count;
  };
  std::vector<std::size_t> most(manifests.size(), 0);
  for (std::size_t c = 0; c < spans.size(); ++c) {
    if (!spans[c]) continue;
    most[c] = 1;
    // The count only rises when a run starts, so the starts within the cell's span are enough.
    for (const auto& other : spans)
      if (other && other->host == spans[c]->host && spans[c]->start <= other->start && other->start < spans[c]->end)
        most[c] = std::max(most[c], running_at(spans[c]->host, other->start));
  }
  return most;
}

std::string summary_csv(const Sweep& sweep, const std::vector<Cell>& cells, const std::vector<MetricsTable>& tables,
                        const std::vector<json>& manifests, const std::vector<std::string>& metrics,
                        const std::vector<std::size_t>& concurrent) {
  std::string text = axes_header(sweep) + ",status,chains,item_gradients,mean_accept_stat,seconds,cpu_seconds,concurrent_cells";
  for (const auto& metric : metrics) text += "," + csv_field("final_" + metric);
  text += ",reason\n";
  for (std::size_t c = 0; c < cells.size(); ++c) {
    text += cell_prefix(sweep, cells[c]);
    const json& manifest = manifests[c];
    if (manifest.is_null()) {
      text += fmt::format(",{},,,,,,", cells[c].status);
      for (std::size_t m = 0; m < metrics.size(); ++m) text += ",";
    } else {
      std::uint64_t gradients = 0;
      double accept = 0.0, cpu_seconds = 0.0;
      for (const auto& chain : manifest["chains"]) {
        gradients += chain["item_gradients"].get<std::uint64_t>();
        accept += chain["mean_accept_stat"].get<double>();
        cpu_seconds += chain.value("cpu_seconds", std::nan(""));  // nan: a cell of a version before CPU seconds
      }
      const auto chains = manifest["chains"].size();
      text += fmt::format(",{},{},{},{},{},{},{}", manifest["status"].get<std::string>(), chains, gradients,
                          number_text(accept / static_cast<double>(std::max<std::size_t>(1, chains))),
                          number_text(manifest["timings"]["total_seconds"].get<double>()), number_text(cpu_seconds),
                          concurrent[c]);
      for (const auto& value : final_metrics(tables[c], metrics)) text += "," + value;
    }
    text += "," + csv_field(cells[c].reason) + "\n";
  }
  return text;
}

}  // namespace

std::size_t write_tables(const Sweep& sweep, const std::vector<Cell>& cells, const fs::path& out) {
  std::vector<MetricsTable> tables(cells.size());
  std::vector<json> manifests(cells.size());
  for (std::size_t c = 0; c < cells.size(); ++c) {
    const fs::path folder = out / cells[c].name;
    if (cells[c].status == "skipped" || !fs::exists(folder / run_folder::manifest)) continue;
    manifests[c] = read_manifest(folder / run_folder::manifest);
    tables[c] = read_metrics(folder / run_folder::metrics);
    check_metrics(tables[c], manifests[c], folder / run_folder::metrics);
  }
  const auto metrics = metric_union(tables);
  write_atomically(out / "results.csv", results_csv(sweep, cells, tables, metrics));
  const auto concurrent = concurrent_cells(manifests);
  write_atomically(out / "summary.csv", summary_csv(sweep, cells, tables, manifests, metrics, concurrent));
  return concurrent.empty() ? 0 : *std::max_element(concurrent.begin(), concurrent.end());
}
