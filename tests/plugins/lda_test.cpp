// The lda plugin and its Gibbs step: a word's column and the sparse conditional against the
// exact conditional (chi-square), the fixed-z gradient against finite differences, the Gibbs-
// estimated gradient against the exact expectation by enumeration on a tiny document (whose
// finite differences of log p(w | θ) check Fisher's identity), the UCI reader, every malformed
// input (naming file:line), and the held-out perplexity at the planted topics.
#include <catch2/catch.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "support.hpp"
#include "model_support.hpp"
#include "../../plugins/lda/corpus.hpp"
#include "../../plugins/lda/topic_sampler.hpp"

using Catch::Matchers::Contains;

namespace lda_test {

std::shared_ptr<const sgmcmc::Model> build(const std::string& model_lines, std::uint64_t seed = 1) {
  return test::build_model("lda", model_lines, seed);
}
using test::quoted;

/// A K × W θ with entries in [0.2, 2.2), from its own stream.
std::vector<double> random_theta(std::size_t topics, std::size_t words, std::uint64_t seed) {
  sgmcmc::Rng rng(seed, 3);
  std::vector<double> theta(topics * words);
  for (double& x : theta) x = 0.2 + 2.0 * rng.uniform();
  return theta;
}

/// Pearson's X² of `counts` against probabilities `p` (Σp = 1) over `draws` draws.
double chi_square(const std::vector<double>& counts, const std::vector<double>& p, double draws) {
  double x2 = 0.0;
  for (std::size_t k = 0; k < p.size(); ++k) x2 += (counts[k] - draws * p[k]) * (counts[k] - draws * p[k]) / (draws * p[k]);
  return x2;
}

/// The chi-square distribution's upper 0.1% points for 2..5 degrees of freedom (Abramowitz &
/// Stegun, Table 26.8): a correct sampler fails each test with probability 0.001.
double critical_value_0001(std::size_t degrees_of_freedom) {
  constexpr std::array<double, 4> table{13.816, 16.266, 18.467, 20.515};
  REQUIRE(degrees_of_freedom >= 2);
  REQUIRE(degrees_of_freedom <= 5);
  return table[degrees_of_freedom - 2];
}

/// log p(w, z | θ, α) = Σ_j log π_{z_j w_j} + log DirMult(z | α), the joint of one document with
/// ϑ integrated out: Γ(Kα)/Γ(Kα + L) Π_k Γ(α + n_k)/Γ(α).
double log_joint(const std::vector<std::uint32_t>& words, const std::vector<std::uint32_t>& z, const std::vector<double>& theta,
                 std::size_t topics, std::size_t vocabulary, double alpha) {
  std::vector<double> row_sum(topics, 0.0);
  for (std::size_t k = 0; k < topics; ++k)
    for (std::size_t w = 0; w < vocabulary; ++w) row_sum[k] += theta[k * vocabulary + w];
  std::vector<double> n(topics, 0.0);
  double value = 0.0;
  for (std::size_t j = 0; j < words.size(); ++j) {
    value += std::log(theta[z[j] * vocabulary + words[j]] / row_sum[z[j]]);
    n[z[j]] += 1.0;
  }
  const double k_alpha = static_cast<double>(topics) * alpha;
  value += std::lgamma(k_alpha) - std::lgamma(k_alpha + static_cast<double>(words.size()));
  for (double count : n) value += std::lgamma(alpha + count) - std::lgamma(alpha);
  return value;
}

/// Calls `visit(z)` for every one of the K^L assignments of a document of L tokens.
template <class Visit>
void every_assignment(std::size_t tokens, std::size_t topics, Visit&& visit) {
  std::vector<std::uint32_t> z(tokens, 0);
  for (;;) {
    visit(z);
    std::size_t j = 0;
    while (j < tokens && ++z[j] == topics) z[j++] = 0;
    if (j == tokens) return;
  }
}

}  // namespace lda_test

using namespace lda_test;

