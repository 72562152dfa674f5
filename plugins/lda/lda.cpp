// Latent Dirichlet allocation with a Gibbs latent-topic step (Baker et al. 2019, §5.3; Patterson & Teh 2013,
// "Stochastic gradient Riemannian Langevin dynamics on the probability simplex", NeurIPS, §4 and
// its LDA experiment, here without the Riemannian preconditioner, as Baker et al. (2019) do).
//
// Model (Patterson & Teh 2013; Baker et al. 2019, §5.3), K topics over W words, one data item per document:
//   θ_kw ~ Gamma(β, 1) independently (expanded-mean parametrisation), π_kw = θ_kw / θ_k·
//   ϑ_d ~ Dirichlet(α) (integrated out), z_dj | ϑ_d ~ ϑ_d, w_dj | z_dj ~ π_{z_dj}
// θ is K × W, row-major by topic: θ_kw is θ[k·W + w]. Positive: the integrators reflect θ at 0
// inside every move (Capabilities::positive_parameters).
//
// Potentials (U = -log π):
//   f_0(θ) = Σ_kw [(1 - β) log θ_kw + θ_kw]        ∇f_0 = (1 - β)/θ_kw + 1
//   ∇f_d(θ) = -E_{z_d | w_d, θ}[n_dkw/θ_kw - n_dk·/θ_k·]     (Fisher's identity; topic_sampler.hpp)
// f_d itself (log Σ_z ...) is intractable: no exact-log-likelihood, hence no `mh` and no lp__.
// The expectation is estimated per document by Gibbs sweeps over z_d given π (topic_sampler.hpp):
// z starts from π alone (z_j ∝ π_{·,w_j}), then `gibbs_sweeps` sweeps; the counts of the sweeps
// after the first `gibbs_burnin` are averaged. The assignments are not kept between estimates
// (a batch meets a document about once per pass, when π has moved on), so every estimate is a
// function of (θ, batch, stream state) alone; SGLD-CV's two evaluations of a document at θ and θ̂
// then use common random numbers (estimators.cppm).
#include <sgmcmc/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "corpus.hpp"
#include "documents.hpp"
#include "topic_sampler.hpp"

import sgmcmc.sdk;

