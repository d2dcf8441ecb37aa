"""split --resume: a run stopped at any moment (SIGKILL of its processes, SIGTERM) leaves the files it
published and their journal entries, never a manifest; a rerun of the same command keeps each file whose
bytes match its entry (same inode, same modification time), writes only the rest and ends with the bytes an
uninterrupted run writes (cmp, then verify). A tampered file or a damaged entry is written again; another
command, or the input changed since, is refused and nothing changes; over the same command's finished split
a rerun does nothing and exits 0."""
import filecmp
import json
import os
import signal

import h5py
import numpy as np
import pytest

from conftest import BINARY, assert_one_line_error, children, held_run, listing, run, summary, write_spec

FILES = 8


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """A contiguous float32 batch of 8 MiB and an int64 index, its spec, and an uninterrupted split of it."""
    d = tmp_path_factory.mktemp("resume")
    src = d / "in.h5"
    rng = np.random.default_rng(45)
    with h5py.File(src, "w") as f:
        f["x"] = rng.random((64, 32768), dtype=np.float32)
        f["index"] = np.arange(64, dtype=np.int64)
        f["meta/step"] = np.int64(7)
    spec = write_spec(d / "s.json", {"meta": "replicate", "*": 0})
    run("split", src, "-s", spec, "-n", FILES, "-o", d / "ref", check=0)
    return src, spec, d / "ref"


def names(i):
    return f"microbatch-{i:05d}.h5"


def stamps(out):
    """Inode and modification time of each microbatch file under its final name."""
    return {n: (os.stat(out / n).st_ino, os.stat(out / n).st_mtime_ns) for n in listing(out)
            if n.startswith("microbatch-")}


def journal(out):
    return sorted(n for n in listing(out) if n.endswith(".journal"))


def assert_same_as(out, ref):
    """Every file of the uninterrupted split, byte for byte; nothing else but them."""
    assert listing(out) == listing(ref)
    for name in listing(ref):
        assert filecmp.cmp(out / name, ref / name, shallow=False), name
    run("verify", out, check=0)


def kill_all(proc):
    for pid in children(proc.pid) + [proc.pid]:
        os.kill(pid, signal.SIGKILL)


def stopped_run(tmp_path, batch, out, during, *flags, at=4):
    """A --resume split held as it closes file `at`, `during(proc)` done to it; returns its Result."""
    src, spec, _ = batch
    return held_run(tmp_path, [BINARY, "split", src, "-s", spec, "-n", FILES, "-o", out, "--resume", "-q", *flags],
                    during, close=f".{names(at)}.tmp-", resume=False)


def resumed(batch, out, *flags, code=0):
    src, spec, _ = batch
    res = run("split", src, "-s", spec, "-n", FILES, "-o", out, "--resume", "--json", *flags)
    assert res.code == code, res
    return summary(res, "split-summary") if code == 0 else res


@pytest.mark.parametrize("flags", [[], ["-j", "2"]], ids=["one process", "-j 2"])
def test_a_killed_run_is_finished_by_a_rerun_that_keeps_what_it_published(tmp_path, batch, flags):
    out = tmp_path / "out"
    res = stopped_run(tmp_path, batch, out, kill_all, *flags)
    assert res.code == -signal.SIGKILL, res
    published = stamps(out)
    assert sorted(published) == [names(i) for i in range(4)]  # the files before the one being closed
    assert journal(out) == [f".{n}.journal" for n in sorted(published)]
    assert "manifest.json" not in listing(out)
    report = resumed(batch, out, *flags)
    assert report["kept_files"] == 4
    assert report["kept_bytes"] == sum(os.path.getsize(out / n) for n in published)
    assert {n: v for n, v in stamps(out).items() if n in published} == published  # not written again
    assert_same_as(out, batch[2])


def test_sigterm_leaves_the_published_files_for_a_rerun(tmp_path, batch):
    out = tmp_path / "out"
    res = stopped_run(tmp_path, batch, out, lambda proc: proc.send_signal(signal.SIGTERM), at=3)
    assert res.code == 130 and "interrupted" in res.err, res
    published = stamps(out)
    assert sorted(published) == [names(i) for i in range(3)]
    assert [n for n in listing(out) if n.startswith(".") and not n.endswith(".journal")] == []  # no temporary
    assert resumed(batch, out)["kept_files"] == 3
    assert {n: v for n, v in stamps(out).items() if n in published} == published
    assert_same_as(out, batch[2])


