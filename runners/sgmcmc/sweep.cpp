// `sgmcmc sweep FILE.toml`: a grid of runs (cells) from one base configuration, on a thread pool.
//
// Sweep file: `preset = "NAME"`, optional `[base.<section>]` tables overriding the preset, and an
// `[axes]` table of `"section.key" = [values...]` (cartesian product), with optional
// `zip = [["a.b", "c.d"], ...]` (axes that vary together) and `exclude = [{ "a.b" = v }, ...]`.
//
// Output folder:
//   sweep.toml         the sweep file, so --resume can refuse a folder of another sweep
//   <cell>/            one run's normal outputs; complete when its manifest.json exists (with
//                      run.checkpoint_every, --resume continues a partial one from its checkpoints)
//   results.csv        cell, axis values, then each cell's metrics.csv rows
//   summary.csv        one row per cell: status, cost, acceptance, final metrics, skip reason
#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>
#include <unistd.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "cluster.hpp"
#include "commands.hpp"
#include "files.hpp"
#include "presets.hpp"
#include "run.hpp"
#include "run_folder.hpp"

import sgmcmc;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct AxisValue {
  sgmcmc::Value value;
  std::string origin;  // file:line, so a cell's errors point at the value that caused them
};

struct Axis {
  std::string key;  // "section.key"
  std::string section, name;
  std::string origin;
  std::pair<std::uint32_t, std::uint32_t> position;  // line and column in the file
  std::vector<AxisValue> values;
};

struct Sweep {
  std::string source;  // the sweep file's path, as errors name it
  std::string text;
  const EmbeddedPreset* preset = nullptr;
  std::vector<std::pair<std::string, sgmcmc::Entry>> base;  // "section.key" and its entry
  std::vector<Axis> axes;
  std::vector<std::vector<std::size_t>> groups;  // axes varying together; the product is over groups
  std::vector<std::vector<std::pair<std::size_t, sgmcmc::Value>>> excludes;  // (axis, value) pairs
};

std::string origin_of(const Sweep& sweep, const toml::node& node) {
  return fmt::format("{}:{}", sweep.source, node.source().begin.line);
}

sgmcmc::Value to_value(const toml::node& node, const std::string& where) {
  if (auto v = node.as_boolean()) return v->get();
  if (auto v = node.as_integer()) return v->get();
  if (auto v = node.as_floating_point()) return v->get();
  if (auto v = node.as_string()) return v->get();
  throw sgmcmc::Error(fmt::format("{}: expected a boolean, integer, number or string", where));
}

/// "a number" for integers and floats alike: a float key accepts an integer, as the getters do.
std::string kind(const sgmcmc::Value& value) {
  if (std::holds_alternative<bool>(value)) return "true or false";
  if (std::holds_alternative<std::string>(value)) return "a string";
  return "a number";
}

