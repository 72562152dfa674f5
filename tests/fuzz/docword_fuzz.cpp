// Fuzz target: the lda plugin's reader of UCI bag-of-words files (plugins/lda/corpus.hpp;
// fuzz_docword).
#include <cstdint>
#include <string>

#include "corpus.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size);
  fuzz::read_or_refuse(path, [&] {
    const auto corpus = lda::read_bag_of_words(path);
    fuzz::require(!corpus.documents.empty(), "no documents returned without a refusal");
    fuzz::require(corpus.ids.size() == corpus.documents.size(), "not one id per document");
    for (std::size_t d = 0; d < corpus.documents.size(); ++d) {
      fuzz::require(corpus.ids[d] >= 1 && (d == 0 || corpus.ids[d] > corpus.ids[d - 1]), "document ids out of order");
      fuzz::require(!corpus.documents[d].empty(), "an empty document kept");
      for (std::size_t k = 0; k < corpus.documents[d].size(); ++k) {
        const auto& entry = corpus.documents[d][k];
        fuzz::require(entry.word < corpus.words, "a word id beyond W");
        fuzz::require(entry.count >= 1, "a count below 1");
        fuzz::require(k == 0 || entry.word > corpus.documents[d][k - 1].word, "a word twice or out of order in a document");
      }
    }
  });
  return 0;
}
