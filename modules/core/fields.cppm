// Field tables: each key of a component's section described once, beside its parameter struct.
// A table lists, per key, the member it sets, the constraint its value must satisfy and a one-line
// doc; the default is the struct's default member initialiser (read from a default-constructed
// struct, so it is written nowhere else). From the table come the Settings reader (read_fields),
// the check of a struct built in code (check_fields), the keys the catalogue declares (keys_of)
// and what `sgmcmc list` and the docs show (key_docs). Shared parts (an integrator's schedule, say)
// are tables of their own struct, lifted into the table of the struct that holds them (nested).
module;
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.fields;
import sgmcmc.error;
import sgmcmc.settings;

export namespace sgmcmc {

/// What a number must satisfy: `summary` for the docs ("> 0"), `expected` for the error
/// ("{where}: expected a number > 0, found -1"). Without `holds`, any value.
struct Constraint {
  std::string summary;
  std::string expected;
  std::function<bool(double)> holds = {};
};

/// > 0, for numbers.
Constraint positive();
/// >= minimum, for integers.
Constraint at_least(std::int64_t minimum);

/// How the docs show a default: as fmt's "{}", but below 1e-3 or from 1e6 in a short scientific
/// form ("1e-4", not "0.0001" or "1e-04"; "1e10", not "10000000000").
std::string default_text(double value);
inline std::string default_text(bool value) { return value ? "true" : "false"; }
inline std::string default_text(std::int64_t value) { return fmt::format("{}", value); }
inline std::string default_text(std::uint64_t value) { return fmt::format("{}", value); }

/// One key as `sgmcmc list` and the docs show it.
struct KeyDoc {
  std::string key;
  std::string default_value;  // as the docs write it: "1e-4", "constant", "0.1/step_size"
  std::string constraint;     // "> 0", ">= 1", "in (0, 1)"; "" for none
  std::string doc;            // one line
  bool operator==(const KeyDoc&) const = default;
};

/// One key of a section and the member of P it sets.
template <class P>
struct Field {
  KeyDoc shown;
  /// Reads the key into P, keeping P's value when the key is unset; a value of the wrong type, or
  /// one the key can never take, is an Error naming the key and where it was set.
  std::function<void(SectionReader, P&)> read;
  /// "" when P's value is acceptable, else "expected …, found …". Run after `read`, and on a struct
  /// built in code (check_fields); it may look at members of P read before this key.
  std::function<std::string(const P&)> problem = {};
};

template <class P>
using FieldTable = std::vector<Field<P>>;

/// "expected {constraint.expected}, found {value}", or "" when the constraint holds.
inline std::string violation(const Constraint& constraint, double value) {
  if (!constraint.holds || constraint.holds(value)) return "";
  return fmt::format("expected {}, found {}", constraint.expected, value);
}

/// A number key.
template <class P>
Field<P> number_field(std::string key, double P::*member, std::string doc, Constraint constraint = {}) {
  return {{key, default_text(P{}.*member), constraint.summary, std::move(doc)},
          [key, member](SectionReader section, P& p) { p.*member = section.number(key, p.*member); },
          [member, constraint](const P& p) { return violation(constraint, p.*member); }};
}

/// A number key whose member is unset by default, the default then computed from members read
/// before it (`fallback`); `shown_default` says how, for the docs ("0.1/step_size").
template <class P>
Field<P> number_field(std::string key, std::optional<double> P::*member, std::function<double(const P&)> fallback,
                std::string shown_default, std::string doc, Constraint constraint = {}) {
  return {{key, std::move(shown_default), constraint.summary, std::move(doc)},
          [key, member, fallback](SectionReader section, P& p) {
            p.*member = section.number(key, (p.*member).value_or(fallback(p)));
          },
          [member, fallback, constraint](const P& p) { return violation(constraint, (p.*member).value_or(fallback(p))); }};
}

/// An integer key. Its constraint is checked on the value as read, before it is stored in an
/// unsigned member, where -1 would wrap.
template <class P, class Integer>
Field<P> integer_field(std::string key, Integer P::*member, std::string doc, Constraint constraint = {}) {
  return {{key, default_text(static_cast<std::int64_t>(P{}.*member)), constraint.summary, std::move(doc)},
          [key, member, constraint](SectionReader section, P& p) {
            const std::int64_t value = section.integer(key, static_cast<std::int64_t>(p.*member));
            if (const std::string problem = violation(constraint, static_cast<double>(value)); !problem.empty())
              throw Error(fmt::format("{}: {}", section.describe(key), problem));
            p.*member = static_cast<Integer>(value);
          },
          [member, constraint](const P& p) { return violation(constraint, static_cast<double>(p.*member)); }};
}

/// A true/false key.
template <class P>
Field<P> flag_field(std::string key, bool P::*member, std::string doc) {
  return {{key, default_text(P{}.*member), "", std::move(doc)},
          [key, member](SectionReader section, P& p) { p.*member = section.flag(key, p.*member); }};
}

/// "a, b, c": the names of a choice key's values.
template <class Value>
std::string choice_names(const std::vector<std::pair<std::string, Value>>& choices) {
  std::vector<std::string> names;
  for (const auto& choice : choices) names.push_back(choice.first);
  return fmt::format("{}", fmt::join(names, ", "));
}

/// The value of `choices` that `section` names for `key`, `in_force` when the key is unset; an
/// unknown name is an Error naming the key, where it was set and the known names. choice_field
/// reads with it; a choice whose default depends on another key calls it itself.
template <class Value>
Value read_choice(SectionReader section, const std::string& key,
                  const std::vector<std::pair<std::string, Value>>& choices, const Value& in_force) {
  std::string in_force_name;
  for (const auto& [name, value] : choices)
    if (value == in_force) in_force_name = name;
  const std::string wanted = section.text(key, in_force_name);
  for (const auto& [name, value] : choices)
    if (name == wanted) return value;
  throw Error(fmt::format("{}: unknown {} '{}'; known: {}", section.describe(key), key, wanted, choice_names(choices)));
}

/// A key naming one of `choices` (a string in the file, an enum or a bool in P).
template <class P, class Value>
Field<P> choice_field(std::string key, Value P::*member, std::vector<std::pair<std::string, Value>> choices, std::string doc) {
  std::string shown_default;
  for (const auto& [name, value] : choices)
    if (value == P{}.*member) shown_default = name;
  return {{key, shown_default, choice_names(choices), std::move(doc)},
          [key, member, choices](SectionReader section, P& p) { p.*member = read_choice(section, key, choices, p.*member); }};
}

/// `table`, the table of the struct P holds as `part`, as keys of P: `nested<P>(&P::schedule, table)`
/// (P named, so a member of P's base converts).
template <class P, class Part>
FieldTable<P> nested(std::type_identity_t<Part P::*> part, const FieldTable<Part>& table) {
  FieldTable<P> lifted;
  for (const auto& field : table) {
    Field<P> outer{field.shown, [part, read = field.read](SectionReader section, P& p) { read(section, p.*part); }};
    if (field.problem) outer.problem = [part, problem = field.problem](const P& p) { return problem(p.*part); };
    lifted.push_back(std::move(outer));
  }
  return lifted;
}

/// The tables one after the other: the order in which the keys are read (the first bad key is
/// the one reported).
template <class P>
FieldTable<P> concat(std::initializer_list<FieldTable<P>> tables) {
  FieldTable<P> all;
  for (const auto& table : tables) all.insert(all.end(), table.begin(), table.end());
  return all;
}

/// The struct `section` describes, read from `start` (P's defaults, with those that depend on the
/// model or the data filled in): each key read in the table's order and checked as soon as it is
/// read; the error names the key and where it was set.
template <class P>
P read_fields_from(const FieldTable<P>& table, SectionReader section, P start) {
  for (const auto& field : table) {
    field.read(section, start);
    if (!field.problem) continue;
    if (const std::string problem = field.problem(start); !problem.empty())
      throw Error(fmt::format("{}: {}", section.describe(field.shown.key), problem));
  }
  return start;
}

/// An integer key whose member is unset by default, the default then depending on the model:
/// from_settings seeds the member with it before reading (read_fields_from), so that the manifest
/// records it, and `shown_default` says what it is, for the docs ("min(100, N)"). An unseeded
/// member stays unset unless the key is given. Its constraint is checked on the value as read.
template <class P, class Integer>
Field<P> seeded_integer_field(std::string key, std::optional<Integer> P::*member, std::string shown_default,
                              std::string doc, Constraint constraint) {
  return {{key, std::move(shown_default), constraint.summary, std::move(doc)},
          [key, member, constraint](SectionReader section, P& p) {
            if (!(p.*member) && !section.contains(key)) return;
            const std::int64_t value = section.integer(key, static_cast<std::int64_t>((p.*member).value_or(0)));
            if (const std::string problem = violation(constraint, static_cast<double>(value)); !problem.empty())
              throw Error(fmt::format("{}: {}", section.describe(key), problem));
            p.*member = static_cast<Integer>(value);
          },
          [member, constraint](const P& p) {
            return p.*member ? violation(constraint, static_cast<double>(*(p.*member))) : std::string();
          }};
}

/// A true/false key whose member is unset by default, the default then computed from members read
/// before it (`fallback`); `shown_default` says how, for the docs.
template <class P>
Field<P> fallback_flag_field(std::string key, std::optional<bool> P::*member, std::function<bool(const P&)> fallback,
                             std::string shown_default, std::string doc) {
  return {{key, std::move(shown_default), "", std::move(doc)},
          [key, member, fallback](SectionReader section, P& p) {
            p.*member = section.flag(key, (p.*member).value_or(fallback(p)));
          }};
}

/// The struct `section` describes: each key read in the table's order and checked as soon as it is
/// read; the error names the key and where it was set.
template <class P>
P read_fields(const FieldTable<P>& table, SectionReader section) {
  return read_fields_from(table, section, P{});
}

/// The same checks on a struct built in code: "{component}: {key}: expected …, found …".
template <class P>
void check_fields(const FieldTable<P>& table, const P& parameters, std::string_view component) {
  for (const auto& field : table) {
    if (!field.problem) continue;
    if (const std::string problem = field.problem(parameters); !problem.empty())
      throw Error(fmt::format("{}: {}: {}", component, field.shown.key, problem));
  }
}

template <class P>
std::vector<KeyDoc> key_docs(const FieldTable<P>& table) {
  std::vector<KeyDoc> docs;
  for (const auto& field : table) docs.push_back(field.shown);
  return docs;
}

inline std::vector<std::string> keys_of(const std::vector<KeyDoc>& docs) {
  std::vector<std::string> keys;
  for (const auto& doc : docs) keys.push_back(doc.key);
  return keys;
}

template <class P>
std::vector<std::string> keys_of(const FieldTable<P>& table) {
  return keys_of(key_docs(table));
}

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

Constraint positive() {
  return {"> 0", "a number > 0", [](double value) { return value > 0.0; }};
}

Constraint at_least(std::int64_t minimum) {
  return {fmt::format(">= {}", minimum), fmt::format("an integer >= {}", minimum),
          [minimum](double value) { return value >= static_cast<double>(minimum); }};
}

std::string default_text(double value) {
  if (value == 0.0 || (std::abs(value) >= 1e-3 && std::abs(value) < 1e6)) return fmt::format("{}", value);
  // The shortest scientific form that reads back as the same number: 1e-4, 2.5e-7.
  for (int digits = 0;; ++digits) {
    const std::string scientific = fmt::format("{:.{}e}", value, digits);
    if (digits < 17 && std::stod(scientific) != value) continue;
    const auto exponent = scientific.find('e');
    return fmt::format("{}e{}", scientific.substr(0, exponent), std::stoi(scientific.substr(exponent + 1)));
  }
}

}  // namespace sgmcmc
