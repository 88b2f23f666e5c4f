#!/usr/bin/env bash
# The H200 study plan, as sweeps run by `scalescope sweep --profile`.
#
# Usage: bench/study/run_study.sh BUILD_DIR OUT_DIR [PART...]
#   PART: image-base | image-tuned | image (= both) | llm | accuracy | control | all (= image-base image-tuned llm)
#   BUILD_DIR: a release build of scalescope (BUILD_DIR/cli/scalescope and the collector).
#   OUT_DIR: receives at most 8 files (< 16 MiB each): env.txt, and per part
#            <part>.tar.gz (sweep DB, run logs, summary.tsv, scaling, the
#            effect comparisons of `scaling --compare`, analyze output) and <part>-traces.tar.gz (repetition-0 traces, size-capped).
# Before: bench/study/stage_data.sh on the machine that has the data (copies
# Fashion-MNIST into .devcarry/fashion-mnist/, which travels with the tree).
#
# The plan (docs/study.md explains why):
#   image-base : arm=base  x variant={ref,fp64,precision,pin,layout,loader} x GPUs {1,2} x 3 repetitions
#   image-tuned: arm=tuned x the same six variants                          x GPUs {1,2} x 3 repetitions
#                (bench/study/image_variant.sh maps arm+variant to workload options)
#                MobileNetV2, Fashion-MNIST upsampled to 224x224, batch 128 per GPU,
#                30 steps of which the first 10 are warm-up, 4 loader workers per rank.
#                Metric: epoch_time_s (seconds per 60,000 images at the steady rate; lower is better).
#   llm        : method={lora,dpo,qlora,qat} x GPUs {1,2} x 3 repetitions; Llama 1.1B (--size 1b),
#                8 sequences x 512 tokens per GPU, 30 steps of which 10 warm-up.
#                Metric: seconds_per_mtok (seconds per million tokens at the steady rate).
#   accuracy   : the documented full configuration once on 2 GPUs (10 epochs, 112 px, bf16, NHWC,
#                pinned, gpu loader), unprofiled, metric mlperf (run_start..run_stop): the >= 90 %
#                test-accuracy check.
#   control    : arm=tuned x variant={ref,fp64} x 1 GPU x 3 repetitions, UNprofiled: what the
#                collector in every other part's runs does to epoch_time_s and to the fp64/fp16
#                ratio (compare with image-tuned's profiled runs of the same configurations).
#
# GPU-time budget on 2x H200 (estimates to be replaced by what the smoke run shows):
#   fixed cost per run ~9 s (torchrun, import torch/torchvision, CUDA and NCCL set-up,
#   DataLoader workers, collector flush); image steps 0.03-0.25 s each (tuned .. fp64/cpu loader).
#   One measured anchor: the shared Kineto trace (../shared/data/traces, MobileNetV2, fp16,
#   NHWC, pinned DataLoader input, batch 128, 224 px, 2x H200) spans 2.67 s of GPU timeline
#   for its 60 steps, ~44 ms a step, with the GPU busy 43 % of it.
#   image-base : 36 runs x (9 s + 30 x ~0.12 s) ~ 36 x 12.6 s ~ 7.6 min
#   image-tuned: 36 runs x (9 s + 30 x ~0.08 s) ~ 36 x 11.4 s ~ 6.8 min
#   llm        : 24 runs x (12 s fixed incl. transformers/peft import and a 1.1B model built on the
#                GPU + 30 x ~0.08 s) ~ 24 x 14.4 s ~ 5.8 min
#   accuracy   : 1 run, ~2,350 steps of ~15-25 ms + 10 evaluations ~ 1-1.5 min
#   => each part fits one 10-minute call; run them as separate calls. STUDY_BUDGET_S (default
#   540) bounds one invocation: a sweep still running 45 s before it is stopped (SIGTERM;
#   finished runs stay in its DB), the part is packed (analyses in parallel, cut off so that
#   the invocation ends by STUDY_BUDGET_S + 50 s, i.e. 590 s), and calling again resumes it:
#   from STUDY_WORK/<part>.db (default BUILD_DIR/study-work) when it is there, else from the
#   committed examples/h200/<part>.db (STUDY_SEED, the folder), which is copied into STUDY_WORK
#   first. The device tool copies carried folders afresh on every call, so the committed
#   database is what carries a part's progress from one call to the next: commit the <part>.db
#   that comes back after each call.
# Environment knobs: STUDY_BUDGET_S, STUDY_REPEAT (3), STUDY_GPUS (1,2 or 1 on a 1-GPU machine),
# STUDY_STEPS (30), STUDY_WARMUP (10), STUDY_TIMEOUT_S (per run, 120; accuracy run:
# STUDY_ACCURACY_TIMEOUT_S, 480), STUDY_DATA (the staged
# Fashion-MNIST folder, default .devcarry/fashion-mnist), STUDY_WORK, STUDY_SEED (examples/h200;
# "none": never resume from it), PYTHON (python3).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
start_s=$SECONDS

