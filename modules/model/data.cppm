// What every data-backed model plugin needs besides its likelihood: how many rows a setting asks
// for (a count or a fraction), a held-out split and a subsample drawn with the run's seed, and the
// running posterior-predictive average behind the held-out metrics of Baker et al. (2019, §5).
module;
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>
#include <fmt/format.h>
#include <unistd.h>
export module sgmcmc.data;
import sgmcmc.error;
import sgmcmc.random;
import sgmcmc.settings;
export import sgmcmc.state;

export namespace sgmcmc {

/// The number of rows a setting asks for out of `rows`: an integer is a count (`test_size = 500`),
/// a float a fraction rounded to the nearest row (`test_size = 0.2`). Outside [minimum, maximum]
/// is an error naming the key and where it was set. Absent, `fallback_fraction` of the rows.
std::size_t row_count(SectionReader settings, const std::string& key, double fallback_fraction, std::size_t rows,
                      std::size_t minimum, std::size_t maximum);

/// "sgmcmc: note: PATH: N rows read" on stderr (with "after a header line" when one was skipped):
/// what a data reader found, so that rows lost to a cut file or to a first line taken for a
/// header show before any chain runs.
void note_rows_read(std::string_view path, std::size_t rows, bool header_skipped);

/// The Error for an allocation of `count` × `bytes_each` bytes for `what` that failed.
Error allocation_error(std::string_view what, std::size_t count, std::size_t bytes_each);
/// The memory sgmcmc plans with, in bytes (0 if unknown): the machine's physical memory, or less
/// where the environment variable SGMCMC_MEMORY_LIMIT_MB says so (a shared machine, a batch job's
/// share, the fuzz targets). A request beyond it cannot be met, and is refused before it is made:
/// AddressSanitizer's allocator aborts on such a request rather than throwing std::bad_alloc, and
/// an overcommitting kernel may grant it and fail later. An SGMCMC_MEMORY_LIMIT_MB that is not a
/// positive whole number is an Error naming it.
std::size_t memory_budget_bytes();
/// The file a setting names (model.data, model.test_data), or none when it is not set; an empty
/// name is refused naming the key (opened as it is, the error could name no file at all).
std::optional<std::string> file_setting(SectionReader settings, const std::string& key);
/// Refuses `count` items of `bytes_each` bytes beyond the memory budget before anything of that
/// size is allocated; `what` names the settings that make the size ("model.n × model.dim
/// simulated values"). `count` is a double so that a product of absurd settings cannot overflow.
void require_memory(double count, std::size_t bytes_each, std::string_view what);
/// The budget in words, for messages: "this machine's 25.3 GB of memory", or "the 1.05 GB that
/// SGMCMC_MEMORY_LIMIT_MB = 1000 allows".
std::string memory_budget_description();

/// `values` ← `rows` × `columns` copies of `fill`. A size read from a data file can be absurd (a
/// typo in a header, a corrupt index): when memory runs out, the Error says what was being
/// allocated and how big, where a bare std::bad_alloc would say neither.
template <class T>
void allocate(std::vector<T>& values, std::size_t rows, std::size_t columns, std::string_view what, const T& fill = T{}) {
  if (columns != 0 && rows > values.max_size() / columns) throw allocation_error(what, values.max_size(), sizeof(T));
  const std::size_t memory = memory_budget_bytes();
  if (memory != 0 && rows * columns > memory / sizeof(T))
    throw Error(fmt::format("{}, more than {}", allocation_error(what, rows * columns, sizeof(T)).what(),
                            memory_budget_description()));
  try {
    values.assign(rows * columns, fill);
  } catch (const std::bad_alloc&) {
    throw allocation_error(what, rows * columns, sizeof(T));
  } catch (const std::length_error&) {
    throw allocation_error(what, rows * columns, sizeof(T));
  }
}

/// `count` distinct rows of 0..rows-1 drawn uniformly (a partial Fisher–Yates shuffle) and the rest.
/// `chosen` is in draw order, `rest` in file order (sequential passes stay sequential).
struct RowSplit {
  std::vector<std::size_t> chosen;
  std::vector<std::size_t> rest;
};
RowSplit split_rows(std::size_t rows, std::size_t count, Rng& rng);

/// split_rows' `chosen` alone, the same rows from the same draws, in O(count) memory rather than
/// O(rows): the shuffle keeps only the positions it has moved. For a data-parallel rank that
/// streams a file of `rows` rows and keeps few of them.
std::vector<std::size_t> chosen_rows(std::size_t rows, std::size_t count, Rng& rng);

/// The running posterior-predictive average of a held-out set: after S draws, per test point j,
/// log[(1/S) Σ_s p(y*_j | θ_s)] (average the probabilities, then take logs; Baker et al. 2019, §5.1), kept in
/// log space so that tiny probabilities don't underflow.
class PredictiveAverage {
public:
  explicit PredictiveAverage(std::size_t points) : log_sum_(points, -INFINITY) {}
  /// Adds one draw's log p(y*_j | θ) for every test point; returns the mean over j of the running
  /// log predictive density (NaN for an empty test set).
  double add(std::span<const double> log_densities);
  std::uint64_t draws() const { return draws_; }
  /// Forgets every draw added (Workspace::restart_averages).
  void restart() {
    std::fill(log_sum_.begin(), log_sum_.end(), -INFINITY);
    draws_ = 0;
  }
  /// The running sums and the number of draws, for checkpoints.
  void save_state(StateWriter& out) const;
  void restore_state(StateReader& in);

private:
  std::vector<double> log_sum_;
  std::uint64_t draws_ = 0;
};

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

void note_rows_read(std::string_view path, std::size_t rows, bool header_skipped) {
  fmt::print(stderr, "sgmcmc: note: {}: {} row{} read{}\n", path, rows, rows == 1 ? "" : "s",
             header_skipped ? " after a header line" : "");
}

namespace {

constexpr const char* memory_limit_variable = "SGMCMC_MEMORY_LIMIT_MB";

std::size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size) : 0;
}

