#!/usr/bin/env bash
# The test command: install dependencies, build, run every test (doctest unit
# tests and the end-to-end suite) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