die() { echo "run_study.sh: $*" >&2; exit 1; }
[ $# -ge 2 ] || die "usage: run_study.sh BUILD_DIR OUT_DIR [image-base|image-tuned|image|llm|accuracy|control|all]..."
build="$(cd "$1" 2>/dev/null && pwd)" || die "$1: no such build folder"
out="$2"; shift 2
parts=("$@"); [ ${#parts[@]} -gt 0 ] || parts=(all)
expanded=()
for p in "${parts[@]}"; do
  case "$p" in
    all) expanded+=(image-base image-tuned llm) ;;
    image) expanded+=(image-base image-tuned) ;;
    image-base|image-tuned|llm|accuracy|control) expanded+=("$p") ;;
    *) die "unknown part '$p' (image-base, image-tuned, image, llm, accuracy, control, all)" ;;
  esac
done
ss="$build/cli/scalescope"
[ -x "$ss" ] || die "$ss: not built (cmake --build $build --target scalescope scalescope-collector)"
"$ss" sweep --help >/dev/null 2>&1 || die "$ss sweep --help fails: is the sweep command built?"
sweep_help="$("$ss" sweep --help 2>&1)"
mkdir -p "$out" || die "$out: cannot create"
out="$(cd "$out" && pwd)"
work="${STUDY_WORK:-$build/study-work}"
mkdir -p "$work" || die "$work: cannot create"
budget="${STUDY_BUDGET_S:-540}"
repeat="${STUDY_REPEAT:-3}"
steps="${STUDY_STEPS:-30}"
warmup="${STUDY_WARMUP:-10}"
run_timeout="${STUDY_TIMEOUT_S:-120}"
python="${PYTHON:-python3}"
ngpu="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
[ "${ngpu:-0}" -ge 1 ] || die "nvidia-smi lists no GPU"
gpus="${STUDY_GPUS:-$([ "$ngpu" -ge 2 ] && echo 1,2 || echo 1)}"
data="${STUDY_DATA:-$repo/.devcarry/fashion-mnist}"

{
  echo "# run_study.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) parts: ${expanded[*]}"
  echo "# gpus=$gpus repeat=$repeat steps=$steps warmup=$warmup budget_s=$budget"
  git -C "$repo" describe --always --dirty 2>/dev/null | sed 's/^/# commit /'
  "$ss" --version 2>&1
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,pci.bus_id --format=csv 2>&1
  nvidia-smi topo -m 2>&1
  "$python" -c 'import sys, torch, torchvision; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "torchvision", torchvision.__version__, "nccl", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1
  "$python" -c 'import transformers, peft; print("transformers", transformers.__version__, "peft", peft.__version__)' 2>&1
  lscpu 2>&1 | grep -E '^(Model name|Socket|Core|Thread|CPU\(s\)|NUMA)' ; numactl -H 2>&1 | head -3
  env | grep -E '^(NCCL_|TORCH_SYMM|NVSHMEM_)' | sort
} >"$out/env.txt" 2>&1

has_opt() { grep -q -- "$1" <<<"$sweep_help"; }

