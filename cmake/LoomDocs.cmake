# The API reference: doxygen over the public headers (docs/Doxyfile.in). The target loom-docs
# (not part of ALL) writes HTML into <build>/docs/html and fails on any warning, an undocumented
# public name included. LOOM_BUILD_DOCS defaults to ON where doxygen >= 1.9 (FAIL_ON_WARNINGS) is
# found; without it there is simply no target.
#
# Run as a script (cmake -DDOXYGEN=... -DDOXYFILE=... -DLOG=... [-DPYTHON=...] -P LoomDocs.cmake)
# it runs doxygen and fails with the warnings doxygen wrote to its log, which the build's output
# would not show, and (with a Python) with every undocumented enumerator, which doxygen 1.9 does
# not warn about (check_enumerators.py reads the XML output).
if(CMAKE_SCRIPT_MODE_FILE)
  file(REMOVE "${LOG}")
  execute_process(COMMAND "${DOXYGEN}" "${DOXYFILE}" RESULT_VARIABLE rc)
  set(warnings "")
  if(EXISTS "${LOG}")
    file(READ "${LOG}" warnings)
  endif()
  if(PYTHON)
    get_filename_component(out_dir "${DOXYFILE}" DIRECTORY)
    execute_process(COMMAND "${PYTHON}" "${CMAKE_CURRENT_LIST_DIR}/check_enumerators.py" "${out_dir}/xml"
                    OUTPUT_VARIABLE enumerators RESULT_VARIABLE enum_rc)
    string(APPEND warnings "${enumerators}")
    if(NOT enum_rc EQUAL 0 AND enumerators STREQUAL "")
      string(APPEND warnings "check_enumerators.py failed (exit status ${enum_rc})\n")
    endif()
  endif()
  if(NOT rc EQUAL 0 OR NOT warnings STREQUAL "")
    message(NOTICE "${warnings}")  # as doxygen wrote them: file:line: text, one a line
    message(FATAL_ERROR "doxygen ${DOXYFILE} failed (exit status ${rc}); its warnings are above and in ${LOG}")
  endif()
else()
  find_package(Doxygen 1.9 QUIET)
  find_package(Python3 COMPONENTS Interpreter QUIET)  # the enumerator check (optional)
  option(LOOM_BUILD_DOCS "Define the loom-docs target (API reference; needs doxygen)" ${DOXYGEN_FOUND})
  if(LOOM_BUILD_DOCS AND NOT DOXYGEN_FOUND)
    message(STATUS "loom: LOOM_BUILD_DOCS=ON but no doxygen >= 1.9 was found: no loom-docs target")
    set(LOOM_BUILD_DOCS OFF)
  endif()

  # loom_doxyfile(DIR): configures DIR/Doxyfile, whose run writes only into DIR.
  function(loom_doxyfile dir)
    set(LOOM_DOCS_OUTPUT_DIR "${dir}")
    configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${dir}/Doxyfile @ONLY)
  endfunction()

  # loom_doxygen_command(DIR VAR): the command that runs doxygen on DIR/Doxyfile, into VAR.
  function(loom_doxygen_command dir var)
    set(python "")
    if(Python3_Interpreter_FOUND)
      set(python -DPYTHON=${Python3_EXECUTABLE})
    endif()
    set(${var} ${CMAKE_COMMAND} -DDOXYGEN=${DOXYGEN_EXECUTABLE} -DDOXYFILE=${dir}/Doxyfile
               -DLOG=${dir}/warnings.log ${python} -P ${CMAKE_CURRENT_FUNCTION_LIST_FILE} PARENT_SCOPE)
  endfunction()

  if(LOOM_BUILD_DOCS)
    loom_doxyfile(${PROJECT_BINARY_DIR}/docs)
    loom_doxygen_command(${PROJECT_BINARY_DIR}/docs _loom_docs_command)
    add_custom_target(loom-docs
      COMMAND ${_loom_docs_command}
      SOURCES ${PROJECT_SOURCE_DIR}/docs/Doxyfile.in
      COMMENT "API reference (doxygen) into ${PROJECT_BINARY_DIR}/docs/html"
      VERBATIM)
  endif()
endif()
