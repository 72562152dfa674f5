// sgmcmc/layers.hpp, the batch-level building blocks: each block's forward value against a plain
// scalar loop written here, and each adjoint against central finite differences of that loop (not
// of the block: a wrong formula in the header cannot agree with itself here).
//
// Tolerances: a central difference (f(x+h) - f(x-h))/2h with h = 1e-5 on functions whose third
// derivatives are O(1) has truncation error ~h² = 1e-10 and rounding error ~ε|f|/h ≈ 1e-11·|f|,
// so 1e-7·max(1, |value|) leaves a margin of 10³ and still catches any wrong term (a missing
// factor or sign is off by O(1)).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numbers>
#include <vector>

#include <sgmcmc/layers.hpp>

import sgmcmc;

namespace {

namespace layers = sgmcmc::layers;
using layers::Matrix;

constexpr double step = 1e-5, tolerance = 1e-7;

std::vector<double> uniform_values(std::size_t n, double half_width, sgmcmc::Rng& rng) {
  std::vector<double> values(n);
  for (double& v : values) v = half_width * (2.0 * rng.uniform() - 1.0);
  return values;
}

/// Central difference of `f` along coordinate j of `x` (restored afterwards).
double central_difference(std::vector<double>& x, std::size_t j, const std::function<double()>& f) {
  const double saved = x[j];
  x[j] = saved + step;
  const double up = f();
  x[j] = saved - step;
  const double down = f();
  x[j] = saved;
  return (up - down) / (2.0 * step);
}

bool close(double a, double b, double scale = 1.0) {
  return std::abs(a - b) <= tolerance * std::max({1.0, std::abs(a), std::abs(b), scale});
}

/// Z = X W + b by three plain loops; X rows × in, W in × out.
std::vector<double> plain_dense(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                                std::size_t rows, std::size_t in, std::size_t out) {
  std::vector<double> z(rows * out);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < out; ++j) {
      double sum = b[j];
      for (std::size_t k = 0; k < in; ++k) sum += x[i * in + k] * w[k * out + j];
      z[i * out + j] = sum;
    }
  return z;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

TEST_CASE("layers: a dense layer's forward pass is X W + b, its adjoints the finite differences of Σ c ⊙ Z") {
  sgmcmc::Rng rng(3, 0);
  const std::size_t rows = 7, in = 5, out = 4;
  auto x = uniform_values(rows * in, 1.0, rng), w = uniform_values(in * out, 1.0, rng), b = uniform_values(out, 1.0, rng);
  const auto c = uniform_values(rows * out, 1.0, rng);  // L = Σ c ⊙ Z, so ∂L/∂Z = c

  std::vector<double> z(rows * out);
  layers::dense_forward<double>({x.data(), rows, in}, w.data(), b.data(), {z.data(), rows, out});
  const auto expected = plain_dense(x, w, b, rows, in, out);
  for (std::size_t i = 0; i < z.size(); ++i) CHECK(close(z[i], expected[i]));

  std::vector<double> grad_w(in * out, 0.5), grad_b(out, -0.25), dx(rows * in, 99.0);  // ∇W, ∇b accumulate; dX is set
  layers::dense_backward<double>({x.data(), rows, in}, w.data(), {c.data(), rows, out}, grad_w.data(), grad_b.data(),
                                 {dx.data(), rows, in});
  const auto loss = [&] { return dot(c, plain_dense(x, w, b, rows, in, out)); };
  for (std::size_t j = 0; j < w.size(); ++j) CHECK(close(grad_w[j] - 0.5, central_difference(w, j, loss)));
  for (std::size_t j = 0; j < b.size(); ++j) CHECK(close(grad_b[j] + 0.25, central_difference(b, j, loss)));
  for (std::size_t j = 0; j < x.size(); ++j) CHECK(close(dx[j], central_difference(x, j, loss)));

  SECTION("a null dX skips the input's adjoint; a row stride wider than the row is honoured") {
    std::vector<double> wide(rows * (in + 3), 1e300);  // padding that must never be read
    for (std::size_t i = 0; i < rows; ++i) std::copy_n(&x[i * in], in, &wide[i * (in + 3)]);
    std::vector<double> z_wide(rows * out), grad_w2(in * out, 0.0), grad_b2(out, 0.0);
    layers::dense_forward<double>({wide.data(), rows, in, in + 3}, w.data(), b.data(), {z_wide.data(), rows, out});
    for (std::size_t i = 0; i < z.size(); ++i) CHECK(close(z_wide[i], expected[i]));
    layers::dense_backward<double>({wide.data(), rows, in, in + 3}, w.data(), {c.data(), rows, out}, grad_w2.data(),
                                   grad_b2.data(), {});
    for (std::size_t j = 0; j < w.size(); ++j) CHECK(close(grad_w2[j], grad_w[j] - 0.5));
  }
}

TEST_CASE("layers: float storage gives the double layer's values to float precision") {
  sgmcmc::Rng rng(4, 0);
  const std::size_t rows = 6, in = 9, out = 3;
  const auto x = uniform_values(rows * in, 1.0, rng), w = uniform_values(in * out, 1.0, rng), b = uniform_values(out, 1.0, rng);
  const auto c = uniform_values(rows * out, 1.0, rng);
  const auto as_float = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  auto xf = as_float(x), wf = as_float(w), bf = as_float(b), cf = as_float(c);
  std::vector<float> z(rows * out), grad_w(in * out, 0.0f), grad_b(out, 0.0f), dx(rows * in);
  layers::dense_forward<float>({xf.data(), rows, in}, wf.data(), bf.data(), {z.data(), rows, out});
  layers::dense_backward<float>({xf.data(), rows, in}, wf.data(), {cf.data(), rows, out}, grad_w.data(), grad_b.data(),
                                {dx.data(), rows, in});
  // Sums of ≤ 9 products of O(1) floats: error ≲ 9 · 2⁻²⁴ · 9 ≈ 5e-6; 1e-4 catches any wrong term.
  const auto expected = plain_dense(x, w, b, rows, in, out);
  for (std::size_t i = 0; i < z.size(); ++i) CHECK(std::abs(z[i] - expected[i]) < 1e-4);
  for (std::size_t k = 0; k < in; ++k)
    for (std::size_t j = 0; j < out; ++j) {
      double sum = 0.0;  // Σ_i x_ik c_ij
      for (std::size_t i = 0; i < rows; ++i) sum += x[i * in + k] * c[i * out + j];
      CHECK(std::abs(grad_w[k * out + j] - sum) < 1e-4);
    }
}

TEST_CASE("layers: tanh, relu and gelu and their derivatives against their definitions and finite differences") {
  sgmcmc::Rng rng(5, 0);
  auto z = uniform_values(40, 3.0, rng);
  z.push_back(0.0);
  for (double tiny : {1e-300, -3e-9, 0.0399, -0.0401, 0.5, 19.0, -40.0}) z.push_back(tiny);  // either side of tanh's series/quotient switch, and its tails
  const auto gelu = [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::numbers::sqrt2)); };  // erf, not erfc
  const std::pair<layers::Activation, std::function<double(double)>> cases[] = {
      {layers::Activation::tanh, [](double v) { return std::sinh(v) / std::cosh(v); }},
      {layers::Activation::relu, [](double v) { return v > 0 ? v : 0.0; }},
      {layers::Activation::gelu, gelu}};
  for (const auto& [activation, reference] : cases) {
    std::vector<double> a(z.size()), d(z.size(), 1.0);
    layers::activate(activation, z.data(), a.data(), z.size());
    layers::activation_backward(activation, z.data(), a.data(), d.data(), z.size());
    for (std::size_t i = 0; i < z.size(); ++i) {
      INFO("activation " << static_cast<int>(activation) << " at z = " << z[i]);
      CHECK(close(a[i], reference(z[i])));
      if (activation == layers::Activation::relu && std::abs(z[i]) < 2 * step) continue;  // no derivative at 0
      std::vector<double> point{z[i]};
      CHECK(close(d[i], central_difference(point, 0, [&] { return reference(point[0]); })));
    }
  }
  // tanh in its vectorisable form keeps glibc's tanh's relative accuracy (< 1 ulp) to 3e-15, also
  // for tiny |z|, where 1 - e^{-2|z|} alone would lose every digit (1e-300 would give 0).
  std::vector<double> tanh_z;
  for (int e = -300; e <= 2; ++e)
    for (double m : {1.0, 1.37, 2.9, -4.1, 7.7}) tanh_z.push_back(m * std::pow(2.0, e / 4.0) * std::pow(10.0, e * 0.75));
  std::vector<double> tanh_a(tanh_z.size());
  layers::activate(layers::Activation::tanh, tanh_z.data(), tanh_a.data(), tanh_z.size());
  for (std::size_t i = 0; i < tanh_z.size(); ++i) {
    INFO("tanh at z = " << tanh_z[i]);
    CHECK(std::abs(tanh_a[i] - std::tanh(tanh_z[i])) <= 3e-15 * std::abs(std::tanh(tanh_z[i])));
  }

  layers::Activation parsed{};
  CHECK((layers::parse_activation("gelu", parsed) && parsed == layers::Activation::gelu));
  CHECK_FALSE(layers::parse_activation("sigmoid", parsed));
}

