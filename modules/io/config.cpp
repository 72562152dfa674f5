// The TOML side of sgmcmc.config, in an implementation unit so that toml++ stays out of the
// module interface that consumers of the installed package compile.
module;
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>
#include <fmt/format.h>
#include <toml++/toml.h>
module sgmcmc.config;
import sgmcmc.error;
import sgmcmc.settings;
import sgmcmc.io;

namespace sgmcmc {

namespace {

RunConfig empty_config() {
  RunConfig config;
  for (const char* name : config_sections) config.sections.emplace(name, Settings(name));
  return config;
}

/// Sections a configuration holds only when it names them, so that a configuration without them
/// records (manifest, chain files' comments, config.toml) what it did before they existed:
/// [burn_in] and the burn-in's own sampler tables (runners/sgmcmc/burn_in.hpp).
constexpr std::array<const char*, 4> optional_sections = {"burn_in", "burn_in.estimator", "burn_in.integrator",
                                                          "burn_in.corrector"};

Settings& section_named(RunConfig& config, const std::string& name, const std::string& origin) {
  auto it = config.sections.find(name);
  if (it != config.sections.end()) return it->second;
  if (std::find(optional_sections.begin(), optional_sections.end(), name) != optional_sections.end())
    return config.sections.emplace(name, Settings(name)).first->second;
  std::vector<std::string> known(config_sections.begin(), config_sections.end());
  known.insert(known.end(), optional_sections.begin(), optional_sections.end());
  std::string message = fmt::format("{}: unknown section [{}]", origin, name);
  if (auto suggestion = closest_match(name, known); !suggestion.empty())
    message += fmt::format(" (did you mean [{}]?)", suggestion);
  throw Error(message + fmt::format("; known: {}", fmt::join(known, ", ")));
}

Value toml_value(const toml::node& node, const std::string& where);

Value toml_array(const toml::array& array, const std::string& where) {
  std::vector<Value> elements;
  for (const auto& element : array) elements.push_back(toml_value(element, where));
  return array_value(elements, where);
}

Value toml_value(const toml::node& node, const std::string& where) {
  if (auto v = node.as_boolean()) return v->get();
  if (auto v = node.as_integer()) return v->get();
  if (auto v = node.as_floating_point()) return v->get();
  if (auto v = node.as_string()) {
    // TOML allows \u0000; a file name holding one would be cut there when opened, reading
    // another file than the one the manifest records, and no other setting has a use for it.
    if (v->get().find('\0') != std::string::npos)
      throw Error(fmt::format("{}: a string with a NUL character (\\u0000), which no setting takes (a file name would "
                              "be cut there)",
                              where));
    return v->get();
  }
  if (auto v = node.as_array()) return toml_array(*v, where);
  throw Error(fmt::format("{}: expected a boolean, integer, number, string or array of numbers or strings", where));
}

/// Every key of every component is a TOML bare key (letters, digits, '_' and '-'). Others (a
/// quoted "a b" in a file, `--set run.seed'=1`) are typos, and format_config could not write
/// them back unquoted for a resume to read.
void check_key_name(const std::string& key, const std::string& where) {
  const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (!bare) throw Error(fmt::format("{}: '{}' is not a key name: keys are letters, digits, '_' and '-'", where, key));
}

/// Equal, a NaN counting as equal to a NaN: TOML writes and reads `nan` (no getter accepts it, so
/// it is refused with its key when read, but the configuration must still be recorded as given).
bool same_value(const Value& a, const Value& b) {
  const auto same_number = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
  if (const auto *x = std::get_if<double>(&a), *y = std::get_if<double>(&b); x && y) return same_number(*x, *y);
  if (const auto *x = std::get_if<std::vector<double>>(&a), *y = std::get_if<std::vector<double>>(&b); x && y)
    return std::equal(x->begin(), x->end(), y->begin(), y->end(), same_number);
  return a == b;
}

/// True when `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
/// beyond U+10FFFF), which a TOML document must be.
bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size()) return false;
    std::uint32_t code = length == 1 ? lead : lead & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next >> 6) != 0x2) return false;
      code = (code << 6) | (next & 0x3F);
    }
    constexpr std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

