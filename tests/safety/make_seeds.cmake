cmake_minimum_required(VERSION 3.25)
# Seeds the mutation tests build with the scalescope under test: a run
# directory (import of two Kineto ranks, so it has a manifest), a sweep
# database, and a gzip Kineto trace.
# Usage: cmake -DSCALESCOPE=<exe> -DSRC=<source root> -DWORK=<dir> -P make_seeds.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/kineto")
file(READ "${SRC}/tests/fuzz/kineto_importer/one_kernel.json" one)
file(WRITE "${WORK}/kineto/rank0.json" "${one}")
string(REPLACE "\"rank\": 0" "\"rank\": 1" two "${one}")
file(WRITE "${WORK}/kineto/rank1.json" "${two}")
execute_process(COMMAND ${SCALESCOPE} import ${WORK}/kineto -o ${WORK}/run.ssrun --format csv
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import for the run-directory seed failed: ${err}")
endif()
execute_process(COMMAND ${SCALESCOPE} sweep --gpus 1,2 --repeat 2 -o ${WORK}/sweep.db -- echo {gpus}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sweep for the database seed failed: ${err}")
endif()
file(ARCHIVE_CREATE OUTPUT "${WORK}/one_kernel.json.gz" PATHS "${SRC}/tests/fuzz/kineto_importer/one_kernel.json"
     FORMAT raw COMPRESSION GZip)
