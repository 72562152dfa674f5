# sgmcmc::autodiff: what a plugin written with sgmcmc/autodiff.hpp compiles against, Stan Math's
# headers (Debian's r-cran-stanheaders, which rstan depends on) and Eigen's (libeigen3-dev; Stan
# includes them). Defined when both are found; sgmcmc_add_model_plugin(... AUTODIFF) otherwise
# says what is missing. Used in this tree and, installed, by find_package(sgmcmc).
if(NOT TARGET sgmcmc::autodiff)
  find_program(SGMCMC_RSCRIPT Rscript)
  if(SGMCMC_RSCRIPT)  # where R keeps StanHeaders, as R itself says
    execute_process(COMMAND ${SGMCMC_RSCRIPT} -e "cat(system.file('include', package = 'StanHeaders'))"
      OUTPUT_VARIABLE stanheaders_include ERROR_QUIET)
  endif()
  find_path(SGMCMC_STAN_MATH_INCLUDE_DIR stan/math/rev/core.hpp HINTS ${stanheaders_include}
    DOC "Stan Math's headers, for sgmcmc/autodiff.hpp (Debian: r-cran-stanheaders)")
  find_package(Eigen3 3.3 QUIET NO_MODULE)
  if(SGMCMC_STAN_MATH_INCLUDE_DIR AND TARGET Eigen3::Eigen)
    add_library(sgmcmc::autodiff INTERFACE IMPORTED)
    target_include_directories(sgmcmc::autodiff INTERFACE ${SGMCMC_STAN_MATH_INCLUDE_DIR})
    target_link_libraries(sgmcmc::autodiff INTERFACE Eigen3::Eigen)
  endif()
endif()
