// The template behind lda::simulate_corpus (corpus.hpp). Gamma variates come from the run's
// stream (sgmcmc::Rng::gamma), Poisson variates from Boost.Random driven by the same stream
// through a small engine adapter, so the corpus is a function of the data seed alone.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>
#include <boost/random/poisson_distribution.hpp>

namespace lda {

namespace simulation_detail {

/// A uniform random bit generator (53 bits per call) over a stream with uniform() on [0, 1).
template <class Random>
struct Engine {
  using result_type = std::uint64_t;
  Random& rng;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return (result_type{1} << 53) - 1; }
  result_type operator()() { return static_cast<result_type>(rng.uniform() * 0x1.0p53); }
};

/// A Dirichlet(concentration, ..., concentration) draw of `size` values: normalised Gamma variates.
template <class Random>
std::vector<double> symmetric_dirichlet(std::size_t size, double concentration, Engine<Random>& engine) {
  std::vector<double> values(size);
  double total = 0.0;
  for (double& x : values) total += x = engine.rng.gamma(concentration, 1.0);
  if (!(total > 0.0)) {  // every variate underflowed (tiny concentration): all mass on one value
    std::fill(values.begin(), values.end(), 0.0);
    values[static_cast<std::size_t>(engine.rng.uniform() * static_cast<double>(size))] = 1.0;
    return values;
  }
  for (double& x : values) x /= total;
  return values;
}

}  // namespace simulation_detail

template <class Random>
SimulatedCorpus simulate_corpus(const SimulationShape& shape, Random& rng) {
  using namespace simulation_detail;
  Engine<Random> engine{rng};
  SimulatedCorpus out;
  std::vector<std::vector<double>> topic_cumulative(shape.topics);
  for (std::size_t k = 0; k < shape.topics; ++k) {
    const auto phi = symmetric_dirichlet(shape.words, shape.true_beta, engine);
    out.topics.insert(out.topics.end(), phi.begin(), phi.end());
    double total = 0.0;
    for (double p : phi) topic_cumulative[k].push_back(total += p);
  }
  boost::random::poisson_distribution<int, double> extra_tokens(std::max(shape.doc_length - 1.0, 1e-12));
  out.corpus.words = shape.words;
  for (std::size_t d = 0; d < shape.documents; ++d) {
    const auto mix = symmetric_dirichlet(shape.topics, shape.true_alpha, engine);
    std::vector<double> mix_cumulative;
    double total = 0.0;
    for (double p : mix) mix_cumulative.push_back(total += p);
    const int length = 1 + (shape.doc_length > 1.0 ? extra_tokens(engine) : 0);
    std::map<std::uint32_t, std::uint32_t> counts;  // ordered: entries by word id, as in UCI files
    for (int j = 0; j < length; ++j) {
      const std::size_t topic = rng.index_from_cumulative(mix_cumulative);
      ++counts[static_cast<std::uint32_t>(rng.index_from_cumulative(topic_cumulative[topic]))];
    }
    std::vector<WordCount> document;
    for (const auto& [word, count] : counts) document.push_back({word, count});
    out.corpus.documents.push_back(std::move(document));
    out.corpus.ids.push_back(d + 1);
  }
  return out;
}

}  // namespace lda
