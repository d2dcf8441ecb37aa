"""Packed sequences for DP x PP x CP training: whole sequences per (data-parallel
rank, microbatch) cell, every rank with the same number of microbatches, the
largest cell as small as it can be (in tokens or in causal attention work),
each file as a numpy reference cuts it, and merge giving the input back
exactly."""
import itertools
import json
import os
import re
import shutil
import textwrap

import h5py
import numpy as np
import pytest

from conftest import assert_one_line_error, h5diff, listing, make_packed, run, write_spec

SPEC = {
    "tokens": {"packed": "/cu_seqlens"},
    "labels": {"packed": "/cu_seqlens", "axis": -1},
    "position_ids": {"packed": "/cu_seqlens"},
    "cu_seqlens": "offsets",
    "cu_seqlens_k": "offsets",
    "seq_ids": {"per_sequence": "/cu_seqlens"},
    "max_len": "replicate",
}


def best_largest(weights, parts):
    """Exhaustive optimum of the heaviest of `parts` contiguous runs (empty runs allowed)."""
    s, best = len(weights), None
    for cuts in itertools.combinations_with_replacement(range(s + 1), parts - 1):
        bounds = [0, *cuts, s]
        worst = max(sum(weights[bounds[i]:bounds[i + 1]]) for i in range(parts))
        best = worst if best is None else min(best, worst)
    return best


def zigzag(length, c, r):
    """The positions of a document of `length` tokens CP rank r of c holds (stripes r and 2c-1-r)."""
    s = length // (2 * c)
    return list(range(r * s, (r + 1) * s)) + list(range((2 * c - 1 - r) * s, (2 * c - r) * s))


