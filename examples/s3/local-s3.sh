#!/bin/bash
# A local S3-compatible server, to try microbatch's s3:// inputs and outputs
# on one machine (s3rver, which checks request signatures as S3 does):
#   eval "$(local-s3.sh start)"  starts it on 127.0.0.1 with one bucket, "bkt",
#                                and prints the lines that point s3:// at it:
#                                export AWS_ENDPOINT_URL=… AWS_ACCESS_KEY_ID=…
#                                AWS_SECRET_ACCESS_KEY=… LOCAL_S3_DIR=…
#   eval "$(local-s3.sh stop)"   stops it, deletes its objects and prints the
#                                line that unsets those variables
#   local-s3.sh stop DIR         stops the server of DIR (LOCAL_S3_DIR)
# LOCAL_S3_PORT picks the port (default: a free one). Needs Node.js and npm:
# the first start installs s3rver (npm ci, the version package-lock.json
# pins) into ~/.cache/microbatch/local-s3 ($XDG_CACHE_HOME), unless
# node_modules/ is beside this script. The objects live in a new directory
# under $TMPDIR (default /tmp) until stop.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
bucket=bkt
key=S3RVER  # s3rver's own key pair: the key id is the secret

die() {
  echo "local-s3: $*" >&2
  exit 1
}

# Where s3rver is installed: beside this script (a checkout after `npm ci`),
# else in the user's cache, installed there on first use (this script's
# directory may be read-only: /usr/share/doc/microbatch/examples/s3).
modules() {
  if [ -d "$here/node_modules/@20minutes/s3rver" ]; then
    echo "$here/node_modules"
    return
  fi
  local cache=${XDG_CACHE_HOME:-$HOME/.cache}/microbatch/local-s3
  if ! cmp -s "$here/package-lock.json" "$cache/package-lock.json" || [ ! -d "$cache/node_modules/@20minutes/s3rver" ]; then
    command -v npm >/dev/null || die "npm is needed to install s3rver (Debian: apt-get install nodejs npm)"
    mkdir -p "$cache"
    cp "$here/package.json" "$here/package-lock.json" "$cache/"
    echo "local-s3: installing s3rver into $cache (npm ci)" >&2
    npm ci --prefix "$cache" --no-audit --no-fund --loglevel=error >&2
  fi
  echo "$cache/node_modules"
}

# Waits until the server says it listens ("ready URL"), or exits; prints the URL.
wait_ready() {
  local dir=$1 pid word url
  pid=$(<"$dir/server.pid")
  for ((tenths = 0; tenths < 600; tenths++)); do
    if read -r word url <"$dir/server.out" && [ "$word" = ready ]; then
      echo "$url"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$dir/server.log" >&2
  return 1
}

start() {
  command -v node >/dev/null || die "Node.js is needed (Debian: apt-get install nodejs npm)"
  local mods dir endpoint
  mods=$(modules)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/microbatch-local-s3.XXXXXX")
  mkdir "$dir/data"
  : >"$dir/server.out"
  # A session of its own: a Ctrl-C or a closed terminal later does not end it; stop does.
  NODE_PATH=$mods setsid node "$here/server.js" "${LOCAL_S3_PORT:-0}" "$dir/data" "$bucket" \
    </dev/null >"$dir/server.out" 2>"$dir/server.log" &
  echo $! >"$dir/server.pid"
  if ! endpoint=$(wait_ready "$dir"); then
    stop "$dir" >/dev/null
    die "the server did not start"
  fi
  echo "export AWS_ENDPOINT_URL=$endpoint AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$key LOCAL_S3_DIR=$dir"
  echo "local-s3: s3rver at $endpoint, bucket s3://$bucket/; stop it with: eval \"\$($0 stop)\"" >&2
}

# The pid of DIR's server if it still runs (a pid is checked against the
# command line it was started with: pids are reused).
server_pid() {
  local dir=$1 pid
  pid=$(<"$dir/server.pid")
  tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | grep -qxF "$dir/data" && echo "$pid"
}

stop() {
  local dir=${1:-${LOCAL_S3_DIR:-}} pid
  [ -n "$dir" ] || die "which server? give its directory, or set LOCAL_S3_DIR as start does"
  [ -f "$dir/server.pid" ] || die "$dir: not a directory of local-s3.sh start (already stopped?)"
  if pid=$(server_pid "$dir"); then
    kill "$pid"
    for ((tenths = 0; tenths < 100; tenths++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
  echo "unset AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY LOCAL_S3_DIR"
}

case ${1:-} in
  start) start ;;
  stop) stop "${2:-}" ;;
  *)
    echo "usage: eval \"\$($0 start)\"; eval \"\$($0 stop)\"" >&2
    exit 2
    ;;
esac
