"""microbatch diff: two files made by h5py, the same or not in one way each; the exit status, the path and what
the line says are checked, and --json against its schema."""
import os
import shutil
import struct
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import BINARY, ENV, assert_one_line_error, held_run, run, summary


def make(path, build):
    with h5py.File(path, "w") as f:
        build(f)
    return path


def base(f):
    f["x"] = np.arange(24, dtype=np.int64).reshape(6, 4)
    f["y"] = np.linspace(0, 1, 7, dtype=np.float32)
    f["g/s"] = np.int32(5)
    f["g"].attrs["units"] = "m"
    f.attrs["note"] = np.array([1.5, 2.5])


def pair(tmp_path, change_b, change_a=lambda f: None):
    """Files a and b: the base tree, then one change each."""
    a = make(tmp_path / "a.h5", lambda f: (base(f), change_a(f)))
    b = make(tmp_path / "b.h5", lambda f: (base(f), change_b(f)))
    return a, b


def differences(res):
    """The finding lines on stdout."""
    return res.out.splitlines()


def test_a_copy_is_the_same(tmp_path):
    a = make(tmp_path / "a.h5", base)
    b = tmp_path / "b.h5"
    shutil.copy(a, b)
    res = run("diff", a, b, check=0)
    assert res.out == ""
    assert "are the same" in res.err


def test_the_same_tree_written_apart_stored_otherwise_is_the_same_unless_storage_is_asked(tmp_path):
    a = make(tmp_path / "a.h5", lambda f: f.create_dataset("x", data=np.arange(1000.0)))
    b = make(tmp_path / "b.h5", lambda f: f.create_dataset("x", data=np.arange(1000.0), chunks=(64,),
                                                            compression="gzip"))
    run("diff", a, b, check=0)
    res = run("diff", "--storage", a, b, check=1)
    assert differences(res) == ["/x: layout contiguous vs chunked"]


@pytest.mark.parametrize("change, line", [
    (lambda f: f.create_dataset("z", data=[1]), "/z: only in {b}"),
    (lambda f: (f.__delitem__("y"), f.create_group("y")), "/y: a dataset in {a}, a group in {b}"),
    (lambda f: (f.__delitem__("x"), f.create_dataset("x", data=np.arange(24, dtype=np.int32).reshape(6, 4))),
     "/x: dtype int64 vs int32"),
    (lambda f: (f.__delitem__("x"), f.create_dataset("x", data=np.arange(24, dtype=np.int64).reshape(4, 6))),
     "/x: shape [6, 4] vs [4, 6]"),
    (lambda f: f["x"].__setitem__((3, 1), -1), "/x: at [3, 1]: 13 vs -1"),
    (lambda f: f["g/s"].write_direct(np.array(6, dtype=np.int32)), "/g/s: 5 vs 6"),
    (lambda f: f["g"].attrs.__delitem__("units"), "/g@units: only in {a}"),
    (lambda f: f.attrs.__setitem__("note", np.array([1.5, 3.5])), "/@note: [1.5, 2.5] vs [1.5, 3.5]"),
    (lambda f: f.attrs.__setitem__("note", np.array([1.5, 2.5], dtype=np.float32)),
     "/@note: dtype float64 vs float32"),
    # The same text in another character set: libhdf5 1.10 takes the two types for equal.
    (lambda f: f["g"].attrs.create("units", "m", dtype=h5py.string_dtype("ascii")),
     "/g@units: dtype str vs bytes (vlen ascii)"),
], ids=["missing", "kind", "dtype", "shape", "value", "scalar", "attribute-missing", "attribute-value",
        "attribute-dtype", "attribute-charset"])
def test_each_difference_is_one_line_naming_its_path(tmp_path, change, line):
    a, b = pair(tmp_path, change)
    res = run("diff", a, b, check=1)
    assert differences(res) == [line.format(a=a, b=b)], res
    assert_one_line_error(res, 1, f"{a} and {b} differ: 1 difference")
    # The other way round: the same path, the sides swapped.
    back = run("diff", b, a, check=1)
    assert [l.split(":")[0] for l in differences(back)] == [line.split(":")[0]], back


