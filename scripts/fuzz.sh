#!/usr/bin/env bash
# Runs the libFuzzer targets for a while (default 30 s each) on the sanitizer
# build (scripts/test.sh makes it).
#   fuzz_spec:   any crash or property failure fails the run.
#   fuzz_h5read: fork mode; crashes inside libhdf5 are counted, a crash in our
#                code fails the run (tests/fuzz/triage.py).
# tests/fuzz/corpus holds a small seed set (read, never written). The grown
# corpus lives outside git, in MB_FUZZ_CORPUS (default
# ~/.cache/microbatch/fuzz-corpus): every run starts from it and the seeds and
# adds what it finds there. `scripts/fuzz.sh --minimize` shrinks it to the
# inputs that keep its coverage. A crash worth keeping becomes a named file in
# tests/data/corrupt/ with a test of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
fuzz=build-san/tests/fuzz
work=${MB_FUZZ_CORPUS:-$HOME/.cache/microbatch/fuzz-corpus}
mkdir -p "$work/spec" "$work/h5" "$work/artifacts"
rm -f "$work/artifacts"/*
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1

echo "fuzz_spec: ${seconds}s"
"$fuzz/fuzz_spec" -max_total_time="$seconds" -max_len=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/spec" tests/fuzz/corpus/spec 2>&1 |
  grep -E "stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY" || true
if ls "$work/artifacts"/crash-* >/dev/null 2>&1; then
  echo "fuzz_spec found a failure:"; ls "$work/artifacts"; exit 1
fi

echo "fuzz_h5read: ${seconds}s, fork mode"
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:replace_intrin=0 \
  "$fuzz/fuzz_h5read" -fork=2 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -timeout=10 \
  -rss_limit_mb=2048 -max_total_time="$seconds" -artifact_prefix="$work/artifacts/" \
  "$work/h5" tests/fuzz/corpus/h5 > "$work/h5read.log" 2>&1 || true
grep -E "^#[0-9]+: cov" "$work/h5read.log" | tail -1
tests/fuzz/triage.py "$fuzz/fuzz_h5read" "$work/artifacts"

if [ "${1:-}" = "--minimize" ]; then
  for pair in spec:fuzz_spec h5:fuzz_h5read; do
    dir=$work/${pair%%:*}
    rm -rf "$dir.min" && mkdir "$dir.min"
    "$fuzz/${pair#*:}" -merge=1 "$dir.min" "$dir" 2>/dev/null
    rm -rf "$dir" && mv "$dir.min" "$dir"
  done
fi