std::string format_value(const sgmcmc::Value& value) {
  if (auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (auto* s = std::get_if<std::string>(&value)) return *s;
  std::string text;
  sgmcmc::append_number(text, std::get<double>(value));
  // A float stays one in names and tables: model.subsample = 1.0 is a fraction, 1 a row count.
  if (text.find_first_of(".eEna") == std::string::npos) text += ".0";
  return text;
}

bool same_value(const sgmcmc::Value& a, const sgmcmc::Value& b) {
  const auto number = [](const sgmcmc::Value& v) -> std::optional<double> {
    if (auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
    if (auto* d = std::get_if<double>(&v)) return *d;
    return std::nullopt;
  };
  if (number(a) && number(b)) return *number(a) == *number(b);
  return a == b;
}

/// Splits "section.key", checking the section (with a did-you-mean), as the run's own parser does.
std::pair<std::string, std::string> split_key(const std::string& dotted, const std::string& where) {
  const auto dot = dotted.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == dotted.size())
    throw sgmcmc::Error(fmt::format("{}: '{}' is not a \"section.key\" name", where, dotted));
  const std::string section = dotted.substr(0, dot);
  const std::vector<std::string> known(sgmcmc::config_sections.begin(), sgmcmc::config_sections.end());
  if (std::find(known.begin(), known.end(), section) == known.end()) {
    std::string message = fmt::format("{}: '{}': unknown section [{}]", where, dotted, section);
    if (auto suggestion = sgmcmc::closest_match(section, known); !suggestion.empty())
      message += fmt::format(" (did you mean [{}]?)", suggestion);
    throw sgmcmc::Error(message + fmt::format("; known: {}", fmt::join(known, ", ")));
  }
  return {section, dotted.substr(dot + 1)};
}

void read_base(Sweep& sweep, const toml::node& node) {
  const auto* sections = node.as_table();
  if (!sections) throw sgmcmc::Error(fmt::format("{}: 'base' must hold [base.<section>] tables", origin_of(sweep, node)));
  for (const auto& [section, keys] : *sections) {
    const auto* table = keys.as_table();
    if (!table) throw sgmcmc::Error(fmt::format("{}: 'base.{}' must be a [base.{}] table", origin_of(sweep, keys), section.str(), section.str()));
    for (const auto& [key, value] : *table) {
      const std::string origin = origin_of(sweep, value);
      const std::string dotted = fmt::format("{}.{}", section.str(), key.str());
      split_key(dotted, origin);
      sweep.base.push_back({dotted, {to_value(value, origin + ": base." + dotted), origin}});
    }
  }
}

Axis read_axis(const Sweep& sweep, const std::string& dotted, const toml::node& node) {
  Axis axis{dotted, "", "", origin_of(sweep, node), {node.source().begin.line, node.source().begin.column}, {}};
  std::tie(axis.section, axis.name) = split_key(dotted, axis.origin);
  const auto* list = node.as_array();
  if (!list || list->empty())
    throw sgmcmc::Error(fmt::format("{}: axis '{}' must be a non-empty list of values", axis.origin, dotted));
  for (const auto& element : *list) {
    const std::string origin = origin_of(sweep, element);
    axis.values.push_back({to_value(element, fmt::format("{}: axis '{}'", origin, dotted)), origin});
    if (kind(axis.values.back().value) != kind(axis.values.front().value))
      throw sgmcmc::Error(fmt::format("{}: axis '{}': {} is {}, but its first value is {}", origin, dotted,
                                      format_value(axis.values.back().value), kind(axis.values.back().value),
                                      kind(axis.values.front().value)));
  }
  return axis;
}

std::size_t axis_index(const Sweep& sweep, const std::string& dotted, const std::string& where) {
  for (std::size_t a = 0; a < sweep.axes.size(); ++a)
    if (sweep.axes[a].key == dotted) return a;
  std::vector<std::string> keys;
  for (const auto& axis : sweep.axes) keys.push_back(axis.key);
  std::string message = fmt::format("{}: '{}' is not an axis", where, dotted);
  if (auto suggestion = sgmcmc::closest_match(dotted, keys); !suggestion.empty())
    message += fmt::format(" (did you mean '{}'?)", suggestion);
  throw sgmcmc::Error(message + fmt::format("; axes: {}", fmt::join(keys, ", ")));
}

void read_zip(Sweep& sweep, const toml::node& node) {
  const auto* groups = node.as_array();
  if (!groups) throw sgmcmc::Error(fmt::format("{}: zip must be a list of lists of axis names", origin_of(sweep, node)));
  std::set<std::size_t> zipped;
  for (const auto& group_node : *groups) {
    const std::string where = origin_of(sweep, group_node);
    const auto* names = group_node.as_array();
    if (!names || names->size() < 2) throw sgmcmc::Error(fmt::format("{}: each zip entry lists two or more axis names", where));
    std::vector<std::size_t> group;
    for (const auto& name : *names) {
      if (!name.is_string()) throw sgmcmc::Error(fmt::format("{}: zip entries are axis names (strings)", where));
      const std::size_t a = axis_index(sweep, *name.value<std::string>(), where);
      if (!zipped.insert(a).second) throw sgmcmc::Error(fmt::format("{}: axis '{}' is zipped twice", where, sweep.axes[a].key));
      if (sweep.axes[a].values.size() != sweep.axes[group.empty() ? a : group.front()].values.size())
        throw sgmcmc::Error(fmt::format("{}: zipped axes '{}' and '{}' have {} and {} values", where, sweep.axes[group.front()].key,
                                        sweep.axes[a].key, sweep.axes[group.front()].values.size(), sweep.axes[a].values.size()));
      group.push_back(a);
    }
    std::sort(group.begin(), group.end());
    sweep.groups.push_back(group);
  }
  for (std::size_t a = 0; a < sweep.axes.size(); ++a)
    if (!zipped.contains(a)) sweep.groups.push_back({a});
  // Axis order, not zip order: the grid's order follows the file's axes however they are zipped.
  std::sort(sweep.groups.begin(), sweep.groups.end(), [](const auto& x, const auto& y) { return x.front() < y.front(); });
}

void read_exclude(Sweep& sweep, const toml::node& node) {
  const auto* list = node.as_array();
  if (!list) throw sgmcmc::Error(fmt::format("{}: exclude must be a list of {{ \"section.key\" = value }} tables", origin_of(sweep, node)));
  for (const auto& entry : *list) {
    const std::string where = origin_of(sweep, entry);
    const auto* table = entry.as_table();
    if (!table || table->empty()) throw sgmcmc::Error(fmt::format("{}: each exclude entry is a non-empty {{ \"section.key\" = value }} table", where));
    std::vector<std::pair<std::size_t, sgmcmc::Value>> match;
    for (const auto& [key, value] : *table)
      match.push_back({axis_index(sweep, std::string(key.str()), where), to_value(value, where)});
    sweep.excludes.push_back(match);
  }
}

/// The [axes] table: axis lists, and the zip and exclude entries (keys without a dot).
void read_axes(Sweep& sweep, const toml::node& node, const toml::node*& zip, const toml::node*& exclude) {
  const auto* table = node.as_table();
  if (!table) throw sgmcmc::Error(fmt::format("{}: 'axes' must be an [axes] table", origin_of(sweep, node)));
  for (const auto& [key, value] : *table) {
    if (key.str() == "zip") zip = &value;
    else if (key.str() == "exclude") exclude = &value;
    else sweep.axes.push_back(read_axis(sweep, std::string(key.str()), value));
  }
  if (sweep.axes.empty()) throw sgmcmc::Error(fmt::format("{}: [axes] names no axis", origin_of(sweep, node)));
  // toml++ iterates a table by key; the file's order is the one its author chose for names and rows.
  std::stable_sort(sweep.axes.begin(), sweep.axes.end(), [](const Axis& x, const Axis& y) { return x.position < y.position; });
}

/// The preset with the [base.*] overrides, before any axis value.
sgmcmc::RunConfig base_config(const Sweep& sweep) {
  auto config = sgmcmc::parse_config(sweep.preset->text, sweep.preset->source);
  for (const auto& [dotted, entry] : sweep.base) {
    const auto [section, key] = split_key(dotted, entry.origin);
    config[section].set(key, entry);
  }
  return config;
}

/// An axis value of another kind than the base's value for the key would fail in every cell:
/// an error in the sweep file, not a combination to skip.
void check_axis_kinds(const Sweep& sweep) {
  const auto base = base_config(sweep);
  for (const auto& axis : sweep.axes) {
    const auto& entries = base[axis.section].entries();
    const auto found = entries.find(axis.name);
    if (found == entries.end()) continue;
    const auto& expected = found->second.value;
    for (const auto& value : axis.values) {
      const bool integer_wanted = std::holds_alternative<std::int64_t>(expected) && std::holds_alternative<double>(value.value);
      if (kind(value.value) != kind(expected) || integer_wanted)
        throw sgmcmc::Error(fmt::format("{}: axis '{}': {} is {}, but {} is {} ({})", value.origin, axis.key,
                                        format_value(value.value), kind(value.value), axis.key,
                                        integer_wanted ? "an integer" : kind(expected), found->second.origin));
    }
  }
}

/// A sweep from its file's text; `source` names the file in errors. Under MPI the other ranks
/// parse rank 0's text, since a cluster's machines need not share the file.
Sweep parse_sweep(std::string text, std::string source) {
  Sweep sweep;
  sweep.source = std::move(source);
  sweep.text = std::move(text);
  toml::table document;
  try {
    document = toml::parse(sweep.text, sweep.source);
  } catch (const toml::parse_error& error) {
    throw sgmcmc::Error(fmt::format("{}:{}:{}: malformed TOML: {}", sweep.source, error.source().begin.line,
                                    error.source().begin.column, error.description()));
  }
  const toml::node* zip = nullptr;
  const toml::node* exclude = nullptr;
  const std::vector<std::string> known = {"preset", "base", "axes", "zip", "exclude"};
  for (const auto& [key, node] : document) {
    const std::string name(key.str());
    const std::string where = origin_of(sweep, node);
    if (name == "preset") {
      if (!node.is_string()) throw sgmcmc::Error(fmt::format("{}: preset must be a preset's name (a string)", where));
      try {
        sweep.preset = &find_preset(*node.value<std::string>());
      } catch (const sgmcmc::Error& error) {
        throw sgmcmc::Error(fmt::format("{}: {}", where, error.what()));
      }
    } else if (name == "base") {
      read_base(sweep, node);
    } else if (name == "axes") {
      read_axes(sweep, node, zip, exclude);
    } else if (name == "zip") {
      zip = &node;
    } else if (name == "exclude") {
      exclude = &node;
    } else {
      std::string message = fmt::format("{}: unknown key '{}'", where, name);
      if (auto suggestion = sgmcmc::closest_match(name, known); !suggestion.empty())
        message += fmt::format(" (did you mean '{}'?)", suggestion);
      throw sgmcmc::Error(message + fmt::format("; a sweep file has {}", fmt::join(known, ", ")));
    }
  }
  if (!sweep.preset) throw sgmcmc::Error(fmt::format("{}: missing preset = \"NAME\" (the base configuration; see `sgmcmc presets`)", sweep.source));
  if (sweep.axes.empty()) throw sgmcmc::Error(fmt::format("{}: missing the [axes] table", sweep.source));
  if (zip) {
    read_zip(sweep, *zip);
  } else {
    for (std::size_t a = 0; a < sweep.axes.size(); ++a) sweep.groups.push_back({a});
  }
  if (exclude) read_exclude(sweep, *exclude);
  check_axis_kinds(sweep);
  return sweep;
}

struct Cell {
  std::vector<std::size_t> choice;  // per axis, the index of its value
  std::string name;                 // its folder
  std::string status;               // "pending", then "complete", "diverged", "failed", "skipped" or "done" (resumed)
  std::string reason;               // why skipped or failed
};

/// Letters, digits and ._+=- only, so a cell's folder name is the same on every filesystem.
std::string safe_name(const std::string& text) {
  std::string name = text;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("._+=-").find(c) == std::string_view::npos) c = '_';
  return name;
}

