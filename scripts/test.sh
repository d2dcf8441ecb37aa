#!/usr/bin/env bash
# The test command: install dependencies, then
#   1. build (gcc, RelWithDebInfo; microbatch and microbatch-mpi: -DMB_MPI=ON,
#      so that a build without MPI fails here instead of skipping) and run every
#      test through ctest: doctest unit tests and the end-to-end suite, the
#      MPI (mpirun) and Slurm (a one-node cluster) tests included;
#   2. build again without MPI (-DMB_MPI=OFF: the build a machine without MPI
#      gets) with clang-14 + AddressSanitizer + UndefinedBehaviorSanitizer
#      (and the libFuzzer targets) and run the whole suite on that binary;
#   3. fuzz each target for FUZZ_SECONDS (default 30) from its seeds and the grown
#      corpus kept outside git (scripts/fuzz.sh);
#   4. build the two Debian packages, install both, run them from PATH, remove
#      them (scripts/test-package.sh; needs root or sudo).
# `scripts/test.sh --quick` stops after step 1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
scripts/build.sh -DBUILD_TESTING=ON -DMB_MPI=ON
ctest --test-dir build --output-on-failure -j"$(nproc)"
[ "${1:-}" = "--quick" ] && exit 0

echo "== sanitizer build (clang-14, ASan + UBSan)"
# -O1 and line tables only, as the sanitizers' docs advise: reports keep
# their file:line stacks, and the build takes 7 minutes instead of 9.
SAN_FLAGS="-O1 -gline-tables-only -DNDEBUG"
CC=clang-14 CXX=clang++-14 cmake -S . -B build-san -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMB_SANITIZE=ON -DMB_FUZZ=ON -DMB_BENCH=ON \
  -DMB_MPI=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$SAN_FLAGS" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$SAN_FLAGS" \
  >/dev/null
cmake --build build-san -j"$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:exitcode=99 UBSAN_OPTIONS=print_stacktrace=1:exitcode=98
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
ctest --test-dir build-san --output-on-failure -j"$(nproc)"

echo "== fuzzing"
scripts/fuzz.sh

echo "== package"
scripts/test-package.sh
