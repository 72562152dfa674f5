// `sgmcmc new-model NAME DIR [--kind manual|autodiff|glm]`: a model project that builds (or, for
// glm, runs) as it is against the installed SDK. The templates below are the files written, with
// @NAME@ replaced by the model's name; `manual` writes every gradient by hand, `autodiff` writes
// two log densities and lets sgmcmc/autodiff.hpp derive the rest, `glm` is a configuration only.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"

import sgmcmc;

namespace {

constexpr const char* cmake_lists = R"template(# The @NAME@ model plugin for sgmcmc. Needs the compiler sgmcmc was built with (clang 19),
# Ninja and CMake >= 3.28; see CMakePresets.json and README.md.
cmake_minimum_required(VERSION 3.28)
project(@NAME@ LANGUAGES CXX)
find_package(sgmcmc REQUIRED)
sgmcmc_add_model_plugin(@NAME@ SOURCES @NAME@.cpp)
)template";

constexpr const char* cmake_presets = R"template({
  "version": 6,
  "configurePresets": [
    {
      "name": "release",
      "generator": "Ninja",
      "binaryDir": "${sourceDir}/build",
      "cacheVariables": {
        "CMAKE_BUILD_TYPE": "Release",
        "CMAKE_CXX_COMPILER": "clang++-19",
        "CMAKE_CXX_COMPILER_CLANG_SCAN_DEPS": "clang-scan-deps-19"
      }
    }
  ],
  "buildPresets": [{"name": "release", "configurePreset": "release"}]
}
)template";

constexpr const char* model_source = R"template(// @NAME@: a model plugin for sgmcmc, written by `sgmcmc new-model`.
//
// The model (replace it with yours): y_i ~ N(mu, sigma^2) with known sigma, prior mu ~ N(0, s^2).
// sgmcmc samples theta from pi(theta) ~ exp(-U(theta)), U = f_0 + sum_i f_i, and asks the model for
// the gradient of U, never of log pi. Here theta = (mu) and, up to constants,
//   f_0(mu) = mu^2 / (2 s^2)               (the prior: -log p(mu))
//   f_i(mu) = (y_i - mu)^2 / (2 sigma^2)   (item i: -log p(y_i | mu))
// Check it with `sgmcmc check-model build/plugins/sgmcmc-model-@NAME@.so` before you trust a chain.
#include <sgmcmc/plugin.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

import sgmcmc;

namespace {

class Model final : public sgmcmc::Model {
public:
  // Read every key of [model] here: a key nobody reads is reported to the user as unknown.
  explicit Model(const sgmcmc::ModelContext& context) {
    const sgmcmc::Settings& settings = context.settings;
    noise_sd_ = settings.positive_number("noise_sd", 1.0);
    prior_sd_ = settings.positive_number("prior_sd", 10.0);
    const auto n = settings.integer_at_least("n", 1000, 1);
    const double true_mean = settings.number("true_mean", 2.0);
    // Simulated data from the run's seed (stream data_stream, which no chain uses). To read a
    // file instead, use sgmcmc::read_numeric_csv(path): its errors name file, line and column.
    sgmcmc::Rng rng(context.seed, sgmcmc::data_stream);
    for (std::int64_t i = 0; i < n; ++i) y_.push_back(true_mean + noise_sd_ * rng.normal());
  }

  std::size_t dimension() const override { return 1; }
  std::size_t num_items() const override { return y_.size(); }
  std::vector<std::string> parameter_names() const override { return {"mu"}; }
  // Declare only what you implement; `check-model` tests every declared capability.
  sgmcmc::Capabilities capabilities() const override {
    return {.exact_log_likelihood = true, .per_item_gradients = true, .simulation = true};
  }

  double prior_potential(std::span<const double> theta) const override {
    return 0.5 * theta[0] * theta[0] / (prior_sd_ * prior_sd_);
  }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    gradient[0] += theta[0] / (prior_sd_ * prior_sd_);
  }

