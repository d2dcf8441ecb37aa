"""Packed variable-length sequences: every microbatch holds whole sequences,
offsets rebased to 0, the largest microbatch as small as possible, and merge
restores the batch exactly."""
import itertools
import json
import shutil

import h5py
import numpy as np
import pytest

from conftest import assert_one_line_error, h5diff, listing, make_packed, run, write_spec

SPEC = {
    "tokens": {"packed": "/cu_seqlens"},
    "position_ids": {"packed": "/cu_seqlens"},
    "labels": {"packed": "/cu_seqlens", "axis": -1},
    "cu_seqlens": "offsets",
    "seq_ids": {"per_sequence": "/cu_seqlens"},
    "max_len": "replicate",
}


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
    assert_one_line_error(run("split", src, "-s", spec, "-n", 2, "--dp-degree", 2, "--align", "-o", tmp_path / "mb"),
                          2, "--align does not apply to packed sequences")
    assert listing(tmp_path / "mb") == []


# Offsets are exact in their own dtype: every integer width, signedness and
# byte order, up to 2^64 - 1 (HDF5's conversions saturate; a value that
# passes through int64 is clamped at 2^63 - 1).
OFFSETS_ONLY = {"cu": "offsets", "ids": {"per_sequence": "/cu"}}
OFFSETS_FILE = {"offsets_name": "cu", "members": ("cu", "ids")}  # make_packed's file for it, given offsets_dtype
DTYPES = ["u1", "i1", ">i2", "<u2", ">u4", ">i8", "<u8", ">u8"]


def dtype_max(dt):
    return int(np.iinfo(np.dtype(dt)).max)


