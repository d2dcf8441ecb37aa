"""Hypothesis strategies for the generated crossings: batches (as plain descriptions, written with h5py by
`write_batch`), their specs, and the command-line options, valid ones for the "accepted" properties and
invalid ones for the "refusal" property.

Hypothesis draws the structure (tree, dtypes, shapes, storage, spec forms, options); the values of each
array come from a numpy generator seeded by a drawn integer, so that an example stays fast to draw and
small to shrink. Files hold tens of rows at most."""
from dataclasses import dataclass, field
from typing import Optional

import h5py
import numpy as np
from hypothesis import assume, strategies as st


# ---------------------------------------------------------------------------------------------- datatypes

INT_CODES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]
FLOAT_CODES = ["f2", "f4", "f8"]
ENUM = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 7}, basetype="u1")
VLEN_UTF8 = h5py.string_dtype("utf-8")
VLEN_ASCII = h5py.string_dtype("ascii")
COMPOUND = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", ("<i2", (2,)))])
ARRAY = np.dtype(("<f4", (2,)))  # an HDF5 array type: h5py keeps it as the dataset's element type


def numeric_dtypes():
    """Integers and floats of every width, in both byte orders."""
    return st.sampled_from(INT_CODES + FLOAT_CODES).flatmap(
        lambda c: st.sampled_from(["<", ">"]).map(lambda o: np.dtype(o + c) if c not in ("i1", "u1") else np.dtype(c)))


def any_dtypes():
    """Every datatype the docs list as working everywhere."""
    return st.one_of(
        numeric_dtypes(), numeric_dtypes(),
        st.sampled_from([np.dtype(bool), np.dtype("<c8"), np.dtype(">c16"), ENUM, np.dtype("S5"), VLEN_UTF8,
                         VLEN_ASCII, COMPOUND, ARRAY]))


def is_vlen(dtype):
    return h5py.check_string_dtype(dtype) is not None and h5py.check_string_dtype(dtype).length is None


def values(rng, dtype, shape):
    """An array of `shape` of `dtype` with varied values (the generator decides)."""
    n = int(np.prod(shape, dtype=np.int64))
    if is_vlen(dtype):
        enc = h5py.check_string_dtype(dtype).encoding
        alphabet = "abcxyz é€" if enc == "utf-8" else "abcxyz 01"
        words = ["".join(rng.choice(list(alphabet), size=int(rng.integers(0, 6)))) for _ in range(n)]
        return np.array(words, dtype=object).reshape(shape)
    if h5py.check_enum_dtype(dtype) is not None:
        return rng.choice(np.array([0, 1, 7], dtype="u1"), size=shape).astype(dtype)
    if dtype == ARRAY:
        return rng.standard_normal(tuple(shape) + (2,)).astype("<f4")
    if dtype == COMPOUND:
        a = np.zeros(shape, dtype=COMPOUND)
        a["a"] = rng.integers(-1000, 1000, size=shape)
        a["b"] = rng.standard_normal(shape)
        a["c"] = rng.integers(-5, 5, size=tuple(shape) + (2,))
        return a
    if dtype.kind == "S":
        return np.array([bytes(rng.choice(list(b"abc xyz"), size=int(rng.integers(0, 6)))) for _ in range(n)],
                        dtype=dtype).reshape(shape)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind == "f":
        a = (rng.standard_normal(shape) * 100).astype(dtype)
        if n:  # special values too: their bits must travel unchanged
            flat = a.reshape(-1)
            flat[int(rng.integers(0, n))] = rng.choice(np.array([np.nan, np.inf, -0.0, -np.inf], dtype=dtype))
        return a
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=np.dtype(dtype).newbyteorder("="))\
        .astype(dtype)


def attr_values():
    """Attribute values of several kinds (an attribute on every kind of object)."""
    return st.one_of(
        st.integers(-2**40, 2**40).map(np.int64), st.floats(allow_nan=False, width=32).map(np.float32),
        st.text(alphabet="abc é", max_size=5), st.binary(max_size=4).map(lambda b: np.bytes_(b.replace(b"\0", b"x"))),
        st.lists(st.integers(-9, 9), min_size=1, max_size=4).map(lambda l: np.array(l, dtype=">i2")))


