cmake_minimum_required(VERSION 3.25)
# Seeds the mutation tests build with the scalescope under test: a run
# directory (import of two Kineto ranks, so it has a manifest), folders of
# Kineto ranks (with notes, copies, a trace of another kind), a sweep database,
# Kineto traces (gzip; integers out of range; hostile names) and an MLLOG tree
# with counts and a scaling factor out of range.
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
# A kernel name of 256 KiB holding a right-to-left override and an isolate.
string(REPEAT "x" 262144 long)
string(REPLACE "\"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)\""
       "\"name\": \"a\\u202eb\\u2067c${long}\"" names "${one}")
if(names STREQUAL one)
  message(FATAL_ERROR "hostile-names seed: the kernel name of one_kernel.json was not found")
endif()
file(WRITE "${WORK}/names.json" "${names}")
# Two byte-identical copies of one trace (not two ranks).
file(MAKE_DIRECTORY "${WORK}/kineto-twins")
file(WRITE "${WORK}/kineto-twins/a.json" "${one}")
file(WRITE "${WORK}/kineto-twins/b.json" "${one}")
execute_process(COMMAND ${SCALESCOPE} import ${WORK}/kineto -o ${WORK}/run.ssrun --format csv
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import for the run-directory seed failed: ${err}")
endif()
# A run directory holding a copy of one of its ranks.
file(COPY "${WORK}/run.ssrun/" DESTINATION "${WORK}/run-copy.ssrun")
file(COPY_FILE "${WORK}/run.ssrun/rank0.sstrace" "${WORK}/run-copy.ssrun/rank0 (copy).sstrace")
# Kineto ranks with an .sstrace beside them, as `import rank0.json` leaves its
# output by default.
file(COPY "${WORK}/kineto/" DESTINATION "${WORK}/kineto-mixed")
execute_process(COMMAND ${SCALESCOPE} import ${WORK}/kineto/rank0.json -o ${WORK}/kineto-mixed/rank0.sstrace
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import for the mixed-folder seed failed: ${err}")
endif()
# An MLLOG tree whose system counts 4294967297 nodes and whose scaling factor
# is 1e-320 (values that wrapped or divided into infinities).
file(COPY "${SRC}/mlperf/testdata/Lambda/" DESTINATION "${WORK}/mllog-hostile")
file(GLOB systems "${WORK}/mllog-hostile/systems/*.json")
foreach(system ${systems})
  file(READ "${system}" text)
  string(REPLACE "\"number_of_nodes\": \"4\"" "\"number_of_nodes\": 4294967297" text "${text}")
  file(WRITE "${system}" "${text}")
endforeach()
file(GLOB benchmarks LIST_DIRECTORIES true "${WORK}/mllog-hostile/results/*/*")
foreach(bench ${benchmarks})
  file(WRITE "${bench}/scaling.json" "{\"scaling_factor\": 1e-320}\n")
endforeach()
execute_process(COMMAND ${SCALESCOPE} sweep --gpus 1,2 --repeat 2 -o ${WORK}/sweep.db -- echo {gpus}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sweep for the database seed failed: ${err}")
endif()
file(ARCHIVE_CREATE OUTPUT "${WORK}/one_kernel.json.gz" PATHS "${SRC}/tests/fuzz/kineto_importer/one_kernel.json"
     FORMAT raw COMPRESSION GZip)
