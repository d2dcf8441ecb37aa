#!/usr/bin/env bash
# Builds the two Debian packages, installs both with apt-get, runs them from
# PATH (version, a split and merge of sample_data/ by microbatch and by
# `mpirun --oversubscribe -np 2 microbatch-mpi`, each judged by h5diff; the man pages, bash
# completion), removes them again and checks that nothing of theirs is left.
# Needs root (or sudo): scripts/test.sh runs it as its package step.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
version=$(sed -n 's/^project(microbatch VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
work=$(mktemp -d)
files=$(mktemp)  # what the packages installed, checked once they are removed
cleanup() {
  DEBIAN_FRONTEND=noninteractive $sudo apt-get remove -y -qq microbatch microbatch-mpi >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap 'cleanup; rm -f "$files"' EXIT
scripts/package.sh --install >/dev/null  # the README's install line
dpkg-query -L microbatch microbatch-mpi | sort -u >"$files"
src=$PWD
cd "$work"
set -x
[ "$(command -v microbatch)" = /usr/bin/microbatch ]
[ "$(command -v microbatch-mpi)" = /usr/bin/microbatch-mpi ]
printed=$(microbatch --version)
[[ $printed == "microbatch $version (HDF5 "* ]]
microbatch split "$src/sample_data/batch.h5" -s "$src/sample_data/batch_spec.json" -n 4 -o mb -q
microbatch merge mb -o merged.h5 -q
/usr/bin/python3 "$src/tests/e2e/h5compare.py" "$src/sample_data/batch.h5" merged.h5  # h5diff -v, judged strictly
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun --oversubscribe -np 2 microbatch-mpi split "$src/sample_data/batch.h5" -s "$src/sample_data/batch_spec.json" -n 4 -o mpi -q
mpirun --oversubscribe -np 2 microbatch-mpi merge mpi -o mpi.h5 -q
/usr/bin/python3 "$src/tests/e2e/h5compare.py" "$src/sample_data/batch.h5" mpi.h5
cmp mb/manifest.json mpi/manifest.json  # the team's split is the one-process split
page=$(MANPAGER=cat MANWIDTH=80 man microbatch)  # whole, so that grep -q's early exit cannot fail man
grep -q "cut HDF5 batches into microbatches" <<<"$page"
grep -q -- "--micro-batch-size" <<<"$page"
page=$(MANPAGER=cat MANWIDTH=80 man microbatch-mpi)
grep -qE "microbatch-mpi +- +microbatch split and merge as the ranks" <<<"$page"
grep -q "microbatch $version" <<<"$page"
bash -c 'source /usr/share/bash-completion/completions/microbatch
  COMP_WORDS=(microbatch merge --vir); COMP_CWORD=2; _microbatch; [ "${COMPREPLY[*]}" = --virtual ]'
# One test per line: under set -e, the left side of `A && B` failing does not stop the script.
test -f /usr/share/zsh/vendor-completions/_microbatch
test -f /usr/share/fish/vendor_completions.d/microbatch.fish
test -f /usr/share/doc/microbatch/README.md
test -f /usr/share/doc/microbatch/docs/guide.md
test -f /usr/share/doc/microbatch/docs/schema/error.schema.json
test -x /usr/share/doc/microbatch/examples/slurm/split.sbatch
test -x /usr/share/doc/microbatch/examples/slurm/local-slurm.sh
test -x /usr/share/doc/microbatch/examples/s3/local-s3.sh
for p in microbatch microbatch-mpi; do
  test -f /usr/share/doc/$p/copyright
  test -f /usr/share/doc/$p/LICENSE
done
set +x
cd "$src"
cleanup
hash -r  # bash remembers where it found microbatch; ask the system, not the cache
for p in microbatch microbatch-mpi; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    echo "package: $p still installed after removal" >&2
    exit 1
  fi
done
# Every file the packages installed is gone, and their own directories (those
# Debian shares, such as /usr/share/man/man1, stay).
left=$(while read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "$f"; done <"$files" || true)
for d in /usr/share/doc/microbatch /usr/share/doc/microbatch-mpi; do [ -e "$d" ] && left+=" $d"; done
if [ -n "$left" ]; then
  echo "package: left after removal: $left" >&2
  exit 1
fi
echo "package: built, installed, ran, removed ($(cd build && echo microbatch_*.deb microbatch-mpi_*.deb))"
