cmake_minimum_required(VERSION 3.25)
# Runs one golden CLI case: scalescope with the arguments in CASE.args (one per
# line, %SRC% = the source root), and compares stdout with CASE.csv exactly.
# Usage: cmake -DSCALESCOPE=<exe> -DSRC=<source root> -DCASE=<path without extension> -P run_golden.cmake
# Regenerate an expected file after an intended change with -DUPDATE=1.
file(STRINGS "${CASE}.args" args)
list(TRANSFORM args REPLACE "%SRC%" "${SRC}")
set(ENV{NO_COLOR} 1)
execute_process(COMMAND ${SCALESCOPE} ${args} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "scalescope ${args} exited ${rc}: ${err}")
endif()
if(UPDATE)
  file(WRITE "${CASE}.csv" "${out}")
  return()
endif()
file(READ "${CASE}.csv" expected)
if(NOT out STREQUAL expected)
  file(WRITE "${CASE}.actual.csv" "${out}")
  message(FATAL_ERROR "output differs from ${CASE}.csv (actual written to ${CASE}.actual.csv; diff them)")
endif()
