// Random streams. Every chain owns one stream derived from (seed, chain), so a chain's draws do
// not depend on which thread runs it or on how many chains run beside it.
module;
#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <span>
#include <pcg_random.hpp>
export module sgmcmc.random;
export import sgmcmc.state;

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

  /// The engine's whole state, its position and its stream (the multiplier is a constant), as
  /// four 64-bit words: a restored stream continues with the same numbers.
  void save_state(StateWriter& out) const {
    out.section("random stream");
    for (std::uint64_t word : engine_.words()) out.count(word);
  }
  void restore_state(StateReader& in) {
    in.section("random stream");
    std::array<std::uint64_t, 4> words;
    for (auto& word : words) word = in.count();
    engine_.set_words(words);
  }

private:
  /// pcg64 with its 128-bit state and increment readable and settable (pcg keeps them
  /// protected; its text stream operators for 128-bit integers do not resolve in a module).
  class Engine : public pcg64 {
  public:
    using pcg64::pcg64;
    std::array<std::uint64_t, 4> words() const {
      return {high(state_), low(state_), high(this->increment()), low(this->increment())};
    }
    void set_words(const std::array<std::uint64_t, 4>& words) {
      state_ = join(words[0], words[1]);
      this->inc_ = join(words[2], words[3]);
    }

  private:
    static std::uint64_t high(__uint128_t x) { return static_cast<std::uint64_t>(x >> 64); }
    static std::uint64_t low(__uint128_t x) { return static_cast<std::uint64_t>(x); }
    static __uint128_t join(std::uint64_t high, std::uint64_t low) { return (static_cast<__uint128_t>(high) << 64) | low; }
  };
  Engine engine_;
};

/// Stream numbers by purpose, so that the data simulation of a model and the chains never share
/// a stream for the same seed.
inline constexpr std::uint64_t chain_stream(std::uint64_t chain) { return 2 * chain + 1; }
inline constexpr std::uint64_t data_stream = 0;

}  // namespace sgmcmc
