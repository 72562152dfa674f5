// Random streams. Every chain owns one stream derived from (seed, chain), so a chain's draws do
// not depend on which thread runs it or on how many chains run beside it.
module;
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <span>
#include <pcg_random.hpp>
export module sgmcmc.random;
export import sgmcmc.state;

// The ziggurat's layers for the standard normal: built once, shared by every stream.
namespace ziggurat {

/// Marsaglia & Tsang (2000), "The Ziggurat Method for Generating Random Variables", J. Stat.
/// Software 5(8), with 256 layers. The area under f(x) = exp(-x²/2), x ≥ 0, is cut into 256
/// pieces of equal area v: layer 0 is the rectangle [0, r] × [0, f(r)] plus the tail x > r,
/// drawn as if it were a rectangle of width x[0] = v/f(r); layer i ≥ 1 is the rectangle
/// [0, x[i]] × [f(x[i]), f(x[i+1])], with x[1] = r > x[2] > ... > x[256] = 0. Equal areas give
///   x[i+1] = f⁻¹(f(x[i]) + v/x[i]),  v = r f(r) + ∫_r^∞ f = r f(r) + sqrt(π/2) erfc(r/√2).
/// For the fast path, in integers: the abscissa is x = u·x[i]/2^53 for a 53-bit integer u, inside
/// layer i's rectangle under f when u < inside[i] = ⌈2^53 x[i+1]/x[i]⌉ (Marsaglia & Tsang's k_i).
struct Layers {
  double x[257];              // right edges; x[0] is layer 0's pseudo-width v/f(r)
  double f[257];              // f(x[i]), f[0] unused
  std::int64_t inside[256];   // ⌈2^53 x[i+1]/x[i]⌉
  double width[256];          // x[i]/2^53
};

inline constexpr int count = 256;

inline double density(double x) { return std::exp(-0.5 * x * x); }

/// Builds the right edges x[0..layer_count] of `layer_count` layers from r. Returns by how much
/// the last layer's top overshoots f(0) = 1 (> 0: v too large, r too small), or 1 when the layers
/// reach the top before the last.
inline double build_edges(double r, int layer_count, double* x) {
  const double v = r * density(r) + std::sqrt(std::numbers::pi / 2) * std::erfc(r / std::sqrt(2.0));
  x[0] = v / density(r);
  x[1] = r;
  for (int i = 1; i < layer_count - 1; ++i) {
    const double top = density(x[i]) + v / x[i];
    if (top >= 1.0) return 1.0;
    x[i + 1] = std::sqrt(-2.0 * std::log(top));
  }
  x[layer_count] = 0.0;
  return density(x[layer_count - 1]) + v / x[layer_count - 1] - 1.0;
}

/// r solves "the last layer ends exactly at f = 1", found by bisection to the last bit
/// (Marsaglia & Tsang print r = 3.6541528853610088 for 256 layers, 3.442619855899 for 128);
/// x[] is left built from it.
inline double solve_edges(int layer_count, double* x) {
  double low = 3.0, high = 4.0;  // build(3) > 0 > build(4)
  for (int step = 0; step < 200 && low < high; ++step) {
    const double middle = 0.5 * (low + high);
    if (middle == low || middle == high) break;
    (build_edges(middle, layer_count, x) > 0.0 ? low : high) = middle;
  }
  build_edges(high, layer_count, x);
  return high;
}

/// The 256 layers of Rng::normal (double).
inline Layers make_layers() {
  Layers layers{};
  solve_edges(count, layers.x);
  for (int i = 1; i <= count; ++i) layers.f[i] = density(layers.x[i]);
  for (int i = 0; i < count; ++i) {
    layers.inside[i] = static_cast<std::int64_t>(std::ceil(layers.x[i + 1] / layers.x[i] * 0x1.0p53));
    layers.width[i] = layers.x[i] * 0x1.0p-53;
  }
  return layers;
}

/// The 128 layers of Rng::fill_normal for float, Marsaglia & Tsang (2000)'s own RNOR layout: a
/// 32-bit word gives the layer (7 bits), the sign (1 bit) and the abscissa (24 bits, a float's
/// precision), x = u·x[i]/2^24, inside layer i's rectangle when u < ⌈2^24 x[i+1]/x[i]⌉.
struct FloatLayers {
  static constexpr int count = 128;
  double x[count + 1];
  double f[count + 1];
  std::uint32_t inside[count];  // ⌈2^24 x[i+1]/x[i]⌉
  float width[count];           // x[i]/2^24
};

inline FloatLayers make_float_layers() {
  FloatLayers layers{};
  solve_edges(FloatLayers::count, layers.x);
  for (int i = 1; i <= FloatLayers::count; ++i) layers.f[i] = density(layers.x[i]);
  for (int i = 0; i < FloatLayers::count; ++i) {
    layers.inside[i] = static_cast<std::uint32_t>(std::ceil(layers.x[i + 1] / layers.x[i] * 0x1.0p24));
    layers.width[i] = static_cast<float>(layers.x[i] * 0x1.0p-24);
  }
  return layers;
}

inline const FloatLayers float_layers = make_float_layers();

inline const Layers layers = make_layers();

}  // namespace ziggurat

