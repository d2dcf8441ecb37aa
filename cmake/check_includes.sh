#!/bin/sh
# The layering of the sources, checked: a file includes headers only of its
# own layer or of layers listed before it (docs/design.md, "Directories").
#
#   check_includes.sh ROOT STAMP LAYER...
#
# LAYERs are folders under ROOT, lowest first (CMakeLists.txt passes
# MB_LAYERS: core specs io/run io/h5 ... cli). Every file under a layer, and
# every file under a layer's parent folder (io/), is read; each
# `#include "..."` or `#include <...>` line is resolved as the compiler
# resolves it (a quoted name beside the including file first, then from
# ROOT) and refused when it names a layer listed after the file's own, or a
# folder of io/ that is not a layer. Each refusal is one line
# "FILE:LINE: ..."; the script then fails. On success it touches STAMP
# ("-": none).
set -eu

if [ $# -lt 3 ]; then
  echo "usage: check_includes.sh ROOT STAMP LAYER..." >&2
  exit 2
fi
root=$1
stamp=$2
shift 2
[ "$stamp" = - ] || rm -f "$stamp"
cd "$root"

# The folders read: every layer, and every layer's parent (so that a new
# folder of io/ that is not yet a layer is noticed).
dirs=
for layer in "$@"; do
  case $layer in
    */*) dirs="$dirs $layer ${layer%/*}" ;;
    *) dirs="$dirs $layer" ;;
  esac
done
existing=
for d in $dirs; do
  [ -d "$d" ] && existing="$existing $d"
done
[ -n "$existing" ] || { echo "check_includes.sh: none of the layers exists under $root" >&2; exit 2; }

# shellcheck disable=SC2086  # $existing: folder names without spaces, split on purpose
find $existing -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' -o -name '*.ipp' -o -name '*.inc' \) |
  LC_ALL=C sort -u |
  LC_ALL=C awk -v layers="$*" '
    BEGIN {
      n = split(layers, layer, " ")
      for (i = 1; i <= n; i++) {
        rank[layer[i]] = i
        if (index(layer[i], "/")) { p = layer[i]; sub(/\/[^\/]*$/, "", p); parent[p] = 1 }
      }
      order = layer[1]
      for (i = 2; i <= n; i++) order = order " < " layer[i]
      failed = 0
    }
    # The layer a path lies in (the longest layer it is under), "" for none.
    function layer_of(path,    i, best) {
      best = ""
      for (i = 1; i <= n; i++)
        if (index(path, layer[i] "/") == 1 && length(layer[i]) > length(best)) best = layer[i]
      return best
    }
    # The folder of a layer parent (io) a path is under without being in a layer, or "".
    function stray_folder(path,    p, rest) {
      for (p in parent)
        if (index(path, p "/") == 1) {
          rest = substr(path, length(p) + 2)
          if (!index(rest, "/")) return p
          sub(/\/.*/, "", rest)
          return p "/" rest
        }
      return ""
    }
    # "a/./b/../c" -> "a/c"; "" when it climbs out of ROOT.
    function normalize(path,    parts, k, i, out, m) {
      k = split(path, parts, "/")
      m = 0
      for (i = 1; i <= k; i++) {
        if (parts[i] == "" || parts[i] == ".") continue
        if (parts[i] == "..") { if (m == 0) return ""; m--; continue }
        out[++m] = parts[i]
      }
      path = ""
      for (i = 1; i <= m; i++) path = path (i > 1 ? "/" : "") out[i]
      return path
    }
    function exists(path,    line, r) {
      r = (getline line < path)
      if (r >= 0) close(path)
      return r >= 0
    }
    function refuse(where, what) {
      print where ": " what
      failed = 1
    }
    {
      file = $0
      own = layer_of(file)
      if (own == "") {
        stray = stray_folder(file)
        if (stray in parent) refuse(file ":1", "directly in " stray "/, whose files all belong in its layers (" order ")")
        else refuse(file ":1", "in " stray "/, which is not a layer: list it in MB_LAYERS (CMakeLists.txt) in its place in " order)
        next
      }
      dir = file; sub(/\/[^\/]*$/, "", dir)
      line_no = 0
      while ((r = (getline text < file)) > 0) {
        line_no++
        if (text !~ /^[ \t]*#[ \t]*include[ \t]*["<]/) continue
        name = text
        sub(/^[ \t]*#[ \t]*include[ \t]*/, "", name)
        quoted = substr(name, 1, 1) == "\""
        name = substr(name, 2)
        if (quoted) sub(/".*/, "", name)
        else sub(/>.*/, "", name)
        target = normalize(name)
        if (quoted) {  # beside the including file first, as the compiler looks
          beside = normalize(dir "/" name)
          if (beside != "" && exists(beside)) target = beside
        }
        if (target == "") continue
        to = layer_of(target)
        if (to == "") {
          stray = stray_folder(target)
          if (stray != "")
            refuse(file ":" line_no, "includes " target ", but " stray "/ is not a layer (MB_LAYERS in CMakeLists.txt: " order ")")
          continue
        }
        if (rank[to] > rank[own])
          refuse(file ":" line_no, "includes " target ", but " own " may include only itself and the layers before it (" order "; docs/design.md)")
      }
      if (r < 0) refuse(file, "cannot be read")
      close(file)
    }
    END { exit failed }
  ' >&2 || {
    echo "check_includes.sh: includes against the layering (above)" >&2
    exit 1
  }

[ "$stamp" = - ] || : > "$stamp"