TEST_CASE("layers: the categorical potential is -log of the softmax probability, weighted, with its adjoint") {
  sgmcmc::Rng rng(6, 0);
  const std::size_t rows = 5, classes = 4;
  auto z = uniform_values(rows * classes, 3.0, rng);
  const std::vector<std::uint32_t> labels{0, 3, 1, 1, 2};
  const std::vector<double> weights{1.0, 2.5, 0.5, 1.0, 3.0};
  // Σ_k w_k (-log(e^{z_{k y_k}} / Σ_c e^{z_kc})), probabilities formed directly (no log-sum-exp).
  const auto plain = [&] {
    double total = 0.0;
    for (std::size_t k = 0; k < rows; ++k) {
      double sum = 0.0;
      for (std::size_t c = 0; c < classes; ++c) sum += std::exp(z[k * classes + c]);
      total -= weights[k] * std::log(std::exp(z[k * classes + labels[k]]) / sum);
    }
    return total;
  };
  std::vector<double> d(rows * classes);
  const double value = layers::categorical_potential<double>({z.data(), rows, classes}, labels, weights, {d.data(), rows, classes});
  CHECK(close(value, plain()));
  for (std::size_t j = 0; j < z.size(); ++j) CHECK(close(d[j], central_difference(z, j, plain)));
  // Unweighted is the weights of 1; no adjoint asked for, the same value.
  const std::vector<double> ones(rows, 1.0);
  CHECK(close(layers::categorical_potential<double>({z.data(), rows, classes}, labels, {}, {}),
              layers::categorical_potential<double>({z.data(), rows, classes}, labels, ones, {})));

  // log_softmax rows exponentiate to probabilities that sum to 1 and give the same potential.
  std::vector<double> log_p(rows * classes);
  layers::log_softmax<double>({z.data(), rows, classes}, {log_p.data(), rows, classes});
  double weighted = 0.0;
  for (std::size_t k = 0; k < rows; ++k) {
    double mass = 0.0;
    for (std::size_t c = 0; c < classes; ++c) mass += std::exp(log_p[k * classes + c]);
    CHECK(close(mass, 1.0));
    weighted -= weights[k] * log_p[k * classes + labels[k]];
  }
  CHECK(close(weighted, value));

  // Logits of 1000 overflow e^z: the shifted form stays finite and exact (-log p = log(1 + e^{-1000}) ≈ 0).
  const std::vector<double> huge{1000.0, 0.0};
  const std::vector<std::uint32_t> first{0}, second{1};
  CHECK(layers::categorical_potential<double>({huge.data(), 1, 2}, first, {}, {}) == 0.0);
  CHECK(close(layers::categorical_potential<double>({huge.data(), 1, 2}, second, {}, {}), 1000.0));
}

