"""Generated crossings: Hypothesis draws batches (every datatype, storage, tree shape), specs and options,
and each property holds the tool to the independent model of crossings/model.py (written from the docs).
Profiles (MB_CROSSINGS=ci|long) and the example database: crossings/profiles.py."""
import json
import re
import os
import tempfile

import h5py
import numpy as np
from hypothesis import assume, given, note, strategies as st

from conftest import assert_one_line_error, h5diff, listing, run, write_spec
from crossings import model, strategies as gen
from crossings.profiles import settings_for
from crossings.crashes import checked

run = checked(run)  # no generated case may crash (crossings/crashes.py)


# ---------------------------------------------------------------------------------------------- reading

def read(obj):
    """A dataset's or attribute's value as h5py reads it (None for a null dataspace)."""
    if isinstance(obj, h5py.Dataset):
        if obj.shape is None:
            return None
        return obj[...] if obj.shape == () else obj[()]  # [()] of a scalar gives native byte order
    return obj


def same(a, b, what):
    """Bit for bit: dtype, shape and stored bytes (variable-length strings by content)."""
    if a is None or b is None or isinstance(a, h5py.Empty) or isinstance(b, h5py.Empty):
        assert type(a) is type(b), f"{what}: {a!r} vs {b!r}"
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs {b.dtype}"
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    if a.dtype.kind == "O":  # h5py reads strings as bytes, numpy holds what was written: compare the text
        text = lambda v: [x.decode("utf-8", "surrogateescape") if isinstance(x, bytes) else x for x in v.ravel()]
        assert text(a) == text(b), f"{what}: {a.tolist()} vs {b.tolist()}"
    else:
        assert a.tobytes() == b.tobytes(), f"{what}: {a!r} vs {b!r}"


def tree(path):
    """{path: ("group"|"dataset", h5py object)} of every object, with the file kept open by the caller."""
    f = h5py.File(path, "r")
    objs = {"/": f}
    f.visititems(lambda name, o: objs.__setitem__("/" + name, o))
    return f, objs


def storage(ds):
    plist = ds.id.get_create_plist()
    return {"layout": plist.get_layout(), "chunks": ds.chunks, "compression": ds.compression,
            "compression_opts": ds.compression_opts, "shuffle": ds.shuffle, "fletcher32": ds.fletcher32,
            "maxshape": ds.maxshape, "fill": np.asarray(ds.fillvalue).tobytes() if ds.dtype.kind != "O" else None}


def check_file(path, src_objs, expected, expected_attrs=None, extra=()):
    """File `path` has the input's tree (plus `extra` datasets), the values `expected` gives for the
    leaves it names and the input's values for the others, every attribute of the input (but those in
    `expected_attrs`, {(group, name): value}), and the input's creation properties."""
    expected_attrs = expected_attrs or {}
    f, objs = tree(path)
    with f:
        assert sorted(objs) == sorted(list(src_objs) + list(extra)), f"{path}: tree {sorted(objs)}"
        for p, o in objs.items():
            s = src_objs.get(p)
            assert isinstance(o, h5py.Group) == isinstance(s if s is not None else objs[p], h5py.Group), p
            if isinstance(o, h5py.Dataset):
                want = expected[p] if p in expected else read(s)
                same(read(o), want, f"{path}:{p}")
                if s is not None:
                    assert o.dtype == s.dtype, f"{path}:{p}: dtype {o.dtype} vs {s.dtype}"
                    if s.shape is not None and len(s.shape):
                        got, had = storage(o), storage(s)
                        if had["chunks"] is None:  # contiguous and compact data cannot be extendible
                            had["maxshape"] = o.shape
                        assert got == had, f"{path}:{p}: creation properties {got} vs {had}"
            attrs = stored_attrs(o)
            want_attrs = stored_attrs(s) if s is not None else {}
            for (gp, name), v in expected_attrs.items():
                if gp == p:
                    want_attrs[name] = (v.dtype, v.astype(v.dtype.newbyteorder("=")))
            assert sorted(attrs) == sorted(want_attrs), f"{path}:{p}: attributes {sorted(attrs)}"
            for k in attrs:
                assert attrs[k][0] == want_attrs[k][0], f"{path}:{p}@{k}: dtype {attrs[k][0]} vs {want_attrs[k][0]}"
                same(attrs[k][1], want_attrs[k][1], f"{path}:{p}@{k}")


