"""The batch builders that several test files share (conftest imports them:
tests take them from conftest). Each writes one HDF5 file with h5py."""
import h5py
import numpy as np


def make_packed(path, lengths=None, *, offsets=None, offsets_name="cu_seqlens", offsets_dtype=np.int32,
                members=("tokens", "position_ids", "labels", "cu_seqlens", "seq_ids", "max_len"), first_token=1000,
                with_k=None, fill=None):
    """A packed batch: sequences of the given `lengths` back to back (or cut
    at the `offsets` given as values), its datasets `members` written in
    that order. A member is `offsets_name` (the offsets, in `offsets_dtype`)
    or one of
      tokens        int64 [T]: first_token, first_token + 1, ...
      position_ids  int32 [T]: each token's position in its sequence
      labels        int64 [2, T]: tokens on the last axis
      hidden        float32 [T, 3]: random (seed 2)
      seq_ids       strings [N]: "doc-0", "doc-1", ...
      doc_id, ids   int32 [N], int16 [N]: 0, 1, ...
      max_len       int32 scalar: the longest sequence (0 without any)
    `with_k` (lengths) adds a second offsets dataset, cu_seqlens_k (int64),
    last; `fill(f, offsets)` writes more before the file is closed.
    Returns the offsets."""
    if offsets is None:
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(offsets_dtype)
    else:
        offsets = np.array(offsets, dtype=offsets_dtype)
    lengths = [int(b) - int(a) for a, b in zip(offsets[:-1], offsets[1:])]  # exact for any integer dtype
    total, n = int(offsets[-1]), len(lengths)
    build = {
        "tokens": lambda: np.arange(total, dtype=np.int64) + first_token,
        "position_ids": lambda: np.concatenate([np.arange(k) for k in lengths]).astype(np.int32) if total else
        np.zeros(0, np.int32),
        "labels": lambda: np.stack([np.arange(total), -np.arange(total)]).astype(np.int64),
        "hidden": lambda: np.random.default_rng(2).random((total, 3)).astype(np.float32),
        "seq_ids": lambda: np.array([f"doc-{i}" for i in range(n)], dtype=h5py.string_dtype()),
        "doc_id": lambda: np.arange(n, dtype=np.int32),
        "ids": lambda: np.arange(n, dtype=np.int16),
        "max_len": lambda: np.int32(max(lengths) if n else 0),
        offsets_name: lambda: offsets,
    }
    with h5py.File(path, "w") as f:
        for name in members:
            f[name] = build[name]()
        if with_k is not None:
            f["cu_seqlens_k"] = np.concatenate([[0], np.cumsum(with_k)]).astype(np.int64)
        if fill is not None:
            fill(f, offsets)
    return offsets


# The spec of make_mixed_batch's file.
MIXED_SPEC = {"x": 0, "g": 0, "text": 0, "tok": {"packed": "/cu"}, "cu": "offsets"}


def make_mixed_batch(path, rows=120, groups=6, group_attrs=False, last_length=2):
    """A batch of every kind at once: a chunked gzip tensor whose chunks are
    not aligned with the cut, `groups` datasets in /g (each with attribute k
    if `group_attrs`), strings, and tokens /tok packed by /cu in `rows`
    sequences of 2 tokens, the last of `last_length`; returns `path`."""
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(2).standard_normal((rows, 64)).astype(np.float32),
                         chunks=(7, 64), compression="gzip")
        for k in range(groups):
            f[f"g/d{k}"] = np.arange(rows) + k
            if group_attrs:
                f[f"g/d{k}"].attrs["k"] = k
        f["text"] = np.array([f"t{i}" for i in range(rows)], dtype=h5py.string_dtype())
        cu = np.concatenate([[0], np.cumsum([2] * (rows - 1) + [last_length])])
        f["tok"] = np.arange(cu[-1])
        f["cu"] = cu
        f.attrs["step"] = 1
    return path


def make_layout_batch(path, length):
    """A batch for the layout tests: rows on axis 0 (ids, text) and on axis 1
    (cols), and a replicated scalar; returns `path`."""
    with h5py.File(path, "w") as f:
        f["ids"] = np.arange(length * 3, dtype=np.int64).reshape(length, 3)
        f["cols"] = np.arange(length * 2, dtype=np.float32).reshape(2, length)
        f["text"] = np.array([f"row {i}" for i in range(length)], dtype=h5py.string_dtype())
        f["scale"] = np.float64(2.5)
    return path
