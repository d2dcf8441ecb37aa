"""netCDF-4 / xarray files: written by xarray (both engines) and by
netCDF4-python, split with the detected netcdf preset, each piece read back by
xarray (both engines) and compared with xarray's own slicing of the input,
the merged file (plain and --virtual) compared with the input, and read by
netCDF4-python (netCDF-C). Object references other than dimension scales are
refused naming the path; inspect shows them."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr

from conftest import BINARY, ENV, assert_one_line_error, run

ENGINES = ["netcdf4", "h5netcdf"]


def xarray_dataset():
    """time on axis 0 and on axis 1 (t2), strings, ints and floats, attributes."""
    return xr.Dataset(
        {"temp": (("time", "x"), np.arange(21, dtype="f4").reshape(7, 3), {"units": "K"}),
         "t2": (("x", "time"), np.arange(21, dtype="i8").reshape(3, 7)),
         "label": (("time",), np.array(["a", "bb", "c", "dd", "e", "f", "g"], dtype=object)),
         "count": (("time",), np.arange(7, dtype="i2")),
         "w": (("x",), np.array([1.0, 2.0, 3.0]), {"long_name": "weight"})},
        coords={"time": ("time", np.arange(7, dtype="i4") * 10, {"axis": "T"}), "x": ("x", [10, 20, 30])},
        attrs={"title": "test", "version": 3})


def write_direct(path, time_coordinate=True):
    """netCDF4-python: an unlimited time, a dimension without a coordinate
    variable, time on axis 1, a string variable, attributes and a group."""
    with netCDF4.Dataset(path, "w") as f:
        f.createDimension("time", None)
        f.createDimension("x", 3)
        f.createDimension("nocoord", 2)
        if time_coordinate:
            t = f.createVariable("time", "i4", ("time",))
            t[:] = np.arange(7)
            t.units = "days since 2000-01-01"
        x = f.createVariable("x", "f8", ("x",))
        x[:] = [1.5, 2.5, 3.5]
        a = f.createVariable("a", "f4", ("x", "time"))
        a[:] = np.arange(21).reshape(3, 7)
        a.units = "m"
        b = f.createVariable("b", "i2", ("time", "nocoord"))
        b[:] = np.arange(14).reshape(7, 2)
        s = f.createVariable("s", str, ("time",))
        for i in range(7):
            s[i] = "s" * (i + 1)
        f.title = "direct"
        g = f.createGroup("grp")
        gv = g.createVariable("gv", "f8", ("time",))
        gv[:] = np.arange(7) * 0.5
        g.note = "in a group"


INPUTS = {
    "xarray-netcdf4": lambda p: xarray_dataset().to_netcdf(p, engine="netcdf4"),
    "xarray-h5netcdf": lambda p: xarray_dataset().to_netcdf(p, engine="h5netcdf"),
    "xarray-unlimited": lambda p: xarray_dataset().to_netcdf(p, engine="netcdf4", unlimited_dims=["time"]),
    # time without a coordinate variable: its scale's NAME states its length
    "xarray-phony-time": lambda p: xarray_dataset().drop_vars("time").to_netcdf(p, engine="h5netcdf"),
    "netcdf4-python": write_direct,
    # an unlimited dimension without a coordinate variable: netCDF-C's scale is empty
    "netcdf4-python-phony-unlimited": lambda p: write_direct(p, time_coordinate=False),
}


def groups_of(path):
    with netCDF4.Dataset(path) as f:
        out, todo = [], [f]
        while todo:
            g = todo.pop()
            out.append(g.path)
            todo += list(g.groups.values())
    return out


def open_ds(path, engine, group):
    """Loaded and closed (netCDF-C cannot open a file this process holds open)."""
    with xr.open_dataset(path, engine=engine, group=None if group == "/" else group) as ds:
        return ds.load()


def netcdf_c_view(path):
    """What netCDF-C (through netCDF4-python) reads: every group's dimensions
    (length, unlimited), variables (dimensions, values) and attributes."""
    out = {}
    with netCDF4.Dataset(path) as f:
        todo = [f]
        while todo:
            g = todo.pop()
            dims = {k: (len(d), d.isunlimited()) for k, d in g.dimensions.items()}
            vars_ = {k: (v.dimensions, v[:].tolist() if v.dtype != str else list(v[:]),
                         {a: str(v.getncattr(a)) for a in v.ncattrs()}) for k, v in g.variables.items()}
            out[g.path] = (dims, vars_, {a: str(g.getncattr(a)) for a in g.ncattrs()})
            todo += list(g.groups.values())
    return out


@pytest.fixture(params=sorted(INPUTS))
def nc_input(request, tmp_path):
    path = tmp_path / f"{request.param}.nc"
    INPUTS[request.param](str(path))
    return path


@pytest.mark.parametrize("n", [3])
def test_split_pieces_and_merges_are_identical_to_xarray_slicing(nc_input, tmp_path, n):
    out = tmp_path / "mb"
    run("split", nc_input, "-n", n, "-o", out, check=0)
    pieces = sorted(str(out / f) for f in os.listdir(out) if f.endswith(".nc"))
    assert len(pieces) == n
    length = open_ds(nc_input, "netcdf4", "/").sizes["time"]
    rows = np.array_split(np.arange(length), n)
    for engine in ENGINES:
        for group in groups_of(nc_input):
            original = open_ds(nc_input, engine, group)
            for piece, r in zip(pieces, rows):
                got = open_ds(piece, engine, group)
                assert got.identical(original.isel(time=r)), (engine, group, piece)
    merged, virtual = tmp_path / "merged.nc", tmp_path / "virtual.nc"
    run("merge", out, "-o", merged, check=0)
    run("merge", out, "-o", virtual, "--virtual", check=0)
    for result in (merged, virtual):
        for engine in ENGINES:
            for group in groups_of(nc_input):
                assert open_ds(result, engine, group).identical(open_ds(nc_input, engine, group)), (result, engine)
        assert netcdf_c_view(result) == netcdf_c_view(nc_input), result
    # each piece as netCDF-C sees it: the input's dimensions, time as long as its rows
    for piece, r in zip(pieces, rows):
        view = netcdf_c_view(piece)
        assert view["/"][0]["time"][0] == len(r)
        assert view["/"][0].keys() == netcdf_c_view(nc_input)["/"][0].keys()


def scales_of(path):
    """Every dataset's attached dimension scales, per axis, as h5py's dims API reads them."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = [[s.name for s in obj.dims[a].values()] for a in range(obj.ndim)]
        f.visititems(visit)
    return out


