// Issue #22 item 2: which automatic-differentiation library for the SDK path of general models?
// A standalone measurement, on purpose not named *_benchmark.cpp (CMake does not build it): the
// item log density of Bayesian logistic regression is written ONCE as a template over the scalar
// type (`item_log_density` below), and each candidate library derives from it
//   (a) the weighted batch potential U = -Σ_i w_i log p(y_i | x_i, θ) and its gradient ∇U, and
//   (b) the per-item potentials -log p(y_i | x_i, θ) and gradients (an n × d matrix),
// next to the hand-written logistic formulas on the same batch (d = 55 with the intercept,
// n = 500 rows, simulated with a fixed seed). It prints the check against the hand-written
// results, then the µs per call and the ratio to the hand-written cost.
//
// Debian packages: r-cran-stanheaders (Stan Math 3.0.0 headers; needs Eigen: libeigen3-dev, and
// Boost: libboost-dev), libadolc-dev, libtrilinos-sacado-dev plus what Debian's Sacado build
// needs and its -dev package does not pull in: libtrilinos-kokkos-dev (Sacado_ConfigDefs.h
// includes Kokkos_Macros.hpp) and libtrilinos-teuchos-dev (the Fad traits include Teuchos, whose
// headers include mpi.h and whose inline code links libtrilinos_teuchoscomm/-core, so MPI too).
// Build (one compile, no CMake) and run from the work tree:
//
//   STAN=$(Rscript -e 'cat(system.file("include", package = "StanHeaders"))')
//   SACADO=$(dirname "$(dpkg -L libtrilinos-sacado-dev | grep '/Sacado.hpp$')")
//   clang++-19 -std=c++20 -O3 -march=native -DNDEBUG -I"$STAN" $(pkg-config --cflags eigen3 ompi-c) \
//     -I"$SACADO" tests/benchmarks/autodiff_candidates.cpp -o autodiff_candidates \
//     -ladolc -ltrilinos_teuchoscomm -ltrilinos_teuchoscore
//   ./autodiff_candidates [seconds per candidate = 0.5]
//
// -DWITH_STAN=0, -DWITH_SACADO=0 or -DWITH_ADOLC=0 leave a library out (then its flags are not
// needed; this also times a library's compile cost alone). Each figure is the median of 5 timed
// repeats of about seconds/5 each, the candidates taken in round robin.
//
// Agreement: batch gradients agree to ~1e-15. Per-item results agree to ~1e-13 relative, for
// reasons of the formula, not the libraries: log(1 + exp(-|t|)) instead of log1p (which not every
// candidate has) costs relative accuracy on small potentials, and in reverse mode the two paths
// through |t| add 0.5 and (σ(-|t|) - 0.5), which cancel for large |t|.
#ifndef WITH_STAN
#define WITH_STAN 1
#endif
#ifndef WITH_SACADO
#define WITH_SACADO 1
#endif
#ifndef WITH_ADOLC
#define WITH_ADOLC 1
#endif

#if WITH_STAN
#include <stan/math/rev/core.hpp>
#include <stan/math/rev/scal/fun/exp.hpp>
#include <stan/math/rev/scal/fun/fabs.hpp>
#include <stan/math/rev/scal/fun/log.hpp>
#include <stan/math/version.hpp>
#endif
#if WITH_SACADO
#include <Sacado.hpp>  // Sacado's top-level header (Kokkos flavour, as Debian configured it)
#include <Trilinos_version.h>
#endif
#if WITH_ADOLC
#include <adolc/adolc.h>
#include <adolc/param.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int d = 55, n = 500;
#if WITH_SACADO
using Rad = Sacado::Rad::ADvar<double>;
using SFad = Sacado::Fad::SFad<double, d>;
using ElrSFad = Sacado::ELRFad::SFad<double, d>;
#endif