/// `text` of a --set, "[1.0, 2.5]" or '["theta.1", "theta.2"]', read as a TOML array.
Value override_array(const std::string& text, const std::string& origin) {
  toml::table parsed;
  try {
    parsed = toml::parse("value = " + text, origin);
  } catch (const toml::parse_error& error) {
    throw Error(fmt::format("{}: malformed array: {}", origin, error.description()));
  }
  return toml_value(*parsed.get("value"), origin);
}

/// `text` of a --set read as a TOML value, when it is one of the kinds a setting takes (a quoted
/// string with its escapes, +20, 0x10, 2_000, 1e-5, true); none when it is not TOML (a bare word
/// such as gaussian, a path), which the caller reads as before.
std::optional<Value> override_toml_value(const std::string& text, const std::string& origin) {
  toml::table parsed;
  try {
    parsed = toml::parse("value = " + text, origin);
  } catch (const toml::parse_error&) {
    return std::nullopt;
  }
  const toml::node& node = *parsed.get("value");
  if (!(node.is_boolean() || node.is_integer() || node.is_floating_point() || node.is_string())) return std::nullopt;
  return toml_value(node, origin);
}

/// A value as a TOML node of its own kind: an array of numbers as a TOML array of floats.
void insert_value(toml::table& keys, const std::string& key, const Value& value) {
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::vector<double>> || std::is_same_v<V, std::vector<std::string>>) {
          toml::array array;
          for (const auto& element : v) array.push_back(element);
          keys.insert(key, std::move(array));
        } else {
          keys.insert(key, v);
        }
      },
      value);
}

/// The keys of the table `name` into its section; a table inside it ([burn_in.integrator]) is the
/// section "name.key", which must be one of the known sections.
void read_section(RunConfig& config, const std::string& name, const toml::table& table, const std::string& source) {
  Settings& settings = section_named(config, name, fmt::format("{}:{}", source, table.source().begin.line));
  for (const auto& [key, node] : table) {
    const std::string origin = fmt::format("{}:{}", source, node.source().begin.line);
    const std::string dotted = fmt::format("{}.{}", name, key.str());
    if (const auto* inner = node.as_table()) {
      read_section(config, dotted, *inner, source);
      continue;
    }
    check_key_name(std::string(key.str()), origin);
    settings.set(std::string(key.str()), {toml_value(node, origin + ": " + dotted), origin});
  }
}

}  // namespace

Value array_value(const std::vector<Value>& elements, const std::string& where) {
  if (!elements.empty() && std::holds_alternative<std::string>(elements.front())) {
    std::vector<std::string> strings;
    for (const auto& element : elements) {
      if (auto* v = std::get_if<std::string>(&element)) strings.push_back(*v);
      else throw Error(fmt::format("{}: expected an array of strings, found an element that is not a string", where));
    }
    return strings;
  }
  std::vector<double> numbers;
  for (const auto& element : elements) {
    if (auto* v = std::get_if<std::int64_t>(&element)) numbers.push_back(static_cast<double>(*v));
    else if (auto* v = std::get_if<double>(&element)) numbers.push_back(*v);
    else throw Error(fmt::format("{}: expected an array of numbers, found an element that is not a number", where));
  }
  return numbers;
}

RunConfig parse_config(std::string_view text, const std::string& source) {
  toml::table document;
  try {
    document = toml::parse(text, source);
  } catch (const toml::parse_error& error) {
    throw Error(fmt::format("{}:{}:{}: malformed TOML: {}", source, error.source().begin.line,
                            error.source().begin.column, error.description()));
  }
  RunConfig config = empty_config();
  for (const auto& [section_key, section_node] : document) {
    const std::string section_origin = fmt::format("{}:{}", source, section_node.source().begin.line);
    const auto* table = section_node.as_table();
    if (!table)
      throw Error(fmt::format("{}: '{}' must be a [section] table", section_origin, section_key.str()));
    read_section(config, std::string(section_key.str()), *table, source);
  }
  return config;
}

