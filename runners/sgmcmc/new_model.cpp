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

constexpr const char* model_source = R"template(// @NAME@: a model plugin for sgmcmc, written by `sgmcmc new-model`; replace the model with yours.
//
// The model: Bayesian linear regression with known noise sd sigma, on a CSV whose rows are y_i and
// then the features of x_i (an intercept x_i0 = 1 is put first):
//   y_i ~ N(x_i' beta, sigma^2),   beta_j ~ N(0, s^2).
// sgmcmc samples theta = beta from pi(theta) ~ exp(-U(theta)), U = f_0 + sum_i f_i, and asks the
// model for potentials and gradients of U, never of log pi:
//   f_0(beta) = |beta|^2 / (2 s^2)                                (the prior, up to a constant)
//   f_i(beta) = (y_i - x_i' beta)^2 / (2 sigma^2) + log(sigma) + log(2 pi)/2   (-log p(y_i | beta))
//   grad f_i(beta) = s_i x_i,  s_i = (x_i' beta - y_i) / sigma^2  (the GLM form)
// The last `test_rows` rows are held out: the metric averages p(y*_j | beta) over the draws so far
// (state kept per chain in a Workspace), the quantity is one draw's held-out RMSE.
// Check it with `sgmcmc check-model build/plugins/sgmcmc-model-@NAME@.so` before you trust a chain.
#include <sgmcmc/plugin.hpp>

#include <cmath>
#include <cstddef>
#include <memory>
#include <numbers>
#include <numeric>
#include <span>
#include <string>
#include <vector>

import sgmcmc.sdk;

namespace {

// What the model implements, declared once for capabilities() and for the PluginInfo that
// `sgmcmc list` shows. check-model tests each, and fails a plugin that declares one it lacks.
constexpr sgmcmc::Capabilities implemented{.exact_log_likelihood = true, .per_item_gradients = true,
                                           .glm_gradients = true};

/// Rows y_i, x_i: x row-major, `columns` numbers a row (the intercept's 1 first).
struct Rows {
  std::vector<double> y, x;
  std::size_t columns = 0;
  const double* row(std::size_t i) const { return &x[i * columns]; }
  double predictor(std::size_t i, std::span<const double> beta) const {
    return std::inner_product(beta.begin(), beta.end(), row(i), 0.0);
  }
};

/// One chain's state: the running predictive average behind the metric. A checkpoint saves it,
/// so that a resumed chain continues bit for bit. `log_densities` is scratch, not state.
struct Workspace final : sgmcmc::Workspace {
  explicit Workspace(std::size_t test_rows) : predictive(test_rows), log_densities(test_rows) {}
  sgmcmc::PredictiveAverage predictive;
  std::vector<double> log_densities;
  void save_state(sgmcmc::StateWriter& out) const override { predictive.save_state(out); }
  void restore_state(sgmcmc::StateReader& in) override { predictive.restore_state(in); }
};

class Model final : public sgmcmc::Model {
public:
  // Read every key of [model] here: a key nobody reads is reported to the user as unknown.
  // context.rows (run.data_parallel's part r of P) is ignored: without the row-shares capability
  // every rank holds every row (plugins/README.md says how to hold only a block).
  explicit Model(const sgmcmc::ModelContext& context) {
    sgmcmc::SectionReader settings = context.settings;
    noise_sd_ = settings.positive_number("noise_sd", 0.5);
    prior_sd_ = settings.positive_number("prior_sd", 10.0);
    const auto held_out = static_cast<std::size_t>(settings.integer_at_least("test_rows", 100, 0));
    // Errors name the file, line and column. In a TOML file, a relative `data` is read from the
    // file's folder; the default is read from the working folder.
    const sgmcmc::NumericTable table = sgmcmc::read_numeric_csv(settings.text("data", "@NAME@.csv"));
    if (table.columns < 2 || table.rows < held_out + 2)
      throw sgmcmc::Error(settings.describe("data") + ": expected rows of y and at least one feature, " +
                          std::to_string(held_out + 2) + " rows or more (test_rows of them held out)");
    for (Rows* rows : {&train_, &test_}) rows->columns = table.columns;
    for (std::size_t i = 0; i < table.rows; ++i) {
      Rows& rows = i + held_out < table.rows ? train_ : test_;
      rows.y.push_back(table.at(i, 0));
      rows.x.push_back(1.0);
      for (std::size_t j = 1; j < table.columns; ++j) rows.x.push_back(table.at(i, j));
    }
  }

