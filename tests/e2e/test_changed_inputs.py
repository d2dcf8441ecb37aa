"""A local input changed while a run reads it: rewritten in place (same
inode, same size), or truncated and written again, between the start of the
run and its end. The run must refuse (exit 3: a rerun reads the new
version whole; nothing published), never
publish a mix of the two versions. The pause shim holds the run just after
it created its first output, when it has read the input's tree but not all
of its data; the test changes the input, then lets it go on."""
import h5py
import numpy as np
import pytest

from conftest import BINARY, assert_one_line_error, h5diff, held_run, listing, run


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
