#!/usr/bin/env bash
# Builds the Debian package, installs it with apt-get, runs the installed
# microbatch from PATH (version, a split and merge of sample_data/ judged by
# h5diff, the man page, bash completion), and removes it again. Needs root
# (or sudo): scripts/test.sh runs it as its package step.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
scripts/package.sh >/dev/null
deb=$(ls "$PWD"/build/microbatch_*.deb)
work=$(mktemp -d)
cleanup() {
  DEBIAN_FRONTEND=noninteractive $sudo apt-get remove -y -qq microbatch >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$deb" >/dev/null
cd "$work"
set -x
[ "$(command -v microbatch)" = /usr/bin/microbatch ]
microbatch --version
microbatch split "$OLDPWD/sample_data/batch.h5" -s "$OLDPWD/sample_data/batch_spec.json" -n 4 -o mb -q
microbatch merge mb -o merged.h5 -q
/usr/bin/python3 "$OLDPWD/tests/e2e/h5compare.py" "$OLDPWD/sample_data/batch.h5" merged.h5  # h5diff -v, judged strictly
MANPAGER=cat MANWIDTH=80 man microbatch | grep -q "cut HDF5 batches into microbatches"
MANPAGER=cat MANWIDTH=80 man microbatch | grep -q -- "--micro-batch-size"
bash -c 'source /usr/share/bash-completion/completions/microbatch
  COMP_WORDS=(microbatch merge --vir); COMP_CWORD=2; _microbatch; [ "${COMPREPLY[*]}" = --virtual ]'
[ -f /usr/share/zsh/vendor-completions/_microbatch ] && [ -f /usr/share/fish/vendor_completions.d/microbatch.fish ]
[ -f /usr/share/doc/microbatch/README.md ] && [ -f /usr/share/doc/microbatch/docs/guide.md ]
set +x
cd "$OLDPWD"
cleanup
trap - EXIT
hash -r  # bash remembers where it found microbatch; ask the system, not the cache
if [ -e /usr/bin/microbatch ] || dpkg-query -W -f='${Status}' microbatch 2>/dev/null | grep -q "ok installed"; then
  echo "package: still installed after removal" >&2
  exit 1
fi
echo "package: built, installed, ran, removed ($(basename "$deb"))"