def nan(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


@pytest.mark.parametrize("va, vb, same", [
    (nan(0x7FF8000000000000), nan(0x7FF8000000000000), True),   # the same NaN
    (nan(0x7FF8000000000000), nan(0x7FF8000000000001), False),  # another payload: other bits
    (0.0, -0.0, False),                                          # equal as numbers, not bit for bit
    (1.0, 1.0 + 2 ** -52, False),
], ids=["same-nan", "other-nan", "signed-zero", "last-bit"])
def test_floats_are_compared_bit_for_bit(tmp_path, va, vb, same):
    def with_value(v):
        def build(f):
            data = np.zeros(5)
            data[2] = v
            f["v"] = data
        return build
    a = make(tmp_path / "a.h5", with_value(va))
    b = make(tmp_path / "b.h5", with_value(vb))
    res = run("diff", a, b, check=0 if same else 1)
    if not same:
        assert differences(res)[0].startswith("/v: at [2]: "), res


def test_strings_of_variable_length_compared_by_value(tmp_path):
    def words(*w):
        return lambda f: f.create_dataset("w", data=list(w), dtype=h5py.string_dtype())
    a = make(tmp_path / "a.h5", words("alpha", "beta", "gamma"))
    b = make(tmp_path / "b.h5", words("alpha", "beta", "gamma"))
    c = make(tmp_path / "c.h5", words("alpha", "betA", "gamma"))
    run("diff", a, b, check=0)
    res = run("diff", a, c, check=1)
    assert differences(res) == ["/w: at [1]: 'beta' vs 'betA'"], res


@pytest.mark.parametrize("build_b, line", [
    (lambda f: f.create_dataset("x", data=np.arange(6.0), chunks=(3,), maxshape=(None,)),
     "/x: max dims [6] vs [unlimited]"),
    (lambda f: f.create_dataset("x", data=np.arange(6.0), chunks=(3,), compression="gzip"),
     "/x: filters none vs 1(4)"),  # the filter id (1: deflate) and its parameters (level 4)
    (lambda f: f.create_dataset("x", data=np.arange(6.0), chunks=(2,)), "/x: chunks [3] vs [2]"),
], ids=["max-dims", "filters", "chunks"])
def test_storage_differences_are_named_when_asked(tmp_path, build_b, line):
    a = make(tmp_path / "a.h5", lambda f: f.create_dataset("x", data=np.arange(6.0), chunks=(3,)))
    b = make(tmp_path / "b.h5", build_b)
    run("diff", a, b, check=0)  # the same values
    res = run("diff", "--storage", a, b, check=1)
    assert differences(res) == [line], res


def test_a_virtual_dataset_and_named_datatypes_are_compared_as_what_they_are(tmp_path):
    def virtual(f):
        f["src"] = np.arange(4.0)
        layout = h5py.VirtualLayout(shape=(4,), dtype="f8")
        layout[:] = h5py.VirtualSource(f["src"])
        f.create_virtual_dataset("x", layout)
        f["t"] = np.dtype("int32")  # a named (committed) datatype
    a = make(tmp_path / "a.h5", virtual)
    b = make(tmp_path / "b.h5", lambda f: (f.create_dataset("src", data=np.arange(4.0)),
                                           f.create_dataset("x", data=np.arange(4.0)),
                                           f.__setitem__("t", np.dtype("int64"))))
    res = run("diff", "--storage", a, b, check=1)
    assert differences(res) == ["/t: dtype int32 vs int64", "/x: layout virtual vs contiguous"], res
    c = make(tmp_path / "c.h5", lambda f: (f.create_dataset("src", data=np.arange(4.0)),
                                           f.create_dataset("x", data=np.arange(4.0)),
                                           f.create_dataset("t", data=np.int32(0))))
    res = run("diff", a, c, check=1)
    assert differences(res)[0] == f"/t: a named datatype in {a}, a dataset in {c}", res


def test_links_compared_by_what_they_hold(tmp_path):
    def links(target, soft=True):
        def build(f):
            f["d"] = np.arange(3)
            f["e"] = np.arange(3)
            f["l"] = h5py.SoftLink(target) if soft else f[target]
        return build
    a = make(tmp_path / "a.h5", links("/d"))
    run("diff", a, make(tmp_path / "same.h5", links("/d")), check=0)
    res = run("diff", a, make(tmp_path / "other.h5", links("/e")), check=1)
    assert differences(res) == ["/l: a soft link to /d vs to /e"], res
    res = run("diff", a, make(tmp_path / "hard.h5", links("/d", soft=False)), check=1)
    assert differences(res)[0].startswith("/l: a soft link in "), res
    external = make(tmp_path / "external.h5", lambda f: (f.create_dataset("d", data=np.arange(3)),
                                                         f.create_dataset("e", data=np.arange(3)),
                                                         f.__setitem__("l", h5py.ExternalLink("a.h5", "/d"))))
    res = run("diff", a, external, check=1)
    assert differences(res) == [f"/l: a soft link in {a}, an external link in {external}"], res


def test_one_object_with_two_names_is_not_two_equal_objects(tmp_path):
    def shared(f):
        f["d"] = np.arange(3)
        f["e"] = f["d"]  # a second hard link to the same dataset
    def apart(f):
        f["d"] = np.arange(3)
        f["e"] = np.arange(3)
    a = make(tmp_path / "a.h5", shared)
    run("diff", a, make(tmp_path / "a2.h5", shared), check=0)
    res = run("diff", a, make(tmp_path / "b.h5", apart), check=1)
    assert differences(res) == [f"/e: another name of /d in {a}, not in {tmp_path / 'b.h5'}"], res


def chunked(values, **kwargs):
    return lambda f: f.create_dataset("c", data=values, chunks=(1000, 8), **kwargs)


def test_chunks_stored_alike_compared_raw_and_a_difference_found_where_it_is(tmp_path):
    values = np.arange(40000 * 8, dtype=np.float64).reshape(40000, 8)
    a = make(tmp_path / "a.h5", chunked(values, compression="gzip"))
    run("diff", "--storage", a, make(tmp_path / "same.h5", chunked(values, compression="gzip")), check=0)
    other = values.copy()
    other[23456, 5] = np.nan
    res = run("diff", a, make(tmp_path / "b.h5", chunked(other, compression="gzip")), check=1)
    assert differences(res) == ["/c: at [23456, 5]: 187653.0 vs nan"], res


def test_other_compression_of_the_same_values_is_the_same_but_not_stored_alike(tmp_path):
    values = np.arange(40000 * 8, dtype=np.int32).reshape(40000, 8)
    a = make(tmp_path / "a.h5", chunked(values, compression="gzip", compression_opts=1))
    b = make(tmp_path / "b.h5", chunked(values, compression="gzip", compression_opts=9, shuffle=True))
    run("diff", a, b, check=0)
    res = run("diff", "--storage", a, b, check=1)
    assert len(differences(res)) == 1 and differences(res)[0].startswith("/c: filters "), res


def test_values_past_the_first_block_are_compared(tmp_path):
    values = np.zeros(6_000_000, dtype=np.float64)  # 48 MB a side: more than one block of 32 MiB
    a = make(tmp_path / "a.h5", lambda f: f.create_dataset("v", data=values))
    values[5_999_999] = 1.0
    b = make(tmp_path / "b.h5", lambda f: f.create_dataset("v", data=values))
    res = run("diff", a, b, check=1)
    assert differences(res) == ["/v: at [5999999]: 0.0 vs 1.0"], res


# Runs argv[1:] as its child and prints its exit status and peak RSS (KiB). A child's ru_maxrss counts the
# pages of the process it was forked (or even vforked) from until it execs, so the count is taken by this
# small process, not by the test's, which holds numpy, h5py and the test's arrays.
PEAK_RSS = """import os, sys
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def peak_rss_mib(argv):
    """(exit status, peak RSS in MiB) of one run of `argv`."""
    out = subprocess.run([sys.executable, "-c", PEAK_RSS, *map(str, argv)], capture_output=True, text=True,
                         env=ENV, check=True).stdout.split()
    return int(out[-2]), int(out[-1]) / 1024


def test_a_chunk_larger_than_the_memory_budget_is_read_a_block_at_a_time(tmp_path):
    # One chunk of 48 MB a side, stored alike: read whole (stored and decoded), it would take about 120 MB
    # more than the same values stored contiguously, which are read in blocks of the budget.
    def pair_of(name, chunks):
        values = np.zeros(6_000_000, dtype=np.float64)
        a = make(tmp_path / f"{name}-a.h5", lambda f: f.create_dataset("v", data=values, chunks=chunks))
        values[-1] = 1.0
        return a, make(tmp_path / f"{name}-b.h5", lambda f: f.create_dataset("v", data=values, chunks=chunks))
    chunked, contiguous = pair_of("chunked", (6_000_000,)), pair_of("contiguous", None)
    assert differences(run("diff", *chunked, check=1)) == ["/v: at [5999999]: 0.0 vs 1.0"]
    code, peak = peak_rss_mib([BINARY, "diff", *chunked])
    code_contiguous, peak_contiguous = peak_rss_mib([BINARY, "diff", *contiguous])
    assert (code, code_contiguous) == (1, 1)
    assert peak < peak_contiguous + 16, f"peak RSS {peak:.0f} MiB, {peak_contiguous:.0f} MiB stored contiguously"


def many_differences(tmp_path, n):
    a = make(tmp_path / "a.h5", lambda f: [f.create_dataset(f"d{i:02}", data=[i]) for i in range(n)])
    b = make(tmp_path / "b.h5", lambda f: [f.create_dataset(f"d{i:02}", data=[i + 1]) for i in range(n)])
    return a, b


def test_limit_stops_at_n_and_says_so(tmp_path):
    a, b = many_differences(tmp_path, 15)
    res = run("diff", a, b, check=1)
    assert [l.split(":")[0] for l in differences(res)] == [f"/d{i:02}" for i in range(10)]
    assert_one_line_error(res, 1, "the first 10 differences shown", "--limit 0")
    assert len(differences(run("diff", "--limit", "3", a, b, check=1))) == 3
    res = run("diff", "--limit", "0", a, b, check=1)
    assert len(differences(res)) == 15
    assert_one_line_error(res, 1, "differ: 15 differences")


def test_json_report(tmp_path):
    a, b = many_differences(tmp_path, 3)
    report = summary(run("diff", "--json", "--limit", "2", a, b, check=1), "diff-report")
    assert (report["same"], report["complete"], report["storage"]) == (False, False, False)
    assert report["differences"] == [{"path": "/d00", "what": "values", "detail": "at [0]: 0 vs 1"},
                                     {"path": "/d01", "what": "values", "detail": "at [0]: 1 vs 2"}]
    report = summary(run("diff", "--json", "--storage", a, a, check=0), "diff-report")
    assert (report["same"], report["complete"], report["differences"]) == (True, True, [])
    assert report["objects"] == 4 and report["bytes"] == 3 * 8


def test_a_split_merged_back_is_the_same_as_its_input(tmp_path, batch):
    run("split", batch, "-n", "2", "-o", tmp_path / "parts", check=0)
    run("merge", tmp_path / "parts", "-o", tmp_path / "merged.h5", check=0)
    run("diff", batch, tmp_path / "merged.h5", check=0)


def test_inputs_that_are_not_there_or_not_hdf5(tmp_path):
    a = make(tmp_path / "a.h5", base)
    assert_one_line_error(run("diff", a, tmp_path / "none.h5"), 1, "none.h5")
    (tmp_path / "text.h5").write_text("not hdf5")
    assert_one_line_error(run("diff", tmp_path / "text.h5", a), 1, "text.h5")
    assert run("diff", a).code == 2
    assert run("diff", "--limit", "-1", a, a).code == 2


def test_a_file_changed_while_compared_gets_no_verdict(tmp_path):
    a = make(tmp_path / "a.h5", base)
    b = tmp_path / "b.h5"
    shutil.copy(a, b)

    def change(_):  # bytes written past the end: what a writer appending a dataset does first
        with open(b, "ab") as f:
            f.write(b"\0" * 4096)
    # Held as it closes a.h5, both walked: b.h5 changes before the verdict.
    res = held_run(tmp_path, [BINARY, "diff", a, b], change, close="a.h5")
    assert_one_line_error(res, 3, str(b), "changed while it was read")
    assert res.out == ""
