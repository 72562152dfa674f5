// A model's data as a JSON object of named numbers and arrays of numbers, the form Stan's and
// posteriordb's data take ({"J": 8, "y": [28, 8, ...], "sigma": [...]}), read by key with errors
// that name the file and the key:
//
//   #include <sgmcmc/json_data.hpp>
//   const sgmcmc::JsonData data(context.settings.text("data", "data.json"));
//   const auto n = data.count("N");          // an integer >= 0
//   const auto y = data.numbers("y", n);     // exactly n numbers
//
// Header-only, on nlohmann-json (Debian's nlohmann-json3-dev, which sgmcmc itself builds with).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

import sgmcmc.sdk;

namespace sgmcmc {

class JsonData {
public:
  /// Reads and parses `file`; an sgmcmc::Error names it when it cannot be read, is not JSON, or
  /// is not an object at the top.
  explicit JsonData(const std::filesystem::path& file) : file_(file) {
    std::ifstream in(file);
    if (!in) throw Error(file.string() + ": cannot read the model's data (expected a JSON file)");
    try {
      root_ = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& error) {
      throw Error(file.string() + ": not JSON (" + error.what() + ")");
    }
    if (!root_.is_object())
      throw Error(file.string() + ": expected a JSON object of named data, {\"N\": 3, \"y\": [...]}");
  }

  bool contains(const std::string& key) const { return root_.contains(key); }

  /// A finite number.
  double number(const std::string& key) const { return finite(at(key), key, ""); }

  /// An integer >= 0 (a size: N, J, T), also written as 8.0.
  std::size_t count(const std::string& key) const {
    const double value = number(key);
    if (value < 0 || value != std::floor(value) || value > 1e15)
      throw Error(where(key) + ": expected an integer >= 0, found " + at(key).dump());
    return static_cast<std::size_t>(value);
  }

  /// An array of finite numbers; with `length`, of exactly that many.
  std::vector<double> numbers(const std::string& key, std::optional<std::size_t> length = std::nullopt) const {
    const nlohmann::json& array = at(key);
    if (!array.is_array()) throw Error(where(key) + ": expected an array of numbers, found " + kind(array));
    if (length && array.size() != *length)
      throw Error(where(key) + ": expected " + std::to_string(*length) + " numbers, found " + std::to_string(array.size()));
    std::vector<double> values;
    values.reserve(array.size());
    for (std::size_t i = 0; i < array.size(); ++i) values.push_back(finite(array[i], key, "[" + std::to_string(i) + "]"));
    return values;
  }

private:
  std::string where(const std::string& key) const { return file_.string() + ": `" + key + "`"; }

  const nlohmann::json& at(const std::string& key) const {
    const auto found = root_.find(key);
    if (found == root_.end()) throw Error(where(key) + ": no such key (the model needs it)");
    return *found;
  }

  static std::string kind(const nlohmann::json& value) { return std::string(value.type_name()) + " " + value.dump().substr(0, 40); }

  double finite(const nlohmann::json& value, const std::string& key, const std::string& index) const {
    if (!value.is_number()) throw Error(where(key) + index + ": expected a number, found " + kind(value));
    const double number = value.get<double>();
    if (!std::isfinite(number)) throw Error(where(key) + index + ": expected a finite number");
    return number;
  }

  std::filesystem::path file_;
  nlohmann::json root_;
};

}  // namespace sgmcmc