std::string cell_name(const Sweep& sweep, const std::vector<std::size_t>& choice) {
  std::vector<std::string> parts;
  for (std::size_t a = 0; a < sweep.axes.size(); ++a)
    parts.push_back(fmt::format("{}={}", sweep.axes[a].key, format_value(sweep.axes[a].values[choice[a]].value)));
  return safe_name(fmt::format("{}", fmt::join(parts, "+")));
}

bool excluded(const Sweep& sweep, const std::vector<std::size_t>& choice) {
  for (const auto& match : sweep.excludes) {
    bool all = true;
    for (const auto& [a, value] : match) all = all && same_value(sweep.axes[a].values[choice[a]].value, value);
    if (all) return true;
  }
  return false;
}

/// The grid in a fixed order (last group fastest), without excluded cells. Names made the same by
/// safe_name get a suffix, so two cells never share a folder.
std::vector<Cell> enumerate_cells(const Sweep& sweep) {
  std::vector<Cell> cells;
  std::vector<std::size_t> position(sweep.groups.size(), 0);
  std::map<std::string, int> seen;
  while (true) {
    std::vector<std::size_t> choice(sweep.axes.size());
    for (std::size_t g = 0; g < sweep.groups.size(); ++g)
      for (std::size_t a : sweep.groups[g]) choice[a] = position[g];
    if (!excluded(sweep, choice)) {
      std::string name = cell_name(sweep, choice);
      if (const int n = ++seen[name]; n > 1) name += fmt::format("-{}", n);
      cells.push_back({choice, name, "pending", ""});
    }
    std::size_t g = sweep.groups.size();
    while (g > 0 && ++position[g - 1] == sweep.axes[sweep.groups[g - 1].front()].values.size()) position[--g] = 0;
    if (g == 0) break;
  }
  if (cells.empty()) throw sgmcmc::Error(fmt::format("{}: exclude leaves no cell to run", sweep.source));
  return cells;
}

