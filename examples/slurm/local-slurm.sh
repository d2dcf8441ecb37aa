#!/bin/bash
# A one-node Slurm cluster of its own, to try the scripts of this directory
# on one machine: munged, slurmctld and slurmd, with every file they use
# (configuration, munge key and socket, state, logs) in one new directory
# under $TMPDIR (default /tmp). Nothing of the machine's own munge or Slurm
# setup is read or changed.
#   eval "$(local-slurm.sh start)"  starts it and prints the line that points
#                                   sbatch, srun, squeue... at it:
#                                   export SLURM_CONF=DIR/slurm.conf
#   eval "$(local-slurm.sh stop)"   cancels its jobs, stops the daemons,
#                                   removes DIR and prints `unset SLURM_CONF`
#   local-slurm.sh stop DIR         stops the cluster of DIR
# Needs root (slurmd starts jobs as their user) and Debian's slurm-wlm and
# munge; no systemd. The node offers LOCAL_SLURM_CPUS CPUs (default 4,
# whatever the machine has, so that a few small tasks run at once).
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
marker=local-slurm.pids  # in DIR: the daemons' pids, and proof that DIR is one of ours

die() {
  echo "local-slurm: $*" >&2
  exit 1
}

# A TCP port nothing listens on right now (the chance that another program
# takes it before the daemon does is small enough for a try-out).
free_port() {
  local port
  for _ in {1..100}; do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
  die "no free port found"
}

configure() {
  local dir=$1 host=$2
  cat >"$dir/slurm.conf" <<EOF
# Written by $here/local-slurm.sh: a one-node cluster of its own.
ClusterName=local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/run/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
# Schedule every second, so that a dependent job starts soon after the one it waits for.
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
# A job whose dependency can no longer be satisfied is cancelled, not left
# pending: \`sbatch --wait\` on it returns.
DependencyParameters=kill_invalid_depend
KillWait=2
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=${LOCAL_SLURM_CPUS:-4} State=UNKNOWN
PartitionName=local Nodes=$host Default=YES OverSubscribe=YES MaxTime=INFINITE State=UP
EOF
  # slurmd of Slurm 22.05 needs a cgroup plugin even with proctrack/linuxproc and task/none.
  printf 'CgroupPlugin=cgroup/v1\nIgnoreSystemd=yes\nCgroupAutomount=no\n' >"$dir/cgroup.conf"
}

# Starts a daemon in the foreground of a session of its own (a Ctrl-C or a
# closed terminal later does not end it; stop does) and notes its pid.
spawn() {
  local dir=$1 name=$2
  shift 2
  setsid "$@" </dev/null >"$dir/log/$name.out" 2>&1 &
  echo "$name $!" >>"$dir/$marker"
}

# Polls until COMMAND succeeds, while each daemon started is still running,
# for a minute at most:  wait_for DIR WHAT COMMAND [ARG...]
wait_for() {
  local dir=$1 what=$2 name pid
  shift 2
  for ((tenths = 0; tenths < 600; tenths++)); do
    "$@" && return 0
    while read -r name pid; do
      kill -0 "$pid" 2>/dev/null || { tail -n 20 "$dir"/log/* >&2; die "$name exited before $what"; }
    done <"$dir/$marker"
    sleep 0.1
  done
  tail -n 20 "$dir"/log/* >&2
  die "not $what after 60 s"
}

node_idle() {
  [ "$(sinfo -h -n "$1" -o %T 2>/dev/null)" = idle ]
}

start() {
  [ "$(id -u)" -eq 0 ] || die "needs root (slurmd starts jobs as their user)"
  local exe
  for exe in /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd; do
    [ -x "$exe" ] || die "$exe is missing (Debian: apt-get install slurm-wlm munge)"
  done
  # The cluster's daemons and clients must not see an outer job's or launcher's variables.
  unset "${!SLURM_@}" "${!SBATCH_@}" "${!SRUN_@}" "${!SALLOC_@}" "${!PMI@}" "${!PMIX_@}" "${!OMPI_@}"
  local dir host
  dir=$(mktemp -d "${TMPDIR:-/tmp}/microbatch-local-slurm.XXXXXX")
  chmod 755 "$dir"  # munged wants every directory above its socket searchable by all
  mkdir -m 755 "$dir/run" "$dir/state" "$dir/spool" "$dir/log"
  mkdir -m 700 "$dir/munge"
  : >"$dir/$marker"
  host=$(hostname -s)
  configure "$dir" "$host"
  export SLURM_CONF=$dir/slurm.conf
  trap 'stop "$dir" >/dev/null' EXIT  # a start that fails leaves nothing running
  head -c 1024 /dev/urandom >"$dir/munge/munge.key"
  chmod 600 "$dir/munge/munge.key"
  spawn "$dir" munged /usr/sbin/munged --foreground --socket="$dir/run/munge.socket" \
    --key-file="$dir/munge/munge.key" --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed"
  wait_for "$dir" "munged listens" test -S "$dir/run/munge.socket"
  spawn "$dir" slurmctld /usr/sbin/slurmctld -D -f "$SLURM_CONF"
  spawn "$dir" slurmd /usr/sbin/slurmd -D -f "$SLURM_CONF"
  wait_for "$dir" "the node is idle" node_idle "$host"
  trap - EXIT
  echo "export SLURM_CONF=$SLURM_CONF"
  echo "local-slurm: node $host idle, partition local; stop it with: eval \"\$($0 stop)\"" >&2
}

# The pid of daemon `name` of DIR if it still runs (checked against the
# command line it was started with: pids are reused).
daemon_pid() {
  local dir=$1 name=$2 pid
  pid=$(awk -v n="$name" '$1 == n {print $2}' "$dir/$marker")
  [ -n "$pid" ] && tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$dir/" && echo "$pid"
}

# Ends process `pid`: TERM, then KILL after 10 s.
end() {
  local pid=$1
  kill "$pid" 2>/dev/null || return 0
  for ((tenths = 0; tenths < 100; tenths++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

stop() {
  local dir=${1:-} name pid jobs
  [ -n "$dir" ] || { [ -n "${SLURM_CONF:-}" ] && dir=$(dirname "$SLURM_CONF"); }
  [ -n "$dir" ] || die "which cluster? give its directory, or set SLURM_CONF as start does"
  [ -f "$dir/$marker" ] || die "$dir: not a directory of local-slurm.sh start (already stopped?)"
  export SLURM_CONF=$dir/slurm.conf
  if daemon_pid "$dir" slurmctld >/dev/null && daemon_pid "$dir" slurmd >/dev/null; then
    # Every job of this cluster, and then the time their steps take to end.
    mapfile -t jobs < <(squeue -h -o %A 2>/dev/null)
    [ ${#jobs[@]} -eq 0 ] || scancel --full --quiet "${jobs[@]}" || true
    for ((tenths = 0; tenths < 150; tenths++)); do
      [ -z "$(squeue -h -o %A 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  for name in slurmd slurmctld munged; do
    if pid=$(daemon_pid "$dir" "$name"); then end "$pid"; fi
  done
  rm -rf "$dir"
  echo "unset SLURM_CONF"
}

case ${1:-} in
  start) start ;;
  stop) stop "${2:-}" ;;
  *)
    echo "usage: eval \"\$($0 start)\"; eval \"\$($0 stop)\"" >&2
    exit 2
    ;;
esac
