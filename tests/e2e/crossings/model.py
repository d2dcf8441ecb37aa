"""An independent model of microbatch, written from docs/guide.md and docs/behavior.md: for a batch, spec and
options, which files a split writes, what each holds (rows, sequences, context-parallel stripes, offsets,
padded offsets, derived values), the manifest's per-file rows, and the merged file; and what merge's
reducers give. It reads the input only through h5py and computes with numpy and Python integers."""
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np


# ---------------------------------------------------------------------------------------------- shared

def array_split_bounds(length, parts):
    """numpy.array_split: the first length mod parts pieces get floor+1 rows."""
    q, r = divmod(length, parts)
    bounds, a = [], 0
    for i in range(parts):
        b = a + q + (1 if i < r else 0)
        bounds.append((a, b))
        a = b
    return bounds


def size_bounds(length, m):
    """torch.split: pieces of m, the last shorter."""
    return [(a, min(a + m, length)) for a in range(0, length, m)] or [(0, 0)]


def zigzag(length, c, r):
    """Positions of a sequence of `length` that CP rank r of c holds: stripes r and 2c-1-r of 2c."""
    s = length // (2 * c)
    return list(range(r * s, (r + 1) * s)) + list(range((2 * c - 1 - r) * s, (2 * c - r) * s))


@dataclass
class OutFile:
    name: str
    microbatch: int
    rank: object = None      # DP rank (per-rank layout)
    cp_rank: object = None
    rows: dict = field(default_factory=dict)   # rows family: leaf path -> source rows along its split axis
    seqs: list = field(default_factory=list)   # packed family: the file's sequences, in order
    cells: list = field(default_factory=list)  # default layout: each DP rank's count of them, in rank order


def file_name(i, rank=None, cp_rank=None):
    name = f"microbatch-{i:05d}.h5"
    if cp_rank is not None:
        name = f"cp-{cp_rank:05d}-" + name
    if rank is not None:
        name = f"rank-{rank:05d}-" + name
    return name


def layout_files(n_micro, o, per_microbatch_cells):
    """The files, in glob order: one per microbatch, per (rank, microbatch) with --layout per-rank, each
    times the CP ranks. `per_microbatch_cells(i, rank)` fills a file's content (rank None: every rank)."""
    files = []
    per_rank = o.layout == "per-rank"
    ranks = range(o.dp) if per_rank else [None]
    cps = range(o.cp) if o.cp > 1 else [None]
    for d in ranks:
        for r in cps:
            for i in range(n_micro):
                f = OutFile(file_name(i, d, r), i, d, r)
                per_microbatch_cells(f, i, d)
                files.append(f)
    return sorted(files, key=lambda f: f.name)


class Refused(Exception):
    """The docs say this split is refused, with this exit status."""

    def __init__(self, status, why):
        super().__init__(why)
        self.status = status


# ---------------------------------------------------------------------------------------------- rows family

