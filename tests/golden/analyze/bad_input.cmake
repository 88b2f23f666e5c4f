cmake_minimum_required(VERSION 3.25)
# Bad input to analyze and diff: exit status 1 and exactly one line on stderr,
# "scalescope: error: ...", naming the input and what is wrong; nothing on stdout.
# WORK holds the good runs from analyze_golden_inputs (a.ssrun, b.ssrun); bad
# inputs are made in SCRATCH at test time.
# Usage: cmake -DSCALESCOPE=<exe> -DSRC=<source root> -DWORK=<dir> -DSCRATCH=<dir> -P bad_input.cmake
file(REMOVE_RECURSE "${SCRATCH}")
file(MAKE_DIRECTORY "${SCRATCH}")
set(ENV{NO_COLOR} 1)
set(sample "${SRC}/examples/sample/kineto-sample.json.gz")
set(good "${WORK}/a.ssrun")
# Corrupt traces: text under a .sstrace name, a file cut inside its header, and
# (not an error, checked at the end) a trace cut in the middle of a chunk.
file(WRITE "${SCRATCH}/garbage.sstrace" "this is not a scalescope trace file, just text\n")
execute_process(COMMAND head -c 4000 "${good}/rank0.sstrace" OUTPUT_FILE "${SCRATCH}/cut.sstrace")
execute_process(COMMAND head -c 10 "${good}/rank0.sstrace" OUTPUT_FILE "${SCRATCH}/header_only.sstrace")
execute_process(COMMAND head -c 65536 "${sample}" OUTPUT_FILE "${SCRATCH}/truncated.json.gz")
file(WRITE "${SCRATCH}/not_json.json" "this is not JSON\n")
file(MAKE_DIRECTORY "${SCRATCH}/empty_dir")
# A profile run whose job made no CUDA call: the run's own records, no rank trace.
file(MAKE_DIRECTORY "${SCRATCH}/gpuless.ssrun")
file(WRITE "${SCRATCH}/gpuless.ssrun/run.json" "{\"exit_code\": 0}\n")
file(WRITE "${SCRATCH}/gpuless.ssrun/manifest-vm.json" "{\"files\": []}\n")
# A PyTorch profiler trace taken without ProfilerActivity.CUDA: host operators only.
file(WRITE "${SCRATCH}/cpu_only.json"
     "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 5}]}\n")
file(WRITE "${SCRATCH}/bad_class.txt" "# rules\ncommunication my_allgather\ngpu nccl_kernel\n")
file(WRITE "${SCRATCH}/no_substring.txt" "memory\n")
file(WRITE "${SCRATCH}/fr/rank_0" "not a flight recorder dump\n")

# Each case: "args separated by |" => regex the one error line must match.
set(cases
  "analyze|${SCRATCH}/missing.sstrace=>missing.sstrace: no such file"
  "analyze|${SCRATCH}/garbage.sstrace=>garbage.sstrace"
  "analyze|${SCRATCH}/truncated.json.gz=>truncated.json.gz.*truncated gzip"
  "analyze|${SCRATCH}/not_json.json=>not_json.json"
  "analyze|${SCRATCH}/empty_dir=>empty_dir: a directory without traces"
  "analyze|${SCRATCH}/gpuless.ssrun=>gpuless.ssrun: a profile run that recorded no GPU activity"
  "analyze|${SCRATCH}/cpu_only.json=>no GPU activity in [^ ]*cpu_only.json [(]was ProfilerActivity.CUDA on[?][)]"
  "analyze|${good}|--window|5x:10x=>--window '5x:10x': '5x' is not a non-negative number. --window takes START:END in percent .* units ns, us, ms, s"
  "analyze|${good}|--window|5:3=>--window '5:3': the end must be after the start"
  "analyze|${good}|--window|abc=>--window 'abc': expected START:END"
  "analyze|${good}|--window|10%:150%=>--window '10%:150%': percentages go up to 100"
  "analyze|${good}|--window|0x10:0x20=>--window '0x10:0x20': '0x10' is not a non-negative number"
  "analyze|${good}|--window|1e19:2e19=>--window '1e19:2e19': 1e19 is too large"
  "analyze|${good}|--window|it0:it999=>--window it0:it999: the trace has only [0-9]+ iterations"
  "analyze|${good}|--iteration-range|NoSuchStep=>--iteration-range 'NoSuchStep': the trace has no NVTX range of that name. the most frequent ranges: 'DistributedDataParallel.forward' [(]x4[)], 'Optimizer.step#SGD.step' [(]x4[)]"
  "analyze|${good}|--classes|${SCRATCH}/missing_rules.txt=>missing_rules.txt.*no such file"
  "analyze|${good}|--classes|${SCRATCH}/bad_class.txt=>bad_class.txt:3: unknown kernel class 'gpu'"
  "analyze|${good}|--classes|${SCRATCH}/no_substring.txt=>no_substring.txt:1: expected '<class> <substring>'"
  "analyze|${good}|--classes|${SCRATCH}=>is a directory"
  "analyze|${good}|--flight-recorder|${SCRATCH}/fr/rank_0=>fr/rank_0: not a flight recorder dump"
  "analyze|${good}|--flight-recorder|${SCRATCH}/no_dumps_=>no_dumps_: no flight recorder dumps"
  "diff|${good}|${SCRATCH}/missing.sstrace=>missing.sstrace: no such file"
  "diff|${SCRATCH}/header_only.sstrace|${good}=>header_only.sstrace: truncated scalescope trace"
  "diff|${good}|${WORK}/b.ssrun|--window|it1=>--window 'it1': expected START:END"
  "diff|${good}|${WORK}/b.ssrun|--classes|${SCRATCH}/bad_class.txt=>bad_class.txt:3: unknown kernel class")
