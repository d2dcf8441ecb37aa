"""inspect: the tree, the plan, and --json for scripts."""
import json

import h5py
import numpy as np

from conftest import assert_one_line_error, run, write_spec


def test_text_lists_tree_storage_attributes(tmp_path, batch):
    with h5py.File(batch, "a") as f:
        f.create_dataset("z", data=np.zeros((6, 2), np.float32), chunks=(3, 2), compression="gzip")
    out = run("inspect", batch, check=0).out
    lines = out.splitlines()
    assert lines[0] == str(batch)
    assert any(l.startswith("/x ") and "(10, 4)" in l and "int64" in l and "contiguous" in l for l in lines)
    assert any(l.startswith("/z ") and "chunked [3,2] gzip" in l for l in lines)
    assert "  @step = 7  int64" in lines
    assert "plan" not in out


def test_plan_shows_rules_and_rows(tmp_path, batch):
    spec = write_spec(tmp_path / "s.json", {"x": 1, "*": None})
    out = run("inspect", batch, "-s", spec, "-n", 3, check=0).out
    assert any(l.startswith("/x ") and l.endswith("-> split axis 1: rows 2,1,1") for l in out.splitlines())
    assert any(l.startswith("/y ") and l.endswith("-> split axis 0: rows 4,3,3") for l in out.splitlines())
    assert any(l.startswith("/t ") and l.endswith("-> replicate") for l in out.splitlines())
    assert "plan: 3 microbatches" in out


def test_json_is_complete_and_matches_split(tmp_path, batch):
    j = json.loads(run("inspect", batch, "-n", 4, "--json", check=0).out)
    assert j["chunks"] == 4
    nodes = {n["path"]: n for n in j["tree"]}
    assert nodes["/"]["kind"] == "group"
    assert nodes["/"]["attributes"] == [{"name": "step", "shape": [], "dtype": "<i8", "value": 7,
                                         "rule": {"mode": "replicate"}}]
    assert nodes["/x"]["shape"] == [10, 4] and nodes["/x"]["rule"] == {"mode": "split", "axis": 0}
    assert nodes["/x"]["rows"] == [[[0, 3, 1]], [[3, 6, 1]], [[6, 8, 1]], [[8, 10, 1]]]
    assert nodes["/t"]["rule"] == {"mode": "replicate"} and "rows" not in nodes["/t"]
    run("split", batch, "-n", 4, "-o", tmp_path / "mb", check=0)
    manifest = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    assert manifest["datasets"]["/x"]["rows"] == nodes["/x"]["rows"]


def test_inspect_errors(tmp_path, batch):
    spec = write_spec(tmp_path / "s.json", {"x": 5, "*": None})
    assert_one_line_error(run("inspect", batch, "-s", spec), 1, "out of range")
    assert_one_line_error(run("inspect", batch, "-n", 20), 1, "cannot cut into 20")
