"""Machine-readable output: split --json and merge --json print one summary
object on stdout (nothing else there), valid against the schemas shipped in
docs/schema/."""
import json
import os

import h5py
import jsonschema
import numpy as np

from conftest import h5diff, run, schema, summary

def test_split_and_merge_summaries(batch, tmp_path):
    mb = tmp_path / "mb"
    res = run("split", batch, "-n", "3", "-o", mb, "--json", check=0)
    s = summary(res, "split-summary")
    assert s["format"] == "microbatch-split-summary" and s["version"] == 1
    names = [os.path.basename(f["path"]) for f in s["files"]]
    assert names == ["microbatch-00000.h5", "microbatch-00001.h5", "microbatch-00002.h5", "manifest.json"]
    assert sorted(names) == sorted(os.listdir(mb))
    for f in s["files"]:
        assert f["bytes"] == os.path.getsize(f["path"])
    assert s["bytes"] == sum(f["bytes"] for f in s["files"])
    assert s["datasets"] == 3 and s["split_datasets"] == 2 and s["microbatches"] == 3 and s["ranks"] == 1
    # x (10x4 int64) and y (10 float32) cut once, t (float32) in each of the 3 outputs
    assert s["data_bytes"] == 10 * 4 * 8 + 10 * 4 + 3 * 4
    assert s["warnings"] == [] and s["seconds"] >= 0
    assert s["input"] == str(batch) and s["output_dir"] == str(mb)
    assert "microbatch: info: split" in res.err  # the closing message stays on stderr

    out = tmp_path / "merged.h5"
    res = run("merge", mb, "-o", out, "--json", check=0)
    m = summary(res, "merge-summary")
    assert m["files"] == [{"path": str(out), "bytes": os.path.getsize(out)}]
    assert m["bytes"] == os.path.getsize(out)
    assert m["datasets"] == 3 and m["microbatches"] == 3
    assert m["inputs"] == [f["path"] for f in s["files"][:3]] and m["output"] == str(out)
    assert m["data_bytes"] == 10 * 4 * 8 + 10 * 4 + 3 * 4  # each input's t read
    assert h5diff(batch, out) == 0


def test_warnings_are_in_the_summary_also_with_quiet(batch, tmp_path):
    res = run("split", batch, "-n", "12", "--on-short", "downsize", "-o", tmp_path / "mb", "--json", check=0)
    s = summary(res, "split-summary")
    assert len(s["warnings"]) == 1 and "downsizing from 12 to 10 microbatches" in s["warnings"][0]
    assert "microbatch: warning: downsizing" in res.err
    res = run("split", batch, "-n", "12", "--on-short", "downsize", "-o", tmp_path / "mb2", "--json", "-q", check=0)
    s = summary(res, "split-summary")
    assert len(s["warnings"]) == 1 and s["microbatches"] == 10
    assert res.err == ""  # -q: nothing on stderr, the warning only in the summary


def test_without_json_stdout_is_empty(batch, tmp_path):
    assert run("split", batch, "-n", "2", "-o", tmp_path / "mb", check=0).out == ""
    assert run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0).out == ""


def failure(res, code):
    """The one error object on stdout of a failed --json run: its exit status, and the stderr line's message."""
    obj = summary(res, "error")
    assert res.code == code and obj["error"]["exit_status"] == code, res
    lines = [line for line in res.err.splitlines() if line.startswith("microbatch: error: ")]
    assert lines == ["microbatch: error: " + obj["error"]["message"]], res
    return obj["error"]


def test_a_failed_run_prints_one_error_object_and_no_summary(batch, tmp_path):
    e = failure(run("split", batch, "-n", "50", "-o", tmp_path / "mb", "--json"), 1)  # the data: fix the input
    assert "cannot cut into 50 microbatches" in e["message"]
    e = failure(run("merge", tmp_path / "nothing", "-o", tmp_path / "m.h5", "--json"), 1)
    assert "nothing" in e["message"]
    e = failure(run("split", batch, "-n", "2", "--jsn", "-o", tmp_path / "mb", "--json"), 2)  # the command line
    assert "--jsn" in e["message"]
    e = failure(run("inspect", batch, "--spec-json", "{", "--json"), 1)
    assert "--spec-json" in e["message"]
    assert not (tmp_path / "mb").exists() and not (tmp_path / "m.h5").exists()


def test_the_error_object_names_the_file_and_object_where_known(batch, tmp_path):
    broken = tmp_path / "broken.h5"
    broken.write_bytes(b"not an HDF5 file at all" * 100)
    e = failure(run("split", broken, "-n", "2", "-o", tmp_path / "mb", "--json"), 1)
    assert e["path"] == str(broken)
    locked = tmp_path / "out"
    locked.mkdir()
    (locked / "manifest.json").write_text("{}")
    e = failure(run("split", batch, "-n", "2", "-o", locked, "--json"), 1)  # an earlier output: no HDF5 object
    assert "object" not in e
    inputs = [tmp_path / "a.h5", tmp_path / "b.h5"]
    for k, path in enumerate(inputs):
        with h5py.File(path, "w") as f:
            f["x"] = np.arange(4)
            f["t"] = np.int64(k)
    e = failure(run("merge", *inputs, "-o", tmp_path / "m.h5", "--json"), 1)  # a replicated value differs
    assert e["path"] == str(inputs[1]) and e["object"] == "/t", e