// Binomial and hypergeometric probabilities to near machine precision for any counts, in the
// saddle-point form of Loader (2000), "Fast and accurate computation of binomial probabilities":
// the logs of the factorials of counts of 10⁹ are near 2·10¹⁰, and the difference of such logs
// would lose 6 of a double's 16 digits; the deviance form adds small terms instead.
namespace binomial_terms {

/// δ(n) = log n! - log(sqrt(2πn) (n/e)ⁿ), Stirling's error, for an integer n ≥ 1: directly for
/// n ≤ 15 (terms below 40, so the difference keeps 14 digits), else its asymptotic series
/// 1/(12n) - 1/(360n³) + 1/(1260n⁵) - 1/(1680n⁷) + 1/(1188n⁹), cut where its next term is
/// below a double's precision.
inline double stirling_error(double n) {
  if (n <= 15.0) {
    int sign = 0;
    return lgamma_r(n + 1.0, &sign) - (n + 0.5) * std::log(n) + n - 0.5 * std::log(2.0 * std::numbers::pi);
  }
  const double s0 = 1.0 / 12, s1 = 1.0 / 360, s2 = 1.0 / 1260, s3 = 1.0 / 1680, s4 = 1.0 / 1188;
  const double nn = n * n;
  if (n > 500) return (s0 - s1 / nn) / n;
  if (n > 80) return (s0 - (s1 - s2 / nn) / nn) / n;
  if (n > 35) return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n;
  return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n;
}

/// The deviance term x log(x/m) + m - x ≥ 0; near x = m by the series in v = (x-m)/(x+m),
/// (x-m)v + 2x Σ_{j≥1} v^(2j+1)/(2j+1), which has no cancellation.
inline double deviance(double x, double m) {
  if (std::abs(x - m) >= 0.1 * (x + m)) return x * std::log(x / m) + m - x;
  const double v = (x - m) / (x + m), v2 = v * v;
  double sum = (x - m) * v, term = 2.0 * x * v;
  for (int j = 1;; ++j) {
    term *= v2;
    const double next = sum + term / (2 * j + 1);
    if (next == sum) return sum;
    sum = next;
  }
}

/// P(Binomial(n, p) = x) with q = 1 - p given separately (Loader 2000, dbinom_raw), for
/// integer-valued 0 ≤ x ≤ n and 0 < p < 1.
inline double binomial_probability(double x, double n, double p, double q) {
  if (x == 0) return n == 0 ? 1.0 : std::exp(p < 0.1 ? -deviance(n, n * q) - n * p : n * std::log(q));
  if (x == n) return std::exp(q < 0.1 ? -deviance(n, n * p) - n * q : n * std::log(p));
  const double log_c = stirling_error(n) - stirling_error(x) - stirling_error(n - x) - deviance(x, n * p) -
                       deviance(n - x, n * q);
  const double log_f = std::log(2.0 * std::numbers::pi) + std::log(x) + std::log1p(-x / n);  // log 2πx(n-x)/n
  return std::exp(log_c - 0.5 * log_f);
}

}  // namespace binomial_terms

export namespace sgmcmc {

/// P(X = k) for X ~ Hypergeometric(population, successes, draws), the number of marked items
/// among `draws` drawn without replacement from `population` items of which `successes` are
/// marked. Loader's (2000) form: with p = draws/population, the product
/// b(k; successes, p)·b(draws - k; population - successes, p) / b(draws; population, p) of
/// binomial probabilities, each to near machine precision (binomial_terms).
inline double hypergeometric_probability(std::uint64_t k, std::uint64_t population, std::uint64_t successes,
                                         std::uint64_t draws) {
  const std::uint64_t failures = population - successes;
  if (k > successes || k > draws || draws - k > failures) return 0.0;
  if (draws == 0 || draws == population) return 1.0;
  const double p = static_cast<double>(draws) / static_cast<double>(population);
  const double q = static_cast<double>(population - draws) / static_cast<double>(population);
  using binomial_terms::binomial_probability;
  const auto x = static_cast<double>(k), n = static_cast<double>(draws);
  return binomial_probability(x, static_cast<double>(successes), p, q) *
         binomial_probability(n - x, static_cast<double>(failures), p, q) /
         binomial_probability(n, static_cast<double>(population), p, q);
}

class Rng {
public:
  /// PCG64 with `stream` selecting one of 2^63 non-overlapping sequences (O'Neill 2014).
  Rng(std::uint64_t seed, std::uint64_t stream) : engine_(seed, stream) {}

