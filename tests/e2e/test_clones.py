"""Split writes the files of one shape signature as copies of a model written through libhdf5, with each file's own
data written over the model's (io/split/clone.hpp). Each path is forced here and judged two ways: byte for byte
against the same split with copies off (MICROBATCH_NO_CLONES), and by h5py/h5diff against the input. (With
MICROBATCH_CHECK_CLONES=1, conftest.run does the first for every split of the suite.)"""
import filecmp
import os
import re

import h5py
import numpy as np
import pytest

from conftest import ENV, h5diff, run, write_spec

NO_CLONES = dict(ENV, MICROBATCH_NO_CLONES="1")


def split_both_ways(tmp_path, src, *flags):
    """Splits with and without copies; asserts the same bytes; returns (written, copied) from the debug log."""
    a, b = tmp_path / "copies", tmp_path / "direct"
    res = run("split", src, "-o", a, "-v", *flags, check=0, env=ENV)
    run("split", src, "-o", b, *flags, check=0, env=NO_CLONES)
    names = sorted(n for n in os.listdir(b) if n.endswith(".h5"))
    assert names and names == sorted(n for n in os.listdir(a) if n.endswith(".h5"))
    for name in names:
        assert filecmp.cmp(a / name, b / name, shallow=False), name
    with open(a / "manifest.json") as x, open(b / "manifest.json") as y:
        assert x.read() == y.read()  # the same digests
    m = re.search(r"split: (\d+) files written through libhdf5, (\d+) as copies", res.err)
    assert m, res.err
    return int(m[1]), int(m[2]), res.err


def merged_equals(tmp_path, src):
    run("merge", tmp_path / "copies", "-o", tmp_path / "merged.h5", check=0)
    return h5diff(src, tmp_path / "merged.h5") == 0


def small_datasets(path, count=300, dtype="<i4", **create):
    with h5py.File(path, "w") as f:
        for k in range(count):
            d = f.create_dataset(f"g{k % 7}/d{k}", data=(np.arange(24) + k).astype(dtype).reshape(8, 3), **create)
            d.attrs["id"] = k
        f.attrs["step"] = 3


@pytest.mark.parametrize("dtype", ["<i4", ">i8", "<f2", "f8", "u1", "bool", "complex64", "S3"])
def test_files_of_one_shape_are_copies_of_the_first(tmp_path, dtype):
    src = tmp_path / "in.h5"
    small_datasets(src, dtype=dtype)
    written, copied, _ = split_both_ways(tmp_path, src, "-n", 4)  # 8 rows: 2 each
    assert (written, copied) == (1, 3)
    assert merged_equals(tmp_path, src)
    with h5py.File(src) as f, h5py.File(tmp_path / "copies" / "microbatch-00002.h5") as m:
        assert m["g3/d10"][()].tobytes() == f["g3/d10"][4:6].tobytes()
        assert m["g3/d10"].attrs["id"] == 10


def test_each_class_of_shapes_has_its_own_model(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(10 * 4, dtype="f4").reshape(10, 4)  # 10 rows into 4: 3, 3, 2, 2
        f["y"] = np.arange(10, dtype="i8")
        f["cols"] = np.arange(3 * 10, dtype="i2").reshape(3, 10)  # cut on axis 1
        f["r"] = np.arange(5, dtype="i4")  # replicated: the same in every file
    spec = write_spec(tmp_path / "s.json", {"cols": 1, "r": "replicate", "*": 0})
    written, copied, _ = split_both_ways(tmp_path, src, "-s", spec, "-n", 4)
    assert (written, copied) == (2, 2)
    assert merged_equals(tmp_path, src)


def test_data_parallel_ranks_and_align(tmp_path):
    src = tmp_path / "in.h5"
    small_datasets(src, count=50)
    written, copied, _ = split_both_ways(tmp_path, src, "-n", 2, "--dp-degree", 2, "--align", "--layout", "per-rank")
    assert (written, copied) == (1, 3)
    assert merged_equals(tmp_path, src)


def test_workers_each_copy_their_own_model(tmp_path):
    src = tmp_path / "in.h5"
    small_datasets(src, count=50)
    split_both_ways(tmp_path, src, "-n", 8, "-j", 2)
    assert merged_equals(tmp_path, src)


def test_elements_past_the_budget_are_read_again_from_the_input(tmp_path):
    # 40 datasets of 128 KiB, each read whole, 5 MiB in all: with --buffer-size 1 the writer keeps the first
    # ones' elements for the copies, and the rest are read again from the input (io/split/clone.cpp).
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        for k in range(40):
            f[f"d{k:02d}"] = (np.arange(8 * 4096, dtype="<i4") * (k + 1)).reshape(8, 4096)
    written, copied, _ = split_both_ways(tmp_path, src, "-n", 4, "--buffer-size", 1)
    assert (written, copied) == (1, 3)
    with h5py.File(src) as f, h5py.File(tmp_path / "copies" / "microbatch-00003.h5") as m:
        assert m["d39"][()].tobytes() == f["d39"][6:8].tobytes()
    assert merged_equals(tmp_path, src)


@pytest.mark.parametrize("layout,why", [
    ({"chunks": (2, 3)}, "not contiguous in the file"),
    ({"chunks": (4, 3), "compression": "gzip"}, "its input is filtered"),
    ({"compact": True}, "not contiguous in the file"),
])
def test_a_model_whose_data_cannot_be_written_over_falls_back_to_libhdf5(tmp_path, layout, why):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["plain"] = np.arange(8 * 3, dtype="i4").reshape(8, 3)
        if layout.pop("compact", False):
            space = h5py.h5s.create_simple((8, 3))
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.COMPACT)
            h5py.h5d.create(f.id, b"other", h5py.h5t.STD_I32LE, space, dcpl=dcpl).write(
                h5py.h5s.ALL, h5py.h5s.ALL, np.arange(24, dtype="<i4").reshape(8, 3))
        else:
            f.create_dataset("other", data=np.arange(8 * 3, dtype="i4").reshape(8, 3), **layout)
    written, copied, log = split_both_ways(tmp_path, src, "-n", 4)
    assert (written, copied) == (4, 0)
    assert why in log
    assert merged_equals(tmp_path, src)


