#!/usr/bin/env bash
# A two-node Slurm cluster on this host, for the Slurm and MPI tests:
#   scripts/slurm-test-cluster.sh start    # installs if missing, starts munge, slurmctld, two slurmd; waits for idle
#   scripts/slurm-test-cluster.sh status   # exit 0 when the nodes are up
#   scripts/slurm-test-cluster.sh stop
#   scripts/slurm-test-cluster.sh env      # prints SLURM_CONF=... for the clients
# Everything (config, munge key and socket, state, logs, job completion file)
# lives in SCALESCOPE_SLURM_DIR (default /tmp/scalescope-slurm); nothing is
# written under /etc. The daemons listen on their own ports (below), so a real
# Slurm installation on the host is not disturbed.
#
# The two nodes, sscope1 and sscope2, are two slurmd on this host (`slurmd -N`,
# each on its own port), so jobs can span two nodes. Each declares 8 CPUs
# whatever the host has (SlurmdParameters=config_overrides): the test jobs
# are sleeps and echoes, and the tests submit side by side without waiting
# for each other's CPUs. OverTimeLimit=0 and KillWait=2 end a job soon after
# its time limit (slurmctld looks at time limits every 30 s or so: a job with
# --time=1 ends 60 to 90 s after it started).
#
# Accounting: there is no slurmdbd (it needs MySQL), so `sacct` has nothing
# to read. Finished jobs stay known to slurmctld for MinJobAge (here 600 s),
# where `scontrol show job` reports their final state, and every finished job
# is appended to $DIR/jobcomp.txt (jobcomp/filetxt).
#
# Exit codes: 0 done; 77 this machine cannot run the cluster (not root and
# nothing installed, or the install failed): the reason is printed; 1 other errors.
set -euo pipefail

DIR=${SCALESCOPE_SLURM_DIR:-/tmp/scalescope-slurm}
# Ports of their own per folder (two checkouts' clusters can run side by side):
# 16800 + 3 x (a hash of the folder, 0..999), or SCALESCOPE_SLURM_PORT; the
# slurmd of node i listens on that + i.
CTLD_PORT=${SCALESCOPE_SLURM_PORT:-$((16800 + 3 * ($(printf '%s' "$DIR" | cksum | cut -d' ' -f1) % 1000)))}
NODES=(sscope1 sscope2)
SKIP=77

say() { echo "slurm-test-cluster: $*" >&2; }
skip() {
  say "cannot run here: $*"
  exit "$SKIP"
}

install_if_missing() {
  local missing=()
  command -v slurmctld >/dev/null || missing+=(slurm-wlm)
  command -v munged >/dev/null || missing+=(munge)
  command -v mpirun >/dev/null || missing+=(openmpi-bin)
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || skip "missing ${missing[*]} and not root to install them"
  command -v apt-get >/dev/null || skip "missing ${missing[*]} and no apt-get"
  say "installing ${missing[*]}"
  if ! { DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"${DIR}.install.log" 2>&1; then
    skip "apt-get install ${missing[*]} failed (see ${DIR}.install.log)"
  fi
}

write_config() {
  mkdir -p "$DIR"/{state,spool,munge,log}
  chmod 700 "$DIR/munge"
  local nodes="" i
  for i in "${!NODES[@]}"; do
    nodes+="NodeName=${NODES[$i]} NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=$((CTLD_PORT + 1 + i)) CPUs=8 State=UNKNOWN"$'\n'
  done
  cat >"$DIR/slurm.conf" <<EOF
ClusterName=scalescope-test
SlurmctldHost=$(hostname)(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
OverTimeLimit=0
MinJobAge=600
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.txt
${nodes}PartitionName=debug Nodes=sscope[1-2] Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
  [ -f "$DIR/munge/munge.key" ] || { dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none; chmod 400 "$DIR/munge/munge.key"; }
  # --force: the state directory sits under /tmp, which others may write to.
  munged --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/seed"
}

# The nodes' states, one word when they agree ("idle"), else several lines.
node_state() {
  [ -f "$DIR/slurm.conf" ] || return 0
  SLURM_CONF="$DIR/slurm.conf" timeout 5 sinfo -h -N -o %T 2>/dev/null | sort -u || true
}

# Both nodes known to slurmctld (a cluster of an older one-node configuration
# is not) and each able to take jobs.
running() {
  [ -f "$DIR/slurm.conf" ] || return 1
  local lines
  lines=$(SLURM_CONF="$DIR/slurm.conf" timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u) || return 1
  [ "$(printf '%s\n' "$lines" | grep -cE '^sscope[12] (idle|mixed|allocated|completing)$')" = "${#NODES[@]}" ]
}

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Ends the daemons of these pid files together (each may take seconds), then
# whatever did not end in 5 s.
stop_all() {  # pid files
  local pidfile pid pids=()
  for pidfile in "$@"; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill "$pid" && pids+=("$pid"); fi
    rm -f "$pidfile"
  done
  for _ in $(seq 50); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && kill -9 "$pid"; done
  return 0
}

stop() {
  local node daemons=()
  for node in "${NODES[@]}"; do daemons+=("$DIR/slurmd-$node.pid"); done
  # (slurmd.pid: the one slurmd of a cluster started by an older version of this script)
  stop_all "${daemons[@]}" "$DIR/slurmd.pid" "$DIR/slurmctld.pid"
  stop_all "$DIR/munge/munged.pid"
}

start() {
  install_if_missing
  [ "$(id -u)" = 0 ] || skip "the test cluster runs its daemons as root (SlurmUser=root)"
  if running; then
    say "already running ($DIR)"
    return 0
  fi
  stop
  for port in $(seq "$CTLD_PORT" $((CTLD_PORT + ${#NODES[@]}))); do
    port_taken "$port" && skip "port $port is taken by another program (set SCALESCOPE_SLURM_PORT to another port)"
  done
  rm -rf "$DIR/state" "$DIR/spool"
  write_config
  start_munge || skip "munged does not start (see $DIR/log/munged.log)"
  export SLURM_CONF="$DIR/slurm.conf"
  slurmctld -i || skip "slurmctld does not start (see $DIR/log/slurmctld.log)"
  local node
  for node in "${NODES[@]}"; do
    slurmd -N "$node" || skip "slurmd -N $node does not start (see $DIR/log/slurmd-$node.log)"
  done
  local state=""
  for _ in $(seq 300); do
    state=$(node_state)
    [ "$state" = idle ] && { say "up: nodes ${NODES[*]} idle; export SLURM_CONF=$SLURM_CONF"; return 0; }
    sleep 0.1
  done
  say "the nodes did not become idle in 30 s (states '${state//$'\n'/ }'); logs in $DIR/log"
  stop
  exit "$SKIP"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status)
    s=$(node_state)
    echo "${s:-down}"
    [ -n "$s" ]
    ;;
  env) echo "SLURM_CONF=$DIR/slurm.conf" ;;
  *)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac
