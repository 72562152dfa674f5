// Fuzz target: the reader of sweep files (runners/sgmcmc/sweep_file.hpp; fuzz_sweep_file). A
// sweep it accepts must give its base configuration and, when the grid is small enough to list,
// every cell's configuration, with folder names that differ.
#include <cstdint>
#include <set>
#include <string>

#include "fuzz_input.hpp"
#include "sweep_grid.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string source = "fuzz-sweep.toml";
  fuzz::read_or_refuse(source, [&] {
    const auto sweep = parse_sweep(std::string(reinterpret_cast<const char*>(data), size), source);
    (void)base_config(sweep);
    if (grid_size(sweep) > 1000) return;  // listing is `sweep`'s job once --max-cells allows it
    std::set<std::string> names;
    for (const auto& cell : enumerate_cells(sweep)) {
      (void)cell_config(sweep, cell);
      fuzz::require(names.insert(cell.name).second, "two cells share the folder " + cell.name);
    }
  });
  return 0;
}
