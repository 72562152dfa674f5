// The Gibbs step of LDA's gradient: topic assignments z of one document's tokens given the topics
// π (fixed during an estimate), with the document's mix ϑ_d ~ Dirichlet(α) integrated out:
//
//   p(z_j = k | z_¬j, w, π) ∝ (α + n_dk^¬j) π_{k,w_j}                      (SCIENCE.md, LDA)
//                           = α π_{k,w_j}  +  n_dk^¬j π_{k,w_j}
//                             smoothing s_w     document r_dw
//
// Split into two buckets as SparseLDA does (Yao, Mimno & McCallum 2009, "Efficient methods for
// topic model inference on streaming document collections", KDD, §3.4; there with three buckets
// because their topic-word term changes with every update; here π is fixed, so two suffice):
// - the smoothing bucket α π_{·,w} depends on the word alone: with π fixed during an estimate,
//   each word's running sums over k are computed once per estimate (TopicTables, O(K·W)) and a
//   draw from the bucket is a bisection, O(log K);
// - the document bucket is a sum over the K_d topics present in the document, O(K_d) ≤ O(K).
// A token therefore costs O(K_d + log K) instead of the O(K) of the plain conditional, and the
// draw is exact (no Metropolis–Hastings correction, unlike AliasLDA's stale alias proposals: Li,
// Ahmed, Ravi & Smola 2014, KDD). When the document's topics are concentrated (small α, learnt
// topics) most draws fall in the document bucket and never touch the O(log K) part.
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

/// π_{·,w} of one word and its running sums, for the current topics.
struct WordColumn {
  const double* pi;          // π_kw, k = 0..K-1
  const double* cumulative;  // Σ_{k' ≤ k} π_k'w; the last is s_w = Σ_k π_kw
  std::size_t topics;

  double smoothing_mass() const { return cumulative[topics - 1]; }
  /// The topic whose interval of the running sums holds `target` ∈ [0, s_w): a topic with
  /// probability π_kw / s_w when target is uniform. Bisection, O(log K).
  std::uint32_t draw(double target) const {
    const auto at = std::upper_bound(cumulative, cumulative + topics, target) - cumulative;
    return static_cast<std::uint32_t>(std::min<std::ptrdiff_t>(at, static_cast<std::ptrdiff_t>(topics) - 1));
  }
};

/// The topics π = θ / rowsum(θ) of one estimate, stored by word (W × K) with each word's running
/// sums: O(K·W) per estimate, the order of the estimate's dense terms anyway (the gradient's
/// n_dk·/θ_k· rows, the prior, the integrator's noise).
class TopicTables {
public:
  /// θ is K × W, row-major by topic, every entry > 0.
  void set_topics(std::span<const double> theta, std::size_t topics, std::size_t words) {
    topics_ = topics;
    words_ = words;
    row_sums_.assign(topics, 0.0);
    for (std::size_t k = 0; k < topics; ++k)
      for (std::size_t w = 0; w < words; ++w) row_sums_[k] += theta[k * words + w];
    transpose_normalised(theta);
  }

  std::size_t topics() const { return topics_; }
  std::size_t words() const { return words_; }
  /// θ_k· = Σ_w θ_kw.
  std::span<const double> row_sums() const { return row_sums_; }

  WordColumn column(std::uint32_t word) const {
    return {&pi_[word * topics_], &cumulative_[word * topics_], topics_};
  }

private:
  /// θ read by rows of topics, written by words: blocks of 16 topics keep 16 read streams and
  /// one short write run per word (θ's stride of W would otherwise cost a cache miss per entry).
  void transpose_normalised(std::span<const double> theta) {
    constexpr std::size_t block = 16;
    pi_.resize(topics_ * words_);
    cumulative_.resize(topics_ * words_);
    for (std::size_t first = 0; first < topics_; first += block) {
      const std::size_t last = std::min(first + block, topics_);
      for (std::size_t w = 0; w < words_; ++w)
        for (std::size_t k = first; k < last; ++k) pi_[w * topics_ + k] = theta[k * words_ + w] / row_sums_[k];
    }
    for (std::size_t w = 0; w < words_; ++w) {
      double sum = 0.0;
      for (std::size_t k = 0; k < topics_; ++k) cumulative_[w * topics_ + k] = sum += pi_[w * topics_ + k];
    }
  }

  std::size_t topics_ = 0, words_ = 0;
  std::vector<double> row_sums_;
  std::vector<double> pi_, cumulative_;  // π_kw and its running sum over k, at [w·K + k]
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
///                                = n_dkv / θ_kv - n_dk· / θ_k·          (SCIENCE.md, LDA)
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
