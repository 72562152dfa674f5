// The lda plugin through the real CLI: both presets learn the planted topics of a simulated corpus
// (optimal matching, cosine threshold) and lower the held-out perplexity; `sgmcmc topics` prints
// them; `check-model lda` passes; mh is refused naming the model and the capability; the same
// seed gives the same bytes on 1 and 2 threads; bad files exit 2 naming file:line.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "support.hpp"
#include "../../plugins/lda/corpus.hpp"

import sgmcmc;

using Catch::Matchers::Contains;

namespace lda_cli_test {

// A small, well-separated corpus: 5 planted topics over W = 100 words, Dirichlet(0.05) topics
// (each puts most of its mass on a handful of words, few shared), Dirichlet(0.1) mixes, 100 tokens
// a document, 500 documents of which 10% are held out; random seed 1. The model is fitted with K = 8
// topics: with exactly as many topics as planted, a chain can settle in a local mode where two
// planted topics share one learnt topic and a third is split (LDA's posterior is multimodal; seed
// 1 §5.3 sees such a mode on Wikipedia), which SGLD leaves only slowly; with spare topics the
// planted ones are found and the spares take the leftovers.
constexpr std::size_t planted = 5, topics = 8, words = 100;
const std::string corpus_keys = "--set model.topics=8 --set model.true_topics=5 --set model.docs=500 --set model.words=100 ";

std::vector<double> planted_topics() {
  sgmcmc::Rng rng(1, sgmcmc::data_stream);  // the plugin's simulation: random seed 1, the data stream
  const lda::SimulationShape shape{.documents = 500, .words = words, .topics = planted};
  return lda::simulate_corpus(shape, rng).topics;
}

/// The posterior mean of π_k = θ_k/θ_k· over the draws of chain-1.csv past the first half.
std::vector<double> posterior_mean_pi(const std::filesystem::path& run) {
  const auto csv = sgmcmc::read_stan_csv(run / "chain-1.csv");
  const std::size_t first = csv.columns.size() - topics * words;  // the parameters come last
  std::vector<double> mean(topics * words, 0.0);
  const std::size_t from = csv.rows.size() / 2;
  for (std::size_t r = from; r < csv.rows.size(); ++r)
    for (std::size_t k = 0; k < topics; ++k) {
      const double* theta = &csv.rows[r][first + k * words];
      const double sum = std::accumulate(theta, theta + words, 0.0);
      for (std::size_t w = 0; w < words; ++w) mean[k * words + w] += theta[w] / sum / static_cast<double>(csv.rows.size() - from);
    }
  return mean;
}

double cosine(const double* a, const double* b) {
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (std::size_t w = 0; w < words; ++w) ab += a[w] * b[w], aa += a[w] * a[w], bb += b[w] * b[w];
  return ab / std::sqrt(aa * bb);
}

/// The smallest cosine of the best matching of every planted topic to its own learnt topic (all
/// 8!/3! = 6,720 one-to-one maps of the 5 planted topics into the 8 learnt, maximising the
/// smallest cosine).
double matched_cosine(const std::vector<double>& learnt, const std::vector<double>& truth) {
  std::vector<std::size_t> order(topics);
  std::iota(order.begin(), order.end(), std::size_t{0});
  double best = -1.0;
  do {  // the first `planted` entries of each permutation are a map; the rest repeat it 3! times
    double worst = 1.0;
    for (std::size_t k = 0; k < planted; ++k) worst = std::min(worst, cosine(&truth[k * words], &learnt[order[k] * words]));
    best = std::max(best, worst);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

std::vector<double> perplexities(const std::filesystem::path& run) {
  const auto table = sgmcmc::read_numeric_csv(run / "metrics.csv");
  REQUIRE(table.header.back() == "perplexity");
  std::vector<double> values;
  for (std::size_t r = 0; r < table.rows; ++r) values.push_back(table.at(r, table.columns - 1));
  return values;
}

using test::without_seconds;

}  // namespace lda_cli_test

using namespace lda_cli_test;

TEST_CASE("lda-sgld learns the planted topics of a simulated corpus, both presets lower the held-out perplexity") {
  // Threshold 0.9 on the matched cosine: distinct planted topics are nearly orthogonal (checked
  // below: every pair's cosine < 0.5), so a learnt topic that merges two planted ones or sits
  // between them scores at most about 0.7 against either, and one that is a planted topic up to
  // estimation noise — thousands of tokens per topic, relative error of a few percent on its
  // heavy words — scores above 0.95. 3,000 iterations at ε = 1e-2: this configuration reached
  // 0.957 … 0.999 with run.seed 1 to 4 (1 is the one tested). Perplexity: the running posterior-
  // predictive average must end below its first evaluation and far below the uniform model's
  // W = 100 (the planted topics score about 14).
  // SGLD-CV is held to the perplexity only: around a centre from one short SGD pass its chain can
  // stay in a merged-topic mode for thousands of iterations (it did with seed 3); see
  // plugins/lda/README.md on SGLD-CV for LDA.
  const auto truth = planted_topics();
  for (std::size_t a = 0; a < planted; ++a)
    for (std::size_t b = a + 1; b < planted; ++b) REQUIRE(cosine(&truth[a * words], &truth[b * words]) < 0.5);
  test::TempDir dir;
  for (const char* preset : {"lda-sgld", "lda-sgldcv"}) {
    INFO(preset);
    const auto out = dir.path() / preset;
    // The SGD step scaled to this corpus's N/n = 9 as lda-sgldcv's comments say (3e-3 at N/n = 62).
    const auto result = test::run_cli(fmt::format("run --preset {} {} --set run.iterations=3000 --set run.thin=100 "
                                                  "--set estimator.sgd_step_size=3e-2 --out '{}' --quiet",
                                                  preset, corpus_keys, out.string()));
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
    const double matched = matched_cosine(posterior_mean_pi(out), truth);
    const auto perplexity = perplexities(out);
    INFO("matched cosine " << matched << ", perplexity first " << perplexity.front() << ", last " << perplexity.back());
    if (std::string(preset) == "lda-sgld") CHECK(matched > 0.9);
    CHECK(perplexity.back() < perplexity.front());
    CHECK(perplexity.back() < 0.2 * words);
  }
}

TEST_CASE("lda: sgmcmc topics prints each topic's top words, with word ids or a vocabulary, and refuses other runs") {
  test::TempDir dir;
  const auto out = dir.path() / "run";
  auto result = test::run_cli(fmt::format("run --preset lda-sgld {} --set run.iterations=40 --set run.thin=20 --out '{}' --quiet",
                                          corpus_keys, out.string()));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);

  result = test::run_cli(fmt::format("topics '{}' --top 3", out.string()));
  REQUIRE(result.exit_code == 0);
  const auto lines = test::lines_of(result.output);
  REQUIRE(lines.size() == 1 + topics);
  CHECK_THAT(lines[0], Contains("8 topics over 100 words: posterior mean of π from 2 draw(s)"));
  for (std::size_t k = 1; k <= topics; ++k) {
    CHECK(lines[k].starts_with(fmt::format("topic {}: ", k)));
    CHECK(std::count(lines[k].begin(), lines[k].end(), '(') == 3);
  }

  std::string vocabulary;
  for (std::size_t w = 1; w <= words; ++w) vocabulary += fmt::format("word{}\n", w);
  result = test::run_cli(fmt::format("topics '{}' --vocab '{}'", out.string(), dir.write("vocab.txt", vocabulary).string()));
  REQUIRE(result.exit_code == 0);
  const auto first_topic = test::lines_of(result.output).at(1);
  CHECK_THAT(first_topic, Contains("topic 1: word"));
  CHECK(std::count(first_topic.begin(), first_topic.end(), '(') == 10);  // the default --top 10

  // model.vocabulary_size: the topics are over the kept words only, named from the same file.
  const auto cut = dir.path() / "cut";
  result = test::run_cli(fmt::format("run --preset lda-sgld {} --set model.vocabulary_size=5 --set run.iterations=40 "
                                     "--set run.thin=20 --out '{}' --quiet",
                                     corpus_keys, cut.string()));
  REQUIRE(result.exit_code == 0);
  result = test::run_cli(fmt::format("topics '{}' --vocab '{}'", cut.string(), (dir.path() / "vocab.txt").string()));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(test::lines_of(result.output).at(0), Contains("8 topics over 5 words"));
  const auto cut_topic = test::lines_of(result.output).at(1);
  CHECK(std::count(cut_topic.begin(), cut_topic.end(), '(') == 5);

  const auto short_vocabulary = dir.write("short.txt", "a\nb\n");
  result = test::run_cli(fmt::format("topics '{}' --vocab '{}'", out.string(), short_vocabulary.string()));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains(short_vocabulary.string() + ": 2 word(s), one per line; the run's model has W = 100 words"));

