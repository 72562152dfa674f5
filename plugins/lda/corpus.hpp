// A corpus as bags of words: read from the UCI bag-of-words format, or simulated from LDA itself
// with planted topics. The model turns documents into token lists; this file knows only counts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lda {

/// One (word, count) entry of a document; word ids are 0-based here (the file's id - 1).
struct WordCount {
  std::uint32_t word;
  std::uint32_t count;
};

struct Corpus {
  std::size_t words = 0;                          // W, the vocabulary size
  std::vector<std::vector<WordCount>> documents;  // by document, in id order
  std::vector<std::size_t> ids;                   // each document's id (1-based, the file's)
  std::size_t empty_documents = 0;                // declared documents with no words, left out
  std::vector<std::size_t> first_empty_ids;       // the first few of their ids, for the note
};

/// Reads UCI's bag-of-words format (`docword.<name>.txt`, plain or gzip; Newman 2008, UCI
/// Machine Learning Repository "Bag of Words"): three header lines D, W, NNZ, then NNZ lines
/// `docID wordID count`, ids 1-based. Errors name path:line: a header line that is not a positive
/// integer, a line without exactly three integers, an id outside 1..D or 1..W, a count < 1, more
/// or fewer body lines than NNZ. A (doc, word) pair on two lines adds its counts. A declared
/// document with no line is skipped (its likelihood is 1 whatever θ, so leaving it out changes
/// nothing in the posterior) and counted in `empty_documents`. Memory grows with the file's
/// lines, not with the header's D and W, so a header that declares far more than the file holds
/// costs nothing.
///
/// A path naming a `.csr` folder is `sgmcmc convert --docword`'s binary layout of the same corpus,
/// read by mapping it, without parsing: the D × W count matrix as scipy.sparse.csr_matrix holds it,
/// in 1-D .npy arrays `shape` (D, W), `indptr` (D + 1 offsets; document id d + 1 is row d),
/// `indices` (0-based word ids, increasing along a row) and `data` (the counts, ≥ 1), all '<i8' or
/// '<i4'. It gives the Corpus the text gives, empty documents included; each refusal names the
/// array and the entry.
Corpus read_bag_of_words(const std::string& path);

/// Writes `corpus` (as read_bag_of_words returns it, before any cut of its words) in that `.csr`
/// layout, for `sgmcmc convert --docword`.
void write_bag_of_words_csr(const Corpus& corpus, const std::string& folder);

/// The file ids (1-based) of the `size` most frequent words of `corpus` (total count over all its
/// documents, ties to the lower id; words that never occur follow in id order when fewer than
/// `size` occur), in increasing id order. `size` is below corpus.words.
std::vector<std::size_t> most_frequent_words(const Corpus& corpus, std::size_t size);

/// Keeps only the words `word_ids` (from most_frequent_words), renumbered 0.. in that order, and
/// sets corpus.words to their number; tokens of other words are dropped, and a document left with
/// none is removed. Returns the number of documents removed.
std::size_t keep_words(Corpus& corpus, const std::vector<std::size_t>& word_ids);

/// What a simulated corpus is drawn from (LDA's generative process, Blei, Ng & Jordan 2003 §3):
/// topics φ_k ~ Dirichlet(true_beta) over `words`, k = 1..topics; per document a mix
/// ϑ_d ~ Dirichlet(true_alpha) and a length 1 + Poisson(doc_length - 1); per token z ~ ϑ_d,
/// w ~ φ_z. Small true_beta makes the planted topics nearly disjoint (well separated).
struct SimulationShape {
  std::size_t documents = 1000, words = 500, topics = 10;
  double doc_length = 100.0;  // mean tokens per document
  double true_alpha = 0.1, true_beta = 0.05;
};

struct SimulatedCorpus {
  Corpus corpus;
  std::vector<double> topics;  // the planted φ, topics × words, row-major
};

/// `Random` is sgmcmc::Rng (anything with uniform() on [0, 1) and normal()).
template <class Random>
SimulatedCorpus simulate_corpus(const SimulationShape& shape, Random& rng);

}  // namespace lda

#include "corpus_simulation.hpp"