sgmcmc::RunConfig cell_config(const Sweep& sweep, const Cell& cell) {
  auto config = base_config(sweep);
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    const auto& axis = sweep.axes[a];
    config[axis.section].set(axis.name, {axis.values[cell.choice[a]].value, axis.values[cell.choice[a]].origin});
  }
  return config;
}

std::string cell_source(const Sweep& sweep, const Cell& cell) {
  return fmt::format("sweep {} (preset {}), cell {}", sweep.source, sweep.preset->name, cell.name);
}

/// Runs work(i) for i in [0, count) on `jobs` threads; the first exception other than the
/// work's own handling is rethrown after every thread has stopped.
template <class Work>
void on_pool(std::size_t count, unsigned jobs, Work work) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < count;) {
      try {
        work(i);
      } catch (...) {
        const std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = count;
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < jobs; ++t) pool.emplace_back(worker);
    worker();
  }
  if (failure) std::rethrow_exception(failure);
}

/// What validating a cell found: a reason to skip it, or an error in the sweep file itself.
struct Verdict {
  std::string skip;
  std::string key_error;
  std::vector<std::string> warnings;
};

/// Builds the cell as its run would, without running it. A part refusing the combination
/// (mh after sghmc) skips the cell; a key nothing reads is an error of the sweep file.
Verdict validate_cell(const Sweep& sweep, const Cell& cell, const std::optional<fs::path>& plugin_dir) {
  Verdict verdict;
  PreparedRunPtr run;
  try {
    run = prepare_run(cell_config(sweep, cell), cell_source(sweep, cell), plugin_dir);
  } catch (const sgmcmc::Error& error) {
    verdict.skip = error.what();
    return verdict;
  }
  try {
    verdict.warnings = check_keys(*run);
  } catch (const sgmcmc::Error& error) {
    verdict.key_error = error.what();
    return verdict;
  }
  try {
    check_run(*run);
  } catch (const sgmcmc::Error& error) {
    verdict.skip = error.what();
  }
  return verdict;
}

