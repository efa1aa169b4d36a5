# Debian's hiredis 0.14 ships a pkg-config file but no CMake package; this shim gives it
# the imported target redcoord::hiredis. It is installed with the package so that
# consumers of the static libraries resolve the same target.
if(NOT TARGET redcoord::hiredis)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(REDCOORD_HIREDIS REQUIRED IMPORTED_TARGET GLOBAL hiredis)
  add_library(redcoord::hiredis ALIAS PkgConfig::REDCOORD_HIREDIS)
endif()
