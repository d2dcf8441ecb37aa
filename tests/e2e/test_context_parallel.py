"""Context parallelism (--cp-degree C): each CP rank's file holds, along every
marked sequence axis and of every packed document, stripes r and 2C-1-r of 2C.
Judged against numpy's own transcription of the rule, and the round trips
with h5diff."""
import glob
import json
import os

import h5py
import numpy as np
import pytest

from conftest import assert_one_line_error, h5diff, listing, make_packed, run, summary, write_spec

PADDED_SPEC = {
    "input_ids": {"split_axis": 0, "sequence_axis": 1},
    "position_ids": {"split_axis": 1, "sequence_axis": 2},  # [3, B, S]
    "mask": {"split_axis": 0, "sequence_axis": 2},  # [B, 1, S, S]: the query axis only
    "labels": 0,
    "scale": "replicate",
}
PACKED_SPEC = {
    "cu_seqlens": "offsets",
    "tokens": {"packed": "/cu_seqlens"},
    "hidden": {"packed": "/cu_seqlens"},
    "doc_id": {"per_sequence": "/cu_seqlens"},
}
PACKED = {"members": ("cu_seqlens", "tokens", "hidden", "doc_id"), "first_token": 0}  # make_packed's file for it
LENGTHS = (8, 16, 24, 8, 40, 16)


def zigzag(S, C, r):
    """The rule, literally: 2C stripes of S/(2C); rank r holds stripes r and 2C-1-r."""
    chunks = np.array_split(np.arange(S), 2 * C)
    return np.concatenate([chunks[r], chunks[2 * C - 1 - r]])


def make_padded(path, B=8, S=16):
    rng = np.random.default_rng(1)
    with h5py.File(path, "w") as f:
        f["input_ids"] = rng.integers(0, 1000, (B, S)).astype("i4")
        f["position_ids"] = np.broadcast_to(np.arange(S), (3, B, S)).astype(">i8")
        f.create_dataset("mask", data=rng.random((B, 1, S, S)).astype("f2"), chunks=(1, 1, S, S), compression="gzip")
        f["labels"] = np.arange(B).astype("u2")
        f["scale"] = np.float32(0.5)
        f.attrs["note"] = "padded"
    return path


@pytest.fixture
def padded(tmp_path):
    return make_padded(tmp_path / "padded.h5"), write_spec(tmp_path / "padded.json", PADDED_SPEC)


@pytest.fixture
def packed(tmp_path):
    make_packed(tmp_path / "packed.h5", LENGTHS, **PACKED)
    return tmp_path / "packed.h5", write_spec(tmp_path / "packed.json", PACKED_SPEC)


def test_readme_example_s8_c2(tmp_path):
    src = tmp_path / "b.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(8)[None, :]
    run("split", src, "--spec-json", '{"x": {"split_axis": 0, "sequence_axis": 1}}', "-n", "1", "--cp-degree", "2",
        "-o", tmp_path / "mb", check=0)
    with h5py.File(tmp_path / "mb" / "cp-00000-microbatch-00000.h5") as f:
        assert f["x"][0].tolist() == [0, 1, 6, 7]
    with h5py.File(tmp_path / "mb" / "cp-00001-microbatch-00000.h5") as f:
        assert f["x"][0].tolist() == [2, 3, 4, 5]