/// One cell: the run's outputs in `folder`. A partial folder a killed sweep left continues from
/// its chains' checkpoints when the cell's run takes them (run.checkpoint_every), else is replaced.
void run_cell(const Sweep& sweep, Cell& cell, const fs::path& folder, const std::optional<fs::path>& plugin_dir) {
  try {
    auto run = prepare_run(cell_config(sweep, cell), cell_source(sweep, cell), plugin_dir);
    check_keys(*run);
    check_run(*run);
    const bool resumable = resume_refusal(folder).empty();
    if (!resumable) {
      fs::remove_all(folder);
      fs::create_directories(folder);
    }
    // One thread per cell: the pool's threads are the cells.
    cell.status = execute_run(*run, folder, 1, nullptr, resumable) == RunOutcome::diverged ? "diverged" : "complete";
  } catch (const sgmcmc::Error& error) {
    cell.status = "failed";
    cell.reason = error.what();
  }
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (std::size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1)
    fields.push_back(line.substr(start, comma - start));
  fields.push_back(line.substr(start));
  return fields;
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

json read_manifest(const fs::path& path) {
  std::ifstream in(path);
  try {
    return json::parse(in);
  } catch (const json::exception& error) {
    throw sgmcmc::Error(fmt::format("{}: {}", path.string(), error.what()));
  }
}

std::string number_text(double value) {
  std::string text;
  sgmcmc::append_number(text, value);
  return text;
}

constexpr std::array<const char*, 4> run_columns = {"chain", "iteration", "seconds", "item_gradients"};

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

std::string summary_csv(const Sweep& sweep, const std::vector<Cell>& cells, const std::vector<MetricsTable>& tables,
                        const std::vector<json>& manifests, const std::vector<std::string>& metrics) {
  std::string text = axes_header(sweep) + ",status,chains,item_gradients,mean_accept_stat,seconds";
  for (const auto& metric : metrics) text += "," + csv_field("final_" + metric);
  text += ",reason\n";
  for (std::size_t c = 0; c < cells.size(); ++c) {
    text += cell_prefix(sweep, cells[c]);
    const json& manifest = manifests[c];
    if (manifest.is_null()) {
      text += fmt::format(",{},,,,", cells[c].status);
      for (std::size_t m = 0; m < metrics.size(); ++m) text += ",";
    } else {
      std::uint64_t gradients = 0;
      double accept = 0.0;
      for (const auto& chain : manifest["chains"]) {
        gradients += chain["item_gradients"].get<std::uint64_t>();
        accept += chain["mean_accept_stat"].get<double>();
      }
      const auto chains = manifest["chains"].size();
      text += fmt::format(",{},{},{},{},{}", manifest["status"].get<std::string>(), chains, gradients,
                          number_text(accept / static_cast<double>(std::max<std::size_t>(1, chains))),
                          number_text(manifest["timings"]["total_seconds"].get<double>()));
      for (const auto& value : final_metrics(tables[c], metrics)) text += "," + value;
    }
    text += "," + csv_field(cells[c].reason) + "\n";
  }
  return text;
}

/// Rebuilds both tables from every cell's folder, so a resumed sweep's tables cover all cells.
void write_tables(const Sweep& sweep, const std::vector<Cell>& cells, const fs::path& out) {
  std::vector<MetricsTable> tables(cells.size());
  std::vector<json> manifests(cells.size());
  for (std::size_t c = 0; c < cells.size(); ++c) {
    const fs::path folder = out / cells[c].name;
    if (cells[c].status == "skipped" || !fs::exists(folder / run_folder::manifest)) continue;
    manifests[c] = read_manifest(folder / run_folder::manifest);
    tables[c] = read_metrics(folder / run_folder::metrics);
  }
  const auto metrics = metric_union(tables);
  write_atomically(out / "results.csv", results_csv(sweep, cells, tables, metrics));
  write_atomically(out / "summary.csv", summary_csv(sweep, cells, tables, manifests, metrics));
}

/// The output folder: new or empty, or with --resume one holding this same sweep file.
void prepare_sweep_folder(const Sweep& sweep, const fs::path& out, bool resume) {
  const fs::path recorded = out / "sweep.toml";
  if (resume && fs::exists(recorded)) {
    if (read_file(recorded, "the sweep file") != sweep.text)
      throw sgmcmc::Error(fmt::format("--resume: '{}' holds another sweep ({} differs from {}); nothing was changed",
                                      out.string(), recorded.string(), sweep.source));
    return;
  }
  if (fs::exists(out) && !fs::is_empty(out))
    throw sgmcmc::Error(fmt::format("output folder '{}' is not empty and holds no sweep.toml to resume; choose another --out",
                                    out.string()));
  std::error_code error;
  fs::create_directories(out, error);
  if (error) throw sgmcmc::Error(fmt::format("output folder '{}': {}", out.string(), error.message()));
  write_atomically(recorded, sweep.text);
}

/// Validates every cell still to run, on the pool; throws the first key error, in grid order.
void validate_cells(const Sweep& sweep, std::vector<Cell>& cells, const SweepOptions& options, unsigned jobs) {
  std::vector<Verdict> verdicts(cells.size());
  on_pool(cells.size(), jobs, [&](std::size_t c) {
    if (cells[c].status == "pending") verdicts[c] = validate_cell(sweep, cells[c], options.plugin_dir);
  });
  std::set<std::string> warnings;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    if (!verdicts[c].key_error.empty()) throw sgmcmc::Error(fmt::format("{} (in cell {})", verdicts[c].key_error, cells[c].name));
    if (!verdicts[c].skip.empty()) {
      cells[c].status = "skipped";
      cells[c].reason = verdicts[c].skip;
    }
    warnings.insert(verdicts[c].warnings.begin(), verdicts[c].warnings.end());
  }
  for (const auto& warning : warnings) fmt::print(stderr, "sgmcmc: warning: {}\n", warning);
  if (std::all_of(cells.begin(), cells.end(), [](const Cell& cell) { return cell.status == "skipped"; }))
    throw sgmcmc::Error(fmt::format("{}: every cell is skipped; the first: {}", sweep.source, cells.front().reason));
}