// ---------------------------------------------------------------------------------------------
// What a plugin author would write, once: log p(y | x, θ) = log σ(y xᵀθ), y ∈ {-1, +1}.
// log σ(t) = -softplus(-t) = -(max(-t, 0) + log(1 + exp(-|t|))), with max(-t, 0) = (|t| - t)/2 so
// that only +, -, *, fabs, exp and log are needed (every candidate has them; no branch on T, so a
// recorded tape stays valid at a new θ). Data are `Datum` (double, or ADOL-C's pdouble parameter).
template <class T, class Datum = double>
T item_log_density(const T* theta, const Datum* x, const Datum& y, int dim) {
  using std::exp;
  using std::fabs;
  using std::log;
  T z = x[0] * theta[0];
  for (int j = 1; j < dim; ++j) z += x[j] * theta[j];
  T t = y * z;
  T a = fabs(t);
  return 0.5 * (t - a) - log(1.0 + exp(-a));
}

// The same density with the linear predictor through an SDK primitive `sdk::dot(θ, x, d)`, which
// the SDK specialises per AD type. Two levels:
//   node   (Stan) one tape node with d partials, the data row itself: no per-feature nodes;
//   dense  the SDK registers the parameter vector it created (`sdk::parameters<T>`) so that a dot
//          with it reads θ's values contiguously and, in reverse, adds adjoint · x into one dense
//          accumulator (Stan), or in forward sets ∂z/∂θ = x directly, θ being seeded with the
//          unit vectors (Sacado SFad); any other operand falls back to the generic path.
namespace sdk {
template <class T>
struct Parameters {
  const T* vars = nullptr;
  const double* values = nullptr;
  double* adjoints = nullptr;  // reverse mode only
};
template <class T>
thread_local Parameters<T> parameters;

template <class T>
T dot(const T* theta, const double* x, int dim) {
  T z = x[0] * theta[0];
  for (int j = 1; j < dim; ++j) z += x[j] * theta[j];
  return z;
}
#if WITH_STAN
/// z = xᵀθ with θ's adjoints gathered in a dense array: chain() is one vectorisable axpy.
class dense_dot_vari : public stan::math::vari {
  const double* x_;
  double* adjoints_;
  int dim_;

 public:
  dense_dot_vari(double value, const double* x, double* adjoints, int dim)
      : vari(value), x_(x), adjoints_(adjoints), dim_(dim) {}
  void chain() override {
    for (int j = 0; j < dim_; ++j) adjoints_[j] += adj_ * x_[j];
  }
};

inline stan::math::var dot(const stan::math::var* theta, const double* x, int dim) {
  using namespace stan::math;
  const auto& p = parameters<var>;
  if (theta == p.vars) {
    double value = 0.0;
    for (int j = 0; j < dim; ++j) value += x[j] * p.values[j];
    return var(new dense_dot_vari(value, x, p.adjoints, dim));
  }
  vari** operands = ChainableStack::instance_->memalloc_.alloc_array<vari*>(dim);
  double value = 0.0;
  for (int j = 0; j < dim; ++j) {
    operands[j] = theta[j].vi_;
    value += x[j] * theta[j].val();
  }
  // The partials are the data row itself, alive until the gradient is read.
  return var(new precomputed_gradients_vari(value, dim, operands, const_cast<double*>(x)));
}
#endif
#if WITH_SACADO
template <class F>
F fad_dot(const F* theta, const double* x, int dim) {
  const auto& p = parameters<F>;
  if (theta != p.vars) return dot<F>(theta, x, dim);
  double value = 0.0;
  for (int j = 0; j < dim; ++j) value += x[j] * p.values[j];
  F z(dim, value);
  for (int j = 0; j < dim; ++j) z.fastAccessDx(j) = x[j];
  return z;
}
inline SFad dot(const SFad* theta, const double* x, int dim) { return fad_dot(theta, x, dim); }
inline ElrSFad dot(const ElrSFad* theta, const double* x, int dim) { return fad_dot(theta, x, dim); }
#endif
}  // namespace sdk

template <class T>
T item_log_density_sdk_dot(const T* theta, const double* x, double y, int dim) {
  using std::exp;
  using std::fabs;
  using std::log;
  T t = y * sdk::dot(theta, x, dim);
  T a = fabs(t);
  return 0.5 * (t - a) - log(1.0 + exp(-a));
}