def test_the_same_scales_are_attached_to_the_same_dimensions(tmp_path):
    src = tmp_path / "in.nc"
    write_direct(str(src))
    run("split", src, "-n", 2, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.nc", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "v.nc", "--virtual", check=0)
    expected = scales_of(src)
    assert expected["a"] == [["/x"], ["/time"]]
    for f in [tmp_path / "mb" / "microbatch-00000.nc", tmp_path / "m.nc", tmp_path / "v.nc"]:
        assert scales_of(f) == expected, f
        with h5py.File(f, "r") as h:  # netCDF's own attributes kept
            assert h["a"].attrs["_Netcdf4Coordinates"].tolist() == [1, 0]
            assert "_NCProperties" in h.attrs
            assert h["nocoord"].attrs["NAME"].startswith(b"This is a netCDF dimension but not a netCDF variable")


def test_a_phony_dimension_name_states_each_files_length(tmp_path):
    src = tmp_path / "in.nc"
    xarray_dataset().drop_vars("time").to_netcdf(src, engine="netcdf4")
    run("split", src, "-n", 2, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.nc", check=0)
    name = lambda p: h5py.File(p, "r")["time"].attrs["NAME"]
    assert name(src).endswith(b"         7")
    assert name(tmp_path / "mb" / "microbatch-00000.nc").endswith(b"         4")
    assert name(tmp_path / "mb" / "microbatch-00001.nc").endswith(b"         3")
    assert name(tmp_path / "m.nc") == name(src)


def test_inspect_detects_netcdf_and_preset_none_gives_the_default_spec(tmp_path):
    src = tmp_path / "in.nc"
    xarray_dataset().to_netcdf(src, engine="h5netcdf")
    text = run("inspect", src, check=0).out
    assert "preset: netcdf (detected" in text
    assert "/t2" in text and "split axis 1" in text
    rules = lambda res: {n["path"]: n.get("rule") for n in json.loads(res.out)["tree"]}
    detected = run("inspect", src, "-n", 2, "--json", check=0)
    assert json.loads(detected.out)["preset"] == {"name": "netcdf", "detected": True}
    assert rules(detected)["/t2"] == {"mode": "split", "axis": 1}
    assert rules(detected)["/w"] == {"mode": "replicate"}
    named = run("inspect", src, "--preset", "netcdf", "--json", check=0)
    assert json.loads(named.out)["preset"] == {"name": "netcdf", "detected": False}
    none = run("inspect", src, "-n", 2, "--json", "--preset", "none", check=0)
    assert json.loads(none.out)["preset"] is None
    assert rules(none)["/t2"] == {"mode": "split", "axis": 0}  # the default spec: axis 0 of every rank >= 1
    assert rules(none)["/w"] == {"mode": "split", "axis": 0}
    assert "preset:" not in run("inspect", src, "--preset", "none", check=0).out
    # a spec given is used as it is
    spec = run("inspect", src, "-n", 2, "--json", "--spec-json", '{"*": "replicate"}', "--allow-copies", check=0)
    assert json.loads(spec.out)["preset"] is None and rules(spec)["/t2"] == {"mode": "replicate"}
    # a file of another kind: nothing detected
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        f["a"] = np.arange(4)
    assert json.loads(run("inspect", plain, "--json", check=0).out)["preset"] is None


def test_preset_usage_errors(tmp_path):
    src = tmp_path / "in.nc"
    xarray_dataset().to_netcdf(src)
    res = run("split", src, "-n", 2, "-o", tmp_path / "mb", "--preset", "netcfd")
    assert res.code == 2 and "unknown preset 'netcfd'" in res.err and "netcdf" in res.err, res
    assert not (tmp_path / "mb").exists()
    res = run("inspect", src, "--preset", "netcdf", "--spec-json", "null")
    assert_one_line_error(res, 2, "--preset netcdf and -s/--spec-json both give the spec")


def test_dim_spec_cuts_along_a_named_dimension_wherever_it_is(tmp_path):
    src = tmp_path / "in.nc"
    xarray_dataset().to_netcdf(src, engine="netcdf4")
    out = tmp_path / "mb"
    run("split", src, "-n", 2, "-o", out, "--spec-json", '{"*": {"dim": "x"}}', check=0)
    original = open_ds(src, "netcdf4", "/")
    pieces = sorted(f for f in os.listdir(out) if f.endswith(".nc"))
    for piece, r in zip(pieces, np.array_split(np.arange(3), 2)):
        assert open_ds(out / piece, "h5netcdf", "/").identical(original.isel(x=r))
    manifest = json.load(open(out / "manifest.json"))
    assert manifest["spec"]["t2"] == 0 and manifest["spec"]["temp"] == 1  # the resolved axes are recorded


@pytest.mark.parametrize("engine", ENGINES)
def test_too_many_pieces_name_the_dimension_and_its_length(tmp_path, engine):
    """-n 5 over a time of length 4: the dimension is what the user knows, not the first dataset cut along it."""
    src = tmp_path / "in.nc"
    xr.Dataset({"count": (("time",), np.arange(4, dtype="i2")),
                "temp": (("time", "x"), np.arange(12, dtype="f4").reshape(4, 3))},
               coords={"time": ("time", np.arange(4) * 10), "x": ("x", [1, 2, 3])}).to_netcdf(src, engine=engine)
    out = tmp_path / "mb"
    res = run("split", src, "-n", 5, "-o", out)
    assert_one_line_error(res, 1, "cannot cut into 5 microbatches: dimension time has length 4 (--on-short")
    assert "/count" not in res.err and not out.exists(), res
    res = run("split", src, "-n", 5, "-o", out, "--on-short", "downsize", check=0)
    assert "downsizing from 5 to 4 microbatches: dimension time has length 4" in res.err, res


def test_the_first_dimension_without_an_unlimited_one(tmp_path):
    """netCDF's first dimension (lowest _Netcdf4Dimid) is cut when none is unlimited."""
    src = tmp_path / "in.nc"
    with netCDF4.Dataset(src, "w") as f:
        f.createDimension("x", 4)
        f.createDimension("time", 6)
        v = f.createVariable("v", "f4", ("time", "x"))
        v[:] = np.arange(24).reshape(6, 4)
    res = json.loads(run("inspect", src, "-n", 2, "--json", check=0).out)
    assert {n["path"]: n.get("rule") for n in res["tree"]}["/v"] == {"mode": "split", "axis": 1}


def test_merge_of_files_without_a_manifest_detects_the_preset(tmp_path):
    src = tmp_path / "in.nc"
    xarray_dataset().to_netcdf(src, engine="netcdf4")
    run("split", src, "-n", 2, "-o", tmp_path / "mb", check=0)
    loose = tmp_path / "loose"
    loose.mkdir()
    for f in ["microbatch-00000.nc", "microbatch-00001.nc"]:
        shutil.copy(tmp_path / "mb" / f, loose / f)
    run("merge", loose / "microbatch-00000.nc", loose / "microbatch-00001.nc", "-o", tmp_path / "m.nc", check=0)
    for engine in ENGINES:
        assert open_ds(tmp_path / "m.nc", engine, "/").identical(open_ds(src, engine, "/"))


def test_object_references_other_than_dimension_scales_are_refused_naming_the_path(tmp_path):
    refs = tmp_path / "refs.h5"
    with h5py.File(refs, "w") as f:
        f["a"] = np.arange(4)
        f["g/b"] = np.arange(4)
        r = f.create_dataset("r", (1,), dtype=h5py.ref_dtype)
        r[0] = f["a"].ref
        f["g"].attrs["link"] = f["a"].ref
    res = run("split", refs, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "refs.h5: /g@link: object references are not supported")
    assert not (tmp_path / "mb").exists()
    with h5py.File(refs, "a") as f:
        del f["g"].attrs["link"]
    res = run("split", refs, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "refs.h5: /r: datasets of object or region references are not supported")
    with h5py.File(refs, "a") as f:
        f["g"].attrs["link"] = f["a"].ref
    # inspect shows every object and marks what split would refuse
    text = run("inspect", refs, check=0).out
    assert "/g/b" in text and "/r" in text and "UNREADABLE" in text
    assert "warning: " + str(refs) + ": /g@link: object references are not supported" in text
    nodes = {n["path"]: n for n in json.loads(run("inspect", refs, "--json", check=0).out)["tree"]}
    assert "object references are not supported" in nodes["/g"]["unreadable"]
    assert "references are not supported" in nodes["/r"]["unreadable"]
    assert "unreadable" not in nodes["/a"]


def test_guide_netcdf_example_runs_as_shown(tmp_path):
    """docs/guide.md's netCDF-4 console example: each `$ ` command run in order,
    its output as shown (python3 is the one running these tests)."""
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "guide.md")).read()
    block = re.search(r"### netCDF-4 and xarray files\n.*?^```console\n(.*?)^```", readme, flags=re.S | re.M).group(1)
    steps = re.findall(r"^\$ (.*)\n((?:(?!\$ ).*\n)*)", block, flags=re.M)
    assert len(steps) == 5
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(os.path.abspath(BINARY), bin_dir / "microbatch")
    env = dict(ENV, PATH=f"{bin_dir}:{os.environ['PATH']}")
    for command, shown in steps:
        command = re.sub(r"^python3 ", sys.executable + " ", command)
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, (command, proc.stderr)
        assert proc.stdout == shown, command


