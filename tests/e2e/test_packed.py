"""Packed variable-length sequences: every microbatch holds whole sequences,
offsets rebased to 0, the largest microbatch as small as possible, and merge
restores the batch exactly."""
import itertools
import json

import h5py
import numpy as np
import pytest

from conftest import assert_one_line_error, h5diff, listing, run, write_spec

SPEC = {
    "tokens": {"packed": "/cu_seqlens"},
    "position_ids": {"packed": "/cu_seqlens"},
    "labels": {"packed": "/cu_seqlens", "axis": -1},
    "cu_seqlens": "offsets",
    "seq_ids": {"per_sequence": "/cu_seqlens"},
    "max_len": "replicate",
}


def make_packed(path, lengths, with_k=None):
    """A packed batch: sequences of the given lengths back to back."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    total = int(offsets[-1])
    with h5py.File(path, "w") as f:
        f["tokens"] = np.arange(total, dtype=np.int64) + 1000
        f["position_ids"] = np.concatenate([np.arange(n) for n in lengths]).astype(np.int32) if total else \
            np.zeros(0, np.int32)
        f["labels"] = np.stack([np.arange(total), -np.arange(total)]).astype(np.int64)  # tokens on the last axis
        f["cu_seqlens"] = offsets
        f["seq_ids"] = np.array([f"doc-{i}" for i in range(len(lengths))], dtype=h5py.string_dtype())
        f["max_len"] = np.int32(max(lengths) if len(lengths) else 0)
        if with_k is not None:
            f["cu_seqlens_k"] = np.concatenate([[0], np.cumsum(with_k)]).astype(np.int64)
    return offsets


def best_max_tokens(tokens, n):
    """Exhaustive optimum of the largest microbatch over contiguous cuts."""
    s = len(tokens)
    best = None
    for cuts in itertools.combinations_with_replacement(range(s + 1), n - 1):
        bounds = [0, *cuts, s]
        worst = max(sum(tokens[bounds[i]:bounds[i + 1]]) for i in range(n))
        best = worst if best is None else min(best, worst)
    return best


@pytest.mark.parametrize("lengths,n", [
    ([5, 1, 9, 3, 3, 7, 2], 3), ([4, 4, 4, 4], 2), ([30, 1, 1, 1, 1], 2), ([2, 3], 2), ([1] * 9, 4),
])
def test_packed_split_keeps_sequences_whole_and_balances(tmp_path, lengths, n):
    src = tmp_path / "in.h5"
    offsets = make_packed(src, lengths)
    spec = write_spec(tmp_path / "s.json", SPEC)
    run("split", src, "-s", spec, "-n", n, "-o", tmp_path / "mb", check=0)
    manifest = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    runs = manifest["sequences"]["runs"]
    assert [r[0] for r in runs] == [0] + [r[1] for r in runs[:-1]] and runs[-1][1] == len(lengths)
    largest = 0
    with h5py.File(src) as f:
        for i, (a, b) in enumerate(runs):
            with h5py.File(tmp_path / "mb" / f"microbatch-{i:05d}.h5") as m:
                cu = m["cu_seqlens"][()]
                assert cu.dtype == np.int32
                assert list(cu) == list(offsets[a:b + 1] - offsets[a])  # rebased to 0
                lo, hi = offsets[a], offsets[b]
                assert np.array_equal(m["tokens"][()], f["tokens"][lo:hi])
                assert np.array_equal(m["labels"][()], f["labels"][:, lo:hi])
                assert list(m["position_ids"][()]) == [p for n_ in lengths[a:b] for p in range(n_)]
                assert list(m["seq_ids"][()]) == list(f["seq_ids"][a:b])
                largest = max(largest, hi - lo)
    assert largest == best_max_tokens(lengths, n)
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_two_offsets_datasets_share_boundaries_balanced_on_their_sum(tmp_path):
    src = tmp_path / "in.h5"
    q = [1, 1, 1, 1]
    k = [1, 20, 1, 1]  # the k side dominates sequence 1
    make_packed(src, q, with_k=k)
    with h5py.File(src, "a") as f:
        f["keys"] = np.arange(sum(k), dtype=np.float32)
    spec = write_spec(tmp_path / "s.json", {**SPEC, "cu_seqlens_k": "offsets", "keys": {"packed": "/cu_seqlens_k"}})
    res = run("inspect", src, "-s", spec, "-n", 3, "--json", check=0)
    seq = json.loads(res.out)["sequences"]
    assert seq["offsets"] == ["/cu_seqlens", "/cu_seqlens_k"]
    # per-sequence tokens q+k are 2, 21, 2, 2: the long one must stand alone
    assert max(seq["run_tokens"]) == 21 and [1, 2] in seq["runs"]
    run("split", src, "-s", spec, "-n", 3, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_balance_sequences_and_micro_batch_size(tmp_path):
    src = tmp_path / "in.h5"
    make_packed(src, [10, 1, 1, 1, 1, 1])
    spec = write_spec(tmp_path / "s.json", SPEC)
    run("split", src, "-s", spec, "-n", 2, "--balance", "sequences", "-o", tmp_path / "seq", check=0)
    assert json.loads((tmp_path / "seq" / "manifest.json").read_text())["sequences"]["runs"] == [[0, 3], [3, 6]]
    run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "tok", check=0)
    assert json.loads((tmp_path / "tok" / "manifest.json").read_text())["sequences"]["runs"] == [[0, 1], [1, 6]]
    run("split", src, "-s", spec, "--micro-batch-size", 4, "-o", tmp_path / "mbs", check=0)
    assert json.loads((tmp_path / "mbs" / "manifest.json").read_text())["sequences"]["runs"] == [[0, 4], [4, 6]]
    for d in ["seq", "tok", "mbs"]:
        run("merge", tmp_path / d, "-o", tmp_path / f"{d}.h5", check=0)
        assert h5diff(src, tmp_path / f"{d}.h5") == 0


def test_fewer_sequences_than_microbatches(tmp_path):
    src = tmp_path / "in.h5"
    make_packed(src, [3, 4])
    spec = write_spec(tmp_path / "s.json", SPEC)
    assert_one_line_error(run("split", src, "-s", spec, "-n", 3, "-o", tmp_path / "e"), 1,
                          "/cu_seqlens has 2 sequences")
    run("split", src, "-s", spec, "-n", 3, "--on-short", "empty", "-o", tmp_path / "e", check=0)
    with h5py.File(tmp_path / "e" / "microbatch-00002.h5") as m:
        assert list(m["cu_seqlens"][()]) == [0] and m["tokens"].shape == (0,)
    run("merge", tmp_path / "e", "-o", tmp_path / "e.h5", check=0)
    assert h5diff(src, tmp_path / "e.h5") == 0


@pytest.mark.parametrize("name,value,needles", [
    ("cu_seqlens", np.array([0, 5, 4, 11], np.int32), ["/cu_seqlens", "offsets must rise", "offsets[2] = 4"]),
    ("cu_seqlens", np.array([1, 5, 8, 11], np.int32), ["offsets must start at 0"]),
    ("cu_seqlens", np.array([0, 5, 8, 12], np.int32),
     ["/labels has 11 tokens on axis 1, but its offsets /cu_seqlens end at 12"]),
    ("seq_ids", np.array(["a", "b"], dtype=h5py.string_dtype()),
     ["/seq_ids has 2 rows on axis 0, but /cu_seqlens describes 3 sequences"]),
    ("cu_seqlens", np.array([0.0, 5.0, 8.0, 11.0]), ["offsets must be integers"]),
])
def test_bad_offsets_are_named(tmp_path, name, value, needles):
    src = tmp_path / "in.h5"
    make_packed(src, [5, 3, 3])
    with h5py.File(src, "a") as f:
        del f[name]
        f[name] = value
    spec = write_spec(tmp_path / "s.json", SPEC)
    assert_one_line_error(run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "mb"), 1, *needles)
    assert listing(tmp_path / "mb") == []


def test_packed_spec_errors(tmp_path):
    src = tmp_path / "in.h5"
    make_packed(src, [5, 3, 3])
    bad_ref = write_spec(tmp_path / "r.json", {**SPEC, "tokens": {"packed": "/seq_ids"}})
    assert_one_line_error(run("split", src, "-s", bad_ref, "-n", 2, "-o", tmp_path / "mb"), 1,
                          "/tokens names /seq_ids as its offsets", "not \"offsets\"")
    missing = write_spec(tmp_path / "m.json", {**SPEC, "tokens": {"packed": "/nope"}})
    assert_one_line_error(run("split", src, "-s", missing, "-n", 2, "-o", tmp_path / "mb"), 1,
                          "the file has no dataset there")
    spec = write_spec(tmp_path / "s.json", SPEC)
    assert_one_line_error(run("split", src, "-s", spec, "-n", 2, "--dp-degree", 2, "-o", tmp_path / "mb"), 2,
                          "does not combine with packed sequences")
    assert listing(tmp_path / "mb") == []
