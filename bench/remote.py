"""The `remote` workload of bench/bench.py: inputs read over HTTP from a local
nginx (tests/e2e/servers.py), against downloading them with curl and running
locally, and against libhdf5's own read-only S3 driver (ROS3, through h5py)
reading every dataset. Requests and bytes are nginx's own counts (its access
log), for the last run of each command."""
import os
import subprocess
import sys
import time

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import servers  # noqa: E402  (tests/e2e/servers.py: nginx on a free loopback port)

SAMPLE = os.path.join(HERE, "..", "sample_data", "batch.h5")
SPECS = {"sample": os.path.join(HERE, "..", "sample_data", "batch_spec.json")}


def wall(cmd, runs, outputs):
    """Best of `runs` wall times of a shell command (a string) or argv; the
    `outputs` are removed and dirty pages written back before each run,
    outside the timing (as bench.timed does)."""
    best = None
    for _ in range(runs):
        subprocess.run(["rm", "-rf", *outputs], check=True)
        os.sync()
        start = time.perf_counter()
        out = subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"failed: {cmd}\n{out.stderr}")
        secs = time.perf_counter() - start
        best = secs if best is None or secs < best else best
    return best


def ros3_read_all(url):
    """Opens `url` with h5py's ros3 driver and reads every dataset whole."""
    def visit(_, obj):
        if isinstance(obj, h5py.Dataset):
            obj[()]
    with h5py.File(url, "r", driver="ros3") as f:
        f.visititems(visit)


def measured(server, prefix, cmd, runs, outputs):
    """(seconds, requests, MiB fetched) of a command reading under `prefix`:
    the best time of `runs`, nginx's counts of one more run."""
    secs = wall(cmd, runs, outputs)
    start = len(server.requests())
    wall(cmd, 1, outputs)
    served = [r for r in server.requests()[start:] if r["uri"].startswith(prefix)]
    return secs, len(served), sum(r["bytes"] for r in served) / 2**20


def row(name, m, base=None):
    secs, requests, mib = m
    ratio = f"{secs / base:6.2f}x" if base else f"{'':7s}"
    print(f"  {name:34s} {secs:8.2f} s {ratio} {requests:9d} requests {mib:10.1f} MiB", flush=True)


def bench_remote(work, binary, make, runs):
    """Split (and merge back) each workload read over HTTP, and its baselines."""
    files = {"sample": SAMPLE, "contiguous": os.path.join(work, "contiguous.h5"),
             "small-5000": os.path.join(work, "small-5000.h5")}
    if not os.path.exists(files["contiguous"]):
        make("contiguous", files["contiguous"], 1.0)
    if not os.path.exists(files["small-5000"]):
        make("small", files["small-5000"], 0.25)
    root = os.path.join(work, "www")
    print(f"\nremote: split into 4 and merge back, reading over HTTP from nginx on loopback; best of {runs}; "
          f"ratios against curl + the local command")
    with servers.nginx(root) as server:
        for name, path in files.items():
            url = server.put(path, f"{name}.h5")
            size = os.path.getsize(path) / 2**20
            local, mb, merged, dl = (os.path.join(work, f"remote-{name}{x}") for x in (".h5", "-mb", "-merged.h5", "-dl"))
            spec = f" --spec {SPECS[name]}" if name in SPECS else ""
            split = f"{binary} split {{}}{spec} -n 4 -o {mb} -q"
            print(f"  {name} ({size:.1f} MiB)")
            base = measured(server, f"/{name}", f"curl -sf -o {local} {url} && " + split.format(local), runs,
                            [local, mb])
            row("curl, then split", base)
            row("split URL", measured(server, f"/{name}", split.format(url), runs, [mb]), base[0])
            row("ROS3 (h5py): read every dataset",
                measured(server, f"/{name}", [sys.executable, "-c", f"import sys; sys.path.insert(0, '{HERE}'); "
                                               f"import remote; remote.ros3_read_all('{url}')"], 1, []))
            subprocess.run(["rm", "-rf", mb], check=True)
            subprocess.run(split.format(path), shell=True, check=True)
            server.put_dir(mb, f"{name}-mb")
            mburl = server.url(f"{name}-mb/manifest.json")
            fetch = " && ".join(f"curl -sf -o {dl}/{n} {server.url(f'{name}-mb/{n}')}" for n in sorted(os.listdir(mb)))
            mbase = measured(server, f"/{name}-mb", f"mkdir {dl} && {fetch} && {binary} merge {dl} -o {merged} -q",
                             runs, [dl, merged])
            row("curl, then merge", mbase)
            row("merge URL", measured(server, f"/{name}-mb", f"{binary} merge {mburl} -o {merged} -q", runs, [merged]),
                mbase[0])
            row("merge URL --no-verify", measured(server, f"/{name}-mb", f"{binary} merge {mburl} -o {merged} -q "
                                                  "--no-verify", runs, [merged]), mbase[0])
            subprocess.run(["rm", "-rf", local, mb, merged, dl], check=True)
