// LDA's Gibbs step (issue #7): token-topic updates per second of the plugin's sparse (SparseLDA-style) sampler
// (plugins/lda/topic_sampler.hpp) next to a straightforward O(K) loop written here, at K = 20,
// 100 and 500, and one SGLD iteration at batch 50 on KOS. Printed figures and ratios, not a
// timed test:
//
//   build/release/tests/benchmarks/lda_benchmark [repetitions=3]
//
// Workload: a corpus simulated from LDA (lda::simulate_corpus) with K planted topics over W = 6,906
// words (KOS's vocabulary), Dirichlet(0.05) topics, Dirichlet(0.1) mixes, 136 tokens a document
// (KOS's mean), 500 documents; π = the planted topics (floored at 1e-6), the state a chain is in
// once it has learnt them. The work of one estimate, per batch of 50 documents, in two parts
// timed apart for both samplers:
// - setup: θ's row sums (all of θ) and π transposed into one K-vector per word for the batch's
//   distinct words (both: the best layout for either loop; the plugin also keeps each word's
//   sum s_w, which the reference does not need);
// - updates: each document initialised from π and swept 10 times.
// Updates counted: tokens × 10 sweeps. Printed: throughput of the updates alone (the token-topic
// update the goal is about) and with the setup included, and the setup per estimate. Both samplers
// use the same stream and draw from the same conditional; each figure is from the run with the
// least total time of `repetitions`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "sgld_timing.hpp"
#include "../../plugins/lda/corpus.hpp"
#include "../../plugins/lda/documents.hpp"
#include "../../plugins/lda/topic_sampler.hpp"
#include "reading.hpp"

