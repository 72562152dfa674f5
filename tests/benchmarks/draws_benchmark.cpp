// Writing one draw of a large model (issue #23 item 1): the Stan CSV row a chain writes today,
// next to the same values written as raw 64-bit doubles (what a binary draws format would cost),
// at d = 138,120 = 20 topics × 6,906 words, an lda draw on KOS. Printed figures, not a timed test:
//
//   build/release/tests/benchmarks/draws_benchmark
//
// Values: topic-word probabilities as a chain holds them, Dirichlet-like (exp of a normal,
// normalised per topic), so the text has the 17 significant digits of a shortest round-trip
// representation that real draws have. Files go to the system's temporary folder and are removed.
// Printed: milliseconds and bytes per draw, and both as ratios to the CSV row's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <fmt/format.h>

import sgmcmc;

namespace {

constexpr std::size_t topics = 20, words = 6906, dimension = topics * words;

std::vector<double> topic_word_draw() {
  sgmcmc::Rng rng(7, 0);
  std::vector<double> theta(dimension);
  for (std::size_t k = 0; k < topics; ++k) {
    const std::span row(theta.data() + k * words, words);
    double sum = 0;
    for (double& x : row) sum += x = std::exp(2 * rng.normal());
    for (double& x : row) x /= sum;
  }
  return theta;
}

std::filesystem::path scratch(std::string_view name) {
  return std::filesystem::temp_directory_path() / ("sgmcmc-draws-benchmark-" + std::string(name));
}

/// A writer's figures: the best of `repetitions` runs of `draws` rows, and the bytes of a row.
struct Figures {
  double seconds_per_draw = 1e300;
  std::uint64_t bytes_per_draw = 0;
};

template <class WriteRows>
Figures measure(WriteRows write_rows) {
  constexpr std::uint64_t draws = 40, repetitions = 3;
  Figures figures;
  for (std::uint64_t r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t bytes = write_rows(draws);
    const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    figures.seconds_per_draw = std::min(figures.seconds_per_draw, seconds.count() / draws);
    figures.bytes_per_draw = bytes / draws;
  }
  return figures;
}

/// Stan CSV rows as a chain writes them (StanCsvWriter, shortest round-trip digits).
Figures csv(const std::vector<double>& theta) {
  const std::vector<std::string> names(dimension, "theta"), sampler{"lp__", "accept_stat__", "stepsize__"};
  const double sampler_values[] = {0, 1, 1e-4};
  const auto path = scratch("csv");
  auto figures = measure([&](std::uint64_t draws) {
    sgmcmc::StanCsvWriter writer(path, {}, sampler, names);
    const auto header = writer.flush().length;
    for (std::uint64_t i = 0; i < draws; ++i) writer.write_draw(sampler_values, theta);
    const auto bytes = writer.flush().length - header;
    writer.close();
    return bytes;
  });
  std::filesystem::remove(path);
  return figures;
}

/// The same values as raw little-endian doubles through the same buffered file.
Figures binary(const std::vector<double>& theta) {
  const auto path = scratch("bin");
  const std::string_view row(reinterpret_cast<const char*>(theta.data()), theta.size() * sizeof(double));
  auto figures = measure([&](std::uint64_t draws) {
    sgmcmc::OutputFile file(path);
    for (std::uint64_t i = 0; i < draws; ++i) file.write(row);
    const auto bytes = file.flush().length;
    file.close();
    return bytes;
  });
  std::filesystem::remove(path);
  return figures;
}

}  // namespace

int main() {
  const auto theta = topic_word_draw();
  const Figures text = csv(theta), raw = binary(theta);
  fmt::print("one draw of d = {} (lda, K = {}, W = {}), best of 3 runs of 40 draws\n", dimension, topics, words);
  fmt::print("{:<8} {:>12} {:>14} {:>10} {:>10}\n", "format", "ms per draw", "bytes per draw", "time/csv", "size/csv");
  for (const auto& [name, figures] : {std::pair{"csv", text}, std::pair{"binary", raw}})
    fmt::print("{:<8} {:>12.3f} {:>14} {:>10.3f} {:>10.3f}\n", name, 1e3 * figures.seconds_per_draw, figures.bytes_per_draw,
               figures.seconds_per_draw / text.seconds_per_draw,
               static_cast<double>(figures.bytes_per_draw) / static_cast<double>(text.bytes_per_draw));
}
