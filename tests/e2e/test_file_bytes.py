"""Large contiguous datasets are copied as file bytes (copy_file_range, or
pread/pwrite across filesystems). The stored bytes of every piece equal the
input's byte range, and the result equals the slab path's (h5diff)."""
import os
import resource
import shutil
import struct

import h5py
import numpy as np
import pytest

from conftest import ENV, assert_one_line_error, h5diff, listing, run, write_spec

SLAB_ENV = dict(ENV, MICROBATCH_NO_RAW_COPY="1")
USED = "copied as file bytes"


def stored(path, name):
    """The bytes of a contiguous dataset as they sit in its file."""
    with h5py.File(path, "r") as f:
        d = f[name]
        offset, size = d.id.get_offset(), d.id.get_storage_size()
    with open(path, "rb") as raw:
        raw.seek(offset)
        return raw.read(size)


def row_bytes(path, name, begin, end):
    with h5py.File(path, "r") as f:
        d = f[name]
        row = d.dtype.itemsize * int(np.prod(d.shape[1:]))
    return stored(path, name)[begin * row:end * row]


def make(path, rows=4000, cols=300, dtype=np.float32, **file_kw):
    data = np.random.default_rng(7).standard_normal((rows, cols)).astype(dtype)
    with h5py.File(path, "w", **file_kw) as f:
        f["x"] = data  # 4.8 MB contiguous
        f["small"] = np.arange(rows, dtype=np.int16)  # under 1 MiB: HDF5's own path
    return data


def assert_same_as_slab(src, tmp_path, *split_args, spec=None):
    extra = ["-s", spec] if spec else []
    raw, slab = tmp_path / "raw", tmp_path / "slab"
    res = run("split", src, *extra, *split_args, "-o", raw, "-v", check=0)
    assert USED in res.err
    run("split", src, *extra, *split_args, "-o", slab, check=0, env=SLAB_ENV)
    names = sorted(n for n in os.listdir(raw) if n.endswith(".h5"))
    assert names == sorted(n for n in os.listdir(slab) if n.endswith(".h5"))
    for name in names:
        assert h5diff(raw / name, slab / name) == 0, name
    res = run("merge", raw, "-o", tmp_path / "m.h5", "-v", check=0)
    assert USED in res.err
    assert h5diff(src, tmp_path / "m.h5") == 0
    return raw


@pytest.mark.parametrize("n", [1, 3, 7])
def test_pieces_hold_the_inputs_bytes(tmp_path, n):
    src = tmp_path / "in.h5"
    make(src)
    raw = assert_same_as_slab(src, tmp_path, "-n", n)
    bounds = np.cumsum([0] + [len(p) for p in np.array_split(np.arange(4000), n)])
    for i in range(n):
        got = stored(raw / f"microbatch-{i:05d}.h5", "x")
        assert got == row_bytes(src, "x", bounds[i], bounds[i + 1])
    assert stored(tmp_path / "m.h5", "x") == stored(src, "x")


def test_input_with_a_user_block(tmp_path):
    # Addresses inside the file are relative to the end of the user block.
    src = tmp_path / "in.h5"
    data = make(src, userblock_size=4096)
    raw = assert_same_as_slab(src, tmp_path, "-n", 4)
    with h5py.File(raw / "microbatch-00001.h5", "r") as f:
        np.testing.assert_array_equal(f["x"][()], data[1000:2000])


def test_split_along_a_later_axis(tmp_path):
    # Axis 1: one run of bytes per index of axis 0, when runs are long enough.
    src = tmp_path / "in.h5"
    data = np.random.default_rng(3).integers(0, 1 << 30, size=(4, 200_000)).astype(np.int32)
    with h5py.File(src, "w") as f:
        f["x"] = data
    spec = write_spec(tmp_path / "s.json", {"x": 1})
    raw = assert_same_as_slab(src, tmp_path, "-n", 3, spec=spec)
    with h5py.File(raw / "microbatch-00002.h5", "r") as f:
        np.testing.assert_array_equal(f["x"][()], np.array_split(data, 3, axis=1)[2])


@pytest.mark.parametrize("dtype", [">i8", np.complex64, np.dtype([("a", "<u2"), ("b", ">f8", (3,))])])
def test_types_are_copied_as_stored(tmp_path, dtype):
    src = tmp_path / "in.h5"
    data = np.zeros(200_000, dtype=dtype)  # over 1 MiB: not read whole
    raw_bytes = np.random.default_rng(5).integers(0, 256, size=data.nbytes, dtype=np.uint8)
    data = raw_bytes.view(dtype)  # any bit pattern, NaNs included
    with h5py.File(src, "w") as f:
        f["x"] = data
    raw = assert_same_as_slab(src, tmp_path, "-n", 2)
    assert stored(raw / "microbatch-00000.h5", "x") == row_bytes(src, "x", 0, len(data) // 2)


def test_unwritten_dataset_and_user_fill_value(tmp_path):
    # Never written: no storage to copy, the fill value stands for every element.
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("empty", shape=(1000, 300), dtype=np.float32, fillvalue=2.5)
        filled = f.create_dataset("filled", shape=(1000, 300), dtype=np.float32, fillvalue=-1.0)
        filled[:500] = 1.0
    run("split", src, "-n", 3, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0
    with h5py.File(tmp_path / "mb" / "microbatch-00002.h5", "r") as f:
        assert f["empty"].fillvalue == 2.5
        assert (f["empty"][()] == 2.5).all()
        assert (f["filled"][()] == -1.0).all()


def test_variable_length_strings_are_not_copied_as_bytes(tmp_path):
    # Their elements point into the file's heap: bytes would dangle.
    src = tmp_path / "in.h5"
    words = np.array([f"word {i}" * (i % 7) for i in range(100_000)], dtype=object)
    with h5py.File(src, "w") as f:
        f.create_dataset("t", data=words, dtype=h5py.string_dtype())
    res = run("split", src, "-n", 3, "-o", tmp_path / "mb", "-v", check=0)
    assert USED not in res.err
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))


