#!/usr/bin/python3
"""Benchmark: microbatch split and merge against `cp` of the same bytes and
against the equivalent h5py + numpy script (bench/h5py_split_merge.py).

Generates its own workloads, runs every command several times on a warm page
cache (outputs removed before each run) and keeps the fastest, and prints
wall time, peak RSS and the ratios. For the contiguous and gzip-chunked
workloads it first measures microbatch against cp as users meet it
(bench/pairs.py): split and merge into new outputs and rerun with --force
over earlier ones, against cp into a new file and over an existing copy,
alternated pairs, medians and the median ratio, on a warm page cache and
(as root) a cold one.

    /usr/bin/python3 bench/bench.py [--dir DIR] [--only NAME ...] [--scale S] [--jobs J] [--runs R] [--skip-h5py]
                                    [--many-n N ...] [--many-timeout SECONDS]

When build/hdf5_floor exists (scripts/build.sh -DMB_BENCH=ON builds
bench/hdf5_floor.cpp: the same split and merge
with the fewest libhdf5 calls, every dataset read whole, no checks), its time
is printed too for the workloads that libhdf5's own work dominates (small,
strings): no tool built on libhdf5 can do much less library work, so the
h5py/floor ratio is about the most any of them can gain over h5py there.

Workloads (sizes at --scale 1):
  contiguous   1 GiB float32, contiguous                       -> split/merge vs cp
  gzip-chunked 1 GiB float32, gzip chunks aligned with the cut -> vs h5py
  small        20,000 small datasets with attributes           -> vs h5py
  strings      1M variable-length strings                      -> vs h5py
  memory       4 GiB float32 dataset                           -> peak RSS
  many         64,000 rows (int64 "ids", float32 "x" of 16 columns, root attribute "step"), split and merged at
               every N of --many-n (1,000 4,000 16,000 64,000)     -> time per input, peak RSS, vs h5py merge

  packed       a million tokens in 10,000 documents, split for --dp-degree 4, -n 8, --cp-degree 2 and merged
                                                               -> split/merge vs cp, peak RSS
  diff         the contiguous, gzip-chunked and small inputs against their copies: microbatch diff (and --storage)
               -> vs cmp of the same bytes, h5diff, an h5py + numpy script (bench/h5py_diff.py)
  scale-out    256 MiB of gzip chunks that do not line up with the cut (so split and merge re-encode them),
               and 1 GiB contiguous: split and merge at P = 1, 2, 4 processes, as shards (split --shard K/P, all
               P at once, then finish) and as mpirun ranks (microbatch-mpi)  -> speedup over P = 1

`scale-out` runs only when named (`--only scale-out`; needs mpirun and build/microbatch-mpi). Each command is
best of 2; the table gives seconds and the speedup over the one-process command.

`remote` runs only when named (`--only remote`; bench/remote.py, needs nginx): the sample, 1 GiB contiguous and
5,000 small datasets split and merged back reading over HTTP from nginx on loopback, against curl + the local
command and against libhdf5's ROS3 driver (h5py) reading every dataset: seconds, requests and MiB fetched.

`upload` runs only when named (`--only upload`; bench/upload.py, needs s3rver): the contiguous workload at --scale
split into 8 with `-o s3://` against `split -o DIR` and against `curl --aws-sigv4` uploading those files, 4 at once,
to the same s3rver on loopback; goal: at most 1.2x the longer of the two alone, and less than their sum.

`resume` runs only when named (`--only resume`; bench/resume.py): the contiguous input split into 32 files with
--resume, SIGKILLed once about half are published, then resumed; against the whole run and a plain split, into a
directory and (with s3rver) onto an S3 prefix: seconds, files kept, bytes of files written.

`many` runs only when named (`--only many`): it is about the cost of each
microbatch file, not of the bytes. For each N it prints split and merge time
and peak RSS, merge time per input, the h5py script's merge (its inputs from a
directory: 64,000 paths would not fit on a command line), the load average
(the machine may be shared), and at the end its goals: merge at
N = 16,000 within 2x of split, peak RSS <= 100 MiB, time per input flat
across N (+-30%). Each command runs once at N >= 16,000, best of 2 below,
under a 16 GiB address-space limit and --many-timeout (default 600 s); a
command that fails or runs out of time is shown in the table ("failed: <first
line of stderr>", "> 600 s") and the bench goes on. --skip-h5py leaves the
h5py merge out; --scale does not apply (the batch has max(64,000, largest N)
rows: split refuses more microbatches than rows).
"""
import argparse
import dataclasses
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BINARY = os.environ.get("MICROBATCH", os.path.join(HERE, "..", "build", "microbatch"))
H5PY = [sys.executable, os.path.join(HERE, "h5py_split_merge.py")]
FLOOR = os.environ.get("HDF5_FLOOR", os.path.join(HERE, "..", "build", "hdf5_floor"))
MPI_BINARY = os.environ.get("MICROBATCH_MPI", os.path.join(HERE, "..", "build", "microbatch-mpi"))
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
SCALE_OUT_P = [1, 2, 4]
FLOOR_WORKLOADS = ("small", "strings")  # where libhdf5's own work dominates
PAIRED = ("contiguous", "gzip-chunked")  # where cp is the yardstick: bench/pairs.py
N = 8
# What --only takes; a name not here would make an empty input and time nothing.
WORKLOADS = ["contiguous", "gzip-chunked", "small", "strings", "compressed-unaligned", "memory", "many", "scale-out",
             "remote", "upload", "packed", "diff", "resume"]