namespace lda_benchmark {

constexpr std::size_t words = 6906, documents = 500, batch = 50, sweeps = 10;
constexpr double alpha = 0.1;

struct Workload {
  std::size_t topics;
  std::vector<double> theta;  // K × W
  lda::TokenLists corpus;
};

Workload make_workload(std::size_t topics) {
  sgmcmc::Rng rng(3, 0);
  const lda::SimulationShape shape{.documents = documents, .words = words, .topics = topics, .doc_length = 136.0,
                                   .true_alpha = 0.1, .true_beta = 0.05};
  auto simulated = lda::simulate_corpus(shape, rng);
  Workload work{topics, std::move(simulated.topics), {}};
  for (double& x : work.theta) x = std::max(x, 1e-6);
  for (const auto& document : simulated.corpus.documents) work.corpus.add(lda::tokens_of(document));
  return work;
}

/// Seconds spent on one estimate's setup (θ's row sums and the π columns of the batch's words)
/// and on its token-topic updates (initialisation and sweeps), summed over the batches.
struct Seconds {
  double setup = 0.0, updates = 0.0;
  double total() const { return setup + updates; }
};

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The plugin's sampler, as LdaModel::add_data_gradient drives it. The tables live on between
/// calls, as in a chain's workspace (their memory is allocated once, by the first estimate).
Seconds sparse_seconds(const Workload& work, lda::TopicTables& tables) {
  lda::DocumentSampler sampler(work.topics);
  lda::DistinctWords batch_words;
  std::vector<std::uint32_t> z;
  sgmcmc::Rng rng(1, 1);
  Seconds seconds;
  for (std::size_t first = 0; first < documents; first += batch) {
    auto start = std::chrono::steady_clock::now();
    batch_words.start(words);
    for (std::size_t d = first; d < first + batch; ++d) batch_words.add(work.corpus[d]);
    tables.set_topics(work.theta, work.topics, words, batch_words.sorted());
    seconds.setup += since(start);
    start = std::chrono::steady_clock::now();
    for (std::size_t d = first; d < first + batch; ++d) {
      const auto tokens = work.corpus[d];
      z.resize(tokens.size());
      sampler.initialise(tokens, z, tables, rng);
      for (std::size_t s = 0; s < sweeps; ++s) sampler.sweep(tokens, z, tables, alpha, rng);
    }
    seconds.updates += since(start);
  }
  return seconds;
}

/// The reference: per token, the K products (α + n_dk) π_kw, their running sum, a uniform point
/// in it and a linear scan. Its setup is the plugin's minus the sums s_w: the row sums, then π
/// transposed into contiguous per-word columns for the batch's distinct words (the same row sums
/// and blocked loop, so both pay the same for reading θ).
Seconds reference_seconds(const Workload& work) {
  const std::size_t topics = work.topics;
  std::vector<double> columns(words * topics), inverse_row_sums(topics), cumulative(topics);
  std::vector<std::uint32_t> counts(topics), z;
  lda::DistinctWords batch_words;
  sgmcmc::Rng rng(1, 1);
  const auto draw = [&](const double* pi, double prior) {
    double total = 0.0;
    for (std::size_t k = 0; k < topics; ++k) cumulative[k] = total += (prior + counts[k]) * pi[k];
    const double u = rng.uniform() * total;
    std::size_t k = 0;
    while (k + 1 < topics && cumulative[k] <= u) ++k;
    return static_cast<std::uint32_t>(k);
  };
  Seconds seconds;
  for (std::size_t first = 0; first < documents; first += batch) {
    auto start = std::chrono::steady_clock::now();
    batch_words.start(words);
    for (std::size_t d = first; d < first + batch; ++d) batch_words.add(work.corpus[d]);
    const auto needed = batch_words.sorted();
    for (std::size_t k = 0; k < topics; ++k)
      inverse_row_sums[k] = 1.0 / lda::row_sum(std::span(work.theta).subspan(k * words, words));
    for (std::size_t block = 0; block < topics; block += 16)
      for (const auto w : needed)
        for (std::size_t k = block; k < std::min(block + 16, topics); ++k)
          columns[w * topics + k] = work.theta[k * words + w] * inverse_row_sums[k];
    seconds.setup += since(start);
    start = std::chrono::steady_clock::now();
    for (std::size_t d = first; d < first + batch; ++d) {
      const auto tokens = work.corpus[d];
      z.resize(tokens.size());
      std::fill(counts.begin(), counts.end(), 0);  // the start draws from π alone: (1 + 0) π_kw
      for (std::size_t j = 0; j < tokens.size(); ++j) z[j] = draw(&columns[tokens[j] * topics], 1.0);
      for (auto k : z) ++counts[k];
      for (std::size_t s = 0; s < sweeps; ++s)
        for (std::size_t j = 0; j < tokens.size(); ++j) {
          --counts[z[j]];
          ++counts[z[j] = draw(&columns[tokens[j] * topics], alpha)];
        }
    }
    seconds.updates += since(start);
  }
  return seconds;
}

/// The run with the least total time of `repetitions`.
template <class Measure>
Seconds fastest(int repetitions, Measure measure) {
  Seconds best{1e300, 1e300};
  for (int r = 0; r < repetitions; ++r)
    if (const Seconds s = measure(); s.total() < best.total()) best = s;
  return best;
}

}  // namespace lda_benchmark
int main(int argc, char** argv) {
  using namespace lda_benchmark;
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 3;
  fmt::print("Gibbs step, {} documents in batches of {}, {} sweeps each, W = {}; million token-topic updates/s\n", documents,
             batch, sweeps, words);
  fmt::print("{:>5} | {:>9} {:>9} {:>6} | {:>9} {:>9} {:>6} | {:>9} {:>9} | {:>7} {:>9}\n", "", "updates", "only", "", "with",
             "setup", "", "setup", "µs", "", "smoothing");
  fmt::print("{:>5} | {:>9} {:>9} {:>6} | {:>9} {:>9} {:>6} | {:>9} {:>9} | {:>7} {:>9}\n", "K", "reference", "sparse", "ratio",
             "reference", "sparse", "ratio", "reference", "sparse", "topics", "bucket");
  for (std::size_t topics : {20, 100, 500}) {
    const auto work = make_workload(topics);
    const double updates = static_cast<double>(work.corpus.tokens() * sweeps);
    const Seconds reference = fastest(repetitions, [&] { return reference_seconds(work); });
    lda::TopicTables tables;
    sparse_seconds(work, tables);  // the first run allocates the tables' memory
    const Seconds sparse = fastest(repetitions, [&] { return sparse_seconds(work, tables); });
    // Mean number of topics present in a document after the sweeps: the document bucket's length.
    tables.set_topics(work.theta, topics, words);
    lda::DocumentSampler sampler(topics);
    std::vector<std::uint32_t> z;
    sgmcmc::Rng rng(2, 2);
    // And the mean probability that a token's draw falls in the smoothing bucket, α s_w / (r + α s_w).
    double present = 0.0, smoothing = 0.0;
    for (std::size_t d = 0; d < documents; ++d) {
      const auto tokens = work.corpus[d];
      z.resize(tokens.size());
      sampler.initialise(tokens, z, tables, rng);
      for (std::size_t s = 0; s < sweeps; ++s) sampler.sweep(tokens, z, tables, alpha, rng);
      present += static_cast<double>(sampler.topics_present());
      for (std::size_t j = 0; j < tokens.size(); ++j) {
        const auto column = tables.column(tokens[j]);
        double document_mass = 0.0;
        for (std::size_t k = 0; k < topics; ++k) document_mass += (sampler.count(k) - (z[j] == k)) * column.pi[k];
        smoothing += alpha * column.smoothing_mass() / (document_mass + alpha * column.smoothing_mass());
      }
    }
    const double estimates = static_cast<double>(documents / batch);
    fmt::print("{:>5} | {:>9.2f} {:>9.2f} {:>5.2f}x | {:>9.2f} {:>9.2f} {:>5.2f}x | {:>9.0f} {:>9.0f} | {:>7.1f} {:>8.1f}%\n", topics,
               updates / reference.updates / 1e6, updates / sparse.updates / 1e6, reference.updates / sparse.updates,
               updates / reference.total() / 1e6, updates / sparse.total() / 1e6, reference.total() / sparse.total(),
               reference.setup / estimates * 1e6, sparse.setup / estimates * 1e6, present / documents,
               100.0 * smoothing / static_cast<double>(work.corpus.tokens()));
  }

  const std::filesystem::path kos = std::filesystem::path(SGMCMC_SHARED_DIR) / "datasets/kos/docword.kos.txt.gz";
  if (!std::filesystem::exists(kos)) {
    fmt::print("\nSGLD iteration on KOS: skipped, {} is absent (configure with -DSGMCMC_SHARED_DIR=<shared folder>)\n",
               kos.string());
    return 0;
  }
  const auto plugin = sgmcmc::load_plugin_file(std::string(SGMCMC_PLUGIN_DIR) + "/sgmcmc-model-lda.so");
  auto config = sgmcmc::parse_config(fmt::format("[model]\ndata = \"{}\"\ntopics = 20\n", kos.string()), "bench.toml");
  const std::shared_ptr<const sgmcmc::Model> model = test::checked_model(plugin, config["model"], 1);
  double best = 1e300;
  for (int r = 0; r < repetitions; ++r) best = std::min(best, bench::sgld_iteration_us(model, batch, 1e-3, 50));
  fmt::print("\nSGLD iteration on KOS (D = {} training documents, K = 20, d = {}), batch {}, {} sweeps ({} burn-in): {:.0f} µs\n",
             model->num_items(), model->dimension(), batch, 10, 5, best);
  return 0;
}