TEST_CASE("lda topic sampler: a word's column draws topics with probability π_kw / s_w") {
  // K = 5 topics, one word. X² over 200,000 draws from uniform v, 4 degrees of freedom.
  const std::size_t topics = 5, words = 2;
  const std::vector<double> theta{0.1, 1.0, 3.0, 1.0, 0.5, 0.5, 2.0, 0.2, 0.05, 1.0};  // rows: topics
  lda::TopicTables tables;
  tables.set_topics(theta, topics, words);
  const auto column = tables.column(0);
  std::vector<double> p(topics);
  for (std::size_t k = 0; k < topics; ++k) p[k] = theta[k * words] / tables.row_sums()[k];
  const double s = std::accumulate(p.begin(), p.end(), 0.0);
  CHECK(column.smoothing_mass() == Approx(s).epsilon(1e-14));
  for (double& x : p) x /= s;
  sgmcmc::Rng rng(11, 0);
  const double draws = 200'000;
  std::vector<double> counts(topics, 0.0);
  for (int r = 0; r < draws; ++r) counts[column.draw(rng.uniform() * s)] += 1.0;
  CHECK(chi_square(counts, p, draws) < critical_value_0001(topics - 1));
}

TEST_CASE("lda topic sampler: one token's update draws from the exact conditional (α + n_dk^¬j) π_kw") {
  // K = 5 topics, W = 4 words, a document of 6 tokens. From the state the initialisation leaves,
  // token j is resampled 200,000 times, each time from that same state (the other tokens fixed),
  // so the draws are independent and X² against the exact conditional has K - 1 = 4 degrees of
  // freedom. Checked for every token, so both buckets (topics present and absent) are exercised.
  const std::size_t topics = 5, words = 4;
  const double alpha = 0.3;
  const auto theta = random_theta(topics, words, 5);
  const std::vector<std::uint32_t> document{0, 1, 1, 3, 2, 0};
  lda::TopicTables tables;
  tables.set_topics(theta, topics, words);
  lda::DocumentSampler start(topics);
  std::vector<std::uint32_t> z(document.size());
  sgmcmc::Rng rng(12, 0);
  start.initialise(document, z, tables, rng);
  for (std::size_t j = 0; j < document.size(); ++j) {
    std::vector<double> p(topics);
    for (std::size_t k = 0; k < topics; ++k) {
      const double others = start.count(k) - (z[j] == k ? 1.0 : 0.0);
      p[k] = (alpha + others) * theta[k * words + document[j]] / tables.row_sums()[k];
    }
    const double total = std::accumulate(p.begin(), p.end(), 0.0);
    for (double& x : p) x /= total;
    const double draws = 200'000;
    std::vector<double> counts(topics, 0.0);
    for (int r = 0; r < draws; ++r) {
      lda::DocumentSampler sampler = start;
      auto copy = z;
      sampler.resample(j, document, copy, tables, alpha, rng);
      counts[copy[j]] += 1.0;
    }
    INFO("token " << j << ", topics present " << start.topics_present());
    CHECK(chi_square(counts, p, draws) < critical_value_0001(topics - 1));
  }
}

TEST_CASE("lda gradient for fixed assignments matches central finite differences of -log p(w | z, θ)") {
  // -log p(w | z, θ) = -Σ_j log(θ_{z_j w_j} / θ_{z_j ·}). Central differences with h = 1e-6 θ_kw
  // have truncation error ~h²|f'''| ≈ 1e-12 relative and rounding ~ε|f|/h ≈ 1e-10 here: 1e-6
  // relative separates a right gradient from any wrong term.
  const std::size_t topics = 3, words = 4;
  const auto theta = random_theta(topics, words, 7);
  const std::vector<std::uint32_t> document{0, 2, 2, 3, 1}, z{1, 0, 2, 2, 1};
  // log_joint's Dirichlet-multinomial term does not depend on θ, so it drops out of the differences.
  const auto potential = [&](const std::vector<double>& t) { return -log_joint(document, z, t, topics, words, 1.0); };
  std::vector<double> gradient(topics * words, 0.0), row_sums(topics, 0.0);
  for (std::size_t k = 0; k < topics; ++k)
    for (std::size_t w = 0; w < words; ++w) row_sums[k] += theta[k * words + w];
  lda::GradientAccumulator accumulator;
  accumulator.start(topics);
  for (std::size_t j = 0; j < document.size(); ++j) accumulator.add_token(z[j], document[j], 1.0, theta, words, gradient);
  accumulator.finish(row_sums, words, gradient);
  for (std::size_t i = 0; i < theta.size(); ++i) {
    const double h = 1e-6 * theta[i];
    auto plus = theta, minus = theta;
    plus[i] += h;
    minus[i] -= h;
    const double difference = (potential(plus) - potential(minus)) / (2 * h);
    INFO("coordinate " << i);
    CHECK(gradient[i] == Approx(difference).epsilon(1e-6).margin(1e-9));
  }
}