namespace lda {
namespace {

using sgmcmc::Batch;
using sgmcmc::Rng;
using sgmcmc::SectionReader;

/// The held-out metric's own stream (evaluate_metrics gets none): far above every chain's
/// (2k + 1) and recording (2k + 2) stream, so it never meets them.
constexpr std::uint64_t evaluation_stream = std::uint64_t{1} << 62;

struct Options {
  std::size_t topics = 20;
  double alpha = 0.1;  // document-topic Dirichlet concentration
  double beta = 1.0;   // Gamma shape of θ_kw
  std::size_t gibbs_sweeps = 10, gibbs_burnin = 5;
};

struct Prepared {
  std::size_t words = 0;
  std::vector<std::size_t> word_ids;  // each column's word id in the file (1-based); empty: 1..W
  TokenLists train;  // the documents of this process's share (ModelContext::rows): every one in one process
  std::size_t first_document = 0;  // the global index of train's first document (0 in one process)
  std::size_t all_documents = 0;   // N, the training documents of every share together
  TestDocuments test;
  std::vector<double> word_counts;  // n_·w over every training document, for the starting point
  std::size_t training_tokens = 0;  // n_·· over every training document
};

Options read_options(SectionReader settings) {
  Options options;
  options.topics = static_cast<std::size_t>(settings.integer_at_least("topics", 20, 1));
  options.alpha = settings.positive_number("alpha", 0.1);
  options.beta = settings.positive_number("beta", 1.0);
  options.gibbs_sweeps = static_cast<std::size_t>(settings.integer_at_least("gibbs_sweeps", 10, 1));
  options.gibbs_burnin = static_cast<std::size_t>(settings.integer_at_least("gibbs_burnin", 5, 0));
  if (options.gibbs_burnin >= options.gibbs_sweeps)
    throw sgmcmc::Error(fmt::format("{} = {}: must be below model.gibbs_sweeps = {} (at least one sweep is averaged)",
                                    settings.describe("gibbs_burnin"), options.gibbs_burnin, options.gibbs_sweeps));
  return options;
}

SimulationShape simulation_shape(SectionReader settings, std::size_t topics) {
  SimulationShape shape;
  shape.documents = static_cast<std::size_t>(settings.integer_at_least("docs", 1000, 2));
  shape.words = static_cast<std::size_t>(settings.integer_at_least("words", 500, 1));
  shape.topics = static_cast<std::size_t>(settings.integer_at_least("true_topics", static_cast<std::int64_t>(topics), 1));
  shape.doc_length = settings.number("doc_length", 100.0);
  shape.true_alpha = settings.positive_number("true_alpha", 0.1);
  shape.true_beta = settings.positive_number("true_beta", 0.05);
  if (!(shape.doc_length >= 1.0))
    throw sgmcmc::Error(fmt::format("{}: the mean document length must be ≥ 1, found {}", settings.describe("doc_length"),
                                    shape.doc_length));
  // Refused before the corpus is drawn: its tokens (a word id, a count and a topic each, as the
  // file reader counts them) and the two topic-word tables (the model's and the simulated one).
  sgmcmc::require_memory(static_cast<double>(shape.documents) * shape.doc_length, 3 * sizeof(std::uint32_t),
                         "model.docs × model.doc_length simulated tokens");
  sgmcmc::require_memory(static_cast<double>(topics + shape.topics) * static_cast<double>(shape.words), sizeof(double),
                         "model.topics (and model.true_topics) × model.words topic-word values");
  return shape;
}

void refuse_simulation_keys(SectionReader settings) {
  for (const char* key : {"docs", "words", "true_topics", "doc_length", "true_alpha", "true_beta"})
    if (settings.contains(key))
      throw sgmcmc::Error(fmt::format("{}: sets the simulated corpus; with model.data the documents come from the file",
                                      settings.describe(key)));
}

/// θ has K × W coordinates, and every chain holds θ, its gradient and its momentum: a vocabulary
/// no memory can hold is refused before the first of them (or W's word counts) is allocated.
void refuse_beyond_memory(std::size_t words, std::size_t topics, const std::string& origin) {
  const std::size_t memory = sgmcmc::memory_budget_bytes(), per_coordinate = 3 * sizeof(double);
  if (memory == 0 || words <= memory / per_coordinate / topics) return;
  const double coordinates = static_cast<double>(words) * static_cast<double>(topics);
  throw sgmcmc::Error(fmt::format("{}: W = {} words and K = {} topics make θ of {:.3g} coordinates; θ, its gradient and "
                                  "its momentum need {:.3g} GB, more than {}",
                                  origin, words, topics, coordinates, coordinates * per_coordinate / 1e9,
                                  sgmcmc::memory_budget_description()));
}

/// The note for documents that keep_words emptied.
void note_emptied(const std::string& origin, std::size_t documents, std::size_t words) {
  if (documents != 0)
    fmt::print(stderr, "sgmcmc: note: {}: {} document(s) have none of the {} most frequent words and are left out\n", origin,
               documents, words);
}

/// The corpus of model.data (or the simulated one), cut to model.vocabulary_size's most frequent
/// words when given (as Baker et al. (2019) keep Wikipedia's 1,000 most frequent): counted over
/// every document of the file, so the vocabulary does not change with max_docs or the test split.
/// `word_ids` receives the kept words' file ids (empty: all of them), `file_words` the corpus's W
/// before the cut.
Corpus read_corpus(SectionReader settings, const Options& options, Rng& rng, std::vector<std::size_t>& word_ids,
                   std::size_t& file_words) {
  Corpus corpus;
  const auto path = sgmcmc::file_setting(settings, "data");
  const std::string origin = path.value_or("the simulated corpus");
  if (path) {
    refuse_simulation_keys(settings);
    corpus = read_bag_of_words(*path);
    if (corpus.empty_documents != 0)
      fmt::print(stderr, "sgmcmc: note: {}: {} declared document(s) have no words and are left out (ids {}{})\n", *path,
                 corpus.empty_documents, fmt::join(corpus.first_empty_ids, ", "),
                 corpus.empty_documents > corpus.first_empty_ids.size() ? ", ..." : "");
  } else {
    corpus = simulate_corpus(simulation_shape(settings, options.topics), rng).corpus;
  }
  file_words = corpus.words;
  std::size_t words = corpus.words;
  if (settings.contains("vocabulary_size")) {
    words = static_cast<std::size_t>(settings.integer_at_least("vocabulary_size", 1, 1));
    if (words > corpus.words)
      throw sgmcmc::Error(fmt::format("{} = {}: more than the W = {} words of {}", settings.describe("vocabulary_size"), words,
                                      corpus.words, origin));
  }
  refuse_beyond_memory(words, options.topics, origin);
  if (words < corpus.words) {
    word_ids = most_frequent_words(corpus, words);
    note_emptied(origin, keep_words(corpus, word_ids), words);
  }
  return corpus;
}

/// model.test_data: held-out documents from their own file, in model.data's word ids (the same W),
/// cut to the same vocabulary. The training file then holds out none.
Corpus read_test_corpus(SectionReader settings, std::size_t file_words, const std::vector<std::size_t>& word_ids) {
  const std::string path = *settings.optional_text("test_data");
  if (!settings.optional_text("data"))
    throw sgmcmc::Error(fmt::format("{}: held-out documents for model.data; the simulated corpus holds out test_docs",
                                    settings.describe("test_data")));
  if (settings.contains("test_docs"))
    throw sgmcmc::Error(fmt::format("{}: the test set is model.test_data; remove one of the two", settings.describe("test_docs")));
  Corpus test = read_bag_of_words(path);
  if (test.words != file_words)
    throw sgmcmc::Error(fmt::format("{}: W = {} words, but model.data's file has W = {}: held-out documents must use the "
                                    "training file's word ids",
                                    path, test.words, file_words));
  if (!word_ids.empty())
    note_emptied(path, keep_words(test, word_ids), word_ids.size());
  return test;
}

/// The corpus, its held-out documents (model.test_data, or test_docs drawn with the data stream)
/// and, of the rest, the first max_docs in id order for training: the test set does not change
/// with max_docs, so Baker et al. (2019)'s curves at several corpus sizes score the same documents.
/// With a share of the rows (context.rows, run.data_parallel) only the share's block of the
/// training documents is kept; the word counts are every training document's, as in one process
/// (every document was read: the peak holds them all).
Prepared prepare(const sgmcmc::ModelContext& context, const Options& options) {
  SectionReader settings = context.settings;
  Rng rng(context.seed, sgmcmc::data_stream);
  Prepared prepared;
  std::size_t file_words = 0;
  Corpus corpus = read_corpus(settings, options, rng, prepared.word_ids, file_words);
  std::optional<Corpus> test_file;
  if (settings.optional_text("test_data")) test_file = read_test_corpus(settings, file_words, prepared.word_ids);

  const std::size_t documents = corpus.documents.size();
  const std::size_t test_count = test_file ? 0 : sgmcmc::row_count(settings, "test_docs", 0.1, documents, 0, documents - 1);
  const auto split = sgmcmc::split_rows(documents, test_count, rng);
  std::vector<std::size_t> held_out = split.chosen;
  std::sort(held_out.begin(), held_out.end());
  const auto max_docs = static_cast<std::size_t>(
      settings.integer_at_least("max_docs", static_cast<std::int64_t>(split.rest.size()), 1));

  prepared.words = corpus.words;
  sgmcmc::allocate(prepared.word_counts, corpus.words, 1,
                   fmt::format("{}: W = {} words", settings.optional_text("data").value_or("the simulated corpus"), corpus.words));
  const auto training = std::span(split.rest).first(std::min(max_docs, split.rest.size()));
  prepared.all_documents = training.size();
  const sgmcmc::ItemBlock mine = sgmcmc::share_block(training.size(), context.rows);
  prepared.first_document = mine.first;
  for (std::size_t k = 0; k < training.size(); ++k) {
    const auto tokens = tokens_of(corpus.documents[training[k]]);
    if (mine.holds(k)) prepared.train.add(tokens);
    for (auto w : tokens) prepared.word_counts[w] += 1.0;
    prepared.training_tokens += tokens.size();
  }
  if (test_file)
    for (const auto& document : test_file->documents) add_test_document(document, prepared.test, rng);
  else
    for (std::size_t d : held_out) add_test_document(corpus.documents[d], prepared.test, rng);
  return prepared;
}

/// Per chain: the Gibbs step's tables and counts, and the running held-out predictive average.
struct LdaWorkspace final : sgmcmc::Workspace {
  LdaWorkspace(std::size_t topics, std::size_t held_out_tokens, std::uint64_t seed)
      : sampler(topics), predictive(held_out_tokens), log_densities(held_out_tokens), mix(topics),
        evaluation_rng(seed, evaluation_stream) {}
  TopicTables tables;
  DistinctWords batch_words;  // the columns an estimate builds
  DocumentSampler sampler;
  GradientAccumulator accumulator;
  std::vector<std::uint32_t> z;  // one document's assignments
  sgmcmc::PredictiveAverage predictive;
  std::vector<double> log_densities;  // one draw's log p(w* | observed half, θ) per held-out token
  std::vector<double> mix;            // a test document's estimated topic mix
  Rng evaluation_rng;

