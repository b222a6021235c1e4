# Finds libfabric >= 2.0 and defines the INTERFACE target loom_libfabric (exported as
# loom::libfabric) with its include directory and the full path of the library.
# Search order: LOOM_LIBFABRIC_PREFIX, then the set-up cache (${LOOM_DEPS:-$HOME/.cache/loom}),
# then pkg-config on the system.
# LOOM_LIBFABRIC_STATIC=ON links the archive (libfabric.a, built --enable-embedded --with-pic)
# into libloom with the private dependencies pkg-config --static reports: libloom then needs no
# libfabric.so, and libfabric's symbols stay inside it. A libfabric installed without its
# archive is rejected.
option(LOOM_LIBFABRIC_STATIC "Link the libfabric archive into libloom" OFF)
set(_loom_deps "$ENV{LOOM_DEPS}")
if(NOT _loom_deps)
  set(_loom_deps "$ENV{HOME}/.cache/loom")
endif()
set(LOOM_LIBFABRIC_PREFIX "" CACHE PATH "Prefix of the libfabric installation to use")
set(_lf_prefixes "")
if(LOOM_LIBFABRIC_PREFIX)
  list(APPEND _lf_prefixes "${LOOM_LIBFABRIC_PREFIX}")
elseif(NOT "$ENV{LOOM_LIBFABRIC}" STREQUAL "system")
  if(LOOM_LIBFABRIC_STATIC)
    list(APPEND _lf_prefixes "${_loom_deps}/libfabric-2.1.0-static")
  endif()
  list(APPEND _lf_prefixes "${_loom_deps}/libfabric-2.1.0")
endif()

find_package(PkgConfig REQUIRED)
set(_saved_pc "$ENV{PKG_CONFIG_PATH}")
set(_lf_pc "")
foreach(p IN LISTS _lf_prefixes)  # in order: the first prefix wins
  string(APPEND _lf_pc "${p}/lib/pkgconfig:")
endforeach()
set(ENV{PKG_CONFIG_PATH} "${_lf_pc}$ENV{PKG_CONFIG_PATH}")
pkg_check_modules(LIBFABRIC REQUIRED libfabric>=2.0)
set(ENV{PKG_CONFIG_PATH} "${_saved_pc}")

if(LOOM_LIBFABRIC_STATIC)
  find_library(LOOM_LIBFABRIC_ARCHIVE NAMES libfabric.a HINTS ${LIBFABRIC_LIBRARY_DIRS} NO_DEFAULT_PATH)
  if(NOT LOOM_LIBFABRIC_ARCHIVE)
    unset(LOOM_LIBFABRIC_ARCHIVE CACHE)  # look again at the next configure
    message(FATAL_ERROR "LOOM_LIBFABRIC_STATIC=ON needs the libfabric archive, but the libfabric found in "
                        "'${LIBFABRIC_LIBRARY_DIRS}' has no libfabric.a (a shared-only installation). "
                        "scripts/setup builds one into ${_loom_deps}/libfabric-2.1.0-static; or point "
                        "LOOM_LIBFABRIC_PREFIX at a libfabric configured with --enable-static --with-pic.")
  endif()
  # The private dependencies, without libfabric itself.
  set(LOOM_LIBFABRIC_PRIVATE_LIBS ${LIBFABRIC_STATIC_LIBRARIES})
  list(REMOVE_ITEM LOOM_LIBFABRIC_PRIVATE_LIBS fabric)
  list(REMOVE_DUPLICATES LOOM_LIBFABRIC_PRIVATE_LIBS)
  set(LOOM_LIBFABRIC_LIBRARY "${LOOM_LIBFABRIC_ARCHIVE}")
else()
  find_library(LOOM_LIBFABRIC_LIBRARY NAMES fabric HINTS ${LIBFABRIC_LIBRARY_DIRS} NO_DEFAULT_PATH)
  if(NOT LOOM_LIBFABRIC_LIBRARY)
    find_library(LOOM_LIBFABRIC_LIBRARY NAMES fabric REQUIRED)
  endif()
endif()
get_filename_component(LOOM_LIBFABRIC_LIBDIR "${LOOM_LIBFABRIC_LIBRARY}" DIRECTORY)
set(LOOM_LIBFABRIC_INCLUDEDIR "${LIBFABRIC_INCLUDEDIR}")
if(NOT LOOM_LIBFABRIC_INCLUDEDIR)
  list(GET LIBFABRIC_INCLUDE_DIRS 0 LOOM_LIBFABRIC_INCLUDEDIR)
endif()
get_filename_component(LOOM_LIBFABRIC_PREFIX_FOUND "${LOOM_LIBFABRIC_LIBDIR}" DIRECTORY)
message(STATUS "loom: libfabric ${LIBFABRIC_VERSION} at ${LOOM_LIBFABRIC_LIBRARY}")

add_library(loom_libfabric INTERFACE)
target_include_directories(loom_libfabric SYSTEM INTERFACE "${LOOM_LIBFABRIC_INCLUDEDIR}")
if(NOT LOOM_LIBFABRIC_STATIC)
  target_link_libraries(loom_libfabric INTERFACE "${LOOM_LIBFABRIC_LIBRARY}")
endif()  # static: libloom carries libfabric (loom/CMakeLists.txt)
set_target_properties(loom_libfabric PROPERTIES EXPORT_NAME libfabric)
add_library(loom::libfabric ALIAS loom_libfabric)
