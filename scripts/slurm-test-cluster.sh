#!/usr/bin/env bash
# A one-node Slurm cluster on this host, for the Slurm and MPI tests:
#   scripts/slurm-test-cluster.sh start    # installs if missing, starts munge, slurmctld, slurmd; waits for idle
#   scripts/slurm-test-cluster.sh status   # exit 0 when the node is up
#   scripts/slurm-test-cluster.sh stop
#   scripts/slurm-test-cluster.sh env      # prints SLURM_CONF=... for the clients
# Everything (config, munge key and socket, state, logs, job completion file)
# lives in SCALESCOPE_SLURM_DIR (default /tmp/scalescope-slurm); nothing is
# written under /etc. The daemons listen on their own ports (below), so a real
# Slurm installation on the host is not disturbed.
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
# 16800 + 2 x (a hash of the folder, 0..999), or SCALESCOPE_SLURM_PORT.
CTLD_PORT=${SCALESCOPE_SLURM_PORT:-$((16800 + 2 * ($(printf '%s' "$DIR" | cksum | cut -d' ' -f1) % 1000)))}
SLURMD_PORT=$((CTLD_PORT + 1))
NODE=sscope1
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
  # The node as slurmd sees it (CPUs, memory), under our own node name.
  local hw
  hw=$(slurmd -C | head -1 | sed -e "s/^NodeName=[^ ]*/NodeName=$NODE NodeHostname=$(hostname) NodeAddr=127.0.0.1/" \
    -e 's/ RealMemory=[0-9]*//')
  cat >"$DIR/slurm.conf" <<EOF
ClusterName=scalescope-test
SlurmctldHost=$(hostname)(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
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
MinJobAge=600
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.txt
$hw State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
  [ -f "$DIR/munge/munge.key" ] || { dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none; chmod 400 "$DIR/munge/munge.key"; }
  # --force: the state directory sits under /tmp, which others may write to.
  munged --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/seed"
}

node_state() {
  [ -f "$DIR/slurm.conf" ] || return 0
  SLURM_CONF="$DIR/slurm.conf" timeout 5 sinfo -h -n "$NODE" -o %T 2>/dev/null || true
}

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stop_one() {  # pid file
  local pidfile=$1 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$pidfile"
}

stop() {
  stop_one "$DIR/slurmd.pid"
  stop_one "$DIR/slurmctld.pid"
  stop_one "$DIR/munge/munged.pid"
}

start() {
  install_if_missing
  [ "$(id -u)" = 0 ] || skip "the test cluster runs its daemons as root (SlurmUser=root)"
  if [ "$(node_state)" = idle ] || [ "$(node_state)" = mixed ] || [ "$(node_state)" = allocated ]; then
    say "already running ($DIR)"
    return 0
  fi
  stop
  for port in "$CTLD_PORT" "$SLURMD_PORT"; do
    port_taken "$port" && skip "port $port is taken by another program (set SCALESCOPE_SLURM_PORT to another even port)"
  done
  rm -rf "$DIR/state" "$DIR/spool"
  write_config
  start_munge || skip "munged does not start (see $DIR/log/munged.log)"
  export SLURM_CONF="$DIR/slurm.conf"
  slurmctld -i || skip "slurmctld does not start (see $DIR/log/slurmctld.log)"
  slurmd || skip "slurmd does not start (see $DIR/log/slurmd.log)"
  local state=""
  for _ in $(seq 300); do
    state=$(node_state)
    [ "$state" = idle ] && { say "up: node $NODE idle; export SLURM_CONF=$SLURM_CONF"; return 0; }
    sleep 0.1
  done
  say "the node did not become idle in 30 s (state '${state}'); logs in $DIR/log"
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