  /// What carries across iterations: the running predictive average and the evaluation stream.
  /// The tables, counts and assignments are rebuilt by every gradient and evaluation.
  void save_state(sgmcmc::StateWriter& out) const override {
    predictive.save_state(out);
    evaluation_rng.save_state(out);
  }
  void restore_state(sgmcmc::StateReader& in) override {
    predictive.restore_state(in);
    evaluation_rng.restore_state(in);
  }
  void restart_averages() override { predictive.restart(); }
};

class LdaModel final : public sgmcmc::Model {
public:
  LdaModel(Prepared prepared, const Options& options, std::uint64_t seed)
      : options_(options), data_(std::move(prepared)), seed_(seed) {}

  std::size_t topics() const { return options_.topics; }
  std::size_t words() const { return data_.words; }
  std::size_t dimension() const override { return topics() * words(); }
  std::size_t num_items() const override { return data_.train.size(); }
  std::size_t total_items() const override { return data_.all_documents; }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names;
    names.reserve(dimension());
    for (std::size_t k = 1; k <= topics(); ++k)
      for (std::size_t w = 0; w < words(); ++w)
        names.push_back(fmt::format("theta.{}.{}", k, data_.word_ids.empty() ? w + 1 : data_.word_ids[w]));
    return names;
  }
  sgmcmc::Capabilities capabilities() const override { return capabilities_of_lda(); }
  static sgmcmc::Capabilities capabilities_of_lda() {
    return {.latent_gibbs_step = true, .positive_parameters = true, .simulation = true, .row_shares = true};
  }

  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override {
    return std::make_unique<LdaWorkspace>(topics(), data_.test.held_out.tokens(), seed_);
  }

