// Settings: the keys of one section of a run's configuration ([model], [estimator], ...), each
// with the place it came from; immutable once parsed. A component reads its keys through a
// SectionReader, which notes each key read in a record its caller owns; any key of the section
// that the record does not hold is then reported as unknown, with a did-you-mean.
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

/// The keys of one section and their values as the configuration gives them. Immutable once
/// parsed: reading a key (SectionReader) changes nothing here, so one Settings can be read by
/// several runs, threads and plans.
class Settings {
public:
  Settings() = default;
  explicit Settings(std::string section) : section_(std::move(section)) {}

  const std::string& section() const { return section_; }
  void set(const std::string& key, Entry entry) { entries_[key] = std::move(entry); }
  bool contains(const std::string& key) const { return entries_.contains(key); }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  /// The entry of `key`; nullptr when the section does not give it.
  const Entry* find(const std::string& key) const;

  /// "section.key (set at origin)": how errors name a key.
  std::string describe(const std::string& key) const;

private:
  std::string section_;
  std::map<std::string, Entry> entries_;
};

/// What the components read of one section: every key asked for, and the value in force (the
/// default where none was set). The unknown-key check compares a section's entries with it; the
/// manifest records `in_force` as the resolved configuration.
struct SectionReads {
  std::set<std::string> asked;
  std::map<std::string, Value> in_force;
  /// Takes `other`'s reads as made here too (values already recorded here are kept).
  void add(const SectionReads& other);
};

/// A section read through typed getters, each read noted in a SectionReads that the caller owns
/// (so that the caller, not the section, knows which keys were read). A view: cheap to copy,
/// valid while both outlive it. Without a record (the one-argument constructor), reads are not
/// noted: for a probe whose reads must not count.
class SectionReader {
public:
  SectionReader(const Settings& settings, SectionReads& reads) : settings_(&settings), reads_(&reads) {}
  explicit SectionReader(const Settings& settings) : settings_(&settings) {}

  const Settings& settings() const { return *settings_; }
  const std::string& section() const { return settings_->section(); }
  bool contains(const std::string& key) const { return settings_->contains(key); }
  const std::map<std::string, Entry>& entries() const { return settings_->entries(); }
  std::string describe(const std::string& key) const { return settings_->describe(key); }

  // Typed getters. Each notes `key` as read. A present key of the wrong type is an error that
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

  /// Notes `other`'s reads as reads of this section (a copy of it read with a value changed).
  void add_reads(const SectionReads& other) const {
    if (reads_) reads_->add(other);
  }

private:
  const Entry* find(const std::string& key) const;
  template <class T>
  T remember(const std::string& key, T value) const {
    if (reads_) reads_->in_force[key] = value;
    return value;
  }

  const Settings* settings_;
  SectionReads* reads_ = nullptr;
};

/// Throws for the first key of `settings` that `reads` does not hold, suggesting the closest key
/// read, unless it is one of `keys_of_alternatives` (a key of another estimator, say, than the one
/// chosen): such keys are returned as warnings ("estimator.batch_size is not used by ...").
std::vector<std::string> reject_unknown_keys(const Settings& settings, const SectionReads& reads,
                                             const std::vector<std::string>& keys_of_alternatives = {});

/// A run's configuration: one Settings per section. Parsed from TOML by sgmcmc.config.
inline constexpr std::array<const char*, 6> config_sections = {"model", "estimator", "integrator",
                                                               "corrector", "run", "output"};

struct RunConfig {
  std::map<std::string, Settings> sections;  // one per name in config_sections, maybe empty
  const Settings& operator[](const std::string& name) const { return sections.at(name); }
  Settings& operator[](const std::string& name) { return sections.at(name); }
};

/// What was read of each section of a run's configuration, by section name.
using ConfigReads = std::map<std::string, SectionReads>;