def stored_attrs(obj):
    """{name: (stored dtype, value)}: h5py reads attribute values in native byte order, so the stored
    dtype is taken from the attribute itself."""
    return {k: (obj.attrs.get_id(k).dtype, obj.attrs[k]) for k in obj.attrs}


def manifest_rows(slices):
    return [r for a, b, step in slices for r in range(a, b, step)]


def published(out):
    return [n for n in listing(out) if n == "manifest.json" or n.endswith(".h5")]


def check_refused(res, status, out):
    """The documented exit status, one error line, and nothing published."""
    assert_one_line_error(res, status)
    assert not os.path.exists(out) or published(out) == [], listing(out)


def input_values(src):
    with h5py.File(src, "r") as f:
        vals = {}
        f.visititems(lambda n, o: vals.__setitem__("/" + n, read(o)) if isinstance(o, h5py.Dataset) else None)
    return vals


# ---------------------------------------------------------------------------------------------- split + merge

def split_case(tmp, batch, o, plan):
    """Writes the batch, splits it; returns (src, out, result)."""
    src = gen.write_batch(os.path.join(tmp, "batch.h5"), batch)
    spec = write_spec(os.path.join(tmp, "spec.json"), batch.spec)
    out = os.path.join(tmp, "mb")
    note(f"microbatch split batch.h5 -s spec.json {' '.join(o.argv())} -o mb    # spec: {json.dumps(batch.spec)}")
    return src, spec, out, run("split", src, "-s", spec, *o.argv(), "-o", out)


def check_merge(tmp, src, out, expected_merged=None, expected_attrs=None):
    """merge DIR gives the input back (h5py/numpy and h5diff), or the kept prefix `expected_merged`."""
    merged = os.path.join(tmp, "merged.h5")
    res = run("merge", out, "-o", merged, "-q")
    assert res.code == 0, res
    if expected_merged is None:
        assert h5diff(src, merged) == 0
        f, objs = tree(src)
        with f:
            check_file(merged, objs, {})
    else:
        f, objs = tree(src)
        with f:
            check_file(merged, objs, expected_merged, expected_attrs)
    assert listing(tmp) == sorted(["batch.h5", "spec.json", "mb", "merged.h5"]), listing(tmp)
    res = run("verify", out)
    assert res.code == 0, res


@settings_for("rows_split_matches_model")
@given(gen.row_cases())
def test_rows_split_holds_what_the_model_says_and_merges_back(case):
    batch, o = case
    with tempfile.TemporaryDirectory() as tmp:
        try:
            files, kept = model.row_plan(batch, o)
        except model.Refused as e:
            src, spec, out, res = split_case(tmp, batch, o, None)
            check_refused(res, e.status, out)
            return
        src, spec, out, res = split_case(tmp, batch, o, files)
        assert res.code == 0, res
        names = [f.name for f in files]
        assert listing(out) == sorted(names + ["manifest.json"]), listing(out)
        m = json.loads(open(os.path.join(out, "manifest.json")).read())
        assert [e["name"] for e in m["files"]] == names
        for e in m["files"]:
            assert e["size"] == os.path.getsize(os.path.join(out, e["name"])), e
        splits = [l for l in batch.leaves if l.role == "split"]
        assert sorted(m["datasets"]) == sorted(l.path for l in splits), m["datasets"]
        for l in splits:
            rec = m["datasets"][l.path]
            assert rec["axis"] == l.axis, rec
            for k, f in enumerate(files):
                assert manifest_rows(rec["rows"][k]) == f.rows[l.path], (l.path, f.name, rec["rows"][k])
        vals = input_values(src)
        sf, src_objs = tree(src)
        with sf:
            for f in files:
                check_file(os.path.join(out, f.name), src_objs,
                           {l.path: model.expected_row_leaf(l, vals[l.path], f, o) for l in splits})
        prefix = None
        if o.drop_last:
            prefix = {l.path: np.take(vals[l.path], np.arange(kept[l.path]), axis=l.axis) for l in splits}
        check_merge(tmp, src, out, prefix)


