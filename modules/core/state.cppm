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
// File format (CheckpointFile / read_state_file), all integers little-endian as on x86-64:
//   header, in the file's first 4096 bytes, written once when the file is made (through a
//   temporary name and a rename, so a file is whole or absent):
//     8 bytes  magic "sgmcmcCK"
//     4 bytes  format version (state_format_version)
//     8 bytes  slot size S (a multiple of 4096)
//     4 bytes  CRC-32 of the 20 bytes before (zlib)
//   two slots, at byte 4096 and at byte 4096 + S, each overwritten in place in turn:
//     8 bytes  generation (1, 2, ...: the newest checkpoint has the greatest)
//     8 bytes  payload length L (at most S - 20)
//     L bytes  payload: tagged values
//     4 bytes  CRC-32 of the generation, the length and the payload
// The reader takes the slot of the greatest generation whose CRC-32 matches. A write the
// machine or process dies in spoils only the slot being written (its CRC-32 no longer matches,
// or it ends early): the other slot still holds the checkpoint before. Overwriting a slot in
// place costs a write to the page cache; making a file and renaming it over the last one, as
// version 6 did at every checkpoint, made ext4 write the file back each time (its safeguard
// for replace-by-rename), 0.2 to 0.5 ms per checkpoint.
module;
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
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
/// wall seconds. 6: one record (magic, version, length, payload, CRC-32) per file, written
/// through a rename. 7: two slots overwritten in turn (above); the payload is version 6's, and a
/// version-6 file is still read.
inline constexpr std::uint32_t state_format_version = 7;

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

/// One description of a component's saved state serves saving and restoring alike: the component
/// lists its fields once, in a member template `template <class Self, class Archive> static void
/// saved_fields(Self& self, Archive& archive)`, and save_state calls it with a SavingArchive
/// (Self const), restore_state with a RestoringArchive, so the two cannot disagree on the order or
/// the type of a field. A field is a count, a number, a flag, a vector of numbers (restored at the
/// size the run already gave it, or at Sized's: a checkpoint of another shape is refused), or an
/// optional one of these (a flag, then the value or a zero); `archive.section(name)` starts a
/// named part and `archive.nested(part)` saves or restores a part that has its own save_state.
/// A vector of numbers saved as is and restored at `size` numbers (a table the run fills lazily,
/// so its size before restoring is not the saved one).
template <class Vector>
struct Sized {
  Vector& values;
  std::size_t size;
};
template <class Vector>
Sized(Vector&, std::size_t) -> Sized<Vector>;

class SavingArchive {
public:
  static constexpr bool restoring = false;
  explicit SavingArchive(StateWriter& out) : out_(out) {}
  void section(std::string_view name) { out_.section(name); }
  void operator()(const std::uint64_t& value) { out_.count(value); }
  void operator()(const double& value) { out_.number(value); }
  void operator()(const bool& value) { out_.flag(value); }
  void operator()(const std::vector<double>& values) { out_.numbers(values); }
  void operator()(const Sized<const std::vector<double>>& table) { out_.numbers(table.values); }
  /// A part with its own save_state (the chain's random stream, its components).
  template <class Component>
  void nested(const Component& component) {
    component.save_state(out_);
  }
  template <class T>
  void operator()(const std::optional<T>& value) {
    (*this)(value.has_value());
    (*this)(value.value_or(T{}));
  }
  template <class... Fields>
    requires(sizeof...(Fields) > 1)
  void operator()(Fields&&... fields) {
    ((*this)(fields), ...);
  }

private:
  StateWriter& out_;
};

class RestoringArchive {
public:
  static constexpr bool restoring = true;
  explicit RestoringArchive(StateReader& in) : in_(in) {}
  void section(std::string_view name) { in_.section(name); }
  void operator()(std::uint64_t& value) { value = in_.count(); }
  void operator()(double& value) { value = in_.number(); }
  void operator()(bool& value) { value = in_.flag(); }
  void operator()(std::vector<double>& values) { in_.numbers(values, values.size()); }
  void operator()(const Sized<std::vector<double>>& table) { in_.numbers(table.values, table.size); }
  template <class Component>
  void nested(Component& component) {
    component.restore_state(in_);
  }
  template <class T>
  void operator()(std::optional<T>& value) {
    bool present = false;
    T saved{};
    (*this)(present);
    (*this)(saved);
    value = present ? std::optional<T>(saved) : std::nullopt;
  }
  template <class... Fields>
    requires(sizeof...(Fields) > 1)
  void operator()(Fields&&... fields) {  // && also takes a Sized made in the call
    ((*this)(fields), ...);
  }
  StateReader& reader() { return in_; }

private:
  StateReader& in_;
};

/// save_state and restore_state of a component whose fields its saved_fields lists.
template <class Component>
void save_fields(const Component& component, StateWriter& out) {
  SavingArchive archive(out);
  Component::saved_fields(component, archive);
}
template <class Component>
void restore_fields(Component& component, StateReader& in) {
  RestoringArchive archive(in);
  Component::saved_fields(component, archive);
}

/// A chain's checkpoint file, held open while its chain runs. The first write of a process makes
/// the file anew (through `path` + ".partial" and a rename), with room in each slot for a
/// quarter more than that state; later writes go to the slot not holding the newest checkpoint,
/// in place, and a state too large for its slot makes the file anew again.
class CheckpointFile {
public:
  explicit CheckpointFile(std::filesystem::path path);
  ~CheckpointFile();
  CheckpointFile(const CheckpointFile&) = delete;
  CheckpointFile& operator=(const CheckpointFile&) = delete;

  /// Writes the writer's bytes as the newest checkpoint. Throws an Error naming the file.
  void write(const StateWriter& state);

  const std::filesystem::path& path() const { return path_; }

private:
  void make_anew(std::string_view payload);
  void write_slot(int descriptor, std::uint64_t offset, std::string_view payload) const;
  std::filesystem::path path_;
  int descriptor_ = -1;          // the file, open for writing once made
  std::uint64_t slot_size_ = 0;  // S
  std::uint64_t generation_ = 0; // of the newest checkpoint written
  int next_slot_ = 0;
};

/// Reads the newest whole checkpoint of a file CheckpointFile wrote (or a version-6 file): errors
/// name the file and say whether it is not a checkpoint, of another format version, or why
/// neither slot holds a whole checkpoint (cut, corrupt, never written).
StateReader read_state_file(const std::filesystem::path& path);

}  // namespace sgmcmc