@pytest.mark.parametrize("C", [2, 4])
def test_padded_files_hold_each_ranks_positions(tmp_path, padded, C):
    src, spec = padded
    out = tmp_path / "mb"
    run("split", src, "-s", spec, "-n", "2", "--cp-degree", C, "-o", out, check=0)
    names = sorted(glob.glob(str(out / "*.h5")))
    assert [os.path.basename(n) for n in names] == [f"cp-{r:05d}-microbatch-{m:05d}.h5" for r in range(C)
                                                    for m in range(2)]
    with h5py.File(src) as f:
        ids, pos, mask, labels = f["input_ids"][()], f["position_ids"][()], f["mask"][()], f["labels"][()]
    rows = np.array_split(np.arange(8), 2)
    for r in range(C):
        held = zigzag(16, C, r)
        for m in range(2):
            with h5py.File(out / f"cp-{r:05d}-microbatch-{m:05d}.h5") as g:
                assert np.array_equal(g["input_ids"][()], ids[rows[m]][:, held])
                assert np.array_equal(g["position_ids"][()], pos[:, rows[m]][:, :, held])
                assert g["position_ids"].dtype == np.dtype(">i8")
                # The mask is cut on its query axis only.
                assert np.array_equal(g["mask"][()], mask[rows[m]][:, :, held, :])
                assert np.array_equal(g["labels"][()], labels[rows[m]])  # no sequence axis: every CP rank
                assert g["scale"][()] == np.float32(0.5)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["cp_degree"] == C
    assert manifest["placement"][1] == {"cp_rank": 0, "microbatch": 1}
    assert manifest["placement"][2] == {"cp_rank": 1, "microbatch": 0}
    assert manifest["datasets"]["/input_ids"]["sequence_axis"] == 1
    run("merge", out, "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_packed_files_hold_each_ranks_tokens_of_every_document(tmp_path, packed):
    src, spec = packed
    out = tmp_path / "mb"
    C = 2
    run("split", src, "-s", spec, "-n", "2", "--cp-degree", C, "-o", out, check=0)
    manifest = json.loads((out / "manifest.json").read_text())
    runs = manifest["sequences"]["runs"]
    with h5py.File(src) as f:
        cu, tokens, hidden = f["cu_seqlens"][()], f["tokens"][()], f["hidden"][()]
    for r in range(C):
        for m, (a, b) in enumerate(runs):
            with h5py.File(out / f"cp-{r:05d}-microbatch-{m:05d}.h5") as g:
                rows = np.concatenate([cu[s] + zigzag(cu[s + 1] - cu[s], C, r) for s in range(a, b)])
                assert np.array_equal(g["tokens"][()], tokens[rows])
                assert np.array_equal(g["hidden"][()], hidden[rows])
                # Each rank's offsets describe its own tokens: L_i / C per document.
                own = np.concatenate([[0], np.cumsum(np.diff(cu[a:b + 1]) // C)])
                assert np.array_equal(g["cu_seqlens"][()], own)
                assert g["cu_seqlens"].dtype == np.dtype("i4")
                assert np.array_equal(g["doc_id"][()], np.arange(a, b))
    run("merge", out, "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


@pytest.mark.parametrize("flags", [
    ["-n", "2"],
    ["-n", "3", "--on-short", "empty"],
    ["--micro-batch-size", "3"],
    ["-n", "2", "--dp-degree", "2"],
    ["-n", "2", "--dp-degree", "2", "--align"],
    ["-n", "2", "--dp-degree", "2", "--layout", "per-rank"],
    ["-n", "2", "--dp-degree", "4", "--align", "--layout", "per-rank"],
])
@pytest.mark.parametrize("virtual", [False, True])
def test_padded_round_trips(tmp_path, padded, flags, virtual):
    src, spec = padded
    out = tmp_path / "mb"
    run("split", src, "-s", spec, *flags, "--cp-degree", "2", "-o", out, check=0)
    extra = ["--virtual"] if virtual else []
    run("merge", out, "-o", tmp_path / "dir.h5", *extra, check=0)
    assert h5diff(src, tmp_path / "dir.h5") == 0
    # Files one by one, with the split's layout flags.
    files = sorted(glob.glob(str(out / "*.h5")))
    layout = [f for f in flags if f in ("--align",)]
    for opt in ("--dp-degree", "--layout"):
        if opt in flags:
            layout += [opt, flags[flags.index(opt) + 1]]
    run("merge", *files, "-s", spec, "--cp-degree", "2", *layout, "-o", tmp_path / "files.h5", *extra, check=0)
    assert h5diff(src, tmp_path / "files.h5") == 0


@pytest.mark.parametrize("flags", [["-n", "2"], ["-n", "4", "--balance", "sequences"], ["--micro-batch-size", "2"],
                                   ["-n", "8", "--on-short", "empty"]])
@pytest.mark.parametrize("C", [2, 4])
@pytest.mark.parametrize("virtual", [False, True])
def test_packed_round_trips(tmp_path, packed, flags, C, virtual):
    src, spec = packed
    out = tmp_path / "mb"
    run("split", src, "-s", spec, *flags, "--cp-degree", C, "-o", out, check=0)
    extra = ["--virtual"] if virtual else []
    run("merge", out, "-o", tmp_path / "dir.h5", *extra, check=0)
    assert h5diff(src, tmp_path / "dir.h5") == 0
    files = sorted(glob.glob(str(out / "*.h5")))
    run("merge", *files, "-s", spec, "--cp-degree", C, "-o", tmp_path / "files.h5", *extra, check=0)
    assert h5diff(src, tmp_path / "files.h5") == 0


def test_sequence_length_not_divisible_is_refused(tmp_path, padded):
    src, spec = padded
    res = run("split", src, "-s", spec, "-n", "2", "--cp-degree", "3", "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/input_ids has 16 positions on its sequence axis 1",
                          "not divisible into 2 x --cp-degree 3 = 6")
    assert listing(tmp_path / "mb") == []


def test_document_length_not_divisible_is_refused_never_rounded(tmp_path):
    src = tmp_path / "p.h5"
    make_packed(src, (8, 6, 8), **PACKED)
    spec = write_spec(tmp_path / "s.json", PACKED_SPEC)
    res = run("split", src, "-s", spec, "-n", "1", "--cp-degree", "2", "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/cu_seqlens: sequence 1 has 6 tokens", "2 x --cp-degree 2 = 4")
    assert listing(tmp_path / "mb") == []


def test_nothing_to_cut_is_refused(tmp_path, padded):
    src, _ = padded
    res = run("split", src, "-n", "2", "--cp-degree", "2", "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "--cp-degree 2 has nothing to cut", "sequence_axis")


def test_bad_sequence_axis_specs(tmp_path, padded):
    src, _ = padded
    res = run("split", src, "--spec-json", '{"input_ids": {"split_axis": 0, "sequence_axis": 0}, "*": null}', "-n",
              "2", "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/input_ids: the sequence axis is its split axis 0")
    res = run("split", src, "--spec-json", '{"input_ids": {"split_axis": 0, "sequence_axis": 2}, "*": null}', "-n",
              "2", "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "sequence axis 2 is out of range for /input_ids of rank 2")
    res = run("split", src, "--spec-json", '{"input_ids": {"split_axis": 0, "seq_axis": 1}, "*": null}', "-n", "2",
              "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "takes only \"sequence_axis\"")


def test_cp_ranks_that_disagree_are_refused(tmp_path, padded):
    """What every CP rank holds the same (rows without a sequence axis) must be equal in every CP rank's file."""
    src, spec = padded
    out = tmp_path / "mb"
    run("split", src, "-s", spec, "-n", "2", "--cp-degree", "2", "-o", out, check=0)
    with h5py.File(out / "cp-00001-microbatch-00001.h5", "r+") as f:
        f["labels"][0] += 1
    res = run("merge", out, "-o", tmp_path / "m.h5", "--no-verify")
    assert_one_line_error(res, 1, "/labels differs between", "cp-00000-microbatch-00001.h5",
                          "cp-00001-microbatch-00001.h5")
    assert not (tmp_path / "m.h5").exists()


def test_packed_cp_ranks_with_different_offsets_are_refused(tmp_path, packed):
    src, spec = packed
    out = tmp_path / "mb"
    run("split", src, "-s", spec, "-n", "1", "--cp-degree", "2", "-o", out, check=0)
    path = out / "cp-00001-microbatch-00000.h5"
    with h5py.File(path, "r+") as f:  # moves one token from document 0 to document 1
        cu = f["cu_seqlens"][()]
        cu[1] -= 2
        f["cu_seqlens"][...] = cu
    files = sorted(glob.glob(str(out / "*.h5")))
    res = run("merge", *files, "-s", spec, "--no-verify", "-o", tmp_path / "m.h5")
    assert_one_line_error(res, 1, "/cu_seqlens: input 1 (CP rank 1) holds 2 tokens of sequence 0, input 0 (CP rank 0")
    assert not (tmp_path / "m.h5").exists()


def test_wrong_cp_degree_on_merge_is_refused(tmp_path, padded):
    src, spec = padded
    out = tmp_path / "mb"
    run("split", src, "-s", spec, "-n", "3", "--cp-degree", "2", "-o", out, check=0)
    files = sorted(glob.glob(str(out / "*.h5")))
    # Beside their manifest: the split's own degree is taken, another refused.
    run("merge", *files, "-s", spec, "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0
    res = run("merge", *files, "-s", spec, "--cp-degree", "3", "-o", tmp_path / "m3.h5")
    assert_one_line_error(res, 2, "--cp-degree 3 is not how these files were split", "manifest.json says 2")
    # Elsewhere: the degree given must divide the files.
    moved = tmp_path / "moved"
    moved.mkdir()
    for f in files:
        os.rename(f, moved / os.path.basename(f))
    res = run("merge", *sorted(glob.glob(str(moved / "*.h5"))), "-s", spec, "--cp-degree", "4", "-o",
              tmp_path / "m4.h5")
    assert_one_line_error(res, 1, "6 inputs do not divide into 4 CP ranks")
    assert not (tmp_path / "m3.h5").exists() and not (tmp_path / "m4.h5").exists()


def test_layout_flags_beside_a_manifest_must_be_the_splits(tmp_path):
    """Before: files merged beside their manifest with another --dp-degree were put back in the wrong rows, exit 0."""
    src = tmp_path / "b.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(16).reshape(8, 2)
    out = tmp_path / "mb"
    run("split", src, "-n", "2", "--dp-degree", "2", "-o", out, check=0)
    files = sorted(glob.glob(str(out / "*.h5")))
    res = run("merge", *files, "--dp-degree", "1", "-o", tmp_path / "m.h5")
    assert_one_line_error(res, 2, "--dp-degree 1 is not how these files were split", "says 2")
    res = run("merge", *files, "--dp-degree", "2", "--align", "-o", tmp_path / "m.h5")
    assert_one_line_error(res, 2, "--align on is not how these files were split")
    assert not (tmp_path / "m.h5").exists()
    run("merge", *files, "--dp-degree", "2", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_inspect_shows_each_cp_rank(tmp_path, padded, packed):
    src, spec = packed
    res = run("inspect", src, "-s", spec, "-n", "2", "--cp-degree", "2", check=0)
    assert "context parallel: 2 CP ranks" in res.out
    with h5py.File(src) as f:
        lengths = np.diff(f["cu_seqlens"][()])
    total = sum(L * (L + 1) // 2 for L in lengths)
    work = [sum(int((zigzag(L, 2, r) + 1).sum()) for L in lengths) for r in range(2)]
    assert work[0] == work[1] == total // 2  # zigzag: every rank does the ideal share
    assert f"CP rank 0: {lengths.sum() // 2} tokens, work {work[0]}" in res.out
    j = summary(run("inspect", src, "-s", spec, "-n", "2", "--cp-degree", "2", "--json", check=0), "inspect")
    assert j["cp_degree"] == 2
    assert j["context_parallel"][0]["work"] == work
    assert j["context_parallel"][0]["total_work"] == total
    src, spec = padded
    res = run("inspect", src, "-s", spec, "-n", "2", "--cp-degree", "2", check=0)
    assert "positions CP rank 0 0:4+12:16, CP rank 1 4:12" in res.out
    tree = {n["path"]: n for n in summary(run("inspect", src, "-s", spec, "-n", "2", "--cp-degree", "2", "--json",
                                              check=0), "inspect")["tree"]}
    assert tree["/input_ids"]["rule"] == {"mode": "split", "axis": 0, "sequence_axis": 1}
    assert tree["/input_ids"]["positions"][0] == [[0, 4, 1], [12, 16, 1]]
    assert tree["/input_ids"]["positions"][2] == [[4, 12, 1]]  # CP rank 1, microbatch 0


def test_derived_metadata_describes_each_cp_ranks_own_tokens(tmp_path):
    src = tmp_path / "p.h5"
    make_packed(src, LENGTHS, **PACKED)
    with h5py.File(src, "r+") as f:
        lengths = np.diff(f["cu_seqlens"][()])
        f["max_seqlen"] = np.int32(lengths.max())
        f.attrs["num_tokens"] = np.uint32(lengths.sum())
    spec = write_spec(tmp_path / "s.json", dict(PACKED_SPEC, max_seqlen={"max_seqlen": "/cu_seqlens"},
                                                **{"@num_tokens": {"num_tokens": "/cu_seqlens"}}))
    out = tmp_path / "mb"
    run("split", src, "-s", spec, "-n", "2", "--cp-degree", "2", "-o", out, check=0)
    for name in sorted(glob.glob(str(out / "*.h5"))):
        with h5py.File(name) as g:
            own = np.diff(g["cu_seqlens"][()])
            assert g["max_seqlen"][()] == own.max()
            assert g.attrs["num_tokens"] == own.sum()
    run("merge", out, "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


@pytest.mark.parametrize("storage", ["small", "large", "gzip", "strings"])
@pytest.mark.parametrize("buffer", [None, "1"])
def test_many_documents_move_in_windows(tmp_path, storage, buffer):
    """Thousands of documents: each CP rank's two chunks of every one are moved a window at a
    time (a union of hyperslabs), in memory, between datasets, filtered, variable-length, and
    with documents longer than a window (--buffer-size 1: 1 MiB)."""
    rng = np.random.default_rng(7)
    lengths = 4 * rng.integers(1, 8, 3000)
    lengths[1500] = 4 * 80000  # one document whose chunks are longer than a 1 MiB window of 16-byte rows
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype("i8")
    src = tmp_path / "p.h5"
    with h5py.File(src, "w") as f:
        f["cu"] = cu
        n = int(cu[-1])
        if storage == "small":
            f["tok"] = (np.arange(n) % 30000).astype("i2")
        elif storage == "large":
            f["tok"] = np.stack([np.arange(n), -np.arange(n)], axis=1).astype("i8")
        elif storage == "gzip":
            f.create_dataset("tok", data=np.arange(n).astype("f4"), chunks=(4096,), compression="gzip")
        else:
            f.create_dataset("tok", data=np.array([f"t{i}" for i in range(n)], dtype=object),
                             dtype=h5py.string_dtype())
    spec = write_spec(tmp_path / "s.json", {"cu": "offsets", "tok": {"packed": "/cu"}})
    extra = ["--buffer-size", buffer] if buffer else []
    out = tmp_path / "mb"
    run("split", src, "-s", spec, "-n", "3", "--cp-degree", "2", "-o", out, *extra, check=0)
    runs = json.loads((out / "manifest.json").read_text())["sequences"]["runs"]
    with h5py.File(src) as f:
        tok = f["tok"][()]
    for r in range(2):
        m = 1
        a, b = runs[m]
        rows = np.concatenate([cu[s] + zigzag(cu[s + 1] - cu[s], 2, r) for s in range(a, b)])
        with h5py.File(out / f"cp-{r:05d}-microbatch-{m:05d}.h5") as g:
            assert np.array_equal(g["tok"][()], tok[rows])
    run("merge", out, "-o", tmp_path / "m.h5", *extra, check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_a_cp_split_is_replaced_by_force(padded, tmp_path):
    # --force recognises the cp-NNNNN- files (and their temporaries) as an earlier split's own.
    src, spec = padded
    out = tmp_path / "mb"
    run("split", src, "-s", spec, "-n", 2, "--cp-degree", 2, "-o", out, check=0)
    (out / ".cp-00000-microbatch-00000.h5.tmp-999999").write_bytes(b"left by a killed run")
    run("split", src, "-s", spec, "-n", 1, "--cp-degree", 2, "-o", out, "--force", check=0)
    assert listing(out) == ["cp-00000-microbatch-00000.h5", "cp-00001-microbatch-00000.h5", "manifest.json"]


@pytest.mark.parametrize("maxshape", [(1,), (None,)], ids=["fixed", "unlimited"])
def test_cp_pad_longer_than_a_fixed_max_dim_is_refused(tmp_path, maxshape):
    """One token cut for 2 CP ranks: each file holds 2 rows (the token and pads). A fixed max dim of 1 could
    not hold them without growing, and merge could not give it back: refused. Unlimited max dims take it,
    and merge gives the input back, max dims included."""
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["cu_seqlens"] = np.array([0, 1], dtype=np.int32)
        f.create_dataset("tokens", data=np.array([7], dtype=np.int16), chunks=(1,), maxshape=maxshape)
    spec = write_spec(tmp_path / "s.json", {"cu_seqlens": "offsets", "tokens": {"packed": "/cu_seqlens"}})
    res = run("split", src, "-s", spec, "-n", 1, "--cp-degree", 2, "--cp-pad", "-o", tmp_path / "mb")
    if maxshape == (1,):
        assert_one_line_error(res, 1, "/tokens: --cp-pad gives a file 2 rows on axis 0",
                              "fixed max dims allow (1)")
        assert not (tmp_path / "mb").exists()
        return
    assert res.code == 0, res
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0
    run("diff", "--storage", src, tmp_path / "out.h5", check=0)
