# Debian packages of what `cmake --install` installs (cpack -G DEB in the build tree), one per
# install component (cmake/redcoord_install.cmake), as a distribution would split them:
#   libredcoord<SOVERSION>  the shared libraries (section libs);
#   libredcoord-dev         headers, .so links, static libraries, CMake package, redcoord.pc,
#                           licence and changelog (section libdevel);
#   redcoord-tools          the `redcoord` command (section utils), when tools are built.
# Build with -DCMAKE_INSTALL_PREFIX=/usr so GNUInstallDirs picks Debian's multiarch libdir
# (lib/x86_64-linux-gnu), as scripts/package-deb does.
set(REDCOORD_DEB_MAINTAINER "the redcoord authors" CACHE STRING
    "Maintainer field of the Debian packages (Name <address>)")
include(redcoord_package_names)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME redcoord)
set(CPACK_PACKAGE_VENDOR "the redcoord authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# No package-wide summary: CPack would put it first in every package (it skips only its own
# default, which it derives from CMAKE_PROJECT_DESCRIPTION unless this is empty); each
# package's own description starts with its summary line.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
if(TARGET redcoord_cli)
  list(APPEND CPACK_COMPONENTS_ALL tools)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${REDCOORD_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "")
set(redcoord_deb_summary "Coordination primitives on Redis")
# Descriptions: plain lines; CPack indents them for the control file and turns an empty line
# into the " ." paragraph separator.
set(redcoord_deb_long "redcoord provides locks (distributed_lock, redlock, fair_lock), leader
election (master_selector, leader_elector), signals and barriers (signal_hub, barrier) and
reliable work queues (reliable_queue) for processes that share Redis servers.")
set(redcoord_deb_exact "(= ${PROJECT_VERSION})")

# The shared libraries. Their dependencies come from dpkg-shlibdeps (libhiredis0.14, libssl3,
# libc6, libgcc-s1, libstdc++6); GENERATE_SHLIBS writes the shlibs file other packages'
# dpkg-shlibdeps reads to depend on this one.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${REDCOORD_DEB_RUNTIME_NAME})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# Cron schedules in a named zone read its TZif file (redcoord::time_zone).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "tzdata")
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "${redcoord_deb_summary} - shared libraries\n${redcoord_deb_long}")

# Building against the headers needs the -dev packages of what they include (Boost headers,
# hiredis and OpenSSL for static links and the CMake package's find_dependency calls).
set(CPACK_DEBIAN_DEV_PACKAGE_NAME ${REDCOORD_DEB_DEV_NAME})
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "${REDCOORD_DEB_RUNTIME_NAME} ${redcoord_deb_exact}, libboost1.81-dev, libhiredis-dev, libssl-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "pkg-config, cmake")
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "${redcoord_deb_summary} - development files\n${redcoord_deb_long}\n
This package holds the headers, the CMake package (find_package(redcoord)), the pkg-config
file (redcoord.pc) and the static libraries.")

# The command. dpkg-shlibdeps cannot resolve libredcoord_*.so.* (not installed on the build
# machine), so the dependency on the runtime package is written out and only the system
# libraries are left to it.
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME ${REDCOORD_DEB_TOOLS_NAME})
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS ON)
# The build directory of every installed library (each part's, http's, the dashboard's), taken
# from the targets, so a new library is found without editing a list here.
set(redcoord_deb_private_dirs "")
foreach(t IN LISTS REDCOORD_PART_TARGETS REDCOORD_EXTRA_TARGETS)
  if(TARGET ${t})
    get_target_property(dir ${t} BINARY_DIR)
    list(APPEND redcoord_deb_private_dirs ${dir})
  endif()
endforeach()
list(REMOVE_DUPLICATES redcoord_deb_private_dirs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${redcoord_deb_private_dirs})
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${REDCOORD_DEB_RUNTIME_NAME} ${redcoord_deb_exact}")
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "redis-tools")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION
    "${redcoord_deb_summary} - command-line tool\n${redcoord_deb_long}\n
The redcoord command runs shell commands under a lock or as an elected leader, signals,
waits, passes barriers, works queues and inspects live primitives.")
include(CPack)
