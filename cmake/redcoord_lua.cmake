# redcoord_embed_lua(<part> <out_var> [<header>...])
# Embeds every <part>/src/lua/*.lua as the constant `redcoord::detail::<stem>_lua` (a const
# char*): writes a source into <binary dir>/generated_lua/lua_sources.cpp and a header
# <binary dir>/generated_lua/include/redcoord_lua/<part>.hpp declaring them, and returns
# the source's path in <out_var>. redcoord_add_part() calls it for every part that has a
# src/lua folder, adds the source and makes the header's folder private to the part. Stems
# are unique across parts (the constants share a namespace). Each file starts with a comment giving its keys, arguments, reply and
# complexity (docs/scripts.md lists them). The optional headers (installed ones that declare
# some of the constants inside REDCOORD_API_BEGIN/END, for other parts to use) are included
# before the generated one, so a shared library exports exactly those.
#
# Done at configure time: editing a .lua file re-runs CMake on the next build
# (CMAKE_CONFIGURE_DEPENDS), and file(CONFIGURE) rewrites the outputs only when their content
# changes, so the library always carries the scripts as written in the tree and a re-run of
# CMake rebuilds nothing.
function(redcoord_embed_lua part out_var)
  set(exported "")
  foreach(h ${ARGN})
    string(APPEND exported "#include <${h}>\n")
  endforeach()
  file(GLOB scripts CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/lua/*.lua)
  list(SORT scripts)
  # The glob notices added and removed files; this, edits to each one.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${scripts})
  set(source "// Generated from ${part}/src/lua/*.lua by cmake/redcoord_lua.cmake: do not edit.\n")
  string(APPEND source "${exported}#include <redcoord_lua/${part}.hpp>\n\nnamespace redcoord::detail {\n")
  set(header "#pragma once\n// Generated from ${part}/src/lua/*.lua by cmake/redcoord_lua.cmake: do not edit.\n")
  string(APPEND header "// Each script's header comment (in its .lua file) gives its keys, arguments and reply.\n")
  string(APPEND header "\nnamespace redcoord::detail {\n\n")
  foreach(lua ${scripts})
    get_filename_component(stem ${lua} NAME_WE)
    get_property(owner GLOBAL PROPERTY REDCOORD_LUA_${stem})
    if(owner AND NOT owner STREQUAL part)
      message(FATAL_ERROR "${lua}: the script name ${stem} is taken by the part ${owner}")
    endif()
    set_property(GLOBAL PROPERTY REDCOORD_LUA_${stem} ${part})
    file(READ ${lua} body)
    string(FIND "${body}" ")lua\"" clash)
    if(NOT clash EQUAL -1)
      message(FATAL_ERROR "${lua} holds the raw-string delimiter )lua\"")
    endif()
    string(APPEND source "\nconst char* const ${stem}_lua = R\"lua(${body})lua\";\n")
    string(APPEND header "extern const char* const ${stem}_lua;\n")
  endforeach()
  string(APPEND source "\n}  // namespace redcoord::detail\n")
  string(APPEND header "\n}  // namespace redcoord::detail\n")
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/generated_lua)
  file(CONFIGURE OUTPUT ${dir}/lua_sources.cpp CONTENT "@source@" @ONLY)
  file(CONFIGURE OUTPUT ${dir}/include/redcoord_lua/${part}.hpp CONTENT "@header@" @ONLY)
  set(${out_var} ${dir}/lua_sources.cpp PARENT_SCOPE)
endfunction()
