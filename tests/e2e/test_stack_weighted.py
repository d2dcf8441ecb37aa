"""{"reduce": "stack"} and {"reduce": "mean", "weight": ...}, judged against numpy bit for bit.

What merge computes (README, "Decisions", Stack and Weighted mean):
- stack: input i's value is result[i] (np.stack), any dtype, for datasets and
  @attribute keys; the dataset keeps its creation properties with a leading
  axis of N.
- weighted mean: integer values with integer weights exactly (Fraction,
  rounded half to even); otherwise float64 in input order,
  acc = w0 * x0.astype(f8); acc = acc + wi * xi.astype(f8) ...; acc / total,
  rounded once to the dtype (integers: np.round, ties to even).
Every bad weight is a one-line error naming the input, exit 1, no output.
"""
import json
import os
from fractions import Fraction

import h5py
import numpy as np
import pytest

from conftest import assert_one_line_error, h5diff, listing, run, write_spec


def uint_view(a):
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.uint8}[a.dtype.itemsize])


def write_files(tmp_path, n, fill, prefix="in"):
    """File i is written by fill(f, i)."""
    paths = []
    for i in range(n):
        p = tmp_path / f"{prefix}-{i}.h5"
        with h5py.File(p, "w") as f:
            fill(f, i)
        paths.append(p)
    return paths


def merge(tmp_path, paths, spec, *flags, name="m.h5", check=0):
    out = tmp_path / name
    res = run("merge", *paths, "-s", write_spec(tmp_path / f"{name}.json", spec), "-o", out, "--force", *flags,
              check=check)
    return out if check == 0 else res


# -- stack --------------------------------------------------------------------------------------------------------

def values_of(dtype, rng, shape, i):
    """Values of `dtype` (a numpy dtype, or "str" for variable-length strings) that differ per input."""
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == "str":
        return np.array([f"mb{i}-{k}-é" * (k % 3 + 1) for k in range(n)], dtype=object).reshape(shape)
    dt = np.dtype(dtype)
    if dt.kind == "f":  # every bit pattern, NaN payloads and signed zeros included
        return rng.integers(0, 2 ** (8 * dt.itemsize), n, dtype=np.uint64).astype(
            {2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize]).view(dt).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True).reshape(shape)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind == "c":
        return (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dt).reshape(shape)
    if dt.kind == "S":
        return np.array([f"s{i}{k}".encode()[:dt.itemsize] for k in range(n)], dtype=dt).reshape(shape)
    out = np.zeros(n, dt)  # compound
    out["a"] = rng.integers(-100, 100, n)
    out["b"] = rng.normal(size=n)
    out["c"] = rng.integers(-100, 100, (n, 3))
    return out.reshape(shape)


