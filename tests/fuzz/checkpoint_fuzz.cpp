// Fuzz target: checkpoint files (sgmcmc.state; fuzz_checkpoint). Each input is read twice:
// - as a file, by read_state_file, which must refuse what is not a whole checkpoint of this
//   format (header and its CRC-32, two slots each with its CRC-32) with a message naming the file;
// - as the payload inside such a file (the input's own header and CRC-32 cut off when it has
//   them), restored into real chains of the gaussian plugin built from
//   tests/fuzz/checkpoint_configs/*.toml (the configurations whose checkpoints seed the corpus),
//   as `sgmcmc run --resume` restores them. A mutation the CRC would catch on disk reaches the
//   tagged values this way, which must refuse anything another configuration or damage wrote
//   instead of restoring garbage.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.hpp"

namespace {

struct Chains {
  std::vector<std::shared_ptr<const sgmcmc::Model>> models;
  std::vector<std::unique_ptr<sgmcmc::Chain>> chains;
};

Chains& chains() {
  static Chains built = [] {
    Chains result;
    const sgmcmc::LoadedPlugin plugin =
        sgmcmc::load_plugin_file(std::filesystem::path(SGMCMC_PLUGIN_DIR) / "sgmcmc-model-gaussian.so");
    for (const auto& entry : std::filesystem::directory_iterator(SGMCMC_FUZZ_CHECKPOINT_CONFIGS)) {
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const auto config = sgmcmc::parse_config(text.str(), entry.path().string());
      auto model = plugin.create({sgmcmc::SectionReader(config["model"]), 1});
      sgmcmc::ConfigReads reads;
      result.chains.push_back(
          sgmcmc::make_chain(sgmcmc::plan_chain({config, reads}, *model), model, sgmcmc::Rng(1, sgmcmc::chain_stream(0))));
      result.models.push_back(std::move(model));
    }
    return result;
  }();
  return built;
}

/// The payload of a checkpoint file, or the whole input when it does not look like one. Format 7
/// (sgmcmc.state): a 4096-byte header, then slot 0 (8 bytes generation, 8 length, payload, 4
/// CRC-32), whose payload is taken (as long as its length says, or to the end); the corpus's
/// older seeds are of the one-record format (8 bytes magic, 4 version, 8 length, payload, 4 CRC-32).
std::string_view payload(std::string_view bytes) {
  if (!bytes.starts_with("sgmcmcCK") || bytes.size() < 12) return bytes;
  std::uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, sizeof version);
  constexpr std::size_t slot = 4096, slot_head = 16, record_head = 20, crc = 4;
  if (version >= 7 && bytes.size() >= slot + slot_head) {
    std::uint64_t length = 0;
    std::memcpy(&length, bytes.data() + slot + 8, sizeof length);
    return bytes.substr(slot + slot_head, length);  // substr stops at the end
  }
  if (bytes.size() >= record_head + crc) return bytes.substr(record_head, bytes.size() - record_head - crc);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size, "checkpoint-1.bin");
  fuzz::read_or_refuse(path, [&] { (void)sgmcmc::read_state_file(path); });
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (auto& chain : chains().chains)
    fuzz::read_or_refuse(path, [&] {
      sgmcmc::StateReader in(std::string(payload(bytes)), path);
      chain->restore_state(in);
    });
  return 0;
}
