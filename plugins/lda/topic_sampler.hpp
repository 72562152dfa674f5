// The Gibbs step of LDA's gradient: topic assignments z of one document's tokens given the topics
// π (fixed during an estimate), with the document's mix ϑ_d ~ Dirichlet(α) integrated out:
//
//   p(z_j = k | z_¬j, w, π) ∝ (α + n_dk^¬j) π_{k,w_j}                      (Patterson & Teh 2013)
//                           = α π_{k,w_j}  +  n_dk^¬j π_{k,w_j}
//                             smoothing s_w     document r_dw
//
// Split into two buckets as SparseLDA does (Yao, Mimno & McCallum 2009, "Efficient methods for
// topic model inference on streaming document collections", KDD, §3.4; there with three buckets
// because their topic-word term changes with every update; here π is fixed, so two suffice):
// - the smoothing bucket α π_{·,w} depends on the word alone: with π fixed during an estimate,
//   each word's column π_{·,w} and its sum s_w are computed once per estimate for the words the
//   estimate meets (TopicTables, O(K) a word), and a draw from the bucket is a linear scan, O(K);
// - the document bucket is a sum over the K_d topics present in the document, O(K_d) ≤ O(K).
// A token therefore costs O(K_d), plus O(K) for the draws that land in the smoothing bucket
// (with probability α s_w / (r_dw + α s_w): 1%, 7% and 27% of the draws at K = 20, 100 and 500
// with learnt topics, in the benchmark), instead of the O(K) of every plain draw; and the
// draw is exact (no Metropolis–Hastings correction, unlike AliasLDA's stale alias proposals: Li,
// Ahmed, Ravi & Smola 2014, KDD).
//
// Every token update uses exactly one uniform variate (both the bucket and the topic within it
// come from it), so two evaluations of a document that start from the same
// stream state stay aligned token by token: common random numbers for SGLD-CV's differences.
//
// Header only and templated on the random stream (anything with uniform() on [0, 1)), so the
// tests and the benchmark use the very code the plugin runs.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace lda {