DTYPES = ["int8", "uint64", "float16", "float32", "float64", "bool", "complex64", "S4", "str",
          [("a", "<i4"), ("b", "<f8"), ("c", "<i2", (3,))]]  # a compound with an array member


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d if isinstance(d, str) else "compound")
def test_stack_of_scalars_arrays_and_attributes_is_np_stack(tmp_path, dtype):
    rng = np.random.default_rng(7)
    n = 3
    scalars = [values_of(dtype, rng, (), i) for i in range(n)]
    arrays = [values_of(dtype, rng, (4, 3), i) for i in range(n)]
    attr_scalars = [values_of(dtype, rng, (), i) for i in range(n)]
    attr_arrays = [values_of(dtype, rng, (5,), i) for i in range(n)]
    h5type = h5py.string_dtype() if dtype == "str" else np.dtype(dtype)

    def fill(f, i):
        f.create_dataset("loss", data=scalars[i], dtype=h5type)
        f.create_dataset("g/x", data=arrays[i], dtype=h5type)
        f.attrs.create("a", scalars[i] if dtype != "str" else attr_scalars[i][()], dtype=h5type)
        f.attrs.create("v", attr_arrays[i], dtype=h5type)
        f["g"].attrs.create("w", attr_scalars[i] if dtype != "str" else attr_scalars[i][()], dtype=h5type)

    paths = write_files(tmp_path, n, fill)
    spec = {"loss": {"reduce": "stack"}, "g": {"x": {"reduce": "stack"}, "@w": {"reduce": "stack"}},
            "@a": {"reduce": "stack"}, "@v": {"reduce": "stack"}}
    out = merge(tmp_path, paths, spec)
    a_values = scalars if dtype != "str" else attr_scalars
    with h5py.File(out) as m:
        got = {"loss": m["loss"], "g/x": m["g/x"]}
        for key, inputs in [("loss", scalars), ("g/x", arrays)]:
            ds = got[key]
            assert ds.shape == (n,) + inputs[0].shape
            if dtype == "str":
                assert ds.dtype == h5py.string_dtype() or h5py.check_string_dtype(ds.dtype)
                assert ds.asstr()[()].tolist() == np.stack(inputs).tolist()
            else:
                assert ds.dtype == np.dtype(dtype)
                assert np.array_equal(uint_view(ds[()]).ravel() if np.dtype(dtype).kind == "f" else ds[()],
                                      uint_view(np.stack(inputs)).ravel() if np.dtype(dtype).kind == "f"
                                      else np.stack(inputs))
        for obj, name, inputs in [(m, "a", a_values), (m, "v", attr_arrays), (m["g"], "w", attr_scalars)]:
            value = obj.attrs[name]
            want = np.stack(inputs) if dtype != "str" else np.stack([np.asarray(x, dtype=object) for x in inputs])
            assert value.shape == want.shape, name
            if dtype == "str":
                assert [x.decode() if isinstance(x, bytes) else x for x in value.ravel().tolist()] == \
                    want.ravel().tolist(), name
            elif np.dtype(dtype).kind == "f":
                assert value.dtype == np.dtype(dtype) and np.array_equal(uint_view(value), uint_view(want)), name
            else:
                assert value.dtype == np.dtype(dtype) and np.array_equal(value, want), name


def test_stack_keeps_creation_properties_with_a_leading_axis(tmp_path):
    def fill(f, i):
        f.create_dataset("chunked", data=np.full((6, 4), i, np.int32), chunks=(2, 4), compression="gzip",
                         shuffle=True, maxshape=(None, 4), fillvalue=-7)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((3,))
        ds = h5py.h5d.create(f.id, b"compact", h5py.h5t.NATIVE_INT16, space, dcpl=dcpl)
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.full(3, i, np.int16))
        # 32 KB compact: stacked 3 times it passes HDF5's 64 KiB compact limit, and becomes contiguous
        big = h5py.h5d.create(f.id, b"big_compact", h5py.h5t.NATIVE_DOUBLE, h5py.h5s.create_simple((4000,)), dcpl=dcpl)
        big.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(4000, dtype=np.float64) + i)
        f["empty"] = np.zeros((0, 2), np.float32)
        f["null"] = h5py.Empty("f8")
        f["loss"] = np.float32(i)  # scalar, contiguous
        f["loss"].attrs["unit"] = "nats"

    paths = write_files(tmp_path, 3, fill)
    spec = {"*": {"reduce": "stack"}}
    out = merge(tmp_path, paths, spec)
    with h5py.File(out) as m:
        c = m["chunked"]
        assert c.shape == (3, 6, 4) and c.chunks == (1, 2, 4) and c.compression == "gzip" and c.shuffle
        assert c.maxshape == (3, None, 4) and c.fillvalue == -7
        assert np.array_equal(c[()], np.stack([np.full((6, 4), i, np.int32) for i in range(3)]))
        assert m["compact"].id.get_create_plist().get_layout() == h5py.h5d.COMPACT
        assert np.array_equal(m["compact"][()], np.stack([np.full(3, i, np.int16) for i in range(3)]))
        big = m["big_compact"]
        assert big.shape == (3, 4000) and big.id.get_create_plist().get_layout() == h5py.h5d.CONTIGUOUS
        assert np.array_equal(big[()], np.stack([np.arange(4000.0) + i for i in range(3)]))
        assert m["empty"].shape == (3, 0, 2)
        assert m["null"].shape is None  # a null dataspace stays null
        assert m["loss"].shape == (3,) and list(m["loss"][()]) == [0.0, 1.0, 2.0]
        assert m["loss"].attrs["unit"] == "nats"  # the dataset's own attributes are checked and kept