TEST_CASE("lda plugin: the Gibbs-estimated gradient of a tiny document matches the exact expectation") {
  // One document, words (1, 2, 2) of W = 3, K = 3 topics: its 27 assignments are enumerated, giving
  // log p(w | θ) = log Σ_z p(w, z | θ) exactly and ∇f = -E_z|w[n_kw/θ_kw - n_k·/θ_k·] exactly.
  // 1. Fisher's identity, the formula the plugin implements: the enumerated expectation equals
  //    central finite differences of -log p(w | θ) (deterministic, 1e-6 relative).
  // 2. The plugin's estimate (Gibbs: 40 sweeps, 20 of burn-in) averaged over R = 20,000 calls
  //    with independent streams: each coordinate within 5 Monte Carlo standard errors (the
  //    sample sd / √R) of the exact value; with 9 coordinates a correct estimate fails with
  //    probability < 9 × 6e-7. The burn-in bias is negligible beside that: on a 27-state chain
  //    whose conditionals all exceed 0.05, 20 sweeps leave it far below 1e-6.
  test::TempDir dir;
  const auto path = dir.write("docword.tiny.txt", "1\n3\n2\n1 1 1\n1 2 2\n");
  const double alpha = 0.5;
  const auto model = build(fmt::format("data = {}\ntest_docs = 0\ntopics = 3\nalpha = {}\ngibbs_sweeps = 40\n"
                                       "gibbs_burnin = 20\n",
                                       quoted(path), alpha));
  REQUIRE(model->num_items() == 1);
  REQUIRE(model->dimension() == 9);
  const std::size_t topics = 3, words = 3;
  const std::vector<std::uint32_t> document{0, 1, 1};
  const auto theta = random_theta(topics, words, 9);

  const auto log_marginal = [&](const std::vector<double>& t) {
    double high = -INFINITY;
    std::vector<double> terms;
    every_assignment(document.size(), topics, [&](const std::vector<std::uint32_t>& z) {
      terms.push_back(log_joint(document, z, t, topics, words, alpha));
      high = std::max(high, terms.back());
    });
    double sum = 0.0;
    for (double x : terms) sum += std::exp(x - high);
    return high + std::log(sum);
  };
  std::vector<double> exact(topics * words, 0.0), row_sums(topics, 0.0);
  for (std::size_t k = 0; k < topics; ++k)
    for (std::size_t w = 0; w < words; ++w) row_sums[k] += theta[k * words + w];
  const double marginal = log_marginal(theta);
  every_assignment(document.size(), topics, [&](const std::vector<std::uint32_t>& z) {
    const double weight = std::exp(log_joint(document, z, theta, topics, words, alpha) - marginal);
    for (std::size_t j = 0; j < document.size(); ++j) {
      exact[z[j] * words + document[j]] -= weight / theta[z[j] * words + document[j]];
      for (std::size_t w = 0; w < words; ++w) exact[z[j] * words + w] += weight / row_sums[z[j]];
    }
  });
  for (std::size_t i = 0; i < theta.size(); ++i) {
    const double h = 1e-6 * theta[i];
    auto plus = theta, minus = theta;
    plus[i] += h;
    minus[i] -= h;
    INFO("coordinate " << i);
    CHECK(exact[i] == Approx(-(log_marginal(plus) - log_marginal(minus)) / (2 * h)).epsilon(1e-6).margin(1e-9));
  }

  const std::size_t calls = 20'000;
  std::vector<double> sum(theta.size(), 0.0), squares(theta.size(), 0.0);
  auto workspace = model->make_workspace();
  const std::vector<std::size_t> only{0};
  for (std::size_t r = 0; r < calls; ++r) {
    std::vector<double> gradient(theta.size(), 0.0);
    sgmcmc::Rng rng(r, 1);
    model->add_data_gradient(theta, {only}, gradient, *workspace, rng);
    for (std::size_t i = 0; i < theta.size(); ++i) {
      sum[i] += gradient[i];
      squares[i] += gradient[i] * gradient[i];
    }
  }
  for (std::size_t i = 0; i < theta.size(); ++i) {
    const double mean = sum[i] / calls, sd = std::sqrt(std::max(squares[i] / calls - mean * mean, 0.0));
    const double standard_error = sd / std::sqrt(static_cast<double>(calls));
    INFO("coordinate " << i << ": estimate " << mean << ", exact " << exact[i] << ", standard error " << standard_error);
    CHECK(std::abs(mean - exact[i]) <= 5 * standard_error + 1e-12);
  }
}

