// Replays a fuzz target's corpus without libFuzzer: every file under the folders given, once, in
// path order, through the target's LLVMFuzzerTestOneInput. The `asan` preset links each target
// with this driver and runs it under ctest, so the sanitized suite catches a reader that regressed
// on a known input without a second, coverage-instrumented build; the `fuzz` preset links
// libFuzzer instead, which mutates the corpus.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::error_code error;
    for (std::filesystem::recursive_directory_iterator it(argv[i], error), end; !error && it != end; it.increment(error))
      if (it->is_regular_file()) inputs.push_back(it->path());
    if (error) {
      std::fprintf(stderr, "replay: cannot read the corpus folder %s: %s\n", argv[i], error.message().c_str());
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no input under the folders given (usage: %s <corpus folder>...)\n", argv[0]);
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& path : inputs) {
    std::ifstream file(path, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replay: %zu inputs, none a finding\n", inputs.size());
  return 0;
}
