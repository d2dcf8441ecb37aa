"""A local input changed while a run reads it: rewritten in place (same
inode, same size), or truncated and written again, between the start of the
run and its end. The run must refuse (exit 3: a rerun reads the new
version whole; nothing published), never
publish a mix of the two versions. The pause shim holds the run just after
it created its first output, when it has read the input's tree but not all
of its data; the test changes the input, then lets it go on. An input
truncated, or replaced by a rename, may also fail a read before the end:
that failure is the change too (exit 3, "changed while it was read"), never
reported as a corrupt file, in every route (one process, -j workers, a team
of MPI ranks)."""
import os
import shutil

import h5py
import numpy as np
import pytest

import servers
from conftest import BINARY, ENV, assert_one_line_error, h5diff, held_run, in_a_stuck_read, listing, run
from test_mpi import MPI_BINARY, MPI_ENV
from test_reliability import CORRUPT, LIBRARY_FAULT_ENV
from test_upload import objects, s3  # noqa: F401  (fixtures)


def make(path, seed=0, rows=64):
    with h5py.File(path, "w") as f:
        f["x"] = np.random.default_rng(seed).integers(0, 1 << 30, size=(rows, 256))
        f["y"] = np.arange(rows, dtype=np.int32)
    return path


def last_row_offset(path):
    with h5py.File(path, "r") as f:
        x = f["x"]
        return x.id.get_offset() + (x.shape[0] - 1) * x.shape[1] * x.dtype.itemsize


def overwrite_in_place(path):
    """Other values in /x's last row, written over the file (dd conv=notrunc): the same size and inode.
    (The run holds HDF5's lock on the file, so another HDF5 writer would be turned away; this one is not.)"""
    at = last_row_offset(path)
    with open(path, "r+b") as f:
        f.seek(at)
        row = f.read(8)
        assert len(row) == 8
        f.seek(at)
        f.write(bytes(b ^ 0xFF for b in row))


def truncate_and_rewrite(path):
    """The file truncated, then written again with /x's last row changed: the same inode."""
    data = bytearray(path.read_bytes())
    at = last_row_offset(path)
    data[at] ^= 0xFF
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(data)


@pytest.mark.parametrize("change", [overwrite_in_place, truncate_and_rewrite])
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_split_whose_input_changed_while_read_publishes_nothing(tmp_path, change, jobs):
    src = make(tmp_path / "in.h5")
    out = tmp_path / "mb"
    res = held_run(tmp_path, [BINARY, "split", src, "-n", 4, "-j", jobs, "--buffer-size", 1, "-o", out],
                   lambda _: change(src))
    assert_one_line_error(res, 3, str(src), "changed while it was read")
    assert not out.exists() or listing(out) == [], listing(out)


def test_a_microbatch_file_changed_after_merge_checked_its_digest_is_refused(tmp_path):
    src = make(tmp_path / "in.h5")
    run("split", src, "-n", 4, "-o", tmp_path / "mb", check=0)
    victim = tmp_path / "mb" / "microbatch-00002.h5"
    merged = tmp_path / "m.h5"
    res = held_run(tmp_path, [BINARY, "merge", tmp_path / "mb", "-o", merged], lambda _: overwrite_in_place(victim))
    assert_one_line_error(res, 3, "microbatch-00002.h5", "changed while it was read")
    assert not merged.exists()
    assert [n for n in listing(tmp_path) if n.startswith(".m.h5")] == []