def test_pieces_keep_the_input_s_extension_so_a_glob_finds_them(tmp_path):
    # *.nc globs (xarray's open_mfdataset, ncks, shell loops) find the pieces of x.nc; merge finds them by
    # the manifest as ever, and a --force split replaces them.
    src = tmp_path / "x.nc"
    xarray_dataset().to_netcdf(src, engine="netcdf4")
    out = tmp_path / "mb"
    run("split", src, "-n", 3, "-o", out, check=0)
    pieces = sorted(glob.glob(str(out / "*.nc")))
    assert [os.path.basename(p) for p in pieces] == [f"microbatch-{i:05d}.nc" for i in range(3)]
    assert sorted(os.listdir(out)) == sorted([os.path.basename(p) for p in pieces] + ["manifest.json"])
    original = open_ds(src, "netcdf4", "/")
    together = xr.concat([open_ds(p, "netcdf4", "/") for p in pieces], dim="time", data_vars="minimal")
    assert together["temp"].identical(original["temp"])
    run("merge", out, "-o", tmp_path / "m.nc", check=0)
    assert open_ds(tmp_path / "m.nc", "netcdf4", "/").identical(original)
    run("split", src, "-n", 2, "-o", out, "--force", check=0)
    assert sorted(os.listdir(out)) == ["manifest.json", "microbatch-00000.nc", "microbatch-00001.nc"]
