"""merge --virtual: split leaves become virtual datasets over the microbatch
files, nothing is copied, replicated leaves are still checked."""
import json
import os
import shutil

import h5py
import numpy as np
import pytest

from conftest import ENV, assert_one_line_error, h5diff, listing, run, write_spec


def make(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(0).standard_normal((200, 500)), chunks=(10, 500),
                         compression="gzip")  # 800 KB that gzip cannot shrink
        f["cols"] = np.arange(600).reshape(3, 200)
        f["text"] = np.array([f"s{i}" for i in range(200)], dtype=h5py.string_dtype())
        f["t"] = np.float32(0.5)
        f["x"].attrs["unit"] = "m"
        f.attrs["step"] = 4


def test_virtual_merge_reads_back_exactly_and_copies_nothing(tmp_path):
    src = tmp_path / "in.h5"
    make(src)
    spec = write_spec(tmp_path / "s.json", {"x": 0, "cols": 1, "text": 0, "t": "replicate"})
    run("split", src, "-s", spec, "-n", 4, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "v.h5", check=0)
    assert h5diff(src, tmp_path / "v.h5") == 0
    with h5py.File(tmp_path / "v.h5") as v:
        assert v["x"].is_virtual and v["cols"].is_virtual and v["text"].is_virtual
        assert not v["t"].is_virtual
        sources = {m.file_name for m in v["x"].virtual_sources()}
        assert sources == {str((tmp_path / "mb" / f"microbatch-{i:05d}.h5").resolve()) for i in range(4)}
    assert os.path.getsize(tmp_path / "v.h5") < os.path.getsize(src) / 4


def test_virtual_merge_of_data_parallel_layouts(tmp_path):
    src = tmp_path / "in.h5"
    make(src)
    spec = write_spec(tmp_path / "s.json", {"x": 0, "cols": 1, "text": 0, "t": "replicate"})
    for layout in ["per-microbatch", "per-rank"]:
        out = tmp_path / layout
        run("split", src, "-s", spec, "-n", 3, "--dp-degree", 2, "--align", "--layout", layout, "-o", out, check=0)
        run("merge", out, "--virtual", "-o", tmp_path / f"{layout}.h5", check=0)
        assert h5diff(src, tmp_path / f"{layout}.h5") == 0


def test_virtual_merge_still_checks_replicated_leaves_and_needs_the_files(tmp_path):
    src = tmp_path / "in.h5"
    make(src)
    run("split", src, "-n", 2, "-o", tmp_path / "mb", check=0)
    with h5py.File(tmp_path / "mb" / "microbatch-00001.h5", "a") as f:
        f["t"][()] = 0.25
    # The manifest's digest finds the change first; without that check the values do.
    assert_one_line_error(run("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "v.h5"), 1,
                          "microbatch-00001.h5", "content digest differs")
    assert_one_line_error(run("merge", tmp_path / "mb", "--virtual", "--no-verify", "-o", tmp_path / "v.h5"), 1,
                          "/t", "0.5 vs 0.25")
    assert not (tmp_path / "v.h5").exists()
    os.remove(tmp_path / "mb" / "microbatch-00000.h5")
    assert_one_line_error(run("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "v.h5"), 1,
                          "microbatch-00000.h5")


def test_packed_offsets_are_materialized_in_a_virtual_merge(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["tok"] = np.arange(20)
        f["cu"] = np.array([0, 3, 9, 10, 20])
    spec = write_spec(tmp_path / "s.json", {"tok": {"packed": "/cu"}, "cu": "offsets"})
    run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "v.h5", check=0)
    assert h5diff(src, tmp_path / "v.h5") == 0
    with h5py.File(tmp_path / "v.h5") as v:
        assert v["tok"].is_virtual and not v["cu"].is_virtual


# --- '%' in names: HDF5 reads virtual source names printf-style -------------

def make_named(path, offset, datasets):
    with h5py.File(path, "w") as f:
        for k, name in enumerate(datasets):
            f[name] = np.arange(60, dtype=np.int64).reshape(20, 3) * (k + 1) + offset


@pytest.mark.parametrize("datasets", [["x"], ["x", "acc%b", "g%%/y%1"]])
def test_virtual_merge_of_percent_names_reads_its_own_files(tmp_path, datasets):
    """Directories `run%b` and `run%%b` side by side with different data:
    each merge --virtual reads its own microbatches (unescaped, `run%%b` read
    as `run%b`'s files); `p%b`, `q%1`, `50%` and datasets named `acc%b` work."""
    dirs = ["run%%b", "run%b", "p%b", "q%1", "50%", "x%"]  # run%%b first: read unescaped, it would find run%b's files
    for k, d in enumerate(dirs):
        (tmp_path / d).mkdir()
        make_named(tmp_path / d / "in.h5", 1000 * k, datasets)
        run("split", tmp_path / d / "in.h5", "-n", 3, "-o", tmp_path / d / "mb", check=0)
    for k, d in enumerate(dirs):
        out = tmp_path / d / "v.h5"
        run("merge", tmp_path / d / "mb", "--virtual", "-o", out, check=0)
        assert h5diff(tmp_path / d / "in.h5", out) == 0, d
        with h5py.File(tmp_path / d / "in.h5") as a, h5py.File(out) as v:
            for name in datasets:
                assert v[name].is_virtual
                np.testing.assert_array_equal(v[name][()], a[name][()])
                files = {m.file_name for m in v[name].virtual_sources()}
                # recorded escaped: '%' as '%%'
                assert files == {str((tmp_path / d / "mb" / f"microbatch-{i:05d}.h5").resolve()).replace("%", "%%")
                                 for i in range(3)}


# --- virtual inputs whose sources HDF5 would read as fill values ------------

def virtual_file(path, mappings, shape, dtype="i8", maxshape=None):
    """mappings: (virtual slice, file name, dataset, source shape, source slice)."""
    layout = h5py.VirtualLayout(shape=shape, dtype=dtype, maxshape=maxshape)
    for vsel, fname, dname, sshape, ssel in mappings:
        layout[vsel] = h5py.VirtualSource(str(fname), dname, shape=sshape)[ssel]
    with h5py.File(path, "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=-7)
        f["other"] = np.arange(10)


def split_refused(tmp_path, src, *needles):
    out = tmp_path / "out"
    assert_one_line_error(run("split", src, "-n", 2, "-o", out), 1, str(src), "/v", *needles)
    assert listing(out) == []


def test_split_refuses_a_virtual_dataset_onto_a_missing_file(tmp_path):
    virtual_file(tmp_path / "v.h5", [(slice(0, 10), tmp_path / "gone.h5", "d", (10,), slice(0, 10))], (10,))
    with h5py.File(tmp_path / "v.h5") as f:  # what HDF5 gives: fill values, no error
        assert (f["v"][()] == -7).all()
    split_refused(tmp_path, tmp_path / "v.h5", "gone.h5", "missing")
    # inspect shows the file, marked; planning a split of it is refused
    res = run("inspect", tmp_path / "v.h5", check=0)
    assert "virtual UNREADABLE" in res.out and "gone.h5" in res.out and "missing" in res.out
    tree = json.loads(run("inspect", tmp_path / "v.h5", "--json", check=0).out)["tree"]
    assert [n["path"] for n in tree if "unreadable" in n] == ["/v"]
    assert_one_line_error(run("inspect", tmp_path / "v.h5", "-n", 2), 1, "/v", "gone.h5", "missing")
    # a relative name, found nowhere HDF5 looks
    virtual_file(tmp_path / "r.h5", [(slice(0, 10), "gone.h5", "d", (10,), slice(0, 10))], (10,))
    split_refused(tmp_path, tmp_path / "r.h5", "gone.h5", "missing")


def test_split_and_merge_refuse_a_virtual_merge_whose_microbatches_moved(tmp_path):
    src = tmp_path / "in.h5"
    make(src)
    spec = write_spec(tmp_path / "s.json", {"x": 0, "cols": 1, "text": 0, "t": "replicate"})
    run("split", src, "-s", spec, "-n", 4, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "v.h5", check=0)
    shutil.move(tmp_path / "mb", tmp_path / "moved")
    split_out = tmp_path / "again"
    res = run("split", tmp_path / "v.h5", "-s", spec, "-n", 2, "-o", split_out)
    assert_one_line_error(res, 1, "v.h5", "microbatch-00000.h5", "missing")
    assert listing(split_out) == []
    # merge refuses it too, as the first input and as a later one
    with h5py.File(tmp_path / "copy.h5", "w") as f, h5py.File(src) as s:
        for k in s:
            s.copy(k, f)
        for k, v in s.attrs.items():
            f.attrs[k] = v
    for inputs in ([tmp_path / "v.h5"], [tmp_path / "copy.h5", tmp_path / "v.h5"]):
        res = run("merge", *inputs, "-s", spec, "-o", tmp_path / "m.h5")
        assert_one_line_error(res, 1, "microbatch-00000.h5", "missing")
        assert not (tmp_path / "m.h5").exists()
    # put back, everything reads again
    shutil.move(tmp_path / "moved", tmp_path / "mb")
    run("split", tmp_path / "v.h5", "-s", spec, "-n", 2, "-o", split_out, check=0)
    run("merge", split_out, "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_split_refuses_sources_that_would_read_fill_values_or_other_bytes(tmp_path):
    with h5py.File(tmp_path / "s.h5", "w") as f:
        f["contig"] = np.arange(10, dtype=np.int64)
        f["after"] = np.arange(100, dtype=np.int64) + 1000  # what a read past "contig" finds
        f.create_dataset("chunked", data=np.arange(10, dtype=np.int64), chunks=(4,))
        f["f4"] = np.arange(20, dtype=np.float32)
        f.create_dataset("grows", data=np.arange(5, dtype=np.int64), maxshape=(None,))
        f.create_dataset("full", data=np.arange(10, dtype=np.int64), maxshape=(None,))
    s = tmp_path / "s.h5"
    cases = {
        "contig": ([(slice(0, 20), s, "contig", (20,), slice(0, 20))], "smaller than its mapping"),
        "chunked": ([(slice(0, 20), s, "chunked", (20,), slice(0, 20))], "smaller than its mapping"),
        "nodset": ([(slice(0, 10), s, "nope", (10,), slice(0, 10))], "source dataset nope", "missing"),
        "dtype": ([(slice(0, 20), s, "f4", (20,), slice(0, 20))], "float32", "convert"),
    }
    for name, (mappings, *needles) in cases.items():
        virtual_file(tmp_path / f"{name}.h5", mappings, (20,) if name != "nodset" else (10,))
        split_refused(tmp_path, tmp_path / f"{name}.h5", *needles)
    with h5py.File(tmp_path / "chunked.h5") as f:  # what HDF5 gives: the source's fill values, no error
        assert list(f["v"][8:12]) == [8, 9, 0, 0]
    # unlimited mappings of unequal sources: the shorter one's rows are fill values
    U = h5py.h5s.UNLIMITED
    layout = h5py.VirtualLayout(shape=(10, 2), maxshape=(None, 2), dtype="i8")
    layout[0:U, 0] = h5py.VirtualSource(str(s), "full", shape=(10,), maxshape=(None,))[0:U]
    layout[0:U, 1] = h5py.VirtualSource(str(s), "grows", shape=(5,), maxshape=(None,))[0:U]
    with h5py.File(tmp_path / "unlim.h5", "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=-7)
    with h5py.File(tmp_path / "unlim.h5") as f:
        assert f["v"].shape == (10, 2) and (f["v"][5:, 1] == -7).all()
    split_refused(tmp_path, tmp_path / "unlim.h5", "grows", "smaller than its mapping")


def test_split_refuses_printf_style_and_nested_missing_sources(tmp_path):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    U = h5py.h5s.UNLIMITED
    vspace = h5py.h5s.create_simple((4,), (U,))
    vspace.select_hyperslab((0,), (U,), stride=(2,), block=(2,))
    sspace = h5py.h5s.create_simple((2,))
    dcpl.set_virtual(vspace, b"part-%b.h5", b"d", sspace)
    for b in range(2):
        with h5py.File(tmp_path / f"part-{b}.h5", "w") as f:
            f["d"] = np.arange(2) + 10 * b
    with h5py.File(tmp_path / "printf.h5", "w") as f:
        h5py.h5d.create(f.id, b"v", h5py.h5t.py_create("i8"), h5py.h5s.create_simple((4,), (U,)), dcpl=dcpl)
    split_refused(tmp_path, tmp_path / "printf.h5", "printf-style", "part-%b.h5")
    # a virtual source that is itself virtual, onto a missing file
    virtual_file(tmp_path / "inner.h5", [(slice(0, 10), tmp_path / "gone.h5", "d", (10,), slice(0, 10))], (10,))
    virtual_file(tmp_path / "outer.h5", [(slice(0, 10), tmp_path / "inner.h5", "v", (10,), slice(0, 10))], (10,))
    split_refused(tmp_path, tmp_path / "outer.h5", "inner.h5", "gone.h5", "missing")


def test_virtual_sources_found_where_hdf5_finds_them_split_exactly(tmp_path, monkeypatch):
    """The check follows HDF5's search: a relative source next to the virtual
    file (from another working directory), one found only through
    HDF5_VDS_PREFIX, an absolute one that moved next to the virtual file, and
    '.' (the same file) split to exactly what h5py reads."""
    (tmp_path / "here").mkdir()
    (tmp_path / "prefix").mkdir()
    (tmp_path / "elsewhere").mkdir()
    with h5py.File(tmp_path / "here" / "near.h5", "w") as f:
        f["d"] = np.arange(10, dtype=np.int64) + 100
    with h5py.File(tmp_path / "prefix" / "far.h5", "w") as f:
        f["d"] = np.arange(10, dtype=np.int64) + 200
    with h5py.File(tmp_path / "here" / "moved.h5", "w") as f:
        f["d"] = np.arange(10, dtype=np.int64) + 300
    m = lambda name, lo: (slice(lo, lo + 10), name, "d", (10,), slice(0, 10))
    v = tmp_path / "here" / "v.h5"
    virtual_file(v, [m("near.h5", 0), m("far.h5", 10), m(str(tmp_path / "was" / "moved.h5"), 20)], (30,))
    with h5py.File(v, "a") as f:
        layout = h5py.VirtualLayout(shape=(10,), dtype="i8")
        layout[:] = h5py.VirtualSource(".", "other", shape=(10,))[:]
        f.create_virtual_dataset("self", layout)
    env = dict(ENV, HDF5_VDS_PREFIX=str(tmp_path / "prefix"))
    cwd = tmp_path / "elsewhere"
    res = run("split", v, "-n", 2, "-o", tmp_path / "out", cwd=cwd)
    assert_one_line_error(res, 1, "far.h5", "missing")
    run("split", v, "-n", 2, "-o", tmp_path / "out", cwd=cwd, env=env, check=0)
    run("merge", tmp_path / "out", "-o", tmp_path / "m.h5", check=0)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HDF5_VDS_PREFIX", str(tmp_path / "prefix"))
    with h5py.File(v) as f, h5py.File(tmp_path / "m.h5") as out:
        expect = f["v"][()]
        assert list(expect) == list(range(100, 110)) + list(range(200, 210)) + list(range(300, 310))
        np.testing.assert_array_equal(out["v"][()], expect)
        np.testing.assert_array_equal(out["self"][()], np.arange(10))
