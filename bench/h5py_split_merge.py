#!/usr/bin/python3
"""The h5py + numpy script a user would write instead of microbatch: the
baseline of bench/bench.py. Same semantics for the benchmark workloads:
split every dataset on axis 0 with numpy.array_split, keep dtype, chunks,
compression and attributes (the datasets' and the root group's); merge
concatenates them back.

    h5py_split_merge.py split INPUT.h5 N OUTDIR
    h5py_split_merge.py merge OUTPUT.h5 DIR      # DIR's *.h5 files in numeric order
    h5py_split_merge.py merge OUTPUT.h5 FILE...  # the files in the order given

Split writes OUTDIR/mb-000000.h5 ... (at least six digits, so that up to a
million names sort by name as by number). Only one microbatch file is open at
a time: N can be larger than the open-file limit, and 64,000 paths on one
command line would be larger than ARG_MAX, hence merge's DIR form.
"""
import os
import re
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


def copy_attrs(src, dst):
    for k, v in src.attrs.items():
        dst.attrs[k] = v


def numeric_key(name):
    """mb-10.h5 after mb-9.h5, whatever the padding."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def input_files(args):
    if len(args) == 1 and os.path.isdir(args[0]):
        names = sorted((n for n in os.listdir(args[0]) if n.endswith(".h5")), key=numeric_key)
        return [os.path.join(args[0], n) for n in names]
    return args


def split(src, n, outdir):
    os.makedirs(outdir, exist_ok=True)
    width = max(6, len(str(n - 1)))
    with h5py.File(src, "r") as f:
        cuts = {}
        for name in datasets(f):
            ds = f[name]
            data = ds[()]  # the whole dataset in memory, as a plain script does
            cuts[name] = (ds, np.array_split(data, n) if data.ndim else [data] * n)
        for i in range(n):
            with h5py.File(os.path.join(outdir, f"mb-{i:0{width}d}.h5"), "w") as out:
                copy_attrs(f, out)
                for name, (ds, pieces) in cuts.items():
                    o = out.create_dataset(name, data=pieces[i], dtype=ds.dtype,
                                           **creation_kwargs(ds, pieces[i].shape))
                    copy_attrs(ds, o)


def merge(dst, files):
    with h5py.File(files[0], "r") as first:
        names = datasets(first)
        parts = {name: [] for name in names}
        for p in files:
            with h5py.File(p, "r") as f:
                for name in names:
                    parts[name].append(f[name][()])
        with h5py.File(dst, "w") as out:
            copy_attrs(first, out)
            for name in names:
                ds = first[name]
                data = np.concatenate(parts[name]) if ds.ndim else parts[name][0]
                o = out.create_dataset(name, data=data, dtype=ds.dtype, **creation_kwargs(ds, data.shape))
                copy_attrs(ds, o)


if __name__ == "__main__":
    if sys.argv[1] == "split":
        split(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        merge(sys.argv[2], input_files(sys.argv[3:]))
