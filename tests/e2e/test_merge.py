"""merge: reducers, exact equality checks, structure checks, and refusals
that name the path and both microbatches."""
import h5py
import numpy as np
import pytest

from conftest import assert_one_line_error, h5diff, run, write_spec


def write_outputs(tmp_path, n=3, **overrides):
    """Per-microbatch 'model outputs'; overrides[i] tweaks file i."""
    paths = []
    for i in range(n):
        p = tmp_path / f"out-{i}.h5"
        with h5py.File(p, "w") as f:
            f["logits"] = np.full((i + 1, 4), i, dtype=np.float32)
            f["loss"] = np.float32(1.0 + i)
            f["count"] = np.array([10 * i, 1], dtype=np.int32)
            f["meta/vocab"] = np.array(["a", "b"], dtype=h5py.string_dtype())
            f.attrs["tokens"] = np.int64(100 + i)
            f.attrs["step"] = 5
            f["meta"].attrs["peak"] = np.float64(i * 0.5)
            if f"f{i}" in overrides:
                overrides[f"f{i}"](f)
        paths.append(p)
    return paths


SPEC = {"@tokens": {"reduce": "sum"}, "logits": 0, "loss": {"reduce": "mean"},
        "count": {"reduce": "max"}, "meta": {"@peak": {"reduce": "min"}, "vocab": "replicate"}}


def test_reducers_and_concatenation(tmp_path):
    paths = write_outputs(tmp_path)
    spec = write_spec(tmp_path / "s.json", SPEC)
    run("merge", *paths, "-s", spec, "-o", tmp_path / "m.h5", check=0)
    with h5py.File(tmp_path / "m.h5") as m:
        assert m.attrs["tokens"] == 303 and m.attrs["tokens"].dtype == np.int64
        assert m["loss"][()] == np.float32(2.0) and m["loss"].dtype == np.float32
        assert list(m["count"][()]) == [20, 1]
        assert m["meta"].attrs["peak"] == 0.0
        assert np.array_equal(m["logits"][()], np.concatenate([np.full((i + 1, 4), i, np.float32) for i in range(3)]))
        assert m.attrs["step"] == 5


def test_integer_mean_rounds_half_to_even_and_sum_overflow_is_refused(tmp_path):
    def vals(v):
        return lambda f: (f.__delitem__("count"), f.__setitem__("count", np.array(v, dtype=np.int8)))
    paths = write_outputs(tmp_path, 2, f0=vals([1, 100, -3]), f1=vals([2, 100, 0]))
    spec = write_spec(tmp_path / "mean.json", {**SPEC, "count": {"reduce": "mean"}})
    run("merge", *paths, "-s", spec, "-o", tmp_path / "m.h5", check=0)
    with h5py.File(tmp_path / "m.h5") as m:
        assert list(m["count"][()]) == [2, 100, -2]  # 1.5 -> 2, 100, -1.5 -> -2
    spec = write_spec(tmp_path / "sum.json", {**SPEC, "count": {"reduce": "sum"}})
    res = run("merge", *paths, "-s", spec, "-o", tmp_path / "s.h5")
    assert_one_line_error(res, 1, "/count", "sum overflows int8", "element 1", "200")
    assert not (tmp_path / "s.h5").exists()


def test_reducer_on_strings_is_refused(tmp_path):
    paths = write_outputs(tmp_path, 2)
    spec = write_spec(tmp_path / "s.json", {**SPEC, "meta": {"@peak": {"reduce": "min"}, "vocab": {"reduce": "sum"}}})
    assert_one_line_error(run("merge", *paths, "-s", spec, "-o", tmp_path / "m.h5"), 1, "/meta/vocab",
                          "cannot reduce dtype str")


@pytest.mark.parametrize("tamper,needles", [
    (lambda f: f.attrs.__setitem__("step", 6), ["/@step", "microbatch 0", "microbatch 2", "5 vs 6"]),
    (lambda f: f["meta"].attrs.__setitem__("peak", 9.0), None),  # reduced with min: differing is fine
    (lambda f: f["meta/vocab"].__setitem__(1, "c"), ["/meta/vocab", "microbatch 2", "['a', 'b'] vs ['a', 'c']"]),
    (lambda f: f["logits"].attrs.__setitem__("unit", "x"), ["attribute /logits@unit is extra"]),
    (lambda f: f.__delitem__("loss"), ["member /loss is missing", "out-2.h5"]),
    (lambda f: f.create_group("extra"), ["member /extra is extra"]),
    (lambda f: f["meta"].attrs.__delitem__("peak"), ["attribute /meta@peak is missing", "out-2.h5"]),
    (lambda f: (f.__delitem__("loss"), f.create_group("loss")), ["/loss is a group, but a dataset", "out-2.h5"]),
    (lambda f: f.__setitem__("alias", h5py.SoftLink("/loss")), ["out-2.h5", "/alias", "soft links"]),
    (lambda f: (f.__delitem__("loss"), f.__setitem__("loss", np.dtype("i4"))),
     ["/loss is a named datatype, but a dataset", "out-2.h5"]),
])
def test_tampered_microbatch_is_refused_with_path_and_both_microbatches(tmp_path, tamper, needles):
    paths = write_outputs(tmp_path, 3, f2=tamper)
    spec = write_spec(tmp_path / "s.json", SPEC)
    res = run("merge", *paths, "-s", spec, "-o", tmp_path / "m.h5")
    if needles is None:
        assert res.code == 0, res
        return
    assert_one_line_error(res, 1, *needles)
    assert not (tmp_path / "m.h5").exists()