def test_a_tampered_file_or_a_damaged_entry_is_written_again(tmp_path, batch):
    out = tmp_path / "out"
    stopped_run(tmp_path, batch, out, kill_all, at=6)
    with open(out / names(1), "r+b") as f:  # a flipped byte, same size
        f.seek(os.path.getsize(out / names(1)) - 100)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 1]))
    os.truncate(out / names(2), 1000)
    with open(out / f".{names(3)}.journal", "a") as f:
        f.write("garbage")
    entry = json.loads(open(out / f".{names(4)}.journal").read())
    entry["run"] = "0" * 32  # another run's entry
    open(out / f".{names(4)}.journal", "w").write(json.dumps(entry))
    before = stamps(out)
    report = resumed(batch, out)
    assert report["kept_files"] == 2  # files 0 and 5
    after = stamps(out)
    assert [n for n in before if after[n] == before[n]] == [names(0), names(5)]
    assert_same_as(out, batch[2])


def test_over_the_same_commands_finished_split_a_rerun_does_nothing(tmp_path, batch):
    out = tmp_path / "out"
    first = resumed(batch, out)  # no earlier run: a plain split
    assert first["kept_files"] == 0
    assert_same_as(out, batch[2])
    before = {n: os.stat(out / n).st_mtime_ns for n in listing(out)}
    again = resumed(batch, out)
    assert again["kept_files"] == FILES and again["data_bytes"] == 0
    assert {n: os.stat(out / n).st_mtime_ns for n in listing(out)} == before


def test_another_command_or_a_changed_input_is_refused_and_nothing_changes(tmp_path, batch):
    src, spec, ref = batch
    out = tmp_path / "out"
    stopped_run(tmp_path, batch, out, kill_all)

    def kept():  # the published files and journal (the killed run's temporary and lock file go at any claim)
        return {n: open(out / n, "rb").read() for n in listing(out) if ".tmp-" not in n and not n.endswith(".lock")}

    before = kept()
    res = run("split", src, "-s", spec, "-n", 4, "-o", out, "--resume")
    assert_one_line_error(res, 1, str(out), "--force")
    changed = tmp_path / "in.h5"
    with h5py.File(src) as a, h5py.File(changed, "w") as b:
        for name in ("x", "index", "meta/step"):
            b[name] = a[name][()]
    res = run("split", changed, "-s", spec, "-n", FILES, "-o", out, "--resume")
    assert_one_line_error(res, 1, "not an earlier run of this command")
    res = run("split", src, "-s", spec, "-n", FILES, "-o", out)  # a plain split: continue it, or replace it
    assert_one_line_error(res, 1, "unfinished split", "--resume", "--force")
    assert kept() == before
    run("split", src, "-s", spec, "-n", FILES, "-o", out, "--force", check=0)
    assert_same_as(out, ref)  # the journal went with the files it replaced


def test_an_input_modified_after_a_finished_split_is_refused(tmp_path, batch):
    src, spec, ref = batch
    own = tmp_path / "in.h5"
    own.write_bytes(src.read_bytes())
    out = tmp_path / "out"
    run("split", own, "-s", spec, "-n", FILES, "-o", out, check=0)
    later = os.stat(out / "manifest.json").st_mtime_ns + 10**9
    os.utime(own, ns=(later, later))
    res = run("split", own, "-s", spec, "-n", FILES, "-o", out, "--resume")
    assert_one_line_error(res, 1, "older than the input", "--force")
    os.utime(own, ns=(later - 10**10, later - 10**10))
    assert resumed((own, spec, ref), out)["kept_files"] == FILES


def test_a_finished_split_whose_file_changed_is_refused(tmp_path, batch):
    src, spec, _ = batch
    out = tmp_path / "out"
    run("split", src, "-s", spec, "-n", FILES, "-o", out, check=0)
    os.truncate(out / names(2), 10)
    res = run("split", src, "-s", spec, "-n", FILES, "-o", out, "--resume")
    assert_one_line_error(res, 1, names(2), "no longer matches its manifest")


@pytest.mark.parametrize("flags,needle", [(["--force"], "--resume"), (["--shard", "0/2"], "shard"),
                                          (["--keep-local", "kept"], "--keep-local")])
def test_resume_with_options_it_cannot_honour_is_a_usage_error(tmp_path, batch, flags, needle):
    src, spec, _ = batch
    res = run("split", src, "-s", spec, "-n", FILES, "-o", tmp_path / "out", "--resume", *flags)
    assert_one_line_error(res, 2, needle)
    assert not (tmp_path / "out").exists()
