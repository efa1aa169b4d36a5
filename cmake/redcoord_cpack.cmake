# A Debian package of what `cmake --install` installs (cpack -G DEB in the build tree):
# libraries, headers, the CMake package, redcoord.pc, the licence and the changelog.
# One package for now; a distribution would split it into libredcoord<SOVERSION> (the shared
# libraries) and libredcoord-dev (the rest).
set(REDCOORD_DEB_MAINTAINER "the redcoord authors" CACHE STRING
    "Maintainer field of the Debian package (Name <address>)")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME redcoord)
set(CPACK_PACKAGE_VENDOR "the redcoord authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
    "C++20 libraries of coordination primitives on Redis (distributed_lock, redlock, fair_lock, \
master_selector, leader_elector, signal_hub, barriers, reliable_queue), with their headers, a \
CMake package (find_package(redcoord)) and a pkg-config file (redcoord.pc). MIT licence.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${REDCOORD_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Runtime dependencies from dpkg-shlibdeps on the shared libraries' DT_NEEDED: libhiredis0.14
# and libssl3 with their minimum versions, and libc6, libgcc-s1, libstdc++6. Boost is headers
# only: nothing at runtime. Building against the headers and the CMake package needs the
# -dev packages, hence the recommendations.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libboost-dev (>= 1.74), libhiredis-dev, libssl-dev, pkg-config")
include(CPack)
