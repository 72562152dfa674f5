// Settings: the keys of one section of a run's configuration ([model], [estimator], ...), each
// with the place it came from, read through typed getters. A component reads all its keys when
// it is built; any key nobody read is then reported as unknown, with a did-you-mean.
module;
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.settings;
import sgmcmc.error;

export namespace sgmcmc {

/// A value of a key: TOML's booleans, integers, floats and strings, arrays of numbers (integers
/// in an array are read as numbers) and arrays of strings. An empty array, which has no element
/// type, is held as an empty array of numbers and read as either.
using Value = std::variant<bool, std::int64_t, double, std::string, std::vector<double>, std::vector<std::string>>;

struct Entry {
  Value value;
  std::string origin;  // "presets/demo.toml:12" or "--set model.n=10": where the user can fix it
};

/// Levenshtein distance, for did-you-mean suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The closest of `candidates` to `word`, or "" when none is close enough to be a likely typo.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

class Settings {
public:
  Settings() = default;
  explicit Settings(std::string section) : section_(std::move(section)) {}

  const std::string& section() const { return section_; }
  void set(const std::string& key, Entry entry) { entries_[key] = std::move(entry); }
  bool contains(const std::string& key) const { return entries_.contains(key); }
  const std::map<std::string, Entry>& entries() const { return entries_; }

  // Typed getters. Each marks `key` as known. A present key of the wrong type is an error that
  // names the key, where it was set, and the type expected; so is a number that is not finite.
  double number(const std::string& key, double fallback) const;
  std::int64_t integer(const std::string& key, std::int64_t fallback) const;
  bool flag(const std::string& key, bool fallback) const;
  std::string text(const std::string& key, const std::string& fallback) const;
  std::optional<std::string> optional_text(const std::string& key) const;
  std::optional<double> optional_number(const std::string& key) const;
  /// An array of numbers; with `length`, of exactly that many (the error names the length found).
  std::vector<double> numbers(const std::string& key, const std::vector<double>& fallback,
                              std::optional<std::size_t> length = std::nullopt) const;
  /// A number or an array of numbers, as given (one number stays one, recorded as a number).
  std::vector<double> number_or_numbers(const std::string& key, double fallback) const;
  /// An array of strings.
  std::vector<std::string> texts(const std::string& key, const std::vector<std::string>& fallback) const;

  /// An integer >= minimum; the error says which bound was crossed.
  std::int64_t integer_at_least(const std::string& key, std::int64_t fallback, std::int64_t minimum) const;
  /// A number > 0.
  double positive_number(const std::string& key, double fallback) const;
  /// number_or_numbers with every number > 0; the error names the first that is not.
  std::vector<double> positive_number_or_numbers(const std::string& key, double fallback) const;

  /// "section.key (set at origin)": how errors name a key.
  std::string describe(const std::string& key) const;

  /// Throws for the first key that no getter asked for, suggesting the closest known key, unless
  /// it is one of `keys_of_alternatives` (a key of another estimator, say, than the one chosen):
  /// such keys are returned as warnings ("estimator.batch_size is not used by ...").
  std::vector<std::string> reject_unknown_keys(const std::vector<std::string>& keys_of_alternatives = {}) const;

  /// Every key a getter asked for, with the value in force (the default where none was set):
  /// the resolved configuration written to a run's manifest.
  const std::map<std::string, Value>& resolved() const { return resolved_; }

  /// Takes the keys `reader` was asked for, and their values in force, as asked of this section
  /// too: for a section with the same entries whose reader (a model shared between runs) has
  /// already read them from another copy.
  void adopt_reads(const Settings& reader) const {
    known_.insert(reader.known_.begin(), reader.known_.end());
    for (const auto& [key, value] : reader.resolved_) resolved_.insert({key, value});
  }

private:
  const Entry* find(const std::string& key) const;
  template <class T>
  T remember(const std::string& key, T value) const {
    resolved_[key] = value;
    return value;
  }

  std::string section_;
  std::map<std::string, Entry> entries_;
  mutable std::set<std::string> known_;
  mutable std::map<std::string, Value> resolved_;
};

/// A run's configuration: one Settings per section. Parsed from TOML by sgmcmc.config.
inline constexpr std::array<const char*, 6> config_sections = {"model", "estimator", "integrator",
                                                               "corrector", "run", "output"};

struct RunConfig {
  std::map<std::string, Settings> sections;  // one per name in config_sections, maybe empty
  const Settings& operator[](const std::string& name) const { return sections.at(name); }
  Settings& operator[](const std::string& name) { return sections.at(name); }
};

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

namespace {
std::string type_name(const Value& value) {
  constexpr const char* names[] = {"a boolean", "an integer", "a number", "a string", "an array of numbers",
                                   "an array of strings"};
  return names[value.index()];
}
}  // namespace

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  // Up to half the word may differ ("noise_sigma" → "noise_sd"); short words get 2 edits.
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 2) + 1;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

