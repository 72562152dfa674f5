// Fuzz target: the TOML reader of run configurations (sgmcmc.config's parse_config; fuzz_config).
// A configuration it accepts must also survive the trip a checkpointed run makes: format_config
// writes it as config.toml and `--resume` parses that back, to the same values and bits.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string source = "fuzz.toml";
  fuzz::read_or_refuse(source, [&] { fuzz::require_round_trip(sgmcmc::parse_config(text, source)); });
  return 0;
}
