"""The `resume` workload of bench/bench.py: the contiguous input (1 GiB at --scale 1) split into 32 files with
`--resume`, killed (SIGKILL) once about half its files are published, then resumed; against a whole run of the
same command and a plain split (no journal). Into a directory, and onto an S3 prefix of s3rver on loopback when
s3rver is installed (tests/e2e/servers.py).

For each place it prints: the plain split, the whole --resume run, and the resumed run after the kill (seconds,
files kept, bytes of files written or uploaded). Goal: the resumed run costs about the half it has left to do,
and a whole --resume run costs no more than a plain split (the journal: one small file per microbatch file)."""
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

FILES = 32


def wall(cmd, env):
    """Seconds and the --json summary of one run of `cmd`."""
    os.sync()
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return time.perf_counter() - start, json.loads(out.stdout)


def kill_at_half(cmd, env, published):
    """Starts `cmd` and SIGKILLs it (its workers and uploading process too) once `published()` counts half the
    files; returns how many were published by then."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    while proc.poll() is None and published() < FILES // 2:
        time.sleep(0.005)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return published()


def row(label, secs, report, *_):
    files = sum(f["bytes"] for f in report["files"][:-1])  # the microbatch files, not the manifest
    written = files - report["kept_bytes"]
    print(f"  {label:34s} {secs:7.2f} s  {report['kept_files']:3d} files kept  {written / 2**20:8.1f} MiB of "
          f"files written")


def median_of(runs, once):
    """The run of median time of `runs` runs of `once()` (each: seconds, report)."""
    results = sorted((once() for _ in range(runs)), key=lambda r: r[0])
    return results[len(results) // 2]


def bench_place(label, output, binary, src, env, published, remove, runs):
    base = [binary, "split", src, "-n", str(FILES), "-o", output, "-q", "--json"]
    print(f"\n{label}: median of {runs}")

    def fresh(cmd):
        remove()
        return wall(cmd, env)

    def killed_then_resumed():
        remove()
        kept = kill_at_half(base + ["--resume"], env, published)
        secs, report = wall(base + ["--resume"], env)
        return secs, report, kept

    row("plain split", *median_of(runs, lambda: fresh(base)))
    row("split --resume, whole", *median_of(runs, lambda: fresh(base + ["--resume"])))
    secs, report, kept = median_of(runs, killed_then_resumed)
    row(f"resumed after a kill at {kept} files", secs, report)
    remove()


def bench_resume(work, binary, make, scale, runs=3):
    import shutil
    src = os.path.join(work, "contiguous.h5")
    if not os.path.exists(src):
        make("contiguous", src, scale)
    print(f"\nresume: {os.path.getsize(src) / 2**20:.0f} MiB contiguous input, split into {FILES} with --resume, "
          "killed at about half, resumed")
    out = os.path.join(work, "resume-mb")

    def local_published():
        return sum(n.endswith(".journal") for n in os.listdir(out)) if os.path.isdir(out) else 0

    bench_place("into a directory", out, binary, src, dict(os.environ), local_published,
                lambda: shutil.rmtree(out, ignore_errors=True), runs)
    import servers
    if not servers.s3_installed():
        print("\n(onto S3: s3rver is not installed; scripts/install-deps.sh)")
        return
    with servers.s3() as s3:
        env = s3.env(dict(os.environ))
        prefix = os.path.join(s3.root, servers.S3_BUCKET, "resume")

        def s3_published():
            names = os.listdir(prefix) if os.path.isdir(prefix) else []
            return sum(n.endswith(".journal._S3rver_object") for n in names)

        bench_place("onto an S3 prefix (s3rver on loopback)", s3.s3_url("resume/"), binary, src, env, s3_published,
                    lambda: shutil.rmtree(prefix, ignore_errors=True), runs)
