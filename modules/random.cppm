// Random streams. Every chain owns one stream derived from (seed, chain), so a chain's draws do
// not depend on which thread runs it or on how many chains run beside it.
module;
#include <cmath>
#include <cstdint>
#include <numbers>
#include <span>
#include <pcg_random.hpp>
export module sgmcmc.random;

export namespace sgmcmc {

class Rng {
public:
  /// PCG64 with `stream` selecting one of 2^63 non-overlapping sequences (O'Neill 2014).
  Rng(std::uint64_t seed, std::uint64_t stream) : engine_(seed, stream) {}

  /// Uniform on [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  /// Standard normal by Box–Muller, one value per call (no cached second value: the stream
  /// position is then a function of the number of calls alone, which checkpointing relies on).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

  void fill_normal(std::span<double> out) {
    for (double& x : out) x = normal();
  }

  /// Uniform integer in [0, n), unbiased (Lemire 2019, multiply and reject).
  std::uint64_t index(std::uint64_t n) {
    __uint128_t product = static_cast<__uint128_t>(engine_()) * n;
    auto low = static_cast<std::uint64_t>(product);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        product = static_cast<__uint128_t>(engine_()) * n;
        low = static_cast<std::uint64_t>(product);
      }
    }
    return static_cast<std::uint64_t>(product >> 64);
  }

  bool operator==(const Rng&) const = default;

private:
  pcg64 engine_;
};

/// Stream numbers by purpose, so that the data simulation of a model and the chains never share
/// a stream for the same seed.
inline constexpr std::uint64_t chain_stream(std::uint64_t chain) { return 2 * chain + 1; }
inline constexpr std::uint64_t data_stream = 0;

}  // namespace sgmcmc