/// Σ_w row[w] with four partial sums: four independent chains of additions instead of one.
inline double row_sum(std::span<const double> row) {
  double partial[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t w = 0;
  for (; w + 4 <= row.size(); w += 4)
    for (std::size_t lane = 0; lane < 4; ++lane) partial[lane] += row[w + lane];
  for (; w < row.size(); ++w) partial[0] += row[w];
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

/// π_{·,w} of one word and its sum, for the current topics.
struct WordColumn {
  const double* pi;  // π_kw, k = 0..K-1
  double smoothing;  // s_w = Σ_k π_kw
  std::size_t topics;

  double smoothing_mass() const { return smoothing; }
  /// The topic whose interval of the running sums of π_{·,w} holds `target` ∈ [0, s_w): a topic
  /// with probability π_kw / s_w when target is uniform. A linear scan, O(K), but only for the
  /// draws that fall in the smoothing bucket (see the top of the file); keeping running sums for
  /// a bisection instead doubled the per-estimate tables and cost more than it saved at K ≤ 500.
  std::uint32_t draw(double target) const {
    double sum = 0.0;
    for (std::size_t k = 0; k + 1 < topics; ++k)
      if ((sum += pi[k]) > target) return static_cast<std::uint32_t>(k);
    return static_cast<std::uint32_t>(topics - 1);
  }
};

/// The topics π = θ / rowsum(θ) of one estimate, stored by word (W × K) with each word's sum
/// s_w. The row sums θ_k· read all of θ, O(K·W), the order of the estimate's dense terms anyway
/// (the gradient's n_dk·/θ_k· rows, the prior, the integrator's noise); the columns are built only
/// for the words an estimate meets (a batch of 50 KOS documents has 2,200–2,800 of its 6,906 words), so
/// a column of a word not asked for holds stale values.
class TopicTables {
public:
  /// θ is K × W, row-major by topic, every entry > 0. Columns for every word.
  void set_topics(std::span<const double> theta, std::size_t topics, std::size_t words) {
    all_words_.resize(words);
    for (std::size_t w = 0; w < words; ++w) all_words_[w] = static_cast<std::uint32_t>(w);
    set_topics(theta, topics, words, all_words_);
  }

  /// Columns only for `needed`, word ids in increasing order (so that θ's rows are read forwards).
  void set_topics(std::span<const double> theta, std::size_t topics, std::size_t words,
                  std::span<const std::uint32_t> needed) {
    topics_ = topics;
    words_ = words;
    row_sums_.resize(topics);
    inverse_row_sums_.resize(topics);
    for (std::size_t k = 0; k < topics; ++k) {
      row_sums_[k] = row_sum(theta.subspan(k * words, words));
      inverse_row_sums_[k] = 1.0 / row_sums_[k];  // a multiplication per entry below instead of a division
    }
    pi_.resize(topics_ * words_);
    smoothing_.resize(words_);
    transpose_normalised(theta, needed);
  }

  std::size_t topics() const { return topics_; }
  std::size_t words() const { return words_; }
  /// θ_k· = Σ_w θ_kw.
  std::span<const double> row_sums() const { return row_sums_; }

  WordColumn column(std::uint32_t word) const { return {&pi_[word * topics_], smoothing_[word], topics_}; }

private:
  /// θ read by rows of topics, written by words: blocks of 16 topics keep 16 read streams and
  /// one short write run per word (θ's stride of W would otherwise cost a cache miss per entry).
  void transpose_normalised(std::span<const double> theta, std::span<const std::uint32_t> needed) {
    constexpr std::size_t block = 16;
    for (const std::uint32_t w : needed) smoothing_[w] = 0.0;
    for (std::size_t first = 0; first < topics_; first += block) {
      const std::size_t last = std::min(first + block, topics_);
      for (const std::uint32_t w : needed) {
        double* pi = &pi_[w * topics_];
        double sum = 0.0;
        for (std::size_t k = first; k < last; ++k) sum += pi[k] = theta[k * words_ + w] * inverse_row_sums_[k];
        smoothing_[w] += sum;
      }
    }
  }

  std::size_t topics_ = 0, words_ = 0;
  std::vector<double> row_sums_, inverse_row_sums_;
  std::vector<double> pi_;         // π_kw at [w·K + k]
  std::vector<double> smoothing_;  // s_w = Σ_k π_kw
  std::vector<std::uint32_t> all_words_;
};

/// The distinct words of a set of documents in increasing order (a mark per word, O(tokens + W)):
/// the columns an estimate needs.
class DistinctWords {
public:
  void start(std::size_t words) {
    marked_.assign(words, 0);
    list_.clear();
  }
  void add(std::span<const std::uint32_t> tokens) {
    for (const auto w : tokens) marked_[w] = 1;
  }
  std::span<const std::uint32_t> sorted() {
    list_.clear();
    for (std::size_t w = 0; w < marked_.size(); ++w)
      if (marked_[w]) list_.push_back(static_cast<std::uint32_t>(w));
    return list_;
  }

private:
  std::vector<std::uint8_t> marked_;
  std::vector<std::uint32_t> list_;
};

/// The topic counts n_dk of the document being sampled, with the list of topics present.
class DocumentSampler {
public:
  explicit DocumentSampler(std::size_t topics = 0) { resize(topics); }

  void resize(std::size_t topics) {
    counts_.assign(topics, 0);
    position_.assign(topics, 0);
    present_.clear();
    cumulative_.resize(topics);
  }

  /// z_j ~ π_{·,w_j} / s_{w_j} independently (the conditional without the document term), then
  /// the counts of that start. One uniform per token.
  template <class Random>
  void initialise(std::span<const std::uint32_t> words, std::span<std::uint32_t> z, const TopicTables& tables,
                  Random& rng) {
    clear();
    for (std::size_t j = 0; j < words.size(); ++j) {
      const auto column = tables.column(words[j]);
      z[j] = column.draw(rng.uniform() * column.smoothing_mass());
      add(z[j]);
    }
  }

  /// One Gibbs sweep over the document's tokens in order (systematic scan).
  template <class Random>
  void sweep(std::span<const std::uint32_t> words, std::span<std::uint32_t> z, const TopicTables& tables, double alpha,
             Random& rng) {
    for (std::size_t j = 0; j < words.size(); ++j) resample(j, words, z, tables, alpha, rng);
  }

  /// z_j from its full conditional given the other tokens' topics (the counts must be those of z).
  template <class Random>
  void resample(std::size_t j, std::span<const std::uint32_t> words, std::span<std::uint32_t> z,
                const TopicTables& tables, double alpha, Random& rng) {
    remove(z[j]);
    z[j] = draw(tables.column(words[j]), alpha, rng.uniform());
    add(z[j]);
  }

  std::uint32_t count(std::size_t topic) const { return counts_[topic]; }
  std::size_t topics_present() const { return present_.size(); }

private:
  /// A topic from (α + n_dk) π_kw with the counts as they are: u picks a point of the total mass
  /// r + α s_w; below r it falls in the document bucket (walked over the topics present), above
  /// it in the smoothing bucket, where (u - r) / α is a point of [0, s_w).
  std::uint32_t draw(const WordColumn& column, double alpha, double uniform) {
    double document_mass = 0.0;
    const std::size_t present = present_.size();
    for (std::size_t i = 0; i < present; ++i) {
      const std::uint32_t k = present_[i];
      document_mass += static_cast<double>(counts_[k]) * column.pi[k];
      cumulative_[i] = document_mass;
    }
    const double smoothing = column.smoothing_mass();
    const double u = uniform * (document_mass + alpha * smoothing);
    if (u < document_mass) {
      std::size_t i = 0;
      while (cumulative_[i] <= u) ++i;
      return present_[i];
    }
    return column.draw(std::min((u - document_mass) / alpha, smoothing));
  }

  void add(std::uint32_t k) {
    if (counts_[k]++ == 0) {
      position_[k] = static_cast<std::uint32_t>(present_.size());
      present_.push_back(k);
    }
  }
  void remove(std::uint32_t k) {
    if (--counts_[k] == 0) {  // swap the last present topic into k's place
      const std::uint32_t last = present_.back();
      present_[position_[k]] = last;
      position_[last] = position_[k];
      present_.pop_back();
    }
  }
  void clear() {
    for (auto k : present_) counts_[k] = 0;
    present_.clear();
  }

  std::vector<std::uint32_t> counts_;    // n_dk
  std::vector<std::uint32_t> position_;  // where topic k sits in present_
  std::vector<std::uint32_t> present_;   // the topics with n_dk > 0
  std::vector<double> cumulative_;       // scratch: running document-bucket mass
};

/// The data part of ∇U for fixed assignments, averaged over sweeps: with π_kw = θ_kw / θ_k·,
///   ∇_{θ_kv} log p(w_d | z_d, θ) = Σ_j [δ_{k z_j} δ_{v w_j} / θ_kv - δ_{k z_j} / θ_k·]
///                                = n_dkv / θ_kv - n_dk· / θ_k·          (Patterson & Teh 2013)
/// and ∇U = -that. The first term is sparse (one coordinate per token); the second is dense over
/// the words, so it is kept as one weight per topic and spread over the row once, in finish():
/// a batch costs O(its tokens + K·W), not O(documents · K · W).
class GradientAccumulator {
public:
  void start(std::size_t topics) { topic_weight_.assign(topics, 0.0); }

  /// A token with topic k and word w, counted with `weight` (the batch weight over the sweeps).
  void add_token(std::uint32_t k, std::uint32_t w, double weight, std::span<const double> theta, std::size_t words,
                 std::span<double> gradient) {
    gradient[k * words + w] -= weight / theta[k * words + w];
    topic_weight_[k] += weight;
  }

  /// gradient_kv += (Σ weights of topic k) / θ_k· for every word v.
  void finish(std::span<const double> row_sums, std::size_t words, std::span<double> gradient) const {
    for (std::size_t k = 0; k < topic_weight_.size(); ++k) {
      if (topic_weight_[k] == 0.0) continue;
      const double add = topic_weight_[k] / row_sums[k];
      double* row = &gradient[k * words];
      for (std::size_t v = 0; v < words; ++v) row[v] += add;
    }
  }

private:
  std::vector<double> topic_weight_;
};

}  // namespace lda