def test_a_spec_mistake_names_the_batch_file_and_the_object(batch, tmp_path):
    """The spec does not fit the file: `path` is the batch file the message names first, `object` the HDF5
    object the mistake is at (a dataset, the group a key names nothing in, the member no key covers)."""
    cases = [({"x": 5, "*": None}, "/x"),                       # an axis out of range
             ({"x": {"split_axs": 0}, "*": None}, "/x"),        # a leaf's key misspelt
             ({"xx": 0, "*": None}, "/"),                       # a key that names nothing
             ({"x": 0}, "/t"),                                  # a member no key covers
             ({"t": {"reduce": "sum"}, "*": None}, "/t")]       # a reducer on split
    for spec, obj in cases:
        for command in (["split", batch, "-n", 2, "-o", tmp_path / "mb"], ["inspect", batch, "-n", 2]):
            e = failure(run(*command, "--spec-json", json.dumps(spec), "--json"), 1)
            assert e["message"].startswith(f"{batch}: "), e
            assert e["path"] == str(batch) and e["object"] == obj, (spec, e)
    e = failure(run("split", batch, "-n", 20, "-o", tmp_path / "mb", "--json"), 1)  # x has 10 rows, fewer than 20
    assert e["path"] == str(batch) and e["object"] in ("/x", "/y"), e
    run("split", batch, "-n", 2, "-o", tmp_path / "mb", check=0)
    e = failure(run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", "--spec-json", '{"x": 0, "*": {"reduce": 1}}',
                    "--json"), 1)  # malformed: no HDF5 object to name
    assert "object" not in e
    e = failure(run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", "--spec-json", '{"x": 7, "*": null}',
                    "--json"), 1)
    assert e["path"].endswith("microbatch-00000.h5") and e["object"] == "/x", e


def test_without_json_a_failure_prints_nothing_on_stdout(batch, tmp_path):
    res = run("split", batch, "-n", "50", "-o", tmp_path / "mb")
    assert res.code == 1 and res.out == ""


def test_per_rank_split_summary(tmp_path):
    path = tmp_path / "b.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(16, dtype=np.int32)
    res = run("split", path, "-n", "2", "--dp-degree", "2", "--layout", "per-rank", "-o", tmp_path / "mb", "--json",
              check=0)
    s = summary(res, "split-summary")
    assert s["ranks"] == 2 and s["microbatches"] == 2 and len(s["files"]) == 5
    assert s["data_bytes"] == 16 * 4


# --- inspect --json: a versioned schema ---------------------------------------

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "sample_data")

# Every kind of datatype the suite writes with h5py: np.dtype(json["dtype"]) must be h5py's dtype.
DTYPES = {
    "i1": np.dtype("i1"), "u2": np.dtype("<u2"), "i4_be": np.dtype(">i4"), "u8": np.dtype("<u8"),
    "f2": np.dtype("<f2"), "f4": np.dtype("<f4"), "f8_be": np.dtype(">f8"), "f2_be": np.dtype(">f2"),
    "bool": np.dtype("?"), "fixed": np.dtype("S10"), "vlen_str": h5py.string_dtype(),
    "vlen_bytes": h5py.string_dtype(encoding="ascii"), "vlen_ints": h5py.vlen_dtype(np.int32),
    "enum": h5py.enum_dtype({"A": 0, "B": 5}, basetype="i2"),
    "compound": np.dtype([("a", "<i4"), ("b", "<f8", (2,))]),
    "nested": np.dtype([("x", [("p", "u1"), ("q", ">f4")]), ("s", "S3")]),
    "padded": np.dtype({"names": ["a", "b"], "formats": ["<i2", "<f8"], "offsets": [0, 8], "itemsize": 24}),
    "compound_vlen": np.dtype([("n", "<i4"), ("s", h5py.string_dtype())]),
    "complex": np.dtype("c16"), "complex_be": np.dtype(">c8"), "array": np.dtype("(2,3)<f8"), "opaque": np.dtype("V4"),
}


def inspect_json(*args):
    obj = json.loads(run("inspect", *args, "--json", check=0).out)
    jsonschema.validate(obj, schema("inspect"))
    return obj


def as_numpy(dtype):
    return np.dtype(tuple(dtype)) if isinstance(dtype, list) else np.dtype(dtype)


def test_inspect_json_is_versioned_and_valid_on_the_samples():
    for args in (["batch.h5"], ["batch.h5", "-s", "batch_spec.json", "-n", "4"],
                 ["packed.h5", "-s", "packed_spec.json", "-n", "2"]):
        obj = inspect_json(os.path.join(SAMPLE, args[0]), *[os.path.join(SAMPLE, a) if a.endswith(".json") else a
                                                            for a in args[1:]])
        assert obj["format"] == "microbatch-inspect" and obj["version"] == 1