MANY_ROWS = 64_000
MANY_N = [1_000, 4_000, 16_000, 64_000]
MANY_ONCE_FROM = 16_000  # from this N on, each command runs once (they are slow)
MEMORY_LIMIT = 16 * 2**30  # RLIMIT_AS of the many workload's commands: the machine has 24 GiB


def make(name, path, scale):
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        if name == "contiguous":
            rows = int(4096 * scale)
            d = f.create_dataset("x", (rows, 65536), dtype=np.float32)
            for r in range(0, rows, 256):
                d[r:r + 256] = rng.standard_normal((min(256, rows - r), 65536), dtype=np.float32)
        elif name == "gzip-chunked":
            rows = int(4096 * scale)  # chunks of 64 rows: every microbatch boundary (rows/8) is a chunk boundary
            d = f.create_dataset("x", (rows, 65536), dtype=np.float32, chunks=(64, 4096), compression="gzip",
                                 compression_opts=1, shuffle=True)
            base = rng.standard_normal((256, 65536), dtype=np.float32).round(2)  # compressible, like real data
            for r in range(0, rows, 256):
                d[r:r + 256] = base[:min(256, rows - r)]
        elif name == "small":
            for k in range(int(20000 * scale)):
                ds = f.create_dataset(f"g{k % 100}/d{k}", data=np.arange(16, dtype=np.int32) + k)
                ds.attrs["id"] = k
                ds.attrs["unit"] = "tokens"
        elif name == "strings":
            n = int(1_000_000 * scale)
            words = np.array([f"prompt number {i} " + "x" * (i % 40) for i in range(1000)], dtype=object)
            f.create_dataset("text", data=words[np.arange(n) % 1000], dtype=h5py.string_dtype())
        elif name == "compressed-unaligned":
            rows = int(4096 * scale)  # chunks of 50 rows: every microbatch (rows/8 = 512) but the first starts mid-chunk
            d = f.create_dataset("x", (rows, 16384), dtype=np.float32, chunks=(50, 4096), compression="gzip",
                                 compression_opts=4, shuffle=True)
            base = rng.standard_normal((256, 16384), dtype=np.float32).round(2)
            for r in range(0, rows, 256):
                d[r:r + 256] = base[:min(256, rows - r)]
        elif name == "memory":
            rows = int(16384 * scale)
            d = f.create_dataset("x", (rows, 65536), dtype=np.float32)
            block = rng.standard_normal((256, 65536), dtype=np.float32)
            for r in range(0, rows, 256):
                d[r:r + 256] = block[:min(256, rows - r)]