void report(const Cell& cell, std::size_t done, std::size_t total, double seconds) {
  fmt::print("[{}/{}] {}: {} ({:.1f} s){}\n", done, total, cell.name, cell.status, seconds,
             cell.reason.empty() ? "" : ": " + cell.reason);
  std::fflush(stdout);
}

/// A grid grows as the product of its axes: one list too long can mean days of cores. Checked
/// before validation, which builds every cell's model.
void check_cell_count(const Sweep& sweep, std::size_t count, const SweepOptions& options) {
  if (count <= options.max_cells || options.yes) return;
  std::vector<std::string> sizes;
  for (const auto& group : sweep.groups) {
    std::vector<std::string> keys;
    for (std::size_t a : group) keys.push_back(sweep.axes[a].key);
    sizes.push_back(fmt::format("{} ({})", sweep.axes[group.front()].values.size(), fmt::join(keys, " zipped with ")));
  }
  throw sgmcmc::Error(fmt::format("{}: {} cells ({}{}), more than --max-cells {}; nothing was run. "
                                  "Add --yes to run them all, or raise --max-cells",
                                  sweep.source, count, fmt::join(sizes, " x "), sweep.excludes.empty() ? "" : ", less excluded",
                                  options.max_cells));
}

// ---- Messages between ranks: length-prefixed fields in one byte string ----

void pack(std::string& message, std::string_view field) {
  const std::uint64_t length = field.size();
  message.append(reinterpret_cast<const char*>(&length), sizeof length);
  message.append(field);
}

class Unpacker {
public:
  explicit Unpacker(std::string_view message) : rest_(message) {}
  bool empty() const { return rest_.empty(); }
  std::string next() {
    std::uint64_t length = 0;
    if (rest_.size() < sizeof length) throw std::runtime_error("a truncated message between ranks");
    std::memcpy(&length, rest_.data(), sizeof length);
    rest_.remove_prefix(sizeof length);
    if (rest_.size() < length) throw std::runtime_error("a truncated message between ranks");
    std::string field(rest_.substr(0, length));
    rest_.remove_prefix(length);
    return field;
  }

private:
  std::string_view rest_;
};

// ---- Planning: rank 0 reads and checks everything before any cell runs ----

struct Plan {
  Sweep sweep;
  std::vector<Cell> cells;
  fs::path out;
};

/// The sweep file, its size, --resume, every cell's validation, the output folder: all on rank 0,
/// so a bad sweep is one message however many ranks there are.
Plan make_plan(const SweepOptions& options, unsigned jobs) {
  Plan plan{parse_sweep(read_file(options.file, "the sweep file"), options.file.string()), {}, {}};
  plan.cells = enumerate_cells(plan.sweep);
  check_cell_count(plan.sweep, plan.cells.size(), options);
  plan.out = options.out ? *options.out : fs::path("runs") / fmt::format("sweep-{}", options.file.stem().string());
  if (options.resume)
    for (auto& cell : plan.cells)
      if (fs::exists(plan.out / cell.name / run_folder::manifest)) cell.status = "done";
  validate_cells(plan.sweep, plan.cells, options, jobs);
  prepare_sweep_folder(plan.sweep, plan.out, options.resume);
  if (!options.quiet)
    for (const auto& cell : plan.cells)
      if (cell.status == "skipped") fmt::print("skipped {}: {}\n", cell.name, cell.reason);
  return plan;
}

/// Rank 0's plan on every rank (the other ranks parse rank 0's copy of the file), or the exit code
/// of a sweep rank 0 refused: then rank 0 alone has printed why, and every rank exits with it.
struct Shared {
  std::optional<Plan> plan;
  int refused = 0;
};

