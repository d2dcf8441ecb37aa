"""The progress display: on a terminal (a pseudo-terminal here, Python's pty),
split and merge redraw one line with bytes done / total, percent, rate and
time left a few times a second, and erase it at the end; nothing of it when
stderr is not a terminal or with -q."""
import os
import pathlib
import pty
import re
import select
import subprocess
import time

import h5py
import numpy as np
import pytest

import servers
from conftest import BINARY, ENV, h5diff, run

# One redraw: erase the line, then "split: 1.20 GiB / 2.20 GiB   54%  310 MiB/s  3s left".
REDRAW = re.compile(rb"\r\x1b\[K(split|merge): ([\d.]+ [KMGT]?i?B) / ([\d.]+ [KMGT]?i?B) +(\d+)%  ([\d.]+ [KMGT]?i?B)/s"
                    rb"  (\S+) left")
UPLOADED = re.compile(rb"left  ([\d.]+ [KMGT]?i?B) uploaded")
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}

# Raw chunks move too fast to watch on a small input; through HDF5's
# hyperslabs (decompressed and compressed again) the same bytes take seconds.
SLOW = dict(ENV, MICROBATCH_NO_RAW_COPY="1")


def on_terminal(args, env=SLOW):
    """Runs microbatch with stderr (only) on a pseudo-terminal; returns (exit
    status, the bytes written to the terminal, stdout)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([BINARY, *map(str, args)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave, env=env)
    os.close(slave)
    shown = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not data:
            break
        shown += data
    try:
        out = proc.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        report = where_stuck(proc.pid)
        proc.kill()
        for pid in children(proc.pid):
            os.kill(pid, 9)
        proc.communicate()
        pytest.fail(f"{args[0]} did not end; where its processes wait: {report}")
    finally:
        os.close(master)
    return proc.returncode, shown, out


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def where_stuck(pid):
    """The kernel function each thread of `pid` and of its children sleeps in
    (wchan), to tell a deadlock from a slow run in a failure message."""
    report = {}
    for p in [pid, *children(pid)]:
        try:
            tasks = sorted(os.listdir(f"/proc/{p}/task"))
            report[p] = {t: open(f"/proc/{p}/task/{t}/wchan").read() for t in tasks}
        except OSError as e:
            report[p] = str(e)
    return report


def final_screen(shown):
    """What a terminal shows after `shown`: \\r returns to the line's start,
    ESC [K erases to its end, \\n starts a new line (the tty turns it into
    \\r\\n)."""
    lines, line, col = [], [], 0
    i = 0
    while i < len(shown):
        if shown.startswith(b"\x1b[K", i):
            del line[col:]
            i += 3
            continue
        c = shown[i:i + 1]
        i += 1
        if c == b"\r":
            col = 0
        elif c == b"\n":
            lines.append(b"".join(line))
            line, col = [], 0
        else:
            if col < len(line):
                line[col] = c
            else:
                line.append(c)
            col += 1
    lines.append(b"".join(line))
    return [l.decode() for l in lines]


def redraws(shown):
    return REDRAW.findall(shown)


def in_bytes(text):
    number, unit = text.decode().split()
    return float(number) * UNITS[unit]


def check_redraws(shown, verb):
    draws = redraws(shown)
    assert len(draws) >= 3, shown  # updated during the run, a few times a second
    totals = {in_bytes(d[2]) for d in draws}
    assert len(totals) == 1, draws  # one total throughout
    done = [in_bytes(d[1]) for d in draws]
    assert done == sorted(done) and done[0] < done[-1], draws  # moving forward
    assert all(d[0] == verb.encode() for d in draws)
    assert all(0 <= int(d[3]) <= 100 for d in draws)
    assert all(d[5] == b"--" or re.fullmatch(rb"(\d+h)?(\d+m)?\d+s|\d+h\d+m", d[5]) for d in draws), draws
    return draws


def assert_clean(shown):
    screen = final_screen(shown)
    assert not any(re.search(r"(split|merge): .* / .*%", l) for l in screen), screen
    assert screen[-1] == "", screen  # the cursor at the start of an empty line


LARGE_BYTES = 64 << 20


def write_large(path, names):
    """Gzip-compressed float32 tensors of 32 MiB each (and a small replicated
    one), written in 16 MiB blocks."""
    rows, block = 32 * 1024, 16 * 1024
    values = np.random.default_rng(0).integers(0, 1000, size=(block, 256)).astype(np.float32)
    with h5py.File(path, "w") as f:
        for name in names:
            ds = f.create_dataset(name, (rows, 256), dtype=np.float32, chunks=(1024, 256), compression="gzip",
                                  compression_opts=1)
            for k in range(0, rows, block):
                ds[k:k + block] = values
        f["scale"] = np.float64(2.0)
    return path


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """Few large datasets: two tensors of 32 MiB."""
    return write_large(tmp_path_factory.mktemp("progress") / "large.h5", ("a", "b"))


@pytest.fixture(scope="module")
def larger(tmp_path_factory):
    """Four tensors of 32 MiB: a split -j 2 of them lasts long enough for a few redraws on a fast, idle machine."""
    return write_large(tmp_path_factory.mktemp("progress") / "larger.h5", ("a", "b", "c", "d"))


def test_split_and_merge_show_bytes_percent_rate_and_time_left(large, tmp_path):
    code, shown, out = on_terminal(["split", large, "-n", "4", "-o", tmp_path / "mb", "--buffer-size", "1"])
    assert code == 0, shown
    assert out == b""
    draws = check_redraws(shown, "split")
    assert in_bytes(draws[0][2]) == pytest.approx(LARGE_BYTES, rel=0.01)  # bytes of data written
    assert_clean(shown)
    assert "microbatch: info: split" in final_screen(shown)[-2]  # the closing message, on a line of its own

    code, shown, out = on_terminal(["merge", tmp_path / "mb", "-o", tmp_path / "merged.h5", "--buffer-size", "1"])
    assert code == 0, shown
    draws = check_redraws(shown, "merge")
    assert in_bytes(draws[0][2]) == pytest.approx(LARGE_BYTES, rel=0.01)  # bytes of data merged
    assert_clean(shown)
    assert h5diff(large, tmp_path / "merged.h5") == 0


def test_split_jobs_workers_feed_the_display(larger, tmp_path):
    # Worker 0 (this process) writes half the bytes; past 50% the others' counts are shown.
    code, shown, _ = on_terminal(["split", larger, "-n", "4", "-j", "2", "-o", tmp_path / "mb", "--buffer-size", "1"])
    assert code == 0, shown
    draws = check_redraws(shown, "split")
    assert max(int(d[3]) for d in draws) > 55, draws
    assert_clean(shown)


@pytest.mark.skipif(not servers.s3_installed(), reason="s3rver is not installed (install-deps.sh)")
def test_split_to_s3_shows_bytes_uploaded_beside_bytes_written(large, tmp_path):
    # Rounds of two files (--uploads 1): the first rounds are confirmed while the later ones are written.
    with servers.s3() as s3:
        code, shown, _ = on_terminal(["split", large, "-n", "16", "--uploads", "1", "-o", s3.s3_url("mb/"),
                                      "--buffer-size", "1"], env=s3.env(SLOW))
        assert code == 0, shown
        stored = pathlib.Path(s3.root, servers.S3_BUCKET, "mb").glob("microbatch-*._S3rver_object")
        sizes = sum(p.stat().st_size for p in stored)
    draws = check_redraws(shown, "split")
    uploaded = [in_bytes(u) for u in UPLOADED.findall(shown)]
    assert len(uploaded) == len(draws), shown  # every redraw says it
    assert uploaded == sorted(uploaded) and 0 < uploaded[-1] <= sizes, uploaded
    assert any(u > 0 and int(d[3]) < 100 for u, d in zip(uploaded, draws)), draws  # uploads overlap the writing
    assert_clean(shown)


@pytest.mark.skipif(not servers.s3_installed(), reason="s3rver is not installed (install-deps.sh)")
def test_merge_to_s3_counts_the_upload_once_merged(tmp_path):
    # 40 MiB of random bytes: five parts, each half a second late through the proxy, so the line is redrawn.
    src = tmp_path / "random.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.random.default_rng(1).random((4, 40 * 2**20 // 32))
    run("split", src, "-n", 4, "-o", tmp_path / "mb", check=0)
    with servers.s3() as s3, servers.s3_proxy(s3) as proxy:
        proxy.fault("PUT", "partNumber=", "slow", times=5)
        code, shown, _ = on_terminal(["merge", tmp_path / "mb", "-o", s3.s3_url("merged.h5")],
                                     env=dict(s3.env(ENV), AWS_ENDPOINT_URL=proxy.endpoint))
        assert code == 0, shown
        size = (pathlib.Path(s3.root, servers.S3_BUCKET) / "merged.h5._S3rver_object").stat().st_size
    draws = redraws(shown)
    uploaded = [in_bytes(u) for u in UPLOADED.findall(shown)]
    assert len(uploaded) >= 2 and uploaded == sorted(uploaded) and 0 < uploaded[-1] <= size, shown
    assert all(d[0] == b"merge" and int(d[3]) == 100 for d in draws[-len(uploaded):]), draws  # merged by then
    assert_clean(shown)


def test_many_tiny_files_move_steadily(tmp_path):
    # 1,500 outputs of a few KiB each: the count moves dataset by dataset, not once per file batch. 36 datasets
    # make the run last over a second on an idle machine, for several redraws.
    path = tmp_path / "tiny.h5"
    with h5py.File(path, "w") as f:
        for k in range(36):
            f[f"d{k}"] = np.arange(1500 * 4, dtype=np.int64).reshape(1500, 4)
        f["scale"] = np.float64(2.0)
    # Through libhdf5: 1,499 of the files are copies of the first otherwise (io/split/clone.hpp), done in a blink.
    code, shown, _ = on_terminal(["split", path, "-n", "1500", "-o", tmp_path / "mb"],
                                 env=dict(ENV, MICROBATCH_NO_CLONES="1"))
    assert code == 0, shown
    check_redraws(shown, "split")
    assert_clean(shown)


def test_quiet_shows_nothing_on_a_terminal(large, tmp_path):
    code, shown, _ = on_terminal(["split", large, "-n", "4", "-q", "-o", tmp_path / "mb", "--buffer-size", "1"])
    assert code == 0
    assert shown == b""
    code, shown, _ = on_terminal(["merge", tmp_path / "mb", "-q", "-o", tmp_path / "m.h5", "--buffer-size", "1"])
    assert code == 0
    assert shown == b""


def test_no_progress_when_stderr_is_a_pipe(large, tmp_path):
    res = run("split", large, "-n", "4", "-o", tmp_path / "mb", "--buffer-size", "1", env=SLOW, check=0)
    assert "\r" not in res.err and "\x1b" not in res.err and "%" not in res.err, res
    res = run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", "--buffer-size", "1", env=SLOW, check=0)
    assert "\r" not in res.err and "\x1b" not in res.err and "%" not in res.err, res
