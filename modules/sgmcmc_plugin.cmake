# sgmcmc_add_model_plugin(<name> SOURCES <files...> [OUTPUT_DIRECTORY <dir>] [AUTODIFF])
# Builds model plugin <name> as a loadable module `sgmcmc-model-<name>.so` with hidden
# visibility, C++20, the shared build flags and the core library (whose ABI record the source
# exports with SGMCMC_MODEL_PLUGIN), into OUTPUT_DIRECTORY (default: <build>/plugins, which the
# CLI of a build tree searches; elsewhere pass it with --plugin-dir or SGMCMC_PLUGIN_PATH).
# AUTODIFF: the source includes sgmcmc/autodiff.hpp (Stan Math and Eigen, sgmcmc_autodiff.cmake).
# Used in this tree and, installed, by out-of-tree plugins after find_package(sgmcmc).
include(${CMAKE_CURRENT_LIST_DIR}/sgmcmc_autodiff.cmake)
function(sgmcmc_add_model_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "AUTODIFF" "OUTPUT_DIRECTORY" "SOURCES")
  set(target sgmcmc-model-${name})
  if(NOT arg_OUTPUT_DIRECTORY)
    if(SGMCMC_PLUGIN_OUTPUT_DIR)
      set(arg_OUTPUT_DIRECTORY ${SGMCMC_PLUGIN_OUTPUT_DIR})
    else()
      set(arg_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/plugins)
    endif()
  endif()
  add_library(${target} MODULE ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE sgmcmc::core sgmcmc::build_flags)
  target_compile_features(${target} PRIVATE cxx_std_20)
  if(arg_AUTODIFF)
    if(NOT TARGET sgmcmc::autodiff)
      message(FATAL_ERROR "model plugin ${name} uses sgmcmc/autodiff.hpp, which needs Stan Math's headers "
        "(SGMCMC_STAN_MATH_INCLUDE_DIR: ${SGMCMC_STAN_MATH_INCLUDE_DIR}; Debian: r-cran-stanheaders) "
        "and Eigen (Debian: libeigen3-dev)")
    endif()
    target_link_libraries(${target} PRIVATE sgmcmc::autodiff)
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    CXX_EXTENSIONS OFF
    CXX_SCAN_FOR_MODULES ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    INSTALL_RPATH "$ORIGIN/../.."
    LIBRARY_OUTPUT_DIRECTORY ${arg_OUTPUT_DIRECTORY})
endfunction()