def attr_dicts():
    return st.dictionaries(st.sampled_from(["units", "step", "note", "scale"]), attr_values(), max_size=2)


# ---------------------------------------------------------------------------------------------- storage

@dataclass
class Storage:
    layout: str = "contiguous"          # contiguous | chunked | compact
    chunks: Optional[tuple] = None
    gzip: Optional[int] = None
    shuffle: bool = False
    fletcher32: bool = False
    fill: object = None
    unlimited: bool = False             # maxshape None on the split axis


@st.composite
def storages(draw, shape, dtype, axis):
    """Creation properties for a dataset of `shape`: chunks aligned or not with any cut, filters, fill."""
    layout = draw(st.sampled_from(["contiguous", "chunked", "chunked", "compact"]))
    if len(shape) == 0:
        layout = draw(st.sampled_from(["contiguous", "compact"]))
    s = Storage(layout=layout)
    if layout == "chunked":
        s.chunks = tuple(draw(st.integers(1, max(1, d) + 2)) for d in shape)
        s.gzip = draw(st.sampled_from([None, None, 1, 6]))
        s.shuffle = draw(st.booleans())
        s.fletcher32 = draw(st.booleans()) and not is_vlen(dtype)
        s.unlimited = draw(st.booleans()) and axis is not None
    if not is_vlen(dtype) and dtype.kind in "iuf" and draw(st.booleans()):
        s.fill = np.array(draw(st.integers(0, 100)), dtype=dtype)[()]
    return s


def create(group, name, data, dtype, storage, shape=None):
    """Writes one dataset with its creation properties."""
    shape = data.shape if shape is None else shape
    if dtype == ARRAY:
        shape = data.shape[:-1]
    kw = {}
    if storage.layout == "chunked":
        kw["chunks"] = storage.chunks
        # a chunk longer than a fixed extent needs an unlimited axis (HDF5's rule)
        maxshape = [None if storage.unlimited or c > d else d for c, d in zip(storage.chunks, shape)]
        kw["maxshape"] = tuple(maxshape)
        if storage.gzip is not None:
            kw["compression"] = "gzip"
            kw["compression_opts"] = storage.gzip
        kw["shuffle"] = storage.shuffle
        kw["fletcher32"] = storage.fletcher32
    if storage.fill is not None:
        kw["fillvalue"] = storage.fill
    if storage.layout == "compact":
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        if storage.fill is not None:
            dcpl.set_fill_value(np.array(storage.fill, dtype=dtype))
        h5t = h5py.h5t.py_create(dtype, logical=True)
        space = h5py.h5s.create_simple(tuple(shape)) if len(shape) else h5py.h5s.create(h5py.h5s.SCALAR)
        dsid = h5py.h5d.create(group.id, name.encode(), h5t, space, dcpl=dcpl)
        ds = h5py.Dataset(dsid)
    else:
        ds = group.create_dataset(name, shape=tuple(shape), dtype=dtype, **kw)
    if int(np.prod(shape, dtype=np.int64)) or len(shape) == 0:
        ds[()] = data
    return ds


# ---------------------------------------------------------------------------------------------- batches

@dataclass
class Leaf:
    path: str
    dtype: object
    shape: tuple
    role: str                    # split | replicate | offsets | packed | per_sequence | derived | null
    axis: Optional[int] = None   # non-negative axis (split, packed, per_sequence)
    seq_axis: Optional[int] = None
    spec: object = None          # the JSON leaf written for it (None: covered by null / "*" / default)
    storage: Storage = field(default_factory=Storage)
    attrs: dict = field(default_factory=dict)
    seed: int = 0
    offsets: Optional[str] = None  # packed / per_sequence / derived: the offsets path
    derived: Optional[str] = None  # max_seqlen | num_tokens
    pad: object = None             # packed under --cp-pad: the pad value the spec gives (None: 0)
    data: object = None            # offsets / derived leaves: their exact values