const Entry* Settings::find(const std::string& key) const {
  known_.insert(key);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::string Settings::describe(const std::string& key) const {
  auto it = entries_.find(key);
  std::string name = section_.empty() ? key : section_ + "." + key;
  return it == entries_.end() ? name : fmt::format("{}: {}", it->second.origin, name);
}

namespace {
[[noreturn]] void wrong_type(const std::string& where, const Value& value, const std::string& expected) {
  throw Error(fmt::format("{}: expected {}, found {}", where, expected, type_name(value)));
}
}  // namespace

double Settings::number(const std::string& key, double fallback) const {
  auto value = optional_number(key);
  return remember(key, value ? *value : fallback);
}

std::optional<double> Settings::optional_number(const std::string& key) const {
  const Entry* entry = find(key);
  if (!entry) return std::nullopt;
  // No setting takes an infinity or a NaN: `step_size = inf` would run a chain that diverges at
  // once, and a NaN passes every `>` check as false, whichever way the check is written.
  if (auto* real = std::get_if<double>(&entry->value); real && !std::isfinite(*real))
    throw Error(fmt::format("{}: expected a finite number, found {}", describe(key), *real));
  if (auto* real = std::get_if<double>(&entry->value)) return remember(key, *real);
  if (auto* whole = std::get_if<std::int64_t>(&entry->value)) return remember(key, static_cast<double>(*whole));
  wrong_type(describe(key), entry->value, "a number");
}

std::vector<double> Settings::numbers(const std::string& key, const std::vector<double>& fallback,
                                      std::optional<std::size_t> length) const {
  const Entry* entry = find(key);
  if (!entry) return remember(key, fallback);
  const auto* array = std::get_if<std::vector<double>>(&entry->value);
  if (!array)
    wrong_type(describe(key), entry->value,
               length ? fmt::format("an array of {} numbers", *length) : std::string("an array of numbers"));
  if (length && array->size() != *length)
    throw Error(fmt::format("{}: expected an array of {} numbers, found {}", describe(key), *length, array->size()));
  return remember(key, *array);
}

std::vector<double> Settings::number_or_numbers(const std::string& key, double fallback) const {
  const Entry* entry = find(key);
  if (entry && std::holds_alternative<std::vector<double>>(entry->value)) return numbers(key, {});
  if (entry && !std::holds_alternative<double>(entry->value) && !std::holds_alternative<std::int64_t>(entry->value))
    wrong_type(describe(key), entry->value, "a number or an array of numbers");
  return {number(key, fallback)};
}

std::vector<std::string> Settings::texts(const std::string& key, const std::vector<std::string>& fallback) const {
  const Entry* entry = find(key);
  if (!entry) return remember(key, fallback);
  if (auto* strings = std::get_if<std::vector<std::string>>(&entry->value)) return remember(key, *strings);
  if (auto* empty = std::get_if<std::vector<double>>(&entry->value); empty && empty->empty())
    return remember(key, std::vector<std::string>{});
  wrong_type(describe(key), entry->value, "an array of strings");
}

std::int64_t Settings::integer(const std::string& key, std::int64_t fallback) const {
  const Entry* entry = find(key);
  if (!entry) return remember(key, fallback);
  if (auto* whole = std::get_if<std::int64_t>(&entry->value)) return remember(key, *whole);
  wrong_type(describe(key), entry->value, "an integer");
}

bool Settings::flag(const std::string& key, bool fallback) const {
  const Entry* entry = find(key);
  if (!entry) return remember(key, fallback);
  if (auto* boolean = std::get_if<bool>(&entry->value)) return remember(key, *boolean);
  wrong_type(describe(key), entry->value, "true or false");
}

std::string Settings::text(const std::string& key, const std::string& fallback) const {
  auto value = optional_text(key);
  return remember(key, value ? *value : fallback);
}

std::optional<std::string> Settings::optional_text(const std::string& key) const {
  const Entry* entry = find(key);
  if (!entry) return std::nullopt;
  if (auto* string = std::get_if<std::string>(&entry->value)) return remember(key, *string);
  wrong_type(describe(key), entry->value, "a string");
}

std::int64_t Settings::integer_at_least(const std::string& key, std::int64_t fallback,
                                        std::int64_t minimum) const {
  const std::int64_t value = integer(key, fallback);
  if (value < minimum)
    throw Error(fmt::format("{}: expected an integer >= {}, found {}", describe(key), minimum, value));
  return value;
}

double Settings::positive_number(const std::string& key, double fallback) const {
  const double value = number(key, fallback);
  if (!(value > 0.0))
    throw Error(fmt::format("{}: expected a number > 0, found {}", describe(key), value));
  return value;
}

std::vector<double> Settings::positive_number_or_numbers(const std::string& key, double fallback) const {
  const std::vector<double> values = number_or_numbers(key, fallback);
  for (std::size_t j = 0; j < values.size(); ++j)
    if (!(values[j] > 0.0))
      throw Error(values.size() == 1
                      ? fmt::format("{}: expected a number > 0, found {}", describe(key), values[j])
                      : fmt::format("{}: expected numbers > 0, found {} at position {}", describe(key), values[j], j + 1));
  return values;
}

std::vector<std::string> Settings::reject_unknown_keys(const std::vector<std::string>& keys_of_alternatives) const {
  const std::vector<std::string> known(known_.begin(), known_.end());
  std::vector<std::string> unused;
  for (const auto& [key, entry] : entries_) {
    if (known_.contains(key)) continue;
    if (std::find(keys_of_alternatives.begin(), keys_of_alternatives.end(), key) != keys_of_alternatives.end()) {
      unused.push_back(fmt::format("{}: {}.{} is not used by {} '{}'", entry.origin, section_, key, section_,
                                   text("name", "")));
      continue;
    }
    std::string message = fmt::format("{}: unknown key '{}.{}'", entry.origin, section_, key);
    if (auto suggestion = closest_match(key, known); !suggestion.empty())
      message += fmt::format(" (did you mean '{}.{}'?)", section_, suggestion);
    else
      message += fmt::format(" (known keys of [{}]: {})", section_, fmt::join(known, ", "));
    throw Error(message);
  }
  return unused;
}

}  // namespace sgmcmc