def timed(cmd, outputs, runs):
    """Best of `runs` runs (2 for a command slower than 5 s): (seconds, peak
    RSS MiB). Before each run the outputs are removed and dirty pages
    written back, outside the timing: deleting a 1 GiB file costs the kernel
    as much as writing it, and it would be charged to whichever command came
    next."""
    best = None
    for k in range(runs):
        if k >= 2 and best[0] > 5:
            break
        clean(*outputs)
        os.sync()
        out = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True, env=MPI_ENV)
        if out.returncode != 0:
            raise SystemExit(f"failed: {' '.join(cmd)}\n{out.stderr}")
        secs, kb = out.stderr.strip().splitlines()[-1].split()
        run = (float(secs), int(kb) / 1024)
        best = run if best is None or run[0] < best[0] else best
    return best


@dataclasses.dataclass
class Run:
    """One command's wall time and peak RSS (MiB), or why it has none."""
    secs: float = 0.0
    rss: float = 0.0
    error: str = ""

    def cells(self, width=18):
        """Two table cells (time, RSS), or the error across both (cut to fit:
        bench_many prints it whole under the table's line)."""
        if self.error:
            cut = self.error if len(self.error) <= 2 * width + 1 else self.error[:2 * width - 2] + "..."
            return f"{cut:>{2 * width + 1}s}"
        return f"{self.secs:>{width - 2}.2f} s {self.rss:>{width - 4}.1f} MiB"

    def until_failure(self):
        """How far a failed command got, when /usr/bin/time could tell."""
        return f" (after {self.secs:.2f} s, {self.rss:.1f} MiB peak RSS)" if self.error and self.rss else ""


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def first_line(text):
    """The line that says what went wrong: the first, or a Python traceback's last."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    return lines[-1] if lines[0].startswith("Traceback") else lines[0]


def run_limited(cmd, timeout):
    """Runs `cmd` once under MEMORY_LIMIT, through /usr/bin/time (a fresh
    small process: a fork of this Python would count its own RSS as the
    command's), and kills the whole process group, workers of split -j too,
    after `timeout` seconds."""
    with tempfile.NamedTemporaryFile("w+") as stats, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%e %M", "-o", stats.name, *cmd],
                                stdout=subprocess.DEVNULL, stderr=err, preexec_fn=limit_memory,
                                start_new_session=True)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return Run(error=f"> {timeout:g} s")
        err.seek(0)
        reason = first_line(err.read())
        status = stats.read().splitlines()
    secs, kb = status[-1].split()
    run = Run(float(secs), int(kb) / 1024)
    if status[0].startswith("Command terminated by signal"):
        run.error = f"killed by signal {status[0].split()[-1]}: {reason}"
    elif proc.returncode != 0:
        run.error = f"failed: {reason}"
    return run


def timed_limited(cmd, outputs, runs, timeout):
    """Best of `runs` runs of run_limited, outputs removed and dirty pages
    written back before each; a failed run ends it."""
    best = None
    for _ in range(runs):
        clean(*outputs)
        os.sync()
        run = run_limited(cmd, timeout)
        if run.error:
            return run
        best = run if best is None or run.secs < best.secs else best
    return best


def clean(*paths):
    for p in paths:
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)


def bench(name, work, scale, skip_h5py, jobs=1, runs=5):
    src = os.path.join(work, f"{name}.h5")
    if not os.path.exists(src):
        make(name, src, scale)
    size = os.path.getsize(src) / 2**20
    mbdir, merged = os.path.join(work, f"{name}-mb"), os.path.join(work, f"{name}-merged.h5")
    rows = {}
    copy = os.path.join(work, f"{name}-copy.h5")
    print(f"\n{name}: {size:.0f} MiB input, split into {N}")
    if name in PAIRED:
        import pairs  # bench/pairs.py
        pairs.bench_pairs(BINARY, src, work, runs, jobs, clean)
    rows["microbatch split"] = timed([BINARY, "split", src, "-n", str(N), "-o", mbdir, "-q", "-j", str(jobs)],
                                     [mbdir], runs)
    rows["microbatch merge"] = timed([BINARY, "merge", mbdir, "-o", merged, "-q"], [merged], runs)
    rows["cp"] = timed(["cp", src, copy], [copy], runs)
    if not skip_h5py:
        pydir, pymerged = os.path.join(work, f"{name}-py"), os.path.join(work, f"{name}-py.h5")
        rows["h5py split"] = timed([*H5PY, "split", src, str(N), pydir], [pydir], runs)
        rows["h5py merge"] = timed([*H5PY, "merge", pymerged, pydir], [pymerged], runs)
        clean(pydir, pymerged)
        if os.path.exists(FLOOR) and name in FLOOR_WORKLOADS:
            fldir, flmerged = os.path.join(work, f"{name}-floor"), os.path.join(work, f"{name}-floor.h5")
            os.makedirs(fldir, exist_ok=True)
            rows["hdf5 floor split"] = timed([FLOOR, "split", src, str(N), fldir],
                                             [os.path.join(fldir, f"floor-{i}.h5") for i in range(N)], runs)
            files = [os.path.join(fldir, f"floor-{i}.h5") for i in range(N)]
            rows["hdf5 floor merge"] = timed([FLOOR, "merge", flmerged, *files], [flmerged], runs)
            clean(fldir, flmerged)
    clean(mbdir, merged, copy)
    print(f"  best of {runs}:")
    for k, (secs, rss) in rows.items():
        print(f"  {k:18s} {secs:8.2f} s  {rss:8.1f} MiB peak RSS")
    cp = max(rows["cp"][0], 0.01)  # /usr/bin/time resolves 10 ms
    for op in ("split", "merge"):
        mine = rows[f"microbatch {op}"][0]
        line = f"  {op}: {mine / cp:.2f}x the time of cp"
        if f"h5py {op}" in rows:
            line += f", {rows[f'h5py {op}'][0] / mine:.1f}x faster than h5py"
        if f"hdf5 floor {op}" in rows:
            floor = max(rows[f"hdf5 floor {op}"][0], 0.01)
            line += f"; {mine / floor:.2f}x the time of the HDF5 floor"
            if f"h5py {op}" in rows:
                line += f" (h5py: {rows[f'h5py {op}'][0] / floor:.1f}x)"
        print(line)
    return rows


def make_many(path, rows):
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f.create_dataset("ids", data=np.arange(rows, dtype=np.int64))
        f.create_dataset("x", data=rng.standard_normal((rows, 16), dtype=np.float32))
        f.attrs["step"] = 7


def many_one_n(src, work, n, opts):
    """Split and merge at `n` microbatches, then the h5py script's split
    (untimed in the table: it only makes the h5py merge's inputs) and merge."""
    runs = 1 if n >= MANY_ONCE_FROM else 2
    mbdir, merged = os.path.join(work, f"many-{n}-mb"), os.path.join(work, f"many-{n}-merged.h5")
    row = {"load": os.getloadavg()[0]}
    row["split"] = timed_limited([BINARY, "split", src, "-n", str(n), "-o", mbdir, "-q", "-j", str(opts.jobs)],
                                 [mbdir], runs, opts.many_timeout)
    if row["split"].error:
        row["merge"] = Run(error="no input: split failed")
    else:
        row["merge"] = timed_limited([BINARY, "merge", mbdir, "-o", merged, "-q"], [merged], runs,
                                     opts.many_timeout)
    clean(mbdir, merged)
    if not opts.skip_h5py:
        row["h5py merge"] = h5py_merge_many(src, work, n, runs, opts.many_timeout)
    return row


def h5py_merge_many(src, work, n, runs, timeout):
    pydir, pymerged = os.path.join(work, f"many-{n}-py"), os.path.join(work, f"many-{n}-py.h5")
    made = timed_limited([*H5PY, "split", src, str(n), pydir], [pydir], 1, timeout)
    if made.error:
        merge = Run(error=f"no input: h5py split {made.error}")
    else:
        merge = timed_limited([*H5PY, "merge", pymerged, pydir], [pymerged], runs, timeout)
    clean(pydir, pymerged)
    return merge


def many_line(n, row):
    merge = row["merge"]
    per_input = "" if merge.error else f"{1000 * merge.secs / n:.3f}"
    line = f"  {n:>7,d} {row['load']:5.2f}  {row['split'].cells()}  {merge.cells()}  {per_input:>9s}"
    if "h5py merge" in row:
        line += f"  {row['h5py merge'].cells()}"
    return line


def many_goals(rows):
    """The goals of `many` (merge within 2x of split, bounded RSS, flat time per input), from the Ns that ran."""
    ok = {n: r for n, r in rows.items() if not r["merge"].error}
    out = []
    if MANY_ONCE_FROM in ok and not ok[MANY_ONCE_FROM]["split"].error:
        r = ok[MANY_ONCE_FROM]
        ratio = r["merge"].secs / max(r["split"].secs, 0.001)
        out.append(f"merge/split at N = {MANY_ONCE_FROM:,}: {ratio:.2f}x (goal <= 2x)")
    runs = [r[k] for r in rows.values() for k in ("split", "merge") if not r[k].error]
    failed = sum(1 for r in rows.values() for k in ("split", "merge")
                 if r[k].error and not r[k].error.startswith("no input"))
    if runs:
        out.append(f"max peak RSS {max(r.rss for r in runs):.1f} MiB (goal <= 100)"
                   + (f", {failed} command(s) failed" if failed else ""))
    per_input = [1000 * r["merge"].secs / n for n, r in ok.items()]
    if len(per_input) > 1:
        mean = statistics.mean(per_input)
        spread = max(abs(p - mean) for p in per_input) / mean
        out.append(f"merge ms/input {min(per_input):.3f}..{max(per_input):.3f}, "
                   f"+-{100 * spread:.0f}% of their mean (goal +-30%)")
    return out


def bench_many(work, opts):
    rows_in = max(MANY_ROWS, *opts.many_n)  # split refuses more microbatches than rows
    src = os.path.join(work, f"many-{rows_in}.h5")
    if not os.path.exists(src):
        make_many(src, rows_in)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nmany: {rows_in:,} rows ({os.path.getsize(src) / 2**20:.1f} MiB: ids int64, x float32 x 16, "
          f"attribute step), load average {load}; timeout {opts.many_timeout:g} s, RLIMIT_AS 16 GiB; "
          f"best of 2 below N = {MANY_ONCE_FROM:,}, once from there")
    header = f"  {'N':>7s} {'load':>5s}  {'split':>16s} {'peak RSS':>18s}  {'merge':>16s} {'peak RSS':>18s}  " \
             f"{'ms/input':>9s}"
    print(header + ("" if opts.skip_h5py else f"  {'h5py merge':>16s} {'peak RSS':>18s}"), flush=True)
    rows = {}
    for n in opts.many_n:
        rows[n] = many_one_n(src, work, n, opts)
        print(many_line(n, rows[n]), flush=True)
        for what, run in rows[n].items():
            if isinstance(run, Run) and run.error:
                print(f"      {what}: {run.error}{run.until_failure()}", flush=True)
    for goal in many_goals(rows):
        print(f"  {goal}")
    return rows


def timed_shards(src, mbdir, p, runs):
    """split --shard K/P for every K at once, then finish: (seconds, peak RSS of the largest shard)."""
    best = None
    for _ in range(min(runs, 2)):
        clean(mbdir)
        os.sync()
        start = os.times().elapsed
        procs = [subprocess.Popen([BINARY, "split", src, "-n", str(N), "-o", mbdir, "-q", "--shard", f"{k}/{p}"])
                 for k in range(p)]
        if any(proc.wait() != 0 for proc in procs):
            raise SystemExit(f"failed: split --shard */{p}")
        subprocess.run([BINARY, "finish", mbdir, "-q"], check=True)
        secs = os.times().elapsed - start
        best = secs if best is None or secs < best else best
    return best


def mpirun(p, *args):
    return ["mpirun", "--oversubscribe", "-np", str(p), MPI_BINARY, *args]


def bench_scale_out(work, opts):
    """Split and merge at P processes: shards and mpirun ranks, against P = 1."""
    print(f"\nscale-out: split into {N}, merge back, at P = {SCALE_OUT_P} processes on {os.cpu_count()} cores; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"  {'workload':22s} {'command':24s} " + " ".join(f"{'P=' + str(p):>16s}" for p in SCALE_OUT_P))
    for name in ("compressed-unaligned", "contiguous"):
        src = os.path.join(work, f"{name}.h5")
        if not os.path.exists(src):
            make(name, src, opts.scale)
        mbdir, merged, copy = (os.path.join(work, f"{name}-{x}") for x in ("mb", "merged.h5", "copy.h5"))
        cp = timed(["cp", src, copy], [copy], 2)[0]
        clean(copy)
        rows = {"split --shard, finish": {}, "mpirun split": {}, "mpirun merge": {}}
        one_split = timed([BINARY, "split", src, "-n", str(N), "-o", mbdir, "-q"], [mbdir], 2)[0]
        one_merge = timed([BINARY, "merge", mbdir, "-o", merged, "-q"], [merged], 2)[0]
        for p in SCALE_OUT_P:
            rows["split --shard, finish"][p] = one_split if p == 1 else timed_shards(src, mbdir, p, opts.runs)
            rows["mpirun split"][p] = timed(mpirun(p, "split", src, "-n", str(N), "-o", mbdir, "-q"), [mbdir], 2)[0]
        # (mbdir holds the last split timed: the merges' input)
        for p in SCALE_OUT_P:
            rows["mpirun merge"][p] = timed(mpirun(p, "merge", mbdir, "-o", merged, "-q"), [merged], 2)[0]
        clean(mbdir, merged)
        print(f"  {name:22s} {'one process':24s} split {one_split:.2f} s, merge {one_merge:.2f} s; cp {cp:.2f} s")
        for command, times in rows.items():
            base = one_merge if "merge" in command else one_split
            cells = " ".join(f"{times[p]:7.2f} s {base / times[p]:5.2f}x" for p in SCALE_OUT_P)
            print(f"  {'':22s} {command:24s} {cells}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/microbatch-bench")
    ap.add_argument("--only", nargs="*", default=["contiguous", "gzip-chunked", "small", "strings", "memory"],
                    choices=WORKLOADS, help="workloads to run (default: all but many)")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--jobs", type=int, default=1, help="microbatch split -j")
    ap.add_argument("--runs", type=int, default=5, help="runs per command, best kept (2 for commands over 5 s)")
    ap.add_argument("--skip-h5py", action="store_true", help="time microbatch and cp only (before/after comparisons)")
    ap.add_argument("--many-n", nargs="+", type=int, default=MANY_N, help="the Ns of the many workload")
    ap.add_argument("--many-timeout", type=float, default=600, help="seconds per command of the many workload")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    print(f"microbatch: {BINARY}; best of {args.runs} warm runs (2 for commands over 5 s); N = {N}; "
          f"split -j {args.jobs}")
    for name in args.only:
        if name == "many":
            bench_many(args.dir, args)
            continue
        if name == "scale-out":
            bench_scale_out(args.dir, args)
            continue
        if name == "remote":
            import remote  # bench/remote.py: needs nginx (Debian's nginx-light)
            remote.bench_remote(args.dir, BINARY, make, args.runs)
            continue
        if name == "packed":
            import packed  # bench/packed.py
            packed.bench_packed(args.dir, BINARY, timed, clean, args.runs)
            continue
        if name == "diff":
            import diff  # bench/diff.py
            diff.bench_diff(args.dir, BINARY, make, args.scale, timed, args.runs)
            continue
        if name == "resume":
            import resume  # bench/resume.py: s3rver for its S3 half (scripts/install-deps.sh)
            resume.bench_resume(args.dir, BINARY, make, args.scale, min(args.runs, 3))
            continue
        if name == "upload":
            import upload  # bench/upload.py: needs s3rver (scripts/install-deps.sh)
            upload.bench_upload(args.dir, BINARY, make, args.scale, min(args.runs, 3))
            continue
        bench(name, args.dir, args.scale, skip_h5py=args.skip_h5py or name == "memory", jobs=args.jobs, runs=args.runs)


if __name__ == "__main__":
    main()