  /// θ_kw = Wβ · (n_·w + β)/(n_·· + Wβ) · (½ + u), u ~ U(0, 1): each topic near the smoothed
  /// training unigram distribution, the symmetry between topics broken, and the scale θ_k· ≈ Wβ
  /// the posterior has: the likelihood reads π = θ/θ_k· only, so θ_k· keeps its Gamma(Wβ, 1) prior
  /// (mean Wβ) a posteriori (Patterson & Teh 2013, §3). A start at another scale spends the
  /// first iterations rescaling every coordinate.
  void initial_point(std::span<double> theta, Rng& rng) const override {
    const double w = static_cast<double>(words()), beta = options_.beta;
    const double scale = w * beta / (static_cast<double>(data_.training_tokens) + w * beta);
    for (std::size_t t = 0; t < topics(); ++t)
      for (std::size_t v = 0; v < words(); ++v)
        theta[t * words() + v] = scale * (data_.word_counts[v] + beta) * (0.5 + rng.uniform());
  }

  double prior_potential(std::span<const double> theta) const override {
    double sum = 0.0;
    for (double x : theta) sum += (1.0 - options_.beta) * std::log(x) + x;
    return sum;
  }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    for (std::size_t j = 0; j < theta.size(); ++j) gradient[j] += (1.0 - options_.beta) / theta[j] + 1.0;
  }

