# Golden CLI test (cmake -P): runs a command and compares its stdout with a file.
#   cmake "-DCOMMAND=a;b;c" -DEXPECTED=file.csv -DWORKDIR=dir -P golden_test.cmake
# Set UPDATE_GOLDEN=1 in the environment to rewrite the expected file.
execute_process(COMMAND ${COMMAND} WORKING_DIRECTORY "${WORKDIR}"
                OUTPUT_VARIABLE actual ERROR_VARIABLE errors RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "command failed (${rc}): ${COMMAND}\n${errors}")
endif()
if("$ENV{UPDATE_GOLDEN}" STREQUAL "1")
  file(WRITE "${EXPECTED}" "${actual}")
  return()
endif()
file(READ "${EXPECTED}" expected)
if(NOT actual STREQUAL expected)
  file(WRITE "${EXPECTED}.actual" "${actual}")
  message(FATAL_ERROR "output differs from ${EXPECTED}; actual output written to ${EXPECTED}.actual")
endif()
