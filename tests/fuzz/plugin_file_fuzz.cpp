// Fuzz target: the check a plugin file passes before dlopen sees it (sgmcmc.plugins'
// plugin_file_problem; fuzz_plugin_file): ELF magic, class, type and machine, and every header and
// loaded segment within the file's length, so that a truncated or damaged file is refused with a
// reason instead of faulting inside dlopen. The check reads headers at offsets the file itself
// gives; it must never read outside what it allocated or crash, whatever the bytes.
//
// Files the check accepts are not handed to dlopen here: a loader maps and runs what the file
// says (its initialisers included), so fuzzed bytes in dlopen test glibc, not sgmcmc. The ABI
// record read after dlopen (interface version, build fingerprint, exports) is tested with real
// libraries built to fail it (tests/fixtures: other_interface_version, other_fingerprint,
// no_exports).
#include <cstdint>
#include <string>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size, "sgmcmc-model-fuzz.so");
  const std::string problem = sgmcmc::plugin_file_problem(path);
  // The smallest shared library has an ELF header (64 bytes on 64-bit machines) at least.
  fuzz::require(!problem.empty() || size >= 64, "accepted a file shorter than an ELF header");
  return 0;
}