  /// gradient += Σ_k w_k ∇f_{d_k}(θ), each expectation by the Gibbs step: O(tokens × sweeps) for
  /// the sampler and the sparse term, O(K·W) for θ's row sums and the gradient's rows, O(K) for
  /// each distinct word of the batch (its column of π).
  /// Document d's Gibbs step draws from its own stream (key, d), d its index among every training
  /// document, the key being one draw of the chain's stream per call: its topics do not depend on
  /// the process that samples it, so that on a data-parallel run each rank samples the documents it
  /// holds, draws one key as every rank does (its batch may hold none), and the ranks' streams stay one.
  void add_data_gradient(std::span<const double> theta, const Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace& base, Rng& rng) const override {
    const std::uint64_t key = rng.bits();
    auto& workspace = static_cast<LdaWorkspace&>(base);
    workspace.batch_words.start(words());
    for (const auto d : batch.items) workspace.batch_words.add(data_.train[d]);
    workspace.tables.set_topics(theta, topics(), words(), workspace.batch_words.sorted());
    workspace.accumulator.start(topics());
    const double kept = static_cast<double>(options_.gibbs_sweeps - options_.gibbs_burnin);
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const auto tokens = data_.train[batch.items[k]];
      const double weight = batch.weight(k) / kept;
      Rng document_rng(key, data_.first_document + batch.items[k]);  // the global index
      sample_topics(tokens, workspace, document_rng, [&](std::span<const std::uint32_t> z) {
        for (std::size_t j = 0; j < tokens.size(); ++j)
          workspace.accumulator.add_token(z[j], tokens[j], weight, theta, words(), gradient);
      });
    }
    workspace.accumulator.finish(workspace.tables.row_sums(), words(), gradient);
  }

  // ---- held-out perplexity by document completion -------------------------------------------------

  std::vector<std::string> metric_names() const override {
    return data_.test.held_out.tokens() ? std::vector<std::string>{"perplexity"} : std::vector<std::string>{};
  }

  /// exp(-(1/J) Σ_j log[(1/S) Σ_s p(w*_j | observed half, θ_s)]) over the J held-out tokens and the
  /// S draws evaluated so far: the running posterior-predictive average (sgmcmc::PredictiveAverage),
  /// burn-in included, as Baker et al. (2019)'s Figure 5 plots it.
  void evaluate_metrics(std::span<const double> theta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<LdaWorkspace&>(base);
    score_held_out(theta, workspace);
    out[0] = std::exp(-workspace.predictive.add(workspace.log_densities));
  }

  std::vector<std::string> quantity_names() const override {
    return data_.test.held_out.tokens() ? std::vector<std::string>{"held_out_log_density"} : std::vector<std::string>{};
  }

  /// One draw's (1/J) Σ_j log p(w*_j | observed half, θ): the log of its own perplexity, negated.
  void evaluate_quantities(std::span<const double> theta, sgmcmc::Workspace& base, std::span<double> out) const override {
    auto& workspace = static_cast<LdaWorkspace&>(base);
    score_held_out(theta, workspace);
    const auto& terms = workspace.log_densities;
    out[0] = std::accumulate(terms.begin(), terms.end(), 0.0) / static_cast<double>(terms.size());
  }

