// Fuzz target: the pmf plugin's reader of (user, item, rating) triples (plugins/pmf/ratings.hpp),
// with MovieLens' declared scale 1..5 (fuzz_ratings).
#include <cstdint>
#include <string>

#include "fuzz_input.hpp"
#include "ratings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size);
  const pmf::RatingRange range{1.0, 5.0};
  fuzz::read_or_refuse(path, [&] {
    const auto triples = pmf::read_triples(path, range);
    fuzz::require(triples.size() > 0, "no ratings returned without a refusal");
    fuzz::require(triples.user.size() == triples.size() && triples.item.size() == triples.size() &&
                      triples.line.size() == triples.size(),
                  "columns of different lengths");
    for (std::size_t k = 0; k < triples.size(); ++k) {
      fuzz::require(triples.user[k] >= 0 && triples.item[k] >= 0, "a negative id");
      fuzz::require(triples.rating[k] >= range.min && triples.rating[k] <= range.max, "a rating outside the range");
      fuzz::require(triples.line[k] >= 1 && (k == 0 || triples.line[k] > triples.line[k - 1]), "line numbers out of order");
    }
  });
  return 0;
}