TEST_CASE("lda plugin: reads a UCI docword file, test_docs and max_docs choose documents") {
  test::TempDir dir;
  // 4 documents over W = 5 words (doc 3 has words 1 and 5).
  const std::string text = "4\n5\n7\n1 1 2\n1 2 1\n2 3 4\n3 1 1\n3 5 2\n4 4 1\n4 2 3\n";
  const auto plain = dir.write("docword.small.txt", text);
  const auto model = build(fmt::format("data = {}\ntest_docs = 0\ntopics = 2\n", quoted(plain)));
  CHECK(model->num_items() == 4);
  CHECK(model->dimension() == 10);
  const auto names = model->parameter_names();
  CHECK(names.front() == "theta.1.1");
  CHECK(names[6] == "theta.2.2");
  CHECK(names.back() == "theta.2.5");
  CHECK(model->metric_names().empty());  // no test documents, no perplexity
  CHECK(model->capabilities().latent_gibbs_step);
  CHECK(model->capabilities().positive_parameters);
  CHECK_FALSE(model->capabilities().exact_log_likelihood);

  const auto gz = test::write_data_file(dir.path(), "docword.small.txt", text, true);
  const auto split = build(fmt::format("data = {}\ntest_docs = 1\ntopics = 2\n", quoted(gz)));
  CHECK(split->num_items() == 3);
  CHECK(split->metric_names() == std::vector<std::string>{"perplexity"});
  CHECK(build(fmt::format("data = {}\ntest_docs = 1\nmax_docs = 2\ntopics = 2\n", quoted(gz)))->num_items() == 2);
  CHECK(build(fmt::format("data = {}\ntest_docs = 0.5\ntopics = 2\n", quoted(gz)))->num_items() == 2);
  // Simulated corpus: 1,000 documents, 10% held out.
  CHECK(build("topics = 3\n")->num_items() == 900);
  CHECK(build("topics = 3\nwords = 40\n")->dimension() == 120);
}

