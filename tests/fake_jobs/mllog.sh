#!/bin/sh
# Fake MLPerf-style job: run_start at 1000 ms, run_stop at 1000 + ${1:-2500} ms
# with status ${2:-success}, with other MLLOG lines and noise around them.
echo ':::MLLOG {"namespace": "", "time_ms": 900, "event_type": "POINT", "key": "init_start", "value": null}'
echo ':::MLLOG {"namespace": "", "time_ms": 1000, "event_type": "INTERVAL_START", "key": "run_start", "value": null}'
echo ':::MLLOG {broken json'
echo 'epoch 1 done'
echo "[rank0]: :::MLLOG {\"namespace\": \"\", \"time_ms\": $((1000 + ${1:-2500})), \"event_type\": \"INTERVAL_END\", \"key\": \"run_stop\", \"value\": null, \"metadata\": {\"status\": \"${2:-success}\"}}"