def test_variable_length_data_falls_back_to_libhdf5(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["plain"] = np.arange(8, dtype="i4")
        f.create_dataset("text", data=[f"s{i}" * i for i in range(8)], dtype=h5py.string_dtype())
    written, copied, log = split_both_ways(tmp_path, src, "-n", 4)
    assert (written, copied) == (4, 0)
    assert "its datatype does not hold its values in place" in log
    assert merged_equals(tmp_path, src)


def test_replicated_variable_length_data_is_copied_with_the_model(tmp_path):
    # Not cut: the same calls with the same values in every file, so the same bytes.
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["plain"] = np.arange(8, dtype="i4")
        f.create_dataset("vocab", data=["a", "bb", "ccc"], dtype=h5py.string_dtype())
    spec = write_spec(tmp_path / "s.json", {"vocab": "replicate", "*": 0})
    assert split_both_ways(tmp_path, src, "-s", spec, "-n", 4)[:2] == (1, 3)
    assert merged_equals(tmp_path, src)


def test_packed_offsets_are_never_copied(tmp_path):
    # Rebased offsets differ from file to file even where shapes agree.
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["tokens"] = np.arange(8, dtype="i4")
        f["cu"] = np.array([0, 2, 4, 6, 8], dtype="i4")
    spec = write_spec(tmp_path / "s.json", {"tokens": {"packed": "/cu"}, "cu": "offsets"})
    assert split_both_ways(tmp_path, src, "-s", spec, "-n", 2)[:2] == (2, 0)
    assert merged_equals(tmp_path, src)


def merge_both_ways(tmp_path, directory, *flags):
    """Merges with and without copies; asserts the same bytes; returns the debug log of the first."""
    a, b = tmp_path / "merged-copies.h5", tmp_path / "merged-direct.h5"
    res = run("merge", directory, "-o", a, "-v", *flags, check=0, env=ENV)
    run("merge", directory, "-o", b, *flags, check=0, env=NO_CLONES)
    assert filecmp.cmp(a, b, shallow=False)
    return res.err


def test_merge_reads_inputs_that_are_copies_of_the_first_as_file_bytes(tmp_path):
    src = tmp_path / "in.h5"
    small_datasets(src)
    split_both_ways(tmp_path, src, "-n", 4)
    log = merge_both_ways(tmp_path, tmp_path / "copies")
    assert log.count("merged as a copy of the model") == 3, log
    assert h5diff(src, tmp_path / "merged-copies.h5") == 0


@pytest.mark.parametrize("copies", [True, False])
def test_merged_results_are_the_same_bytes_written_past_libhdf5_or_through_it(tmp_path, copies):
    """Small results are allocated when created, and written at the last input as file bytes where they lie;
    with the byte paths off, through H5Dwrite: the same file either way, walked or copied."""
    src = tmp_path / "in.h5"
    small_datasets(src, count=50)
    with h5py.File(src, "a") as f:
        f.create_dataset("floats", data=np.linspace(0, 1, 16, dtype="<f8"))
        f.create_dataset("words", data=np.array([b"w%d" % i for i in range(16)], dtype="S4"))
    split_both_ways(tmp_path, src, "-n", 4)
    env = ENV if copies else NO_CLONES
    a, b = tmp_path / "bytes.h5", tmp_path / "library.h5"
    placed = run("merge", tmp_path / "copies", "-o", a, "-v", check=0, env=env).err
    direct = run("merge", tmp_path / "copies", "-o", b, "-v", check=0, env={**env, "MICROBATCH_NO_RAW_COPY": "1"}).err
    assert "52 results assembled in memory written as file bytes" in placed, placed
    assert "0 results assembled in memory written as file bytes" in direct, direct
    assert filecmp.cmp(a, b, shallow=False)
    assert h5diff(src, a) == 0
    with h5py.File(a) as f:
        np.testing.assert_array_equal(f["floats"][()], np.linspace(0, 1, 16))
        assert f["g0/d49"].id.get_offset() is not None


def test_merge_of_a_copy_with_other_data_takes_that_data(tmp_path):
    # A changed value inside an input's data leaves it a copy of the model: its own rows are merged.
    src = tmp_path / "in.h5"
    small_datasets(src, count=20)
    split_both_ways(tmp_path, src, "-n", 4)
    with h5py.File(tmp_path / "copies" / "microbatch-00002.h5", "r+") as f:
        f["g3/d10"][1, 2] = -7
    log = merge_both_ways(tmp_path, tmp_path / "copies", "--no-verify")
    assert log.count("merged as a copy of the model") == 3, log
    with h5py.File(tmp_path / "merged-copies.h5") as m:
        assert m["g3/d10"][5, 2] == -7


def test_merge_walks_an_input_whose_structure_differs_and_refuses_it(tmp_path):
    src = tmp_path / "in.h5"
    small_datasets(src, count=20)
    split_both_ways(tmp_path, src, "-n", 4)
    with h5py.File(tmp_path / "copies" / "microbatch-00003.h5", "r+") as f:
        f["g3/d10"].attrs["id"] = 11  # the same size: only bytes of its metadata change
    res = run("merge", tmp_path / "copies", "-o", tmp_path / "m.h5", "-v", "--no-verify", env=ENV)
    assert res.code == 1, res
    assert "microbatch 3" in res.err and "merged through libhdf5: its bytes differ from the model's" in res.err
    assert "/g3/d10" in res.err.splitlines()[-1] and "differs" in res.err.splitlines()[-1]
    assert not os.path.exists(tmp_path / "m.h5")


def test_merge_of_chunked_inputs_walks_every_input(tmp_path):
    src = tmp_path / "in.h5"
    small_datasets(src, count=20, chunks=(2, 3))
    split_both_ways(tmp_path, src, "-n", 4)
    log = merge_both_ways(tmp_path, tmp_path / "copies")
    assert "merged as a copy" not in log
    assert log.count("merged through libhdf5: the model's split data is not all read whole") == 3, log
    assert h5diff(src, tmp_path / "merged-copies.h5") == 0


def test_datasets_kept_from_the_tree_keep_their_own_creation_properties(tmp_path):
    """Split keeps small datasets from the walk of the tree (io/tree/held.hpp), their datatypes and creation
    properties interned: one id for all that are equal. libhdf5 1.10.8's H5Pequal takes chunk shapes for equal;
    each dataset must keep its own, and the files be the bytes written without keeping anything."""
    src = tmp_path / "in.h5"
    chunks = [(4,), (5,), (8,), (4,), None]
    with h5py.File(src, "w") as f:
        for k, chunk in enumerate(chunks):
            d = f.create_dataset(f"d{k}", data=np.arange(40, dtype="<i4") + k, chunks=chunk)
            d.attrs["k"] = k
        f.create_dataset("filled", data=np.arange(40, dtype="<i4"), chunks=(4,), fillvalue=7)
    written, copied, log = split_both_ways(tmp_path, src, "-n", 4)
    assert "6 small datasets kept from the walk of the tree" in log, log
    for i in range(4):
        with h5py.File(tmp_path / "copies" / f"microbatch-{i:05d}.h5") as f:
            assert [f[f"d{k}"].chunks for k in range(len(chunks))] == chunks
            assert f["filled"].fillvalue == 7 and f["d0"].fillvalue == 0
            assert [f[f"d{k}"].attrs["k"] for k in range(len(chunks))] == list(range(len(chunks)))
    assert merged_equals(tmp_path, src)


def test_datasets_kept_from_the_tree_stay_within_the_buffer_and_the_ids_interned(tmp_path):
    """What is kept stays within --buffer-size, and within 32 distinct creation properties; the rest is opened by
    the writer from the input, and the files are the same bytes either way."""
    big, many = tmp_path / "big", tmp_path / "many"
    big.mkdir()
    many.mkdir()
    with h5py.File(big / "in.h5", "w") as f:
        for k in range(3):  # 400 KiB each: two fit a 1 MiB buffer
            f.create_dataset(f"big{k}", data=np.arange(102_400, dtype="<i4") + k)
    log = split_both_ways(big, big / "in.h5", "-n", 4, "--buffer-size", 1)[2]
    assert "2 small datasets kept from the walk of the tree" in log, log
    with h5py.File(many / "in.h5", "w") as f:
        for k in range(40):  # 40 chunk shapes: 40 distinct creation properties
            f.create_dataset(f"c{k:02d}", data=np.arange(40, dtype="<i4") + k, chunks=(k + 1,))
    log = split_both_ways(many, many / "in.h5", "-n", 4)[2]
    assert "32 small datasets kept from the walk of the tree" in log, log
    for directory in (big, many):
        assert merged_equals(directory, directory / "in.h5")