set(failures "")
foreach(c IN LISTS cases)
  string(REPLACE "=>" ";" parts "${c}")
  list(GET parts 0 argline)
  list(GET parts 1 pattern)
  string(REPLACE "|" ";" args "${argline}")
  execute_process(COMMAND ${SCALESCOPE} ${args} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  string(REGEX REPLACE "\n$" "" err_line "${err}")
  if(NOT rc EQUAL 1)
    string(APPEND failures "\n${argline}: exit status ${rc}, expected 1 (stderr: ${err})")
  elseif(NOT err_line MATCHES "^scalescope: error: [^\n]*${pattern}[^\n]*$")
    string(APPEND failures "\n${argline}: expected one line 'scalescope: error: ...${pattern}...', got: ${err}")
  elseif(NOT out STREQUAL "")
    string(APPEND failures "\n${argline}: printed to stdout before failing: ${out}")
  endif()
endforeach()
# Not an error: a trace cut inside a chunk (a killed writer) keeps its complete
# chunks; the analysis runs and says the trace lost data.
execute_process(COMMAND ${SCALESCOPE} analyze ${SCRATCH}/cut.sstrace OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "cut.sstrace[)]: the trace lost data [(]torn_tail x1[)]")
  string(APPEND failures "\nanalyze cut.sstrace: expected exit 0 and a note 'the trace lost data (torn_tail x1)', got ${rc}: ${err}")
endif()
# PyTorch flight recorder dumps given by their prefix: the verdict in the
# terminal and in --json, each naming its source.
set(fr "${SRC}/tests/golden/analyze/flight_recorder/rank_")
execute_process(COMMAND ${SCALESCOPE} analyze ${good} --flight-recorder ${fr} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "flight recorder: ranks 0-1, 3 wait in nccl:all_reduce #18 of process group 0 [(]default_pg[)]; rank 2 never reached it")
  string(APPEND failures "\nanalyze --flight-recorder: expected the flight recorder's verdict, got ${rc}: ${out}${err}")
endif()
execute_process(COMMAND ${SCALESCOPE} analyze ${good} --flight-recorder ${fr} --json OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\"source\": \"flight recorder\"" OR NOT out MATCHES "\"never_reached\": \\[[ \n]*2[ \n]*\\]")
  string(APPEND failures "\nanalyze --flight-recorder --json: expected hang.flight_recorder with source and never_reached [2], got ${rc}: ${err}")
endif()
# The same dumps where `profile` points PyTorch: found in the run directory.
file(COPY "${good}/" DESTINATION "${SCRATCH}/fr_run.ssrun")
file(COPY "${SRC}/tests/golden/analyze/flight_recorder/" DESTINATION "${SCRATCH}/fr_run.ssrun/control/flight_recorder")
execute_process(COMMAND ${SCALESCOPE} analyze ${SCRATCH}/fr_run.ssrun OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "flight recorder: ranks 0-1, 3 wait in nccl:all_reduce #18 of process group 0")
  string(APPEND failures "\nanalyze RUN with control/flight_recorder/: expected the flight recorder's verdict, got ${rc}: ${err}")
endif()
# A dump PyTorch 2.11 wrote itself (pickle, version 2.10) on one H100:
# 17 all-reduces done, the 18th queued behind a blocked GPU.
execute_process(COMMAND ${SCALESCOPE} analyze ${good} --flight-recorder "${SRC}/tests/golden/analyze/flight_recorder_pytorch_2_11/rank_0"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "flight recorder: rank 0 waits in nccl:all_reduce #18 of process group 0 [(]default_pg[)] [(]every rank with a dump reached it; it is not completed[)]")
  string(APPEND failures "\nanalyze --flight-recorder on PyTorch 2.11's own dump: expected all_reduce #18 not completed, got ${rc}: ${out}${err}")
endif()
# The JSON form of the same dump (`_dump_nccl_trace_json()`, PyTorch 2.11 on one
# H100): thread ids and group states are strings there; the same verdict.
execute_process(COMMAND ${SCALESCOPE} analyze ${good} --flight-recorder "${SRC}/tests/golden/analyze/flight_recorder_pytorch_2_11_json/rank_0"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "flight recorder: rank 0 waits in nccl:all_reduce #18 of process group 0 [(]default_pg[)] [(]every rank with a dump reached it; it is not completed[)]")
  string(APPEND failures "\nanalyze --flight-recorder on PyTorch 2.11's own JSON dump: expected all_reduce #18 not completed, got ${rc}: ${out}${err}")
endif()
file(REMOVE_RECURSE "${SCRATCH}")
if(NOT failures STREQUAL "")
  message(FATAL_ERROR "bad-input cases failed:${failures}")
endif()