# run_sweep PART DB METRIC VARY... -- COMMAND...
run_sweep() {
  local part="$1" db="$2" metric="$3"; shift 3
  local vary=()
  while [ "$1" != "--" ]; do vary+=(--vary "$1"); shift; done
  shift
  local left=$((budget - (SECONDS - start_s) - ${STUDY_MARGIN_S:-45}))  # the margin is for packing
  if [ "$left" -lt "${STUDY_MIN_START_S:-30}" ]; then
    echo "run_study.sh: $part: no time left in STUDY_BUDGET_S=$budget; not started" | tee -a "$work/$part.notes"
    return 0
  fi
  local args=(sweep --gpus "$gpus" --repeat "$repeat" --launcher torchrun --metric "$metric" -o "$db")
  [ "$part" != accuracy ] && [ "$part" != control ] && args+=(--profile)
  local per_run="$run_timeout"
  [ "$part" = accuracy ] && per_run="${STUDY_ACCURACY_TIMEOUT_S:-480}"  # 10 epochs, not 30 steps
  has_opt --timeout && args+=(--timeout "${per_run}s")
  local seed="${STUDY_SEED:-$repo/examples/h200}/$part.db"
  if [ ! -e "$db" ] && [ "${STUDY_SEED:-}" != none ] && [ -s "$seed" ]; then
    cp "$seed" "$db" || { echo "run_study.sh: cannot copy $seed to $db" >&2; return 1; }
    echo "run_study.sh: $part: resuming from the committed $seed" | tee -a "$work/$part.notes"
  fi
  if [ -e "$db" ]; then
    has_opt --resume || { echo "run_study.sh: $db exists and sweep has no --resume" >&2; return 1; }
    args+=(--resume)
  fi
  echo "== $part: $ss ${args[*]} ${vary[*]} -- $* (at most ${left}s)"
  (cd "$repo" && timeout --signal=TERM --kill-after=30 "$left" "$ss" "${args[@]}" "${vary[@]}" -- "$@")
  local rc=$?
  echo "run_study.sh: $part: sweep exit status $rc after $((SECONDS - start_s))s" | tee -a "$work/$part.notes"
}

