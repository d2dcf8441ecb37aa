"""The `diff` workload of bench/bench.py: `microbatch diff` of a file and its
copy (so every value is read: the case that takes longest) against `cmp` of
the same bytes, `h5diff` and the h5py + numpy script bench/h5py_diff.py, for
the contiguous, gzip-chunked and small workloads: time and peak RSS."""
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ("contiguous", "gzip-chunked", "small")


def bench_diff(work, binary, make, scale, timed, runs):
    for name in WORKLOADS:
        src, copy = os.path.join(work, f"{name}.h5"), os.path.join(work, f"{name}-same.h5")
        if not os.path.exists(src):
            make(name, src, scale)
        shutil.copyfile(src, copy)
        rows = {
            "microbatch diff": timed([binary, "diff", src, copy, "-q"], [], runs),
            "diff --storage": timed([binary, "diff", "--storage", src, copy, "-q"], [], runs),
            "cmp": timed(["cmp", src, copy], [], runs),
            "h5diff": timed(["h5diff", src, copy], [], min(runs, 2)),
            "h5py + numpy": timed([sys.executable, os.path.join(HERE, "h5py_diff.py"), src, copy], [], min(runs, 2)),
        }
        os.remove(copy)
        print(f"\ndiff {name}: {os.path.getsize(src) / 2**20:.0f} MiB, against its copy")
        for k, (secs, rss) in rows.items():
            print(f"  {k:18s} {secs:8.2f} s  {rss:8.1f} MiB peak RSS")
        mine = rows["microbatch diff"][0]
        cmp = max(rows["cmp"][0], 0.01)
        print(f"  {mine / cmp:.2f}x the time of cmp, {rows['h5diff'][0] / max(mine, 0.01):.1f}x faster than h5diff, "
              f"{rows['h5py + numpy'][0] / max(mine, 0.01):.1f}x faster than h5py + numpy")