TEST_CASE("layers: the bernoulli-logit and gaussian potentials are their -log densities, with adjoints") {
  sgmcmc::Rng rng(7, 0);
  const std::size_t rows = 6;
  auto z = uniform_values(rows, 4.0, rng);
  const std::vector<double> y01{0, 1, 1, 0, 1, 0}, y_real{0.3, -1.2, 2.0, 0.0, 0.7, -0.4};
  const std::vector<double> weights{1.0, 0.5, 2.0, 1.5, 1.0, 3.0};
  std::vector<double> d(rows);

  const auto plain_bernoulli = [&] {  // -log of p = 1/(1 + e^{-z}) or 1 - p
    double total = 0.0;
    for (std::size_t k = 0; k < rows; ++k) {
      const double p = 1.0 / (1.0 + std::exp(-z[k]));
      total -= weights[k] * std::log(y01[k] == 1 ? p : 1.0 - p);
    }
    return total;
  };
  CHECK(close(layers::bernoulli_logit_potential<double>({z.data(), rows, 1}, y01, weights, {d.data(), rows, 1}),
              plain_bernoulli()));
  for (std::size_t j = 0; j < rows; ++j) CHECK(close(d[j], central_difference(z, j, plain_bernoulli)));
  const std::vector<double> far{-800.0, 800.0}, y_far{1.0, 0.0};
  CHECK(close(layers::bernoulli_logit_potential<double>({far.data(), 2, 1}, y_far, {}, {}), 1600.0));

  const double sd = 0.7;
  const auto plain_gaussian = [&] {  // -log of the normal density e^{-r²/2σ²} / (σ √(2π))
    double total = 0.0;
    for (std::size_t k = 0; k < rows; ++k) {
      const double r = y_real[k] - z[k];
      total -= weights[k] * std::log(std::exp(-r * r / (2 * sd * sd)) / (sd * std::sqrt(2 * std::numbers::pi)));
    }
    return total;
  };
  CHECK(close(layers::gaussian_potential<double>({z.data(), rows, 1}, y_real, sd, weights, {d.data(), rows, 1}),
              plain_gaussian()));
  for (std::size_t j = 0; j < rows; ++j) CHECK(close(d[j], central_difference(z, j, plain_gaussian)));
}
