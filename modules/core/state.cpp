// The byte side of sgmcmc.state, in an implementation unit so that zlib (CRC-32) stays out of
// the module interface that consumers of the installed package compile.
module;
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
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

void write_state_file(const std::filesystem::path& path, const StateWriter& state) {
  const std::string& payload = state.bytes();
  const std::uint32_t version = state_format_version, crc = checksum(payload);
  const std::uint64_t length = payload.size();
  std::filesystem::path temporary = path;
  temporary += ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(magic.data(), static_cast<std::streamsize>(magic.size()));
    out.write(reinterpret_cast<const char*>(&version), sizeof version);
    out.write(reinterpret_cast<const char*>(&length), sizeof length);
    out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
    out.write(reinterpret_cast<const char*>(&crc), sizeof crc);
    out.flush();
    if (!out) throw Error(fmt::format("{}: cannot write the checkpoint ({})", temporary.string(), std::strerror(errno)));
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) throw Error(fmt::format("{}: cannot rename the checkpoint into place ({})", path.string(), error.message()));
}

StateReader read_state_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot read the checkpoint", path.string()));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string file = buffer.str();
  const auto bad = [&](const std::string& what) {
    return Error(fmt::format("{}: {}; delete it to restart this chain from its first iteration", path.string(), what));
  };
  const std::size_t header = magic.size() + sizeof(std::uint32_t) + sizeof(std::uint64_t);
  if (file.size() < header || std::string_view(file).substr(0, magic.size()) != magic)
    throw bad("not an sgmcmc checkpoint (no 'sgmcmcCK' header)");
  std::uint32_t version = 0;
  std::uint64_t length = 0;
  std::memcpy(&version, file.data() + magic.size(), sizeof version);
  std::memcpy(&length, file.data() + magic.size() + sizeof version, sizeof length);
  if (version != state_format_version)
    throw bad(fmt::format("checkpoint format version {}; this sgmcmc reads version {}", version, state_format_version));
  if (file.size() - header < sizeof(std::uint32_t) || length != file.size() - header - sizeof(std::uint32_t))
    throw bad(fmt::format("truncated or padded: the header announces {} bytes of state, the file holds {}", length,
                          file.size() < header + sizeof(std::uint32_t) ? 0 : file.size() - header - sizeof(std::uint32_t)));
  std::string payload = file.substr(header, length);
  std::uint32_t stored = 0;
  std::memcpy(&stored, file.data() + header + length, sizeof stored);
  if (stored != checksum(payload)) throw bad("corrupt: the CRC-32 of its contents does not match");
  return StateReader(std::move(payload), path.string());
}

}  // namespace sgmcmc
