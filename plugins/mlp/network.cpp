// The passes of network.hpp for double storage. Compiled with -fveclib=libmvec -fno-math-errno
// (CMakeLists.txt), so that the element-wise loops of sgmcmc/layers.hpp (tanh, softmax) call
// glibc's vector exp; a unit that imports sgmcmc cannot take -fno-math-errno (its BMI was built
// without it), so this one imports nothing.
//
// The float passes (network_float.cpp) are compiled without -fveclib: clang 19 vectorises a loop
// that widens floats to double 4 at a time and then calls libmvec's 4-wide AVX2 exp
// (_ZGVdN4v_exp) even in a baseline (SSE2) build, passing it two halves in xmm registers: wrong
// values (tanh(-0.6) came out -1). A double loop vectorises 2 at a time there, with the SSE2 exp.
#include "network_passes.hpp"

namespace mlp {

template class Network<double>;

MLP_CPU_CLONES
void tanh_through_double(const float* z, float* a, std::size_t n) {
  constexpr std::size_t block = 256;
  double wide[block];
  for (std::size_t begin = 0; begin < n; begin += block) {
    const std::size_t m = std::min(block, n - begin);
    for (std::size_t i = 0; i < m; ++i) wide[i] = z[begin + i];
    sgmcmc::layers::activate(Activation::tanh, wide, wide, m);  // a loop of doubles alone
    for (std::size_t i = 0; i < m; ++i) a[begin + i] = static_cast<float>(wide[i]);
  }
}

}  // namespace mlp
