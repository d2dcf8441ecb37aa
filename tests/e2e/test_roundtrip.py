"""split then merge reproduces the input exactly, for every datatype family
h5py writes and every spec form; pieces follow numpy.array_split."""
import json
import os

import h5py
import numpy as np
import pytest

from conftest import h5diff, listing, run, write_spec


def dtype_cases():
    rng = np.random.default_rng(1)
    cases = {}
    for t in ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", ">i4", ">f8"]:
        cases[t] = rng.integers(0, 100, size=(7, 3)).astype(t)
    for t in ["f2", "f4", "f8"]:
        a = rng.standard_normal((7, 3)).astype(t)
        a[0, 0], a[1, 1], a[2, 2] = np.nan, -0.0, np.inf
        cases[t] = a
    cases["bool"] = rng.integers(0, 2, size=(7, 3)).astype(bool)
    cases["complex64"] = (rng.standard_normal((7, 2)) + 1j * rng.standard_normal((7, 2))).astype(np.complex64)
    cases["complex128"] = rng.standard_normal(7) + 1j * rng.standard_normal(7)
    cases["S5"] = np.array([b"a", b"bc", b"", b"defgh", b"x\x00y", b"zz", b"q"], dtype="S5")
    cases["compound"] = np.array([(i, i / 2, b"ab"[: i % 3], [i, i + 1, i + 2]) for i in range(7)],
                                 dtype=[("a", "<i4"), ("b", "<f8"), ("c", "S2"), ("v", "<f4", (3,))])
    return cases


@pytest.mark.parametrize("name", list(dtype_cases()))
def test_fixed_size_dtypes_round_trip(tmp_path, name):
    data = dtype_cases()[name]
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["d"] = data
        f["same"] = data[:2]  # replicated: equality check on this dtype
        f.attrs["a"] = data[0]
    spec = write_spec(tmp_path / "s.json", {"d": 0, "same": "replicate"})
    run("split", src, "-s", spec, "-n", 3, "-o", tmp_path / "mb", check=0)
    with h5py.File(src) as f, h5py.File(tmp_path / "mb" / "microbatch-00001.h5") as m:
        expect = np.array_split(f["d"][()], 3)[1]
        got = m["d"][()]
        assert got.dtype == expect.dtype
        assert got.tobytes() == expect.tobytes()
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0
    with h5py.File(src) as f, h5py.File(tmp_path / "out.h5") as m:
        assert m["d"][()].tobytes() == f["d"][()].tobytes()  # bit-exact, NaN and -0.0 included
        assert m["d"].dtype == f["d"].dtype