  /// Uniform on [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  /// 64 random bits: the seed of streams derived from this one (Rng(bits(), j) for part j).
  std::uint64_t bits() { return engine_(); }

  /// An index drawn with probabilities ∝ the increments of `cumulative` (running sums of
  /// non-negative weights), by bisection: the categorical draw of the plugins' data simulations.
  std::size_t index_from_cumulative(std::span<const double> cumulative) {
    const double target = uniform() * cumulative.back();
    const auto at = std::upper_bound(cumulative.begin(), cumulative.end(), target) - cumulative.begin();
    return std::min(static_cast<std::size_t>(at), cumulative.size() - 1);
  }

  /// Standard normal by the ziggurat (Marsaglia & Tsang 2000, 256 layers; see `ziggurat` above).
  /// One 64-bit draw gives the layer (8 bits), the sign (1 bit) and the abscissa (53 bits), so
  /// the three are independent (Doornik 2005 showed the harm of reusing bits between them); 98.8%
  /// of calls end in the rectangle. The sign is set by flipping the sign bit, not by a branch: a
  /// branch on a random bit is mispredicted half the time and cost 3× the whole fast path.
  /// The Rng keeps no spare value: its state is the engine's alone, which checkpointing relies on.
  double normal() {
    const ziggurat::Layers& z = ziggurat::layers;
    for (;;) {
      const std::uint64_t bits = engine_();
      const auto layer = static_cast<unsigned>(bits & 0xff);
      const std::uint64_t sign = (bits & 0x100) << 55;  // bit 8 moved to the sign bit, 63
      const auto u = static_cast<std::int64_t>(bits >> 11);
      const double x = static_cast<double>(u) * z.width[layer];
      if (u < z.inside[layer]) return with_sign(x, sign);  // inside the layer's rectangle under f
      if (layer == 0) return with_sign(tail(z.x[1]), sign);
      // The wedge between x[layer+1] and x: a uniform height in the layer, accepted under f.
      if (z.f[layer] + uniform() * (z.f[layer + 1] - z.f[layer]) < ziggurat::density(x)) return with_sign(x, sign);
    }
  }

  void fill_normal(std::span<double> out) {
    for (double& x : out) x = normal();
  }

  /// Standard normals in float (the float chain, run.chain_precision = "float"): a 128-layer
  /// ziggurat (Marsaglia & Tsang 2000, their RNOR; ziggurat::FloatLayers) on each 32-bit half of
  /// one 64-bit draw, so two normals per draw where normal() takes one. The halves are
  /// independent uniform words; a candidate that leaves the rectangles (1.2% of them) is finished
  /// or redrawn from fresh draws of the stream (float_normal_slow), so the outputs stay
  /// independent. Not the same numbers as fill_normal(std::span<double>).
  void fill_normal(std::span<float> out) {
    std::size_t j = 0;
    for (; j + 1 < out.size(); j += 2) {
      const std::uint64_t bits = engine_();
      out[j] = float_normal(static_cast<std::uint32_t>(bits));
      out[j + 1] = float_normal(static_cast<std::uint32_t>(bits >> 32));
    }
    if (j < out.size()) out[j] = float_normal(static_cast<std::uint32_t>(engine_() >> 32));
  }

