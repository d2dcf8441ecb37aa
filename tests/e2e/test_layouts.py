"""Data-parallel layout (--dp-degree, --align): each microbatch holds piece i
of every shard; merge with the same flags (or the manifest) inverts it."""
import json

import os

import h5py
import numpy as np
import pytest

from conftest import assert_one_line_error, h5diff, listing, make_layout_batch, run, write_spec


def reference_split(rows, d, n, align, size=None):
    """The data-parallel split written out with numpy, from the contract:
    align reorders new[s*R + r] = old[s + r*D], then microbatch i is the
    concatenation over slices of each slice's piece i."""
    length = len(rows)
    r_len = length // d
    if align:
        order = [s + r * d for s in range(d) for r in range(r_len)]
        rows = rows[order]
    shards = [rows[s * r_len:(s + 1) * r_len] for s in range(d)]
    if size is None:
        cut = [np.array_split(sh, n) for sh in shards]
    else:
        cut = [[sh[i:i + size] for i in range(0, r_len, size)] for sh in shards]
    return [np.concatenate([c[i] for c in cut]) for i in range(len(cut[0]))]


@pytest.mark.parametrize("d,n,align,size", [
    (2, 3, False, None), (2, 3, True, None), (4, 2, True, None), (3, 5, False, None),
    (1, 4, True, None), (4, 3, True, None), (2, None, False, 2), (2, None, True, 3),
])
def test_data_parallel_split_matches_reference_and_merge_inverts(tmp_path, d, n, align, size):
    length = 24
    src = tmp_path / "in.h5"
    make_layout_batch(src, length)
    spec = write_spec(tmp_path / "s.json", {"ids": 0, "cols": 1, "text": 0, "scale": "replicate"})
    flags = ["--dp-degree", d] + (["--align"] if align else [])
    cut = ["-n", n] if size is None else ["--micro-batch-size", size]
    run("split", src, "-s", spec, *cut, *flags, "-o", tmp_path / "mb", check=0)
    files = sorted(f for f in listing(tmp_path / "mb") if f.endswith(".h5"))
    with h5py.File(src) as f:
        expect_ids = reference_split(f["ids"][()], d, n, align, size)
        expect_cols = reference_split(f["cols"][()].T, d, n, align, size)
        expect_text = reference_split(f["text"][()], d, n, align, size)
    assert len(files) == len(expect_ids)
    for name, ids, cols, text in zip(files, expect_ids, expect_cols, expect_text):
        with h5py.File(tmp_path / "mb" / name) as m:
            assert np.array_equal(m["ids"][()], ids)
            assert np.array_equal(m["cols"][()], cols.T)
            assert list(m["text"][()]) == list(text)
            assert m["scale"][()] == 2.5
    # from the directory: the manifest carries the flags
    run("merge", tmp_path / "mb", "-o", tmp_path / "dir.h5", check=0)
    assert h5diff(src, tmp_path / "dir.h5") == 0
    # from files: the same flags invert it
    run("merge", *[tmp_path / "mb" / f for f in files], "-s", spec, *flags, "-o", tmp_path / "files.h5", check=0)
    assert h5diff(src, tmp_path / "files.h5") == 0


def test_manifest_records_strided_rows(tmp_path):
    src = tmp_path / "in.h5"
    make_layout_batch(src, 8)
    spec = write_spec(tmp_path / "s.json", {"ids": 0, "cols": 1, "text": 0, "scale": "replicate"})
    run("split", src, "-s", spec, "-n", 2, "--dp-degree", 2, "--align", "-o", tmp_path / "mb", check=0)
    m = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    assert m["options"]["dp_degree"] == 2 and m["options"]["align"] is True
    # shard 0 = rows 0,2,4,6; shard 1 = rows 1,3,5,7; microbatch 0 = first two rows of each shard
    assert m["datasets"]["/ids"]["rows"] == [[[0, 3, 2], [1, 4, 2]], [[4, 7, 2], [5, 8, 2]]]