def test_variable_length_types_round_trip(tmp_path):
    src = tmp_path / "in.h5"
    prompts = ["héllo wörld", "", "a" * 1000, "日本語のプロンプト", "x", "last one"]
    with h5py.File(src, "w") as f:
        f.create_dataset("prompts", data=prompts, dtype=h5py.string_dtype())
        f.create_dataset("raw", data=[b"ab", b"", b"cde", b"f", b"gh", b"i"], dtype=h5py.string_dtype("ascii"))
        seq = f.create_dataset("seq", (6,), dtype=h5py.vlen_dtype(np.int32))
        for i in range(6):
            seq[i] = np.arange(i, dtype=np.int32)
        f.create_dataset("enum", data=np.array([0, 1, 2, 1, 0, 2], dtype="i1"),
                         dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="i1"))
        f.create_dataset("names", data=["shared", "vocab"], dtype=h5py.string_dtype())
        f.attrs["title"] = "ünïcode title"
        f.attrs["tags"] = np.array(["a", "bb"], dtype=h5py.string_dtype())
    spec = write_spec(tmp_path / "s.json", {"*": 0, "names": "replicate"})
    run("split", src, "-s", spec, "-n", 4, "-o", tmp_path / "mb", check=0)
    with h5py.File(tmp_path / "mb" / "microbatch-00003.h5") as m:
        assert [s.decode() for s in m["prompts"][()]] == prompts[5:]
        assert m.attrs["title"] == "ünïcode title"
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_spec_forms_star_arrays_prefix_negative_axis(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["inputs/ids"] = np.arange(30).reshape(6, 5)
        f["inputs/mask"] = np.ones((6, 5), dtype=bool)
        f["pos/0"] = np.arange(36).reshape(2, 6, 3)   # sequence group: members 0..n-1
        f["pos/1"] = np.arange(36).reshape(6, 2, 3)
        f["cols"] = np.arange(30).reshape(5, 6)
        f["scalar"] = 3.0
        f.create_group("empty")
    spec = write_spec(tmp_path / "s.json", {
        "inputs": 0,                      # tree prefix: every dataset below
        "pos": [{"split_axis": -2}, 0],   # array for a sequence group
        "cols": -1,                       # negative axis
        "*": None,                        # default for the rest
    })
    run("split", src, "-s", spec, "-n", 4, "-o", tmp_path / "mb", check=0)
    text = (tmp_path / "mb" / "manifest.json").read_text()
    manifest = json.loads(text)
    # One line per split dataset, findable with grep.
    assert [line for line in text.splitlines() if line.strip().startswith('"/inputs/ids": {"axis":')]
    assert manifest["datasets"]["/cols"]["axis"] == 1
    assert manifest["datasets"]["/pos/0"]["axis"] == 1
    assert manifest["datasets"]["/inputs/ids"]["rows"] == [[[0, 2, 1]], [[2, 4, 1]], [[4, 5, 1]], [[5, 6, 1]]]
    assert manifest["spec"]["scalar"] == "replicate"
    with h5py.File(tmp_path / "mb" / "microbatch-00002.h5") as m:
        assert m["cols"].shape == (5, 1)
        assert m["pos/0"].shape == (2, 1, 3)
        assert "empty" in m and len(m["empty"]) == 0
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


@pytest.mark.parametrize("length,n", [(10, 3), (7, 7), (5, 2), (1, 1), (100, 9)])
def test_uneven_sizes_follow_array_split(tmp_path, length, n):
    src = tmp_path / "in.h5"
    data = np.arange(length * 2, dtype=np.int16).reshape(length, 2)
    with h5py.File(src, "w") as f:
        f["d"] = data
    run("split", src, "-n", n, "-o", tmp_path / "mb", check=0)
    files = [x for x in listing(tmp_path / "mb") if x.endswith(".h5")]
    assert len(files) == n
    for name, expect in zip(files, np.array_split(data, n)):
        with h5py.File(tmp_path / "mb" / name) as m:
            assert np.array_equal(m["d"][()], expect)
    run("merge", *[tmp_path / "mb" / x for x in files], "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_micro_batch_size_follows_torch_split(tmp_path, batch):
    run("split", batch, "-s", write_spec(tmp_path / "s.json", {"*": 0, "t": "replicate"}),
        "--micro-batch-size", 4, "-o", tmp_path / "mb", check=0)
    m = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    assert m["chunks"] == 3
    assert m["datasets"]["/x"]["rows"] == [[[0, 4, 1]], [[4, 8, 1]], [[8, 10, 1]]]
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(batch, tmp_path / "out.h5") == 0


@pytest.mark.parametrize("size", [10, 2**63, 2**64 - 1])
def test_micro_batch_size_past_the_length_gives_one_microbatch(tmp_path, batch, size):
    run("split", batch, "-s", write_spec(tmp_path / "s.json", {"*": 0, "t": "replicate"}),
        "--micro-batch-size", size, "-o", tmp_path / "mb", check=0)
    m = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    assert m["chunks"] == 1
    assert m["datasets"]["/x"]["rows"] == [[[0, 10, 1]]]
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(batch, tmp_path / "out.h5") == 0


def test_on_short_downsize_and_empty(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["long"] = np.arange(10)
        f["short"] = np.arange(3)
    res = run("split", src, "-n", 5, "-o", tmp_path / "err")
    assert res.code == 1 and "/short has 3 rows" in res.err
    assert listing(tmp_path / "err") == []

    res = run("split", src, "-n", 5, "--on-short", "downsize", "-o", tmp_path / "down", check=0)
    assert "downsizing from 5 to 3" in res.err
    assert json.loads((tmp_path / "down" / "manifest.json").read_text())["chunks"] == 3

    run("split", src, "-n", 5, "--on-short", "empty", "-o", tmp_path / "empty", check=0)
    with h5py.File(tmp_path / "empty" / "microbatch-00004.h5") as m:
        assert m["short"].shape == (0,)
        assert m["long"].shape == (2,)
    for d in ["down", "empty"]:
        run("merge", tmp_path / d, "-o", tmp_path / f"{d}.h5", check=0)
        assert h5diff(src, tmp_path / f"{d}.h5") == 0


def test_manifest_lists_everything_and_files_glob_in_order(tmp_path, batch):
    run("split", batch, "-n", 12, "--on-short", "empty", "-o", tmp_path / "mb", check=0)
    m = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    assert m["format"] == "microbatch-manifest" and m["version"] == 3
    assert m["source"] == str(batch)
    names = [f["name"] for f in m["files"]]
    assert names == sorted(names) == [f"microbatch-{i:05d}.h5" for i in range(12)]
    assert listing(tmp_path / "mb") == sorted(names + ["manifest.json"])
    for f in m["files"]:  # each file's size and content digest (test_digests.py computes them), as published
        assert f["size"] == os.path.getsize(tmp_path / "mb" / f["name"])
        assert len(f["xxh3_128_blocks"]) == 32 and int(f["xxh3_128_blocks"], 16) >= 0
    assert len(m["split_id"]) == 32
    assert m["datasets"]["/y"] == {"axis": 0, "length": 10, "rows": [[[i, i + 1, 1]] for i in range(10)] + [[], []]}
    assert m["options"] == {"chunks": 12, "micro_batch_size": None, "drop_last": False, "on_short": "empty",
                            "dp_degree": 1, "align": False, "balance": "tokens", "layout": "per-microbatch",
                            "cp_degree": 1}


def test_sample_data_round_trip(tmp_path):
    import os
    root = os.path.join(os.path.dirname(__file__), "..", "..", "sample_data")
    run("split", f"{root}/batch.h5", "-s", f"{root}/batch_spec.json", "-n", 4, "-o", tmp_path / "mb", check=0)
    with h5py.File(tmp_path / "mb" / "microbatch-00001.h5") as m, h5py.File(f"{root}/batch.h5") as f:
        assert np.array_equal(m["position_ids"][()], f["position_ids"][:, 2:4])
        assert m["pixel_values"].compression == "gzip"
        assert m.attrs["model_name"] == f.attrs["model_name"]
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(f"{root}/batch.h5", tmp_path / "out.h5") == 0


def test_sample_packed_round_trip_and_balance(tmp_path):
    import os
    root = os.path.join(os.path.dirname(__file__), "..", "..", "sample_data")
    run("split", f"{root}/packed.h5", "-s", f"{root}/packed_spec.json", "-n", 4, "-o", tmp_path / "mb", check=0)
    seq = json.loads((tmp_path / "mb" / "manifest.json").read_text())["sequences"]
    assert seq["count"] == 48 and sum(seq["run_tokens"]) == seq["tokens"]
    # token balancing beats cutting the sequence count evenly on this skewed batch
    even = json.loads(run("inspect", f"{root}/packed.h5", "-s", f"{root}/packed_spec.json", "-n", 4,
                          "--balance", "sequences", "--json", check=0).out)["sequences"]
    assert max(seq["run_tokens"]) < max(even["run_tokens"])
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(f"{root}/packed.h5", tmp_path / "out.h5") == 0
