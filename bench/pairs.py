"""microbatch against `cp` of the same bytes as users meet it (bench/bench.py's main workloads): a split into a
new directory and a rerun with --force over the earlier split, a merge into a new file and a rerun with --force
over the earlier one, against `cp` into a new file and `cp` over an existing copy. Each pair runs alternately
(microbatch, then cp) `runs` times; the table gives the medians and the median of the ratios, on a warm page
cache (outputs removed, dirty pages written back, outside the timing) and, where the bench may drop the page
cache (root), on a cold one (dropped before each command)."""
import os
import statistics
import subprocess

DROP = "/proc/sys/vm/drop_caches"


def can_drop_caches():
    return os.access(DROP, os.W_OK)


def drop_caches():
    os.sync()
    with open(DROP, "w") as f:
        f.write("3\n")


def once(cmd, prepare, cold):
    """Seconds and peak RSS (MiB) of one run of `cmd`, `prepare()` run first, outside the timing."""
    prepare()
    os.sync()
    if cold:
        drop_caches()
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{out.stderr}")
    secs, kb = out.stderr.strip().splitlines()[-1].split()
    return max(float(secs), 0.01), int(kb) / 1024  # /usr/bin/time resolves 10 ms


def paired(mine, theirs, runs, cold):
    """Medians of `runs` alternated runs of two (cmd, prepare) pairs, and the median of their ratios."""
    a, b = [], []
    for _ in range(runs):
        a.append(once(*mine, cold))
        b.append(once(*theirs, cold))
    ratio = statistics.median(x[0] / y[0] for x, y in zip(a, b))
    return statistics.median(x[0] for x in a), max(x[1] for x in a), statistics.median(y[0] for y in b), ratio


def bench_pairs(binary, src, work, runs, jobs, clean):
    mbdir, merged = os.path.join(work, "pairs-mb"), os.path.join(work, "pairs-merged.h5")
    copy = os.path.join(work, "pairs-copy.h5")
    split = [binary, "split", src, "-n", "8", "-o", mbdir, "-q", "-j", str(jobs)]
    merge = [binary, "merge", mbdir, "-o", merged, "-q"]
    cp = ["cp", src, copy]

    def ensure(cmd, output):  # the output of an earlier run, for a rerun to replace
        return lambda: os.path.exists(output) or subprocess.run(cmd, check=True, capture_output=True)

    fresh_split, fresh_copy, fresh_merge = (lambda: clean(mbdir)), (lambda: clean(copy)), (lambda: clean(merged))
    cases = [
        ("split, new directory", (split, fresh_split), (cp, fresh_copy), "cp, new file"),
        ("split --force, over a split", (split + ["--force"], ensure(split, mbdir)), (cp, ensure(cp, copy)),
         "cp over a copy"),
        ("merge, new file", (merge, fresh_merge), (cp, fresh_copy), "cp, new file"),
        ("merge --force, over a merge", (merge + ["--force"], ensure(merge, merged)), (cp, ensure(cp, copy)),
         "cp over a copy"),
    ]
    caches = ["warm", "cold"] if can_drop_caches() else ["warm"]
    subprocess.run(split, check=True, capture_output=True)  # merge's input
    print(f"  against cp, medians of {runs} alternated pairs:")
    for cache in caches:
        for label, mine, theirs, their_label in cases:
            secs, rss, cp_secs, ratio = paired(mine, theirs, runs, cache == "cold")
            print(f"    {cache} {label:28s} {secs:6.2f} s {rss:7.1f} MiB | {their_label:15s} {cp_secs:6.2f} s | "
                  f"{ratio:5.2f}x")
    if len(caches) == 1:
        print("    (cold cache: not measured, /proc/sys/vm/drop_caches is not writable)")
    clean(mbdir, merged, copy)