/// How the linear predictor is formed: the plugin's own loop over features, or sdk::dot without
/// (node) or with (dense) the SDK's registered parameter vector.
enum class Dot { loop, node, dense };

// ---------------------------------------------------------------------------------------------
// The batch and the outputs.
struct Data {
  std::vector<double> x, y, w;  // x: n × d row-major, last column 1
  std::vector<double> theta0, theta1;  // θ0: where tapes are recorded; θ1: where all evaluate
};

struct Batch {
  double u = 0.0;
  std::vector<double> g = std::vector<double>(d);
};
struct PerItem {
  std::vector<double> u = std::vector<double>(n), g = std::vector<double>(std::size_t(n) * d);
};

Data simulate() {
  std::mt19937_64 rng(20240522);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Data data;
  data.x.resize(std::size_t(n) * d);
  std::vector<double> star(d);
  for (double& b : star) b = 0.3 * normal(rng);
  data.theta0 = data.theta1 = star;
  for (int j = 0; j < d; ++j) data.theta0[j] += 0.05 * normal(rng), data.theta1[j] += 0.05 * normal(rng);
  for (int i = 0; i < n; ++i) {
    double z = 0.0;
    for (int j = 0; j < d; ++j) {
      const double v = j + 1 < d ? normal(rng) : 1.0;
      data.x[std::size_t(i) * d + j] = v;
      z += v * star[j];
    }
    data.y.push_back(uniform(rng) < 1.0 / (1.0 + std::exp(-z)) ? 1.0 : -1.0);
    data.w.push_back((0.5 + uniform(rng)) * 581012.0 / n);  // N/n, jittered so weights matter
  }
  return data;
}

const double* row(const Data& data, int i) { return data.x.data() + std::size_t(i) * d; }

// ---------------------------------------------------------------------------------------------
// Hand-written reference: z = Xθ row by row, then s_i = -y_i σ(-y_i z_i), U and ∇U = Σ w_i s_i x_i.
double softplus(double t) { return std::max(t, 0.0) + std::log1p(std::exp(-std::abs(t))); }

void hand_batch(const Data& data, const double* theta, Batch& out) {
  const double* x = data.x.data();
  double z[n];
  for (int i = 0; i < n; ++i) {
    double s = 0.0;
    for (int j = 0; j < d; ++j) s += x[std::size_t(i) * d + j] * theta[j];
    z[i] = s;
  }
  double u = 0.0, scale[n];
  for (int i = 0; i < n; ++i) {
    const double t = data.y[i] * z[i];
    u += data.w[i] * softplus(-t);
    scale[i] = -data.w[i] * data.y[i] / (1.0 + std::exp(t));
  }
  double* g = out.g.data();
  std::fill(g, g + d, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j) g[j] += scale[i] * x[std::size_t(i) * d + j];
  out.u = u;
}

void hand_per_item(const Data& data, const double* theta, PerItem& out) {
  const double* x = data.x.data();
  for (int i = 0; i < n; ++i) {
    double s = 0.0;
    for (int j = 0; j < d; ++j) s += x[std::size_t(i) * d + j] * theta[j];
    const double t = data.y[i] * s, scale = -data.y[i] / (1.0 + std::exp(t));
    out.u[i] = softplus(-t);
    double* g = out.g.data() + std::size_t(i) * d;
    for (int j = 0; j < d; ++j) g[j] = scale * x[std::size_t(i) * d + j];
  }
}

// ---------------------------------------------------------------------------------------------
// Stan Math: reverse mode, `var`, tape (arena) per call, `grad()`, `recover_memory()`.
#if WITH_STAN
template <Dot mode, class T>
T density(const T* theta, const double* x, double y) {
  if constexpr (mode == Dot::loop)
    return item_log_density(theta, x, y, d);
  else
    return item_log_density_sdk_dot(theta, x, y, d);
}