/// SGMCMC_MEMORY_LIMIT_MB in bytes, or nothing when it is not set.
std::optional<std::size_t> memory_limit_bytes() {
  const char* text = std::getenv(memory_limit_variable);
  if (!text) return std::nullopt;
  const std::string_view view(text);
  std::size_t megabytes = 0;
  const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), megabytes);
  if (error != std::errc() || end != view.data() + view.size() || megabytes == 0 || megabytes > SIZE_MAX / 1'048'576)
    throw Error(fmt::format("environment variable {} = '{}': expected a positive whole number of megabytes",
                            memory_limit_variable, view));
  return megabytes * 1'048'576;
}

}  // namespace

std::size_t memory_budget_bytes() {
  const std::size_t physical = physical_memory_bytes();
  const auto limit = memory_limit_bytes();
  if (!limit) return physical;
  return physical == 0 ? *limit : std::min(physical, *limit);
}

std::string memory_budget_description() {
  const std::size_t budget = memory_budget_bytes();
  if (const auto limit = memory_limit_bytes(); limit && budget == *limit)
    return fmt::format("the {:.3g} GB that {} = {} allows", static_cast<double>(budget) / 1e9, memory_limit_variable,
                       *limit / 1'048'576);
  return fmt::format("this machine's {:.3g} GB of memory", static_cast<double>(budget) / 1e9);
}

std::optional<std::string> file_setting(SectionReader settings, const std::string& key) {
  auto path = settings.optional_text(key);
  if (path && path->empty()) throw Error(fmt::format("{}: an empty file name; expected the path of a file", settings.describe(key)));
  return path;
}

void require_memory(double count, std::size_t bytes_each, std::string_view what) {
  const double bytes = count * static_cast<double>(bytes_each), budget = static_cast<double>(memory_budget_bytes());
  if (budget > 0 && bytes > budget)
    throw Error(fmt::format("{}: {:.4g} of {} bytes each, {:.3g} GB, more than {}", what, count, bytes_each, bytes / 1e9,
                            memory_budget_description()));
}

