cmake_minimum_required(VERSION 3.25)
# Bad input to import, stats and export: exit code 1 and one line on stderr
# naming the file. Inputs are made in WORK at test time.
# Usage: cmake -DSCALESCOPE=<exe> -DSRC=<source root> -DWORK=<dir> -P bad_input.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(WRITE "${WORK}/not.json" "this is not JSON\n")
file(WRITE "${WORK}/array.json" "[1, 2, 3]\n")
file(WRITE "${WORK}/no_events.json" "{\"schemaVersion\": 1}\n")
file(WRITE "${WORK}/cut.json" "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": 1")
# A truncated gzip: the first 64 KiB of the sample.
execute_process(COMMAND head -c 65536 "${SRC}/examples/sample/kineto-sample.json.gz" OUTPUT_FILE "${WORK}/truncated.json.gz")
# A 100 MB kernel name.
string(REPEAT "a" 1048576 mb)
string(REPEAT "${mb}" 100 huge)
file(WRITE "${WORK}/huge_string.json" "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"${huge}\", \"ts\": 1, \"dur\": 1}]}")
set(huge "")
set(mb "")

set(cases
  "missing.json|no such file"
  "not.json|"
  "array.json|not a Kineto trace"
  "no_events.json|no traceEvents"
  "cut.json|invalid JSON"
  "truncated.json.gz|truncated gzip"
  "huge_string.json|longer than")
foreach(c IN LISTS cases)
  string(REPLACE "|" ";" parts "${c}")
  list(GET parts 0 input)
  list(LENGTH parts n)
  set(fragment "")
  if(n GREATER 1)
    list(GET parts 1 fragment)
  endif()
  foreach(cmd "import;${WORK}/${input};-o;${WORK}/out.sstrace" "stats;${WORK}/${input}"
              "export;${WORK}/${input};--format;chrome;-o;${WORK}/out.json")
    execute_process(COMMAND ${SCALESCOPE} ${cmd} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
    string(STRIP "${err}" err)
    if(NOT rc EQUAL 1)
      message(FATAL_ERROR "${cmd}: exit ${rc}, expected 1 (stderr: ${err})")
    endif()
    if(NOT err MATCHES "^scalescope: error: [^\n]*${input}[^\n]*${fragment}[^\n]*$")
      message(FATAL_ERROR "${cmd}: expected one error line naming ${input} and '${fragment}', got: ${err}")
    endif()
    if(EXISTS "${WORK}/out.sstrace" OR EXISTS "${WORK}/out.json")
      message(FATAL_ERROR "${cmd}: left an output file behind")
    endif()
  endforeach()
endforeach()
file(REMOVE_RECURSE "${WORK}")
