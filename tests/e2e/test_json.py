"""Machine-readable output: split --json and merge --json print one summary
object on stdout (nothing else there), valid against the schemas shipped in
docs/schema/."""
import json
import os

import h5py
import jsonschema
import numpy as np
import pytest

from conftest import h5diff, run

SCHEMAS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "schema")


def schema(name):
    with open(os.path.join(SCHEMAS, f"{name}.schema.json")) as f:
        s = json.load(f)
    jsonschema.Draft7Validator.check_schema(s)
    return s


def summary(res, name):
    """The one JSON object on stdout, validated against its schema."""
    obj = json.loads(res.out)  # the whole of stdout is one object
    jsonschema.validate(obj, schema(name))
    return obj


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


def test_a_failed_run_prints_no_summary(batch, tmp_path):
    res = run("split", batch, "-n", "50", "-o", tmp_path / "mb", "--json")
    assert res.code == 1 and res.out == ""
    res = run("merge", tmp_path / "nothing", "-o", tmp_path / "m.h5", "--json")
    assert res.code != 0 and res.out == ""


def test_per_rank_split_summary(tmp_path):
    path = tmp_path / "b.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(16, dtype=np.int32)
    res = run("split", path, "-n", "2", "--dp-degree", "2", "--layout", "per-rank", "-o", tmp_path / "mb", "--json",
              check=0)
    s = summary(res, "split-summary")
    assert s["ranks"] == 2 and s["microbatches"] == 2 and len(s["files"]) == 5
    assert s["data_bytes"] == 16 * 4
