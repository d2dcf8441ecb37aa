"""The one strict comparison of two HDF5 files that the tests and scripts judge with.

h5diff alone cannot be trusted with its exit status: it exits 0 when objects are "not comparable" (int32
against float64, other shapes, fixed against variable-length strings) and when their storage types differ
but their values convert equal. `h5diff(a, b)` is 0 only when `h5diff -v` compared every object and found no
difference, and every dataset and attribute has the same stored datatype to the byte (h5diff compares
values only); two empty datasets, which h5diff does not compare, are equal when h5py sees the same shape and
dtype. As a script (`h5compare.py A B`) it exits with that status."""
import re
import subprocess
import sys

import h5py

# h5diff -v prints this for a dataset that has no stored data (a zero-length dimension, a null dataspace, or
# storage never written, which reads as the fill value) and compares nothing; the helper compares the two
# with h5py instead: shape, dtype, and the values they read as.
_EMPTY = re.compile(r"^Not comparable: <(.*)> or <(.*)> is an empty dataset$")
# The one warning that says nothing was skipped: a virtual dataset's values are compared as any others.
_VIRTUAL = re.compile(r"^Warning: <.*> or <.*> is a virtual dataset$")


def h5diff(a, b, *options):
    """0 when `h5diff -v` compared every object of `a` and `b` and found no difference, a non-zero status
    otherwise. Strict where h5diff is not: h5diff exits 0 when objects are "not comparable" (int32 against
    float64, other shapes, fixed against variable-length strings) and when their storage types differ but
    their values convert equal. Here any such line is a difference; two empty datasets are equal when h5py
    sees the same shape and dtype. Failures print h5diff's report."""
    proc = subprocess.run(["h5diff", "-v", *options, str(a), str(b)], capture_output=True, text=True,
                          errors="surrogateescape")  # names need not be UTF-8
    if proc.returncode != 0:
        _show(proc.stdout[-4000:], proc.stderr[-2000:])
        return proc.returncode
    lines = [l.strip() for l in proc.stdout.splitlines() if l.strip()]
    bad = [l for l in lines if l.startswith("Warning:") and not _VIRTUAL.match(l) or
           (l.startswith("Not comparable:") and not _EMPTY.match(l))]
    bad += [f"empty datasets differ: {p}" for p in _empty_paths(lines) if not _same_empty(a, b, p)]
    if "0 differences found" not in lines:
        bad.append("h5diff reported no comparison")
    if not bad:
        bad += _type_differences(a, b)
    if bad:
        _show(f"h5diff {a} {b}:", *bad, sep="\n  ")
        return 1
    return 0


def _show(*texts, sep=" "):
    print(*(t.encode(errors="backslashreplace").decode() for t in texts), sep=sep)


def _type_differences(a, b):
    """Datasets and attributes whose stored datatypes differ, described to the byte (H5Tencode). h5diff
    compares values only, and libhdf5 1.10 calls variable-length strings of either character set equal, so
    an ASCII `str` that came back UTF-8 passes both. Names are bytes throughout: they need not be UTF-8."""
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        found = []
        for name in _object_names(fa):
            x, y = h5py.h5o.open(fa.id, name), h5py.h5o.open(fb.id, name)
            shown = name.decode(errors="backslashreplace")
            if isinstance(x, h5py.h5d.DatasetID) and x.get_type().encode() != y.get_type().encode():
                found.append(f"datatypes differ: {shown}")
            for key in _attribute_names(x):
                if h5py.h5a.open(x, key).get_type().encode() != h5py.h5a.open(y, key).get_type().encode():
                    found.append(f"datatypes differ: attribute {key.decode(errors='backslashreplace')} of {shown}")
        return found


def _object_names(f):
    names = [b"."]
    h5py.h5o.visit(f.id, names.append)  # every object once, by one of its names
    return names


def _attribute_names(obj):
    names = []
    h5py.h5a.iterate(obj, names.append)
    return names


def _empty_paths(lines):
    return [m.group(1) for m in map(_EMPTY.match, lines) if m]


def _same_empty(a, b, path):
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        name = path.encode(errors="surrogateescape")
        x, y = fa[name], fb[name]
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.shape is None:  # a null dataspace: no values
            return True
        p, q = x[()], y[()]
        if x.dtype.kind == "O":  # variable-length: by content
            return p.tolist() == q.tolist()
        return p.tobytes() == q.tobytes()  # by bits, so NaN equals NaN and -0.0 differs from 0.0

if __name__ == "__main__":
    sys.exit(h5diff(*sys.argv[1:]))
