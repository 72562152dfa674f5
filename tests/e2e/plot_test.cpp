// `sgmcmc plot` through the real binary on a real sweep: the PNGs are valid, their pixel sizes
// follow the number of panels, and each panel holds one line (or box) per method, as the sweep's
// axes say; bad options and a missing matplotlib are clear errors.
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support.hpp"

using Catch::Matchers::Contains;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// estimator × step size (the methods) × model.n (the panels) × seed: 16 short cells.
const std::string plotted_sweep = "preset = \"demo\"\n"
                                  "[base.run]\nwarmup = 0\niterations = 100\nchains = 1\neval_every = 25\nthin = 5\n"
                                  "[axes]\n"
                                  "\"estimator.name\" = [\"minibatch\", \"exact\"]\n"
                                  "\"model.n\" = [1000, 2000]\n"
                                  "\"integrator.step_size\" = [2e-5, 1e-5]\n"
                                  "\"run.seed\" = [1, 2]\n";

struct PngSize {
  std::uint32_t width, height;
};

/// A PNG's signature and its IHDR chunk's size (PNG specification, sections 5.2 and 11.2.2).
PngSize png_size(const fs::path& path) {
  const std::string bytes = test::read_text(path);
  REQUIRE(bytes.size() > 33);
  REQUIRE(bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  REQUIRE(bytes.substr(12, 4) == "IHDR");
  const auto big_endian = [&](std::size_t at) {
    std::uint32_t value = 0;
    for (std::size_t k = 0; k < 4; ++k) value = value << 8 | static_cast<unsigned char>(bytes[at + k]);
    return value;
  };
  return {big_endian(16), big_endian(20)};
}

/// Every figure of the sidecar: a valid PNG of the recorded size.
void check_pngs(const fs::path& folder, const json& sidecar) {
  for (const auto& figure : sidecar["figures"]) {
    const fs::path png = folder / figure["file"].get<std::string>();
    INFO(png.string());
    REQUIRE(fs::exists(png));
    CHECK(fs::file_size(png) > 1000);
    const auto size = png_size(png);
    CHECK(size.width == figure["width_px"].get<std::uint32_t>());
    CHECK(size.height == figure["height_px"].get<std::uint32_t>());
  }
}

std::set<std::string> labels_of(const json& items) {
  std::set<std::string> labels;
  for (const auto& item : items) labels.insert(item["label"].get<std::string>());
  return labels;
}

}  // namespace

TEST_CASE("sgmcmc plot draws one panel per value of --panel and one line and box per method") {
  test::TempDir dir;
  const auto out = dir.path() / "sweep-plotted";
  const auto swept = test::run_cli("sweep '" + dir.write("plotted.toml", plotted_sweep).string() + "' --out '" + out.string() + "' --quiet");
  INFO(swept.output);
  REQUIRE(swept.exit_code == 0);

  const auto drawn = test::run_cli("plot '" + out.string() + "' --panel model.n");
  INFO(drawn.output);
  REQUIRE(drawn.exit_code == 0);
  const json sidecar = json::parse(test::read_text(out / "sweep-plotted-plot.json"));
  CHECK(sidecar["metric"] == "log_predictive_density");
  CHECK(sidecar["method_axes"] == json({"estimator.name", "integrator.step_size"}));
  REQUIRE(sidecar["figures"].size() == 3);
  check_pngs(out, sidecar);

  const std::set<std::string> methods = {"estimator.name=minibatch, integrator.step_size=2e-05",
                                         "estimator.name=minibatch, integrator.step_size=1e-05",
                                         "estimator.name=exact, integrator.step_size=2e-05",
                                         "estimator.name=exact, integrator.step_size=1e-05"};
  std::vector<std::string> files;
  for (const auto& figure : sidecar["figures"]) {
    files.push_back(figure["file"].get<std::string>());
    const auto& panels = figure["panels"];
    REQUIRE(panels.size() == 2);
    CHECK(panels[0]["value"] == "1000");
    CHECK(panels[1]["value"] == "2000");
    for (const auto& panel : panels) {
      if (figure["x"] == "box") {
        CHECK(labels_of(panel["boxes"]) == methods);
        for (const auto& box : panel["boxes"]) CHECK(box["values"] == 2);  // the two seeds
      } else {
        CHECK(labels_of(panel["lines"]) == methods);
        for (const auto& line : panel["lines"]) CHECK(line["points"] == 4);  // iterations 25, 50, 75, 100
      }
    }
  }
  CHECK(files == std::vector<std::string>{"sweep-plotted-seconds.png", "sweep-plotted-gradients.png", "sweep-plotted-final.png"});

  // Without --panel: one panel, half as wide, where model.n becomes part of each method's line.
  const auto single = test::run_cli("plot '" + out.string() + "' --out '" + (dir.path() / "one").string() + "' --name one");
  INFO(single.output);
  REQUIRE(single.exit_code == 0);
  const json one = json::parse(test::read_text(dir.path() / "one" / "one-plot.json"));
  check_pngs(dir.path() / "one", one);
  REQUIRE(one["figures"].size() == 3);
  CHECK(one["figures"][0]["panels"].size() == 1);
  CHECK(one["figures"][0]["panels"][0]["lines"].size() == 8);
  CHECK(2 * one["figures"][0]["width_px"].get<int>() == sidecar["figures"][0]["width_px"].get<int>());
}

