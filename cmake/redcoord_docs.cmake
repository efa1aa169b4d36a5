# The `docs` target: the API reference of every part's installed headers (and the generated
# version.hpp), rendered by Doxygen into ${PROJECT_BINARY_DIR}/docs/html. Doxygen runs with
# warnings as errors and WARN_IF_UNDOCUMENTED (docs/Doxyfile.in), so an undocumented public
# entity fails the target; scripts/check-docs runs it in CI.
# Optional: without doxygen the target is not defined and everything else builds.
find_package(Doxygen 1.9 QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "doxygen not found: no 'docs' target (Debian: apt-get install doxygen)")
  return()
endif()

set(REDCOORD_DOCS_OUTPUT ${PROJECT_BINARY_DIR}/docs)
set(_inputs "")
set(_strip "")
foreach(part core lock election signaling queue jobs limit testing http http/dashboard)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${part}/include)
    string(APPEND _inputs " \"${PROJECT_SOURCE_DIR}/${part}/include\"")
    string(APPEND _strip " \"${PROJECT_SOURCE_DIR}/${part}/include\"")
  endif()
endforeach()
set(_generated ${PROJECT_BINARY_DIR}/core/generated/include)
string(APPEND _inputs " \"${_generated}/redcoord/version.hpp\"")
string(APPEND _strip " \"${_generated}\"")
set(REDCOORD_DOCS_INPUT "${_inputs}")
set(REDCOORD_DOCS_STRIP "${_strip}")
set(REDCOORD_DOCS_EXAMPLES "${PROJECT_SOURCE_DIR}/examples")
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${PROJECT_BINARY_DIR}/Doxyfile @ONLY)

add_custom_target(docs
  COMMAND ${CMAKE_COMMAND} -E make_directory ${REDCOORD_DOCS_OUTPUT}
  COMMAND Doxygen::doxygen ${PROJECT_BINARY_DIR}/Doxyfile
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  COMMENT "Doxygen: API reference into ${REDCOORD_DOCS_OUTPUT}/html (warnings are errors)"
  VERBATIM)