def test_an_unchanged_input_is_not_refused(tmp_path):
    # The same held run, with nothing changed (a read-only open of the input does not count): exact.
    src = make(tmp_path / "in.h5")
    out = tmp_path / "mb"

    def read_it(_):
        with h5py.File(src, "r") as f:
            f["x"][...]

    res = held_run(tmp_path, [BINARY, "split", src, "-n", 4, "-o", out], read_it)
    assert res.code == 0, res
    run("merge", out, "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def make_deep(path, rows=64):
    """A batch whose tree the split reads again as it copies: a gzip tensor whose chunks straddle the cuts
    (decompressed, not copied as stored), then a group of 200 small datasets, whose metadata lies in the
    file's last three quarters."""
    with h5py.File(path, "w") as f:
        f.create_dataset("z", data=np.random.default_rng(3).integers(0, 1 << 30, size=(rows, 256)),
                         chunks=(5, 256), compression="gzip")
        for i in range(200):
            f[f"g/d{i:03d}"] = np.arange(rows, dtype=np.int32) + i
    return path


def truncate(path):
    """The file cut to a quarter of its size, in place (the same inode): what lay beyond now reads as zeros."""
    os.truncate(path, path.stat().st_size // 4)


def replace_by_rename(path):
    """Another file renamed over it (what `cp x tmp && mv tmp path` does): a truncated copy of it."""
    other = path.with_name(path.name + ".new")
    shutil.copyfile(path, other)
    os.truncate(other, other.stat().st_size // 4)
    os.replace(other, path)


@pytest.mark.parametrize("change", [truncate, replace_by_rename])
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_split_whose_input_was_cut_while_read_says_it_changed(tmp_path, change, jobs):
    # The reads that meet the cut fail, as they would on a corrupt file; the run is refused as changed.
    src = make_deep(tmp_path / "in.h5")
    out = tmp_path / "mb"
    res = held_run(tmp_path, [BINARY, "split", src, "-n", 4, "-j", jobs, "--buffer-size", 1, "-o", out],
                   lambda _: change(src))
    assert_one_line_error(res, 3, str(src), "changed while it was read")
    assert not out.exists() or listing(out) == [], listing(out)


@pytest.mark.parametrize("change", [truncate, replace_by_rename])
def test_a_microbatch_file_cut_while_merge_reads_says_it_changed(tmp_path, change):
    src = make_deep(tmp_path / "in.h5")
    run("split", src, "-n", 4, "-o", tmp_path / "mb", check=0)
    victim = tmp_path / "mb" / "microbatch-00002.h5"
    merged = tmp_path / "m.h5"
    res = held_run(tmp_path, [BINARY, "merge", tmp_path / "mb", "-o", merged], lambda _: change(victim))
    assert_one_line_error(res, 3, "microbatch-00002.h5", "changed while it was read")
    assert not merged.exists()
    assert [n for n in listing(tmp_path) if n.startswith(".m.h5")] == []


@pytest.mark.skipif(not MPI_BINARY or shutil.which("mpirun") is None, reason="needs microbatch-mpi and mpirun")
@pytest.mark.parametrize("command", ["split", "merge"])
@pytest.mark.parametrize("change", ["truncate", "touch"])
def test_a_team_whose_input_changed_while_read_says_so(tmp_path, command, change):
    # Every rank that meets the cut, or finds the input changed, says so; mpirun passes exit 3 on. Touched
    # (written to, its bytes as they were), it reads without error: each rank looks before the team commits.
    src = make_deep(tmp_path / "in.h5")
    if command == "split":
        victim, out, args = src, tmp_path / "mb", ["split", src, "-n", 4, "--buffer-size", 1, "-o", tmp_path / "mb"]
    else:
        run("split", src, "-n", 4, "-o", tmp_path / "mb", check=0)
        victim, out, args = tmp_path / "mb" / "microbatch-00002.h5", tmp_path / "m.h5", ["merge", tmp_path / "mb",
                                                                                           "-o", tmp_path / "m.h5"]
    argv = ["mpirun", "--oversubscribe", "-np", "2", MPI_BINARY, *args]
    res = held_run(tmp_path, argv, lambda _: globals()[change](victim), env=MPI_ENV)
    assert res.code == 3, res
    errors = [line for line in res.err.splitlines() if line.startswith("microbatch: error: ")]
    assert errors and all("changed while it was read" in e or "failed (its own message says why)" in e
                          for e in errors), res
    assert any(victim.name in e and "changed while it was read" in e for e in errors), res
    assert "cannot" not in res.err and "corrupt" not in res.err, res
    if command == "split":
        assert not out.exists() or [n for n in listing(out) if not n.startswith(".")] == [], listing(out)
    else:
        assert not out.exists()


def touch(path):
    """Its modification time moved on by a second, as `touch` or a writer that left the bytes as they were."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_a_library_crash_on_an_input_changed_meanwhile_says_it_changed(tmp_path):
    # libhdf5 crashes on these bytes; had they changed while read, the change would be the cause, so a change
    # found when it crashes is the error (exit 3), not a corrupt file (exit 1, test_reliability.py).
    src = tmp_path / "vlen-heap-segv-dataset.h5"
    shutil.copyfile(os.path.join(CORRUPT, src.name), src)
    out = tmp_path / "mb"
    res = held_run(tmp_path, [BINARY, "split", src, "-n", 2, "-o", out], lambda _: touch(src), env=LIBRARY_FAULT_ENV)
    assert_one_line_error(res, 3, "the HDF5 library crashed (SIGSEGV) on",
                          f"{src}, which changed while it was read (it was written to)")
    assert "probably corrupt" not in res.err
    assert not out.exists() or listing(out) == [], listing(out)


def test_a_stalled_read_of_an_input_changed_meanwhile_says_it_changed(tmp_path):
    # The same for a read that loops in libhdf5: the input is touched once the run is in that read.
    src = tmp_path / "vlen-heap-loop.h5"
    shutil.copyfile(os.path.join(CORRUPT, src.name), src)
    out = tmp_path / "mb"
    res = in_a_stuck_read(tmp_path, [BINARY, "split", src, "-n", 2, "--stall-timeout", 3, "-o", out],
                          lambda _: touch(src), env=LIBRARY_FAULT_ENV)
    assert_one_line_error(res, 3, "no progress within --stall-timeout, on",
                          f"{src}: changed while it was read (it was written to)")
    assert "seems stuck" not in res.err
    assert not out.exists() or listing(out) == [], listing(out)


def rewrite_a_byte_with_itself(path):
    """A byte of the file written again with its own value: the bytes are the same, the file was written to
    all the same (its modification time moves), and the run cannot know what the write changed."""
    at = last_row_offset(path)
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(byte)
    later = os.stat(path).st_mtime_ns + 2_000_000_000  # past any timestamp granularity, without waiting
    os.utime(path, ns=(later, later))


@pytest.fixture
def proxy(s3):  # noqa: F811  (s3: test_upload's fixture)
    with servers.s3_proxy(s3) as p:
        yield p


CHANGES = [overwrite_in_place, truncate_and_rewrite, replace_by_rename, touch, rewrite_a_byte_with_itself]


@pytest.mark.parametrize("place", ["directory", "s3"])
@pytest.mark.parametrize("change", CHANGES, ids=[c.__name__ for c in CHANGES])
@pytest.mark.parametrize("command", ["split", "merge"])
def test_a_changed_input_commits_nothing_on_any_place(request, tmp_path, place, change, command):
    """docs/behavior.md's guarantee on each kind of place a run writes to: an input written, truncated,
    replaced or touched while read is exit 3 naming it, and nothing is committed (no manifest, no merged
    file or object) nor left."""
    env = dict(ENV, TMPDIR=str(tmp_path))
    proxy = None
    if place == "s3":
        if not servers.s3_installed():
            pytest.skip("s3rver is not installed (install-deps.sh)")
        s3 = request.getfixturevalue("s3")
        # Through the proxy, which passes on only whole requests, as S3 takes them: s3rver keeps the part of a
        # PUT it got before the client gave up, which S3 never does.
        proxy = request.getfixturevalue("proxy")
        env = dict(s3.env(ENV), TMPDIR=str(tmp_path), AWS_ENDPOINT_URL=proxy.endpoint)
        prefix = f"changed-{tmp_path.name}"
        out = s3.s3_url(f"{prefix}/") if command == "split" else s3.s3_url(f"{prefix}/m.h5")
        left = lambda: sorted(objects(s3, prefix))  # noqa: E731
    else:
        out = tmp_path / "out" if command == "split" else tmp_path / "m.h5"
        left = lambda: listing(out) if command == "split" and out.exists() else (  # noqa: E731
            [n for n in listing(tmp_path) if n.startswith(("m.h5", ".m.h5"))])
    src = make(tmp_path / "in.h5")
    if command == "split":
        changed, argv = src, [BINARY, "split", src, "-n", 4, "--buffer-size", 1, "-o", out]
    else:
        run("split", src, "-n", 4, "-o", tmp_path / "mb", check=0)
        changed, argv = tmp_path / "mb" / "microbatch-00003.h5", [BINARY, "merge", tmp_path / "mb", "--buffer-size",
                                                                   1, "-o", out]
    res = held_run(tmp_path, argv, lambda _: change(changed), env=env)
    assert_one_line_error(res, 3, str(changed), "changed while it was read")
    if proxy:
        proxy.wait_idle()
    assert left() == []