/// A run's configuration read section by section, the reads noted in a ConfigReads the caller
/// owns. A view, as SectionReader.
class ConfigReader {
public:
  ConfigReader(const RunConfig& config, ConfigReads& reads) : config_(&config), reads_(&reads) {}
  /// Section `name` (it must exist, as RunConfig's operator[]), its reads noted under `name`.
  SectionReader operator[](const std::string& name) const { return {config_->sections.at(name), (*reads_)[name]}; }
  const RunConfig& config() const { return *config_; }
  ConfigReads& reads() const { return *reads_; }

private:
  const RunConfig* config_;
  ConfigReads* reads_;
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
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void SectionReads::add(const SectionReads& other) {
  asked.insert(other.asked.begin(), other.asked.end());
  in_force.insert(other.in_force.begin(), other.in_force.end());
}

const Entry* SectionReader::find(const std::string& key) const {
  if (reads_) reads_->asked.insert(key);
  return settings_->find(key);
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

double SectionReader::number(const std::string& key, double fallback) const {
  auto value = optional_number(key);
  return remember(key, value ? *value : fallback);
}

std::optional<double> SectionReader::optional_number(const std::string& key) const {
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

std::vector<double> SectionReader::numbers(const std::string& key, const std::vector<double>& fallback,
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

std::vector<double> SectionReader::number_or_numbers(const std::string& key, double fallback) const {
  const Entry* entry = find(key);
  if (entry && std::holds_alternative<std::vector<double>>(entry->value)) return numbers(key, {});
  if (entry && !std::holds_alternative<double>(entry->value) && !std::holds_alternative<std::int64_t>(entry->value))
    wrong_type(describe(key), entry->value, "a number or an array of numbers");
  return {number(key, fallback)};
}

std::vector<std::string> SectionReader::texts(const std::string& key, const std::vector<std::string>& fallback) const {
  const Entry* entry = find(key);
  if (!entry) return remember(key, fallback);
  if (auto* strings = std::get_if<std::vector<std::string>>(&entry->value)) return remember(key, *strings);
  if (auto* empty = std::get_if<std::vector<double>>(&entry->value); empty && empty->empty())
    return remember(key, std::vector<std::string>{});
  wrong_type(describe(key), entry->value, "an array of strings");
}

std::int64_t SectionReader::integer(const std::string& key, std::int64_t fallback) const {
  const Entry* entry = find(key);
  if (!entry) return remember(key, fallback);
  if (auto* whole = std::get_if<std::int64_t>(&entry->value)) return remember(key, *whole);
  wrong_type(describe(key), entry->value, "an integer");
}

bool SectionReader::flag(const std::string& key, bool fallback) const {
  const Entry* entry = find(key);
  if (!entry) return remember(key, fallback);
  if (auto* boolean = std::get_if<bool>(&entry->value)) return remember(key, *boolean);
  wrong_type(describe(key), entry->value, "true or false");
}

std::string SectionReader::text(const std::string& key, const std::string& fallback) const {
  auto value = optional_text(key);
  return remember(key, value ? *value : fallback);
}

std::optional<std::string> SectionReader::optional_text(const std::string& key) const {
  const Entry* entry = find(key);
  if (!entry) return std::nullopt;
  if (auto* string = std::get_if<std::string>(&entry->value)) return remember(key, *string);
  wrong_type(describe(key), entry->value, "a string");
}

std::int64_t SectionReader::integer_at_least(const std::string& key, std::int64_t fallback,
                                        std::int64_t minimum) const {
  const std::int64_t value = integer(key, fallback);
  if (value < minimum)
    throw Error(fmt::format("{}: expected an integer >= {}, found {}", describe(key), minimum, value));
  return value;
}

double SectionReader::positive_number(const std::string& key, double fallback) const {
  const double value = number(key, fallback);
  if (!(value > 0.0))
    throw Error(fmt::format("{}: expected a number > 0, found {}", describe(key), value));
  return value;
}

std::vector<double> SectionReader::positive_number_or_numbers(const std::string& key, double fallback) const {
  const std::vector<double> values = number_or_numbers(key, fallback);
  for (std::size_t j = 0; j < values.size(); ++j)
    if (!(values[j] > 0.0))
      throw Error(values.size() == 1
                      ? fmt::format("{}: expected a number > 0, found {}", describe(key), values[j])
                      : fmt::format("{}: expected numbers > 0, found {} at position {}", describe(key), values[j], j + 1));
  return values;
}

std::vector<std::string> reject_unknown_keys(const Settings& settings, const SectionReads& reads,
                                             const std::vector<std::string>& keys_of_alternatives) {
  const std::string& section = settings.section();
  const std::vector<std::string> known(reads.asked.begin(), reads.asked.end());
  std::vector<std::string> unused;
  for (const auto& [key, entry] : settings.entries()) {
    if (reads.asked.contains(key)) continue;
    if (std::find(keys_of_alternatives.begin(), keys_of_alternatives.end(), key) != keys_of_alternatives.end()) {
      const Entry* name = settings.find("name");
      const auto* chosen = name ? std::get_if<std::string>(&name->value) : nullptr;
      unused.push_back(fmt::format("{}: {}.{} is not used by {} '{}'", entry.origin, section, key, section,
                                   chosen ? *chosen : std::string()));
      continue;
    }
    std::string message = fmt::format("{}: unknown key '{}.{}'", entry.origin, section, key);
    if (auto suggestion = closest_match(key, known); !suggestion.empty())
      message += fmt::format(" (did you mean '{}.{}'?)", section, suggestion);
    else
      message += fmt::format(" (known keys of [{}]: {})", section, fmt::join(known, ", "));
    throw Error(message);
  }
  return unused;
}

}  // namespace sgmcmc