  const auto gaussian = dir.path() / "gaussian";
  REQUIRE(test::run_cli(fmt::format("run --preset demo --set run.iterations=20 --out '{}' --quiet", gaussian.string())).exit_code == 0);
  result = test::run_cli(fmt::format("topics '{}'", gaussian.string()));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("topics are shown for 'lda' runs only"));
}

TEST_CASE("check-model lda passes, mh is refused, naming the model and the missing capability") {
  auto result = test::run_cli("check-model lda");
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.output, Contains(", 0 failed"));

  test::TempDir dir;
  result = test::run_cli(fmt::format("run --preset lda-sgld --set corrector.name='\"mh\"' --set integrator.name='\"mala\"' "
                                     "--out '{}' --quiet",
                                     (dir.path() / "mh").string()));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("'exact-log-likelihood' capability") && Contains("(model 'lda')"));
}

TEST_CASE("lda: run.temperatures is refused before any output: its gradient Gibbs-samples latent variables") {
  test::TempDir dir;
  const auto result =
      test::run_cli(fmt::format("run --preset lda-sgld --set run.temperatures=true --out '{}' --quiet", (dir.path() / "t").string()));
  INFO(result.output);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("run.temperatures = true") && Contains("latent-gibbs-step"));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "t"));
}

TEST_CASE("lda: the same seed gives the same draws and metrics on 1 and 2 threads") {
  test::TempDir dir;
  const auto run = [&](int threads, const char* estimator) {
    const auto out = dir.path() / fmt::format("{}-{}", estimator, threads);
    const auto result = test::run_cli(fmt::format("run --preset lda-sgld {} --set estimator.name='\"{}\"' "
                                                  "--set estimator.sgd_step_size=3e-2 --set run.iterations=30 --set run.thin=10 "
                                                  "--set run.eval_every=10 --chains 2 --threads {} --out '{}' --quiet",
                                                  corpus_keys, estimator, threads, out.string()));
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
    return out;
  };
  for (const char* estimator : {"minibatch", "cv"}) {
    INFO(estimator);
    const auto one = run(1, estimator), two = run(2, estimator);
    for (const char* chain : {"chain-1.csv", "chain-2.csv"}) CHECK(test::draws_without_elapsed_time(one / chain) == test::draws_without_elapsed_time(two / chain));
    CHECK(without_seconds(test::read_text(one / "metrics.csv")) == without_seconds(test::read_text(two / "metrics.csv")));
    CHECK(test::read_text(one / "chain-1.csv") != test::read_text(one / "chain-2.csv"));
  }
}

TEST_CASE("lda through the CLI: a bad docword file exits 2 with file:line, and an empty document is noted") {
  test::TempDir dir;
  const auto bad = dir.write("docword.bad.txt", "2\n5\n2\n1 1 1\n2 9 1\n");
  auto result = test::run_cli(fmt::format("run --preset lda-sgld --set model.data='\"{}\"' --out '{}' --quiet", bad.string(),
                                          (dir.path() / "bad").string()));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains(bad.string() + ":5: word id 9 is outside 1..5"));

  const auto gap = dir.write("docword.gap.txt", "3\n5\n3\n1 1 1\n1 2 3\n3 5 2\n");
  result = test::run_cli(fmt::format("run --preset lda-sgld --set model.data='\"{}\"' --set model.test_docs=0 "
                                     "--set estimator.batch_size=2 --set run.iterations=4 --set run.thin=2 --out '{}' --quiet",
                                     gap.string(), (dir.path() / "gap").string()));
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.output, Contains(gap.string() + ": 1 declared document(s) have no words and are left out (ids 2)"));
}