  // Adds sum_k w_k grad f_{items[k]}(theta). Loop over the whole batch here (one virtual call per
  // batch, not per item), and honour the weights: estimators pass them for non-uniform sampling.
  void add_data_gradient(std::span<const double> theta, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, sgmcmc::Rng&) const override {
    for (std::size_t k = 0; k < batch.items.size(); ++k)
      gradient[0] += batch.weight(k) * (theta[0] - y_[batch.items[k]]) / (noise_sd_ * noise_sd_);
  }

  double data_potential(std::span<const double> theta, const sgmcmc::Batch& batch, sgmcmc::Workspace&) const override {
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const double residual = y_[batch.items[k]] - theta[0];
      sum += batch.weight(k) * 0.5 * residual * residual / (noise_sd_ * noise_sd_);
    }
    return sum;
  }

  void item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace&) const override {
    for (std::size_t k = 0; k < items.size(); ++k) out[k] = (theta[0] - y_[items[k]]) / (noise_sd_ * noise_sd_);
  }

private:
  double noise_sd_ = 1.0, prior_sd_ = 10.0;
  std::vector<double> y_;
};

sgmcmc::PluginInfo info() {
  return {.name = "@NAME@",
          .description = "normal mean with known noise (the new-model example). Keys: n (1000), true_mean (2), "
                         "noise_sd (1), prior_sd (10)",
          .parameters = "mu: the mean",
          .capabilities = {.exact_log_likelihood = true, .per_item_gradients = true, .simulation = true}};
}

std::unique_ptr<sgmcmc::Model> make(const sgmcmc::ModelContext& context) { return std::make_unique<Model>(context); }

}  // namespace

SGMCMC_MODEL_PLUGIN(info, make)
)template";

constexpr const char* autodiff_cmake_lists = R"template(# The @NAME@ model plugin for sgmcmc, its gradients by automatic differentiation (Stan Math's
# headers: Debian's r-cran-stanheaders and libeigen3-dev). Needs the compiler sgmcmc was built
# with (clang 19), Ninja and CMake >= 3.28; see CMakePresets.json and README.md.
cmake_minimum_required(VERSION 3.28)
project(@NAME@ LANGUAGES CXX)
find_package(sgmcmc REQUIRED)
sgmcmc_add_model_plugin(@NAME@ SOURCES @NAME@.cpp AUTODIFF)
)template";

constexpr const char* autodiff_source = R"template(// @NAME@: Poisson regression y_i ~ Poisson(exp(x_iᵀβ)), β_j ~ N(0, s²), on a CSV of the count, then x_i.
// Only log p(β) and log p(y_i | β) are written, as templates over T; sgmcmc/autodiff.hpp derives the gradients.
#include <utility>
#include <sgmcmc/autodiff.hpp>
#include <sgmcmc/plugin.hpp>

class Regression final : public sgmcmc::autodiff::Model<Regression> {
public:
  explicit Regression(const sgmcmc::ModelContext& context)
      : scale_(context.settings.positive_number("prior_scale", 1.0)),
        rows_(sgmcmc::read_numeric_csv(context.settings.text("data", "@NAME@.csv"))) {
    for (std::size_t i = 0; i < rows_.rows; ++i)  // the count apart; column 0 becomes the intercept's 1
      counts_.push_back(std::exchange(rows_.values[i * rows_.columns], 1.0));
  }
  template <class T> T log_prior(std::span<const T> beta) const {
    T sum = 0.0;
    for (const T& b : beta) sum -= b * b / (2 * scale_ * scale_);
    return sum;
  }
  template <class T> T log_likelihood(std::span<const T> beta, std::size_t i) const {
    using std::exp;
    const T z = sgmcmc::autodiff::dot(beta, std::span(rows_.values).subspan(i * rows_.columns, rows_.columns));
    return counts_[i] * z - exp(z) - std::lgamma(counts_[i] + 1);
  }
  std::size_t dimension() const override { return rows_.columns; }
  std::size_t num_items() const override { return rows_.rows; }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names{"intercept"};
    for (std::size_t j = 1; j < rows_.columns; ++j) names.push_back("beta." + std::to_string(j));
    return names;
  }