template <Dot mode>
void stan_batch(const Data& data, const double* theta, Batch& out) {
  using stan::math::var;
  std::vector<var> t(theta, theta + d);
  thread_local std::vector<double> adjoints(d);
  std::fill(adjoints.begin(), adjoints.end(), 0.0);
  if constexpr (mode == Dot::dense) sdk::parameters<var> = {t.data(), theta, adjoints.data()};
  var u = 0.0;
  for (int i = 0; i < n; ++i) u -= data.w[i] * density<mode>(t.data(), row(data, i), data.y[i]);
  u.grad();
  out.u = u.val();
  for (int j = 0; j < d; ++j) out.g[j] = t[j].adj() + adjoints[j];
  stan::math::recover_memory();
  sdk::parameters<var> = {};
}

template <Dot mode>
void stan_per_item(const Data& data, const double* theta, PerItem& out) {
  using stan::math::var;
  thread_local std::vector<double> adjoints(d);
  for (int i = 0; i < n; ++i) {
    std::vector<var> t(theta, theta + d);
    std::fill(adjoints.begin(), adjoints.end(), 0.0);
    if constexpr (mode == Dot::dense) sdk::parameters<var> = {t.data(), theta, adjoints.data()};
    var f = density<mode>(t.data(), row(data, i), data.y[i]);
    f.grad();
    out.u[i] = -f.val();
    for (int j = 0; j < d; ++j) out.g[std::size_t(i) * d + j] = -(t[j].adj() + adjoints[j]);
    stan::math::recover_memory();
  }
  sdk::parameters<var> = {};
}
#endif

// ---------------------------------------------------------------------------------------------
// Sacado: Rad (trad, reverse, one global tape), and forward Fad with d fixed at compile time.
#if WITH_SACADO
void rad_batch(const Data& data, const double* theta, Batch& out) {
  std::vector<Rad> t;
  t.reserve(d);
  for (int j = 0; j < d; ++j) t.emplace_back(theta[j]);
  Rad u = 0.0;
  for (int i = 0; i < n; ++i) u -= data.w[i] * item_log_density(t.data(), row(data, i), data.y[i], d);
  Rad::Outvar_Gradcomp(u);
  out.u = u.val();
  for (int j = 0; j < d; ++j) out.g[j] = t[j].adj();
}

void rad_per_item(const Data& data, const double* theta, PerItem& out) {
  std::vector<Rad> t;
  t.reserve(d);
  for (int i = 0; i < n; ++i) {
    t.clear();
    for (int j = 0; j < d; ++j) t.emplace_back(theta[j]);
    Rad f = item_log_density(t.data(), row(data, i), data.y[i], d);
    Rad::Outvar_Gradcomp(f);
    out.u[i] = -f.val();
    for (int j = 0; j < d; ++j) out.g[std::size_t(i) * d + j] = -t[j].adj();
  }
}

template <class F, Dot mode>
void fad_batch(const Data& data, const double* theta, Batch& out) {
  F t[d];
  for (int j = 0; j < d; ++j) t[j] = F(d, j, theta[j]);
  if constexpr (mode == Dot::dense) sdk::parameters<F> = {t, theta};
  double u = 0.0;
  std::fill(out.g.begin(), out.g.end(), 0.0);
  for (int i = 0; i < n; ++i) {
    const F f = mode == Dot::loop ? item_log_density(t, row(data, i), data.y[i], d)
                                  : item_log_density_sdk_dot(t, row(data, i), data.y[i], d);
    u -= data.w[i] * f.val();
    for (int j = 0; j < d; ++j) out.g[j] -= data.w[i] * f.dx(j);
  }
  out.u = u;
  sdk::parameters<F> = {};
}

template <class F, Dot mode>
void fad_per_item(const Data& data, const double* theta, PerItem& out) {
  F t[d];
  for (int j = 0; j < d; ++j) t[j] = F(d, j, theta[j]);
  if constexpr (mode == Dot::dense) sdk::parameters<F> = {t, theta};
  for (int i = 0; i < n; ++i) {
    const F f = mode == Dot::loop ? item_log_density(t, row(data, i), data.y[i], d)
                                  : item_log_density_sdk_dot(t, row(data, i), data.y[i], d);
    out.u[i] = -f.val();
    for (int j = 0; j < d; ++j) out.g[std::size_t(i) * d + j] = -f.dx(j);
  }
  sdk::parameters<F> = {};
}
#endif

