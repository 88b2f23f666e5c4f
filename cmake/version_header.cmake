# Writes generated/scalescope_version.hpp: the project version and the commit
# built (git describe). Run at every build, not only at configure time, so
# that a build after new commits names the commit it was built from; the
# file is rewritten only when its text changes, so nothing recompiles when
# the commit is the same.
#   cmake -DSOURCE_DIR=... -DVERSION=0.1.0 -DOUTPUT=.../scalescope_version.hpp -P version_header.cmake
execute_process(COMMAND git describe --always --dirty WORKING_DIRECTORY "${SOURCE_DIR}"
                OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT describe)
  set(describe "unknown")
endif()
set(text "#pragma once\n#define SCALESCOPE_VERSION \"${VERSION}\"\n#define SCALESCOPE_GIT_DESCRIBE \"${describe}\"\n")
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
