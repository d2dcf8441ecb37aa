#!/usr/bin/env bash
# Builds the Debian package: build/microbatch_VERSION_ARCH.deb.
#   sudo apt-get install ./build/microbatch_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
(cd build && cpack -G DEB >/dev/null)
ls build/microbatch_*.deb
