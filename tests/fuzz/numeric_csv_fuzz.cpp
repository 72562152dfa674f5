// Fuzz target: the CSV reader of the core (sgmcmc.io's read_numeric_csv), through which the
// gaussian plugin reads its data (fuzz_csv_gaussian).
#include <cmath>
#include <cstdint>
#include <string>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size);
  fuzz::read_or_refuse(path, [&] {
    const auto table = sgmcmc::read_numeric_csv(path);
    fuzz::require(table.values.size() == table.rows * table.columns, "values are not rows × columns");
    fuzz::require(table.line_numbers.size() == table.rows, "not one line number per row");
    fuzz::require(table.header.empty() || table.header.size() == table.columns, "a header of another width");
    for (double value : table.values) fuzz::require(std::isfinite(value), "a value that is not finite");
  });
  return 0;
}
