# redcoord_add_part(<part> SOURCES ... [DEPS ...] [PRIVATE_DEPS ...] [LUA_EXPORTS <header>...])
# Makes the library redcoord_<part> (alias redcoord::<part>; static, or shared with
# BUILD_SHARED_LIBS) whose public headers are <part>/include/redcoord/<part>/*.hpp, spelled the
# same in-tree and installed.
#
# Shared libraries: SONAME libredcoord_<part>.so.<REDCOORD_SOVERSION>, and hidden symbols
# except what the installed headers declare (redcoord/core/export.hpp says how), unless
# REDCOORD_EXPOSE_INTERNALS is on (see the top-level CMakeLists.txt).
#
# A part's Lua scripts are files <part>/src/lua/<name>.lua, embedded as
# `redcoord::detail::<name>_lua` and declared in <redcoord_lua/<part>.hpp> (redcoord_lua.cmake);
# LUA_EXPORTS names the installed headers that declare the ones other parts use.
include(${CMAKE_CURRENT_LIST_DIR}/redcoord_lua.cmake)

function(redcoord_add_part part)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS;LUA_EXPORTS" ${ARGN})
  set(target redcoord_${part})
  set(lua_source "")
  if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/src/lua)
    redcoord_embed_lua(${part} lua_source ${ARG_LUA_EXPORTS})
  endif()
  add_library(${target} ${ARG_SOURCES} ${lua_source})
  add_library(redcoord::${part} ALIAS ${target})
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/include/*.hpp)
  target_sources(${target} PUBLIC FILE_SET HEADERS
                 BASE_DIRS ${CMAKE_CURRENT_SOURCE_DIR}/include FILES ${headers})
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  if(lua_source)
    target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated_lua/include)
  endif()
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # A unity batch includes source files, never headers, so a class with a member from a
    # source file's anonymous namespace is still defined once (tests/CMakeLists.txt, the same
    # reason); GCC only sees that it is no longer in the main file.
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
  if(REDCOORD_THREAD_SAFETY)
    # Clang's lock-discipline check of the REDCOORD_GUARDED_BY annotations (thread_annotations.hpp).
    target_compile_options(${target} PRIVATE -Wthread-safety -Werror=thread-safety)
  endif()
  target_link_libraries(${target} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${part} OUTPUT_NAME redcoord_${part}
                        VERSION ${PROJECT_VERSION} SOVERSION ${REDCOORD_SOVERSION})
  if(BUILD_SHARED_LIBS AND NOT REDCOORD_EXPOSE_INTERNALS)
    set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  endif()
endfunction()
