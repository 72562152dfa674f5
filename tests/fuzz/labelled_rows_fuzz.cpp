// Fuzz target: the regression plugins' reader of labelled rows (plugins/regression/labelled_rows.hpp),
// built twice: SGMCMC_FUZZ_FORMAT = libsvm (fuzz_libsvm) and csv (fuzz_csv_logistic). Each input
// is read in that format and again with the format detected, as `model.format = "auto"` does.
#include <cmath>
#include <cstdint>
#include <string>

#include "fuzz_input.hpp"
#include "labelled_rows.hpp"

namespace {

/// What read_labelled_rows promises of rows it returns.
void check(const regression::LabelledRows& rows) {
  fuzz::require(!rows.y.empty(), "no rows returned without a refusal");
  fuzz::require(rows.x.size() == rows.y.size() * rows.features, "x is not rows × features");
  for (double y : rows.y) fuzz::require(y == -1.0 || y == 1.0, "a label outside {-1, +1}");
  for (double x : rows.x) fuzz::require(std::isfinite(x), "a feature that is not finite");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size);
  for (auto format : {regression::FileFormat::SGMCMC_FUZZ_FORMAT, regression::FileFormat::automatic})
    fuzz::read_or_refuse(path, [&] { check(regression::read_labelled_rows(path, format, regression::LabelCoding::automatic, 0)); });
  return 0;
}