private:
  /// The Gibbs step on one document's tokens given the tables' π: z from π alone, then the
  /// sweeps; `use(z)` after each sweep past the burn-in.
  template <class Use>
  void sample_topics(std::span<const std::uint32_t> tokens, LdaWorkspace& workspace, Rng& rng, Use&& use) const {
    workspace.z.resize(tokens.size());
    const std::span z(workspace.z);
    workspace.sampler.initialise(tokens, z, workspace.tables, rng);
    for (std::size_t sweep = 1; sweep <= options_.gibbs_sweeps; ++sweep) {
      workspace.sampler.sweep(tokens, z, workspace.tables, options_.alpha, rng);
      if (sweep > options_.gibbs_burnin) use(std::span<const std::uint32_t>(z));
    }
  }

  /// log_densities[j] ← log p(w*_j | observed half, θ) = log Σ_k ϑ̂_dk π_{k,w*_j}, with
  /// ϑ̂_dk = (α + n̄_dk) / (Kα + L_obs) the posterior mean of the document's mix given its observed
  /// half, n̄ the counts averaged over the kept sweeps (Rao–Blackwellised over ϑ_d).
  void score_held_out(std::span<const double> theta, LdaWorkspace& workspace) const {
    const auto& test = data_.test;
    workspace.tables.set_topics(theta, topics(), words());
    const double kept = static_cast<double>(options_.gibbs_sweeps - options_.gibbs_burnin);
    std::size_t next = 0;
    for (std::size_t d = 0; d < test.observed.size(); ++d) {
      const auto observed = test.observed[d];
      std::fill(workspace.mix.begin(), workspace.mix.end(), 0.0);
      sample_topics(observed, workspace, workspace.evaluation_rng, [&](std::span<const std::uint32_t>) {
        for (std::size_t k = 0; k < topics(); ++k) workspace.mix[k] += workspace.sampler.count(k);
      });
      const double denominator = static_cast<double>(topics()) * options_.alpha + static_cast<double>(observed.size());
      for (double& m : workspace.mix) m = (options_.alpha + m / kept) / denominator;
      for (const auto word : test.held_out[d]) {
        const auto column = workspace.tables.column(word);
        double p = 0.0;
        for (std::size_t k = 0; k < topics(); ++k) p += workspace.mix[k] * column.pi[k];
        workspace.log_densities[next++] = std::log(p);
      }
    }
  }

  Options options_;
  Prepared data_;
  std::uint64_t seed_;
};

sgmcmc::PluginInfo lda_info() {
  return {.name = "lda",
          .description =
              "Latent Dirichlet allocation, K topics θ_kw ~ Gamma(β, 1) (expanded mean, π = θ/rowsum), document mixes "
              "~ Dirichlet(α) integrated out, topic assignments Gibbs-sampled inside the gradient (Baker et al. 2019, §5.3; "
              "Patterson & Teh 2013). Keys: data (UCI docword file, .gz or plain, or its .csr from sgmcmc convert --docword), test_data (held-out documents, same "
              "format and word ids), test_docs (0.1: fraction, or an integer count), vocabulary_size (all: keep the most "
              "frequent words of data), max_docs (training documents kept, first by id), topics (20), alpha (0.1), beta (1), "
              "gibbs_sweeps (10), gibbs_burnin (5); simulated corpus (no data): docs (1000), words (500), true_topics "
              "(= topics), doc_length (100), true_alpha (0.1), true_beta (0.05)",
          .parameters = "theta.<k>.<w>: topic k's weight of word w (word ids as in the file), k = 1..topics",
          .capabilities = LdaModel::capabilities_of_lda(),
          .no_prior_simulation =
              "its topics are exchangeable (label switching): the posterior is invariant under the K! permutations of "
              "the topics and a chain stays in one labelling, so the rank of a coordinate of θ* among its draws is not "
              "uniform even for an exact sampler; its gradient is also a Gibbs estimate, not an exact one"};
}

std::unique_ptr<sgmcmc::Model> make_lda(const sgmcmc::ModelContext& context) {
  const Options options = read_options(context.settings);
  Prepared prepared = prepare(context, options);
  if (prepared.train.tokens() == 0) throw sgmcmc::Error("model: no training document is left after the test set was held out");
  return std::make_unique<LdaModel>(std::move(prepared), options, context.seed);
}

}  // namespace
}  // namespace lda

SGMCMC_MODEL_PLUGIN(lda::lda_info, lda::make_lda)