def row_plan(batch, o):
    """The files of a split of a rows batch, each with every split leaf's source rows; and the number of rows
    of each split leaf the merge gives back (a prefix under --drop-last)."""
    splits = [l for l in batch.leaves if l.role == "split"]
    d = o.dp
    for l in splits:
        if l.shape[l.axis] % d:
            raise Refused(1, f"{l.path}: length not divisible by the dp degree")
    kept = {l.path: l.shape[l.axis] for l in splits}
    if o.mbs is not None:
        lengths = {l.shape[l.axis] for l in splits}
        if len(lengths) != 1:
            raise Refused(1, "--micro-batch-size needs equal split lengths")
        length = lengths.pop()
        if o.drop_last:
            length = length // (o.mbs * d) * o.mbs * d
            kept = {p: length for p in kept}
        pieces = {l.path: size_bounds(length // d, o.mbs) for l in splits}
    else:
        n = o.n
        shortest = min(kept[p] // d for p in kept)
        if shortest < n:
            if (o.on_short or "error") == "error":
                raise Refused(1, "a split axis is shorter than N")
            if o.on_short == "downsize":
                n = shortest
        pieces = {l.path: array_split_bounds(kept[l.path] // d, n) for l in splits}
    n_micro = len(next(iter(pieces.values())))

    def source_rows(path, slice_, piece):
        length = kept[path]
        r = length // d
        a, b = pieces[path][piece]
        new = [slice_ * r + j for j in range(a, b)]
        if o.align:  # new row s*R + r is old row s + r*D
            return [(x // r) + (x % r) * d for x in new]
        return new

    def fill(f, i, rank):
        for l in splits:
            rows = []
            for s in ([rank] if rank is not None else range(d)):
                rows += source_rows(l.path, s, i)
            f.rows[l.path] = rows

    return layout_files(n_micro, o, fill), kept


def expected_row_leaf(leaf, data, f, o):
    """What file f holds of a split leaf whose input value is `data`."""
    out = np.take(data, np.array(f.rows[leaf.path], dtype=np.int64), axis=leaf.axis)
    if leaf.seq_axis is not None and o.cp > 1:
        out = np.take(out, np.array(zigzag(leaf.shape[leaf.seq_axis], o.cp, f.cp_rank), dtype=np.int64),
                      axis=leaf.seq_axis)
    return out


# ---------------------------------------------------------------------------------------------- packed family

def partition_best(weights, parts):
    """The smallest possible largest sum of `parts` contiguous runs (empty runs allowed), exactly."""
    s = len(weights)
    prefix = [0]
    for w in weights:
        prefix.append(prefix[-1] + w)
    inf = float("inf")
    best = [[inf] * (s + 1) for _ in range(parts + 1)]
    best[0][0] = 0
    for k in range(1, parts + 1):
        for j in range(s + 1):
            best[k][j] = min(max(best[k - 1][i], prefix[j] - prefix[i]) for i in range(j + 1))
    return best[parts][s]


@dataclass
class PackedPlan:
    cells: list            # K = D*N cells, rank-major, each (first, end) of sequences
    n_micro: int
    kept: int              # sequences the merge gives back (a prefix under --drop-last)
    determined: bool       # cells known exactly (else: any optimal partition; `best` is its largest)
    weights: list = None
    best: object = None


def packed_plan(batch, o):
    s = len(batch.lengths["/cu_seqlens"])
    d = o.dp
    if o.mbs is not None:
        if s % d:
            raise Refused(1, "S not divisible by the dp degree")
        kept = s // (o.mbs * d) * o.mbs * d if o.drop_last else s
        per = kept // d
        cells = []
        for r in range(d):
            cells += [(r * per + a, r * per + b) for a, b in size_bounds(per, o.mbs)]
        return PackedPlan(cells, len(cells) // d, kept, True)
    n = o.n
    if s // d < n:
        if (o.on_short or "error") == "error":
            raise Refused(1, "fewer sequences per rank than N")
        if o.on_short == "downsize":
            n = s // d
    k = d * n
    if o.balance == "sequences":
        return PackedPlan(array_split_bounds(s, k), n, s, True)
    lens = [sum(batch.lengths[on][i] for on in batch.lengths) for i in range(s)]
    if o.balance == "attention":
        weights = [sum(L * (L + 1) // 2 for L in (batch.lengths[on][i] for on in batch.lengths)) for i in range(s)]
    else:
        weights = lens
    return PackedPlan(None, n, s, False, weights, partition_best(weights, k))


def check_cells(plan, runs, o):
    """The manifest's runs, when the docs leave the choice among optimal partitions: contiguous, rank-major,
    covering every sequence, D*N of them, the largest as small as it can be. Returns the cells."""
    if plan.determined:
        assert [tuple(r) for r in runs] == plan.cells, (runs, plan.cells)
        return plan.cells
    cells = [tuple(r) for r in runs]
    assert len(cells) == o.dp * plan.n_micro, (cells, plan.n_micro)
    assert cells[0][0] == 0 and cells[-1][1] == len(plan.weights), cells
    assert all(a <= b for a, b in cells) and all(cells[i][1] == cells[i + 1][0] for i in range(len(cells) - 1)), cells
    largest = max(sum(plan.weights[a:b]) for a, b in cells)
    assert largest == plan.best, f"largest cell weighs {largest}, the optimum is {plan.best}: {cells}"
    return cells


def packed_files(plan, cells, o):
    def fill(f, i, rank):
        for d in ([rank] if rank is not None else range(o.dp)):
            a, b = cells[d * plan.n_micro + i]
            f.seqs += list(range(a, b))
            if rank is None:
                f.cells.append(b - a)
    return layout_files(plan.n_micro, o, fill)


def cp_positions(length, o, r):
    """(positions of the (padded) sequence the file holds, how many of them are real tokens, padded length
    share) for CP rank r."""
    if o.cp == 1:
        return list(range(length)), length, length
    if o.cp_pad:
        padded = -(-length // (2 * o.cp)) * 2 * o.cp
        pos = zigzag(padded, o.cp, r)
        return pos, sum(p < length for p in pos), padded // o.cp
    return zigzag(length, o.cp, r), length // o.cp, length // o.cp


def rank_bounds(o):
    """Whether files hold NAME_dp_bounds beside each offsets dataset NAME (guide.md, Rank bounds)."""
    return o.dp > 1 and o.layout != "per-rank"


def twins(batch, o):
    """The datasets a packed split adds beside each offsets dataset (guide.md)."""
    return [on + "_padded" for on in batch.lengths if o.cp_pad] + \
        [on + "_dp_bounds" for on in batch.lengths if rank_bounds(o)]


def expected_packed(batch, f, o, inputs):
    """Every dataset and derived attribute file f holds: {path: array}, and {(group, attr): value}."""
    out, attrs = {}, {}
    real_offsets = {}
    for on, lengths in batch.lengths.items():
        starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
        rows, pads, real, padded = [], [], [0], [0]
        for sq in f.seqs:
            pos, n_real, share = cp_positions(lengths[sq], o, f.cp_rank)
            for p in pos:
                rows.append(int(starts[sq]) + p if p < lengths[sq] else 0)
                pads.append(p >= lengths[sq])
            real.append(real[-1] + n_real)
            padded.append(padded[-1] + share)
        real_offsets[on] = real
        dt = inputs[on].dtype
        out[on] = np.array(real, dtype=np.int64).astype(dt)
        if o.cp_pad:
            out[on + "_padded"] = np.array(padded, dtype=np.int64).astype(dt)
        if rank_bounds(o):  # where each DP rank's sequences begin and end in the file
            out[on + "_dp_bounds"] = np.concatenate([[0], np.cumsum(f.cells, dtype=np.int64)]).astype(dt)
        for l in batch.leaves:
            if l.role == "packed" and l.offsets == on:
                v = np.take(inputs[l.path], np.array(rows, dtype=np.int64), axis=l.axis)
                mask = np.array(pads, dtype=bool)
                if mask.any():
                    idx = [slice(None)] * v.ndim
                    idx[l.axis] = mask
                    v[tuple(idx)] = l.pad if l.pad is not None else 0
                out[l.path] = v
    for l in batch.leaves:
        if l.role == "per_sequence":
            out[l.path] = np.take(inputs[l.path], np.array(f.seqs, dtype=np.int64), axis=l.axis)
        elif l.role == "derived":
            out[l.path] = np.array(derived_value(l.derived, real_offsets[l.offsets]), dtype=l.dtype)
        elif l.role in ("replicate", "null"):
            out[l.path] = inputs[l.path]
    for gp, name, kind, on, dt in batch.derived_attrs:
        attrs[(gp, name)] = np.array(derived_value(kind, real_offsets[on]), dtype=dt)
    return out, attrs


def derived_value(kind, offsets):
    if kind == "max_seqlen":
        return max((b - a for a, b in zip(offsets[:-1], offsets[1:])), default=0)
    return offsets[-1] - offsets[0]


# ---------------------------------------------------------------------------------------------- reducers

def reduce_model(kind, values):
    """What merge writes for a leaf with {"reduce": kind} over per-input `values` (numpy arrays of one dtype),
    per behavior.md (Reducers, Stack); raises Refused(1) where the docs say it is an error."""
    dt = values[0].dtype
    if kind == "stack":
        return np.stack(values).astype(dt)  # np.stack may give native byte order
    if dt.kind in "iu":
        shape = values[0].shape
        flat = [[int(x) for x in np.ravel(v)] for v in values]   # Python integers: exact
        if kind in ("sum", "mean"):
            totals = [sum(col) for col in zip(*flat)]
            if kind == "sum":
                info = np.iinfo(dt)
                if any(t < info.min or t > info.max for t in totals):
                    raise Refused(1, "integer sum overflows its dtype")
                result = totals
            else:  # the exact mean, rounded to nearest, ties to even
                result = [round(Fraction(t, len(values))) for t in totals]
            return np.array(result, dtype=dt).reshape(shape)
        fold = np.minimum if kind == "min" else np.maximum
        acc = values[0]
        for v in values[1:]:
            acc = fold(acc, v)
        return np.asarray(acc).astype(dt)
    if kind in ("sum", "mean"):
        acc = values[0].astype("f8")
        for v in values[1:]:
            acc = acc + v.astype("f8")
        if kind == "mean":
            acc = acc / len(values)
        with np.errstate(over="ignore"):
            return np.asarray(acc).astype(dt)
    fold = np.minimum if kind == "min" else np.maximum
    acc = values[0]
    for v in values[1:]:
        acc = fold(acc, v)
    return np.asarray(acc).astype(dt)
