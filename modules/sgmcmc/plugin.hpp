// Include in the one source file of a model plugin that exports it:
//
//   #include <sgmcmc/plugin.hpp>
//   import sgmcmc.sdk;  // the plugin SDK (modules/sdk.cppm)
//   ...
//   SGMCMC_MODEL_PLUGIN(my_plugin_info, make_my_model)
//
// where `sgmcmc::PluginInfo my_plugin_info()` and
// `std::unique_ptr<sgmcmc::Model> make_my_model(const sgmcmc::ModelContext&)` are yours.
#pragma once
#include <cstdint>
#include <boost/config.hpp>
#include <boost/dll/alias.hpp>

#define SGMCMC_STRINGIFY_(x) #x
#define SGMCMC_STRINGIFY(x) SGMCMC_STRINGIFY_(x)

#if defined(__clang__)
#define SGMCMC_COMPILER_ "clang-" SGMCMC_STRINGIFY(__clang_major__)
#elif defined(__GNUC__)
#define SGMCMC_COMPILER_ "gcc-" SGMCMC_STRINGIFY(__GNUC__)
#else
#define SGMCMC_COMPILER_ "unknown-compiler"
#endif

#if defined(_GLIBCXX_RELEASE)
#define SGMCMC_STDLIB_ "libstdc++-" SGMCMC_STRINGIFY(_GLIBCXX_RELEASE) "-cxx11abi" SGMCMC_STRINGIFY(_GLIBCXX_USE_CXX11_ABI)
#elif defined(_LIBCPP_VERSION)
#define SGMCMC_STDLIB_ "libc++-" SGMCMC_STRINGIFY(_LIBCPP_VERSION)
#else
#define SGMCMC_STDLIB_ "unknown-stdlib"
#endif

// _GLIBCXX_DEBUG changes the layout of every standard container that crosses the interface
// (std::string and std::vector in PluginInfo and Model). NDEBUG does not change a layout here:
// the interface passes θ as std::span<double>, never an xtensor type.
#if defined(_GLIBCXX_DEBUG)
#define SGMCMC_DEBUG_CONTAINERS_ "debug-containers"
#else
#define SGMCMC_DEBUG_CONTAINERS_ "release-containers"
#endif

/// Compiler, standard library and layout-changing macros, compared by the loader.
#define SGMCMC_BUILD_FINGERPRINT SGMCMC_COMPILER_ " " SGMCMC_STDLIB_ " " SGMCMC_DEBUG_CONTAINERS_

/// Exports the ABI record (interface version + build fingerprint), the info function and the
/// factory of a model plugin. Use once, at namespace scope, in the plugin's source.
#define SGMCMC_MODEL_PLUGIN(info_function, factory_function)                                    \
  extern "C" BOOST_SYMBOL_EXPORT const std::uint32_t sgmcmc_interface_version =                 \
      ::sgmcmc::model_interface_version;                                                        \
  extern "C" BOOST_SYMBOL_EXPORT const char sgmcmc_build_fingerprint[] = SGMCMC_BUILD_FINGERPRINT; \
  BOOST_DLL_ALIAS(info_function, sgmcmc_plugin_info)                                             \
  BOOST_DLL_ALIAS(factory_function, sgmcmc_create_model)
