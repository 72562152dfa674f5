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
// - the smoothing bucket α π_{·,w} depends on the word alone, so each distinct word gets a Walker
//   alias table (Walker 1977; Vose 1991, "A linear algorithm for generating random numbers with a
//   given distribution", IEEE TSE) built once per estimate in O(K), and a draw from it is O(1) —
//   the static-proposal idea of AliasLDA (Li, Ahmed, Ravi & Smola 2014, KDD), here exact because
//   π does not move during the sweeps;
// - the document bucket is a sum over the K_d topics present in the document, O(K_d) ≤ O(K).
// A token therefore costs O(K_d + 1) instead of the O(K) of the plain conditional, and the draw
// is exact (no Metropolis–Hastings correction is needed).
//
// Every token update uses exactly one uniform variate (the bucket, the topic within it and the
// alias coin all come from it), so two evaluations of a document that start from the same
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

/// π_{·,w} of one word, its sum s_w = Σ_k π_kw and its alias table, for the current topics.
struct WordColumn {
  const double* pi;              // π_kw, k = 0..K-1
  const double* keep;            // alias table: keep column k with probability keep[k] ...
  const std::uint32_t* alias;    // ... else take alias[k]
  double smoothing_mass;         // s_w = Σ_k π_kw

  /// A topic with probability π_kw / s_w from v uniform on [0, 1): column ⌊vK⌋, coin vK - ⌊vK⌋.
  std::uint32_t draw(double v, std::size_t topics) const {
    const double scaled = v * static_cast<double>(topics);
    const auto column = std::min(static_cast<std::size_t>(scaled), topics - 1);
    return scaled - static_cast<double>(column) < keep[column] ? static_cast<std::uint32_t>(column) : alias[column];
  }
};

/// The topics π = θ / rowsum(θ) of one estimate, and the columns of the words it has met so far.
/// set_topics() starts a new estimate; column(w) builds w's column on first use (O(K)).
class TopicTables {
public:
  /// θ is K × W, row-major by topic, every entry > 0.
  void set_topics(std::span<const double> theta, std::size_t topics, std::size_t words) {
    theta_ = theta.data();
    topics_ = topics;
    words_ = words;
    row_sums_.assign(topics, 0.0);
    for (std::size_t k = 0; k < topics; ++k)
      for (std::size_t w = 0; w < words; ++w) row_sums_[k] += theta[k * words + w];
    inverse_row_sums_.resize(topics);
    for (std::size_t k = 0; k < topics; ++k) inverse_row_sums_[k] = 1.0 / row_sums_[k];
    if (stamp_.size() != words) {
      stamp_.assign(words, 0);
      slot_.assign(words, 0);
    }
    ++estimate_;  // every column built before is stale now
    used_slots_ = 0;
  }

  std::size_t topics() const { return topics_; }
  std::size_t words() const { return words_; }
  /// θ_k· = Σ_w θ_kw.
  std::span<const double> row_sums() const { return row_sums_; }