// ---------------------------------------------------------------------------------------------
// ADOL-C: tapes identified by tags. Retape per call; or record once and re-evaluate at a new θ,
// either with the batch's data recorded as constants (valid for that batch only) or as pdouble
// parameters replaced by set_param_vec (valid for any batch of n rows).
#if WITH_ADOLC
enum : short { tag_retape = 1, tag_fixed = 2, tag_params = 3, tag_item = 4, tag_vector = 5, tag_vector_retape = 6 };

void adolc_batch_retape(const Data& data, const double* theta, Batch& out) {
  trace_on(tag_retape);
  std::vector<adouble> t(d);
  for (int j = 0; j < d; ++j) t[j] <<= theta[j];
  adouble u = 0.0;
  for (int i = 0; i < n; ++i) u -= data.w[i] * item_log_density(t.data(), row(data, i), data.y[i], d);
  u >>= out.u;
  trace_off();
  gradient(tag_retape, d, theta, out.g.data());
}

void adolc_record_fixed(const Data& data, const double* theta) {
  trace_on(tag_fixed);
  std::vector<adouble> t(d);
  for (int j = 0; j < d; ++j) t[j] <<= theta[j];
  adouble u = 0.0;
  for (int i = 0; i < n; ++i) u -= data.w[i] * item_log_density(t.data(), row(data, i), data.y[i], d);
  double unused;
  u >>= unused;
  trace_off();
}

/// Parameters in recording order: x (n × d), y (n), w (n).
void adolc_record_params(const Data& data, const double* theta) {
  trace_on(tag_params);
  std::vector<adouble> t(d);
  for (int j = 0; j < d; ++j) t[j] <<= theta[j];
  const std::size_t count = std::size_t(n) * d + 2 * n;
  auto* p = static_cast<pdouble*>(::operator new(count * sizeof(pdouble)));  // pdouble cannot be copied
  for (std::size_t k = 0; k < std::size_t(n) * d; ++k) new (p + k) pdouble(mkparam(data.x[k]));
  for (int i = 0; i < n; ++i) new (p + std::size_t(n) * d + i) pdouble(mkparam(data.y[i]));
  for (int i = 0; i < n; ++i) new (p + std::size_t(n) * d + n + i) pdouble(mkparam(data.w[i]));
  const pdouble *x = p, *y = p + std::size_t(n) * d, *w = y + n;
  adouble u = 0.0;
  for (int i = 0; i < n; ++i) u -= w[i] * item_log_density(t.data(), x + std::size_t(i) * d, y[i], d);
  double unused;
  u >>= unused;
  trace_off();
  for (std::size_t k = 0; k < count; ++k) p[k].~pdouble();
  ::operator delete(p);
}

int adolc_rc = 99;  // the smallest return code of the last ADOL-C forward sweeps (< 0: failure)

void adolc_batch_fixed(const Data&, const double* theta, Batch& out) {
  double one = 1.0;
  adolc_rc = std::min(adolc_rc, zos_forward(tag_fixed, 1, d, 1, theta, &out.u));
  fos_reverse(tag_fixed, 1, d, &one, out.g.data());
}

void adolc_batch_params(const Data& data, const double* theta, Batch& out) {
  static std::vector<double> params(std::size_t(n) * d + 2 * n);
  std::copy(data.x.begin(), data.x.end(), params.begin());  // a new batch: gather its rows
  std::copy(data.y.begin(), data.y.end(), params.begin() + std::size_t(n) * d);
  std::copy(data.w.begin(), data.w.end(), params.begin() + std::size_t(n) * d + n);
  set_param_vec(tag_params, params.size(), params.data());
  double one = 1.0;
  adolc_rc = std::min(adolc_rc, zos_forward(tag_params, 1, d, 1, theta, &out.u));
  fos_reverse(tag_params, 1, d, &one, out.g.data());
}