def test_every_dtype_reads_back_in_numpy(tmp_path):
    path = tmp_path / "dtypes.h5"
    with h5py.File(path, "w") as f:
        for name, dt in DTYPES.items():
            f.create_dataset(name, (3,), dtype=dt)
            if dt.kind != "O" and not dt.hasobject:
                f.attrs.create(name, np.zeros(2, dtype=dt), dtype=dt)
        f.attrs.create("vlen_str", ["a", "b"], dtype=DTYPES["vlen_str"])
    nodes = {n["path"]: n for n in inspect_json(path)["tree"]}
    with h5py.File(path) as f:
        for name in DTYPES:
            assert as_numpy(nodes["/" + name]["dtype"]) == f[name].dtype, name
        for a in nodes["/"]["attributes"]:
            assert as_numpy(a["dtype"]) == f.attrs.get_id(a["name"]).dtype, a
    assert nodes["/vlen_str"]["h5type"] == {"class": "string", "variable": True}
    assert nodes["/vlen_ints"]["h5type"] == {"class": "vlen", "base": "<i4"}
    assert nodes["/enum"]["h5type"] == {"class": "enum", "base": "<i2", "members": {"A": 0, "B": 5}}
    assert nodes["/compound_vlen"]["h5type"] == {"class": "compound",
                                                 "members": {"s": {"class": "string", "variable": True}}}
    assert nodes["/opaque"]["h5type"] == {"class": "opaque", "size": 4}
    assert "h5type" not in nodes["/bool"] and "h5type" not in nodes["/compound"]


def test_attribute_values_are_json_values(tmp_path):
    path = tmp_path / "attrs.h5"
    with h5py.File(path, "w") as f:
        a = f.attrs
        a["int"] = np.int64(-7)
        a["big"] = np.array([1, 2, 3], dtype=">u4")
        a["half"] = np.float16(0.5)
        a["specials"] = np.array([np.nan, np.inf, -np.inf, -0.0, 1.5])
        a["flag"] = True
        a["text"] = "tiny-llm"
        a["names"] = np.array(["a", "bc"], dtype=h5py.string_dtype())
        a["fixed"] = np.bytes_("ab")
        a["matrix"] = np.arange(6, dtype=np.int16).reshape(2, 3)
        a["pair"] = np.array((3, 2.5), dtype=[("n", "<i4"), ("x", "<f8")])
        a["cplx"] = np.complex128(1 + 2j)
        a["empty"] = h5py.Empty("f4")
        f["d"] = np.zeros(4)
    values = {a["name"]: a["value"] for a in inspect_json(path)["tree"][0]["attributes"]}
    assert values == {"int": -7, "big": [1, 2, 3], "half": 0.5, "specials": ["nan", "inf", "-inf", -0.0, 1.5],
                      "flag": True, "text": "tiny-llm", "names": ["a", "bc"], "fixed": "ab",
                      "matrix": [[0, 1, 2], [3, 4, 5]], "pair": {"n": 3, "x": 2.5}, "cplx": {"r": 1.0, "i": 2.0},
                      "empty": None}


def test_filters_with_their_parameters(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("z", data=np.arange(100), chunks=(10,), compression="gzip", compression_opts=7, shuffle=True)
    z = next(n for n in inspect_json(path)["tree"] if n["path"] == "/z")
    assert z["filters"] == [{"id": 2, "name": "shuffle", "optional": True, "cd_values": [8]},
                            {"id": 1, "name": "gzip", "optional": True, "cd_values": [7]}]


def test_every_rule_mode_is_one_object_shape(tmp_path):
    path = tmp_path / "r.h5"
    with h5py.File(path, "w") as f:
        f["cu"] = np.array([0, 2, 5], dtype=np.int64)
        f["tok"] = np.arange(5)
        f["x"] = np.zeros((4, 2))
        f["loss"] = np.float32(1)
        f["n"] = np.float32(2)
        f["c"] = np.float32(3)
    spec = {"cu": "offsets", "tok": {"packed": "/cu"}, "x": 1, "loss": {"reduce": "mean", "weight": "/n"},
            "n": {"reduce": "sum"}, "c": "replicate"}
    nodes = {n["path"]: n for n in inspect_json(path, "--spec-json", json.dumps(spec))["tree"]}
    assert nodes["/cu"]["rule"] == {"mode": "offsets"}
    assert nodes["/tok"]["rule"] == {"mode": "packed", "offsets": "/cu", "axis": 0}
    assert nodes["/x"]["rule"] == {"mode": "split", "axis": 1}
    assert nodes["/loss"]["rule"] == {"mode": "reduce", "reducer": "mean", "weight": "/n"}
    assert nodes["/n"]["rule"] == {"mode": "reduce", "reducer": "sum"}
    assert nodes["/c"]["rule"] == {"mode": "replicate"}