Shared share_plan(const Cluster& cluster, const SweepOptions& options, unsigned jobs) {
  if (cluster.root()) {
    std::string refusal;
    pack(refusal, "refused");
    try {
      Plan plan = make_plan(options, jobs);
      std::string message;
      for (const std::string& field : {std::string("plan"), plan.sweep.source, plan.sweep.text}) pack(message, field);
      for (const auto& cell : plan.cells) {
        pack(message, cell.status);
        pack(message, cell.reason);
      }
      cluster.broadcast(message);
      return {std::move(plan), 0};
    } catch (const std::exception& error) {
      // Said before the other ranks hear of it: once one of them exits non-zero, mpirun may end
      // this rank before a message printed later reaches the terminal.
      const int code = report_error(error);
      pack(refusal, std::to_string(code));
      cluster.broadcast(refusal);
      return {std::nullopt, code};
    }
  }
  const std::string message = cluster.broadcast("");
  Unpacker fields(message);
  if (fields.next() == "refused") return {std::nullopt, std::stoi(fields.next())};
  Plan plan;
  const std::string source = fields.next();
  plan.sweep = parse_sweep(fields.next(), source);
  plan.cells = enumerate_cells(plan.sweep);
  for (auto& cell : plan.cells) {
    cell.status = fields.next();
    cell.reason = fields.next();
  }
  return {std::move(plan), 0};
}

/// This rank's share: the cells to run, dealt round-robin in grid order, so which rank runs a
/// cell depends on the grid and the number of ranks alone.
std::vector<std::size_t> dealt_cells(const std::vector<Cell>& cells, const Cluster& cluster) {
  std::vector<std::size_t> mine;
  std::size_t dealt = 0;
  for (std::size_t c = 0; c < cells.size(); ++c)
    if (cells[c].status == "pending" && dealt++ % static_cast<std::size_t>(cluster.size()) == static_cast<std::size_t>(cluster.rank()))
      mine.push_back(c);
  return mine;
}

// ---- Running: each rank's cells on its own threads; finished cells travel to rank 0 ----

/// A finished cell: its index in the grid and its wall time.
struct Finished {
  std::size_t cell;
  double seconds;
};

/// This rank's cells on `jobs` threads in the background. Finished cells queue up for the main
/// thread, the only one that talks to other ranks (MPI_THREAD_FUNNELED).
class LocalCells {
public:
  LocalCells(const Sweep& sweep, std::vector<Cell>& cells, std::vector<std::size_t> mine, fs::path folder,
             const SweepOptions& options, unsigned jobs)
      : remaining_(mine.size()) {
    pool_ = std::jthread([&sweep, &cells, mine = std::move(mine), folder = std::move(folder), &options, jobs, this] {
      try {
        on_pool(mine.size(), jobs, [&](std::size_t i) {
          if (stopping_) return;
          const auto started = std::chrono::steady_clock::now();
          run_cell(sweep, cells[mine[i]], folder / cells[mine[i]].name, options.plugin_dir);
          push({mine[i], std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()});
        });
      } catch (...) {
        const std::lock_guard lock(mutex_);
        failure_ = std::current_exception();
        ready_.notify_all();
      }
    });
  }

  /// Cells not yet started are left out: the main thread failed, and the job is about to end.
  ~LocalCells() { stopping_ = true; }

  /// True once every cell has been handed out by next().
  bool finished() const { return remaining_ == 0; }

  /// A finished cell, waiting at most `wait` for one; rethrows a failure of the pool.
  std::optional<Finished> next(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, wait, [&] { return !queue_.empty() || failure_; });
    if (failure_) std::rethrow_exception(failure_);
    if (queue_.empty()) return std::nullopt;
    const Finished finished = queue_.front();
    queue_.pop_front();
    --remaining_;
    return finished;
  }

private:
  void push(Finished finished) {
    const std::lock_guard lock(mutex_);
    queue_.push_back(finished);
    ready_.notify_all();
  }

  std::size_t remaining_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Finished> queue_;
  std::exception_ptr failure_;
  std::atomic<bool> stopping_{false};
  std::jthread pool_;  // last: joined before the members its thread uses are destroyed
};

/// A cell's outcome and every file of its folder, for rank 0 to write into the sweep's folder.
std::string cell_message(const Cell& cell, const Finished& finished, const fs::path& folder) {
  std::string message;
  for (const std::string& field : {std::string("cell"), std::to_string(finished.cell), cell.status, cell.reason, number_text(finished.seconds)})
    pack(message, field);
  if (!fs::exists(folder)) return message;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (!entry.is_regular_file()) continue;
    pack(message, fs::relative(entry.path(), folder).generic_string());
    pack(message, read_file(entry.path(), "a finished cell's file"));
  }
  return message;
}

