"""Dataset creation properties survive split and merge; empty and null
things are kept; attributes on every kind of object travel along."""
import json

import h5py
import numpy as np

import os
import subprocess

from conftest import BINARY, Result, assert_one_line_error, h5diff, listing, run, write_spec


def test_layout_chunks_filters_fill_and_maxshape_survive(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("gz", data=np.arange(600, dtype=np.float32).reshape(20, 30), chunks=(8, 10),
                         compression="gzip", compression_opts=6, shuffle=True, fletcher32=True, fillvalue=-1.0)
        f.create_dataset("grow", data=np.arange(20), chunks=(16,), maxshape=(None,))
        f.create_dataset("compact", data=np.arange(20, dtype=np.int8),
                         dcpl=_compact_dcpl(), shape=(20,), dtype=np.int8)
        # A filter the HDF5 library loads as a plugin (Debian's hdf5-filter-plugin).
        f.create_dataset("lz4", data=np.arange(20.0), chunks=(5,), compression=32004)
        f["grow"].attrs["note"] = "unlimited"
    run("split", src, "-n", 4, "-o", tmp_path / "mb", check=0)
    with h5py.File(tmp_path / "mb" / "microbatch-00001.h5") as m:
        gz = m["gz"]
        assert gz.shape == (5, 30)
        assert gz.chunks == (5, 10)  # clamped to the new extent
        assert gz.compression == "gzip" and gz.compression_opts == 6
        assert gz.shuffle and gz.fletcher32
        assert gz.fillvalue == -1.0
        assert m["grow"].maxshape == (None,) and m["grow"].chunks == (16,)
        assert m["grow"].attrs["note"] == "unlimited"
        assert m["compact"].id.get_create_plist().get_layout() == h5py.h5d.COMPACT
        assert "32004" in m["lz4"]._filters
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0
    with h5py.File(tmp_path / "out.h5") as m:
        assert m["gz"].compression == "gzip" and m["gz"].fletcher32 and m["gz"].fillvalue == -1.0
        assert m["grow"].maxshape == (None,)
        assert m["gz"].maxshape == (20, 30)


def _compact_dcpl():
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    return dcpl


def test_empty_groups_zero_length_and_null_dataspaces_are_kept(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f.create_group("nothing/deeper")
        f["zero"] = np.zeros((0, 3), dtype=np.float64)
        f.create_dataset("nullspace", data=h5py.Empty("f4"))
        f.attrs.create("nullattr", h5py.Empty("i8"))
        f["x"] = np.arange(6)
        f["nothing"].attrs["kind"] = "empty group"
    spec = write_spec(tmp_path / "s.json", {"*": None, "zero": 1})
    run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "mb", check=0)
    with h5py.File(tmp_path / "mb" / "microbatch-00000.h5") as m:
        assert "nothing/deeper" in m and m["nothing"].attrs["kind"] == "empty group"
        assert m["zero"].shape == (0, 2)
        assert m["nullspace"].shape is None
        assert isinstance(m.attrs["nullattr"], h5py.Empty)
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_chunked_dataset_with_empty_piece(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("c", data=np.arange(3), chunks=(2,), compression="gzip")
    run("split", src, "-n", 5, "--on-short", "empty", "-o", tmp_path / "mb", check=0)
    with h5py.File(tmp_path / "mb" / "microbatch-00004.h5") as m:
        assert m["c"].shape == (0,) and m["c"].compression == "gzip"
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_small_buffer_streams_large_datasets_in_many_blocks(tmp_path):
    src = tmp_path / "in.h5"
    data = np.random.default_rng(3).standard_normal((64, 300, 70)).astype(np.float32)  # ~5 MiB
    with h5py.File(src, "w") as f:
        f["d"] = data
        f.create_dataset("c", data=data, chunks=(4, 50, 70), compression="gzip", compression_opts=1)
        f["s"] = np.array([str(i) * (i % 7) for i in range(64)], dtype=h5py.string_dtype())
    spec = write_spec(tmp_path / "s.json", {"d": 1, "c": 0, "s": 0})
    run("split", src, "-s", spec, "-n", 3, "-o", tmp_path / "mb", "--buffer-size", 1, check=0)
    with h5py.File(tmp_path / "mb" / "microbatch-00002.h5") as m:
        assert np.array_equal(m["d"][()], np.array_split(data, 3, axis=1)[2])
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", "--buffer-size", 1, check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_attributes_on_datasets_and_groups_of_every_type(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["g/d"] = np.arange(4)
        d = f["g/d"]
        d.attrs["i"] = np.int16(-3)
        d.attrs["arr"] = np.arange(5, dtype=np.uint32)
        d.attrs["f16"] = np.float16(1.5)
        d.attrs["b"] = True
        d.attrs["c"] = np.complex64(1 + 2j)
        d.attrs["s"] = np.bytes_(b"fixed")
        d.attrs["v"] = "vlen"
        d.attrs["comp"] = np.array((1, 2.5), dtype=[("a", "i4"), ("b", "f8")])
        f["g"].attrs["grp"] = [1.0, 2.0]
    run("split", src, "-n", 2, "-o", tmp_path / "mb", check=0)
    with h5py.File(tmp_path / "mb" / "microbatch-00001.h5") as m:
        for k in ["i", "arr", "f16", "b", "c", "s", "v", "comp"]:
            assert np.array_equal(m["g/d"].attrs[k], h5py.File(src)["g/d"].attrs[k])
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_unavailable_filter_is_named(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(20.0)
        f.create_dataset("lz4", data=np.arange(20.0), chunks=(5,), compression=32004)
    env = dict(os.environ, HDF5_PLUGIN_PATH=str(tmp_path / "no-plugins"))
    proc = subprocess.run([BINARY, "split", str(src), "-n", "2", "-o", str(tmp_path / "mb")], env=env,
                          capture_output=True, text=True)
    res = Result(proc)
    assert_one_line_error(res, 1, "/lz4", "filter", "32004", "not available")
    assert listing(tmp_path / "mb") == []
