cmake_minimum_required(VERSION 3.25)
# Inputs of the nsys golden tests, in WORK: a copy of the real export from
# ../shared and the fixture exports built from trace/testdata/nsys/*.sql with
# the sqlite3 shell.
# Usage: cmake -DSQLITE3=<sqlite3> -DSRC=<source root> -DSHARED=<shared dir> -DWORK=<dir> -P make_inputs.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(COPY_FILE "${SHARED}/data/nsys/saxpy-mpi-cuda-a100.sqlite" "${WORK}/saxpy.sqlite")
file(GLOB fixtures "${SRC}/trace/testdata/nsys/*.sql")
foreach(sql ${fixtures})
  get_filename_component(name ${sql} NAME_WE)
  execute_process(COMMAND "${SQLITE3}" "${WORK}/${name}.sqlite" ".read ${sql}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${sql}: sqlite3 failed: ${err}")
  endif()
endforeach()
