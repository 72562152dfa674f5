// Messages between the ranks of a cluster (cluster.hpp): length-prefixed fields in one byte string,
// so a field may hold any bytes, a whole file among them.
#pragma once
#include <string>
#include <string_view>

/// Appends `field` to `message`.
void pack(std::string& message, std::string_view field);

class Unpacker {
public:
  explicit Unpacker(std::string_view message) : rest_(message) {}
  bool empty() const { return rest_.empty(); }
  /// The next field; throws when the message ends inside it.
  std::string next();

private:
  std::string_view rest_;
};
