#!/usr/bin/env bash
# Runs the generated crossings (tests/e2e/test_crossings.py and, when present,
# tests/e2e/test_crossings_runs.py) in their long profile (MB_CROSSINGS=long)
# again and again until H hours have passed. Every failure Hypothesis finds is
# kept, shrunk, in tests/e2e/crossings/examples (the example database); commit
# that directory and CI (the ci profile, which reads it) replays them.
#   scripts/crossings.sh --hours 2          # the binary: build/microbatch, or $MICROBATCH
# Each round's output goes to $MB_CROSSINGS_LOG (default build/crossings.log),
# appended; the script exits 1 when any round failed.
set -euo pipefail
cd "$(dirname "$0")/.."
hours=1
while [ $# -gt 0 ]; do
  case "$1" in
    --hours) hours="$2"; shift 2 ;;
    --hours=*) hours="${1#--hours=}"; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "crossings.sh: unknown argument $1 (usage: --hours H)" >&2; exit 2 ;;
  esac
done
root=$PWD
export MICROBATCH=${MICROBATCH:-$root/build/microbatch}
export MICROBATCH_MPI=${MICROBATCH_MPI:-$root/build/microbatch-mpi}
export MB_CROSSINGS=long
log=${MB_CROSSINGS_LOG:-$root/build/crossings.log}
mkdir -p "$(dirname "$log")"
files=(test_crossings.py)
[ -f tests/e2e/test_crossings_runs.py ] && files+=(test_crossings_runs.py)
deadline=$(( $(date +%s) + $(python3 -c "print(int(float('$hours') * 3600))") ))
failed=0
round=0
while [ "$(date +%s)" -lt "$deadline" ]; do
  round=$((round + 1))
  left=$(( deadline - $(date +%s) ))
  echo "crossings round $round (${left}s left): ${files[*]}" | tee -a "$log"
  # the last round is cut at the deadline; what it found so far is already in the database
  status=0
  (cd tests/e2e && timeout --signal=INT "$left" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
      --hypothesis-show-statistics "${files[@]}") >>"$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 124 ] && [ "$(date +%s)" -lt "$deadline" ]; then
    failed=1
    echo "round $round failed (exit $status, see $log)"
  fi
done
echo "crossings: $round rounds; database tests/e2e/crossings/examples; log $log"
exit "$failed"
