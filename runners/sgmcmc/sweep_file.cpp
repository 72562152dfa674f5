// Reading a sweep file (see sweep_file.hpp).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "presets.hpp"
#include "sweep_file.hpp"

import sgmcmc;

namespace {

std::string origin_of(const Sweep& sweep, const toml::node& node) {
  return fmt::format("{}:{}", sweep.source, node.source().begin.line);
}

sgmcmc::Value to_value(const toml::node& node, const std::string& where) {
  if (auto v = node.as_boolean()) return v->get();
  if (auto v = node.as_integer()) return v->get();
  if (auto v = node.as_floating_point()) return v->get();
  if (auto v = node.as_string()) return v->get();
  if (auto v = node.as_array()) {  // as a configuration file reads it (a per-coordinate mass)
    std::vector<sgmcmc::Value> elements;
    for (const auto& element : *v) elements.push_back(to_value(element, where));
    return sgmcmc::array_value(elements, where);
  }
  throw sgmcmc::Error(fmt::format("{}: expected a boolean, integer, number, string or array of numbers or strings", where));
}

/// "a number" for integers and floats alike: a float key accepts an integer, as the getters do.
std::string kind(const sgmcmc::Value& value) {
  if (std::holds_alternative<bool>(value)) return "true or false";
  if (std::holds_alternative<std::string>(value)) return "a string";
  if (std::holds_alternative<std::vector<double>>(value)) return "an array of numbers";
  if (std::holds_alternative<std::vector<std::string>>(value)) return "an array of strings";
  return "a number";
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

}  // namespace

namespace {
std::string format_float(double value) {
  std::string text;
  sgmcmc::append_number(text, value);
  // A float stays one in names and tables: model.subsample = 1.0 is a fraction, 1 a row count.
  if (text.find_first_of(".eEna") == std::string::npos) text += ".0";
  return text;
}
}  // namespace

std::string format_value(const sgmcmc::Value& value) {
  if (auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (auto* s = std::get_if<std::string>(&value)) return *s;
  if (auto* array = std::get_if<std::vector<double>>(&value)) {
    std::vector<std::string> parts;
    for (double number : *array) parts.push_back(format_float(number));
    return fmt::format("[{}]", fmt::join(parts, ", "));
  }
  if (auto* strings = std::get_if<std::vector<std::string>>(&value)) return fmt::format("{}", *strings);
  return format_float(std::get<double>(value));
}

namespace {

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

}  // namespace

sgmcmc::RunConfig base_config(const Sweep& sweep) {
  auto config = sgmcmc::parse_config(sweep.preset->text, sweep.preset->source);
  for (const auto& [dotted, entry] : sweep.base) {
    const auto [section, key] = split_key(dotted, entry.origin);
    config[section].set(key, entry);
  }
  return config;
}

namespace {

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

}  // namespace

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
  const std::vector<std::string> known = {"preset", "config", "base", "axes", "zip", "exclude"};
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
    } else if (name == "config") {
      if (!node.is_string()) throw sgmcmc::Error(fmt::format("{}: config must be a run configuration's TOML text (a string)", where));
      auto inline_config = std::make_shared<InlineConfig>();
      inline_config->name = "(config)";
      inline_config->source = fmt::format("{} (its config)", where);
      inline_config->text = *node.value<std::string>();
      inline_config->preset = {inline_config->name.c_str(), inline_config->source.c_str(), inline_config->text.c_str()};
      sweep.inline_config = inline_config;
      sweep.preset = &inline_config->preset;
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
  if (document.contains("preset") && document.contains("config"))
    throw sgmcmc::Error(fmt::format("{}: both preset and config give the base configuration; keep one", sweep.source));
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
