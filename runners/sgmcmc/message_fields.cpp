// Messages between the ranks of a cluster (see message_fields.hpp).
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "message_fields.hpp"

void pack(std::string& message, std::string_view field) {
  const std::uint64_t length = field.size();
  message.append(reinterpret_cast<const char*>(&length), sizeof length);
  message.append(field);
}

std::string Unpacker::next() {
  std::uint64_t length = 0;
  if (rest_.size() < sizeof length) throw std::runtime_error("a truncated message between ranks");
  std::memcpy(&length, rest_.data(), sizeof length);
  rest_.remove_prefix(sizeof length);
  if (rest_.size() < length) throw std::runtime_error("a truncated message between ranks");
  std::string field(rest_.substr(0, length));
  rest_.remove_prefix(length);
  return field;
}