  std::size_t dimension() const override { return train_.columns; }
  std::size_t num_items() const override { return train_.y.size(); }
  std::vector<std::string> parameter_names() const override {  // Stan's style
    std::vector<std::string> names{"intercept"};
    for (std::size_t j = 1; j < dimension(); ++j) names.push_back("beta." + std::to_string(j));
    return names;
  }
  sgmcmc::Capabilities capabilities() const override { return implemented; }
  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override {
    return std::make_unique<Workspace>(test_.y.size());
  }

  double prior_potential(std::span<const double> beta) const override {
    return std::inner_product(beta.begin(), beta.end(), beta.begin(), 0.0) / (2 * prior_sd_ * prior_sd_);
  }
  void add_prior_gradient(std::span<const double> beta, std::span<double> gradient) const override {
    for (std::size_t j = 0; j < beta.size(); ++j) gradient[j] += beta[j] / (prior_sd_ * prior_sd_);
  }

  // Adds sum_k w_k grad f_{items[k]}(beta). Loop over the whole batch here (one virtual call per
  // batch, not per item), and honour the weights: estimators pass them for non-uniform sampling.
  void add_data_gradient(std::span<const double> beta, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, sgmcmc::Rng&) const override {
    for (std::size_t k = 0; k < batch.items.size(); ++k)
      add_row(batch.items[k], batch.weight(k) * scalar(batch.items[k], beta), gradient);
  }

  double data_potential(std::span<const double> beta, const sgmcmc::Batch& batch,
                        sgmcmc::Workspace&) const override {
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k)
      sum -= batch.weight(k) * log_density(train_, batch.items[k], beta);
    return sum;
  }

  // Row k of `out` (items.size() x dimension(), row-major) <- grad f_{items[k]}: for SAGA's tables.
  void item_gradients(std::span<const double> beta, std::span<const std::size_t> items, std::span<double> out,
                      sgmcmc::Workspace&) const override {
    const std::size_t d = dimension();
    for (std::size_t k = 0; k < items.size(); ++k)
      for (std::size_t j = 0; j < d; ++j) out[k * d + j] = scalar(items[k], beta) * train_.row(items[k])[j];
  }

  // The GLM form, grad f_i = s_i x_i: SAGA then stores one number an item, and SGLD-CV's two
  // gradients share one pass over the rows.
  void glm_scalars(std::span<const double> beta, std::span<const std::size_t> items, std::span<double> out,
                   sgmcmc::Workspace&) const override {
    for (std::size_t k = 0; k < items.size(); ++k) out[k] = scalar(items[k], beta);
  }
  void add_scaled_features(std::span<const std::size_t> items, std::span<const double> scales,
                           std::span<double> gradient) const override {
    for (std::size_t k = 0; k < items.size(); ++k) add_row(items[k], scales[k], gradient);
  }

  // Metric (running over the draws): (1/J) sum_j log[(1/S) sum_s p(y*_j | beta_s)].
  std::vector<std::string> metric_names() const override {
    return test_.y.empty() ? std::vector<std::string>{} : std::vector<std::string>{"log_predictive_density"};
  }
  void evaluate_metrics(std::span<const double> beta, sgmcmc::Workspace& base,
                        std::span<double> out) const override {
    if (out.empty()) return;  // no held-out rows (test_rows = 0): no metric, and `out` has no element
    auto& workspace = static_cast<Workspace&>(base);
    for (std::size_t j = 0; j < test_.y.size(); ++j) workspace.log_densities[j] = log_density(test_, j, beta);
    out[0] = workspace.predictive.add(workspace.log_densities);
  }

  // Quantity (one draw, no state): the held-out RMSE, sqrt((1/J) sum_j (y*_j - x*_j' beta)^2).
  std::vector<std::string> quantity_names() const override {
    return test_.y.empty() ? std::vector<std::string>{} : std::vector<std::string>{"held_out_rmse"};
  }
  void evaluate_quantities(std::span<const double> beta, sgmcmc::Workspace&, std::span<double> out) const override {
    if (out.empty()) return;  // as evaluate_metrics
    double sum = 0.0;
    for (std::size_t j = 0; j < test_.y.size(); ++j) sum += std::pow(test_.y[j] - test_.predictor(j, beta), 2);
    out[0] = std::sqrt(sum / static_cast<double>(test_.y.size()));
  }

private:
  double scalar(std::size_t i, std::span<const double> beta) const {
    return (train_.predictor(i, beta) - train_.y[i]) / (noise_sd_ * noise_sd_);
  }
  double log_density(const Rows& rows, std::size_t i, std::span<const double> beta) const {
    const double residual = (rows.y[i] - rows.predictor(i, beta)) / noise_sd_;
    return -0.5 * residual * residual - std::log(noise_sd_) - 0.5 * std::log(2 * std::numbers::pi);
  }
  void add_row(std::size_t i, double scale, std::span<double> gradient) const {
    for (std::size_t j = 0; j < gradient.size(); ++j) gradient[j] += scale * train_.row(i)[j];
  }

