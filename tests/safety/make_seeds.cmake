cmake_minimum_required(VERSION 3.25)
# Seeds the mutation tests build with the scalescope under test: a run
# directory (import of two Kineto ranks, so it has a manifest), folders of
# Kineto ranks, a sweep database, and Kineto traces (gzip; integers out of range).
# Usage: cmake -DSCALESCOPE=<exe> -DSRC=<source root> -DWORK=<dir> -P make_seeds.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/kineto")
file(READ "${SRC}/tests/fuzz/kineto_importer/one_kernel.json" one)
file(WRITE "${WORK}/kineto/rank0.json" "${one}")
string(REPLACE "\"rank\": 0" "\"rank\": 1" two "${one}")
file(WRITE "${WORK}/kineto/rank1.json" "${two}")
# Folders read as runs: beside two ranks, files named like traces that are not
# (an HTML page over a rank, a config file), and a copy of a rank edited.
file(MAKE_DIRECTORY "${WORK}/kineto-notes" "${WORK}/kineto-copies")
file(WRITE "${WORK}/kineto-notes/rank0.json" "${one}")
file(WRITE "${WORK}/kineto-notes/rank1.json" "${two}")
file(WRITE "${WORK}/kineto-notes/rank2.json.gz" "<!DOCTYPE html><html><body>a report</body></html>\n")
file(WRITE "${WORK}/kineto-notes/config.json" "{\"model\": \"gpt2\", \"layers\": 12}\n")
file(WRITE "${WORK}/kineto-copies/a.json" "${one}")
string(REPLACE "\"dur\": 10}" "\"dur\": 11}" edited "${one}")
file(WRITE "${WORK}/kineto-copies/b.json" "${edited}")
# Integers a 32-bit column cannot hold (rank, world size, device, stream).
string(REPLACE "\"rank\": 0, \"world_size\": 1" "\"rank\": 4294967297, \"world_size\": 4294967298" wrap "${one}")
string(REPLACE "\"device\": 0, \"stream\": 7, \"correlation\": 3" "\"device\": -3, \"stream\": 4294967303, \"correlation\": 3"
       wrap "${wrap}")
file(WRITE "${WORK}/wrap.json" "${wrap}")
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
