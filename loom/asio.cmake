# The Asio front end (loom::asio): headers over loom::loom and standalone Asio (header-only).
# On by default where Asio's headers are found (scripts/setup installs Debian's libasio-dev);
# -DLOOM_USE_ASIO=ON makes a missing Asio a configuration error, OFF leaves the front end out.
find_path(LOOM_ASIO_INCLUDE_DIR asio.hpp)
set(_loom_asio_default OFF)
if(LOOM_ASIO_INCLUDE_DIR)
  set(_loom_asio_default ON)
endif()
option(LOOM_USE_ASIO "Build the Asio front end (loom::asio)" ${_loom_asio_default})

if(LOOM_USE_ASIO)
  if(NOT LOOM_ASIO_INCLUDE_DIR)
    message(FATAL_ERROR "loom: LOOM_USE_ASIO=ON but Asio's headers (asio.hpp) were not found (Debian: libasio-dev; or set LOOM_ASIO_INCLUDE_DIR)")
  endif()
  find_package(Threads REQUIRED)
  add_library(loom_asio INTERFACE)
  add_library(loom::asio ALIAS loom_asio)
  set_target_properties(loom_asio PROPERTIES EXPORT_NAME asio)
  # Consumers of an installation bring their own Asio (loomConfig.cmake defines asio::asio from
  # a package, pkg-config or the headers it finds).
  target_include_directories(loom_asio SYSTEM INTERFACE $<BUILD_INTERFACE:${LOOM_ASIO_INCLUDE_DIR}>)
  target_link_libraries(loom_asio INTERFACE loom Threads::Threads $<INSTALL_INTERFACE:asio::asio>)
  install(TARGETS loom_asio EXPORT loomTargets)
  set(LOOM_ASIO_BUILT ON)
  message(STATUS "loom: Asio front end built (${LOOM_ASIO_INCLUDE_DIR})")
endif()