@pytest.mark.parametrize("dt", DTYPES)
def test_offsets_round_trip_exactly_up_to_the_dtype_max(tmp_path, dt):
    m = dtype_max(dt)
    cu = [0, m // 2 + 1, m // 2 + 1, m - 2, m - 1, m]  # tokens: m//2+1, 0, m//2-3, 1, 1
    src = tmp_path / "in.h5"
    make_packed(src, offsets=cu, offsets_dtype=dt, **OFFSETS_FILE)
    spec = write_spec(tmp_path / "s.json", OFFSETS_ONLY)
    run("split", src, "-s", spec, "-n", 3, "-o", tmp_path / "mb", check=0)
    runs = json.loads((tmp_path / "mb" / "manifest.json").read_text())["sequences"]["runs"]
    tokens = [cu[i + 1] - cu[i] for i in range(len(cu) - 1)]
    largest = max(sum(tokens[a:b]) for a, b in runs)
    assert largest == best_max_tokens(tokens, 3)  # balanced on the exact token counts
    expected = np.array(cu, dtype=dt)
    for i, (a, b) in enumerate(runs):
        with h5py.File(tmp_path / "mb" / f"microbatch-{i:05d}.h5") as f:
            assert f["cu"].dtype == np.dtype(dt)
            assert np.array_equal(f["cu"][()], expected[a:b + 1] - expected[a])
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0
    with h5py.File(tmp_path / "out.h5") as f:
        assert f["cu"].dtype == np.dtype(dt) and [int(v) for v in f["cu"][()]] == cu


@pytest.mark.parametrize("dt", DTYPES)
def test_merged_offsets_fill_the_dtype_exactly(tmp_path, dt):
    m = dtype_max(dt)
    make_packed(tmp_path / "a.h5", offsets=[0, m // 2], offsets_dtype=dt, **OFFSETS_FILE)
    make_packed(tmp_path / "b.h5", offsets=[0, 0, m - m // 2], offsets_dtype=dt, **OFFSETS_FILE)
    spec = write_spec(tmp_path / "s.json", OFFSETS_ONLY)
    run("merge", tmp_path / "a.h5", tmp_path / "b.h5", "-s", spec, "-o", tmp_path / "out.h5", check=0)
    with h5py.File(tmp_path / "out.h5") as f:
        assert f["cu"].dtype == np.dtype(dt)
        assert [int(v) for v in f["cu"][()]] == [0, m // 2, m // 2, m]


@pytest.mark.parametrize("dt,a,b,value", [
    ("u1", [0, 100, 200], [0, 100, 200], 300),  # the example: was [0, 100, 200, 255, 255]
    (">i2", [0, 20000], [0, 20000], 40000),     # was [0, 20000, 32767]
    ("i1", [0, 100], [0, 28], 128),
    (">u4", [0, 2**32 - 1], [0, 1], 2**32),
    ("<u8", [0, 2**63], [0, 2**63], 2**64),
    (">u8", [0, 2**64 - 1], [0, 0, 1], 2**64),
])
def test_merged_offsets_that_do_not_fit_the_dtype_are_refused(tmp_path, dt, a, b, value):
    make_packed(tmp_path / "a.h5", offsets=a, offsets_dtype=dt, **OFFSETS_FILE)
    make_packed(tmp_path / "b.h5", offsets=b, offsets_dtype=dt, **OFFSETS_FILE)
    spec = write_spec(tmp_path / "s.json", OFFSETS_ONLY)
    (tmp_path / "o").mkdir()
    res = run("merge", tmp_path / "a.h5", tmp_path / "b.h5", "-s", spec, "-o", tmp_path / "o" / "out.h5")
    assert_one_line_error(res, 1, "b.h5: /cu:", f"becomes {value}", f"at most {dtype_max(dt)}")
    assert listing(tmp_path / "o") == []


def test_uint64_offsets_past_2_63_split_and_merge_exactly(tmp_path):
    cu = [0, 2**63 + 5, 2**63 + 10, 2**64 - 1]  # tokens 2^63+5, 5, 2^63-11
    src = tmp_path / "in.h5"
    make_packed(src, offsets=cu, offsets_dtype="u8", **OFFSETS_FILE)
    spec = write_spec(tmp_path / "s.json", OFFSETS_ONLY)
    seq = json.loads(run("inspect", src, "-s", spec, "-n", 2, "--json", check=0).out)["sequences"]
    assert seq["tokens"] == 2**64 - 1 and seq["runs"] == [[0, 1], [1, 3]]
    assert seq["run_tokens"] == [2**63 + 5, 2**63 - 6]
    run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "mb", check=0)
    with h5py.File(tmp_path / "mb" / "microbatch-00001.h5") as f:
        assert [int(v) for v in f["cu"][()]] == [0, 5, 2**63 - 6]
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_offsets_wider_than_64_bits_are_refused(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        wide = h5py.h5t.STD_U64LE.copy()
        wide.set_size(16)
        wide.set_precision(128)
        space = h5py.h5s.create_simple((3,))
        h5py.h5d.create(f.id, b"cu", wide, space)
        f["ids"] = np.arange(2, dtype=np.int16)
    spec = write_spec(tmp_path / "s.json", OFFSETS_ONLY)
    res = run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "mb")
    assert res.code == 1 and listing(tmp_path / "mb") == [], res


# Merge checks every input's packed sequences as split checks its input.
def split_packed(tmp_path, lengths=(5, 1, 9, 3, 3, 7), k=(2, 2, 1, 1, 4, 4)):
    src = tmp_path / "in.h5"
    make_packed(src, list(lengths), with_k=list(k))
    with h5py.File(src, "a") as f:
        f["keys"] = np.arange(sum(k), dtype=np.float32)
    spec = write_spec(tmp_path / "s.json", {**SPEC, "cu_seqlens_k": "offsets", "keys": {"packed": "/cu_seqlens_k"}})
    run("split", src, "-s", spec, "-n", 3, "-o", tmp_path / "mb", check=0)
    return tmp_path / "mb"


def rewrite(path, name, value):
    with h5py.File(path, "a") as f:
        del f[name]
        f[name] = value


def one_token_shorter(f):
    rewrite(f, "tokens", h5py.File(f)["tokens"][:-1])


def one_row_longer(f):
    with h5py.File(f) as m:
        ids = list(m["seq_ids"][()])
    rewrite(f, "seq_ids", np.array(ids + [b"extra"], dtype=h5py.string_dtype()))


def offsets_that_fall(f):
    with h5py.File(f) as m:
        cu = m["cu_seqlens"][()]
    cu[1], cu[2] = cu[2], cu[1]
    rewrite(f, "cu_seqlens", cu)


def offsets_that_disagree(f):
    # cu_seqlens_k loses its last sequence (and keys its tokens): each dataset
    # is consistent with its own offsets, but the two count other sequences
    with h5py.File(f) as m:
        cu_k, keys = m["cu_seqlens_k"][()], m["keys"][()]
    rewrite(f, "cu_seqlens_k", cu_k[:-1])
    rewrite(f, "keys", keys[:cu_k[-2]])


@pytest.mark.parametrize("tamper,needles", [
    (one_token_shorter, ["microbatch-00001.h5: /tokens has", "tokens on axis 0, but its offsets /cu_seqlens end at"]),
    (one_row_longer, ["microbatch-00001.h5: /seq_ids has", "rows on axis 0, but /cu_seqlens describes"]),
    (offsets_that_fall, ["microbatch-00001.h5: /cu_seqlens: offsets must rise"]),
    (offsets_that_disagree, ["microbatch-00001.h5: offsets datasets disagree: /cu_seqlens holds",
                             "/cu_seqlens_k holds"]),
])
@pytest.mark.parametrize("virtual", [False, True])
def test_merge_refuses_inputs_whose_packed_lengths_disagree_with_their_offsets(tmp_path, tamper, needles, virtual):
    # Microbatch files on their own (no manifest beside them to check them
    # against): merge checks each input's packed sequences itself.
    mb = split_packed(tmp_path)
    loose = tmp_path / "loose"
    loose.mkdir()
    for f in mb.glob("microbatch-*.h5"):
        shutil.copy(f, loose / f.name)
    tamper(loose / "microbatch-00001.h5")
    (tmp_path / "o").mkdir()
    res = run("merge", *sorted(loose.glob("*.h5")), "-s", tmp_path / "s.json", "-o", tmp_path / "o" / "out.h5",
              *(["--virtual"] if virtual else []))
    assert_one_line_error(res, 1, *needles)
    assert listing(tmp_path / "o") == []


def test_merge_of_untampered_packed_microbatches_still_round_trips(tmp_path):
    mb = split_packed(tmp_path)
    run("merge", mb, "-o", tmp_path / "out.h5", check=0)
    assert h5diff(tmp_path / "in.h5", tmp_path / "out.h5") == 0
    run("merge", *sorted(mb.glob("*.h5")), "-s", tmp_path / "s.json", "-o", tmp_path / "files.h5", check=0)
    assert h5diff(tmp_path / "in.h5", tmp_path / "files.h5") == 0


def test_drop_last_leaves_out_whole_sequences(tmp_path):
    lengths = [3, 1, 4, 1, 5]
    src = tmp_path / "in.h5"
    offsets = make_packed(src, lengths)
    spec = write_spec(tmp_path / "s.json", SPEC)
    res = run("split", src, "-s", spec, "--micro-batch-size", 2, "--drop-last", "-o", tmp_path / "mb", check=0)
    assert "left out the last 1 sequence of every split dataset" in res.err, res
    assert sorted(f for f in listing(tmp_path / "mb") if f.endswith(".h5")) == \
        ["microbatch-00000.h5", "microbatch-00001.h5"]
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    end = int(offsets[4])  # the tokens of the first four sequences
    with h5py.File(src) as f, h5py.File(tmp_path / "m.h5") as m:
        assert np.array_equal(m["tokens"][()], f["tokens"][:end])
        assert np.array_equal(m["labels"][()], f["labels"][:, :end])
        assert np.array_equal(m["cu_seqlens"][()], f["cu_seqlens"][:5])
        assert list(m["seq_ids"][()]) == list(f["seq_ids"][:4])
        assert m["max_len"][()] == f["max_len"][()]