def reference_file(f, cells, offsets, c=1, r=0):
    """What a file holding these cells (sequence ranges) of CP rank r holds: tokens, labels, seq_ids, offsets."""
    rows, seqs, lengths = [], [], []
    for a, b in cells:
        for s in range(a, b):
            lo, hi = int(offsets[s]), int(offsets[s + 1])
            rows += [lo + p for p in zigzag(hi - lo, c, r)] if c > 1 else list(range(lo, hi))
            lengths.append((hi - lo) // c)
            seqs.append(s)
    rows = np.array(rows, dtype=np.int64)
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return {"tokens": f["tokens"][()][rows], "labels": f["labels"][()][:, rows],
            "seq_ids": [f["seq_ids"][s] for s in seqs], "cu_seqlens": cu}


def check_files(src, out, offsets, d, n, c, per_rank):
    """Every file against the numpy reference of its cells; returns the cells (rank-major)."""
    m = json.loads((out / "manifest.json").read_text())
    cells = [tuple(x) for x in m["sequences"]["runs"]]
    assert len(cells) == d * n and m["sequences"].get("dp_degree", 1) == d
    assert [a for a, _ in cells] == [0] + [b for _, b in cells[:-1]] and cells[-1][1] == len(offsets) - 1
    names = [e["name"] for e in m["files"]]
    assert len(names) == (d if per_rank else 1) * c * n
    with h5py.File(src) as f:
        for k, name in enumerate(names):
            place = m["placement"][k] if "placement" in m else {"microbatch": k}
            i, r = place["microbatch"], place.get("cp_rank", 0)
            mine = [cells[place["rank"] * n + i]] if per_rank else [cells[rank * n + i] for rank in range(d)]
            want = reference_file(f, mine, offsets, c, r)
            with h5py.File(out / name) as piece:
                assert np.array_equal(piece["tokens"][()], want["tokens"]), name
                assert np.array_equal(piece["labels"][()], want["labels"]), name
                assert list(piece["seq_ids"][()]) == want["seq_ids"], name
                assert piece["cu_seqlens"].dtype == f["cu_seqlens"].dtype
                assert np.array_equal(piece["cu_seqlens"][()], want["cu_seqlens"]), name
    return cells


CASES = [  # lengths, D, N, C
    ([5, 1, 9, 3, 3, 7, 2, 4], 2, 2, 1), ([4, 0, 8, 12, 4, 0, 16, 8, 4], 2, 3, 2), ([2] * 12, 4, 3, 1),
    ([30, 1, 1, 1, 1, 6, 2], 3, 2, 1), ([8, 16, 0, 24, 8, 8, 32, 8], 4, 2, 4), ([6, 6, 6], 1, 3, 3),
]


@pytest.mark.parametrize("lengths,d,n,c", CASES)
@pytest.mark.parametrize("per_rank", [False, True])
def test_cells_hold_whole_sequences_and_merge_restores_the_batch(tmp_path, lengths, d, n, c, per_rank):
    src = tmp_path / "in.h5"
    offsets = make_packed(src, lengths, offsets_dtype=np.int64 if per_rank else np.int32, with_k=lengths,
                          members=("tokens", "labels", "position_ids", "cu_seqlens", "seq_ids", "max_len"))
    spec = write_spec(tmp_path / "s.json", SPEC)
    flags = ["-n", n, "--dp-degree", d] + (["--cp-degree", c] if c > 1 else [])
    flags += ["--layout", "per-rank"] if per_rank else []
    run("split", src, "-s", spec, *flags, "-o", tmp_path / "mb", check=0)
    cells = check_files(src, tmp_path / "mb", offsets, d, n, c, per_rank)
    tokens = [2 * k for k in lengths]  # cu_seqlens and cu_seqlens_k are balanced together
    assert max(sum(tokens[a:b]) for a, b in cells) == best_largest(tokens, d * n)
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


@pytest.mark.parametrize("seed", range(6))
def test_random_lengths_round_trip(tmp_path, seed):
    rng = np.random.default_rng(seed)
    d, n, c = int(rng.integers(1, 5)), int(rng.integers(1, 9)), int(rng.integers(1, 5))
    count = d * n + int(rng.integers(0, 12))
    lengths = [int(x) * 2 * c for x in rng.integers(0, 6, count)]  # zero-length sequences included
    src = tmp_path / "in.h5"
    offsets = make_packed(src, lengths, offsets_dtype=[np.int32, np.int64, np.uint32][seed % 3],
                          members=("tokens", "labels", "cu_seqlens", "seq_ids"))
    spec = write_spec(tmp_path / "s.json", {k: v for k, v in SPEC.items() if k in ("tokens", "labels", "cu_seqlens", "seq_ids")})
    balance = ["tokens", "attention", "sequences"][seed % 3]
    run("split", src, "-s", spec, "-n", n, "--dp-degree", d, "--cp-degree", c, "--balance", balance,
        "-o", tmp_path / "mb", check=0)
    cells = check_files(src, tmp_path / "mb", offsets, d, n, c, False)
    weights = {"tokens": lengths, "attention": [k * (k + 1) // 2 for k in lengths]}.get(balance)
    if weights:
        assert max(sum(weights[a:b]) for a, b in cells) == best_largest(weights, d * n) if count <= 12 else True
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_attention_balance_differs_from_tokens_where_it_should(tmp_path):
    # One long document and many short ones: by tokens the long one shares a cell; by work it stands alone.
    src = tmp_path / "in.h5"
    lengths = [12, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    make_packed(src, lengths, members=("tokens", "cu_seqlens"))
    spec = write_spec(tmp_path / "s.json", {"tokens": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets"})
    work = [k * (k + 1) // 2 for k in lengths]
    for balance, weights in (("tokens", lengths), ("attention", work)):
        res = run("inspect", src, "-s", spec, "-n", 1, "--dp-degree", 2, "--balance", balance, "--json", check=0)
        seq = json.loads(res.out)["sequences"]
        assert max(seq["run_work" if balance == "attention" else "run_tokens"]) == best_largest(weights, 2)
        assert seq["run_work"] == [sum(work[a:b]) for a, b in seq["runs"]]
    assert best_largest(work, 2) == 78  # the long document alone


def test_inspect_prints_every_cell_against_the_ideal(tmp_path):
    src = tmp_path / "in.h5"
    make_packed(src, [5, 1, 9, 3, 3, 7, 2, 4], members=("tokens", "cu_seqlens"))
    spec = write_spec(tmp_path / "s.json", {"tokens": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets"})
    res = run("inspect", src, "-s", spec, "-n", 2, "--dp-degree", 2, check=0)
    assert res.code == 0, res
    seq = json.loads(run("inspect", src, "-s", spec, "-n", 2, "--dp-degree", 2, "--json", check=0).out)["sequences"]
    for k, ((a, b), t, w) in enumerate(zip(seq["runs"], seq["run_tokens"], seq["run_work"])):
        assert f"rank {k // 2} microbatch {k % 2}: sequences [{a}, {b}) ({b - a}), {t} tokens, work {w}" in res.out
    mean = seq["tokens"] / 4
    assert f"largest cell: {max(seq['run_tokens'])} tokens, ideal (mean) {mean:.1f}, imbalance max/mean " \
           f"{max(seq['run_tokens']) / mean:.3f}" in res.out
    assert "largest cell: " in res.out and " work, ideal (mean) " in res.out


def test_packed_dp_needs_the_manifest_to_merge(tmp_path):
    src = tmp_path / "in.h5"
    make_packed(src, [5, 1, 9, 3, 3, 7], members=("tokens", "cu_seqlens"))
    spec = write_spec(tmp_path / "s.json", {"tokens": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets"})
    run("split", src, "-s", spec, "-n", 2, "--dp-degree", 2, "-o", tmp_path / "mb", check=0)
    # The files of the split's directory are merged from its manifest; copied away from it, they cannot be.
    files = sorted(str(tmp_path / "mb" / f) for f in listing(tmp_path / "mb") if f.endswith(".h5"))
    run("merge", *files, "-s", spec, "--dp-degree", 2, "-o", tmp_path / "with.h5", check=0)
    assert h5diff(src, tmp_path / "with.h5") == 0
    (tmp_path / "away").mkdir()
    for f in files:
        shutil.copy(f, tmp_path / "away")
    files = sorted(str(tmp_path / "away" / f) for f in listing(tmp_path / "away"))
    res = run("merge", *files, "-s", spec, "--dp-degree", 2, "-o", tmp_path / "out.h5")
    assert_one_line_error(res, 2, "merged from their split's manifest")
    assert not (tmp_path / "out.h5").exists()
    # The per-rank layout is the batch in file order: no manifest needed.
    run("split", src, "-s", spec, "-n", 2, "--dp-degree", 2, "--layout", "per-rank", "-o", tmp_path / "pr", check=0)
    files = sorted(str(tmp_path / "pr" / f) for f in listing(tmp_path / "pr") if f.endswith(".h5"))
    run("merge", *files, "-s", spec, "--dp-degree", 2, "--layout", "per-rank", "-o", tmp_path / "pr.h5", check=0)
    assert h5diff(src, tmp_path / "pr.h5") == 0


def test_too_few_sequences_and_align_are_refused(tmp_path):
    src = tmp_path / "in.h5"
    make_packed(src, [5, 1, 9, 3, 3], members=("tokens", "cu_seqlens"))
    spec = write_spec(tmp_path / "s.json", {"tokens": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets"})
    res = run("split", src, "-s", spec, "-n", 3, "--dp-degree", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/cu_seqlens has 2 sequences per data-parallel rank")
    assert not (tmp_path / "mb").exists()
    res = run("split", src, "-s", spec, "-n", 2, "--dp-degree", 2, "--align", "-o", tmp_path / "mb")
    assert_one_line_error(res, 2, "--align does not apply to packed sequences")
    # --on-short empty: 6 cells for 5 sequences, the last empty, and the round trip still exact
    run("split", src, "-s", spec, "-n", 3, "--dp-degree", 2, "--on-short", "empty", "-o", tmp_path / "e", check=0)
    runs = json.loads((tmp_path / "e" / "manifest.json").read_text())["sequences"]["runs"]
    assert runs[-1] == [5, 5] and all(b > a for a, b in runs[:-1])
    run("merge", tmp_path / "e", "-o", tmp_path / "e.h5", check=0)
    assert h5diff(src, tmp_path / "e.h5") == 0


def test_a_tampered_manifest_placement_is_refused(tmp_path):
    src = tmp_path / "in.h5"
    make_packed(src, [5, 1, 9, 3, 3, 7], members=("tokens", "cu_seqlens"))
    spec = write_spec(tmp_path / "s.json", {"tokens": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets"})
    run("split", src, "-s", spec, "-n", 1, "--dp-degree", 2, "-o", tmp_path / "mb", check=0)
    path = tmp_path / "mb" / "manifest.json"
    text = path.read_text()
    m = json.loads(text)
    rows = m["datasets"]["/cu_seqlens"]["rows"]
    assert rows == [[[0, 4, 1], [4, 7, 1]]]  # sequences [0, 3) and [3, 6): rows 0..3 and 4..6
    path.write_text(text.replace('"/cu_seqlens": {"axis":0,"length":7,"rows":[[[0,4,1],[4,7,1]]]',
                                 '"/cu_seqlens": {"axis":0,"length":7,"rows":[[[0,4,1],[3,6,1]]]'))
    assert path.read_text() != text
    res = run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5")
    assert res.code != 0 and not (tmp_path / "out.h5").exists(), res


def te_rank_rows(length, c, r):
    """Positions of a document of `length` tokens, padded to a multiple of 2c, that CP rank r holds (TE's
    thd_get_partitioned_indices): -1 for a pad."""
    padded = -(-length // (2 * c)) * 2 * c
    s = padded // (2 * c)
    positions = list(range(r * s, (r + 1) * s)) + list(range((2 * c - 1 - r) * s, (2 * c - r) * s))
    return [p if p < length else -1 for p in positions]


def check_padded_files(src, out, offsets, d, n, c, per_rank, pads):
    """Every file of a --cp-pad split against the reference: tokens with pads, the rank's real offsets and the
    padded offsets."""
    m = json.loads((out / "manifest.json").read_text())
    assert m["options"]["cp_pad"] is True
    cells = [tuple(x) for x in m["sequences"]["runs"]]
    with h5py.File(src) as f:
        tokens, labels = f["tokens"][()], f["labels"][()]
        for k, e in enumerate(m["files"]):
            place = m["placement"][k]
            i, r = place["microbatch"], place["cp_rank"]
            mine = [cells[place["rank"] * n + i]] if per_rank else [cells[rank * n + i] for rank in range(d)]
            want_tok, want_lab, real, padded = [], [], [0], [0]
            for a, b in mine:
                for s in range(a, b):
                    lo, hi = int(offsets[s]), int(offsets[s + 1])
                    rows = te_rank_rows(hi - lo, c, r)
                    want_tok += [tokens[lo + p] if p >= 0 else pads["tokens"] for p in rows]
                    want_lab += [labels[:, lo + p] if p >= 0 else [pads["labels"]] * 2 for p in rows]
                    real.append(real[-1] + sum(p >= 0 for p in rows))
                    padded.append(padded[-1] + len(rows))
            with h5py.File(out / e["name"]) as piece:
                assert list(piece["tokens"][()]) == want_tok, e["name"]
                assert np.array_equal(piece["labels"][()], np.array(want_lab, dtype=np.float32).reshape(-1, 2).T
                                      if want_lab else np.zeros((2, 0), np.float32)), e["name"]
                assert list(piece["cu_seqlens"][()]) == real, e["name"]
                assert list(piece["cu_seqlens_padded"][()]) == padded, e["name"]
                assert piece["cu_seqlens_padded"].dtype == piece["cu_seqlens"].dtype == offsets.dtype


PAD_SPEC = {"tokens": {"packed": "/cu_seqlens", "pad": -100}, "labels": {"packed": "/cu_seqlens", "axis": -1, "pad": -0.5},
            "cu_seqlens": "offsets", "seq_ids": {"per_sequence": "/cu_seqlens"}}


def make_pad_batch(path, lengths, dtype=np.int32):
    def float_labels(f, offsets):
        del f["labels"]
        f["labels"] = np.stack([np.arange(offsets[-1]), -np.arange(offsets[-1])]).astype(np.float32)
    return make_packed(path, lengths, offsets_dtype=dtype, members=("tokens", "labels", "cu_seqlens", "seq_ids"),
                       fill=float_labels)


@pytest.mark.parametrize("seed", range(8))
def test_cp_pad_files_hold_te_thd_positions_and_round_trip(tmp_path, seed):
    rng = np.random.default_rng(100 + seed)
    d, n, c = int(rng.integers(1, 4)), int(rng.integers(1, 5)), int(rng.integers(2, 5))
    per_rank = seed % 2 == 1
    lengths = [int(x) for x in rng.integers(0, 23, d * n + int(rng.integers(0, 8)))]
    src = tmp_path / "in.h5"
    offsets = make_pad_batch(src, lengths, [np.int32, np.int64, np.uint16][seed % 3])
    spec = write_spec(tmp_path / "s.json", PAD_SPEC)
    flags = ["-n", n, "--dp-degree", d, "--cp-degree", c, "--cp-pad"] + (["--layout", "per-rank"] if per_rank else [])
    run("split", src, "-s", spec, *flags, "-o", tmp_path / "mb", check=0)
    check_padded_files(src, tmp_path / "mb", offsets, d, n, c, per_rank, {"tokens": -100, "labels": -0.5})
    run("verify", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_cp_pad_defaults_to_zero_and_merges_files_without_their_manifest(tmp_path):
    src = tmp_path / "in.h5"
    lengths = [5, 1, 9, 3, 0, 7]
    offsets = make_pad_batch(src, lengths)
    spec = write_spec(tmp_path / "s.json", {**PAD_SPEC, "tokens": {"packed": "/cu_seqlens"},
                                            "labels": {"packed": "/cu_seqlens", "axis": -1}})
    run("split", src, "-s", spec, "-n", 2, "--cp-degree", 2, "--cp-pad", "-o", tmp_path / "mb", check=0)
    check_padded_files(src, tmp_path / "mb", offsets, 1, 2, 2, False, {"tokens": 0, "labels": 0.0})
    (tmp_path / "away").mkdir()
    files = sorted(f for f in listing(tmp_path / "mb") if f.endswith(".h5"))
    for f in files:
        shutil.copy(tmp_path / "mb" / f, tmp_path / "away")
    away = [str(tmp_path / "away" / f) for f in files]
    res = run("merge", *away, "-s", spec, "--cp-degree", 2, "-o", tmp_path / "no.h5")
    assert res.code != 0 and not (tmp_path / "no.h5").exists(), res  # pads cannot pass for tokens
    run("merge", *away, "-s", spec, "--cp-degree", 2, "--cp-pad", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


@pytest.mark.parametrize("spec_change,dtype,needles", [
    ({"tokens": {"packed": "/cu_seqlens", "pad": -100}}, np.uint8, ["/tokens", "pad -100 does not fit uint8"]),
    ({"tokens": {"packed": "/cu_seqlens", "pad": 0.5}}, np.int64, ["/tokens", "pad 0.5 does not fit int64"]),
    ({"labels": {"packed": "/cu_seqlens", "axis": -1, "pad": 1e300}}, np.int64, ["/labels", "does not fit float32"]),
])
def test_a_pad_the_type_cannot_hold_is_refused_before_anything_is_written(tmp_path, spec_change, dtype, needles):
    src = tmp_path / "in.h5"

    def retype(f, offsets):
        tokens = f["tokens"][()] % 200
        del f["tokens"]
        f["tokens"] = tokens.astype(dtype)
        del f["labels"]
        f["labels"] = np.zeros((2, int(offsets[-1])), np.float32)
    make_packed(src, [3, 5], members=("tokens", "labels", "cu_seqlens", "seq_ids"), fill=retype)
    spec = write_spec(tmp_path / "s.json", {**PAD_SPEC, **spec_change})
    res = run("split", src, "-s", spec, "-n", 1, "--cp-degree", 2, "--cp-pad", "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, *needles)
    assert not (tmp_path / "mb").exists()


def test_cp_pad_usage_and_what_it_refuses(tmp_path):
    src = tmp_path / "in.h5"
    make_pad_batch(src, [5, 1, 9, 3])
    spec = write_spec(tmp_path / "s.json", PAD_SPEC)
    res = run("split", src, "-s", spec, "-n", 2, "--cp-degree", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "sequence 0 has 5 tokens", "or give --cp-pad")
    res = run("split", src, "-s", spec, "-n", 2, "--cp-pad", "-o", tmp_path / "mb")
    assert_one_line_error(res, 2, "--cp-pad", "--cp-degree")
    bad = json.loads((tmp_path / "s.json").read_text())
    bad["tokens"]["pad"] = "x"
    res = run("split", src, "-s", write_spec(tmp_path / "bad.json", bad), "-n", 2, "--cp-degree", 2, "--cp-pad",
              "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "bad.json:", "\"pad\" takes a number")
    with h5py.File(src, "a") as f:
        f["cu_seqlens_padded"] = f["cu_seqlens"][()]
    spec2 = write_spec(tmp_path / "s2.json", {**PAD_SPEC, "cu_seqlens_padded": "replicate"})
    res = run("split", src, "-s", spec2, "-n", 2, "--cp-degree", 2, "--cp-pad", "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "--cp-pad writes /cu_seqlens_padded beside /cu_seqlens")
    assert not (tmp_path / "mb").exists()


def merge_split(route, mb, spec, flags, out):
    """Merges the --cp-pad split in `mb` by `route`: its directory (the manifest gives files, order and spec), its
    files one by one with the spec and the split's layout flags, or its directory by an MPI team of 2 ranks."""
    if route == "files":
        files = [mb / e["name"] for e in json.loads((mb / "manifest.json").read_text())["files"]]
        layout, given = [], iter(flags)
        for flag in given:
            if flag in ("-n", "--on-short"):
                next(given)  # and its value: split's own
            else:
                layout.append(flag)
        return run("merge", *files, "-s", spec, *layout, "-o", out)
    if route == "mpi":
        from test_mpi import MPI_BINARY, mpirun
        if MPI_BINARY is None or shutil.which("mpirun") is None:
            pytest.skip("needs microbatch-mpi and mpirun")
        return mpirun(2, MPI_BINARY, "merge", mb, "-o", out)
    return run("merge", mb, "-o", out)


# Splits with files that hold no sequences: more microbatches than documents (--on-short empty), and a
# per-rank cell without documents.
EMPTY_FILES = {
    "one-document": ([5], ["-n", 2, "--cp-degree", 2, "--cp-pad", "--on-short", "empty"]),
    "three-microbatches": ([5, 3], ["-n", 3, "--cp-degree", 2, "--cp-pad", "--on-short", "empty"]),
    "per-rank-cell": ([5, 3, 2], ["-n", 2, "--dp-degree", 2, "--cp-degree", 2, "--cp-pad", "--on-short", "empty",
                                  "--layout", "per-rank"]),
}


@pytest.mark.parametrize("route", ["directory", "files", "mpi"])
@pytest.mark.parametrize("case", list(EMPTY_FILES))
def test_cp_pad_files_without_sequences_merge_back(tmp_path, case, route):
    """A --cp-pad split in which some files hold no sequences (offsets [0], no tokens, no rows per sequence)
    merges back to the input exactly, by every route."""
    lengths, flags = EMPTY_FILES[case]
    src = tmp_path / "in.h5"
    make_pad_batch(src, lengths, np.int64)
    spec = write_spec(tmp_path / "s.json", PAD_SPEC)
    run("split", src, "-s", spec, *flags, "-o", tmp_path / "mb", check=0)
    run("verify", tmp_path / "mb", check=0)
    empty = []
    m = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    for k, e in enumerate(m["files"]):
        with h5py.File(tmp_path / "mb" / e["name"]) as f:
            if list(f["cu_seqlens"][()]) == [0]:
                empty.append(e["name"])
                assert f["tokens"].shape == (0,) and f["labels"].shape == (2, 0) and f["seq_ids"].shape == (0,)
                # No rows, no row range: as "rows" says it.
                assert m["datasets"]["/tokens"]["rows"][k] == m["datasets"]["/tokens"]["file_rows"][k] == []
    assert empty, "the case must hold a file without sequences"
    res = merge_split(route, tmp_path / "mb", spec, flags, tmp_path / "out.h5")
    assert res.code == 0, res
    assert h5diff(src, tmp_path / "out.h5") == 0
    with h5py.File(src) as a, h5py.File(tmp_path / "out.h5") as b:
        assert sorted(a) == sorted(b)
        for name in a:
            assert a[name].dtype == b[name].dtype and np.array_equal(a[name][()], b[name][()]), name


def make_mask_batch(path, lengths):
    """make_pad_batch's batch with h5py bool masks: loss_mask [T] (True but on each document's first token) and
    attn [2, T] (True on even tokens, then odd ones), and an h5py enum that is not bool, kind [T]."""
    def masks(f, offsets):
        total = int(offsets[-1])
        f["loss_mask"] = np.isin(np.arange(total), offsets[:-1], invert=True)
        f["attn"] = np.stack([np.arange(total) % 2 == 0, np.arange(total) % 2 == 1])
        f.create_dataset("kind", data=np.arange(total, dtype=np.int8) % 3,
                         dtype=h5py.enum_dtype({"A": 0, "B": 1, "C": 2}, basetype="i1"))
    return make_packed(path, lengths, offsets_dtype=np.int64, members=("tokens", "cu_seqlens", "seq_ids"),
                       fill=masks)


MASK_SPEC = {"tokens": {"packed": "/cu_seqlens", "pad": -100}, "cu_seqlens": "offsets",
             "seq_ids": {"per_sequence": "/cu_seqlens"}, "loss_mask": {"packed": "/cu_seqlens"},
             "attn": {"packed": "/cu_seqlens", "axis": -1, "pad": True}, "kind": "replicate"}


@pytest.mark.parametrize("route", ["directory", "files"])
def test_cp_pad_pads_bool_masks_with_false_or_the_spec_s_bool(tmp_path, route):
    """h5py's bool (an HDF5 enum of int8 FALSE 0, TRUE 1): padded with False, or with the leaf's "pad": true /
    false; the manifest's spec keeps the pad a JSON boolean; merge gives the input back exactly."""
    lengths, c = [5, 1, 9, 3, 0, 7], 2
    src = tmp_path / "in.h5"
    offsets = make_mask_batch(src, lengths)
    spec_text = {**MASK_SPEC, "loss_mask": {"packed": "/cu_seqlens", "pad": False}} if route == "files" else MASK_SPEC
    spec = write_spec(tmp_path / "s.json", spec_text)
    flags = ["-n", 2, "--cp-degree", c, "--cp-pad"]
    run("split", src, "-s", spec, *flags, "-o", tmp_path / "mb", check=0)
    m = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    assert m["spec"]["attn"]["pad"] is True
    assert m["spec"]["loss_mask"].get("pad", "none") is (False if route == "files" else "none")
    cells = [tuple(x) for x in m["sequences"]["runs"]]
    with h5py.File(src) as f:
        loss, attn = f["loss_mask"][()], f["attn"][()]
    for k, e in enumerate(m["files"]):
        i, r = m["placement"][k]["microbatch"], m["placement"][k]["cp_rank"]
        want_loss, want_attn = [], []
        for s in range(*cells[i]):
            lo, hi = int(offsets[s]), int(offsets[s + 1])
            rows = te_rank_rows(hi - lo, c, r)
            want_loss += [bool(loss[lo + p]) if p >= 0 else False for p in rows]
            want_attn += [list(attn[:, lo + p]) if p >= 0 else [True, True] for p in rows]
        with h5py.File(tmp_path / "mb" / e["name"]) as piece:
            assert piece["loss_mask"].dtype == np.bool_ and piece["attn"].dtype == np.bool_
            assert list(piece["loss_mask"][()]) == want_loss, e["name"]
            assert np.array_equal(piece["attn"][()], np.array(want_attn, dtype=bool).reshape(-1, 2).T), e["name"]
    res = merge_split(route, tmp_path / "mb", spec, flags, tmp_path / "out.h5")
    assert res.code == 0, res
    assert h5diff(src, tmp_path / "out.h5") == 0
    with h5py.File(src) as a, h5py.File(tmp_path / "out.h5") as b:
        for name in ("loss_mask", "attn", "kind"):
            assert a[name].dtype == b[name].dtype and np.array_equal(a[name][()], b[name][()]), name


@pytest.mark.parametrize("change,needles", [
    ({"loss_mask": {"packed": "/cu_seqlens", "pad": 0}},
     ["in.h5: /loss_mask: \"pad\": 0 is a number, but the dataset holds bool: give \"pad\": true or false"]),
    ({"tokens": {"packed": "/cu_seqlens", "pad": True}},
     ["in.h5: /tokens: \"pad\": true is a bool, but the dataset holds int64: give a number"]),
    ({"kind": {"packed": "/cu_seqlens"}},
     ["in.h5: /kind: --cp-pad pads integer, floating-point and bool data only, not enum"]),
])
def test_cp_pad_refuses_a_pad_of_the_other_kind_and_other_enums(tmp_path, change, needles):
    src = tmp_path / "in.h5"
    make_mask_batch(src, [5, 1, 9, 3])
    spec = write_spec(tmp_path / "s.json", {**MASK_SPEC, **change})
    res = run("split", src, "-s", spec, "-n", 2, "--cp-degree", 2, "--cp-pad", "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, *needles)
    assert not (tmp_path / "mb").exists()


@pytest.mark.parametrize("c", [1, 2])
def test_virtual_merge_of_packed_dp_cells(tmp_path, c):
    src = tmp_path / "in.h5"
    lengths = [k * 2 * c for k in [5, 1, 9, 3, 0, 7, 4, 4, 2]]
    make_packed(src, lengths, with_k=lengths[::-1], members=("tokens", "labels", "cu_seqlens", "seq_ids"))
    spec = write_spec(tmp_path / "s.json", {k: v for k, v in SPEC.items() if k != "position_ids" and k != "max_len"})
    run("split", src, "-s", spec, "-n", 2, "--dp-degree", 2, "--cp-degree", c, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "v.h5", check=0)
    assert h5diff(src, tmp_path / "v.h5") == 0


# --- default-layout DP files say where each rank's sequences are ----------------------------------------

GUIDE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "guide.md")


def guide_loader():
    """docs/guide.md's data-loader lines (the ```python block of "Rank bounds"), as a function."""
    text = open(GUIDE).read()
    block = re.search(r"\*\*Rank bounds\*\*.*?```python\n(.*?)```", text, flags=re.S).group(1)
    scope = {}
    exec(textwrap.dedent(block), scope)  # noqa: S102  (the page's own lines, run as written)
    return scope["read_cell"]


BOUNDS_CASES = [([5, 1, 9, 3, 3, 7, 2, 4], 2, 2, 1), ([4, 0, 8, 12, 4, 0, 16, 8, 4], 2, 3, 2),
                ([2] * 12, 4, 3, 1), ([30, 1, 1, 1, 1, 6, 2], 3, 2, 1)]


@pytest.mark.parametrize("lengths,d,n,c", BOUNDS_CASES)
def test_default_layout_files_say_where_each_ranks_sequences_are(tmp_path, lengths, d, n, c):
    src = tmp_path / "in.h5"
    offsets = make_packed(src, lengths, with_k=lengths,
                          members=("tokens", "labels", "position_ids", "cu_seqlens", "seq_ids", "max_len"))
    spec = write_spec(tmp_path / "s.json", SPEC)
    flags = ["-n", n, "--dp-degree", d] + (["--cp-degree", c] if c > 1 else [])
    run("split", src, "-s", spec, *flags, "-o", tmp_path / "mb", check=0)
    m = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    cells = [tuple(x) for x in m["sequences"]["runs"]]
    read_cell = guide_loader()
    with h5py.File(src) as f:
        tokens = f["tokens"][()]
    for k, entry in enumerate(m["files"]):
        place = m["placement"][k] if "placement" in m else {"microbatch": k}
        i, r = place["microbatch"], place.get("cp_rank", 0)
        path = tmp_path / "mb" / entry["name"]
        with h5py.File(path) as piece:
            for name in ("cu_seqlens", "cu_seqlens_k"):
                bounds = piece[name + "_dp_bounds"]
                assert bounds.dtype == piece[name].dtype and bounds.shape == (d + 1,)
                want = np.concatenate([[0], np.cumsum([cells[rank * n + i][1] - cells[rank * n + i][0]
                                                       for rank in range(d)])])
                assert list(bounds[()]) == list(want), entry["name"]
        for rank in range(d):
            a, b = cells[rank * n + i]
            got, cu = read_cell(str(path), rank)
            rows = [int(offsets[s]) + p for s in range(a, b)
                    for p in (zigzag(int(offsets[s + 1] - offsets[s]), c, r) if c > 1 else
                              range(int(offsets[s + 1] - offsets[s])))]
            assert list(got) == list(tokens[rows]), (entry["name"], rank)
            assert list(cu) == list(np.concatenate([[0], np.cumsum([(offsets[s + 1] - offsets[s]) // c
                                                                    for s in range(a, b)])])), (entry["name"], rank)
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0
    files = [str(tmp_path / "mb" / e["name"]) for e in m["files"]]  # one by one beside their manifest
    run("merge", *files, "-s", spec, *flags[2:], "-o", tmp_path / "files.h5", check=0)
    assert h5diff(src, tmp_path / "files.h5") == 0


def test_only_default_layout_dp_files_get_bounds(tmp_path):
    src = tmp_path / "in.h5"
    make_packed(src, [5, 1, 9, 3, 3, 7], members=("tokens", "cu_seqlens"))
    spec = write_spec(tmp_path / "s.json", {"tokens": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets"})
    for name, flags in [("plain", ["-n", 2]), ("per-rank", ["-n", 2, "--dp-degree", 2, "--layout", "per-rank"])]:
        run("split", src, "-s", spec, *flags, "-o", tmp_path / name, check=0)
        for f in listing(tmp_path / name):
            if f.endswith(".h5"):
                with h5py.File(tmp_path / name / f) as piece:
                    assert sorted(piece) == ["cu_seqlens", "tokens"], f
    with h5py.File(src, "a") as f:  # a batch that holds the name already is refused, not shadowed
        f["cu_seqlens_dp_bounds"] = np.zeros(3, np.int32)
    res = run("split", src, "--spec-json", '{"tokens": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets", '
              '"cu_seqlens_dp_bounds": "replicate"}', "-n", 2, "--dp-degree", 2, "-o", tmp_path / "clash")
    assert_one_line_error(res, 1, "writes /cu_seqlens_dp_bounds beside /cu_seqlens", "holds a /cu_seqlens_dp_bounds")
    assert not (tmp_path / "clash").exists()


def test_merge_refuses_bounds_that_disagree_with_the_cells(tmp_path):
    src = tmp_path / "in.h5"
    make_packed(src, [5, 1, 9, 3, 3, 7], members=("tokens", "cu_seqlens"))
    spec = write_spec(tmp_path / "s.json", {"tokens": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets"})
    run("split", src, "-s", spec, "-n", 2, "--dp-degree", 2, "-o", tmp_path / "mb", check=0)
    victim = tmp_path / "mb" / "microbatch-00001.h5"
    with h5py.File(victim, "a") as f:
        bounds = f["cu_seqlens_dp_bounds"][()]
        assert bounds[0] == 0 and bounds[1] > 0
        bounds[1] -= 1  # one sequence of rank 0's cell taken for rank 1's
        f["cu_seqlens_dp_bounds"][...] = bounds
    res = run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", "--no-verify")
    assert_one_line_error(res, 1, "microbatch-00001.h5", "/cu_seqlens_dp_bounds",
                          "are not those of the file's cells")
    assert not (tmp_path / "out.h5").exists()


SAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "sample_data")


def test_cp_pad_files_away_from_their_manifest_merge_as_the_guide_says(tmp_path):
    """docs/guide.md: files away from their manifest merge with -s SPEC --cp-degree C --cp-pad (and
    --dp-degree D --layout per-rank for a per-rank split); a default-layout DP split only beside its manifest."""
    text = " ".join(open(GUIDE).read().split())
    assert "Files away from their manifest merge with the split's spec and flags: `merge FILES -s SPEC " \
           "--cp-degree C --cp-pad`" in text and "`--dp-degree D --layout per-rank` too for a per-rank split" in text
    src, spec = os.path.join(SAMPLE, "train_packed.h5"), os.path.join(SAMPLE, "train_packed_spec.json")
    cp = ["--cp-degree", 2, "--cp-pad"]
    for name, layout in [("plain", []), ("per-rank", ["--dp-degree", 2, "--layout", "per-rank"]),
                         ("default", ["--dp-degree", 2])]:
        run("split", src, "-s", spec, "-n", 4, *layout, *cp, "-o", tmp_path / name, check=0)
        away = tmp_path / f"{name}-away"
        away.mkdir()
        files = sorted(f for f in listing(tmp_path / name) if f.endswith(".h5"))
        for f in files:
            shutil.copy(tmp_path / name / f, away)
        files = [away / f for f in files]
        out = tmp_path / f"{name}.h5"
        res = run("merge", *files, *layout, *cp, "-o", out)  # without -s: the default spec packs nothing
        assert_one_line_error(res, 1, "--cp-degree 2 has nothing to put back" if name == "plain" else
                              "rank 1 holds 14 rows, rank 0 holds 10" if name == "per-rank" else
                              "not a multiple of the data-parallel degree 2")
        res = run("merge", *files, "-s", spec, *layout, *cp, "-o", out)
        if name == "default":
            assert_one_line_error(res, 2, "merged from their split's manifest")
            continue
        assert res.code == 0, res
        assert h5diff(src, out) == 0
