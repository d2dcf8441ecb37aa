"""inspect: the tree, the plan, and --json for scripts."""
import json

import h5py
import numpy as np

from batches import make_packed
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
    assert any(l.startswith("/x ") and l.endswith("-> split axis 1: rows 0:2, 2:3, 3:4") for l in out.splitlines())
    assert any(l.startswith("/y ") and l.endswith("-> split axis 0: rows 0:4, 4:7, 7:10") for l in out.splitlines())
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


def plan_of(path, dataset, *args):
    """What inspect's text plan says of `dataset` (after "-> ")."""
    out = run("inspect", path, *args, check=0).out
    [line] = [l for l in out.splitlines() if l.startswith(dataset + " ")]
    return line.split("-> ", 1)[1]


def test_text_plan_shows_where_rows_go_with_data_parallel_layouts(tmp_path):
    """Each microbatch's input rows as Python slices, as --json's rows, not only their counts."""
    src = tmp_path / "b.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(32).reshape(16, 2)
        f["long"] = np.arange(32)
    spec = write_spec(tmp_path / "s.json", {"x": 0, "*": "replicate"})
    dp = ["-s", spec, "-n", 2, "--dp-degree", 2]
    assert plan_of(src, "/x", *dp) == "split axis 0: rows 0:4+8:12, 4:8+12:16"
    assert plan_of(src, "/x", *dp, "--align") == "split axis 0: rows 0:7:2+1:8:2, 8:15:2+9:16:2"
    assert plan_of(src, "/x", *dp, "--layout", "per-rank") == "split axis 0: rows rank 0: 0:4, 4:8; rank 1: 8:12, 12:16"
    j = json.loads(run("inspect", src, *dp, "--json", check=0).out)
    assert [n["rows"] for n in j["tree"] if n["path"] == "/x"] == [[[[0, 4, 1], [8, 12, 1]], [[4, 8, 1], [12, 16, 1]]]]


def test_text_plan_stays_short_for_many_files_and_ranks(tmp_path):
    src = tmp_path / "b.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(32)
    assert plan_of(src, "/x", "-n", 16) == "split axis 0: rows 0:2, 2:4, 4:6, …, 30:32 (16 microbatches)"
    assert plan_of(src, "/x", "-n", 2, "--dp-degree", 8) == (
        "split axis 0: rows 0:2+4:6+…+28:30 (8 runs, 16 rows), 2:4+6:8+…+30:32 (8 runs, 16 rows)")
    assert plan_of(src, "/x", "-n", 1, "--dp-degree", 8, "--layout", "per-rank") == (
        "split axis 0: rows rank 0: 0:4; rank 1: 4:8; rank 2: 8:12; …; rank 7: 28:32 (8 ranks)")


def test_text_plan_labels_each_cp_rank_s_rows_of_packed_documents(tmp_path):
    """Packed documents are cut in stripes: each CP rank holds other rows, so the plan names the CP rank."""
    src = tmp_path / "p.h5"
    make_packed(src, [8, 8], members=("tokens", "cu_seqlens"))
    spec = write_spec(tmp_path / "s.json", {"tokens": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets"})
    assert plan_of(src, "/tokens", "-s", spec, "-n", 1, "--cp-degree", 2) == (
        "packed by /cu_seqlens on axis 0: rows CP rank 0: 0:2+6:10+14:16; CP rank 1: 2:6+10:14")