/// One item: parameters x (d) then y.
void adolc_record_item(const Data& data, const double* theta) {
  trace_on(tag_item);
  std::vector<adouble> t(d);
  for (int j = 0; j < d; ++j) t[j] <<= theta[j];
  auto* p = static_cast<pdouble*>(::operator new((d + 1) * sizeof(pdouble)));
  for (int j = 0; j < d; ++j) new (p + j) pdouble(mkparam(row(data, 0)[j]));
  new (p + d) pdouble(mkparam(data.y[0]));
  adouble f = item_log_density(t.data(), p, p[d], d);
  double unused;
  f >>= unused;
  trace_off();
  for (int k = 0; k <= d; ++k) p[k].~pdouble();
  ::operator delete(p);
}

void adolc_per_item_params(const Data& data, const double* theta, PerItem& out) {
  double params[d + 1], one = 1.0, f;
  for (int i = 0; i < n; ++i) {
    std::copy(row(data, i), row(data, i) + d, params);
    params[d] = data.y[i];
    set_param_vec(tag_item, d + 1, params);
    adolc_rc = std::min(adolc_rc, zos_forward(tag_item, 1, d, 1, theta, &f));
    double* g = out.g.data() + std::size_t(i) * d;
    fos_reverse(tag_item, 1, d, &one, g);
    out.u[i] = -f;
    for (int j = 0; j < d; ++j) g[j] = -g[j];
  }
}

/// The n item potentials as one vector function R^d → R^n (data recorded as constants).
void adolc_record_vector(const Data& data, const double* theta, short tag) {
  trace_on(tag);
  std::vector<adouble> t(d);
  for (int j = 0; j < d; ++j) t[j] <<= theta[j];
  for (int i = 0; i < n; ++i) {
    adouble u = -item_log_density(t.data(), row(data, i), data.y[i], d);
    double unused;
    u >>= unused;
  }
  trace_off();
}

struct Seeds {  // the identity, d directions, and the n × d output of fov_forward
  double **x = myalloc2(d, d), **y = myalloc2(n, d);
  Seeds() {
    for (int j = 0; j < d; ++j)
      for (int k = 0; k < d; ++k) x[j][k] = j == k;
  }
  ~Seeds() { myfree2(x), myfree2(y); }
};

void adolc_vector_forward(short tag, const double* theta, PerItem& out) {
  static Seeds seeds;
  adolc_rc = std::min(adolc_rc, fov_forward(tag, n, d, d, theta, seeds.x, out.u.data(), seeds.y));
  for (int i = 0; i < n; ++i) std::copy(seeds.y[i], seeds.y[i] + d, out.g.data() + std::size_t(i) * d);
}

void adolc_per_item_vector_fixed(const Data&, const double* theta, PerItem& out) {
  adolc_vector_forward(tag_vector, theta, out);
}

void adolc_per_item_vector_retape(const Data& data, const double* theta, PerItem& out) {
  adolc_record_vector(data, theta, tag_vector_retape);
  adolc_vector_forward(tag_vector_retape, theta, out);
}
#endif

