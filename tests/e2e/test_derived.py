"""Derived per-file metadata: {"max_seqlen": "/cu_seqlens"} and
{"num_tokens": "/cu_seqlens"} on rank-0 integer datasets and attributes.
Split writes each file's value computed from the offsets in that file, merge
checks each input's value against its own offsets and writes the merged
batch's; judged with numpy on each file's own offsets, and h5diff."""
import json

import h5py
import numpy as np
import pytest

from conftest import assert_one_line_error, h5diff, listing, make_packed, run, summary, write_spec

SPEC = {
    "@max_seqlen": {"max_seqlen": "/cu_seqlens"},
    "@num_tokens": {"num_tokens": "/cu_seqlens"},
    "tokens": {"packed": "/cu_seqlens"},
    "cu_seqlens": "offsets",
    "max_seqlen": {"max_seqlen": "/cu_seqlens"},
    "num_tokens": {"num_tokens": "/cu_seqlens"},
    "meta": {"@max_len": {"max_seqlen": "/cu_seqlens"}, "step": "replicate"},
}


def make_derived(path, lengths, dtype="<i4", attr_dtype="<i8", offsets_dtype="<i4", max_seqlen=None,
                 num_tokens=None):
    """A packed batch whose derived leaves are consistent with its offsets
    (unless a value is given)."""
    longest = int(max(lengths)) if len(lengths) else 0

    def derived(f, offsets):
        total = int(offsets[-1])
        f.create_dataset("max_seqlen", data=np.array(longest if max_seqlen is None else max_seqlen, dtype=dtype))
        f.create_dataset("num_tokens", data=np.array(total if num_tokens is None else num_tokens, dtype=dtype))
        f.attrs.create("max_seqlen", longest, dtype=attr_dtype)
        f.attrs.create("num_tokens", total, dtype=attr_dtype)
        g = f.create_group("meta")
        g["step"] = np.int64(7)
        g.attrs.create("max_len", longest, dtype=np.dtype(attr_dtype).newbyteorder(">"))

    return make_packed(path, lengths, members=("tokens", "cu_seqlens"), offsets_dtype=offsets_dtype, first_token=100,
                       fill=derived)


def expected(cu):
    cu = np.asarray(cu, dtype=np.int64)
    longest = int(np.diff(cu).max()) if len(cu) > 1 else 0
    return longest, int(cu[-1] - cu[0])


def files_of(directory):
    return [directory / n for n in listing(directory) if n.endswith(".h5")]


def check_file_values(path, dtype, attr_dtype):
    """Every derived value of one file is what that file's own offsets give, in the leaf's dtype."""
    with h5py.File(path) as m:
        longest, total = expected(m["cu_seqlens"][()])
        assert m["max_seqlen"].dtype == np.dtype(dtype) and m["max_seqlen"][()] == longest
        assert m["num_tokens"].dtype == np.dtype(dtype) and m["num_tokens"][()] == total
        assert m.attrs["max_seqlen"] == longest and m.attrs["num_tokens"] == total
        for name in ("max_seqlen", "num_tokens"):  # the stored type (h5py reads attributes in native order)
            assert m.attrs.get_id(name).dtype == np.dtype(attr_dtype)
        assert m["meta"].attrs.get_id("max_len").dtype == np.dtype(attr_dtype).newbyteorder(">")
        assert m["meta"].attrs["max_len"] == longest
        assert m["meta"]["step"][()] == 7
        return longest, total


