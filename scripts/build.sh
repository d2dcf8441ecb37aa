#!/usr/bin/env bash
# Configures and builds into build/ (Release with debug info). Arguments go
# to cmake's configure step, e.g. scripts/build.sh -DMB_BENCH=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@")
grep "microbatch-mpi:" <<<"$log" || true  # which binaries this build makes
cmake --build build -j"$(nproc)"
