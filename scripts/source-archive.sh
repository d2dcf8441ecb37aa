#!/usr/bin/env bash
# Writes DIR/microbatch-VERSION.tar.gz (DIR: build/ unless given), the source
# of the commit checked out: its tracked files under microbatch-VERSION/,
# nothing built or downloaded. Unpacked, it builds and tests with the README's
# two commands, as a checkout does.
#   scripts/source-archive.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(git show HEAD:CMakeLists.txt | sed -n 's/^project(microbatch VERSION \([0-9.]*\).*/\1/p')
dir=${1:-build}
mkdir -p "$dir"
out=$dir/microbatch-$version.tar.gz
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "source-archive: uncommitted changes are not in the archive (it holds HEAD)" >&2
fi
git archive --format=tar.gz --prefix="microbatch-$version/" -o "$out" HEAD
echo "$out"
