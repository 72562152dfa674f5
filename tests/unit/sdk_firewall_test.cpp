// The compile firewall between the sampler and the plugins, read from this build tree
// (modules/README.md, "What rebuilds what"): CMake writes, for each object it compiles, a module map
// (<object>.modmap) with one -fmodule-file=<name>=<BMI> per module the source needs, directly or
// through the modules it imports; ninja recompiles the object whenever one of those BMIs changes.
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// The module names of one module map: `-fmodule-file="sgmcmc.model=.../sgmcmc.model.pcm"` gives
/// "sgmcmc.model".
std::vector<std::string> modules_of(const fs::path& modmap) {
  std::vector<std::string> names;
  std::ifstream in(modmap);
  const std::string flag = "-fmodule-file=";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(flag, 0) != 0) continue;
    std::string value = line.substr(flag.size());
    value.erase(std::remove(value.begin(), value.end(), '"'), value.end());
    names.push_back(value.substr(0, value.find('=')));
  }
  return names;
}

/// The module maps of every object of the model plugins (bundled and test fixtures): their
/// targets are sgmcmc-model-<name>.
std::vector<fs::path> plugin_module_maps() {
  std::vector<fs::path> maps;
  for (const auto& entry : fs::recursive_directory_iterator(SGMCMC_BUILD_DIR)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() == ".modmap" && path.find("/sgmcmc-model-") != std::string::npos) maps.push_back(entry.path());
  }
  return maps;
}

}  // namespace

TEST_CASE("the SDK firewall: a plugin's objects need the SDK's modules only, none of the sampler's", "[sdk]") {
  // What modules/sdk.cppm re-exports, and the SDK module itself: the model interface and what
  // it uses. An integrator, estimator, corrector, the chain, the assembly, the runner's io or
  // the analysis here would mean an edit there recompiles plugins.
  const std::set<std::string> sdk = {"sgmcmc.sdk",      "sgmcmc.error", "sgmcmc.state", "sgmcmc.random",
                                     "sgmcmc.settings", "sgmcmc.model", "sgmcmc.data",  "sgmcmc.io"};
  const auto maps = plugin_module_maps();
  std::set<std::string> plugins_seen;
  for (const fs::path& map : maps) {
    const std::string path = map.string();
    const auto start = path.find("/sgmcmc-model-") + 1;
    plugins_seen.insert(path.substr(start, path.find(".dir/", start) - start));
    for (const std::string& name : modules_of(map)) {
      INFO(map.string() << " needs module " << name);
      CHECK(sdk.count(name) == 1);
    }
  }
  // Every bundled plugin was looked at (a build tree without them would pass vacuously).
  for (const char* plugin : {"sgmcmc-model-gaussian", "sgmcmc-model-logistic", "sgmcmc-model-glm", "sgmcmc-model-pmf",
                             "sgmcmc-model-lda", "sgmcmc-model-mlp"}) {
    INFO(plugin << " has no module map under " << SGMCMC_BUILD_DIR);
    CHECK(plugins_seen.count(plugin) == 1);
  }
}