# summary.tsv: one row per run from its 'scalescope_result' line (run folder, then key=value columns).
summarise() {
  local db="$1" tsv="$2"
  : >"$tsv"
  for log in "$db".runs/*/log.txt; do
    [ -e "$log" ] || continue
    local line; line="$(grep -a '^scalescope_result ' "$log" | tail -1)"
    local run; run="$(basename "$(dirname "$log")")"
    if [ -z "$line" ]; then echo -e "run=$run\tstatus=no_result_line" >>"$tsv"; continue; fi
    echo "run=$run ${line#scalescope_result }" | tr ' ' '\t' >>"$tsv"
  done
}

pack() {
  local part="$1" db="$2"
  local dir="$work/$part-pack"
  rm -rf "$dir"; mkdir -p "$dir"
  [ -e "$db" ] && cp "$db" "$dir/"
  summarise "$db" "$dir/summary.tsv"
  cp "$work/$part.notes" "$dir/notes.txt" 2>/dev/null
  if [ -e "$db" ]; then
    "$ss" scaling "$db" >"$dir/scaling.txt" 2>&1 || echo "(scaling exit status $?)" >>"$dir/scaling.txt"
    "$ss" scaling "$db" --format json >"$dir/scaling.json" 2>&1 || true
    # Each effect: the reference against one change, at each GPU count (Welch on
    # log times: ratio with its CI; Mann-Whitney as a check).
    local key="" ref="" others=()
    case "$part" in
      image-*) key=variant ref=ref others=(fp64 precision pin layout loader) ;;
      control) key=variant ref=ref others=(fp64) ;;
      llm) key=method ref=lora others=(dpo qlora qat) ;;
    esac
    mkdir -p "$dir/compare"
    for o in "${others[@]}"; do
      "$ss" scaling "$db" --compare "$key=$ref,$o" >"$dir/compare/$ref-vs-$o.txt" 2>&1 || true
      "$ss" scaling "$db" --compare "$key=$ref,$o" --format json >"$dir/compare/$ref-vs-$o.json" 2>/dev/null || true
    done
  fi
  mkdir -p "$dir/logs" "$dir/analyze"
  for log in "$db".runs/*/log.txt; do
    [ -e "$log" ] || continue
    cp "$log" "$dir/logs/$(basename "$(dirname "$log")").log"
  done
  # The analyzer's view (and advice) of each configuration: repetition 0 traces.
  # In parallel and bounded: the whole invocation must end before STUDY_BUDGET_S + 50 s.
  local left=$((budget + 50 - (SECONDS - start_s) - 10))
  if ! compgen -G "$db.runs/*-r0/trace.ssrun" >/dev/null; then
    echo "no traces to analyse (this part runs unprofiled)" >"$dir/analyze/skipped.txt"
  elif [ "$left" -gt 5 ]; then
    printf '%s\n' "$db".runs/*-r0/trace.ssrun |
      SS="$ss" DIR="$dir/analyze" timeout --signal=KILL "$left" xargs -P "${STUDY_ANALYZE_JOBS:-8}" -I{} bash -c '
        run="$(basename "$(dirname "$1")")"
        "$SS" analyze "$1" >"$DIR/$run.txt" 2>&1 || echo "(analyze exit status $?)" >>"$DIR/$run.txt"
        "$SS" analyze "$1" --format json >"$DIR/$run.json" 2>/dev/null || true' _ {}
  else
    echo "no time left for the analyses" >"$dir/analyze/skipped.txt"
  fi
  tar -C "$work" -czf "$out/$part.tar.gz" "$part-pack"
  # Traces of repetition 0, smallest first, while the archive stays under ~14 MiB.
  local list="$work/$part-traces.list" total=0
  : >"$list"
  if compgen -G "$db.runs/*-r0/trace.ssrun" >/dev/null; then
    while read -r size path; do
      total=$((total + size))
      [ "$total" -gt $((14 * 1024 * 1024)) ] && break
      echo "${path#"$work"/}" >>"$list"
    done < <(for t in "$db".runs/*-r0/trace.ssrun; do echo "$(du -sb "$t" | cut -f1) $t"; done | sort -n)
  fi
  if [ -s "$list" ]; then
    tar -C "$work" -czf "$out/$part-traces.tar.gz" -T "$list"
  fi
  echo "== $part: packed $(ls -l "$out/$part"*.tar.gz | awk '{s+=$5} END {print s}') bytes into $out"
}

for part in "${expanded[@]}"; do
  db="$work/$part.db"
  case "$part" in
    image-base|image-tuned)
      [ -s "$data/train-images-idx3-ubyte.gz" ] || die "$data: Fashion-MNIST not staged (bench/study/stage_data.sh)"
      run_sweep "$part" "$db" 'regex:epoch_time_s=([0-9.eE+-]+)' "arm=${part#image-}" \
        "variant=ref,fp64,precision,pin,layout,loader" -- \
        bench/study/seeded.sh "{rep}" bench/study/image_variant.sh "{arm}" "{variant}" --data-dir "$data" \
        --image-size 224 --batch-size 128 --workers 4 --steps "$steps" --warmup-steps "$warmup" --log-every 0
      ;;
    llm)
      run_sweep llm "$db" 'regex:seconds_per_mtok=([0-9.eE+-]+)' "method=lora,dpo,qlora,qat" -- \
        bench/study/seeded.sh "{rep}" "$python" workloads/llm_finetune.py --method "{method}" --size 1b --seq-len 512 \
        --batch-size 8 --steps "$steps" --warmup-steps "$warmup" --log-every 0
      ;;
    control)
      [ -s "$data/train-images-idx3-ubyte.gz" ] || die "$data: Fashion-MNIST not staged (bench/study/stage_data.sh)"
      gpus_saved="$gpus"
      gpus=1
      run_sweep control "$db" 'regex:epoch_time_s=([0-9.eE+-]+)' "arm=tuned" "variant=ref,fp64" -- \
        bench/study/seeded.sh "{rep}" bench/study/image_variant.sh "{arm}" "{variant}" --data-dir "$data" \
        --image-size 224 --batch-size 128 --workers 4 --steps "$steps" --warmup-steps "$warmup" --log-every 0
      gpus="$gpus_saved"
      ;;
    accuracy)
      [ -s "$data/train-images-idx3-ubyte.gz" ] || die "$data: Fashion-MNIST not staged (bench/study/stage_data.sh)"
      gpus_saved="$gpus" repeat_saved="$repeat"
      gpus="$([ "$ngpu" -ge 2 ] && echo 2 || echo 1)" repeat=1
      run_sweep accuracy "$db" mlperf -- \
        workloads/image_ddp.py --data-dir "$data" --image-size 112 --precision bf16 --channels-last --pin-memory \
        --loader gpu --batch-size 128 --epochs 10 --eval-each-epoch --log-every 100
      gpus="$gpus_saved" repeat="$repeat_saved"
      ;;
  esac
  pack "$part" "$db"
done
echo "run_study.sh: done in $((SECONDS - start_s))s; $out holds: $(cd "$out" && ls | tr '\n' ' ')"