Error allocation_error(std::string_view what, std::size_t count, std::size_t bytes_each) {
  const double bytes = static_cast<double>(count) * static_cast<double>(bytes_each);
  return Error(fmt::format("{}: cannot allocate {} × {} bytes ({:.3g} GB): out of memory", what, count, bytes_each, bytes / 1e9));
}

std::size_t row_count(SectionReader settings, const std::string& key, double fallback_fraction, std::size_t rows,
                      std::size_t minimum, std::size_t maximum) {
  double count = std::round(fallback_fraction * static_cast<double>(rows));
  if (settings.contains(key)) {
    const bool is_count = std::holds_alternative<std::int64_t>(settings.entries().at(key).value);
    // Read as what it is, so that the resolved configuration records a count as an integer: a
    // count of 1 recorded as 1.0 would read back, on --resume, as the fraction 1 (every row).
    const double number = is_count ? static_cast<double>(settings.integer(key, 0)) : settings.number(key, 0.0);
    if (!is_count && (number < 0.0 || number > 1.0))
      throw Error(fmt::format("{}: a fraction must lie in [0, 1], found {} (write a whole number for a count of rows)",
                              settings.describe(key), number));
    count = is_count ? number : std::round(number * static_cast<double>(rows));
  } else {
    settings.number(key, fallback_fraction);  // recorded in the resolved configuration
  }
  if (count < static_cast<double>(minimum) || count > static_cast<double>(maximum))
    throw Error(fmt::format("{}: asks for {} of the {} rows; expected between {} and {}", settings.describe(key), count,
                            rows, minimum, maximum));
  return static_cast<std::size_t>(count);
}

std::vector<std::size_t> chosen_rows(std::size_t rows, std::size_t count, Rng& rng) {
  // split_rows' partial Fisher–Yates shuffle of 0..rows-1: step k swaps positions k and
  // j = k + U{0..rows-k-1} and draws what lands at k. Only positions that were swapped hold other
  // than their own index, at most one more per step (tests/unit check both draw the same rows).
  std::unordered_map<std::size_t, std::size_t> moved;
  const auto at = [&](std::size_t position) {
    const auto found = moved.find(position);
    return found == moved.end() ? position : found->second;
  };
  std::vector<std::size_t> chosen;
  chosen.reserve(count);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t j = k + rng.index(rows - k);
    chosen.push_back(at(j));
    moved[j] = at(k);  // position k is never read again
  }
  return chosen;
}

RowSplit split_rows(std::size_t rows, std::size_t count, Rng& rng) {
  std::vector<std::size_t> order(rows);
  std::iota(order.begin(), order.end(), std::size_t{0});
  for (std::size_t k = 0; k < count; ++k) std::swap(order[k], order[k + rng.index(rows - k)]);
  RowSplit split;
  split.chosen.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count));
  split.rest.assign(order.begin() + static_cast<std::ptrdiff_t>(count), order.end());
  std::sort(split.rest.begin(), split.rest.end());
  return split;
}

void PredictiveAverage::save_state(StateWriter& out) const {
  out.section("predictive average");
  out.numbers(log_sum_);
  out.count(draws_);
}

void PredictiveAverage::restore_state(StateReader& in) {
  in.section("predictive average");
  in.numbers(log_sum_, log_sum_.size());
  draws_ = in.count();
}

double PredictiveAverage::add(std::span<const double> log_densities) {
  draws_ += 1;
  const double log_draws = std::log(static_cast<double>(draws_));
  double total = 0.0;
  for (std::size_t j = 0; j < log_sum_.size(); ++j) {
    double& sum = log_sum_[j];
    const double term = log_densities[j];
    const double high = std::max(sum, term);
    if (high != -INFINITY) sum = high + std::log1p(std::exp(std::min(sum, term) - high));  // log(e^sum + e^term)
    total += sum - log_draws;
  }
  return log_sum_.empty() ? std::nan("") : total / static_cast<double>(log_sum_.size());
}

}  // namespace sgmcmc
