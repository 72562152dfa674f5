// Helpers for tests that load a bundled model plugin from the build tree and feed it files.
// Include after the standard headers the test uses (this header imports sgmcmc).
#pragma once
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <zlib.h>

import sgmcmc;

namespace test {

/// sgmcmc-model-<name>.so of the build tree, loaded once per test program.
inline const sgmcmc::LoadedPlugin& bundled_plugin(const std::string& name) {
  static std::map<std::string, sgmcmc::LoadedPlugin> loaded;
  auto found = loaded.find(name);
  if (found == loaded.end())
    found = loaded.emplace(name, sgmcmc::load_plugin_file(std::filesystem::path(SGMCMC_PLUGIN_DIR) /
                                                          ("sgmcmc-model-" + name + ".so"))).first;
  return found->second;
}

/// A model of plugin `name` from the [model] lines given (name omitted), with every key checked
/// as the CLI does.
inline std::shared_ptr<const sgmcmc::Model> build_model(const std::string& name, const std::string& model_lines,
                                                        std::uint64_t seed = 1) {
  auto config = sgmcmc::parse_config("[model]\n" + model_lines, "test.toml");
  sgmcmc::SectionReads reads;
  auto model = bundled_plugin(name).create({sgmcmc::SectionReader(config["model"], reads), seed});
  sgmcmc::reject_unknown_keys(config["model"], reads);
  return model;
}

/// ∇U(θ) of a chain's target given its workspace: one full data pass and the prior given it.
inline std::vector<double> full_gradient(const sgmcmc::Model& model, std::span<const double> theta,
                                         sgmcmc::Workspace& workspace) {
  std::vector<double> gradient(model.dimension(), 0.0);
  sgmcmc::Rng unused(0, 0);
  sgmcmc::add_gradient(model, theta, sgmcmc::every_item(model), gradient, workspace, unused);
  return gradient;
}

/// U(θ) from a fresh workspace: one full data pass.
inline double full_potential(const sgmcmc::Model& model, std::span<const double> theta) {
  auto workspace = model.make_workspace();
  return sgmcmc::potential(model, theta, sgmcmc::every_item(model), *workspace);
}

/// A path as a TOML string.
inline std::string quoted(const std::filesystem::path& path) { return "\"" + path.string() + "\""; }

inline void write_gzip(const std::filesystem::path& path, const std::string& text) {
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  REQUIRE(gzwrite(file, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  REQUIRE(gzclose(file) == Z_OK);
}

/// `folder/name`, or `folder/name.gz` gzip-compressed, holding `text`; returns the path.
inline std::filesystem::path write_data_file(const std::filesystem::path& folder, const std::string& name,
                                             const std::string& text, bool compressed) {
  const auto path = folder / (name + (compressed ? ".gz" : ""));
  if (compressed) {
    write_gzip(path, text);
  } else {
    std::ofstream out(path, std::ios::binary);
    out << text;
    REQUIRE(out.good());
  }
  return path;
}

}  // namespace test
