#!/usr/bin/env bash
# Line and branch coverage of the whole suite, per room (core/, specs/, io/,
# cli/), measured with gcovr from Debian:
#   1. a Debug build with MB_COVERAGE (--coverage) into build-cov/
#      (microbatch and microbatch-mpi, so the MPI team's code counts too;
#      forked helpers and the stop handler write their counters too);
#   2. every test through ctest (unit, end-to-end, MPI, Slurm, S3, HTTP);
#   3. gcovr over the sources, branches the compiler adds for exceptions and
#      branches on lines without code left out (they are not decisions of
#      ours), into build-cov/coverage/: summary.json, a text report per
#      file (coverage.txt) and per room (rooms.txt, also printed).
# `scripts/coverage.sh --report` skips 1 and 2 and reports what build-cov/
# already counted. The suite's own failures are reported but do not stop the
# report: coverage of a failing run is still worth reading, and ctest's exit
# status is this script's.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-cov/coverage
status=0
if [ "${1:-}" != "--report" ]; then
  scripts/install-deps.sh test
  cmake -S . -B build-cov -DCMAKE_BUILD_TYPE=Debug -DBUILD_TESTING=ON -DMB_MPI=ON -DMB_COVERAGE=ON >/dev/null
  cmake --build build-cov -j"$(nproc)"
  find build-cov -name '*.gcda' -delete
  ctest --test-dir build-cov --output-on-failure -j"$(nproc)" || status=$?
fi
mkdir -p "$out"
gcovr -r . build-cov -j"$(nproc)" \
  --filter 'core/' --filter 'specs/' --filter 'io/' --filter 'cli/' \
  --exclude-throw-branches --exclude-unreachable-branches \
  --json-summary "$out/summary.json" --json-summary-pretty --txt "$out/coverage.txt" >/dev/null
python3 scripts/coverage_rooms.py "$out/summary.json" | tee "$out/rooms.txt"
exit "$status"