  WordColumn column(std::uint32_t word) {
    if (stamp_[word] != estimate_) build(word);
    const std::size_t at = slot_[word] * topics_;
    return {&pi_[at], &keep_[at], &alias_[at], smoothing_mass_[slot_[word]]};
  }

private:
  /// Vose's alias method: scaled probabilities q_k = K π_kw / s_w; pair each column below 1 with
  /// one above, which gives it the rest of its unit of mass.
  void build(std::uint32_t word) {
    if (used_slots_ * topics_ == pi_.size()) {
      const std::size_t grown = std::max<std::size_t>(16, 2 * used_slots_) * topics_;
      pi_.resize(grown);
      keep_.resize(grown);
      alias_.resize(grown);
      smoothing_mass_.resize(grown / topics_);
    }
    const std::size_t slot = used_slots_++;
    stamp_[word] = estimate_;
    slot_[word] = static_cast<std::uint32_t>(slot);
    double* pi = &pi_[slot * topics_];
    double* keep = &keep_[slot * topics_];
    std::uint32_t* alias = &alias_[slot * topics_];
    double sum = 0.0;
    for (std::size_t k = 0; k < topics_; ++k) sum += pi[k] = theta_[k * words_ + word] * inverse_row_sums_[k];
    smoothing_mass_[slot] = sum;
    small_.clear();
    large_.clear();
    for (std::size_t k = 0; k < topics_; ++k) {
      keep[k] = pi[k] * static_cast<double>(topics_) / sum;
      alias[k] = static_cast<std::uint32_t>(k);
      (keep[k] < 1.0 ? small_ : large_).push_back(static_cast<std::uint32_t>(k));
    }
    while (!small_.empty() && !large_.empty()) {
      const std::uint32_t low = small_.back(), high = large_.back();
      small_.pop_back();
      alias[low] = high;
      keep[high] -= 1.0 - keep[low];
      if (keep[high] < 1.0) {
        large_.pop_back();
        small_.push_back(high);
      }
    }
    for (auto k : large_) keep[k] = 1.0;  // left over by rounding: exactly full columns
    for (auto k : small_) keep[k] = 1.0;
  }

  const double* theta_ = nullptr;
  std::size_t topics_ = 0, words_ = 0;
  std::vector<double> row_sums_, inverse_row_sums_;
  std::uint64_t estimate_ = 0;
  std::vector<std::uint64_t> stamp_;  // per word: the estimate its column was built for
  std::vector<std::uint32_t> slot_;   // per word: where its column is
  std::size_t used_slots_ = 0;
  std::vector<double> pi_, keep_, smoothing_mass_;
  std::vector<std::uint32_t> alias_;
  std::vector<std::uint32_t> small_, large_;  // Vose's work lists
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
  void initialise(std::span<const std::uint32_t> words, std::span<std::uint32_t> z, TopicTables& tables, Random& rng) {
    clear();
    for (std::size_t j = 0; j < words.size(); ++j) {
      z[j] = tables.column(words[j]).draw(rng.uniform(), tables.topics());
      add(z[j]);
    }
  }

  /// One Gibbs sweep over the document's tokens in order (systematic scan).
  template <class Random>
  void sweep(std::span<const std::uint32_t> words, std::span<std::uint32_t> z, TopicTables& tables, double alpha,
             Random& rng) {
    for (std::size_t j = 0; j < words.size(); ++j) resample(j, words, z, tables, alpha, rng);
  }

  /// z_j from its full conditional given the other tokens' topics (the counts must be those of z).
  template <class Random>
  void resample(std::size_t j, std::span<const std::uint32_t> words, std::span<std::uint32_t> z, TopicTables& tables,
                double alpha, Random& rng) {
    remove(z[j]);
    z[j] = draw(tables.column(words[j]), alpha, rng.uniform(), tables.topics());
    add(z[j]);
  }

  std::uint32_t count(std::size_t topic) const { return counts_[topic]; }
  std::size_t topics_present() const { return present_.size(); }

private:
  /// A topic from (α + n_dk) π_kw with the counts as they are: u picks a point of the total mass
  /// r + α s_w; below r it falls in the document bucket (walked over the topics present), above
  /// it in the smoothing bucket, where (u - r) / (α s_w) is again uniform on [0, 1).
  std::uint32_t draw(const WordColumn& column, double alpha, double uniform, std::size_t topics) {
    double document_mass = 0.0;
    const std::size_t present = present_.size();
    for (std::size_t i = 0; i < present; ++i) {
      const std::uint32_t k = present_[i];
      document_mass += static_cast<double>(counts_[k]) * column.pi[k];
      cumulative_[i] = document_mass;
    }
    const double smoothing = alpha * column.smoothing_mass;
    const double u = uniform * (document_mass + smoothing);
    if (u < document_mass) {
      std::size_t i = 0;
      while (cumulative_[i] <= u) ++i;
      return present_[i];
    }
    return column.draw(std::min((u - document_mass) / smoothing, 1.0), topics);
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