@dataclass
class Batch:
    kind: str                    # rows | packed
    leaves: list
    group_attrs: dict            # group path -> attrs
    spec: dict
    lengths: Optional[list] = None        # packed: sequence lengths per offsets dataset name
    derived_attrs: list = field(default_factory=list)  # packed: (group path, attr name, kind, offsets, dtype)


def write_batch(path, batch):
    with h5py.File(path, "w") as f:
        for gpath, attrs in sorted(batch.group_attrs.items()):
            g = f.require_group(gpath) if gpath != "/" else f
            for k, v in attrs.items():
                g.attrs[k] = v
        for leaf in batch.leaves:
            parent, name = leaf.path.rsplit("/", 1)
            g = f.require_group(parent) if parent else f
            if leaf.role == "null":
                g.create_dataset(name, data=h5py.Empty("<f4"))
            else:
                data = leaf.data if leaf.data is not None else values(np.random.default_rng(leaf.seed), leaf.dtype,
                                                                      leaf.shape)
                create(g, name, data, leaf.dtype, leaf.storage, shape=leaf.shape)
            for k, v in leaf.attrs.items():
                g[name].attrs[k] = v
        for gpath, name, kind, offsets, dtype in batch.derived_attrs:
            lengths = batch.lengths[offsets]
            value = (max(lengths) if lengths else 0) if kind == "max_seqlen" else sum(lengths)
            (f[gpath] if gpath != "/" else f).attrs.create(name, np.array(value, dtype=dtype))
    return path


def set_spec(spec, path, leaf_spec):
    """Puts `leaf_spec` at `path`; a leaf spec met on the way (the tree-prefix rule) becomes {"*": it}, which
    the docs give the same meaning for the members not named."""
    parts = path.strip("/").split("/")
    node = spec
    for p in parts[:-1]:
        if not isinstance(node.get(p, {}), dict):
            node[p] = {"*": node[p]}
        node = node.setdefault(p, {})
    node[parts[-1]] = leaf_spec


GROUPS = ["", "/g", "/g/h", "/k"]
NAMES = ["a", "b", "c", "d", "e", "f"]


@st.composite
def axis_forms(draw, axis, rank):
    """The ways a spec says "split on `axis`": k, -(rank-k), {"split_axis": k}, and null / omitted for the
    default (axis 0)."""
    forms = [axis, axis - rank, {"split_axis": axis}, {"split_axis": axis - rank}]
    if axis == 0:
        forms.append(None)
    return draw(st.sampled_from(forms))


# ---------------------------------------------------------------------------------------------- options

@dataclass
class Options:
    n: Optional[int] = None
    mbs: Optional[int] = None
    on_short: Optional[str] = None
    drop_last: bool = False
    dp: int = 1
    align: bool = False
    layout: Optional[str] = None    # None (default) | per-rank | per-microbatch
    cp: int = 1
    cp_pad: bool = False
    balance: Optional[str] = None
    jobs: int = 1

    def argv(self):
        a = []
        if self.n is not None:
            a += ["-n", self.n]
        if self.mbs is not None:
            a += ["--micro-batch-size", self.mbs]
        if self.on_short:
            a += ["--on-short", self.on_short]
        if self.drop_last:
            a += ["--drop-last"]
        a += self.merge_argv()
        if self.balance:
            a += ["--balance", self.balance]
        if self.jobs != 1:
            a += ["-j", self.jobs]
        return [str(x) for x in a]

    def merge_argv(self):
        """The layout flags merge needs for files away from their manifest (split takes them too)."""
        a = []
        if self.dp != 1:
            a += ["--dp-degree", self.dp]
        if self.align:
            a += ["--align"]
        if self.layout:
            a += ["--layout", self.layout]
        if self.cp != 1:
            a += ["--cp-degree", self.cp]
        if self.cp_pad:
            a += ["--cp-pad"]
        return [str(x) for x in a]


# ---------------------------------------------------------------------------------------------- row batches

