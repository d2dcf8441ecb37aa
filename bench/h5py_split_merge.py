#!/usr/bin/python3
"""The h5py + numpy script a user would write instead of microbatch: the
baseline of bench/bench.py. Same semantics for the benchmark workloads:
split every dataset on axis 0 with numpy.array_split, keep dtype, chunks,
compression and attributes; merge concatenates them back.

    h5py_split_merge.py split INPUT.h5 N OUTDIR
    h5py_split_merge.py merge OUTPUT.h5 FILE...
"""
import os
import sys

import h5py
import numpy as np


def creation_kwargs(ds, shape):
    kw = {}
    if ds.chunks:
        kw["chunks"] = tuple(max(1, min(c, s)) if s else c for c, s in zip(ds.chunks, shape))
        kw["compression"] = ds.compression
        kw["compression_opts"] = ds.compression_opts
        kw["shuffle"] = ds.shuffle
    return kw


def datasets(f):
    out = []
    f.visititems(lambda name, obj: out.append(name) if isinstance(obj, h5py.Dataset) else None)
    return out


def split(src, n, outdir):
    os.makedirs(outdir, exist_ok=True)
    with h5py.File(src, "r") as f:
        names = datasets(f)
        outs = [h5py.File(os.path.join(outdir, f"mb-{i:05d}.h5"), "w") for i in range(n)]
        for name in names:
            ds = f[name]
            data = ds[()]  # the whole dataset in memory, as a plain script does
            for i, piece in enumerate(np.array_split(data, n) if data.ndim else [data] * n):
                o = outs[i].create_dataset(name, data=piece, dtype=ds.dtype, **creation_kwargs(ds, piece.shape))
                for k, v in ds.attrs.items():
                    o.attrs[k] = v
        for o in outs:
            o.close()


def merge(dst, files):
    ins = [h5py.File(p, "r") for p in files]
    with h5py.File(dst, "w") as out:
        for name in datasets(ins[0]):
            parts = [f[name][()] for f in ins]
            first = ins[0][name]
            data = np.concatenate(parts) if first.ndim else parts[0]
            o = out.create_dataset(name, data=data, dtype=first.dtype, **creation_kwargs(first, data.shape))
            for k, v in first.attrs.items():
                o.attrs[k] = v


if __name__ == "__main__":
    if sys.argv[1] == "split":
        split(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        merge(sys.argv[2], sys.argv[3:])