TEST_CASE("lda plugin: vocabulary_size keeps the most frequent words, test_data scores its own documents in them") {
  test::TempDir dir;
  // W = 5; total counts w1 10, w2 1, w3 7, w4 7, w5 2. Document 3 has only words 2 and 5.
  const auto train = dir.write("docword.train.txt", "3\n5\n6\n1 1 6\n1 3 7\n2 1 4\n2 4 7\n3 2 1\n3 5 2\n");
  // Test document 1: word 3 four times and word 2 (not kept) three times; document 2: word 3 six times.
  const auto test_file = dir.write("docword.test.txt", "2\n5\n3\n1 3 4\n1 2 3\n2 3 6\n");
  const auto lines = fmt::format("data = {}\ntopics = 2\n", quoted(train));

  const auto three = build(lines + "test_docs = 0\nvocabulary_size = 3\n");
  CHECK(three->dimension() == 6);
  CHECK(three->num_items() == 2);  // document 3 has none of the kept words
  CHECK(three->parameter_names() ==
        std::vector<std::string>{"theta.1.1", "theta.1.3", "theta.1.4", "theta.2.1", "theta.2.3", "theta.2.4"});
  // A tie (w3 and w4, 7 each) goes to the lower id; a size of W keeps every word.
  CHECK(build(lines + "test_docs = 0\nvocabulary_size = 2\n")->parameter_names().back() == "theta.2.3");
  CHECK(build(lines + "test_docs = 0\nvocabulary_size = 5\n")->dimension() == 10);

  // Every held-out token is word 3 (word 2 is dropped with the vocabulary), and with the same π
  // in both topics p(w | ϑ̂, π) = Σ_k ϑ̂_k π_w = π_w for any estimated mix: the perplexity is
  // exactly 1/π_3 = 8/3 for θ rows (1, 3, 4) over the kept words (1, 3, 4).
  const auto scored = build(lines + fmt::format("vocabulary_size = 3\ntest_data = {}\n", quoted(test_file)));
  CHECK(scored->num_items() == 3 - 1);  // all training documents are for training
  REQUIRE(scored->metric_names() == std::vector<std::string>{"perplexity"});
  const std::vector<double> theta = {1.0, 3.0, 4.0, 1.0, 3.0, 4.0};
  double perplexity = 0.0;
  auto workspace = scored->make_workspace();
  scored->evaluate_metrics(theta, *workspace, std::span(&perplexity, 1));
  CHECK(perplexity == Approx(8.0 / 3.0).epsilon(1e-12));

  CHECK_THROWS_WITH(build(lines + "vocabulary_size = 6\n"), Contains("model.vocabulary_size = 6: more than the W = 5 words"));
  CHECK_THROWS_WITH(build(lines + fmt::format("test_docs = 1\ntest_data = {}\n", quoted(test_file))),
                    Contains("model.test_docs") && Contains("remove one of the two"));
  CHECK_THROWS_WITH(build(fmt::format("topics = 2\ntest_data = {}\n", quoted(test_file))), Contains("model.test_data"));
  const auto other_words = dir.write("docword.other.txt", "1\n7\n1\n1 7 1\n");
  CHECK_THROWS_WITH(build(lines + fmt::format("test_data = {}\n", quoted(other_words))),
                    Contains(other_words.string() + ": W = 7 words, but model.data's file has W = 5"));
}

