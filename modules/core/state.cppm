// Checkpoint state: what a chain's parts write so that a resumed chain continues bit for bit as
// if it had never stopped (`run.checkpoint_every`, `sgmcmc run --resume`).
//
// Each part (the chain, its estimator, integrator, corrector, the model's workspace, the random
// stream, the runner's file positions) writes its own values in its own order through a
// StateWriter and reads them back in the same order through a StateReader. Values are stored
// exactly (a double as its 64 bits), each with a one-byte type tag, and each part starts with a
// named section, so reading a checkpoint of another configuration stops at the first section or
// type that differs, with a message that says which, instead of restoring garbage.
//
// File format (write_state_file / read_state_file), all integers little-endian as on x86-64:
//   8 bytes  magic "sgmcmcCK"
//   4 bytes  format version (state_format_version)
//   8 bytes  payload length L
//   L bytes  payload: tagged values
//   4 bytes  CRC-32 of the payload (zlib)
// Files are written to a temporary name and renamed, so a checkpoint is whole or absent.
module;
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>
export module sgmcmc.state;
import sgmcmc.error;

export namespace sgmcmc {

/// 2: the chain and the draw recorder keep counts of the target changes (recorded gradients follow
/// the chain's Gibbs-updated hyperparameters). 3: the chain keeps its warmup's seconds (Stan CSV's
/// "Elapsed Time" lines). 4: a run's checkpoint records the CRC-32 of each output file's bytes up
/// to the checkpoint beside their length. 5: the chain and its metric rows keep CPU seconds beside
/// wall seconds.
inline constexpr std::uint32_t state_format_version = 6;

class StateWriter {
public:
  /// Starts the part called `name` ("estimator cv", "pmf workspace").
  void section(std::string_view name);
  void count(std::uint64_t value);
  void number(double value);
  void flag(bool value);
  void text(std::string_view value);
  void numbers(std::span<const double> values);
  void indices(std::span<const std::size_t> values);

  const std::string& bytes() const { return bytes_; }

private:
  void tag(char type);
  void raw(const void* data, std::size_t size);
  void sized_text(std::string_view value);  // its length, then its bytes
  std::string bytes_;
};

class StateReader {
public:
  /// `origin` names the checkpoint in errors (its path).
  StateReader(std::string bytes, std::string origin);

  /// Expects the part called `name`; throws naming both if another part comes next.
  void section(std::string_view name);
  std::uint64_t count();
  double number();
  bool flag();
  std::string text();
  std::vector<double> numbers();
  /// Numbers that must be exactly `expected` many (a vector sized by the model), into `out`.
  void numbers(std::vector<double>& out, std::size_t expected);
  std::vector<std::size_t> indices();
  /// Throws if anything is left unread (a checkpoint of a run with more parts).
  void finish() const;

  const std::string& origin() const { return origin_; }

private:
  void expect(char type, const char* what);
  void raw(void* data, std::size_t size);
  std::string sized_text();
  [[noreturn]] void fail(const std::string& message) const;
  std::string bytes_;
  std::string origin_;
  std::size_t position_ = 0;
  std::string section_ = "(start)";  // the part being read, for messages
};

/// Writes the writer's bytes with header and checksum to `path`, through `path` + ".partial"
/// and a rename.
void write_state_file(const std::filesystem::path& path, const StateWriter& state);

/// Reads and checks a file written by write_state_file: errors name the file and say whether it
/// is not a checkpoint, of another format version, truncated or corrupt.
StateReader read_state_file(const std::filesystem::path& path);

}  // namespace sgmcmc
