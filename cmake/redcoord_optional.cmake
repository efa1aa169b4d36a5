# The tests, benchmarks and tools need packages the libraries do not (GoogleTest with GMock,
# Google Benchmark, CLI11). A plain `cmake -S . -B b && cmake --build b` must still build the
# libraries on a machine that lacks them, so each group's option defaults to whether its
# package is found, and a group switched off for that reason says once which package enables
# it. An explicit -D<option>=ON with the package missing stays a configure error that names
# the package. A group switched off only because its package was missing switches on by
# itself at a later configure once the package is installed; one the user switched off stays
# off.
#
# A sub-project (add_subdirectory, FetchContent) probes nothing: the groups are off, as
# scripts/package-test's add_subdirectory consumer checks with the packages made unfindable.

# redcoord_optional_group(VAR DOC FOUND_VAR WHAT DEBIAN)
# VAR: the option; DOC: its help text; FOUND_VAR: TRUE when the group's packages are there;
# WHAT: what the group is, for the messages; DEBIAN: the Debian packages that enable it.
function(redcoord_optional_group var doc found what debian)
  if(NOT PROJECT_IS_TOP_LEVEL)
    option(${var} "${doc}" OFF)
    return()
  endif()
  set(auto_var _${var}_AUTO_OFF)
  if(NOT DEFINED CACHE{${var}})
    if(found)
      set(${auto_var} OFF CACHE INTERNAL "")
    else()
      set(${auto_var} ON CACHE INTERNAL "")
    endif()
  elseif(${auto_var} AND NOT ${var} AND found)
    set(${var} ON CACHE BOOL "${doc}" FORCE)
    set(${auto_var} OFF CACHE INTERNAL "")
    message(STATUS "redcoord: ${what} found now: ${var} switched ON")
  endif()
  # Also gives a -D value without a type (UNINITIALIZED) its BOOL type.
  option(${var} "${doc}" ${found})
  if(${var} AND NOT found)
    message(FATAL_ERROR
      "${var}=ON needs ${what}, which was not found. Install it (Debian/Ubuntu: "
      "apt-get install ${debian}) or configure with -D${var}=OFF.")
  endif()
  if(NOT ${var} AND ${auto_var})
    message(STATUS "redcoord: ${var} is OFF: ${what} not found "
                   "(Debian/Ubuntu: apt-get install ${debian})")
  endif()
endfunction()

if(PROJECT_IS_TOP_LEVEL)
  # GoogleTest's CMake package (or CMake's FindGTest) may come without GMock, which the tests
  # use too: Debian ships it separately (libgmock-dev).
  find_package(GTest QUIET)
  if(GTest_FOUND AND TARGET GTest::gmock)
    set(redcoord_have_gtest TRUE)
  endif()
  find_package(benchmark QUIET)
  set(redcoord_have_benchmark ${benchmark_FOUND})
  find_package(CLI11 CONFIG QUIET)
  set(redcoord_have_cli11 ${CLI11_FOUND})
endif()
# As TRUE or FALSE, the options' defaults (an unset or `benchmark-NOTFOUND` value is neither).
foreach(group gtest benchmark cli11)
  if(redcoord_have_${group})
    set(redcoord_have_${group} TRUE)
  else()
    set(redcoord_have_${group} FALSE)
  endif()
endforeach()

redcoord_optional_group(REDCOORD_BUILD_TESTS "Build the tests" ${redcoord_have_gtest}
  "GoogleTest with GMock" "libgtest-dev libgmock-dev")
redcoord_optional_group(REDCOORD_BUILD_BENCH "Build the benchmarks" ${redcoord_have_benchmark}
  "Google Benchmark" "libbenchmark-dev")
redcoord_optional_group(REDCOORD_BUILD_TOOLS "Build the command-line tool and examples"
  ${redcoord_have_cli11} "CLI11" "libcli11-dev")