  double noise_sd_ = 0.5, prior_sd_ = 10.0;
  Rows train_, test_;
};

sgmcmc::PluginInfo info() {
  return {.name = "@NAME@",
          .description = "Bayesian linear regression with known noise (the new-model example). Keys: data (@NAME@.csv: "
                         "y, then the features), test_rows (100), noise_sd (0.5), prior_sd (10)",
          .parameters = "intercept, beta.1 .. beta.F: regression coefficients",
          .capabilities = implemented};
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

constexpr const char* preset = R"template(# SGLD-CV on the @NAME@ model: sgmcmc run --config @NAME@.toml --plugin-dir build/plugins
[model]
name = "@NAME@"
data = "@NAME@.csv"
noise_sd = 0.5

[estimator]
name = "cv"
batch_size = 50

[integrator]
name = "sgld"
step_size = 1e-4

[run]
iterations = 4000
warmup = 500
chains = 2
seed = 1
)template";

constexpr const char* readme = R"template(# @NAME@: an sgmcmc model plugin

    cmake --preset release -DCMAKE_PREFIX_PATH=<where sgmcmc is installed>
    cmake --build --preset release
    sgmcmc check-model build/plugins/sgmcmc-model-@NAME@.so
    sgmcmc run --config @NAME@.toml --plugin-dir build/plugins

`@NAME@.cpp` is a complete model, Bayesian linear regression on `@NAME@.csv` (example data: y,
then three features; the last 100 rows held out), with every part of the interface a model can
have: potentials and gradients, per-item gradients, the GLM form, a held-out metric kept in a
per-chain workspace, and a per-draw quantity. Replace it with yours: the comments say what each
function must do, and `check-model` tests each capability you declare.
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

/// Example data: `rows` rows of y_i, x_i1, x_i2, x_i3 with x uniform on [-1, 1] and y_i the
/// response (a formatted draw) at the linear predictor z_i = beta_0 + sum_j beta_j x_ij.
template <class Response>
std::string example_rows(int rows, const double (&beta)[4], Response response) {
  sgmcmc::Rng rng(1, sgmcmc::data_stream);
  std::string text;
  for (int i = 0; i < rows; ++i) {
    double x[3], z = beta[0];
    for (int j = 0; j < 3; ++j) z += beta[j + 1] * (x[j] = 2.0 * rng.uniform() - 1.0);
    text += fmt::format("{},{:.6f},{:.6f},{:.6f}\n", response(z, rng), x[0], x[1], x[2]);
  }
  return text;
}

/// The autodiff and glm kinds' data: 500 rows, y_i ~ Poisson(exp(0.5 + 0.8 x_i1 - 0.4 x_i2 + 0.3 x_i3)),
/// drawn by inversion.
std::string example_counts() {
  return example_rows(500, {0.5, 0.8, -0.4, 0.3}, [](double z, sgmcmc::Rng& rng) {
    const double mean = std::exp(z), u = rng.uniform();
    int count = 0;
    for (double p = std::exp(-mean), cdf = p; u > cdf && p > 0.0; cdf += p) p *= mean / ++count;  // p > 0: cdf may round below u
    return fmt::format("{}", count);
  });
}

/// The manual kind's data: 600 rows (the last 100 held out), y_i ~ N(1 + 2 x_i1 - x_i2 + 0.5 x_i3, 0.5²).
std::string example_measurements() {
  return example_rows(600, {1.0, 2.0, -1.0, 0.5},
                      [](double z, sgmcmc::Rng& rng) { return fmt::format("{:.6f}", z + 0.5 * rng.normal()); });
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
            {name + ".toml", preset}, {name + ".csv", example_measurements()}, {"README.md", readme}};
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
                      "manual: every function by hand (linear regression with a metric, a quantity and the GLM form); autodiff: two log densities, gradients derived "
                      "(Poisson regression); glm: the bundled glm model, no C++ (Poisson regression)")
      ->capture_default_str();
  return {command, [model] { return new_model_command(model->name, model->folder, model->kind); }};
}
