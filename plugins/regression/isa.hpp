// Which compiled copy of the kernels (row_blocks.hpp) this CPU runs.
#pragma once

namespace regression {

/// The kernels compiled for x86-64-v3 where the CPU has AVX2 and FMA, else the baseline ones.
/// The choice depends on the CPU only, so a machine's runs stay bit-for-bit reproducible.
inline bool has_x86_64_v3() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

}  // namespace regression
