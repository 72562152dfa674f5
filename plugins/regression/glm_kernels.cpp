// Picks the copy of the kernels (glm_kernels_x86_64_v3.cpp or glm_kernels_baseline.cpp) this
// CPU runs, and the likelihood's entry in it.
#include "glm_kernels.hpp"
#include "isa.hpp"

namespace regression {

namespace x86_64_v3 {
extern const GlmKernels<double>* const double_kernels;
extern const GlmKernels<float>* const float_kernels;
}  // namespace x86_64_v3
namespace baseline {
extern const GlmKernels<double>* const double_kernels;
extern const GlmKernels<float>* const float_kernels;
}  // namespace baseline

template <>
const GlmKernels<double>& glm_kernels<double>(Likelihood likelihood) {
  static const GlmKernels<double>* chosen = regression::has_x86_64_v3() ? x86_64_v3::double_kernels : baseline::double_kernels;
  return chosen[static_cast<std::size_t>(likelihood)];
}
template <>
const GlmKernels<float>& glm_kernels<float>(Likelihood likelihood) {
  static const GlmKernels<float>* chosen = regression::has_x86_64_v3() ? x86_64_v3::float_kernels : baseline::float_kernels;
  return chosen[static_cast<std::size_t>(likelihood)];
}

}  // namespace regression