def test_output_on_another_filesystem(tmp_path):
    # The kernel refuses copy_file_range across filesystems; bytes go through a buffer.
    shm = "/dev/shm"
    if not os.path.isdir(shm) or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem at /dev/shm")
    src = tmp_path / "in.h5"
    make(src)
    out = os.path.join(shm, f"microbatch-test-{os.getpid()}")
    try:
        res = run("split", src, "-n", 3, "-o", out, "-v", "--buffer-size", "1", check=0)
        assert USED in res.err
        run("merge", out, "-o", tmp_path / "m.h5", check=0)
        assert h5diff(src, tmp_path / "m.h5") == 0
        assert stored(tmp_path / "m.h5", "x") == stored(src, "x")
        # A failed write on the buffered path: one line naming the output, nothing left.
        shutil.rmtree(out)
        res = run("split", src, "-n", 2, "-o", out, preexec_fn=limit_file_size)
        assert_one_line_error(res, 1, "microbatch-0000", "/x: cannot write data (File too large)")
        assert listing(out) == []
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_truncated_input_fails_cleanly(tmp_path):
    src = tmp_path / "in.h5"
    make(src)
    with h5py.File(src, "r") as f:
        end = f["x"].id.get_offset() + 600_000
    with open(src, "r+b") as f:
        f.truncate(end)
    res = run("split", src, "-n", 2, "-o", tmp_path / "mb")
    assert res.code == 1, res
    assert len([line for line in res.err.splitlines() if line.strip()]) == 1, res
    published = [n for n in os.listdir(tmp_path / "mb")] if (tmp_path / "mb").exists() else []
    assert published == []
    assert os.path.getsize(src) == end


@pytest.mark.parametrize("layout", [["--dp-degree", "2"], ["--dp-degree", "2", "--align"],
                                    ["--dp-degree", "2", "--layout", "per-rank"]])
def test_data_parallel_row_maps(tmp_path, layout):
    # Each microbatch joins a piece of every shard: several byte runs land
    # one after another in one output (strided align pieces go through HDF5).
    src = tmp_path / "in.h5"
    make(src)
    raw, slab = tmp_path / "raw", tmp_path / "slab"
    run("split", src, "-n", 3, *layout, "-o", raw, check=0)
    run("split", src, "-n", 3, *layout, "-o", slab, check=0, env=SLAB_ENV)
    names = sorted(n for n in os.listdir(raw) if n.endswith(".h5"))
    assert names and names == sorted(n for n in os.listdir(slab) if n.endswith(".h5"))
    for name in names:
        assert h5diff(raw / name, slab / name) == 0, name
    run("merge", raw, "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0
    assert stored(tmp_path / "m.h5", "x") == stored(src, "x")


def test_file_size_limit_during_a_kernel_copy(tmp_path):
    # copy_file_range fails with EFBIG: one line naming the output, nothing left.
    src = tmp_path / "in.h5"
    make(src)
    res = run("split", src, "-n", 2, "-o", tmp_path / "mb", preexec_fn=limit_file_size)
    assert_one_line_error(res, 1, "microbatch-0000", "/x: cannot copy data (File too large)")
    assert listing(tmp_path / "mb") == []
    run("split", src, "-n", 4, "-o", tmp_path / "ok", check=0)
    res = run("merge", tmp_path / "ok", "-o", tmp_path / "m.h5", preexec_fn=limit_file_size)
    assert_one_line_error(res, 1, "m.h5: /x: cannot copy data (File too large)")
    assert not (tmp_path / "m.h5").exists()


def test_data_address_past_the_end_of_the_file(tmp_path):
    # A corrupt layout message can place a dataset's bytes past the end of the
    # file (HDF5 checks this when it reads, the kernel copy must too).
    src = tmp_path / "in.h5"
    make(src)
    data = bytearray(src.read_bytes())
    layout = struct.pack("<QQ", 2048, 4000 * 300 * 4)  # contiguous layout: address, size of /x
    with h5py.File(src, "r") as f:
        assert f["x"].id.get_offset() == 2048
    at = data.index(layout)
    data[at:at + 8] = struct.pack("<Q", len(data) - 1000)
    (tmp_path / "bad.h5").write_bytes(bytes(data))
    res = run("split", tmp_path / "bad.h5", "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "bad.h5: /x: the file ends before the dataset's data")
    assert listing(tmp_path / "mb") == []
    res = run("split", tmp_path / "bad.h5", "-n", 2, "-o", tmp_path / "mb", env=SLAB_ENV)
    assert_one_line_error(res, 1, "bad.h5: /x: cannot read data")
