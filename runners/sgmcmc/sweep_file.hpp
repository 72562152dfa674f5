// A sweep file, read and checked: `preset = "NAME"`, optional `[base.<section>]` tables overriding
// the preset, and an `[axes]` table of `"section.key" = [values...]` (cartesian product), with
// optional `zip = [["a.b", "c.d"], ...]` (axes that vary together) and
// `exclude = [{ "a.b" = v }, ...]`. Errors name the file and line of the value at fault. Instead of
// a preset, `config = '''TOML'''` gives the base configuration itself (what `sgmcmc sbc` writes, so
// that a run configuration file becomes a sweep's base whatever machine the cells run on).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

import sgmcmc;

#include "presets.hpp"

/// A base configuration given as text in the sweep file (`config = '''...'''`), dressed as a preset.
struct InlineConfig {
  std::string name, source, text;
  EmbeddedPreset preset;
};

struct AxisValue {
  sgmcmc::Value value;
  std::string origin;  // file:line, so a cell's errors point at the value that caused them
};

struct Axis {
  std::string key;  // "section.key"
  std::string section, name;
  std::string origin;
  std::pair<std::uint32_t, std::uint32_t> position;  // line and column in the file
  std::vector<AxisValue> values;
};

struct Sweep {
  std::string source;  // the sweep file's path, as errors name it
  std::string text;
  const EmbeddedPreset* preset = nullptr;      // the preset, or inline_config's
  std::shared_ptr<const InlineConfig> inline_config;
  std::vector<std::pair<std::string, sgmcmc::Entry>> base;  // "section.key" and its entry
  std::vector<Axis> axes;
  std::vector<std::vector<std::size_t>> groups;  // axes varying together; the product is over groups
  std::vector<std::vector<std::pair<std::size_t, sgmcmc::Value>>> excludes;  // (axis, value) pairs
};

/// As a cell's name and the tables write the value.
std::string format_value(const sgmcmc::Value& value);

/// The preset with the [base.*] overrides, before any axis value.
sgmcmc::RunConfig base_config(const Sweep& sweep);

/// A sweep from its file's text; `source` names the file in errors. Under MPI the other ranks
/// parse rank 0's text, since a cluster's machines need not share the file.
Sweep parse_sweep(std::string text, std::string source);