def check_max_dims_refusal(res, batch, o, out):
    """behavior.md (Chunk shape and max dims of pieces): a --cp-pad file longer than a chunked dataset's fixed
    max dim is refused, since merge could not give that max dim back. The refusal names a packed leaf whose
    input max dim is the one it says, and a file length that some padded cut can reach."""
    check_refused(res, 1, out)
    said = re.search(r": (/\S+): --cp-pad gives a file (\d+) rows on axis (\d+), more than its fixed max dims "
                     r"allow \((\d+)\)", res.err)
    assert said, res
    path, rows, axis, limit = said.group(1), int(said.group(2)), int(said.group(3)), int(said.group(4))
    leaf = next(l for l in batch.leaves if l.path == path)
    assert leaf.role == "packed" and leaf.storage.layout == "chunked" and not leaf.storage.unlimited, leaf
    assert leaf.shape[axis] == limit < rows, (leaf, rows)  # strategies give chunked leaves maxshape = shape
    padded = sum(-(-n // (2 * o.cp)) * 2 for n in batch.lengths[leaf.offsets])  # every document on one file
    assert rows <= padded, (rows, padded)


@settings_for("packed_split_matches_model")
@given(gen.packed_cases())
def test_packed_split_holds_what_the_model_says_and_merges_back(case):
    batch, o = case
    with tempfile.TemporaryDirectory() as tmp:
        try:
            plan = model.packed_plan(batch, o)
        except model.Refused as e:
            src, spec, out, res = split_case(tmp, batch, o, None)
            check_refused(res, e.status, out)
            return
        src, spec, out, res = split_case(tmp, batch, o, plan)
        if o.cp_pad and res.code == 1 and "fixed max dims" in res.err:
            check_max_dims_refusal(res, batch, o, out)
            return
        assert res.code == 0, res
        m = json.loads(open(os.path.join(out, "manifest.json")).read())
        cells = model.check_cells(plan, m["sequences"]["runs"], o)
        files = model.packed_files(plan, cells, o)
        names = [f.name for f in files]
        assert listing(out) == sorted(names + ["manifest.json"]), listing(out)
        assert [e["name"] for e in m["files"]] == names
        assert m["options"].get("cp_pad", False) == o.cp_pad, m["options"]
        vals = input_values(src)
        extra = model.twins(batch, o)
        sf, src_objs = tree(src)
        with sf:
            for f in files:
                want, want_attrs = model.expected_packed(batch, f, o, vals)
                check_file(os.path.join(out, f.name), src_objs, want, want_attrs, extra)
        if o.drop_last:  # the merge gives back the sequences before the dropped ones
            whole = model.OutFile("merged", 0, seqs=list(range(plan.kept)))
            want, want_attrs = model.expected_packed(batch, whole, gen.Options(n=1), vals)
            check_merge(tmp, src, out, want, want_attrs)
        else:
            check_merge(tmp, src, out)


# ---------------------------------------------------------------------------------------------- files alone

@settings_for("files_alone_merge_back")
@given(st.one_of(gen.row_cases(jobs=False), gen.packed_cases(jobs=False)))
def test_files_away_from_their_manifest_merge_back_with_the_splits_flags(case):
    """merge FILE... -s SPEC with the split's layout flags, the files moved away from their manifest: the
    input (or the kept prefix) back; a default-layout packed --dp-degree split cannot be, exit 2."""
    batch, o = case
    try:
        plan = model.row_plan(batch, o)[0] if batch.kind == "rows" else model.packed_plan(batch, o)
    except model.Refused:
        assume(False)
    with tempfile.TemporaryDirectory() as tmp:
        src, spec, out, res = split_case(tmp, batch, o, plan)
        assert res.code == 0, res
        names = [e["name"] for e in json.loads(open(os.path.join(out, "manifest.json")).read())["files"]]
        away = os.path.join(tmp, "away")
        os.mkdir(away)
        for name in names:
            os.rename(os.path.join(out, name), os.path.join(away, name))
        merged = os.path.join(tmp, "merged.h5")
        note(f"microbatch merge away/*.h5 -s spec.json {' '.join(o.merge_argv())} -o merged.h5")
        res = run("merge", *[os.path.join(away, n) for n in names], "-s", spec, *o.merge_argv(), "-o", merged)
        if batch.kind == "packed" and o.dp > 1 and o.layout != "per-rank":
            check_refused(res, 2, merged)
            return
        assert res.code == 0, res
        sf, objs = tree(src)
        with sf:
            if not o.drop_last:
                assert h5diff(src, merged) == 0
                check_file(merged, objs, {})
            elif batch.kind == "rows":
                vals = input_values(src)
                kept = model.row_plan(batch, o)[1]
                check_file(merged, objs, {l.path: np.take(vals[l.path], np.arange(kept[l.path]), axis=l.axis)
                                          for l in batch.leaves if l.role == "split"})
            else:
                whole = model.OutFile("merged", 0, seqs=list(range(plan.kept)))
                want, want_attrs = model.expected_packed(batch, whole, gen.Options(n=1), input_values(src))
                check_file(merged, objs, want, want_attrs)


# ---------------------------------------------------------------------------------------------- -j

@settings_for("bytes_do_not_depend_on_jobs")
@given(st.one_of(gen.row_cases(jobs=False), gen.packed_cases(jobs=False)), st.sampled_from([2, 3]))
def test_file_bytes_do_not_depend_on_jobs(case, jobs):
    batch, o = case
    try:
        model.row_plan(batch, o) if batch.kind == "rows" else model.packed_plan(batch, o)
    except model.Refused:
        assume(False)
    with tempfile.TemporaryDirectory() as tmp:
        src = gen.write_batch(os.path.join(tmp, "batch.h5"), batch)
        spec = write_spec(os.path.join(tmp, "spec.json"), batch.spec)
        note(f"split {' '.join(o.argv())} against -j {jobs}; spec {json.dumps(batch.spec)}")
        one, many = os.path.join(tmp, "one"), os.path.join(tmp, "many")
        assert run("split", src, "-s", spec, *o.argv(), "-o", one, "-q").code == 0
        assert run("split", src, "-s", spec, *o.argv(), "-j", jobs, "-o", many, "-q").code == 0
        assert listing(one) == listing(many)
        for name in listing(one):
            with open(os.path.join(one, name), "rb") as a, open(os.path.join(many, name), "rb") as b:
                assert a.read() == b.read(), f"{name} differs with -j {jobs}"


# ---------------------------------------------------------------------------------------------- reducers

REDUCE_DTYPES = ["<i1", "u1", ">i2", "<u4", "<i8", ">u8", "<f2", ">f2", "<f4", ">f8"]


@st.composite
def reduce_cases(draw):
    kind = draw(st.sampled_from(["sum", "mean", "min", "max", "stack"]))
    dt = np.dtype(draw(st.sampled_from(REDUCE_DTYPES)) if kind != "stack" else draw(gen.any_dtypes()))
    shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    n = draw(st.integers(1, 4))
    where = draw(st.sampled_from(["dataset", "attribute"]))
    if gen.is_vlen(dt) or dt in (gen.ARRAY,) or dt.kind == "V":
        where = "dataset"   # attribute values of these kinds: not drawn
    seeds = [draw(st.integers(0, 2**16)) for _ in range(n)]
    return kind, dt, shape, where, seeds


def reducer_values(dt, shape, seed):
    rng = np.random.default_rng(seed)
    if dt.kind == "f":
        # finite values (NaN payloads have their own documented rules), large enough to reach overflow
        scale = {2: 3e4, 4: 1e30, 8: 1e300}[dt.itemsize]
        v = np.array(rng.standard_normal(shape) * rng.choice([1e-3, 1, scale]))
        v[rng.random(shape) < 0.15] = -0.0
        return np.asarray(np.clip(v, -np.finfo(dt).max, np.finfo(dt).max)).astype(dt)  # finite in dt too
    v = gen.values(rng, dt, shape)
    return v if dt == gen.ARRAY else np.asarray(v).astype(dt)  # a numpy scalar forgets its byte order


@settings_for("reducers_match_numpy")
@given(reduce_cases())
def test_merge_reducers_match_the_numpy_model(case):
    kind, dt, shape, where, seeds = case
    vals = [reducer_values(dt, shape, s) for s in seeds]
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, v in enumerate(vals):
            p = os.path.join(tmp, f"out-{i}.h5")
            with h5py.File(p, "w") as f:
                f["x"] = np.arange(3 * i, 3 * i + 3, dtype="<i4")   # a split leaf, concatenated
                if where == "dataset":
                    gen.create(f, "loss", v, dt, gen.Storage(), shape=shape)
                else:
                    f.attrs.create("loss", v, dtype=dt)
            paths.append(p)
        key = "loss" if where == "dataset" else "@loss"
        spec = write_spec(os.path.join(tmp, "spec.json"), {"x": 0, key: {"reduce": kind}})
        merged = os.path.join(tmp, "merged.h5")
        note(f"merge out-*.h5 -s {{'x': 0, {key!r}: {{'reduce': {kind!r}}}}}: {[v.tolist() for v in vals]}")
        res = run("merge", *paths, "-s", spec, "-o", merged)
        try:
            want = model.reduce_model(kind, vals)
        except model.Refused as e:
            assert_one_line_error(res, e.status)
            assert not os.path.exists(merged)
            return
        assert res.code == 0, res
        with h5py.File(merged, "r") as f:
            same(f["x"][()], np.arange(3 * len(vals), dtype="<i4"), "/x")
            got = f["loss"][...] if where == "dataset" else f.attrs["loss"]
            if where == "attribute" and np.ndim(got) == 0:
                got = np.asarray(got, dtype=dt)
            same(np.asarray(got), want.astype(want.dtype), f"{key} ({kind})")
        assert sorted(os.listdir(tmp)) == sorted([os.path.basename(p) for p in paths] + ["spec.json", "merged.h5"])


# ---------------------------------------------------------------------------------------------- refusals

@st.composite
def refusal_cases(draw):
    """A valid case with one documented mistake; returns (batch, argv without -o, status, what)."""
    batch, o = draw(st.one_of(gen.row_cases(jobs=False), gen.packed_cases(jobs=False)))
    argv = o.argv()
    spec = batch.spec
    splits = [l for l in batch.leaves if l.role in ("split", "packed")]
    choices = ["n0", "n_and_mbs", "negative_n", "drop_last_with_n", "cp_pad_without_cp", "unknown_on_short",
               "key_names_nothing", "axis_out_of_range", "reduce_on_split", "malformed_json", "bad_jobs",
               "scalar_split"]
    if batch.kind == "packed":
        choices += ["align_with_packed", "offsets_not_from_zero", "token_length", "pad_not_representable"]
        if o.cp == 1:
            choices += ["cp_not_dividing"]
    else:
        if any(l.shape[l.axis] > 0 for l in splits):
            choices += ["dp_not_dividing"]
        if o.n is not None:
            choices += ["short_default"]
    what = draw(st.sampled_from(choices))
    status = 1
    opts = [a for a in argv]

    def without(*flags):
        res, skip = [], False
        for a in opts:
            if skip:
                skip = False
                continue
            if a in flags:
                skip = a not in ("--drop-last", "--align", "--cp-pad")
                continue
            res.append(a)
        return res

    if what == "n0":
        opts, status = without("-n", "--micro-batch-size", "--drop-last") + ["-n", "0"], 2
    elif what == "negative_n":
        opts, status = without("-n", "--micro-batch-size", "--drop-last") + ["-n", "-3"], 2
    elif what == "n_and_mbs":
        opts, status = without("-n", "--micro-batch-size", "--drop-last") + ["-n", "2", "--micro-batch-size", "1"], 2
    elif what == "drop_last_with_n":
        opts, status = without("-n", "--micro-batch-size", "--drop-last") + ["-n", "1", "--drop-last"], 2
    elif what == "cp_pad_without_cp":
        opts, status = without("--cp-degree", "--cp-pad") + ["--cp-pad"], 2
    elif what == "unknown_on_short":
        opts, status = without("--on-short") + ["--on-short", "shrink"], 2
    elif what == "bad_jobs":
        opts, status = opts + ["-j", "0"], 2
    elif what == "align_with_packed":
        opts, status = without("--align") + ["--align"], 2
    elif what == "key_names_nothing":
        spec = dict(spec, zz_nothing=0)
    elif what == "axis_out_of_range":
        l = draw(st.sampled_from([l for l in batch.leaves if l.role == "split"] or [None]))
        if l is None:
            spec = dict(spec, temperature=0) if any(x.path == "/temperature" for x in batch.leaves) else \
                dict(spec, zz_nothing=0)
        else:
            spec = json.loads(json.dumps(spec))  # a copy: the batch keeps its own
            gen.set_spec(spec, l.path, draw(st.sampled_from([len(l.shape), -len(l.shape) - 1])))
            fix_prefix_spec(spec, l, batch)
    elif what == "reduce_on_split":
        l = draw(st.sampled_from(splits))
        gen.set_spec(spec, l.path, {"reduce": draw(st.sampled_from(["sum", "mean", "min", "max", "stack"]))})
        fix_prefix_spec(spec, l, batch)
    elif what == "malformed_json":
        spec = json.dumps(spec)[:-1]
    elif what == "scalar_split":
        spec = dict(spec, zz_scalar=0)
        batch.leaves.append(gen.Leaf("/zz_scalar", np.dtype("<i4"), (), "replicate", seed=1))
    elif what == "dp_not_dividing":
        length = max(l.shape[l.axis] for l in splits)
        d = next(x for x in (2, 3, 4, 5, 7) if length % x)
        opts = without("--dp-degree", "--layout", "--cp-degree", "--cp-pad", "--on-short", "-n") + \
            ["--dp-degree", str(d), "--on-short", "empty"]
        if "--micro-batch-size" not in opts:
            opts += ["-n", "1"]
        opts = [a for a in opts if a != "--drop-last"]
    elif what == "short_default":
        shortest = min(l.shape[l.axis] // o.dp for l in splits)
        opts = without("-n", "--on-short") + ["-n", str(shortest + 1)]
    elif what == "offsets_not_from_zero":
        off = batch.leaves[0]
        off.data = (off.data.astype(np.int64) + 1).astype(off.data.dtype)
        for l in batch.leaves:   # the token-level lengths follow the last offset, so only the start is wrong
            if l.role == "packed" and l.offsets == off.path:
                l.shape = tuple(s + 1 if a == l.axis else s for a, s in enumerate(l.shape))
        batch.leaves = [l for l in batch.leaves if l.role != "derived"]
        batch.derived_attrs = []
        spec = {k: v for k, v in spec.items() if k not in ("max_seqlen", "@num_tokens")}
    elif what == "token_length":
        l = draw(st.sampled_from([l for l in batch.leaves if l.role == "packed"]))
        l.shape = tuple(s + 1 if a == l.axis else s for a, s in enumerate(l.shape))
    elif what == "cp_not_dividing":
        lengths = batch.lengths["/cu_seqlens"]
        assume(any(x % 4 for x in lengths))
        opts = without("--cp-degree", "--cp-pad") + ["--cp-degree", "2"]
    elif what == "pad_not_representable":
        l = draw(st.sampled_from([l for l in batch.leaves if l.role == "packed"]))
        l.dtype = np.dtype("u1")
        l.spec = dict(l.spec, pad=-100)
        gen.set_spec(spec, l.path, l.spec)
        if o.cp == 1:
            opts = opts + ["--cp-degree", "2", "--cp-pad"]
        elif not o.cp_pad:
            opts = opts + ["--cp-pad"]
    batch.spec = spec
    return batch, opts, status, what


def fix_prefix_spec(spec, leaf, batch):
    """set_spec into a group that a tree-prefix leaf stood for: make the group an object again."""
    parts = leaf.path.strip("/").split("/")
    node = spec
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {"*": node.get(p)} if node.get(p) is not None else {"*": None}
        node = node[p]


@settings_for("refusals_are_documented")
@given(refusal_cases())
def test_refusals_have_the_documented_status_and_publish_nothing(case):
    batch, opts, status, what = case
    with tempfile.TemporaryDirectory() as tmp:
        src = gen.write_batch(os.path.join(tmp, "batch.h5"), batch)
        spec = write_spec(os.path.join(tmp, "spec.json"), batch.spec)
        out = os.path.join(tmp, "mb")
        note(f"{what}: microbatch split batch.h5 -s spec.json {' '.join(opts)} -o mb   # {batch.spec}")
        res = run("split", src, "-s", spec, *opts, "-o", out)
        check_refused(res, status, out)
        assert listing(tmp) == ["batch.h5", "spec.json"], listing(tmp)