def test_stack_over_many_inputs_and_a_large_stacked_attribute(tmp_path):
    """70 inputs: a stacked attribute of 70 x 200 float64 (112 KB) needs dense attribute storage."""
    n = 70

    def fill(f, i):
        f["loss"] = np.float32(i / 7)
        f["g/big"] = np.arange(300, dtype=np.int64) * i
        f["g"].attrs["curve"] = np.arange(200, dtype=np.float64) + i
        f.attrs["curve"] = np.arange(200, dtype=np.float64) - i

    paths = write_files(tmp_path, n, fill)
    out = merge(tmp_path, paths, {"loss": {"reduce": "stack"}, "@curve": {"reduce": "stack"},
                                  "g": {"big": {"reduce": "stack"}, "@curve": {"reduce": "stack"}}},
                "--buffer-size", 1)
    with h5py.File(out) as m:
        assert np.array_equal(m["loss"][()], np.array([np.float32(i / 7) for i in range(n)]))
        assert np.array_equal(m["g/big"][()], np.stack([np.arange(300, dtype=np.int64) * i for i in range(n)]))
        assert np.array_equal(m["g"].attrs["curve"], np.stack([np.arange(200.0) + i for i in range(n)]))
        assert np.array_equal(m.attrs["curve"], np.stack([np.arange(200.0) - i for i in range(n)]))


def test_stack_refuses_different_shapes_and_dtypes(tmp_path):
    for name, fill, needles in [
        ("shape", lambda f, i: f.__setitem__("x", np.zeros(2 + (i == 2), np.int32)),
         ["/x differs between microbatch 0", "microbatch 2", "shape (2,) vs (3,)"]),
        ("dtype", lambda f, i: f.__setitem__("x", np.zeros(2, np.int32 if i < 1 else np.int64)),
         ["/x differs between microbatch 0", "microbatch 1", "dtype int32 vs int64"]),
        ("attr", lambda f, i: f.attrs.__setitem__("x", np.zeros(2 + (i == 1), np.int32)),
         ["/@x differs", "shape (2,) vs (3,)"]),
    ]:
        d = tmp_path / name
        d.mkdir()
        paths = write_files(d, 3, fill)
        spec = {"x": {"reduce": "stack"}} if name != "attr" else {"@x": {"reduce": "stack"}}
        res = merge(d, paths, spec, check=None)
        assert_one_line_error(res, 1, *needles)
        assert listing(d) == sorted([p.name for p in paths] + ["m.h5.json"])


# -- weighted mean: numpy bit for bit -----------------------------------------------------------------------------

LEAF_DTYPES = [np.int16, np.int64, np.uint8, np.float16, np.float32, np.float64]
WEIGHT_DTYPES = [np.int64, np.uint32, np.float32, np.float64]