private:
  double scale_;
  sgmcmc::NumericTable rows_;
  std::vector<double> counts_;
};
sgmcmc::PluginInfo info() { return {"@NAME@", "Poisson regression", "intercept, beta.1..F", Regression::autodiff_capabilities()}; }
std::unique_ptr<sgmcmc::Model> make(const sgmcmc::ModelContext& context) { return std::make_unique<Regression>(context); }
SGMCMC_MODEL_PLUGIN(info, make)
)template";

constexpr const char* autodiff_model_section = R"template(# MALA with Metropolis-Hastings on the @NAME@ model: sgmcmc run --config @NAME@.toml --plugin-dir build/plugins
[model]
name = "@NAME@"
data = "@NAME@.csv"
prior_scale = 1.0
)template";

constexpr const char* glm_model_section = R"template(# The same Poisson regression as `new-model --kind autodiff`, with no C++: the bundled glm model.
#   sgmcmc run --config @NAME@.toml
[model]
name = "glm"
family = "poisson"
data = "@NAME@.csv"
test_size = 0
prior = "normal"
prior_scale = 1.0
)template";

/// The sampler of both Poisson examples: exact gradients, MALA, MH; acceptance ≈ 0.76.
constexpr const char* mala_mh_sections = R"template(
[estimator]
name = "exact"

[integrator]
name = "mala"
step_size = 2e-3

[corrector]
name = "mh"

[run]
iterations = 2000
warmup = 500
chains = 2
seed = 1
)template";

constexpr const char* preset = R"template(# SGLD on the @NAME@ model: sgmcmc run --config @NAME@.toml --plugin-dir build/plugins
[model]
name = "@NAME@"
n = 1000

[estimator]
name = "minibatch"
batch_size = 100

[integrator]
name = "sgld"
step_size = 1e-4

[run]
iterations = 2000
chains = 2
seed = 1
)template";

constexpr const char* readme = R"template(# @NAME@: an sgmcmc model plugin

    cmake --preset release -DCMAKE_PREFIX_PATH=<where sgmcmc is installed>
    cmake --build --preset release
    sgmcmc check-model build/plugins/sgmcmc-model-@NAME@.so
    sgmcmc run --config @NAME@.toml --plugin-dir build/plugins

Edit `@NAME@.cpp`: the comments say what each function must do.
)template";

constexpr const char* autodiff_readme = R"template(# @NAME@: an sgmcmc model plugin by automatic differentiation

    cmake --preset release -DCMAKE_PREFIX_PATH=<where sgmcmc is installed>
    cmake --build --preset release
    sgmcmc check-model build/plugins/sgmcmc-model-@NAME@.so
    sgmcmc run --config @NAME@.toml --plugin-dir build/plugins

`@NAME@.cpp` writes log p(β) and log p(y_i | β) once, as templates over the scalar type;
sgmcmc/autodiff.hpp derives the gradients (Stan Math's reverse mode, whose headers the build
needs: Debian's r-cran-stanheaders and libeigen3-dev). `@NAME@.csv` is example data.
)template";

constexpr const char* glm_readme = R"template(# @NAME@: a generalised linear model for sgmcmc, no C++

    sgmcmc run --config @NAME@.toml

`@NAME@.toml` chooses the bundled `glm` model's family, link and prior (`sgmcmc list` and its
README give the keys); `@NAME@.csv` is example data: the count, then the features.
)template";

