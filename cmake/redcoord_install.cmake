# Installation: the libraries, headers through FILE_SETs, a relocatable CMake package, a
# pkg-config file, and the licence and changelog where Debian puts a package's documents.
#
# Components, as a distribution splits them (cmake/redcoord_cpack.cmake makes one Debian
# package of each): `runtime` holds the versioned shared objects only; `dev` everything a
# build against redcoord needs (headers, the unversioned .so links, static libraries, the CMake
# and pkg-config files, the test harness library); `tools` the `redcoord` command (tools/).
# A plain `cmake --install` installs all of them.
install(TARGETS redcoord ${REDCOORD_PART_TARGETS} ${REDCOORD_EXTRA_TARGETS} redcoord_testing
        EXPORT redcoord-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
set(REDCOORD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/redcoord)
install(EXPORT redcoord-targets NAMESPACE redcoord:: DESTINATION ${REDCOORD_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(cmake/redcoord-config.cmake.in
  ${PROJECT_BINARY_DIR}/redcoord-config.cmake INSTALL_DESTINATION ${REDCOORD_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/redcoord-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/redcoord-config.cmake
              ${PROJECT_BINARY_DIR}/redcoord-config-version.cmake
              cmake/redcoord_hiredis.cmake
        DESTINATION ${REDCOORD_CMAKE_DIR} COMPONENT dev)

# redcoord.pc. Linking the static libraries needs hiredis and OpenSSL too, so they are public
# requirements then; the shared libraries carry them as DT_NEEDED, so only --static needs them.
if(BUILD_SHARED_LIBS)
  set(REDCOORD_PC_REQUIRES "")
  set(REDCOORD_PC_REQUIRES_PRIVATE "hiredis, libssl, libcrypto")
else()
  set(REDCOORD_PC_REQUIRES "hiredis, libssl, libcrypto")
  set(REDCOORD_PC_REQUIRES_PRIVATE "")
endif()
# Most-dependent first: a static link resolves left to right.
set(REDCOORD_PC_LIBS "")
foreach(part IN LISTS REDCOORD_PARTS)
  string(PREPEND REDCOORD_PC_LIBS "-lredcoord_${part} ")
endforeach()
# Relative to the file itself (${pcfiledir}), so an install moved elsewhere (cmake --install
# --prefix, dpkg -x into a scratch root) still points at its own headers and libraries.
file(RELATIVE_PATH REDCOORD_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" REDCOORD_PC_TO_PREFIX "${REDCOORD_PC_TO_PREFIX}")
configure_file(cmake/redcoord.pc.in ${PROJECT_BINARY_DIR}/redcoord.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/redcoord.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

install(FILES LICENSE CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT dev)
# Debian wants each binary package to carry the licence in machine-readable form as
# /usr/share/doc/<package>/copyright; the package names are set in redcoord_cpack.cmake.
include(redcoord_package_names)
foreach(component runtime dev tools)
  string(TOUPPER ${component} upper)
  install(FILES cmake/debian-copyright COMPONENT ${component}
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${REDCOORD_DEB_${upper}_NAME} RENAME copyright)
endforeach()