def random_leaf(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    return (rng.normal(size=shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dt)


def random_weights(rng, dtype, n):
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        w = rng.integers(0, 5000, n).astype(dt)
    else:
        w = (rng.random(n) * 10.0 ** rng.integers(-2, 3, n)).astype(dt)
    w[1] = 0  # a weight of 0 leaves its input out
    return w


def weighted_mean(values, weights, dtype):
    """What merge computes (see the module's docstring)."""
    dt = np.dtype(dtype)
    wk = np.asarray(weights).dtype.kind
    if dt.kind in "iu" and wk in "iu":
        total = sum(int(w) for w in weights)
        out = [round(Fraction(sum(int(w) * int(x[k]) for w, x in zip(weights, values)), total))
               for k in range(values[0].size)]
        return np.array(out, dtype=dt)
    acc = np.float64(weights[0]) * values[0].astype(np.float64)
    for w, x in zip(weights[1:], values[1:]):
        acc = acc + np.float64(w) * x.astype(np.float64)
    if wk in "iu":
        total = float(sum(int(w) for w in weights))
    else:
        total = np.float64(weights[0])
        for w in weights[1:]:
            total = total + np.float64(w)
    mean = acc / total
    if dt.kind in "iu":  # np.round: ties to even; held inside the dtype (in Python ints: float64 may hold 2**63)
        info = np.iinfo(dt)
        return np.array([min(max(int(v), info.min), info.max) for v in np.round(mean)], dtype=dt)
    return mean.astype(dt)


def write_weighted(tmp_path, leaf_dtype, weight_dtype, n=4, shape=(300,), seed=0):
    rng = np.random.default_rng(seed)
    values = [random_leaf(rng, leaf_dtype, shape) for _ in range(n)]
    weights = random_weights(rng, weight_dtype, n)

    def fill(f, i):
        f["loss"] = values[i]
        f["x"] = np.arange(3, dtype=np.int32) + 3 * i  # a split leaf beside
        f["zz/num_tokens"] = weights[i]  # after /loss in the walk
        f.attrs["num_tokens"] = weights[i]
        f.attrs["loss"] = values[i][:7]

    return write_files(tmp_path, n, fill), values, weights


@pytest.mark.parametrize("weight_dtype", WEIGHT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("leaf_dtype", LEAF_DTYPES, ids=lambda d: np.dtype(d).name)
def test_weighted_mean_bit_identical_to_numpy(tmp_path, leaf_dtype, weight_dtype):
    paths, values, weights = write_weighted(tmp_path, leaf_dtype, weight_dtype)
    want = weighted_mean(values, weights, leaf_dtype)
    want_attr = weighted_mean([v[:7] for v in values], weights, leaf_dtype)
    spec = {"loss": {"reduce": "mean", "weight": "/zz/num_tokens"}, "x": 0,
            "zz": {"num_tokens": {"reduce": "sum"}},
            "@num_tokens": {"reduce": "stack"}, "@loss": {"reduce": "mean", "weight": "/@num_tokens"}}
    out = merge(tmp_path, paths, spec)
    with h5py.File(out) as m:
        got = m["loss"][()]
        assert got.dtype == np.dtype(leaf_dtype)
        differ = np.flatnonzero(uint_view(got) != uint_view(want))
        assert differ.size == 0, (differ.size, got[differ[:5]], want[differ[:5]])
        assert np.array_equal(uint_view(m.attrs["loss"]), uint_view(want_attr))
        # the weight is a leaf of its own: summed here, stacked as an attribute
        assert m["zz/num_tokens"].dtype == np.dtype(weight_dtype)
        if np.dtype(weight_dtype).kind in "iu":
            total = sum(int(w) for w in weights)
        else:  # sum's own rule: float64 in input order, one rounding
            total = np.float64(weights[0])
            for w in weights[1:]:
                total = total + np.float64(w)
            total = np.asarray(total).astype(weight_dtype)
        assert m["zz/num_tokens"][()] == total
        assert np.array_equal(m.attrs["num_tokens"], weights)
        assert np.array_equal(m["x"][()], np.arange(12, dtype=np.int32))
    # the plain mean differs (the weights count)
    plain = merge(tmp_path, paths, {**spec, "loss": {"reduce": "mean"}}, name="plain.h5")
    with h5py.File(plain) as m:
        assert not np.array_equal(uint_view(m["loss"][()]), uint_view(want))


def test_weighted_mean_of_exact_integers_where_float64_is_not(tmp_path):
    big = np.iinfo(np.int64).max
    values = [np.array([big, big - 1, -big, 3], np.int64), np.array([big - 3, big, -big, 4], np.int64)]
    weights = [np.int64(2**40), np.int64(3)]

    def fill(f, i):
        f["x"] = values[i]
        f["w"] = weights[i]

    out = merge(tmp_path, write_files(tmp_path, 2, fill), {"x": {"reduce": "mean", "weight": "/w"},
                                                            "w": {"reduce": "stack"}})
    with h5py.File(out) as m:
        got = m["x"][()]
        assert got.tolist() == weighted_mean(values, weights, np.int64).tolist()
        assert got[0] == big - round(Fraction(3 * 3, 2**40 + 3))  # = big: 3 * 3 / (2**40 + 3) rounds to 0
        assert m["w"][()].tolist() == [2**40, 3]


@pytest.mark.parametrize("leaf_dtype", [np.float32, np.int32], ids=["float32", "int32"])
def test_weighted_mean_deferred_past_the_budget_agrees(tmp_path, leaf_dtype):
    """300 x 300 accumulators (1.4 to 1.8 MB) pass a 1 MiB budget: reduced block by block after the walk, with the
    weights read during the walk."""
    paths, values, weights = write_weighted(tmp_path, leaf_dtype, np.float64, n=3, shape=(300, 300), seed=3)
    spec = {"loss": {"reduce": "mean", "weight": "/zz/num_tokens"}, "x": 0, "zz": {"num_tokens": {"reduce": "max"}},
            "@num_tokens": {"reduce": "sum"}, "@loss": {"reduce": "mean", "weight": "/zz/num_tokens"}}
    deferred = merge(tmp_path, paths, spec, "--buffer-size", 1, name="deferred.h5")
    carried = merge(tmp_path, paths, spec, name="carried.h5")
    want = weighted_mean([v.ravel() for v in values], weights, leaf_dtype).reshape(300, 300)
    for out in [deferred, carried]:
        with h5py.File(out) as m:
            assert np.array_equal(uint_view(m["loss"][()]), uint_view(want)), out
    assert h5diff(deferred, carried) == 0


def test_merge_of_a_split_directory_stack_and_weighted_mean(tmp_path):
    """Split a batch, let every microbatch record its own loss and token count (same sizes: checked), merge the
    directory with a spec that stacks and weighs them."""
    batch = tmp_path / "batch.h5"
    with h5py.File(batch, "w") as f:
        f["tokens"] = np.arange(40, dtype=np.int64).reshape(8, 5)
        f["loss"] = np.float32(0)
        f["num_tokens"] = np.int64(0)
        f["grad"] = np.zeros(6, np.float16)
    run("split", batch, "-n", 4, "-o", tmp_path / "mb", "-s",
        write_spec(tmp_path / "split.json", {"tokens": 0, "*": "replicate"}), check=0)
    files = sorted((tmp_path / "mb").glob("microbatch-*.h5"))
    rng = np.random.default_rng(11)
    losses = rng.random(4).astype(np.float32)
    grads = [rng.normal(size=6).astype(np.float16) for _ in range(4)]
    counts = np.array([7, 3, 0, 12], np.int64)
    for i, p in enumerate(files):
        size = p.stat().st_size
        with h5py.File(p, "r+") as f:
            f["loss"][()] = losses[i]
            f["num_tokens"][()] = counts[i]
            f["grad"][...] = grads[i]
        assert p.stat().st_size == size
    spec = {"tokens": {"reduce": "stack"}, "loss": {"reduce": "stack"}, "num_tokens": {"reduce": "sum"},
            "grad": {"reduce": "mean", "weight": "/num_tokens"}}
    res = run("merge", tmp_path / "mb", "-s", write_spec(tmp_path / "m.json", spec), "-o", tmp_path / "m.h5")
    assert_one_line_error(res, 1, "content digest differs")  # the files changed after the split
    run("merge", tmp_path / "mb", "--no-verify", "-s", tmp_path / "m.json", "-o", tmp_path / "m.h5", check=0)
    with h5py.File(tmp_path / "m.h5") as m:
        assert np.array_equal(m["tokens"][()], np.arange(40, dtype=np.int64).reshape(4, 2, 5))
        assert np.array_equal(m["loss"][()], losses)
        assert m["num_tokens"][()] == 22
        want = weighted_mean(grads, counts, np.float16)
        assert np.array_equal(uint_view(m["grad"][()]), uint_view(want))


def test_merge_virtual_stores_stacked_and_weighted_leaves(tmp_path):
    rng = np.random.default_rng(5)
    loss = [rng.random(3).astype(np.float64) for _ in range(3)]

    def fill(f, i):
        f["x"] = np.arange(4, dtype=np.int64) + 4 * i
        f["loss"] = loss[i]
        f["n"] = np.uint16(i + 1)

    paths = write_files(tmp_path, 3, fill)
    spec = {"x": 0, "loss": {"reduce": "mean", "weight": "/n"}, "n": {"reduce": "stack"}}
    out = merge(tmp_path, paths, spec, "--virtual")
    with h5py.File(out) as m:
        assert m["x"].is_virtual and not m["loss"].is_virtual and not m["n"].is_virtual
        assert np.array_equal(m["x"][()], np.arange(12))
        assert m["n"][()].tolist() == [1, 2, 3]
        assert np.array_equal(uint_view(m["loss"][()]),
                              uint_view(weighted_mean(loss, np.array([1, 2, 3], np.uint16), np.float64)))


def test_inspect_shows_the_rules(tmp_path):
    p = tmp_path / "f.h5"
    with h5py.File(p, "w") as f:
        f["loss"] = np.float32(1)
        f["n"] = np.int64(3)
        f.attrs["k"] = 2
    spec = write_spec(tmp_path / "s.json", {"loss": {"reduce": "mean", "weight": "/@k"}, "n": {"reduce": "stack"},
                                            "@k": {"reduce": "sum"}})
    res = run("inspect", p, "-s", spec, check=0)
    assert "-> reduce mean weighted by /@k" in res.out and "-> reduce stack" in res.out, res
    tree = json.loads(run("inspect", p, "-s", spec, "--json", check=0).out)["tree"]
    rules = {n["path"]: n.get("rule") for n in tree}
    assert rules["/loss"] == {"mode": "reduce", "reducer": "mean", "weight": "/@k"}
    assert rules["/n"] == {"mode": "reduce", "reducer": "stack"}
    # split refuses them, as every reducer
    res = run("split", p, "-n", 2, "-s", spec, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "a reducer only applies to merge")
    assert not (tmp_path / "mb").exists()


# -- weighted mean: every bad weight -------------------------------------------------------------------------------

def weight_case(tmp_path, tweak, n=3, weight_spec=None, leaf_spec=None):
    """n inputs with /loss (float32 [4]) and /w (int64 scalar, 1 + i), /@w the same; tweak(f, i) changes them."""
    def fill(f, i):
        f["loss"] = np.arange(4, dtype=np.float32) * (i + 1)
        f["w"] = np.int64(i + 1)
        f.attrs["w"] = np.int64(i + 1)
        tweak(f, i)

    paths = write_files(tmp_path, n, fill)
    (tmp_path / "out").mkdir()
    spec = {"loss": leaf_spec or {"reduce": "mean", "weight": "/w"}, "w": weight_spec or {"reduce": "sum"},
            "@w": {"reduce": "sum"}}
    res = run("merge", *paths, "-s", write_spec(tmp_path / "s.json", spec), "-o", tmp_path / "out" / "m.h5")
    return res, paths


def floats(dtype, bad, at):
    """Float weights of `dtype`, `bad` in input `at`."""
    def tweak(f, i):
        del f["w"]
        f["w"] = dtype(bad if i == at else i + 1)
    return tweak


def replace(name, value, at=None):
    def tweak(f, i):
        if at is None or i == at:
            if name.startswith("@"):
                del f.attrs[name[1:]]
                if value is not None:
                    f.attrs[name[1:]] = value
            else:
                del f[name]
                if value is not None:
                    f[name] = value
    return tweak


@pytest.mark.parametrize("tweak,leaf_spec,needles", [
    (replace("w", None, at=2), None, ["in-2.h5: /w: no such dataset in this input (it weighs the mean of /loss)"]),
    (replace("w", np.int64([3]), at=1), None, ["in-1.h5: /w: has shape (1,), not rank 0"]),
    (replace("w", h5py.Empty("i8"), at=1), None, ["in-1.h5: /w: has a null dataspace"]),
    (replace("w", "three", at=1), None, ["in-1.h5: /w: dtype str is not a number a weight can be"]),
    (replace("w", np.int64(-3), at=2), None, ["in-2.h5: /w: weight -3 is negative (it weighs the mean of /loss)"]),
    (floats(np.float64, -0.5, at=1), None, ["in-1.h5: /w: weight -0.5 is negative"]),
    (floats(np.float32, np.nan, at=2), None, ["in-2.h5: /w: weight nan is not a finite number"]),
    (floats(np.float16, -np.inf, at=1), None, ["in-1.h5: /w: weight -inf is not a finite number"]),
    (replace("w", np.float64(np.inf), at=0), None, ["in-0.h5: /w: weight inf is not a finite number"]),
    (replace("w", np.int32(2), at=1), None, ["/w differs between microbatch 0", "microbatch 1", "dtype int64 vs int32"]),
    (replace("w", np.int64(0)), None, ["in-0.h5: /w: every input's weight is 0 (3 inputs): the weighted mean of "
                                       "/loss needs a positive total"]),
    (replace("w", np.float64(1e308)), None, ["in-0.h5: /w: the weights of the 3 inputs sum to more than float64 "
                                             "holds"]),
    (replace("@w", None, at=1), {"reduce": "mean", "weight": "/@w"},
     ["in-1.h5: /@w: no such attribute in this input (it weighs the mean of /loss)"]),
    (replace("@w", np.bool_(True), at=0), {"reduce": "mean", "weight": "/@w"},
     ["in-0.h5: /@w: dtype bool is not a number a weight can be"]),
    (lambda f, i: (f.__delitem__("w"), f.create_group("w")) if i == 1 else None, None,
     ["in-1.h5: /w: is a group, not a dataset"]),
])
def test_bad_weight_is_a_one_line_error_naming_the_input(tmp_path, tweak, leaf_spec, needles):
    res, _ = weight_case(tmp_path, tweak, leaf_spec=leaf_spec)
    assert_one_line_error(res, 1, *needles)
    assert listing(tmp_path / "out") == []  # nothing left


def test_weight_errors_in_the_spec_name_its_line_and_column(tmp_path):
    paths = write_files(tmp_path, 2, lambda f, i: (f.__setitem__("loss", np.zeros(3, np.float32)),
                                                   f.__setitem__("g/w", np.zeros(2, np.int64)),
                                                   f.__setitem__("s", np.int64(1))))
    for spec, needles in [
        ({"loss": {"reduce": "mean", "weight": "/nope"}, "*": "replicate"},
         ["s.json:1:10: the mean of /loss is weighted by /nope, but the file has no dataset /nope"]),
        ({"loss": {"reduce": "mean", "weight": "/g"}, "*": "replicate"}, ["but /g is a group"]),
        ({"loss": {"reduce": "mean", "weight": "/g/w"}, "*": "replicate"}, ["but it has shape (2,)"]),
        ({"loss": {"reduce": "mean", "weight": "/s@n"}, "*": "replicate"}, ["but /s has no attribute n"]),
        ({"loss": {"reduce": "sum", "weight": "/s"}, "*": "replicate"}, ["\"weight\" goes with {\"reduce\": "
                                                                         "\"mean\"} only"]),
        ({"loss": {"reduce": "mean", "weight": "s"}, "*": "replicate"}, ["\"weight\" takes the absolute HDF5 path"]),
        ({"loss": {"reduce": "stacks"}, "*": "replicate"}, ["\"reduce\" takes \"sum\", \"mean\", \"min\", \"max\" or "
                                                            "\"stack\""]),
    ]:
        res = run("merge", *paths, "-s", write_spec(tmp_path / "s.json", spec), "-o", tmp_path / "m.h5")
        assert_one_line_error(res, 1, *needles)
        assert not (tmp_path / "m.h5").exists()


def test_differing_weights_left_to_replicate_are_refused_as_unequal(tmp_path):
    """The weight is an ordinary leaf: a rank-0 dataset replicates by default, so differing weights need a rule."""
    res, _ = weight_case(tmp_path, lambda f, i: None, weight_spec="replicate")
    assert_one_line_error(res, 1, "/w differs between microbatch 0", "microbatch 1", "1 vs 2",
                          "the weight of the mean of /loss", 'give it a reducer in the spec, e.g. "w": {"reduce": '
                          '"sum"}')


def test_a_differing_weight_attribute_left_to_replicate_says_it_needs_a_reducer(tmp_path):
    paths = write_files(tmp_path, 2, lambda f, i: (f.__setitem__("loss", np.ones(3, np.float32)),
                                                   f.attrs.__setitem__("num_tokens", np.int64(2749 + 348 * i))))
    spec = write_spec(tmp_path / "s.json", {"loss": {"reduce": "mean", "weight": "/@num_tokens"}})
    res = run("merge", *paths, "-s", spec, "-o", tmp_path / "m.h5")
    assert_one_line_error(res, 1, "/@num_tokens differs", "2749 vs 3097", "the weight of the mean of /loss",
                          '"@num_tokens": {"reduce": "sum"}')
    # following the hint merges
    spec = write_spec(tmp_path / "s2.json", {"loss": {"reduce": "mean", "weight": "/@num_tokens"},
                                             "@num_tokens": {"reduce": "sum"}})
    run("merge", *paths, "-s", spec, "-o", tmp_path / "m.h5", check=0)
    with h5py.File(tmp_path / "m.h5") as f:
        assert f.attrs["num_tokens"] == 2749 + 3097


def test_merge_help_and_the_man_page_teach_the_weighted_mean_and_stack(tmp_path):
    """A user with only --help and the man page finds both reducers, and merge --help's example runs as shown:
    the loss weighted by each file's token count, the tokens summed, one grad_norm per input."""
    text = run("merge", "--help", check=0).out
    for needle in ['{"reduce": "mean", "weight": "/path"}', '"/path@attribute"', '{"reduce": "stack"}',
                   "new leading axis"]:
        assert needle in text, needle
    [example] = [line for line in text.splitlines() if "--spec-json" in line and "out-*.h5" in line]
    lines = text.splitlines()
    at = lines.index(example)
    spec = json.loads("".join(lines[at + 1:at + 3]).strip().strip("'"))
    paths = write_files(tmp_path, 3, lambda f, i: (f.create_dataset("loss", data=np.float32(i + 1)),
                                                   f.create_dataset("num_tokens", data=np.int64(10 * i + 10)),
                                                   f.create_dataset("grad_norm", data=np.float32(i / 2)),
                                                   f.create_dataset("logits", data=np.full((2, 3), i, np.float32))))
    out = tmp_path / "merged.h5"
    run("merge", *paths, "-o", out, "--spec-json", json.dumps(spec), check=0)
    with h5py.File(out) as f:
        assert f["loss"][()] == np.float32((1 * 10 + 2 * 20 + 3 * 30) / 60)
        assert f["num_tokens"][()] == 60
        assert f["grad_norm"][()].tolist() == [0.0, 0.5, 1.0]
        assert f["logits"].shape == (6, 3)
    man = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "microbatch.1")).read()
    for needle in [r"{\(dqreduce\(dq: \(dqmean\(dq, \(dqweight\(dq: \(dq/num_tokens\(dq}",
                   r"{\(dqreduce\(dq: \(dqstack\(dq}", "new leading axis"]:
        assert needle in man, needle
