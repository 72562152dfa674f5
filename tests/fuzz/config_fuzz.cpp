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
  fuzz::read_or_refuse(source, [&] {
    const auto config = sgmcmc::parse_config(text, source);
    const std::string written = sgmcmc::format_config(config);
    try {
      const std::string rewritten = sgmcmc::format_config(sgmcmc::parse_config(written, "config.toml"));
      fuzz::require(rewritten == written, "format_config's output reads back to another configuration:\n" + written +
                                              "\nthen\n" + rewritten);
    } catch (const sgmcmc::Error& error) {
      fuzz::broken(std::string("format_config's output is refused: ") + error.what() + "\n" + written);
    }
  });
  return 0;
}