// ---------------------------------------------------------------------------------------------
// Checks and timing.
double max_relative(const std::vector<double>& a, const std::vector<double>& b, int rows) {
  // Row by row, the largest |a - b| over the largest |b| of the row.
  const int cols = int(a.size()) / rows;
  double worst = 0.0;
  for (int i = 0; i < rows; ++i) {
    double diff = 0.0, scale = 0.0;
    for (int j = 0; j < cols; ++j) {
      diff = std::max(diff, std::abs(a[std::size_t(i) * cols + j] - b[std::size_t(i) * cols + j]));
      scale = std::max(scale, std::abs(b[std::size_t(i) * cols + j]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

volatile double sink;

/// A call to time: calibrated to about `seconds / 5` a repeat, then timed in 5 repeats taken in
/// round robin with every other candidate (so a change of load on the machine hits all alike).
struct Timed {
  std::function<void()> call;
  long reps = 1;
  std::vector<double> us;

  void calibrate(double seconds) {
    using clock = std::chrono::steady_clock;
    call();  // warm up
    long calls = 0;
    const auto start = clock::now();
    double elapsed = 0.0;
    while (elapsed < 0.01) call(), ++calls, elapsed = std::chrono::duration<double>(clock::now() - start).count();
    reps = std::max(1L, long(seconds / 5 / (elapsed / calls)));
  }
  void repeat() {
    const auto start = std::chrono::steady_clock::now();
    for (long k = 0; k < reps; ++k) call();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / reps);
  }
  double median() {
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    return us[us.size() / 2];
  }
};

struct Row {
  std::string candidate, mode;
  double us = 0.0, check_g = 0.0, check_u = 0.0;
};

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  const Data data = simulate();
  const double* theta = data.theta1.data();

  std::printf("autodiff candidates: Bayesian logistic regression, d = %d, n = %d, dense row-major x\n", d, n);
#if WITH_STAN
  std::printf("  Stan Math %d.%d.%d (StanHeaders' headers; its AD tape is thread-local in this build)\n",
              STAN_MATH_MAJOR, STAN_MATH_MINOR, STAN_MATH_PATCH);
#endif
#if WITH_SACADO
  std::printf("  %s, from Trilinos %s\n", Sacado_Version().c_str(), TRILINOS_VERSION_STRING);
#endif
#if WITH_ADOLC
  std::printf("  ADOL-C (headers carry no version macro; Debian's libadolc-dev is 2.7.2)\n");
#endif

  Batch reference;
  hand_batch(data, theta, reference);
  PerItem reference_items;
  hand_per_item(data, theta, reference_items);

  using BatchFn = std::function<void(const Data&, const double*, Batch&)>;
  using ItemFn = std::function<void(const Data&, const double*, PerItem&)>;
  struct BatchCandidate {
    std::string candidate, mode;
    BatchFn fn;
  };
  struct ItemCandidate {
    std::string candidate, mode;
    ItemFn fn;
  };
  std::vector<BatchCandidate> batch_candidates{{"hand-written", "loop over rows", hand_batch}};
  std::vector<ItemCandidate> item_candidates{{"hand-written", "loop over rows", hand_per_item}};
#if WITH_STAN
  batch_candidates.push_back({"Stan Math var", "reverse, tape per call", stan_batch<Dot::loop>});
  batch_candidates.push_back({"Stan Math var + sdk::dot", "reverse, node of d partials", stan_batch<Dot::node>});
  batch_candidates.push_back({"Stan Math var + sdk::dot", "reverse, dense theta adjoints", stan_batch<Dot::dense>});
  item_candidates.push_back({"Stan Math var", "reverse per item", stan_per_item<Dot::loop>});
  item_candidates.push_back({"Stan Math var + sdk::dot", "reverse per item, node of d partials", stan_per_item<Dot::node>});
  item_candidates.push_back({"Stan Math var + sdk::dot", "reverse per item, dense theta adjoints", stan_per_item<Dot::dense>});
#endif
#if WITH_SACADO
  batch_candidates.push_back({"Sacado Rad (trad)", "reverse, tape per call", rad_batch});
  batch_candidates.push_back({"Sacado Fad::SFad<55>", "forward, summed", fad_batch<SFad, Dot::loop>});
  batch_candidates.push_back({"Sacado ELRFad::SFad<55>", "forward, summed", fad_batch<ElrSFad, Dot::loop>});
  batch_candidates.push_back({"Sacado ELRFad + sdk::dot", "forward, summed, dz/dtheta = x", fad_batch<ElrSFad, Dot::dense>});
  item_candidates.push_back({"Sacado Fad::SFad<55>", "forward per item", fad_per_item<SFad, Dot::loop>});
  item_candidates.push_back({"Sacado ELRFad::SFad<55>", "forward per item", fad_per_item<ElrSFad, Dot::loop>});
  item_candidates.push_back({"Sacado Fad + sdk::dot", "forward per item, dz/dtheta = x", fad_per_item<SFad, Dot::dense>});
  item_candidates.push_back({"Sacado ELRFad + sdk::dot", "forward per item, dz/dtheta = x", fad_per_item<ElrSFad, Dot::dense>});
  item_candidates.push_back({"Sacado Rad (trad)", "reverse per item", rad_per_item});
#endif
#if WITH_ADOLC
  adolc_record_fixed(data, data.theta0.data());
  adolc_record_params(data, data.theta0.data());
  adolc_record_item(data, data.theta0.data());
  adolc_record_vector(data, data.theta0.data(), tag_vector);
  batch_candidates.push_back({"ADOL-C", "reverse, retape per call", adolc_batch_retape});
  batch_candidates.push_back({"ADOL-C", "reverse, tape reused (batch fixed)", adolc_batch_fixed});
  batch_candidates.push_back({"ADOL-C", "reverse, tape reused (data = pdouble)", adolc_batch_params});
  item_candidates.push_back({"ADOL-C", "reverse per item, item tape (pdouble)", adolc_per_item_params});
  item_candidates.push_back({"ADOL-C", "fov_forward, tape reused (batch fixed)", adolc_per_item_vector_fixed});
  item_candidates.push_back({"ADOL-C", "fov_forward, retape per call", adolc_per_item_vector_retape});
#endif

  std::vector<Row> batch_rows, item_rows;
  std::vector<Batch> batch_out(batch_candidates.size());
  std::vector<PerItem> item_out(item_candidates.size());
  std::vector<Timed> timed;
  for (std::size_t k = 0; k < batch_candidates.size(); ++k) {
    const auto& c = batch_candidates[k];
    Batch& out = batch_out[k];
    c.fn(data, theta, out);
    Row r{c.candidate, c.mode};
    r.check_g = max_relative(out.g, reference.g, 1);
    r.check_u = std::abs(out.u - reference.u) / std::abs(reference.u);
    batch_rows.push_back(r);
    timed.push_back({[&] {
      c.fn(data, theta, out);
      sink = out.g[0];
    }});
  }
  for (std::size_t k = 0; k < item_candidates.size(); ++k) {
    const auto& c = item_candidates[k];
    PerItem& out = item_out[k];
    c.fn(data, theta, out);
    Row r{c.candidate, c.mode};
    r.check_g = max_relative(out.g, reference_items.g, n);
    r.check_u = max_relative(out.u, reference_items.u, n);
    item_rows.push_back(r);
    timed.push_back({[&] {
      c.fn(data, theta, out);
      sink = out.g[0];
    }});
  }
  for (auto& t : timed) t.calibrate(seconds);
  for (int repeat = 0; repeat < 5; ++repeat)
    for (auto& t : timed) t.repeat();
  for (std::size_t k = 0; k < batch_rows.size(); ++k) batch_rows[k].us = timed[k].median();
  for (std::size_t k = 0; k < item_rows.size(); ++k) item_rows[k].us = timed[batch_rows.size() + k].median();

  std::printf("\nchecks against the hand-written results at theta1 (ADOL-C tapes reused were recorded at theta0)\n");
  std::printf("  %-26s %-40s %12s %12s\n", "candidate", "mode", "rel.diff grad", "rel.diff U");
  for (const auto* rows : {&batch_rows, &item_rows})
    for (const auto& r : *rows)
      std::printf("  %-26s %-40s %12.1e %12.1e  %s\n", r.candidate.c_str(), r.mode.c_str(), r.check_g, r.check_u,
                  r.check_g < 1e-12 && r.check_u < 1e-12 ? "ok" : "MISMATCH");
#if WITH_ADOLC
  std::printf("  ADOL-C forward-sweep return codes (smallest): %d (< 0 would mean the tape is invalid at theta1)\n", adolc_rc);
#endif

  const auto table = [](const char* title, const std::vector<Row>& rows) {
    std::printf("\n%s\n  %-26s %-40s %12s %8s\n", title, "candidate", "mode", "µs per call", "ratio");
    for (const auto& r : rows)
      std::printf("  %-26s %-40s %12.1f %8.1f\n", r.candidate.c_str(), r.mode.c_str(), r.us, r.us / rows[0].us);
  };
  table("(a) weighted batch potential + gradient over n rows (ratio to the hand-written batch)", batch_rows);
  table("(b) per-item potentials + gradients, n × d (ratio to the hand-written per-item loop)", item_rows);
  return 0;
}
