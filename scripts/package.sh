#!/usr/bin/env bash
# Builds the Debian packages, without the tests:
#   build/microbatch_VERSION_ARCH.deb       microbatch, its man page, completions and manual
#   build/microbatch-mpi_VERSION_ARCH.deb   microbatch-mpi (depends on OpenMPI's runtime)
# `scripts/package.sh --install` then installs both with apt-get (through sudo
# when not run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "" | --install) ;;
  *) echo "usage: scripts/package.sh [--install]" >&2; exit 2 ;;
esac
scripts/install-deps.sh package
scripts/build.sh -DBUILD_TESTING=OFF -DMB_MPI=ON -DMB_FUZZ=OFF -DMB_SANITIZE=OFF
(cd build && cpack -G DEB >/dev/null)
version=$(sed -n 's/^project(microbatch VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
debs=("$PWD"/build/microbatch_"$version"_*.deb "$PWD"/build/microbatch-mpi_"$version"_*.deb)  # not an older build's
ls "${debs[@]}"
if [ "${1:-}" = --install ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${debs[@]}" >/dev/null
  echo "installed: $(command -v microbatch) $(command -v microbatch-mpi)"
fi