def test_data_parallel_errors(tmp_path):
    src = tmp_path / "in.h5"
    make_layout_batch(src, 10)
    spec = write_spec(tmp_path / "s.json", {"ids": 0, "cols": 1, "text": 0, "scale": "replicate"})
    assert_one_line_error(run("split", src, "-s", spec, "-n", 2, "--dp-degree", 3, "-o", tmp_path / "mb"), 1,
                          "/cols has 10 rows on its split axis, not divisible by --dp-degree 3")
    assert_one_line_error(run("split", src, "-s", spec, "-n", 6, "--dp-degree", 2, "-o", tmp_path / "mb"), 1,
                          "5 rows on its split axis per data-parallel slice")
    assert_one_line_error(run("split", src, "-n", 2, "--dp-degree", 0, "-o", tmp_path / "mb"), 2, "--dp-degree")
    assert listing(tmp_path / "mb") == []
    # merging with a degree that does not divide a microbatch's rows: beside
    # the manifest, the degree is not the split's; elsewhere, the rows refuse it
    run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "plain", check=0)
    files = [tmp_path / "plain" / f"microbatch-0000{i}.h5" for i in range(2)]
    assert_one_line_error(run("merge", *files, "-s", spec, "--dp-degree", 2, "-o", tmp_path / "m.h5"), 2,
                          "--dp-degree 2 is not how these files were split")
    os.remove(tmp_path / "plain" / "manifest.json")
    assert_one_line_error(run("merge", *files, "-s", spec, "--dp-degree", 2, "-o", tmp_path / "m.h5"), 1,
                          "not a multiple of the data-parallel degree 2")
    assert not (tmp_path / "m.h5").exists()


def test_on_short_with_data_parallel_shards(tmp_path):
    src = tmp_path / "in.h5"
    make_layout_batch(src, 6)
    spec = write_spec(tmp_path / "s.json", {"ids": 0, "cols": 1, "text": 0, "scale": "replicate"})
    run("split", src, "-s", spec, "-n", 5, "--dp-degree", 2, "--on-short", "empty", "-o", tmp_path / "e", check=0)
    with h5py.File(tmp_path / "e" / "microbatch-00004.h5") as m:
        assert m["ids"].shape == (0, 3)
    run("merge", tmp_path / "e", "-o", tmp_path / "e.h5", check=0)
    assert h5diff(src, tmp_path / "e.h5") == 0
    res = run("split", src, "-s", spec, "-n", 5, "--dp-degree", 2, "--on-short", "downsize", "-o", tmp_path / "d",
              check=0)
    assert "downsizing from 5 to 3" in res.err
    run("merge", tmp_path / "d", "-o", tmp_path / "d.h5", check=0)
    assert h5diff(src, tmp_path / "d.h5") == 0


@pytest.mark.parametrize("d,n,align", [(2, 3, False), (2, 3, True), (3, 2, True), (1, 2, False)])
def test_per_rank_layout_one_file_per_rank_and_microbatch(tmp_path, d, n, align):
    length = 18
    src = tmp_path / "in.h5"
    make_layout_batch(src, length)
    spec = write_spec(tmp_path / "s.json", {"ids": 0, "cols": 1, "text": 0, "scale": "replicate"})
    flags = ["--dp-degree", d, "--layout", "per-rank"] + (["--align"] if align else [])
    run("split", src, "-s", spec, "-n", n, *flags, "-o", tmp_path / "mb", check=0)
    manifest = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    files = [f["name"] for f in manifest["files"]]
    assert files == sorted(files) == [f"rank-{s:05d}-microbatch-{i:05d}.h5" for s in range(d) for i in range(n)]
    assert manifest["placement"] == [{"rank": s, "microbatch": i} for s in range(d) for i in range(n)]
    with h5py.File(src) as f:
        ids = f["ids"][()]
    r_len = length // d
    for s in range(d):
        shard = ids[[s + r * d for r in range(r_len)]] if align else ids[s * r_len:(s + 1) * r_len]
        for i, piece in enumerate(np.array_split(shard, n)):
            with h5py.File(tmp_path / "mb" / f"rank-{s:05d}-microbatch-{i:05d}.h5") as m:
                assert np.array_equal(m["ids"][()], piece)
                assert m["scale"][()] == 2.5
    run("merge", tmp_path / "mb", "-o", tmp_path / "dir.h5", check=0)
    assert h5diff(src, tmp_path / "dir.h5") == 0
    run("merge", *[tmp_path / "mb" / f for f in files], "-s", spec, *flags, "-o", tmp_path / "files.h5", check=0)
    assert h5diff(src, tmp_path / "files.h5") == 0