TEST_CASE("lda plugin: malformed input is an error naming file:line") {
  test::TempDir dir;
  const auto expect_error = [&](const std::string& text, const std::string& message, bool compressed = false) {
    const auto path = test::write_data_file(dir.path(), "docword.bad.txt", text, compressed);
    INFO(text);
    CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_docs = 0\n", quoted(path))), Contains(path.string() + ":" + message));
  };
  expect_error("2\nfive\n3\n", "2: expected W, the number of words (a positive integer)");
  expect_error("2\n5\n", "2: the file ends in the header");
  expect_error("0\n5\n1\n1 1 1\n", "1: expected D, the number of documents (a positive integer)");
  expect_error("2\n5\n2\n1 1 1\n2 6 1\n", "5: word id 6 is outside 1..5");
  expect_error("2\n5\n2\n1 1 1\n3 2 1\n", "5: document id 3 is outside 1..2");
  expect_error("2\n5\n2\n1 1 1\n0 2 1\n", "5: document id 0 is outside 1..2");
  expect_error("2\n5\n2\n1 1 1\n2 2 0\n", "5: count 0 is outside 1..");
  expect_error("2\n5\n2\n1 1 1\n2 2 -3\n", "5: count -3 is outside 1..");
  expect_error("2\n5\n2\n1 1 1\n2 2 1.5\n", "5: count '1.5' is not an integer");
  expect_error("2\n5\n2\n1 1 1\n2 2\n", "5: 2 field(s); expected `docID wordID count`");
  expect_error("2\n5\n2\n1 1 1\n2 2 1\n2 3 1\n", "6: more `docID wordID count` lines than the 2 declared");
  expect_error("2\n5\n3\n1 1 1\n2 2 1\n", "5: 2 `docID wordID count` line(s), but line 3 declares NNZ = 3");

  // A truncated gzip stream: the reader names the file rather than reading garbage.
  std::string body = "3\n50\n150\n";
  for (int d = 1; d <= 3; ++d)
    for (int w = 1; w <= 50; ++w) body += fmt::format("{} {} {}\n", d, w, 1 + (d * w) % 7);
  const auto whole = test::write_data_file(dir.path(), "docword.whole.txt", body, true);
  const auto bytes = test::read_text(whole);
  const auto cut = dir.write("docword.cut.txt.gz", bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_docs = 0\n", quoted(cut))), Contains(cut.string()));

  // An empty document is left out (noted on stderr), not an error: its likelihood is 1 for any θ.
  const auto gap = dir.write("docword.gap.txt", "3\n4\n2\n1 1 1\n3 4 2\n");
  CHECK(build(fmt::format("data = {}\ntest_docs = 0\n", quoted(gap)))->num_items() == 2);
  // A header's D far beyond the file's lines (D = 2·10⁹ as issue #21 found it, and 10¹⁵) costs
  // nothing: the reader holds the file's lines, not one entry per declared document (at 48 bytes
  // each it asked for 96 GB and was refused, or ended in std::bad_alloc; the fuzz target found
  // 13 GB asked for by a 4-line file).
  for (const char* documents : {"2000000000", "1000000000000000"}) {
    const auto sparse = dir.write("docword.sparse.txt", fmt::format("{}\n4\n2\n1 1 1\n{} 4 2\n", documents, documents));
    CHECK(build(fmt::format("data = {}\ntest_docs = 0\n", quoted(sparse)))->num_items() == 2);
  }

  CHECK_THROWS_WITH(build("gibbs_sweeps = 5\ngibbs_burnin = 5\n"), Contains("model.gibbs_burnin"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ndocs = 10\n", quoted(gap))), Contains("model.docs"));
  CHECK_THROWS_WITH(build("doc_length = 0.5\n"), Contains("model.doc_length"));
}

TEST_CASE("lda plugin: held-out perplexity at the planted topics is far below the uniform model's W and the start's") {
  // The default simulation (K = 10 planted topics over W = 500 words, Dirichlet(0.05) topics,
  // mixes Dirichlet(0.1), 100 tokens a document), random seed 1. θ at the planted φ (scaled: π = φ,
  // floored at 1e-6 so that θ > 0) must score the held-out halves far better than the uniform
  // model (perplexity W = 500) and than the model's starting point (topics ≈ the unigram
  // distribution): planted topics of Dirichlet(0.05) put most mass on ~30 words each, so the
  // truth's perplexity is of order 30-60 against the unigram's several hundred.
  const auto model = build("topics = 10\n");
  sgmcmc::Rng rng(1, sgmcmc::data_stream);
  const auto planted = lda::simulate_corpus(lda::SimulationShape{}, rng).topics;
  std::vector<double> theta(planted.size());
  for (std::size_t i = 0; i < theta.size(); ++i) theta[i] = 1000.0 * std::max(planted[i], 1e-6);
  std::vector<double> start(model->dimension());
  sgmcmc::Rng chain(1, 1);
  model->initial_point(start, chain);
  double at_truth = 0.0, at_start = 0.0;
  auto workspace = model->make_workspace();
  model->evaluate_metrics(theta, *workspace, std::span(&at_truth, 1));
  auto other = model->make_workspace();
  model->evaluate_metrics(start, *other, std::span(&at_start, 1));
  INFO("perplexity at the planted topics " << at_truth << ", at the start " << at_start);
  CHECK(at_start < 500.0);
  CHECK(at_truth < 0.5 * at_start);
}

TEST_CASE("lda plugin: a NaN count is an error naming file:line, a BOM before the header is not") {
  test::TempDir dir;
  const auto nan = dir.write("docword.nan.txt", "2\n5\n2\n1 1 1\n2 2 nan\n");
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_docs = 0\n", quoted(nan))), Contains(nan.string() + ":5: count 'nan'"));
  const auto bom = dir.write("docword.bom.txt", "\xEF\xBB\xBF" "2\n5\n2\n1 1 1\n2 2 1\n");
  CHECK(build(fmt::format("data = {}\ntest_docs = 0\ntopics = 2\n", quoted(bom)))->num_items() == 2);
}
