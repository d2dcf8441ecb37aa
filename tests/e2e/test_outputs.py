"""Outputs: runs onto one output at the same time (one wins, the other fails,
nothing mixes), and output paths that are not regular files (refused, left
as they are)."""
import fcntl
import json
import os
import signal
import stat
import subprocess
import time

import h5py
import numpy as np
import pytest

from conftest import BINARY, ENV, assert_one_line_error, h5diff, held_run, listing, run

TRIAL_SECONDS = 60  # each concurrency test stops starting trials after this


def big(path, seed, rows):
    """Large enough that a split takes a few tenths of a second."""
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(seed).standard_normal((rows, 256)).astype(np.float32),
                         chunks=(16, 256))
        for k in range(400):
            f[f"g/d{k}"] = np.arange(rows) + seed
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    return {"a": big(d / "a.h5", 1, 4000), "b": big(d / "b.h5", 2, 5000)}


class Proc:
    def __init__(self, *args):
        self.popen = subprocess.Popen([BINARY, *map(str, args)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True, env=ENV)

    def finish(self):
        _, self.err = self.popen.communicate(timeout=300)
        self.code = self.popen.returncode
        return self


def manifest_files(directory):
    with open(directory / "manifest.json") as f:
        manifest = json.load(f)
    return manifest, [e if isinstance(e, str) else e["name"] for e in manifest["files"]]


def assert_one_split(directory, merged):
    """The directory holds exactly one finished split, nothing else (no lock
    file, no temporaries); returns the input it was split from."""
    manifest, files = manifest_files(directory)
    assert listing(directory) == sorted(files + ["manifest.json"])
    run("merge", directory, "-o", merged, "--force", check=0)
    assert h5diff(manifest["source"], merged) == 0
    return manifest["source"]


def lost(code):
    """A loser's exit status: 3 when it found the output locked by the winner (a retry may succeed),
    1 when it found the winner's output (that wants --force or another output)."""
    return code in (1, 3)


def assert_lost_cleanly(proc):
    locked = "another microbatch run is writing this output" in proc.err
    assert proc.code == (3 if locked else 1), proc.err
    lines = [l for l in proc.err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("microbatch: error: "), proc.err


def trials():
    deadline = time.monotonic() + TRIAL_SECONDS
    for k in range(12):
        if k >= 3 and time.monotonic() > deadline:
            return
        yield k


def test_two_splits_into_one_directory_at_once_one_wins(tmp_path, inputs):
    """Without --force exactly one of two simultaneous splits succeeds (the
    other finds the directory locked, or finds the winner's finished split),
    and the directory holds the winner's split alone."""
    for k in trials():
        out = tmp_path / f"mb{k}"
        a = Proc("split", inputs["a"], "-n", 3, "-o", out, "-q")
        b = Proc("split", inputs["b"], "-n", 5, "-o", out, "-q")
        a, b = a.finish(), b.finish()
        assert sorted([a.code, b.code])[0] == 0 and lost(max(a.code, b.code)), (a.err, b.err)
        winner, loser = (a, b) if a.code == 0 else (b, a)
        assert_lost_cleanly(loser)
        source = assert_one_split(out, tmp_path / "m.h5")
        assert source == str(inputs["a"] if winner is a else inputs["b"])


def test_two_forced_splits_into_one_directory_never_mix(tmp_path, inputs):
    """With --force both may succeed, one after the other (the later replaces
    the earlier's split); when they overlap one fails. Either way the
    directory ends with one whole split, of a run that succeeded."""
    for k in trials():
        out = tmp_path / f"mb{k}"
        run("split", inputs["a"], "-n", 2, "-o", out, "-q", check=0)
        a = Proc("split", inputs["a"], "-n", 3, "-o", out, "-q", "--force")
        b = Proc("split", inputs["b"], "-n", 5, "-o", out, "-q", "--force")
        a, b = a.finish(), b.finish()
        assert 0 in (a.code, b.code), (a.err, b.err)
        for p in (a, b):
            if p.code:
                assert_lost_cleanly(p)
        source = assert_one_split(out, tmp_path / "m.h5")
        assert source in [str(inputs[n]) for n, p in (("a", a), ("b", b)) if p.code == 0]


def test_two_merges_onto_one_output_at_once_one_wins(tmp_path, inputs):
    """Without --force the later publish never replaces the earlier: exactly
    one merge succeeds and the output is its merge. With --force both may
    succeed one after the other; a run that overlaps one that published
    fails instead of replacing it."""
    for name in inputs:
        run("split", inputs[name], "-n", 4, "-o", tmp_path / name, check=0)
    for k in trials():
        out = tmp_path / f"m{k}.h5"
        a = Proc("merge", tmp_path / "a", "-o", out, "-q")
        b = Proc("merge", tmp_path / "b", "-o", out, "-q")
        a, b = a.finish(), b.finish()
        assert sorted([a.code, b.code])[0] == 0 and lost(max(a.code, b.code)), (a.err, b.err)
        assert_lost_cleanly(a if a.code else b)
        assert h5diff(inputs["a"] if a.code == 0 else inputs["b"], out) == 0
        a = Proc("merge", tmp_path / "a", "-o", out, "-q", "--force")
        b = Proc("merge", tmp_path / "b", "-o", out, "-q", "--force")
        a, b = a.finish(), b.finish()
        assert 0 in (a.code, b.code), (a.err, b.err)
        for p in (a, b):
            if p.code:
                assert_lost_cleanly(p)
        assert any(h5diff(inputs[n], out) == 0 for n, p in (("a", a), ("b", b)) if p.code == 0)
        assert [f for f in listing(tmp_path) if f.startswith(".")] == []


def test_a_split_output_that_appears_during_the_run_is_never_replaced(tmp_path, inputs):
    """A file put under a microbatch name while split writes (by something
    that ignores the lock; here while the split is held in its first output
    file, past its first look at the directory): split fails instead of
    publishing over it, and removes only its own files."""
    out = tmp_path / "mb"

    def plant(_):
        with open(out / "microbatch-00001.h5", "xb") as f:
            f.write(b"someone else's")

    res = held_run(tmp_path, [BINARY, "split", inputs["a"], "-n", 3, "-o", out, "-q"], plant)
    assert_lost_cleanly(res)
    assert "microbatch-00001.h5" in res.err and "appeared" in res.err, res
    assert (out / "microbatch-00001.h5").read_bytes() == b"someone else's"
    assert listing(out) == ["microbatch-00001.h5"]


def test_a_held_lock_refuses_and_a_stale_one_is_harmless(tmp_path, inputs):
    out = tmp_path / "mb"
    out.mkdir()
    with open(out / ".microbatch.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        res = run("split", inputs["a"], "-n", 2, "-o", out)
        assert_one_line_error(res, 3, str(out), "another microbatch run", ".microbatch.lock")
        assert listing(out) == [".microbatch.lock"]
    # left by a run that was SIGKILLed: nobody holds it
    run("split", inputs["a"], "-n", 2, "-o", out, check=0)
    assert assert_one_split(out, tmp_path / "m.h5") == str(inputs["a"])


def test_a_killed_splits_temporaries_are_removed_by_the_next_split(tmp_path, inputs):
    # A SIGKILLed split (or a team's rank mpirun killed) leaves .NAME.tmp-PID files: the next split holds
    # the directory's lock, so they are no live run's; it removes them, --force or not.
    out = tmp_path / "mb"
    out.mkdir()
    left = [out / ".microbatch-00001.h5.tmp-4194000", out / ".manifest.json.tmp-4194000",
            out / ".microbatch-00000.h5.aside-4194000",  # an earlier split's file a killed --force set aside
            out / "..microbatch-00000.h5.journal.tmp-4194000",  # a journal entry being written (--resume)
            out / ".part-00000-of-00002.json.tmp-4194000"]
    for f in left:
        f.write_bytes(b"\0" * 4096)
    (out / ".notes.txt.tmp-1").write_text("not a split's")
    res = run("split", inputs["a"], "-n", 2, "-o", out, check=0)
    assert [n for n in listing(out) if n.startswith(".")] == [".notes.txt.tmp-1"]  # not a split's: left alone
    (out / ".notes.txt.tmp-1").unlink()
    assert assert_one_split(out, tmp_path / "m.h5") == str(inputs["a"])
    # The work lost is the one microbatch file's: not the manifest, journal entry or part record being written.
    assert f"{out}: removed 1 temporary file a killed split left" in res.err, res


@pytest.mark.parametrize("flags,shown", [(["-n", 2], "-n 2"),
                                         (["--micro-batch-size", 2, "--dp-degree", 2], "--micro-batch-size 2 --dp-degree 2")])
def test_a_split_over_an_earlier_split_says_which_split_it_is(tmp_path, batch, flags, shown):
    out = tmp_path / "mb"
    run("split", batch, *flags, "-o", out, check=0)
    before = {n: (out / n).read_bytes() for n in listing(out)}
    written = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.stat(out / "manifest.json").st_mtime))
    res = run("split", batch, "-n", 5, "-o", out)
    assert_one_line_error(res, 1, f"{out}: holds the output of an earlier split (manifest.json: a split of {batch} "
                                  f"with {shown}, written {written}); use --force to replace it")
    assert {n: (out / n).read_bytes() for n in listing(out)} == before


RESUME_HINT = "split --resume would have kept the files it had finished"


def test_the_rerun_of_a_killed_split_says_that_resume_keeps_finished_files(tmp_path, inputs):
    out = tmp_path / "mb"
    res = held_run(tmp_path, [BINARY, "split", inputs["a"], "-n", 3, "-o", out],
                   lambda proc: proc.send_signal(signal.SIGKILL), resume=False)
    assert res.code == -signal.SIGKILL, res
    left = [n for n in listing(out) if ".tmp-" in n]
    assert left, listing(out)
    res = run("split", inputs["a"], "-n", 3, "-o", out, check=0)
    hints = [l for l in res.err.splitlines() if RESUME_HINT in l]
    assert len(hints) == 1 and hints[0].startswith("microbatch: info: "), res
    assert f"{out}: removed {len(left)} temporary file" in hints[0], res
    assert [n for n in listing(out) if n.startswith(".")] == []
    assert assert_one_split(out, tmp_path / "m.h5") == str(inputs["a"])
    # a split with nothing of a killed run to remove says nothing of it
    res = run("split", inputs["a"], "-n", 3, "-o", out, "--force", check=0)
    assert RESUME_HINT not in res.err, res


def test_force_sets_the_earlier_files_aside_and_removes_them_before_it_ends(tmp_path, inputs):
    out = tmp_path / "mb"
    run("split", inputs["a"], "-n", 4, "-o", out, check=0)
    held = [os.open(out / f"microbatch-{i:05d}.h5", os.O_RDONLY) for i in range(4)]  # the earlier files
    try:
        run("split", inputs["b"], "-n", 4, "-o", out, "--force", check=0)
        assert [os.fstat(fd).st_nlink for fd in held] == [0] * 4  # removed, not merely renamed
    finally:
        for fd in held:
            os.close(fd)
    assert [n for n in listing(out) if n.startswith(".")] == []
    assert assert_one_split(out, tmp_path / "m.h5") == str(inputs["b"])


def test_merge_force_frees_the_replaced_file_in_a_process_of_its_own(tmp_path, inputs):
    """The file a merge --force replaces loses its last reference (and the kernel frees its blocks) in
    another process than the merge's, as strace -f -y shows: the rename that replaces it costs no time."""
    merged, log = tmp_path / "m.h5", tmp_path / "strace.log"
    run("split", inputs["a"], "-n", 4, "-o", tmp_path / "a", check=0)
    run("split", inputs["b"], "-n", 4, "-o", tmp_path / "b", check=0)
    run("merge", tmp_path / "a", "-o", merged, check=0)
    # LeakSanitizer cannot run under ptrace: a sanitizer build's run is traced without it.
    env = dict(ENV, ASAN_OPTIONS=":".join(filter(None, [ENV.get("ASAN_OPTIONS"), "detect_leaks=0"])))
    traced = subprocess.run(["strace", "-f", "-y", "-e", "trace=close,exit_group", "-o", log, BINARY, "merge",
                             tmp_path / "b", "-o", merged, "--force"], env=env, capture_output=True, timeout=300)
    assert traced.returncode == 0, traced.stderr
    assert h5diff(inputs["b"], merged) == 0
    lines = log.read_text().splitlines()
    merge_pid = lines[0].split()[0]
    closers = [ln.split()[0] for ln in lines if "close(" in ln and f"<{merged}>(deleted)" in ln]
    assert closers and closers[-1] != merge_pid, closers  # the last reference is dropped elsewhere
    assert any(ln.split()[0] == closers[-1] and "+++ exited with 0 +++" in ln for ln in lines)  # and it ended


def test_a_running_shards_temporaries_are_not_removed(tmp_path, inputs):
    out = tmp_path / "mb"
    out.mkdir()
    theirs = out / ".microbatch-00001.h5.tmp-4194000"
    theirs.write_bytes(b"theirs")
    with open(out / ".microbatch.lock.shard-00000-of-00002", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        res = run("split", inputs["a"], "-n", 2, "-o", out, "--force")
        assert_one_line_error(res, 3, str(out), "a shard run", ".microbatch.lock.shard-00000-of-00002")
    assert theirs.read_bytes() == b"theirs"


# --- output paths that are not regular files --------------------------------

def assert_dev_null_intact():
    assert os.path.exists("/dev/null") and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_merge_never_replaces_a_fifo_a_device_or_a_symlink(tmp_path, batch):
    run("split", batch, "-n", 2, "-o", tmp_path / "mb", check=0)
    fifo = tmp_path / "fifo.h5"
    os.mkfifo(fifo)
    to_null = tmp_path / "null.h5"
    os.symlink("/dev/null", to_null)
    (tmp_path / "real.h5").write_text("keep me")
    to_file = tmp_path / "link.h5"
    os.symlink(tmp_path / "real.h5", to_file)
    dangling = tmp_path / "dangling.h5"
    os.symlink(tmp_path / "nowhere.h5", dangling)
    for path, what in [(fifo, "a FIFO"), (to_null, "a symbolic link"), (to_file, "a symbolic link"),
                       (dangling, "a symbolic link")]:
        for force in ([], ["--force"]):
            res = run("merge", tmp_path / "mb", "-o", path, *force)
            assert_one_line_error(res, 1, str(path), what, "not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.readlink(to_null) == "/dev/null" and os.readlink(to_file) == str(tmp_path / "real.h5")
    assert (tmp_path / "real.h5").read_text() == "keep me"
    assert_dev_null_intact()
    assert [f for f in listing(tmp_path) if f.startswith(".")] == []


@pytest.mark.parametrize("name,make,what", [
    ("microbatch-00000.h5", os.mkfifo, "a FIFO"),
    ("manifest.json", os.mkdir, "a directory"),
    ("microbatch-00001.h5", lambda p: os.symlink("/dev/null", p), "a symbolic link"),
    (".microbatch-00000.h5.tmp-1", os.mkfifo, "a FIFO"),
])
def test_split_never_replaces_entries_that_are_not_regular_files(tmp_path, batch, name, make, what):
    out = tmp_path / "mb"
    run("split", batch, "-n", 2, "-o", out, check=0)
    target = out / name
    if os.path.lexists(target):
        os.remove(target)
    make(target)
    before = listing(out)
    for force in ([], ["--force"]):
        res = run("split", batch, "-n", 2, "-o", out, *force)
        assert_one_line_error(res, 1, str(target), what, "not a regular file")
        assert listing(out) == before
    assert os.path.lexists(target) and not stat.S_ISREG(os.lstat(target).st_mode)
    assert_dev_null_intact()
