#!/usr/bin/env bash
# Builds the Debian packages, without the tests:
#   build/microbatch_VERSION_ARCH.deb       microbatch, its man page, completions and manual
#   build/microbatch-mpi_VERSION_ARCH.deb   microbatch-mpi (depends on OpenMPI's runtime)
# then: sudo apt-get install ./build/microbatch_*.deb ./build/microbatch-mpi_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh package
scripts/build.sh -DBUILD_TESTING=OFF -DMB_MPI=ON -DMB_FUZZ=OFF -DMB_SANITIZE=OFF
(cd build && cpack -G DEB >/dev/null)
ls build/microbatch_*.deb build/microbatch-mpi_*.deb
