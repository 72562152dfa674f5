// Fuzz target: `--set section.key=value` (sgmcmc.config's apply_override; fuzz_override). Each
// line of the input is one assignment, applied in turn to the demo's configuration. What it
// accepts must survive the trip a checkpointed run makes (format_config writes config.toml, and
// `--resume` parses it back to the same values and bits); a refusal must name the assignment, as
// "--set <assignment>".
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_input.hpp"

namespace {

constexpr std::string_view base = "[model]\nname = \"gaussian\"\nn = 100\n[integrator]\nname = \"sgld\"\nstep_size = 2e-5\n"
                                  "[run]\niterations = 100\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = sgmcmc::parse_config(base, "base.toml");
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string assignment(text.substr(start, end - start));
    assignment.resize(std::min(assignment.find('\0'), assignment.size()));  // an argument ends at NUL, as argv's do
    start = end + 1;
    fuzz::read_or_refuse("--set " + assignment, [&] { sgmcmc::apply_override(config, assignment); });
  }
  fuzz::require_round_trip(config);
  return 0;
}