/// The example data of the autodiff and glm kinds: 500 rows of y_i, x_i1, x_i2, x_i3 with x uniform
/// on [-1, 1] and y_i ~ Poisson(exp(0.5 + 0.8 x_i1 - 0.4 x_i2 + 0.3 x_i3)), drawn by inversion.
std::string example_counts() {
  sgmcmc::Rng rng(1, sgmcmc::data_stream);
  const double beta[4] = {0.5, 0.8, -0.4, 0.3};
  std::string text;
  for (int i = 0; i < 500; ++i) {
    double x[3], z = beta[0];
    for (int j = 0; j < 3; ++j) z += beta[j + 1] * (x[j] = 2.0 * rng.uniform() - 1.0);
    const double mean = std::exp(z), u = rng.uniform();
    int count = 0;
    for (double p = std::exp(-mean), cdf = p; u > cdf && p > 0.0; cdf += p) p *= mean / ++count;  // p > 0: cdf may round below u
    text += fmt::format("{},{:.6f},{:.6f},{:.6f}\n", count, x[0], x[1], x[2]);
  }
  return text;
}

std::string fill(std::string text, const std::string& name) {
  for (std::size_t at; (at = text.find("@NAME@")) != std::string::npos;) text.replace(at, 6, name);
  return text;
}

void check_name(const std::string& name) {
  const bool valid = !name.empty() && name.size() <= 64 && std::islower(static_cast<unsigned char>(name[0])) &&
                     name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
  if (!valid)
    throw sgmcmc::Error(fmt::format("new-model: '{}' is not a model name: use lower-case letters, digits and _, "
                                    "starting with a letter",
                                    name));
}

}  // namespace

/// The files of a project of `kind`, by name, before @NAME@ is filled in.
std::vector<std::pair<std::string, std::string>> project_files(const std::string& name, const std::string& kind) {
  if (kind == "manual")
    return {{"CMakeLists.txt", cmake_lists}, {"CMakePresets.json", cmake_presets}, {name + ".cpp", model_source},
            {name + ".toml", preset}, {"README.md", readme}};
  if (kind == "autodiff")
    return {{"CMakeLists.txt", autodiff_cmake_lists}, {"CMakePresets.json", cmake_presets}, {name + ".cpp", autodiff_source},
            {name + ".toml", std::string(autodiff_model_section) + mala_mh_sections}, {name + ".csv", example_counts()},
            {"README.md", autodiff_readme}};
  if (kind == "glm")
    return {{name + ".toml", std::string(glm_model_section) + mala_mh_sections}, {name + ".csv", example_counts()},
            {"README.md", glm_readme}};
  throw sgmcmc::Error(fmt::format("new-model: --kind '{}' is not one of manual, autodiff, glm", kind));
}

int new_model_command(const std::string& name, const std::filesystem::path& folder, const std::string& kind) {
  check_name(name);
  const auto files = project_files(name, kind);
  std::error_code error;
  if (std::filesystem::exists(folder) && !std::filesystem::is_empty(folder, error))
    throw sgmcmc::Error(fmt::format("new-model: folder '{}' is not empty; give a new or empty folder", folder.string()));
  std::filesystem::create_directories(folder, error);
  if (error) throw sgmcmc::Error(fmt::format("new-model: folder '{}': {}", folder.string(), error.message()));
  for (const auto& [file, text] : files) {
    sgmcmc::OutputFile out(folder / file);
    out.write(fill(text, name));
    out.close();
  }
  fmt::print("wrote a plugin project for model '{}' in {}; see its README.md\n", name, folder.string());
  return 0;
}

Command add_new_model_command(CLI::App& app) {
  struct Options {
    std::string name;
    std::filesystem::path folder;
    std::string kind = "manual";
  };
  const auto model = std::make_shared<Options>();
  auto* command = app.add_subcommand("new-model", "write a model plugin project that builds against the installed sgmcmc");
  command->footer("Example: sgmcmc new-model poisson_glm my-poisson");
  command->add_option("name", model->name, "the model's name (lower case, digits, _)")->required();
  command->add_option("folder", model->folder, "a new or empty folder")->required();
  command->add_option("--kind", model->kind,
                      "manual: every gradient by hand (a normal mean); autodiff: two log densities, gradients derived "
                      "(Poisson regression); glm: the bundled glm model, no C++ (Poisson regression)")
      ->capture_default_str();
  return {command, [model] { return new_model_command(model->name, model->folder, model->kind); }};
}
