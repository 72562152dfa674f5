# sgmcmc_add_model_plugin(<name> SOURCES <files...>)
# Builds model plugin <name> as a loadable module `sgmcmc-model-<name>.so` with hidden
# visibility, the shared build flags and the core library, into the plugin folder the CLI searches.
function(sgmcmc_add_model_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "OUTPUT_DIRECTORY" "SOURCES")
  set(target sgmcmc-model-${name})
  if(NOT arg_OUTPUT_DIRECTORY)
    set(arg_OUTPUT_DIRECTORY ${SGMCMC_PLUGIN_OUTPUT_DIR})
  endif()
  add_library(${target} MODULE ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE sgmcmc_core sgmcmc_build_flags)
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${arg_OUTPUT_DIRECTORY})
endfunction()
