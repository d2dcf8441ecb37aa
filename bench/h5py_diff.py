#!/usr/bin/python3
"""The h5py + numpy counterpart of `microbatch diff A B` for bench/bench.py's
`diff` workload: the same tree, dtypes, shapes, attributes, and values bit for
bit, read in blocks of about 32 MiB a side. Exit 0 when the same, 1 when not.

    h5py_diff.py A B"""
import sys

import h5py
import numpy as np

BLOCK = 32 << 20


def same_values(x, y):
    if x.dtype.kind == "O":
        return bool(np.array_equal(x, y))
    return bool(np.array_equal(np.ascontiguousarray(x).view(np.uint8), np.ascontiguousarray(y).view(np.uint8)))


def same_attrs(a, b):
    if sorted(a.attrs) != sorted(b.attrs):
        return False
    return all(np.asarray(a.attrs[k]).dtype == np.asarray(b.attrs[k]).dtype
               and same_values(np.atleast_1d(a.attrs[k]), np.atleast_1d(b.attrs[k])) for k in a.attrs)


def same_dataset(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.shape == ():
        return same_values(np.atleast_1d(a[()]), np.atleast_1d(b[()]))
    if a.size == 0:
        return True
    row = max(a.dtype.itemsize * (a.size // a.shape[0]), 1)
    step = max(BLOCK // row, 1)
    return all(same_values(a[r:r + step], b[r:r + step]) for r in range(0, a.shape[0], step))


def same(a, b):
    if not same_attrs(a, b):
        return False
    if isinstance(a, h5py.Dataset):
        return isinstance(b, h5py.Dataset) and same_dataset(a, b)
    if not isinstance(b, h5py.Group) or sorted(a) != sorted(b):
        return False
    return all(same(a[k], b[k]) for k in a)


def main():
    with h5py.File(sys.argv[1], "r") as a, h5py.File(sys.argv[2], "r") as b:
        sys.exit(0 if same(a, b) else 1)


if __name__ == "__main__":
    main()