  /// A Gamma(shape, rate) variate (density ∝ x^(shape-1) e^(-rate x)), for Gibbs steps on
  /// precisions and for Dirichlet draws. shape ≥ 1: Marsaglia & Tsang (2000), "A simple method
  /// for generating gamma variables", ACM TOMS 26(3): with d = shape - 1/3 and c = 1/sqrt(9d),
  /// v = (1 + cz)³ for a standard normal z is accepted when log u < z²/2 + d - dv + d log v, and
  /// then dv is Gamma(shape, 1). shape < 1: the same paper's boost,
  /// Gamma(a) = Gamma(a + 1)·u^(1/a), which underflows to 0 for tiny a.
  double gamma(double shape, double rate) {
    if (shape < 1.0) {
      const double u = 1.0 - uniform();  // (0, 1]
      return gamma(shape + 1.0, rate) * std::pow(u, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      const double z = normal();
      const double t = 1.0 + c * z;
      if (t <= 0.0) continue;
      const double v = t * t * t;
      const double u = 1.0 - uniform();  // (0, 1]: log u is finite
      if (std::log(u) < 0.5 * z * z + d - d * v + d * std::log(v)) return d * v / rate;
    }
  }

  /// A Hypergeometric(population, successes, draws) variate: how many of `successes` marked
  /// items of `population` are among `draws` drawn without replacement. Up to 64 draws, by the
  /// draws themselves, one after another: the next is marked with probability (marked items
  /// left)/(items left), one index() each, cheaper than the three probabilities the inversion
  /// needs at its mode. Beyond, by inversion, visiting
  /// the support from the mode outwards (mode, mode+1, mode-1, mode+2, ...) with each probability
  /// from its neighbour's by the ratio P(k+1)/P(k) = (K-k)(n-k)/((k+1)(N-K-n+k+1)): an expected
  /// 1.6 standard deviations of steps, one uniform, whatever the counts. Any fixed order of the
  /// support gives the exact law; the order from the mode makes the walk short. Rounding may
  /// leave the summed probabilities a few ulps short of 1: a uniform beyond them (probability
  /// ~10⁻¹³) is drawn again.
  std::uint64_t hypergeometric(std::uint64_t population, std::uint64_t successes, std::uint64_t draws) {
    const std::uint64_t failures = population - successes;
    const std::uint64_t low = draws > failures ? draws - failures : 0, high = std::min(draws, successes);
    if (low == high) return low;
    if (draws <= 64) {
      std::uint64_t marked = 0;
      for (std::uint64_t k = 0; k < draws; ++k)
        if (index(population - k) < successes - marked) ++marked;
      return marked;
    }
    const auto mode = std::clamp<std::uint64_t>(
        static_cast<std::uint64_t>(static_cast<__uint128_t>(draws + 1) * (successes + 1) / (population + 2)), low,
        high);
    const double at_mode = hypergeometric_probability(mode, population, successes, draws);
    const auto K = static_cast<double>(successes), n = static_cast<double>(draws),
               F = static_cast<double>(failures);
    for (;;) {
      double u = uniform() - at_mode;
      if (u < 0) return mode;
      std::uint64_t up = mode, down = mode;
      double p_up = at_mode, p_down = at_mode;
      while (up < high || down > low) {
        if (up < high) {
          const auto k = static_cast<double>(up);
          p_up *= (K - k) * (n - k) / ((k + 1) * (F - n + k + 1));
          ++up;
          if ((u -= p_up) < 0) return up;
        }
        if (down > low) {
          const auto k = static_cast<double>(down);
          p_down *= k * (F - n + k) / ((K - k + 1) * (n - k + 1));
          --down;
          if ((u -= p_down) < 0) return down;
        }
      }
    }
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
  static double with_sign(double x, std::uint64_t sign) {
    return std::bit_cast<double>(std::bit_cast<std::uint64_t>(x) ^ sign);
  }

  /// One float normal from a 32-bit word: bits 0-6 the layer, bit 7 the sign, bits 8-31 the
  /// abscissa u; the rectangle's fast path here, the rest out of line.
  float float_normal(std::uint32_t word) {
    const ziggurat::FloatLayers& z = ziggurat::float_layers;
    const unsigned layer = word & 0x7f;
    const std::uint32_t u = word >> 8;
    if (u < z.inside[layer]) return with_sign(static_cast<float>(u) * z.width[layer], (word & 0x80) << 24);
    return float_normal_slow(word);
  }

  /// The word's candidate outside its layer's rectangle: the tail (layer 0) or the wedge test
  /// under f in double, as in normal(); a rejected candidate is replaced by the high half of a
  /// fresh 64-bit draw.
  [[gnu::noinline]] float float_normal_slow(std::uint32_t word) {
    const ziggurat::FloatLayers& z = ziggurat::float_layers;
    for (;;) {
      const unsigned layer = word & 0x7f;
      const std::uint32_t sign = (word & 0x80) << 24;
      const std::uint32_t u = word >> 8;
      const float x = static_cast<float>(u) * z.width[layer];
      if (u < z.inside[layer]) return with_sign(x, sign);
      if (layer == 0) return with_sign(static_cast<float>(tail(z.x[1])), sign);
      if (z.f[layer] + uniform() * (z.f[layer + 1] - z.f[layer]) < ziggurat::density(x)) return with_sign(x, sign);
      word = static_cast<std::uint32_t>(engine_() >> 32);
    }
  }

  static float with_sign(float x, std::uint32_t sign) {
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) ^ sign);
  }

  /// The normal tail beyond r (Marsaglia 1964): x = -log(u₁)/r, y = -log(u₂), accepted when
  /// 2y > x², gives r + x with density ∝ exp(-(r + x)²/2) on x > 0.
  double tail(double r) {
    for (;;) {
      const double x = -std::log(1.0 - uniform()) / r;  // 1 - u ∈ (0, 1]: the log is finite
      const double y = -std::log(1.0 - uniform());
      if (y + y > x * x) return r + x;
    }
  }

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
