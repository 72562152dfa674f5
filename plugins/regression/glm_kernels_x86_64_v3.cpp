#define REGRESSION_ISA x86_64_v3
#include "glm_kernels_body.hpp"