@st.composite
def row_cases(draw, jobs=True):
    """A batch cut by rows (no packed sequences), and options the docs accept for it."""
    dp = draw(st.sampled_from([1, 1, 2, 3]))
    cp = draw(st.sampled_from([1, 1, 2]))
    by_size = draw(st.booleans())
    rows_per_slice = draw(st.integers(0 if not by_size else 1, 6))
    length = dp * rows_per_slice
    o = Options(dp=dp, cp=cp)
    if dp > 1:
        o.align = draw(st.booleans())
        o.layout = draw(st.sampled_from([None, "per-rank", "per-microbatch"]))
    elif draw(st.booleans()):
        o.align = draw(st.booleans())  # the identity without --dp-degree
    if jobs:
        o.jobs = draw(st.sampled_from([1, 1, 2, 3]))
    own_lengths = not by_size and dp == 1 and draw(st.booleans())  # -n: each dataset cut by its own length

    leaves, spec, group_attrs = [], {}, {}
    used = set()
    n_split = draw(st.integers(1, 4))
    any_seq = False
    for k in range(n_split + draw(st.integers(0, 3))):
        gp = draw(st.sampled_from(GROUPS))
        name = draw(st.sampled_from(NAMES))
        path = f"{gp}/{name}"
        if path in used or any(u.startswith(path + "/") or path.startswith(u + "/") for u in used):
            continue
        used.add(path)
        dtype = draw(any_dtypes())
        seed = draw(st.integers(0, 2**16))
        attrs = draw(attr_dicts())
        if k < n_split:
            rank = draw(st.integers(1, 3))
            axis = draw(st.integers(0, rank - 1))
            shape = [draw(st.integers(1, 3)) for _ in range(rank)]
            shape[axis] = draw(st.integers(0, 12)) if own_lengths else length
            seq_axis = None
            if cp > 1 and rank >= 2 and draw(st.booleans()) or (cp > 1 and not any_seq and rank >= 2):
                seq_axis = draw(st.sampled_from([a for a in range(rank) if a != axis]))
                shape[seq_axis] = 2 * cp * draw(st.integers(1, 2))
                any_seq = True
            shape = tuple(shape)
            if seq_axis is not None:
                leaf_spec = {"split_axis": draw(st.sampled_from([axis, axis - rank])),
                             "sequence_axis": draw(st.sampled_from([seq_axis, seq_axis - rank]))}
            else:
                leaf_spec = draw(axis_forms(axis, rank))
            leaf = Leaf(path, dtype, shape, "split", axis=axis, seq_axis=seq_axis, spec=leaf_spec,
                        storage=draw(storages(shape, dtype, axis)), attrs=attrs, seed=seed)
        else:
            kind = draw(st.sampled_from(["scalar", "replicate", "null"]))
            if kind == "null":
                leaf = Leaf(path, np.dtype("<f4"), None, "null", spec=draw(st.sampled_from([None, "replicate"])),
                            attrs=attrs)
            else:
                shape = () if kind == "scalar" else tuple(draw(st.integers(0, 3)) for _ in range(draw(st.integers(1, 2))))
                leaf = Leaf(path, dtype, shape, "replicate",
                            spec=draw(st.sampled_from([None, "replicate"])) if kind == "scalar" else "replicate",
                            storage=draw(storages(shape, dtype, None)), attrs=attrs, seed=seed)
        leaves.append(leaf)
    splits = [l for l in leaves if l.role == "split"]
    assume(splits)
    if cp > 1:
        assume(any(l.seq_axis is not None for l in splits))
    for gp in set(l.path.rsplit("/", 1)[0] for l in leaves):
        if draw(st.booleans()):
            group_attrs[gp or "/"] = draw(attr_dicts())
    spec = render_spec(draw, leaves)

    lens = [l.shape[l.axis] // dp for l in splits]
    if by_size:
        o.mbs = draw(st.integers(1, 5))
        o.drop_last = draw(st.booleans())
        if o.drop_last:
            assume(length // (o.mbs * dp) >= 1)   # a batch shorter than M is a usage error
        if draw(st.booleans()):
            o.on_short = draw(st.sampled_from(["error", "downsize", "empty"]))
    else:
        o.n = draw(st.integers(1, 5))
        short = min(lens) < o.n
        if short:
            if min(lens) == 0:
                o.on_short = "empty"          # downsize to 0 microbatches is not a split
            else:
                o.on_short = draw(st.sampled_from(["downsize", "empty"]))
        elif draw(st.booleans()):
            o.on_short = draw(st.sampled_from(["error", "downsize", "empty"]))
    batch = Batch("rows", leaves, group_attrs, spec)
    return batch, o


def render_spec(draw, leaves):
    """The spec of `leaves`: explicit leaves, with groups whose members all take the default written as
    `"*": null`, and groups of one explicit leaf sometimes written as that leaf (tree prefix)."""
    spec = {}
    by_group = {}
    for l in leaves:
        by_group.setdefault(l.path.rsplit("/", 1)[0], []).append(l)
    for l in leaves:
        set_spec(spec, l.path, l.spec)
    # `"*"` for the members of a group that take the default (null); only where no subgroup is among them
    for gp, ls in by_group.items():
        node = spec
        for p in gp.strip("/").split("/") if gp else []:
            node = node[p]
        defaults = [l for l in ls if l.spec is None]
        if defaults and draw(st.booleans()):
            for l in defaults:
                del node[l.path.rsplit("/", 1)[1]]
            node["*"] = None
    # tree prefix: a group holding exactly one dataset (and no subgroup) given that dataset's leaf
    for gp, ls in by_group.items():
        if not gp or len(ls) != 1 or any(g.startswith(gp + "/") for g in by_group):
            continue
        l = ls[0]
        if l.role != "split" or l.seq_axis is not None or not draw(st.booleans()):
            continue
        parts = gp.strip("/").split("/")
        node = spec
        for p in parts[:-1]:
            node = node[p]
        node[parts[-1]] = l.axis if l.spec is not None else None
    return spec


# ---------------------------------------------------------------------------------------------- packed batches

OFFSET_CODES = ["<i4", ">i4", "<i8", ">u8", "<u2", "u1", "<i2", ">u4"]


@st.composite
def packed_cases(draw, jobs=True):
    """A packed batch (offsets, token-level and per-sequence leaves, derived values) and options the docs
    accept for it."""
    dp = draw(st.sampled_from([1, 1, 2]))
    cp = draw(st.sampled_from([1, 1, 2, 3]))
    cp_pad = cp > 1 and draw(st.booleans())
    unit = 2 * cp if cp > 1 and not cp_pad else 1
    by_size = draw(st.booleans())
    n_seq = draw(st.integers(1 if by_size else 0, 9))
    if by_size:
        n_seq = dp * max(1, n_seq // dp)   # every rank S/D sequences
    lengths = [unit * draw(st.integers(0, 5)) for _ in range(n_seq)]
    two = draw(st.booleans())
    lengths_k = [unit * draw(st.integers(0, 4)) for _ in range(n_seq)] if two else None
    o = Options(dp=dp, cp=cp, cp_pad=cp_pad)
    if jobs:
        o.jobs = draw(st.sampled_from([1, 1, 2, 3]))
    if dp > 1 or cp > 1:
        o.layout = draw(st.sampled_from([None, None, "per-rank"])) if dp > 1 else None
    o.balance = draw(st.sampled_from([None, "tokens", "attention", "sequences"]))
    if by_size:
        o.mbs = draw(st.integers(1, 4))
        o.drop_last = draw(st.booleans())
        if o.drop_last:
            assume(n_seq // (o.mbs * dp) >= 1)
    else:
        o.n = draw(st.integers(1, 4))
        per_rank = n_seq // dp
        if per_rank < o.n:
            o.on_short = "empty" if per_rank == 0 else draw(st.sampled_from(["downsize", "empty"]))
        elif draw(st.booleans()):
            o.on_short = draw(st.sampled_from(["error", "downsize", "empty"]))

    leaves, group_attrs, derived_attrs = [], {}, []
    offs_dtype = np.dtype(draw(st.sampled_from(OFFSET_CODES)))
    offsets = {"/cu_seqlens": lengths}
    leaves.append(Leaf("/cu_seqlens", offs_dtype, (n_seq + 1,), "offsets", spec="offsets",
                       storage=draw(storages((n_seq + 1,), offs_dtype, 0)),
                       data=np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(offs_dtype)))
    if two:
        offsets["/k/cu_seqlens_k"] = lengths_k
        leaves.append(Leaf("/k/cu_seqlens_k", np.dtype("<i8"), (n_seq + 1,), "offsets", spec="offsets",
                           data=np.concatenate([[0], np.cumsum(lengths_k, dtype=np.int64)]).astype("<i8")))
    names = iter(["tokens", "labels", "hidden", "mask", "keys"])
    for k in range(draw(st.integers(1, 3))):
        on = draw(st.sampled_from(sorted(offsets)))
        tot = sum(offsets[on])
        if cp_pad:
            dtype = draw(st.one_of(numeric_dtypes(), st.just(np.dtype(bool))))
        else:
            dtype = draw(any_dtypes())
        rank = draw(st.sampled_from([1, 1, 2]))
        axis = draw(st.integers(0, rank - 1))
        shape = [draw(st.integers(1, 2)) for _ in range(rank)]
        shape[axis] = tot
        shape = tuple(shape)
        leaf_spec = {"packed": on}
        if axis != 0 or draw(st.booleans()):
            leaf_spec["axis"] = draw(st.sampled_from([axis, axis - rank]))
        pad = None
        if cp_pad and draw(st.booleans()):
            if dtype.kind == "b":
                pad = False
            elif dtype.kind == "f":
                pad = draw(st.sampled_from([-1.5, 0.25, 7.0]))
            else:
                info = np.iinfo(dtype)
                pad = draw(st.integers(max(info.min, -200), min(info.max, 200)))
            leaf_spec["pad"] = pad
        gp = draw(st.sampled_from(["", "/g"]))
        leaves.append(Leaf(f"{gp}/{next(names)}", dtype, shape, "packed", axis=axis, spec=leaf_spec, offsets=on,
                           storage=draw(storages(shape, dtype, axis)), attrs=draw(attr_dicts()),
                           seed=draw(st.integers(0, 2**16)), pad=pad))
    for name in ["doc_ids", "doc_text"][:draw(st.integers(0, 2))]:
        dtype = draw(any_dtypes())
        rank = draw(st.sampled_from([1, 1, 2]))
        axis = draw(st.integers(0, rank - 1))
        shape = [draw(st.integers(1, 2)) for _ in range(rank)]
        shape[axis] = n_seq
        shape = tuple(shape)
        leaf_spec = {"per_sequence": "/cu_seqlens"}
        if axis != 0 or draw(st.booleans()):
            leaf_spec["axis"] = axis
        leaves.append(Leaf(f"/{name}", dtype, shape, "per_sequence", axis=axis, spec=leaf_spec,
                           offsets="/cu_seqlens", storage=draw(storages(shape, dtype, axis)),
                           seed=draw(st.integers(0, 2**16))))
    if draw(st.booleans()):
        dt = np.dtype(draw(st.sampled_from(["<i4", ">i8", "<u2", ">u4"])))
        leaves.append(Leaf("/max_seqlen", dt, (), "derived", spec={"max_seqlen": "/cu_seqlens"},
                           offsets="/cu_seqlens", derived="max_seqlen",
                           data=np.array(max(lengths) if lengths else 0, dtype=dt)))
    if draw(st.booleans()):
        dt = np.dtype(draw(st.sampled_from(["<i8", ">i4", "<u4"])))
        derived_attrs.append(("/", "num_tokens", "num_tokens", "/cu_seqlens", dt))
    if draw(st.booleans()):
        leaves.append(Leaf("/temperature", np.dtype("<f4"), (), "replicate", spec="replicate",
                           seed=draw(st.integers(0, 99))))
    if draw(st.booleans()):
        group_attrs["/"] = draw(attr_dicts())
    spec = {}
    for l in leaves:
        set_spec(spec, l.path, l.spec)
    for gp, name, kind, on, dt in derived_attrs:
        spec["@" + name] = {kind: on}
    return Batch("packed", leaves, group_attrs, spec, lengths=offsets, derived_attrs=derived_attrs), o