@pytest.mark.parametrize("dtype,attr_dtype,offsets_dtype", [
    ("<i4", "<i8", "<i4"), (">i2", ">u4", "<i8"), ("u1", "i1", ">u2"), (">u8", "<u2", "<u8"), ("<i8", ">i8", ">i4"),
])
@pytest.mark.parametrize("cut", [["-n", 3], ["--micro-batch-size", 2], ["-n", 1], ["-n", 4, "-j", 2]])
def test_split_writes_each_files_values_and_merge_restores_the_batch(tmp_path, dtype, attr_dtype, offsets_dtype,
                                                                      cut):
    src = tmp_path / "in.h5"
    lengths = [5, 1, 9, 3, 3, 7, 2]
    make_derived(src, lengths, dtype, attr_dtype, offsets_dtype)
    spec = write_spec(tmp_path / "s.json", SPEC)
    run("split", src, "-s", spec, *cut, "-o", tmp_path / "mb", check=0)
    files = files_of(tmp_path / "mb")
    if cut[0] == "-n":
        assert len(files) == cut[1]
    else:
        assert len(files) > 1
    seen = [check_file_values(p, dtype, attr_dtype) for p in files]
    assert sum(t for _, t in seen) == sum(lengths)
    if len(files) > 1:  # the values really are per file, not the batch's
        assert any(l != max(lengths) for l, _ in seen)
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0
    run("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "virtual.h5", check=0)
    assert h5diff(src, tmp_path / "virtual.h5") == 0
    with h5py.File(tmp_path / "virtual.h5") as v:  # derived values are written, not mapped
        assert not v["max_seqlen"].is_virtual and not v["num_tokens"].is_virtual
        assert v["tokens"].is_virtual


def test_empty_microbatches_hold_zero(tmp_path):
    src = tmp_path / "in.h5"
    make_derived(src, [4, 6])
    run("split", src, "-s", write_spec(tmp_path / "s.json", SPEC), "-n", 3, "--on-short", "empty", "-o", tmp_path / "mb",
        check=0)
    values = [check_file_values(p, "<i4", "<i8") for p in files_of(tmp_path / "mb")]
    assert values == [(4, 4), (6, 6), (0, 0)]
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_merge_of_files_writes_the_merged_batchs_values(tmp_path):
    """Files given without a manifest: the merged values come from the merged offsets."""
    spec = write_spec(tmp_path / "s.json", SPEC)
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    make_derived(a, [3, 8])
    make_derived(b, [2, 2, 6])
    run("merge", a, b, "-s", spec, "-o", tmp_path / "out.h5", check=0)
    with h5py.File(tmp_path / "out.h5") as m:
        assert list(m["cu_seqlens"][()]) == [0, 3, 11, 13, 15, 21]
        assert m["max_seqlen"][()] == 8 and m["num_tokens"][()] == 21
        assert m.attrs["max_seqlen"] == 8 and m.attrs["num_tokens"] == 21 and m["meta"].attrs["max_len"] == 8


def test_merged_value_that_does_not_fit_is_refused(tmp_path):
    """Each input's num_tokens fits uint8; the merged batch's (400) does not."""
    spec = write_spec(tmp_path / "s.json", SPEC)
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    make_derived(a, [100, 100], dtype="u1")
    make_derived(b, [100, 100], dtype="u1")
    res = run("merge", a, b, "-s", spec, "-o", tmp_path / "out.h5")
    assert_one_line_error(res, 1, "/num_tokens", "num_tokens 400", "uint8", "at most 255")
    assert not (tmp_path / "out.h5").exists()
    assert listing(tmp_path) == ["a.h5", "b.h5", "s.json"]


def test_tampered_value_in_one_input_is_refused_naming_both_values(tmp_path):
    src = tmp_path / "in.h5"
    make_derived(src, [5, 1, 9, 3, 3, 7, 2])
    run("split", src, "-s", write_spec(tmp_path / "s.json", SPEC), "-n", 3, "-o", tmp_path / "mb", check=0)
    victim = files_of(tmp_path / "mb")[1]
    with h5py.File(victim, "r+") as f:
        good = int(f["max_seqlen"][()])
        f["max_seqlen"][()] = good + 1  # same size: only the digest tells, so --no-verify skips it
    res = run("merge", tmp_path / "mb", "--no-verify", "-o", tmp_path / "out.h5")
    assert_one_line_error(res, 1, str(victim), "/max_seqlen", f"holds max_seqlen {good + 1}", "/cu_seqlens",
                          f"give max_seqlen {good}")
    assert not (tmp_path / "out.h5").exists()
    # an attribute too, in a file merged without a manifest
    run("split", src, "-s", tmp_path / "s.json", "-n", 2, "-o", tmp_path / "mb2", check=0)
    (tmp_path / "mb2" / "manifest.json").unlink()
    files = files_of(tmp_path / "mb2")
    with h5py.File(files[1], "r+") as f:
        good = int(f["meta"].attrs["max_len"])
        f["meta"].attrs.modify("max_len", good - 1)
    res = run("merge", *files, "-s", tmp_path / "s.json", "-o", tmp_path / "out.h5")
    assert_one_line_error(res, 1, str(files[1]), "/meta@max_len", f"holds max_seqlen {good - 1}",
                          f"give max_seqlen {good}")
    assert not (tmp_path / "out.h5").exists()


@pytest.mark.parametrize("leaf,attr", [("max_seqlen", False), ("num_tokens", False), ("max_seqlen", True)])
def test_inconsistent_input_is_refused_at_split(tmp_path, leaf, attr):
    src = tmp_path / "in.h5"
    make_derived(src, [5, 1, 9])
    with h5py.File(src, "r+") as f:
        if attr:
            f.attrs.modify("max_seqlen", 3)
        else:
            f[leaf][()] = 3
    good = {"max_seqlen": 9, "num_tokens": 15}[leaf]
    res = run("split", src, "-s", write_spec(tmp_path / "s.json", SPEC), "-n", 2, "-o", tmp_path / "mb")
    where = f"/@{leaf}" if attr else f"/{leaf}"
    assert_one_line_error(res, 1, str(src), where, f"holds {leaf} 3", f"give {leaf} {good}")
    assert not (tmp_path / "mb").exists()


def test_negative_stored_value_is_inconsistent(tmp_path):
    src = tmp_path / "in.h5"
    make_derived(src, [5, 1], max_seqlen=-5)
    res = run("split", src, "-s", write_spec(tmp_path / "s.json", SPEC), "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/max_seqlen", "holds max_seqlen -5", "give max_seqlen 5")


@pytest.mark.parametrize("layout", ["per-microbatch", "per-rank"])
def test_dp_degree_with_derived_leaves(tmp_path, layout):
    """With --dp-degree, a file holds whole sequences of one or of every rank: each file's derived values are
    what its own offsets give, and merge gives the batch back with its own."""
    src = tmp_path / "in.h5"
    make_derived(src, [2, 5, 2, 2, 9, 1, 3])
    spec = write_spec(tmp_path / "s.json", SPEC)
    run("split", src, "-s", spec, "-n", 2, "--dp-degree", 2, "--layout", layout, "-o", tmp_path / "mb", check=0)
    files = files_of(tmp_path / "mb")
    assert len(files) == (4 if layout == "per-rank" else 2)
    for path in files:
        check_file_values(path, "<i4", "<i8")
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


@pytest.mark.parametrize("spec,needles", [
    ({"max_seqlen": {"max_seqlen": "/tokens"}}, ["/max_seqlen names /tokens as its offsets", "not \"offsets\""]),
    ({"max_seqlen": {"max_seqlen": "/nowhere"}}, ["/max_seqlen names /nowhere", "no dataset there"]),
    ({"tokens": {"num_tokens": "/cu_seqlens"}}, ["\"num_tokens\" needs a rank-0 integer", "/tokens has shape (30,)"]),
    ({"ratio": {"num_tokens": "/cu_seqlens"}}, ["\"num_tokens\" needs a rank-0 integer", "/ratio is float32"]),
    ({"@name": {"max_seqlen": "/cu_seqlens"}}, ["/@name is |S", "rank-0 integer"]),
    ({"@lens": {"max_seqlen": "/cu_seqlens"}}, ["/@lens has shape (1,)"]),
])
def test_spec_errors_name_the_leaf_and_the_offsets(tmp_path, spec, needles):
    src = tmp_path / "in.h5"
    make_derived(src, [5, 1, 9, 3, 3, 7, 2])
    with h5py.File(src, "r+") as f:
        f["ratio"] = np.float32(0.5)
        f.attrs["name"] = np.bytes_("x")
        f.attrs["lens"] = np.array([9], dtype=np.int32)
    full = {**SPEC, "ratio": "replicate", **spec}
    res = run("split", src, "-s", write_spec(tmp_path / "s.json", full), "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "s.json:1:", *needles)
    assert not (tmp_path / "mb").exists()


def test_inspect_and_manifest_describe_derived_leaves(tmp_path):
    src = tmp_path / "in.h5"
    make_derived(src, [5, 1, 9])
    spec = write_spec(tmp_path / "s.json", SPEC)
    res = run("inspect", src, "-s", spec, check=0)
    assert "max_seqlen of /cu_seqlens, per file" in res.out and "num_tokens of /cu_seqlens, per file" in res.out
    tree = {n["path"]: n for n in summary(run("inspect", src, "-s", spec, "--json", check=0), "inspect")["tree"]}
    assert tree["/max_seqlen"]["rule"] == {"mode": "derive", "quantity": "max_seqlen", "offsets": "/cu_seqlens"}
    assert tree["/num_tokens"]["rule"] == {"mode": "derive", "quantity": "num_tokens", "offsets": "/cu_seqlens"}
    root_attrs = {a["name"]: a["rule"] for a in tree["/"]["attributes"]}
    assert root_attrs == {"max_seqlen": {"mode": "derive", "quantity": "max_seqlen", "offsets": "/cu_seqlens"},
                          "num_tokens": {"mode": "derive", "quantity": "num_tokens", "offsets": "/cu_seqlens"}}
    run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "mb", check=0)
    manifest = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    assert manifest["spec"]["max_seqlen"] == {"max_seqlen": "/cu_seqlens"}
    assert manifest["spec"]["@num_tokens"] == {"num_tokens": "/cu_seqlens"}
    assert manifest["spec"]["meta"]["@max_len"] == {"max_seqlen": "/cu_seqlens"}


def test_members_named_like_the_keys_stay_members(tmp_path):
    """{"num_tokens": "replicate"} is a group's member, as it always was."""
    src = tmp_path / "in.h5"
    make_derived(src, [5, 1, 9])
    spec = write_spec(tmp_path / "s.json", dict(SPEC, num_tokens="replicate", max_seqlen="replicate"))
    run("split", src, "-s", spec, "-n", 3, "-o", tmp_path / "mb", check=0)
    for p in files_of(tmp_path / "mb"):
        with h5py.File(p) as m:
            assert m["max_seqlen"][()] == 9 and m["num_tokens"][()] == 15  # the batch's, copied


@pytest.mark.parametrize("where", ["dataset", "attribute"])
def test_first_input_checked_too(tmp_path, where):
    """Input 0 is the model every other input is checked against: its own values are checked against its offsets."""
    spec = write_spec(tmp_path / "s.json", SPEC)
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    make_derived(a, [3, 8])
    make_derived(b, [2, 2])
    with h5py.File(a, "r+") as f:
        if where == "dataset":
            f["num_tokens"][()] = 12
        else:
            f.attrs.modify("num_tokens", 12)
    res = run("merge", a, b, "-s", spec, "-o", tmp_path / "out.h5")
    leaf = "/num_tokens" if where == "dataset" else "/@num_tokens"
    assert_one_line_error(res, 1, f"{a}: {leaf}: holds num_tokens 12", "give num_tokens 11")
    assert not (tmp_path / "out.h5").exists()


def test_input_with_another_dtype_is_refused_as_any_leaf(tmp_path):
    spec = write_spec(tmp_path / "s.json", SPEC)
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    make_derived(a, [3, 8])
    make_derived(b, [2, 2], dtype="<i2")
    res = run("merge", a, b, "-s", spec, "-o", tmp_path / "out.h5")
    assert_one_line_error(res, 1, "/max_seqlen differs between microbatch 0", "int32", "int16")
