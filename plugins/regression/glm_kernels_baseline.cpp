#define REGRESSION_ISA baseline
#include "glm_kernels_body.hpp"