std::string format_config(const RunConfig& config) {
  toml::table document;
  for (const auto& [name, settings] : config.sections) {
    if (settings.entries().empty()) continue;
    toml::table keys;
    for (const auto& [key, entry] : settings.entries()) insert_value(keys, key, entry.value);
    // "burn_in.integrator" as the table [burn_in.integrator], inside [burn_in] (made if need be:
    // the map holds "burn_in" before "burn_in.integrator").
    const auto dot = name.find('.');
    toml::table* parent = &document;
    if (dot != std::string::npos) parent = document.insert(name.substr(0, dot), toml::table{}).first->second.as_table();
    parent->insert(dot == std::string::npos ? name : name.substr(dot + 1), std::move(keys));
  }
  std::ostringstream text;
  // Doubles are written with all their digits, so they read back exactly. Strings are written as
  // basic strings, escapes and all: toml++ 3.3 writes a string holding a newline as a multi-line
  // string, whose newline right after the opening """ is dropped when read back, or, without
  // those, as a literal string with the raw newline, which does not parse (found by tests/fuzz: a
  // model name "\n..."). Neither kind holds anything a basic string cannot.
  constexpr auto basic_strings = toml::toml_formatter::default_flags & ~toml::format_flags::allow_multi_line_strings &
                                 ~toml::format_flags::allow_literal_strings;
  text << toml::toml_formatter{document, basic_strings} << "\n";
  // Checked, not assumed: a value that would not come back the same would resume another run.
  const RunConfig back = parse_config(text.str(), "(formatted configuration)");
  for (const auto& [name, settings] : config.sections) {
    if (settings.entries().empty()) continue;
    const auto found = back.sections.find(name);
    if (found == back.sections.end()) throw Error(fmt::format("internal: the [{}] section does not survive being written as TOML", name));
    const auto& again = found->second.entries();
    bool same = again.size() == settings.entries().size();
    for (const auto& [key, entry] : settings.entries()) same = same && again.contains(key) && same_value(again.at(key).value, entry.value);
    if (!same) throw Error(fmt::format("internal: the [{}] section does not survive being written as TOML", name));
  }
  return text.str();
}

void apply_override(RunConfig& config, const std::string& assignment) {
  const std::string origin = fmt::format("--set {}", assignment);
  // The configuration is recorded as TOML (manifest.json, a checkpoint's config.toml, a sweep's
  // cells), which holds UTF-8 only: other bytes (a Latin-1 file name, say) could not be resumed.
  if (!valid_utf8(assignment))
    throw Error(fmt::format("{}: not valid UTF-8; a configuration is recorded as TOML, which holds UTF-8 only (a file name in "
                            "another encoding needs a link with a UTF-8 name)",
                            origin));
  const auto equals = assignment.find('=');
  // The last dot before '=' ends the section: keys hold none, sections can (burn_in.integrator).
  const auto dot = equals == std::string::npos ? std::string::npos : assignment.rfind('.', equals);
  if (equals == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 == equals)
    throw Error(fmt::format("{}: expected section.key=value", origin));
  Settings& settings = section_named(config, assignment.substr(0, dot), origin);
  const std::string key = assignment.substr(dot + 1, equals - dot - 1);
  check_key_name(key, origin);
  std::string text = assignment.substr(equals + 1);

  Value value;
  std::int64_t whole = 0;
  double real = 0.0;
  const char* end = text.data() + text.size();
  if (text.starts_with('[')) {
    value = override_array(text, origin);
  } else if (auto toml_value = override_toml_value(text, origin)) {
    value = std::move(*toml_value);
  } else if (text == "true" || text == "false") {
    value = text == "true";
  } else if (auto [ptr, error] = std::from_chars(text.data(), end, whole); error == std::errc() && ptr == end) {
    value = whole;
  } else if (parse_double(text, real)) {
    value = real;
  } else {
    if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front())
      text = text.substr(1, text.size() - 2);
    value = text;
  }
  settings.set(key, {value, origin});
}

}  // namespace sgmcmc
