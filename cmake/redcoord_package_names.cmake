# Debian package names of the install components (Debian policy 8.1: a shared library package
# is named after its SONAME, so libredcoord_<part>.so.0.1 ships in libredcoord0.1, and a new
# SOVERSION makes a new package that can be installed beside the old one).
set(REDCOORD_DEB_RUNTIME_NAME libredcoord${REDCOORD_SOVERSION})
set(REDCOORD_DEB_DEV_NAME libredcoord-dev)
set(REDCOORD_DEB_TOOLS_NAME redcoord-tools)
