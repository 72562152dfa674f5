# sgmcmc_add_model_plugin(<name> SOURCES <files...> [OUTPUT_DIRECTORY <dir>] [AUTODIFF] [LAYERS])
# Builds model plugin <name> as a loadable module `sgmcmc-model-<name>.so` with hidden
# visibility, C++20, the shared build flags and the core library (whose ABI record the source
# exports with SGMCMC_MODEL_PLUGIN), into OUTPUT_DIRECTORY (default: <build>/plugins, which the
# CLI of a build tree searches; elsewhere pass it with --plugin-dir or SGMCMC_PLUGIN_PATH).
# AUTODIFF: the source includes sgmcmc/autodiff.hpp (Stan Math and Eigen, sgmcmc_autodiff.cmake).
# LAYERS: the source includes sgmcmc/layers.hpp, whose matrix products need a CBLAS (OpenBLAS).
# Used in this tree and, installed, by out-of-tree plugins after find_package(sgmcmc).
include(${CMAKE_CURRENT_LIST_DIR}/sgmcmc_autodiff.cmake)

# Installed, sgmcmc ships the BMIs it built (SGMCMC_BMI_DIR, sgmcmcConfig.cmake). clang 19 loads
# them silently whatever -O, -D, -march or -g a consumer uses, and refuses them only when a
# language option differs (-std, -fno-exceptions, ...: "configuration mismatch"). So they are
# reused only when this project's compiler, build type and flags are sgmcmc's and a probe that
# imports sgmcmc.sdk through them compiles; otherwise CMake compiles the BMIs from the interface
# units as before. SGMCMC_USE_INSTALLED_BMIS=OFF forces the latter.
function(_sgmcmc_installed_bmis_usable out)
  set(${out} OFF PARENT_SCOPE)
  if(NOT SGMCMC_BMI_DIR OR NOT EXISTS "${SGMCMC_BMI_DIR}/sgmcmc.sdk.pcm")
    return()
  endif()
  option(SGMCMC_USE_INSTALLED_BMIS "reuse the BMIs installed with sgmcmc when compiler and flags match" ON)
  string(TOUPPER "${CMAKE_BUILD_TYPE}" config)
  string(STRIP "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${config}}" flags)
  string(STRIP "${SGMCMC_BMI_CXX_FLAGS}" sdk_flags)
  if(NOT SGMCMC_USE_INSTALLED_BMIS
      OR NOT CMAKE_GENERATOR MATCHES "Ninja"
      OR NOT CMAKE_CXX_COMPILER_ID STREQUAL SGMCMC_BMI_CXX_COMPILER_ID
      OR NOT CMAKE_CXX_COMPILER_VERSION STREQUAL SGMCMC_BMI_CXX_COMPILER_VERSION
      OR NOT CMAKE_BUILD_TYPE STREQUAL SGMCMC_BMI_BUILD_TYPE
      OR NOT flags STREQUAL sdk_flags)
    return()
  endif()
  set(key "${CMAKE_CXX_COMPILER}|${CMAKE_CXX_COMPILER_VERSION}|${CMAKE_BUILD_TYPE}|${flags}|${SGMCMC_BMI_DIR}")
  if(NOT DEFINED CACHE{_SGMCMC_BMI_PROBE_KEY} OR NOT _SGMCMC_BMI_PROBE_KEY STREQUAL key)
    message(CHECK_START "sgmcmc: can this compiler load the installed BMIs")
    set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)  # compile only: the probe has no main
    try_compile(ok SOURCE_FROM_CONTENT probe.cpp "import sgmcmc.sdk;\n"
      CMAKE_FLAGS -DCMAKE_CXX_VISIBILITY_PRESET=hidden -DCMAKE_VISIBILITY_INLINES_HIDDEN=ON
      COMPILE_DEFINITIONS "-fprebuilt-module-path=${SGMCMC_BMI_DIR}"
      LINK_LIBRARIES sgmcmc::build_flags
      CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
      OUTPUT_VARIABLE log NO_CACHE)
    set(_SGMCMC_BMI_PROBE_KEY "${key}" CACHE INTERNAL "")
    set(_SGMCMC_BMI_PROBE_OK ${ok} CACHE INTERNAL "")
    if(ok)
      message(CHECK_PASS "yes (${SGMCMC_BMI_DIR})")
    else()
      message(CHECK_FAIL "no, the BMIs are compiled from the interface units")
      message(VERBOSE "${log}")
    endif()
  endif()
  set(${out} ${_SGMCMC_BMI_PROBE_OK} PARENT_SCOPE)
endfunction()

function(sgmcmc_add_model_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "AUTODIFF;LAYERS" "OUTPUT_DIRECTORY" "SOURCES")
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
  if(arg_LAYERS)
    if(NOT BLAS_FOUND)
      find_package(BLAS REQUIRED)  # Debian: libopenblas-dev, whose cblas.h layers.hpp includes
    endif()
    target_link_libraries(${target} PRIVATE ${BLAS_LIBRARIES})
  endif()
  # The plugin's sources import modules but provide none: without scanning, CMake does not
  # compile the SDK's BMIs for this target and clang finds the installed ones by module name.
  _sgmcmc_installed_bmis_usable(reuse)
  if(reuse)
    set(scan OFF)
    target_compile_options(${target} PRIVATE "-fprebuilt-module-path=${SGMCMC_BMI_DIR}")
    file(GLOB bmis "${SGMCMC_BMI_DIR}/*.pcm")  # a reinstalled SDK recompiles the plugin
    set_property(SOURCE ${arg_SOURCES} APPEND PROPERTY OBJECT_DEPENDS ${bmis})
  else()
    set(scan ON)
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    CXX_EXTENSIONS OFF
    CXX_SCAN_FOR_MODULES ${scan}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    INSTALL_RPATH "$ORIGIN/../.."
    LIBRARY_OUTPUT_DIRECTORY ${arg_OUTPUT_DIRECTORY})
endfunction()

# sgmcmc_add_plugin_data(<name> FILES <files...> [INSTALL_DESTINATION <dir>])
# Data that model plugin <name> ships (a dataset its presets read): copied at build time to the
# `data/<name>/` folder beside the plugin file, and installed to <dir>/data/<name>/ (<dir>: the
# folder the plugin itself is installed to). A preset's relative `model.data` is read from there
# (runners/README.md, "Configuration"), in a build tree and in an installed sgmcmc alike.
function(sgmcmc_add_plugin_data name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "INSTALL_DESTINATION" "FILES")
  get_target_property(output sgmcmc-model-${name} LIBRARY_OUTPUT_DIRECTORY)
  set(copies)
  foreach(file IN LISTS arg_FILES)
    get_filename_component(source ${file} ABSOLUTE)
    get_filename_component(file_name ${file} NAME)
    set(copy ${output}/data/${name}/${file_name})
    add_custom_command(OUTPUT ${copy} COMMAND ${CMAKE_COMMAND} -E copy_if_different ${source} ${copy}
                       DEPENDS ${source} COMMENT "plugin ${name}: data ${file_name}")
    list(APPEND copies ${copy})
    if(arg_INSTALL_DESTINATION)
      install(FILES ${source} DESTINATION ${arg_INSTALL_DESTINATION}/data/${name})
    endif()
  endforeach()
  add_custom_target(sgmcmc-model-${name}-data ALL DEPENDS ${copies})
  add_dependencies(sgmcmc-model-${name} sgmcmc-model-${name}-data)
endfunction()
