// The byte side of sgmcmc.state, in an implementation unit so that zlib (CRC-32) stays out of
// the module interface that consumers of the installed package compile.
module;
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <functional>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <fmt/format.h>
#include <zlib.h>
module sgmcmc.state;
import sgmcmc.error;

namespace sgmcmc {

static_assert(std::endian::native == std::endian::little, "checkpoints store integers and doubles little-endian");

namespace state_parts {

constexpr std::string_view magic = "sgmcmcCK";

// One-byte tags: a value read as the wrong type is reported, not reinterpreted.
constexpr char section_tag = 'S', count_tag = 'u', number_tag = 'd', flag_tag = 'b', text_tag = 's',
               numbers_tag = 'D', indices_tag = 'I';

const char* tag_name(char tag) {
  switch (tag) {
    case section_tag: return "a section";
    case count_tag: return "an integer";
    case number_tag: return "a number";
    case flag_tag: return "a flag";
    case text_tag: return "a text";
    case numbers_tag: return "a vector of numbers";
    case indices_tag: return "a vector of indices";
  }
  return "an unknown tag";
}

std::uint32_t checksum(std::string_view bytes) {
  return static_cast<std::uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

}  // namespace state_parts

using namespace state_parts;

// ---- StateWriter ---------------------------------------------------------------------------------

void StateWriter::raw(const void* data, std::size_t size) { bytes_.append(static_cast<const char*>(data), size); }
void StateWriter::tag(char type) { bytes_.push_back(type); }

void StateWriter::sized_text(std::string_view value) {
  const std::uint64_t size = value.size();
  raw(&size, sizeof size);
  raw(value.data(), value.size());
}

void StateWriter::section(std::string_view name) {
  tag(section_tag);
  sized_text(name);
}

void StateWriter::count(std::uint64_t value) {
  tag(count_tag);
  raw(&value, sizeof value);
}

void StateWriter::number(double value) {
  tag(number_tag);
  raw(&value, sizeof value);  // the 64 bits: NaN payloads and -0.0 survive
}

void StateWriter::flag(bool value) {
  tag(flag_tag);
  bytes_.push_back(value ? 1 : 0);
}

void StateWriter::text(std::string_view value) {
  tag(text_tag);
  sized_text(value);
}

void StateWriter::numbers(std::span<const double> values) {
  tag(numbers_tag);
  const std::uint64_t size = values.size();
  raw(&size, sizeof size);
  raw(values.data(), values.size_bytes());
}

void StateWriter::indices(std::span<const std::size_t> values) {
  static_assert(sizeof(std::size_t) == sizeof(std::uint64_t));
  tag(indices_tag);
  const std::uint64_t size = values.size();
  raw(&size, sizeof size);
  raw(values.data(), values.size_bytes());
}

// ---- StateReader ---------------------------------------------------------------------------------

StateReader::StateReader(std::string bytes, std::string origin) : bytes_(std::move(bytes)), origin_(std::move(origin)) {}

void StateReader::fail(const std::string& message) const {
  throw Error(fmt::format("{}: {} (part '{}', byte {}); the checkpoint does not fit this run's configuration", origin_,
                          message, section_, position_));
}

void StateReader::raw(void* data, std::size_t size) {
  if (bytes_.size() - position_ < size) fail("the checkpoint ends early");
  // An empty vector's data() may be null, and memcpy with a null pointer is undefined even for 0 bytes.
  if (size == 0) return;
  std::memcpy(data, bytes_.data() + position_, size);
  position_ += size;
}

void StateReader::expect(char type, const char* what) {
  char found = 0;
  raw(&found, 1);
  if (found != type) fail(fmt::format("expected {} ({}), found {}", tag_name(type), what, tag_name(found)));
}

std::string StateReader::sized_text() {
  std::uint64_t size = 0;
  raw(&size, sizeof size);
  if (size > bytes_.size() - position_) fail("the checkpoint ends early");
  std::string value(size, '\0');
  raw(value.data(), size);
  return value;
}

void StateReader::section(std::string_view name) {
  expect(section_tag, "a part's start");
  const std::string found = sized_text();
  if (found != name) fail(fmt::format("expected the part '{}', found '{}'", name, found));
  section_ = found;
}

std::uint64_t StateReader::count() {
  expect(count_tag, "a count");
  std::uint64_t value = 0;
  raw(&value, sizeof value);
  return value;
}

double StateReader::number() {
  expect(number_tag, "a number");
  double value = 0.0;
  raw(&value, sizeof value);
  return value;
}

bool StateReader::flag() {
  expect(flag_tag, "a flag");
  char value = 0;
  raw(&value, 1);
  if (value != 0 && value != 1) fail(fmt::format("a flag holds {}, not 0 or 1", static_cast<int>(value)));
  return value == 1;
}

std::string StateReader::text() {
  expect(text_tag, "a text");
  return sized_text();
}

std::vector<double> StateReader::numbers() {
  expect(numbers_tag, "numbers");
  std::uint64_t size = 0;
  raw(&size, sizeof size);
  if (size > (bytes_.size() - position_) / sizeof(double)) fail("the checkpoint ends early");
  std::vector<double> values(size);
  raw(values.data(), size * sizeof(double));
  return values;
}

void StateReader::numbers(std::vector<double>& out, std::size_t expected) {
  auto values = numbers();
  if (values.size() != expected)
    fail(fmt::format("{} numbers where this run has {} (another model size or configuration)", values.size(), expected));
  out = std::move(values);
}

std::vector<std::size_t> StateReader::indices() {
  expect(indices_tag, "indices");
  std::uint64_t size = 0;
  raw(&size, sizeof size);
  if (size > (bytes_.size() - position_) / sizeof(std::size_t)) fail("the checkpoint ends early");
  std::vector<std::size_t> values(size);
  raw(values.data(), size * sizeof(std::size_t));
  return values;
}

void StateReader::finish() const {
  if (position_ != bytes_.size())
    fail(fmt::format("{} bytes left unread after the last part", bytes_.size() - position_));
}

// ---- Files ---------------------------------------------------------------------------------------

namespace state_parts {

constexpr std::uint64_t page = 4096;                                       // the header's room, and a slot's unit
constexpr std::size_t header_size = 8 + 4 + 8 + 4;                         // magic, version, S, CRC-32
constexpr std::size_t slot_head_size = 8 + 8, slot_tail_size = 4;          // generation, length; CRC-32
constexpr std::uint32_t single_record_version = 6;                         // one record per file (read only)

std::uint64_t slot_offset(std::uint64_t slot_size, int slot) { return page + static_cast<std::uint64_t>(slot) * slot_size; }

/// Room for `payload_size` bytes of state and a quarter more (a state may grow a little, e.g. a
/// text), in whole pages, so that the slots share no page.
std::uint64_t slot_size_for(std::uint64_t payload_size) {
  const std::uint64_t needed = slot_head_size + payload_size + payload_size / 4 + slot_tail_size;
  return (needed + page - 1) / page * page;
}

template <class T>
void put(std::string& bytes, T value) {
  bytes.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
T get(std::string_view bytes, std::size_t at) {
  T value{};
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

/// The header of a file of slots of `slot_size` bytes.
std::string header_bytes(std::uint64_t slot_size) {
  std::string header(magic);
  put(header, state_format_version);
  put(header, slot_size);
  put(header, checksum(header));
  return header;
}

/// Writes all of `size` bytes at `offset`, or says why not.
bool write_all(int descriptor, const char* data, std::size_t size, std::uint64_t offset) {
  while (size > 0) {
    const ssize_t written = ::pwrite(descriptor, data, size, static_cast<off_t>(offset));
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    data += written;
    size -= static_cast<std::size_t>(written);
    offset += static_cast<std::uint64_t>(written);
  }
  return true;
}

/// Reads up to `size` bytes at `offset` (fewer where the file ends).
std::string read_at(int descriptor, std::size_t size, std::uint64_t offset) {
  std::string bytes(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(descriptor, bytes.data() + done, size - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<std::size_t>(got);
  }
  bytes.resize(done);
  return bytes;
}

/// A slot as read: its generation and payload when whole, else why not.
struct Slot {
  std::uint64_t generation = 0;
  std::string payload;
  std::string problem;  // empty when whole
};

Slot read_slot(int descriptor, std::uint64_t file_size, std::uint64_t slot_size, int index) {
  const std::uint64_t offset = slot_offset(slot_size, index);
  if (offset >= file_size) return {0, {}, "never written"};
  const std::string head = read_at(descriptor, slot_head_size, offset);
  if (head.size() < slot_head_size) return {0, {}, "truncated in its header"};
  const auto generation = get<std::uint64_t>(head, 0), length = get<std::uint64_t>(head, 8);
  if (generation == 0 && length == 0) return {0, {}, "never written"};
  const std::uint64_t room = slot_size - slot_head_size - slot_tail_size;
  if (length > room) return {0, {}, fmt::format("its length, {} bytes, exceeds the slot's {} (corrupt)", length, room)};
  const std::uint64_t available = file_size - offset - slot_head_size;
  if (length + slot_tail_size > available)
    return {0, {}, fmt::format("truncated: it announces {} bytes of state, the file holds {} after its header", length, available)};
  std::string rest = read_at(descriptor, length + slot_tail_size, offset + slot_head_size);
  if (rest.size() != length + slot_tail_size) return {0, {}, "cannot be read whole"};
  const auto stored = get<std::uint32_t>(rest, length);
  rest.resize(length);
  auto crc = static_cast<uLong>(checksum(head));
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(rest.data()), rest.size());
  if (stored != static_cast<std::uint32_t>(crc)) return {0, {}, "corrupt: the CRC-32 of its contents does not match"};
  return {generation, std::move(rest), ""};
}

/// A version-6 file, `file` whole: magic, version, length, payload, CRC-32 of the payload.
std::string single_record_payload(const std::string& file, const std::function<Error(const std::string&)>& bad) {
  const std::size_t header = magic.size() + sizeof(std::uint32_t) + sizeof(std::uint64_t);
  const auto length = get<std::uint64_t>(file, magic.size() + sizeof(std::uint32_t));
  if (file.size() - header < sizeof(std::uint32_t) || length != file.size() - header - sizeof(std::uint32_t))
    throw bad(fmt::format("truncated or padded: the header announces {} bytes of state, the file holds {}", length,
                          file.size() < header + sizeof(std::uint32_t) ? 0 : file.size() - header - sizeof(std::uint32_t)));
  std::string payload = file.substr(header, length);
  if (get<std::uint32_t>(file, header + length) != checksum(payload))
    throw bad("corrupt: the CRC-32 of its contents does not match");
  return payload;
}

/// Closes a descriptor when it goes.
struct Descriptor {
  int value = -1;
  ~Descriptor() {
    if (value >= 0) ::close(value);
  }
};

}  // namespace state_parts

CheckpointFile::CheckpointFile(std::filesystem::path path) : path_(std::move(path)) {}

CheckpointFile::~CheckpointFile() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

void CheckpointFile::write_slot(int descriptor, std::uint64_t offset, std::string_view payload) const {
  std::string head;
  put(head, generation_);
  put(head, static_cast<std::uint64_t>(payload.size()));
  auto crc = static_cast<uLong>(checksum(head));
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(payload.data()), payload.size());
  std::string tail;
  put(tail, static_cast<std::uint32_t>(crc));
  // The payload written where it is: a chain's state can be large, and a copy would cost more
  // than the write.
  if (!write_all(descriptor, head.data(), head.size(), offset) ||
      !write_all(descriptor, payload.data(), payload.size(), offset + head.size()) ||
      !write_all(descriptor, tail.data(), tail.size(), offset + head.size() + payload.size()))
    throw Error(fmt::format("{}: cannot write the checkpoint ({})", path_.string(), std::strerror(errno)));
}

void CheckpointFile::make_anew(std::string_view payload) {
  if (descriptor_ >= 0) ::close(descriptor_);
  descriptor_ = -1;
  slot_size_ = slot_size_for(payload.size());
  std::filesystem::path temporary = path_;
  temporary += ".partial";
  {
    Descriptor made{::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    const std::string header = header_bytes(slot_size_);
    if (made.value < 0 || !write_all(made.value, header.data(), header.size(), 0))
      throw Error(fmt::format("{}: cannot write the checkpoint ({})", temporary.string(), std::strerror(errno)));
    write_slot(made.value, slot_offset(slot_size_, 0), payload);
  }
  std::error_code error;
  std::filesystem::rename(temporary, path_, error);
  if (error) throw Error(fmt::format("{}: cannot rename the checkpoint into place ({})", path_.string(), error.message()));
  descriptor_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (descriptor_ < 0) throw Error(fmt::format("{}: cannot open the checkpoint ({})", path_.string(), std::strerror(errno)));
  next_slot_ = 1;
}

void CheckpointFile::write(const StateWriter& state) {
  const std::string& payload = state.bytes();
  ++generation_;
  if (descriptor_ < 0 || slot_head_size + payload.size() + slot_tail_size > slot_size_) return make_anew(payload);
  write_slot(descriptor_, slot_offset(slot_size_, next_slot_), payload);
  next_slot_ = 1 - next_slot_;
}

StateReader read_state_file(const std::filesystem::path& path) {
  const auto bad = [&](const std::string& what) {
    return Error(fmt::format("{}: {}; delete it to restart this chain from its first iteration", path.string(), what));
  };
  // O_NONBLOCK: a FIFO named like a checkpoint is refused below, not waited on for a writer.
  Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.value < 0) throw Error(fmt::format("{}: cannot read the checkpoint ({})", path.string(), std::strerror(errno)));
  struct stat status {};
  if (::fstat(file.value, &status) != 0 || !S_ISREG(status.st_mode)) throw bad("not a regular file");
  const auto size = static_cast<std::uint64_t>(status.st_size);
  const std::string header = read_at(file.value, header_size, 0);
  if (header.size() < magic.size() + sizeof(std::uint32_t) || std::string_view(header).substr(0, magic.size()) != magic)
    throw bad("not an sgmcmc checkpoint (no 'sgmcmcCK' header)");
  const auto version = get<std::uint32_t>(header, magic.size());
  if (version == single_record_version) {
    if (header.size() < magic.size() + sizeof(std::uint32_t) + sizeof(std::uint64_t))
      throw bad("truncated: the file ends in its header");
    return StateReader(single_record_payload(read_at(file.value, size, 0), bad), path.string());
  }
  if (version != state_format_version)
    throw bad(fmt::format("checkpoint format version {}; this sgmcmc reads versions {} and {}", version,
                          single_record_version, state_format_version));
  if (header.size() < header_size) throw bad("truncated: the file ends in its header");
  const auto slot_size = get<std::uint64_t>(header, magic.size() + sizeof(std::uint32_t));
  const std::size_t checked = header_size - sizeof(std::uint32_t);
  if (get<std::uint32_t>(header, checked) != checksum(std::string_view(header).substr(0, checked)))
    throw bad("corrupt: the CRC-32 of its header does not match");
  if (slot_size == 0 || slot_size % page != 0 || slot_size > std::numeric_limits<std::uint64_t>::max() / 4)
    throw bad(fmt::format("corrupt: a slot size of {} bytes", slot_size));
  Slot slots[2] = {read_slot(file.value, size, slot_size, 0), read_slot(file.value, size, slot_size, 1)};
  Slot* newest = nullptr;
  for (auto& slot : slots)
    if (slot.problem.empty() && (!newest || slot.generation > newest->generation)) newest = &slot;
  if (!newest)
    throw bad(fmt::format("neither of its two slots holds a whole checkpoint (slot 1: {}; slot 2: {})", slots[0].problem,
                          slots[1].problem));
  return StateReader(std::move(newest->payload), path.string());
}

}  // namespace sgmcmc