def test_equality_is_on_bits_nan_equal_negative_zero_differs(tmp_path):
    def put(v):
        return lambda f: f.__setitem__("t", np.array(v, dtype=np.float64))
    same = write_outputs(tmp_path / "a" if (tmp_path / "a").mkdir() is None else None, 2,
                         f0=put([np.nan, 1.0]), f1=put([np.nan, 1.0]))
    spec = write_spec(tmp_path / "s.json", {**SPEC, "t": "replicate"})
    run("merge", *same, "-s", spec, "-o", tmp_path / "same.h5", check=0)
    (tmp_path / "b").mkdir()
    differ = write_outputs(tmp_path / "b", 2, f0=put([0.0, 1.0]), f1=put([-0.0, 1.0]))
    assert_one_line_error(run("merge", *differ, "-s", spec, "-o", tmp_path / "d.h5"), 1, "/t",
                          "[0.0, 1.0] vs [-0.0, 1.0]")


def test_large_replicated_difference_names_the_element(tmp_path):
    def put(v):
        return lambda f: f.__setitem__("big", v)
    a = np.arange(1000, dtype=np.int32).reshape(100, 10)
    b = a.copy()
    b[57, 3] = -1
    paths = write_outputs(tmp_path, 2, f0=put(a), f1=put(b))
    spec = write_spec(tmp_path / "s.json", {**SPEC, "big": "replicate"})
    # a small buffer makes the difference land in a later block
    res = run("merge", *paths, "-s", spec, "-o", tmp_path / "m.h5", "--buffer-size", 1)
    assert_one_line_error(res, 1, "/big", "at [57, 3]: 573 vs -1")


def test_concatenation_needs_matching_dtype_and_other_dims(tmp_path):
    paths = write_outputs(tmp_path, 2, f1=lambda f: (f.__delitem__("logits"),
                                                     f.__setitem__("logits", np.zeros((2, 5), np.float32))))
    spec = write_spec(tmp_path / "s.json", SPEC)
    assert_one_line_error(run("merge", *paths, "-s", spec, "-o", tmp_path / "m.h5"), 1, "/logits",
                          "(1, 4) vs (2, 5) outside the concatenation axis 0")
    (tmp_path / "t").mkdir()
    paths = write_outputs(tmp_path / "t", 2, f1=lambda f: (f.__delitem__("logits"),
                                                           f.__setitem__("logits", np.zeros((2, 4), np.float64))))
    assert_one_line_error(run("merge", *paths, "-s", spec, "-o", tmp_path / "m.h5"), 1, "/logits",
                          "dtype float32 vs float64")


def test_merge_files_in_given_order_and_force(tmp_path, batch):
    run("split", batch, "-n", 3, "-o", tmp_path / "mb", check=0)
    files = [tmp_path / "mb" / f"microbatch-0000{i}.h5" for i in range(3)]
    # Beside their manifest, another order than the split's is refused ...
    assert_one_line_error(run("merge", *reversed(files), "-o", tmp_path / "rev.h5"), 1,
                          "microbatch-00002.h5: is microbatch file 2 of", "given as input 0")
    # ... without one, files merge in the order given.
    (tmp_path / "mb" / "manifest.json").unlink()
    run("merge", *reversed(files), "-o", tmp_path / "rev.h5", check=0)
    with h5py.File(tmp_path / "rev.h5") as m:
        assert list(m["y"][()]) == [7, 8, 9, 4, 5, 6, 0, 1, 2, 3]
    res = run("merge", *files, "-o", tmp_path / "rev.h5")
    assert_one_line_error(res, 1, "rev.h5", "--force")
    run("merge", *files, "-o", tmp_path / "rev.h5", "--force", check=0)
    assert h5diff(batch, tmp_path / "rev.h5") == 0


def test_merge_directory_needs_a_complete_manifest(tmp_path, batch):
    run("split", batch, "-n", 3, "-o", tmp_path / "mb", check=0)
    (tmp_path / "mb" / "microbatch-00001.h5").unlink()
    assert_one_line_error(run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5"), 1, "microbatch-00001.h5")
    (tmp_path / "mb" / "manifest.json").unlink()
    assert_one_line_error(run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5"), 1, "no manifest")
    assert not (tmp_path / "m.h5").exists()


def test_merge_refuses_to_overwrite_an_input(tmp_path, batch):
    run("split", batch, "-n", 2, "-o", tmp_path / "mb", check=0)
    first = tmp_path / "mb" / "microbatch-00000.h5"
    before = first.read_bytes()
    res = run("merge", first, tmp_path / "mb" / "microbatch-00001.h5", "-o", first, "--force")
    assert_one_line_error(res, 1, "which this run reads")
    assert first.read_bytes() == before


@pytest.mark.parametrize("given", ["directory", "files"])
def test_merge_refuses_to_overwrite_the_manifest_it_reads(tmp_path, batch, given):
    run("split", batch, "-n", 2, "-o", tmp_path / "mb", check=0)
    manifest = tmp_path / "mb" / "manifest.json"
    before = manifest.read_bytes()
    inputs = [tmp_path / "mb"] if given == "directory" else sorted((tmp_path / "mb").glob("microbatch-*.h5"))
    res = run("merge", *inputs, "-o", manifest, "--force")
    assert_one_line_error(res, 1, "manifest.json, which this run reads")
    assert manifest.read_bytes() == before
