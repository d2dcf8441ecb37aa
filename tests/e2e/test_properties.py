"""Dataset creation properties survive split and merge; empty and null
things are kept; attributes on every kind of object travel along."""

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
        assert gz.chunks == (8, 10) and gz.maxshape == (20, 30)  # the input's, kept
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


def test_max_dims_and_chunk_shapes_are_kept_exactly(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("fixed", data=np.arange(50.0).reshape(10, 5), maxshape=(20, 5), chunks=(4, 5))
        f.create_dataset("unlimited", data=np.arange(30), maxshape=(None,), chunks=(8,))
        f.create_dataset("several", data=np.arange(6 * 4 * 3).reshape(6, 4, 3), maxshape=(None, 9, None),
                         chunks=(5, 4, 2))  # split on axis 1, a chunk longer than every piece
        f.create_dataset("big_chunk", data=np.arange(10), maxshape=(10,), chunks=(10,), compression="gzip")
        f.create_dataset("replicated", data=np.arange(12).reshape(3, 4), maxshape=(7, None), chunks=(2, 2))
        f.create_dataset("contiguous", data=np.arange(10))
    spec = write_spec(tmp_path / "s.json", {"several": 1, "replicated": "replicate", "*": 0})
    run("split", src, "-s", spec, "-n", 3, "-o", tmp_path / "mb", check=0)
    for i in range(3):
        with h5py.File(tmp_path / "mb" / f"microbatch-{i:05d}.h5") as m:
            assert m["fixed"].maxshape == (20, 5) and m["fixed"].chunks == (4, 5)
            assert m["unlimited"].maxshape == (None,) and m["unlimited"].chunks == (8,)
            assert m["several"].maxshape == (None, 9, None) and m["several"].chunks == (5, 4, 2)
            assert m["several"].shape[1] == [2, 1, 1][i]
            assert m["big_chunk"].maxshape == (10,) and m["big_chunk"].chunks == (10,)
            assert m["replicated"].maxshape == (7, None) and m["replicated"].chunks == (2, 2)
            # Contiguous data cannot be extendible: its max dims are its dims.
            assert m["contiguous"].maxshape == m["contiguous"].shape
    out = tmp_path / "out.h5"
    run("merge", tmp_path / "mb", "-o", out, check=0)
    assert h5diff(src, out) == 0
    with h5py.File(src) as f, h5py.File(out) as m:
        for name in f:
            assert m[name].maxshape == f[name].maxshape, name
            assert m[name].chunks == f[name].chunks, name
            assert m[name].shape == f[name].shape, name
    virtual = tmp_path / "virtual.h5"
    run("merge", tmp_path / "mb", "-o", virtual, "--virtual", check=0)
    assert h5diff(src, virtual) == 0
    with h5py.File(src) as f, h5py.File(virtual) as m:
        assert m["fixed"].is_virtual and m["several"].is_virtual
        for name in f:
            assert m[name].maxshape == f[name].maxshape, name


def test_merged_max_dims_grow_to_hold_the_concatenation(tmp_path):
    """Files that are not pieces of one split: a fixed max dim below the merged length becomes that length."""
    parts = []
    for i in range(3):
        p = tmp_path / f"out-{i}.h5"
        with h5py.File(p, "w") as f:
            f.create_dataset("logits", data=np.full((2, 3), i, dtype=np.float32), chunks=(1, 3))
            f.create_dataset("grow", data=np.full((2,), i), maxshape=(None,), chunks=(2,))
        parts.append(p)
    run("merge", *parts, "-o", tmp_path / "out.h5", check=0)
    with h5py.File(tmp_path / "out.h5") as m:
        assert m["logits"].shape == (6, 3) and m["logits"].maxshape == (6, 3) and m["logits"].chunks == (1, 3)
        assert m["grow"].maxshape == (None,)


def big(n, value=7):
    return np.full(n, value, dtype=np.uint8)


def test_attributes_over_64_kib_round_trip(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w", libver="latest") as f:  # dense attribute storage
        f.attrs["big"] = big(100_000)
        f.attrs["small"] = 1
        f["d"] = np.arange(12).reshape(6, 2)
        f["d"].attrs["big"] = big(70_000, 3)
        f["d"].attrs["fixed_text"] = np.bytes_(b"x" * 90_000)
        f["g/e"] = np.arange(6.0)
        f["g"].attrs["big"] = np.arange(20_000, dtype=np.float64)  # 160 KB
        f["g"].attrs["vlen"] = "y" * 100_000  # variable length: the header holds only a heap id
        for k in range(12):  # many small attributes (dense in a latest-format file)
            f["g/e"].attrs[f"a{k}"] = k
        f["t"] = np.float32(1)
        f["t"].attrs["big"] = big(65_536)
    run("split", src, "-n", 2, "-o", tmp_path / "mb", check=0)
    for i in range(2):
        piece = tmp_path / "mb" / f"microbatch-{i:05d}.h5"
        with h5py.File(piece) as m:
            assert np.array_equal(m.attrs["big"], big(100_000))
            assert np.array_equal(m["d"].attrs["big"], big(70_000, 3))
            assert m["d"].attrs["fixed_text"] == b"x" * 90_000
            assert np.array_equal(m["g"].attrs["big"], np.arange(20_000, dtype=np.float64))
            assert m["g"].attrs["vlen"] == "y" * 100_000
    out = tmp_path / "out.h5"
    run("merge", tmp_path / "mb", "-o", out, check=0)
    assert h5diff(src, out) == 0
    with h5py.File(out) as m:
        assert np.array_equal(m["t"].attrs["big"], big(65_536))
        assert np.array_equal(m.attrs["big"], big(100_000))


def superblock_version(path):
    with h5py.File(path) as f:
        return f.id.get_create_plist().get_version()[0]


def test_big_attributes_below_the_root_keep_the_default_file_format(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w", libver="latest") as f:
        f["g/x"] = np.arange(4)
        f["g"].attrs["big"] = big(80_000)
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w", libver="latest") as f:
        f["x"] = np.arange(4)
        f.attrs["small"] = 1
    for name, path in [("src", src), ("plain", plain)]:
        run("split", path, "-n", 2, "-o", tmp_path / name, check=0)
        # Only the root's object header version is set by the file's format bounds at creation.
        assert superblock_version(tmp_path / name / "microbatch-00000.h5") == 0
        run("merge", tmp_path / name, "-o", tmp_path / f"{name}.out.h5", check=0)
        assert superblock_version(tmp_path / f"{name}.out.h5") == 0
        assert h5diff(path, tmp_path / f"{name}.out.h5") == 0


def test_attributes_at_the_object_header_message_limit(tmp_path):
    """Around 64 KiB an attribute fits a header message or not, by its name, datatype and dataspace too."""
    src = tmp_path / "in.h5"
    sizes = [65_000, 65_380, 65_420, 65_450, 65_479, 65_480, 65_500, 65_536]
    with h5py.File(src, "w", libver="latest") as f:
        f["x"] = np.arange(4)
        for k, n in enumerate(sizes):
            g = f.create_group(f"g{k}")
            g.attrs["a"] = big(n)
            g.attrs["n" * 200] = big(n // 2, 1).reshape(-1, 1)  # a long name, rank 2
            g.attrs["c"] = np.zeros(n // 16, dtype=[("p", "<f8"), ("q", "<i4"), ("r", "<i4")])
            g.attrs["s"] = np.array([b"x" * 16] * (n // 16), dtype="S16")
    run("split", src, "-n", 2, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0
    with h5py.File(tmp_path / "out.h5") as m:
        assert np.array_equal(m["g6"].attrs["a"], big(65_500))


def test_lossy_scaleoffset_on_floats_is_refused_lossless_on_integers_works(tmp_path):
    # scaleoffset quantises floats: an edge chunk decoded and re-encoded need
    # not give back the same stored values, so split and merge refuse it.
    src = tmp_path / "in.h5"
    rng = np.random.default_rng(5)
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=rng.standard_normal((50, 7)), chunks=(8, 7), scaleoffset=2)
        f.create_dataset("i", data=rng.integers(0, 1000, (50, 7)), chunks=(8, 7), scaleoffset=True)
    res = run("split", src, "-n", 3, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/x", "filter scaleoffset is lossy on floating-point data")
    assert listing(tmp_path / "mb") == []
    shown = run("inspect", src, check=0)
    assert "UNREADABLE" in shown.out and "scaleoffset is lossy" in shown.out
    with h5py.File(src, "a") as f:
        del f["x"]
    run("split", src, "-n", 3, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0
