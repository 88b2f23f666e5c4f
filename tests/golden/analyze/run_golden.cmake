cmake_minimum_required(VERSION 3.25)
# One golden CLI case of `analyze` / `diff`: runs scalescope with the arguments
# in CASE.args (one per line; %SRC% = the source root, inputs made by
# analyze_golden_inputs are relative to the work folder) inside WORK, replaces
# the source root in the output by %SRC% (so the files do not depend on the
# checkout's path) and compares stdout with the expected file CASE.txt,
# CASE.csv or CASE.json exactly. A first line COLUMNS=N in CASE.args sets the
# terminal width the output is fitted to.
# Usage: cmake -DSCALESCOPE=<exe> -DSRC=<source root> -DWORK=<dir> -DCASE=<path without extension> -P run_golden.cmake
# Regenerate the expected files after an intended change:
#   UPDATE_GOLDEN=1 ctest -R analyze_golden     (then review `git diff tests/golden/analyze`)
file(STRINGS "${CASE}.args" args)
list(TRANSFORM args REPLACE "%SRC%" "${SRC}")
set(expected "")
foreach(ext txt csv json)
  if(EXISTS "${CASE}.${ext}")
    set(expected "${CASE}.${ext}")
  endif()
endforeach()
if(expected STREQUAL "")
  message(FATAL_ERROR "${CASE}: no expected file (${CASE}.txt, .csv or .json); create one with UPDATE_GOLDEN=1")
endif()
set(ENV{NO_COLOR} 1)
unset(ENV{COLUMNS})  # tables to a pipe are not fitted to a width; a caller's COLUMNS must not change them
# A first line COLUMNS=N runs the case as on a terminal N columns wide.
list(GET args 0 first)
if(first MATCHES "^COLUMNS=([0-9]+)$")
  set(ENV{COLUMNS} "${CMAKE_MATCH_1}")
  list(REMOVE_AT args 0)
endif()
execute_process(COMMAND ${SCALESCOPE} ${args} WORKING_DIRECTORY "${WORK}"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "scalescope ${args} exited ${rc}: ${err}")
endif()
if(DEFINED ENV{COLUMNS})
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    string(LENGTH "${line}" n)
    if(n GREATER $ENV{COLUMNS})
      message(FATAL_ERROR "a line of ${n} characters at COLUMNS=$ENV{COLUMNS}: ${line}")
    endif()
  endforeach()
endif()
string(REPLACE "${SRC}" "%SRC%" out "${out}")
if("$ENV{UPDATE_GOLDEN}" STREQUAL "1")
  file(WRITE "${expected}" "${out}")
  return()
endif()
file(READ "${expected}" want)
if(NOT out STREQUAL want)
  file(WRITE "${expected}.actual" "${out}")
  message(FATAL_ERROR "output differs from ${expected} (actual written to ${expected}.actual; diff them, "
                      "or UPDATE_GOLDEN=1 ctest -R analyze_golden after an intended change)")
endif()
