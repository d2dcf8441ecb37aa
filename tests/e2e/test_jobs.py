"""split -j N: worker processes write their share of the files; the result is
the same as with one process, and a failure anywhere leaves nothing."""
import os
import resource
import signal
import subprocess

import h5py
import numpy as np
import pytest

from conftest import (BINARY, ENV, MIXED_SPEC, alive, assert_one_line_error, children, h5diff, listing,
                      make_mixed_batch, pause_shim, run, wait_until, write_spec)

BATCH = {"groups": 40, "group_attrs": True, "last_length": 62}  # make_mixed_batch's file for these tests


@pytest.mark.parametrize("jobs,n,extra", [(2, 5, []), (3, 8, []), (4, 3, []), (2, 4, ["--balance", "sequences"])])
def test_jobs_give_the_same_files_as_one_process(tmp_path, jobs, n, extra):
    src = tmp_path / "in.h5"
    make_mixed_batch(src, **BATCH)
    spec = write_spec(tmp_path / "s.json", MIXED_SPEC)
    run("split", src, "-s", spec, "-n", n, *extra, "-o", tmp_path / "one", check=0)
    run("split", src, "-s", spec, "-n", n, *extra, "-o", tmp_path / "many", "-j", jobs, check=0)
    assert listing(tmp_path / "one") == listing(tmp_path / "many")
    assert (tmp_path / "one" / "manifest.json").read_text() == (tmp_path / "many" / "manifest.json").read_text()
    for name in listing(tmp_path / "one"):
        if name.endswith(".h5"):
            assert h5diff(tmp_path / "one" / name, tmp_path / "many" / name) == 0, name
    run("merge", tmp_path / "many", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_jobs_with_per_rank_layout(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(240).reshape(24, 10)
    run("split", src, "-n", 3, "--dp-degree", 2, "--align", "--layout", "per-rank", "-j", 4, "-o", tmp_path / "mb",
        check=0)
    assert len([f for f in listing(tmp_path / "mb") if f.endswith(".h5")]) == 6
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_a_failing_worker_fails_the_whole_split_and_leaves_nothing(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.zeros((8, 1 << 18), np.float32)  # 8 MiB: each of 4 files gets 2 MiB
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))  # noqa: E731
    res = run("split", src, "-n", 4, "-j", 2, "-o", tmp_path / "mb", preexec_fn=limit)
    assert_one_line_error(res, 1, "File too large")
    assert listing(tmp_path / "mb") == []


def test_jobs_option_is_checked(tmp_path):
    src = tmp_path / "in.h5"
    make_mixed_batch(src, **BATCH)
    for jobs in 0, 257:  # 256 processes at most: a run registers every worker to stop it
        assert_one_line_error(run("split", src, "-n", 2, "-j", jobs, "-o", tmp_path / "mb"), 2, "--jobs")


def terminate_held_split(tmp_path, deaf):
    """SIGTERM to a held split alone (held_split): once it has ended its worker must be gone and its exit 130.
    Returns its stderr and its arguments."""
    proc, worker, args = held_split(tmp_path, deaf=deaf)
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        assert not alive(worker), "the worker outlived its split"
    finally:
        reap(proc, worker)
    err = (tmp_path / "err").read_text()
    assert proc.returncode == 130, err
    return err, args


def test_stop_signal_reaches_the_workers(tmp_path):
    """SIGTERM to the split alone, while it and its worker are each held in their first output file: the
    split passes it on, the worker stops and removes its temporaries, and only then the split exits 130.
    A worker that missed the signal would sit out its hold while the split's grace ran out; killed then,
    it would leave its temporaries (and the split would say so)."""
    err, _ = terminate_held_split(tmp_path, deaf=False)
    assert "interrupted by signal" in err and "did not stop in time" not in err, err
    assert listing(tmp_path / "mb") == [], listing(tmp_path / "mb")


def test_workers_do_not_outlive_a_killed_split(tmp_path):
    """SIGKILL of the split (scancel --batch --signal=KILL, the OOM killer)
    ends its workers too: an orphan would go on writing and hold the output's
    lock, so that the rerun is refused."""
    src = tmp_path / "in.h5"
    make_mixed_batch(src, **BATCH)
    spec = write_spec(tmp_path / "s.json", MIXED_SPEC)
    args = [BINARY, "split", src, "-s", spec, "-n", 4, "-o", tmp_path / "mb", "-j", 2]
    env = dict(ENV, LD_PRELOAD=pause_shim(tmp_path), MB_TEST_PAUSED=str(tmp_path / "paused"))
    proc = subprocess.Popen([str(a) for a in args], env=env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until((tmp_path / "paused").exists, "split did not create an output")
    workers = children(proc.pid)
    assert len(workers) == 1, workers
    proc.kill()
    proc.wait()
    try:
        wait_until(lambda: not any(alive(w) for w in workers), "a worker outlived the killed split")
    finally:
        for w in filter(alive, workers):
            os.kill(w, signal.SIGKILL)
    run(*args[1:], "--force", check=0)  # the killed run's temporaries are in the way, its lock is not
    run("split", src, "-s", spec, "-n", 4, "-o", tmp_path / "one", check=0)
    assert listing(tmp_path / "one") == listing(tmp_path / "mb")
    for name in listing(tmp_path / "one"):
        if name.endswith(".h5"):
            assert h5diff(tmp_path / "one" / name, tmp_path / "mb" / name) == 0, name


def held_split(tmp_path, deaf):
    """split -j 2 with both processes held in their first output file (`deaf`: signals do not end the wait,
    as a library call that is stuck); returns (process, worker pid, args)."""
    src = tmp_path / "in.h5"
    make_mixed_batch(src, **BATCH)
    spec = write_spec(tmp_path / "s.json", MIXED_SPEC)
    args = [BINARY, "split", src, "-s", spec, "-n", 4, "-o", tmp_path / "mb", "-j", 2]
    env = dict(ENV, LD_PRELOAD=pause_shim(tmp_path), MB_TEST_PAUSED=str(tmp_path / "paused"),
               MB_TEST_RESUME=str(tmp_path / "resume"))
    if deaf:
        env["MB_TEST_PAUSE_DEAF"] = "1"
    # stderr into a file: a pipe would let the test wait for the worker as well (its copy of the pipe).
    with open(tmp_path / "err", "w") as err:
        proc = subprocess.Popen([str(a) for a in args], env=env, stdin=subprocess.DEVNULL, stderr=err)
    wait_until((tmp_path / "paused").exists, "split did not create an output")
    [worker] = children(proc.pid)
    for pid in proc.pid, worker:
        wait_until((tmp_path / f"paused.{pid}").exists, f"process {pid} did not create an output")
    return proc, worker, args


def reap(proc, worker):
    proc.kill()
    proc.wait()
    if alive(worker):
        os.kill(worker, signal.SIGKILL)


def test_a_killed_split_frees_its_output_at_once(tmp_path):
    """A stuck worker of a SIGKILLed split dies with it: the rerun that
    follows at once (a batch system reporting the job ended) is not refused
    for a lock the orphan still holds."""
    proc, worker, args = held_split(tmp_path, deaf=True)
    try:
        proc.kill()
        proc.wait()
        wait_until(lambda: not alive(worker), "a worker outlived the killed split", timeout=1)
    finally:
        reap(proc, worker)
    run(*args[1:], check=0)
    assert not any(".tmp-" in n for n in listing(tmp_path / "mb")), listing(tmp_path / "mb")


def test_a_stuck_worker_ends_before_its_interrupted_split(tmp_path):
    """SIGTERM to the split alone, with every process stuck in a library
    call: at the end of its grace the split kills its worker and only then
    exits 130, so that no process of it is left once it is seen to end."""
    err, args = terminate_held_split(tmp_path, deaf=True)
    assert "did not return in time" in err and "workers that did not stop in time" in err, err
    assert not (tmp_path / "mb" / ".microbatch.lock").exists()
    run(*args[1:], check=0)  # what the killed worker left is removed
    assert not any(".tmp-" in n for n in listing(tmp_path / "mb")), listing(tmp_path / "mb")


def test_a_crashed_worker_keeps_its_split_s_lock(tmp_path):
    """A worker's forced exit removes its own temporaries only: the lock and
    the files of the split it belongs to are that split's, which goes on
    (and fails), and no other run gets into the output meanwhile."""
    proc, worker, args = held_split(tmp_path, deaf=False)
    try:
        os.kill(worker, signal.SIGSEGV)
        wait_until(lambda: not alive(worker), "the worker did not end")
        names = listing(tmp_path / "mb")
        assert ".microbatch.lock" in names, names
        assert not any(n.endswith(f".tmp-{worker}") for n in names), names  # the worker's own, removed
        assert any(n.endswith(f".tmp-{proc.pid}") for n in names), names  # the split's, kept
        other = run(*args[1:])
        assert_one_line_error(other, 3, "another microbatch run is writing this output")
        (tmp_path / "resume").touch()
        proc.wait(timeout=60)
    finally:
        reap(proc, worker)
    err = (tmp_path / "err").read_text()
    assert proc.returncode == 1 and "SIGSEGV" in err, err
    assert len([line for line in err.splitlines() if line.strip()]) == 1, err  # said by the split, once
    assert not (tmp_path / "mb").exists()



@pytest.mark.parametrize("deaf", [False, True], ids=["unwinds", "stuck"])
def test_ctrl_c_of_a_split_with_workers_prints_one_error_line(tmp_path, deaf):
    """Ctrl-C sends SIGINT to the terminal's whole process group: the split and its worker both get it, while
    each is held in its first output file (`deaf`: stuck there as in a library call, so that each one's grace
    runs out). The run says why it ended in one line: a worker tells its split, not the terminal."""
    src = tmp_path / "in.h5"
    make_mixed_batch(src, **BATCH)
    spec = write_spec(tmp_path / "s.json", MIXED_SPEC)
    args = [BINARY, "split", src, "-s", spec, "-n", 4, "-o", tmp_path / "mb", "-j", 2]
    env = dict(ENV, LD_PRELOAD=pause_shim(tmp_path), MB_TEST_PAUSED=str(tmp_path / "paused"))
    if deaf:
        env["MB_TEST_PAUSE_DEAF"] = "1"
    with open(tmp_path / "err", "w") as err:  # a file: the worker's stderr is the split's
        proc = subprocess.Popen([str(a) for a in args], env=env, stdin=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)  # a process group of its own, as a shell's job is
    try:
        wait_until((tmp_path / "paused").exists, "split did not create an output")
        [worker] = children(proc.pid)
        for pid in proc.pid, worker:
            wait_until((tmp_path / f"paused.{pid}").exists, f"process {pid} did not create an output")
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
        wait_until(lambda: not alive(worker), "the worker outlived its split")
    finally:
        reap(proc, worker)
    err = (tmp_path / "err").read_text()
    assert proc.returncode == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("microbatch: error: ") and "interrupted" in lines[0], err
