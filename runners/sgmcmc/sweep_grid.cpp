// A sweep's grid (see sweep_grid.hpp).
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>
#include <fmt/format.h>
#include <xxhash.h>
#include <fmt/ranges.h>

#include "presets.hpp"
#include "sweep_grid.hpp"

import sgmcmc;

namespace {

bool same_value(const sgmcmc::Value& a, const sgmcmc::Value& b) {
  const auto number = [](const sgmcmc::Value& v) -> std::optional<double> {
    if (auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
    if (auto* d = std::get_if<double>(&v)) return *d;
    return std::nullopt;
  };
  if (number(a) && number(b)) return *number(a) == *number(b);
  return a == b;
}

/// Letters, digits and ._+=- only, so a cell's folder name is the same on every filesystem.
std::string safe_name(const std::string& text) {
  std::string name = text;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("._+=-").find(c) == std::string_view::npos) c = '_';
  return name;
}

/// A cell's folder name: its axis values, or, past 200 bytes (file systems allow 255 a name; an
/// array-valued axis passes that), their first 180 bytes and the XXH64 hash of the whole, so that
/// the name stays one for one with the values and the same on every run of the sweep.
std::string cell_name(const Sweep& sweep, const std::vector<std::size_t>& choice) {
  std::vector<std::string> parts;
  for (std::size_t a = 0; a < sweep.axes.size(); ++a)
    parts.push_back(fmt::format("{}={}", sweep.axes[a].key, format_value(sweep.axes[a].values[choice[a]].value)));
  const std::string name = safe_name(fmt::format("{}", fmt::join(parts, "+")));
  if (name.size() <= 200) return name;
  return fmt::format("{}-{:016x}", name.substr(0, 180), XXH64(name.data(), name.size(), 0));
}

bool excluded(const Sweep& sweep, const std::vector<std::size_t>& choice) {
  for (const auto& match : sweep.excludes) {
    bool all = true;
    for (const auto& [a, value] : match) all = all && same_value(sweep.axes[a].values[choice[a]].value, value);
    if (all) return true;
  }
  return false;
}

/// Calls `visit(choice)` for each cell of the grid in its fixed order (last group fastest),
/// excluded ones left out, until `visit` returns false.
template <class Visit>
void for_each_choice(const Sweep& sweep, Visit&& visit) {
  std::vector<std::size_t> position(sweep.groups.size(), 0);
  while (true) {
    std::vector<std::size_t> choice(sweep.axes.size());
    for (std::size_t g = 0; g < sweep.groups.size(); ++g)
      for (std::size_t a : sweep.groups[g]) choice[a] = position[g];
    if (!excluded(sweep, choice) && !visit(choice)) return;
    std::size_t g = sweep.groups.size();
    while (g > 0 && ++position[g - 1] == sweep.axes[sweep.groups[g - 1].front()].values.size()) position[--g] = 0;
    if (g == 0) return;
  }
}

}  // namespace

std::vector<Cell> enumerate_cells(const Sweep& sweep) {
  std::vector<Cell> cells;
  std::map<std::string, int> seen;
  for_each_choice(sweep, [&](const std::vector<std::size_t>& choice) {
    std::string name = cell_name(sweep, choice);
    if (const int n = ++seen[name]; n > 1) name += fmt::format("-{}", n);
    cells.push_back({choice, name, "pending", "", nullptr});
    return true;
  });
  if (cells.empty()) throw sgmcmc::Error(fmt::format("{}: exclude leaves no cell to run", sweep.source));
  return cells;
}

std::size_t grid_size(const Sweep& sweep) {
  std::size_t size = 1;
  for (const auto& group : sweep.groups) {
    const std::size_t length = sweep.axes[group.front()].values.size();
    size = length != 0 && size > SIZE_MAX / length ? SIZE_MAX : size * length;
  }
  return size;
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

void check_cell_count(const Sweep& sweep, const SweepOptions& options) {
  if (options.yes || grid_size(sweep) <= options.max_cells) return;
  std::size_t count = 0;  // the cells `exclude` leaves, counted only until there are too many
  for_each_choice(sweep, [&](const std::vector<std::size_t>&) { return ++count <= options.max_cells; });
  if (count <= options.max_cells) return;
  std::vector<std::string> sizes;
  for (const auto& group : sweep.groups) {
    std::vector<std::string> keys;
    for (std::size_t a : group) keys.push_back(sweep.axes[a].key);
    sizes.push_back(fmt::format("{} ({})", sweep.axes[group.front()].values.size(), fmt::join(keys, " zipped with ")));
  }
  throw sgmcmc::Error(fmt::format("{}: {} cells ({}{}), more than --max-cells {}; nothing was run. "
                                  "Add --yes to run them all, or raise --max-cells",
                                  sweep.source, sweep.excludes.empty() ? fmt::format("{}", grid_size(sweep)) : "more than " + std::to_string(options.max_cells),
                                  fmt::join(sizes, " x "), sweep.excludes.empty() ? "" : ", less excluded",
                                  options.max_cells));
}
