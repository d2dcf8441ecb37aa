#!/usr/bin/python3
"""Sorts fuzz_h5read crash artifacts into the library's and ours.

libhdf5 1.10.8 crashes on some corrupt files; the CLI contains those (io/run/guard)
and they are not ours to fix. A crash whose stack holds no libhdf5 frame is
ours: print it and exit 1.

    tests/fuzz/triage.py FUZZ_BINARY ARTIFACT_DIR
"""
import collections
import os
import re
import subprocess
import sys

binary, artifacts = sys.argv[1], sys.argv[2]
# Allocations of absurd sizes (libhdf5 reads sizes from corrupt metadata)
# return NULL, as they fail in the real CLI: no libFuzzer malloc limit (it
# would report them as OOM without a stack), ASan caps them instead. The
# library's own overruns are what the crash guard contains.
env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:replace_intrin=0:replace_str=0:intercept_strlen=0:"
           "intercept_strchr=0:intercept_strndup=0:allocator_may_return_null=1:max_allocation_size_mb=4096")
counts = collections.Counter()
ours = []
for name in sorted(os.listdir(artifacts)):
    if not name.startswith(("crash-", "oom-", "timeout-")):
        continue
    path = os.path.join(artifacts, name)
    try:
        proc = subprocess.run([binary, "-timeout=20", "-rss_limit_mb=0", "-malloc_limit_mb=0", path],
                              capture_output=True, text=True, env=env, timeout=120)
    except subprocess.TimeoutExpired:
        counts["hangs on its own (library loop)"] += 1
        continue
    if proc.returncode == 0:
        counts["only a fork-mode allocation limit"] += 1
        continue
    frames = re.findall(r"#\d+ 0x[0-9a-f]+ in (\S+) (\S*)", proc.stderr)
    if any("libhdf5" in loc or fn.startswith("H5") for fn, loc in frames):
        counts["inside libhdf5"] += 1
    else:
        counts["OURS"] += 1
        ours.append((name, proc.stderr[-3000:]))
print("fuzz_h5read artifacts:", dict(counts))
for name, err in ours:
    print(f"=== {name}\n{err}")
sys.exit(1 if ours else 0)
