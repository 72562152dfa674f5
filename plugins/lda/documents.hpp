// Documents as token lists, the form the Gibbs step reads: the training set, and the test set
// split for document completion. Built from a Corpus (corpus.hpp) by the model's factory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "corpus.hpp"

namespace lda {

/// Every document's word ids, one per token, concatenated; document d is [start[d], start[d+1]).
class TokenLists {
public:
  TokenLists() : start_{0} {}
  void add(std::span<const std::uint32_t> tokens) {
    words_.insert(words_.end(), tokens.begin(), tokens.end());
    start_.push_back(words_.size());
  }
  std::size_t size() const { return start_.size() - 1; }
  std::size_t tokens() const { return words_.size(); }
  std::span<const std::uint32_t> operator[](std::size_t d) const {
    return {words_.data() + start_[d], start_[d + 1] - start_[d]};
  }

private:
  std::vector<std::uint32_t> words_;
  std::vector<std::size_t> start_;
};

/// A document's tokens in word order: `count` copies of each word.
inline std::vector<std::uint32_t> tokens_of(const std::vector<WordCount>& document) {
  std::vector<std::uint32_t> tokens;
  for (const auto& entry : document) tokens.insert(tokens.end(), entry.count, entry.word);
  return tokens;
}

/// Document completion (Wallach, Murray, Salakhutdinov & Mimno 2009, "Evaluation methods for
/// topic models", ICML, §4.3): each test document's tokens are shuffled with the data stream and
/// split; the topic mix is estimated from `observed` (the first ⌈L/2⌉) and `held_out` (the rest)
/// is scored.
struct TestDocuments {
  TokenLists observed, held_out;
};

template <class Random>
void add_test_document(const std::vector<WordCount>& document, TestDocuments& test, Random& rng) {
  auto tokens = tokens_of(document);
  for (std::size_t j = 0; j + 1 < tokens.size(); ++j)  // Fisher–Yates
    std::swap(tokens[j], tokens[j + rng.index(tokens.size() - j)]);
  const std::size_t observed = tokens.size() - tokens.size() / 2;
  test.observed.add(std::span(tokens).first(observed));
  test.held_out.add(std::span(tokens).subspan(observed));
}

}  // namespace lda
