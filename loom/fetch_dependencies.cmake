# Pinned upstream sources for the front ends' header-only dependencies, for machines that have
# no installed package: LOOM_FETCHCONTENT_ASIO, LOOM_FETCHCONTENT_STDEXEC and
# LOOM_FETCHCONTENT_BEMAN_EXECUTION. Only the headers are used (no upstream build runs), and
# only to build loom: installed consumers still bring their own package (loomConfig.cmake finds
# it). FETCHCONTENT_SOURCE_DIR_<NAME> points a fetch at a local copy instead of the network.
option(LOOM_FETCHCONTENT_ASIO "Use the pinned upstream Asio (asio-1-22-1) instead of an installed one" OFF)
option(LOOM_FETCHCONTENT_STDEXEC "With LOOM_USE_STDEXEC: use the pinned upstream stdexec (nvhpc-25.09)" OFF)
option(LOOM_FETCHCONTENT_BEMAN_EXECUTION
       "With LOOM_USE_BEMAN_EXECUTION: use the pinned upstream beman.execution (0.3.0)" OFF)

set(LOOM_ASIO_GIT_TAG asio-1-22-1)
set(LOOM_STDEXEC_GIT_TAG nvhpc-25.09)
set(LOOM_BEMAN_EXECUTION_GIT_TAG 01d9d7b78d26cc80c889ef74a4b28183c1619f92)

if(LOOM_FETCHCONTENT_STDEXEC AND NOT LOOM_USE_STDEXEC)
  message(FATAL_ERROR "loom: LOOM_FETCHCONTENT_STDEXEC=ON needs LOOM_USE_STDEXEC=ON (it only says where stdexec comes from)")
endif()
if(LOOM_FETCHCONTENT_BEMAN_EXECUTION AND NOT LOOM_USE_BEMAN_EXECUTION)
  message(FATAL_ERROR "loom: LOOM_FETCHCONTENT_BEMAN_EXECUTION=ON needs LOOM_USE_BEMAN_EXECUTION=ON (it only says where beman.execution comes from)")
endif()

# loom_fetch_headers(NAME REPOSITORY TAG INCLUDE_SUBDIR HEADER OUT_VAR): fetches REPOSITORY at
# TAG (or takes FETCHCONTENT_SOURCE_DIR_<NAME>) and sets OUT_VAR to its include directory, which
# must hold HEADER; a configuration error names what is missing otherwise.
function(loom_fetch_headers name repository tag include_subdir header out_var)
  include(FetchContent)
  FetchContent_Declare(${name} GIT_REPOSITORY ${repository} GIT_TAG ${tag} GIT_SHALLOW TRUE)
  FetchContent_GetProperties(${name})
  if(NOT ${name}_POPULATED)
    FetchContent_Populate(${name})
  endif()
  set(dir "${${name}_SOURCE_DIR}/${include_subdir}")
  if(NOT EXISTS "${dir}/${header}")
    string(TOUPPER "${name}" upper)
    message(FATAL_ERROR "loom: the fetched ${name} has no ${header} under ${dir} "
                        "(${repository} at ${tag}, or FETCHCONTENT_SOURCE_DIR_${upper})")
  endif()
  set(${out_var} "${dir}" PARENT_SCOPE)
  message(STATUS "loom: ${name} headers from FetchContent (${dir})")
endfunction()

if(LOOM_FETCHCONTENT_ASIO)
  loom_fetch_headers(asio https://github.com/chriskohlhoff/asio.git ${LOOM_ASIO_GIT_TAG} asio/include asio.hpp
                     _loom_fetched_asio)
  # What asio.cmake's find_path would have found.
  set(LOOM_ASIO_INCLUDE_DIR "${_loom_fetched_asio}" CACHE PATH "Asio's include directory" FORCE)
endif()