TEST_CASE("sgmcmc plot: axes zipped with the panel axis name panels, and an unknown axis, folder or matplotlib is a clear error") {
  test::TempDir dir;
  const auto out = dir.path() / "out";
  // The step size zipped with the panel axis, as in Figure 1: it names the panels, not methods.
  const std::string small = "preset = \"demo\"\n[base.run]\nwarmup = 0\niterations = 20\nchains = 1\neval_every = 10\nthin = 5\n"
                            "[axes]\n\"model.n\" = [1000, 2000]\n\"integrator.step_size\" = [2e-5, 1e-5]\n"
                            "zip = [[\"model.n\", \"integrator.step_size\"]]\n";
  REQUIRE(test::run_cli("sweep '" + dir.write("small.toml", small).string() + "' --out '" + out.string() + "' --quiet").exit_code == 0);
  const auto zipped = test::run_cli("plot '" + out.string() + "' --panel model.n");
  INFO(zipped.output);
  REQUIRE(zipped.exit_code == 0);
  const json sidecar = json::parse(test::read_text(out / "out-plot.json"));
  CHECK(sidecar["tied_axes"] == json({"integrator.step_size"}));
  CHECK(sidecar["method_axes"] == json::array());
  REQUIRE(sidecar["figures"].size() == 2);  // no seed axis: no box plots
  for (const auto& panel : sidecar["figures"][0]["panels"]) {
    REQUIRE(panel["lines"].size() == 1);
    CHECK(panel["lines"][0]["label"] == "all cells");
  }

  const auto axis = test::run_cli("plot '" + out.string() + "' --panel model.m");
  CHECK(axis.exit_code == 2);
  CHECK_THAT(axis.output, Contains("--panel axis 'model.m' is not in this sweep (did you mean 'model.n'?)"));

  const auto folder = test::run_cli("plot '" + (dir.path() / "nothing").string() + "'");
  CHECK(folder.exit_code == 2);
  CHECK_THAT(folder.output, Contains("results.csv: missing"));

  // No box plots without a seed axis, and the figures say so rather than drawing empty boxes.
  const auto no_seeds = test::run_cli("plot '" + out.string() + "'");
  INFO(no_seeds.output);
  CHECK(no_seeds.exit_code == 0);
  CHECK_THAT(no_seeds.output, Contains("no box plots: the sweep has no run.seed axis"));

  // python3 -S leaves out site-packages, where Debian's matplotlib lives.
  const auto wrapper = dir.write("python-without-matplotlib", "#!/bin/sh\nexec python3 -S \"$@\"\n");
  fs::permissions(wrapper, fs::perms::owner_all);
  const auto bare = test::shell(fmt::format("SGMCMC_PYTHON='{}' '{}' plot '{}'", wrapper.string(), SGMCMC_CLI, out.string()));
  CHECK(bare.exit_code == 2);
  CHECK_THAT(bare.output, Contains("needs matplotlib"));
  CHECK_THAT(bare.output, Contains("python3-matplotlib"));

  const auto missing = test::shell(fmt::format("SGMCMC_PYTHON=/nonexistent/python3 '{}' plot '{}'", SGMCMC_CLI, out.string()));
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Contains("cannot run '/nonexistent/python3'"));
}

TEST_CASE("sgmcmc plot on a cut results.csv names the file and line, with no Python traceback") {
  test::TempDir dir;
  const auto out = dir.path() / "cut";
  const std::string sweep = "preset = \"demo\"\n[base.run]\niterations = 50\nchains = 1\nwarmup = 0\neval_every = 10\n"
                            "thin = 5\n[axes]\n\"integrator.step_size\" = [1e-5, 2e-5]\n";
  REQUIRE(test::run_cli("sweep '" + dir.write("cut.toml", sweep).string() + "' --out '" + out.string() + "' --quiet").exit_code == 0);
  const std::string whole = test::read_text(out / "results.csv");
  // Cut inside the header, inside the first row's fields and inside a later row: as a copy or a
  // full disk leaves a file. (A cut at a line's end leaves a shorter table that is still valid.)
  const auto second_row = whole.find('\n', whole.find('\n') + 1);
  for (const std::size_t length : {std::size_t{40}, whole.find('\n') + 5, second_row + 30}) {
    INFO(length);
    std::ofstream(out / "results.csv", std::ios::trunc) << whole.substr(0, length);
    const auto plotted = test::run_cli("plot '" + out.string() + "'");
    INFO(plotted.output);
    CHECK(plotted.exit_code == 2);
    CHECK_THAT(plotted.output, Contains("results.csv") && Contains("sgmcmc plot: error:") && !Contains("Traceback"));
  }
}