/// Writes a cell another rank ran into its folder, manifest.json last and through a temporary
/// name, as a run writes it: a folder without it is a cell to rerun on --resume.
Finished store_cell(std::vector<Cell>& cells, Unpacker& fields, const fs::path& out) {
  const std::size_t index = std::stoul(fields.next());
  Cell& cell = cells.at(index);
  cell.status = fields.next();
  cell.reason = fields.next();
  const Finished finished{index, std::stod(fields.next())};
  const fs::path folder = out / cell.name;
  fs::remove_all(folder);
  fs::create_directories(folder);
  std::optional<std::string> manifest;
  while (!fields.empty()) {
    const fs::path name = fields.next();
    std::string content = fields.next();
    if (name == run_folder::manifest) {
      manifest = std::move(content);
      continue;
    }
    fs::create_directories((folder / name).parent_path());
    write_atomically(folder / name, content);
  }
  if (manifest) write_atomically(folder / run_folder::manifest, *manifest);
  return finished;
}

/// Rank 0: runs its share, writes the cells the other ranks send, until every rank is done.
void run_on_root(const Cluster& cluster, Plan& plan, const SweepOptions& options, unsigned jobs) {
  const auto total = static_cast<std::size_t>(std::count_if(plan.cells.begin(), plan.cells.end(), [](const Cell& cell) { return cell.status == "pending"; }));
  LocalCells local(plan.sweep, plan.cells, dealt_cells(plan.cells, cluster), plan.out, options, jobs);
  int ranks_running = cluster.size() - 1;
  std::size_t done = 0;
  while (!local.finished() || ranks_running > 0) {
    std::optional<Finished> finished = local.next(std::chrono::milliseconds(ranks_running > 0 ? 5 : 100));
    if (!finished) {
      if (auto message = cluster.poll()) {
        Unpacker fields(message->second);
        if (fields.next() == "done") --ranks_running;
        else finished = store_cell(plan.cells, fields, plan.out);
      }
    }
    if (finished && !options.quiet) report(plan.cells[finished->cell], ++done, total, finished->seconds);
  }
}

/// Any other rank: runs its share in a scratch folder of this machine (a cluster need not share
/// a file system with rank 0), sends each cell to rank 0 as it finishes, then says it is done.
void run_on_worker(const Cluster& cluster, Plan& plan, const SweepOptions& options, unsigned jobs) {
  const fs::path scratch = fs::temp_directory_path() / fmt::format("sgmcmc-sweep-{}-rank-{}", getpid(), cluster.rank());
  {
    LocalCells local(plan.sweep, plan.cells, dealt_cells(plan.cells, cluster), scratch, options, jobs);
    while (!local.finished()) {
      if (const auto finished = local.next(std::chrono::milliseconds(100))) {
        const fs::path folder = scratch / plan.cells[finished->cell].name;
        cluster.send_to_root(cell_message(plan.cells[finished->cell], *finished, folder));
        fs::remove_all(folder);
      }
    }
  }
  fs::remove_all(scratch);
  std::string done;
  pack(done, "done");
  cluster.send_to_root(done);
}

/// After every cell: rank 0 writes both tables and prints the tally; every rank returns its code.
int finish(const Cluster& cluster, const Plan& plan, const SweepOptions& options) {
  int code = 0;
  if (cluster.root()) {
    write_tables(plan.sweep, plan.cells, plan.out);
    std::map<std::string, int> counts;
    for (const auto& cell : plan.cells) ++counts[cell.status];
    std::vector<std::string> parts;
    for (const auto& [status, count] : counts) parts.push_back(fmt::format("{} {}", count, status == "done" ? "already done" : status));
    if (!options.quiet)
      fmt::print("{} cells{}: {} -> {}\n", plan.cells.size(), cluster.size() > 1 ? fmt::format(" on {} ranks", cluster.size()) : "",
                 fmt::join(parts, ", "), plan.out.string());
    for (const auto& cell : plan.cells)
      if (cell.status == "failed") fmt::print(stderr, "sgmcmc: cell {} failed: {}\n", cell.name, cell.reason);
    code = counts["failed"] || counts["diverged"] ? exit_diverged : 0;
  }
  return std::stoi(cluster.broadcast(std::to_string(code)));
}

/// A failure on one rank of several, which the others would wait on forever: ends them all.
[[noreturn]] void end_job(const Cluster& cluster, const std::exception& error) {
  cluster.abort(report_error(error, fmt::format(" on rank {}", cluster.rank())));
}

}  // namespace

int sweep_command(const SweepOptions& options) {
  const Cluster cluster;
  // Ranks on one machine share its cores.
  const unsigned jobs = options.jobs ? options.jobs
                                     : std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(cluster.ranks_here()));
  Shared shared;
  try {
    shared = share_plan(cluster, options, jobs);  // rank 0 reports a refusal itself, once
  } catch (const std::exception& error) {
    end_job(cluster, error);  // rank 0 goes on without this rank (a different sgmcmc here?)
  }
  if (!shared.plan) return shared.refused;
  Plan& plan = *shared.plan;
  try {
    if (cluster.root()) run_on_root(cluster, plan, options, jobs);
    else run_on_worker(cluster, plan, options, jobs);
    return finish(cluster, plan, options);
  } catch (const std::exception& error) {
    if (cluster.size() == 1) throw;
    end_job(cluster, error);
  }
}