def test_per_rank_merge_errors(tmp_path):
    src = tmp_path / "in.h5"
    make_layout_batch(src, 12)
    spec = write_spec(tmp_path / "s.json", {"ids": 0, "cols": 1, "text": 0, "scale": "replicate"})
    run("split", src, "-s", spec, "-n", 2, "--dp-degree", 2, "--layout", "per-rank", "-o", tmp_path / "mb", check=0)
    files = sorted((tmp_path / "mb").glob("rank-*.h5"))
    # Beside their manifest, files must be all of the split's, in its order.
    assert_one_line_error(run("merge", *files[:3], "-o", tmp_path / "m.h5"), 1, "lists 4 files, 3 given",
                          "give the directory")
    (tmp_path / "mb" / "manifest.json").unlink()
    assert_one_line_error(run("merge", *files[:3], "-s", spec, "--dp-degree", 2, "--layout", "per-rank",
                              "-o", tmp_path / "m.h5"), 1, "3 per-rank files do not divide into 2 ranks")
    assert_one_line_error(run("merge", *files, "-s", spec, "--layout", "sideways", "-o", tmp_path / "m.h5"), 2,
                          "--layout")
    assert not (tmp_path / "m.h5").exists()


def with_drop_last_summary(res):
    from conftest import summary
    return summary(res, "split-summary")


@pytest.mark.parametrize("d,align,size,length", [(1, False, 6, 64), (2, False, 3, 26), (2, True, 3, 26),
                                                 (4, True, 2, 36),
                                                 # L mod D != 0, as in Megatron's num-microbatches tests
                                                 (2, False, 4, 33), (4, False, 2, 35), (3, True, 2, 20)])
def test_drop_last_splits_the_longest_prefix_of_whole_microbatches(tmp_path, d, align, size, length):
    # --drop-last is the split of the first `kept` rows (whole microbatches of every slice), and merge gives
    # those rows back; without it the last microbatch is shorter, and a warning says so.
    kept = length // (d * size) * (d * size)
    assert 0 < kept < length
    src = tmp_path / "in.h5"
    make_layout_batch(src, length)
    spec = write_spec(tmp_path / "s.json", {"ids": 0, "cols": 1, "text": 0, "scale": "replicate"})
    flags = ["--micro-batch-size", size, "--dp-degree", d] + (["--align"] if align else [])
    if length % d:  # without --drop-last every slice must be whole
        assert_one_line_error(run("split", src, "-s", spec, *flags, "-o", tmp_path / "all"), 1,
                              f"has {length} rows on its split axis, not divisible by --dp-degree {d}")
    else:
        res = run("split", src, "-s", spec, *flags, "-o", tmp_path / "all", check=0)
        assert "warning: the last microbatch is shorter than the others" in res.err, res

    res = run("split", src, "-s", spec, *flags, "--drop-last", "-o", tmp_path / "mb", "--json", check=0)
    noun = "row" if length - kept == 1 else "rows"
    assert f"warning: --drop-last left out the last {length - kept} {noun} of every split dataset" in res.err, res
    s = with_drop_last_summary(res)
    assert s["dropped_rows"] == length - kept and s["microbatches"] == kept // (d * size)
    with open(tmp_path / "mb" / "manifest.json") as f:
        m = json.load(f)
    assert m["dropped_rows"] == length - kept and m["options"]["drop_last"] is True
    files = sorted(f for f in listing(tmp_path / "mb") if f.endswith(".h5"))
    with h5py.File(src) as f:
        expect_ids = reference_split(f["ids"][:kept], d, None, align, size)
        expect_text = reference_split(f["text"][:kept], d, None, align, size)
        ids, cols, text = f["ids"][()], f["cols"][()], list(f["text"][()])
    assert len(files) == len(expect_ids)
    for name, want_ids, want_text in zip(files, expect_ids, expect_text):
        with h5py.File(tmp_path / "mb" / name) as piece:
            assert np.array_equal(piece["ids"][()], want_ids)
            assert list(piece["text"][()]) == list(want_text)
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    with h5py.File(tmp_path / "m.h5") as merged:
        assert np.array_equal(merged["ids"][()], ids[:kept])
        assert np.array_equal(merged["cols"][()], cols[:, :kept])
        assert list(merged["text"][()]) == text[:kept]
        assert merged["scale"][()] == 2.5


def test_drop_last_without_micro_batch_size_is_a_usage_error(tmp_path):
    src = tmp_path / "in.h5"
    make_layout_batch(src, 8)
    res = run("split", src, "-n", 3, "--drop-last", "-o", tmp_path / "mb")
    assert_one_line_error(res, 2, "--drop-last")
    assert not (tmp_path / "mb").exists()
