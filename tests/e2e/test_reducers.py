"""Float reducers, judged bit for bit against numpy.

What merge computes (README, "Decisions", Reducers):
- sum / mean: every input widened exactly to float64, added in input order
  (the mean then divided by the count), rounded once to the dtype, to
  nearest even: numpy's `acc = x0.astype(f8); acc = acc + xi.astype(f8) ...;
  (acc [/ n]).astype(dtype)`.
- min / max: `acc = np.minimum(acc, xi)` (np.maximum) folded in input order,
  on the values' own bits: NaN payloads and signs, signed zeros as numpy.
float16, big-endian floats and bfloat16 (a custom HDF5 float written with
h5py's low-level API) are covered, for datasets and @attribute keys.
"""
import h5py
import numpy as np
import pytest

from conftest import assert_one_line_error, run, write_spec

F16 = np.float16


def uints(dtype):
    return {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]


def bits(a):
    """The bit patterns of a native float array (so NaN payloads and signs count)."""
    return np.ascontiguousarray(a).view(uints(a.dtype))


def write_inputs(tmp_path, datasets=None, attrs=None):
    """File i holds dataset "x" = datasets[i] and root attribute "a" = attrs[i]."""
    n = len(datasets if datasets is not None else attrs)
    paths = []
    for i in range(n):
        p = tmp_path / f"in-{i}.h5"
        with h5py.File(p, "w") as f:
            if datasets is not None:
                f["x"] = datasets[i]
            if attrs is not None:
                f.attrs["a"] = attrs[i]
        paths.append(p)
    return paths


def merge(tmp_path, paths, spec, name="m.h5"):
    out = tmp_path / name
    run("merge", *paths, "-s", write_spec(tmp_path / f"{name}.json", spec), "-o", out, "--force", check=0)
    return out


def float64_sum(inputs, mean=False):
    """Every input widened to float64 and added in input order (the mean then divided by the count).

    When both operands of an addition are NaN (two NaN inputs, or inf - inf
    then a NaN), numpy's vectorised float64 add returns one or the other
    depending on the arrays' memory alignment. So every NaN result is
    recomputed with Python's float arithmetic, in the same order (as
    numpy's scalar loop does): the first NaN operand, quieted."""
    with np.errstate(all="ignore"):
        acc = np.asarray(inputs[0]).astype(np.float64)
        for x in inputs[1:]:
            acc = acc + np.asarray(x).astype(np.float64)
        if mean:
            acc = acc / len(inputs)
    for i in np.flatnonzero(np.isnan(acc)):
        s = float(inputs[0][i])
        for x in inputs[1:]:
            s = s + float(x[i])
        acc[i] = s / len(inputs) if mean else s
    return acc


def numpy_sum(inputs, dtype, mean=False):
    """float64 accumulation in input order, one rounding (numpy's astype: to nearest even)."""
    with np.errstate(all="ignore"):
        return float64_sum(inputs, mean).astype(dtype)


def numpy_fold(fn, inputs):
    acc = inputs[0]
    for x in inputs[1:]:
        acc = fn(acc, x)
    return acc


def random_halves(rng, count, n):
    """`count` inputs of float16 patterns that exercise rounding. Each element
    is, in every input, of one kind: any pattern (NaN payloads, inf),
    subnormals and the smallest normals, values around 1, or specials."""
    kind = rng.integers(0, 5, n)
    return [random_half(rng, kind) for _ in range(count)]


def random_half(rng, kind):
    n = kind.size
    sign = rng.integers(0, 2, n)
    exp = np.select([kind == 1, kind == 2], [rng.integers(0, 3, n), rng.integers(12, 17, n)], rng.integers(0, 31, n))
    mant = rng.integers(0, 1024, n)
    composed = (sign << 15) | (exp << 10) | mant
    anything = rng.integers(0, 1 << 16, n)
    specials = rng.choice([0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7d55, 0xffff, 0x0001, 0x83ff,
                           0x7bff, 0xfbff, 0x3c00], n)
    out = np.select([kind == 0, kind == 4], [anything, specials], composed)
    return out.astype(np.uint16).view(F16)


# -- float16 sums: the issue's cases ----------------------------------------------------------------------------------

def test_issue_example_float16_sum(tmp_path):
    a = np.array([1.0, 3 * 2**-24, 1.0, 0.5, -1.0], F16)
    b = np.array([-2**-13, 0, -2**-13, 0, 2**-13], F16)
    out = merge(tmp_path, write_inputs(tmp_path, [a, b]), {"x": {"reduce": "sum"}})
    with h5py.File(out) as m:
        got = m["x"][()]
        assert got.dtype == F16
    # HDF5 1.10.8's conversion gave [1.0, 1.8e-7, 0.5, 0.5, -0.5]
    assert np.array_equal(bits(got), bits(np.array([1.0, 3 * 2**-24, 1.0, 0.5, -1.0], F16)))
    assert np.array_equal(bits(got), bits(a + b))  # numpy in float16 agrees for two inputs
    assert np.array_equal(bits(got), bits(numpy_sum([a, b], F16)))


def test_tie_rounds_to_even(tmp_path):
    a = np.array([1.0, 1 + 2**-10, 2**-24, -1.0], F16)
    b = np.array([2**-11, 2**-11, 2**-25, -2**-11], F16)  # 2**-25 is a float16 zero
    out = merge(tmp_path, write_inputs(tmp_path, [a, b]), {"x": {"reduce": "sum"}})
    with h5py.File(out) as m:
        got = m["x"][()]
    # 1 + 2**-11 -> 1.0, not 1.0009765625; 1 + 3 * 2**-11 -> 1 + 2**-9 (even)
    assert list(got) == [1.0, 1 + 2**-9, 2**-24, -1.0]
    assert np.array_equal(bits(got), bits(numpy_sum([a, b], F16)))


@pytest.mark.parametrize("count", [2, 3, 5])
@pytest.mark.parametrize("reducer", ["sum", "mean"])
def test_random_float16_sums_bit_identical_to_numpy(tmp_path, count, reducer):
    rng = np.random.default_rng(1000 * count + len(reducer))
    inputs = random_halves(rng, count, 5000)
    out = merge(tmp_path, write_inputs(tmp_path, inputs), {"x": {"reduce": reducer}})
    want = numpy_sum(inputs, F16, mean=reducer == "mean")
    with h5py.File(out) as m:
        got = m["x"][()]
    assert got.dtype == F16
    assert np.isnan(want).sum() > 100 and np.isinf(want).sum() > 10
    assert (np.abs(want[np.isfinite(want)]) < 2**-14).sum() > 100  # subnormal results
    differ = np.flatnonzero(bits(got) != bits(want))
    assert differ.size == 0, (differ.size, [(hex(bits(got)[i]), hex(bits(want)[i])) for i in differ[:5]])


def test_float16_attribute_reducers(tmp_path):
    rng = np.random.default_rng(5)
    inputs = random_halves(rng, 3, 2000)
    spec = {"@a": {"reduce": "sum"}}
    out = merge(tmp_path, write_inputs(tmp_path, attrs=inputs), spec)
    with h5py.File(out) as m:
        got = m.attrs["a"]
    assert got.dtype == F16
    assert np.array_equal(bits(got), bits(numpy_sum(inputs, F16)))
    for reducer, want in [("mean", numpy_sum(inputs, F16, mean=True)), ("min", numpy_fold(np.minimum, inputs)),
                          ("max", numpy_fold(np.maximum, inputs))]:
        out = merge(tmp_path, write_inputs(tmp_path, attrs=inputs), {"@a": {"reduce": reducer}}, f"{reducer}.h5")
        with h5py.File(out) as m:
            assert np.array_equal(bits(m.attrs["a"]), bits(want)), reducer
    # the issue's example as a scalar-per-element attribute
    a = np.array([1.0, 3 * 2**-24, 1.0, 0.5, -1.0], F16)
    b = np.array([-2**-13, 0, -2**-13, 0, 2**-13], F16)
    out = merge(tmp_path, write_inputs(tmp_path, attrs=[a, b]), spec, "issue.h5")
    with h5py.File(out) as m:
        assert list(m.attrs["a"]) == [1.0, np.float16(3 * 2**-24), 1.0, 0.5, -1.0]


# -- min / max: numpy.minimum / numpy.maximum folded in input order ---------------------------------------------------

SPECIAL_BITS = {
    2: [0x0000, 0x8000, 0x7e00, 0xfe00, 0x7c01, 0xfd55, 0x7fff, 0x7c00, 0xfc00, 0x3c00, 0xbc00, 0x0001],
    4: [0, 0x80000000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xffa5a5a5, 0x7fffffff, 0x7f800000, 0xff800000,
        0x3f800000, 0xbf800000, 1],
    8: [0, 0x8000000000000000, 0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001, 0xfff5a5a5a5a5a5a5,
        0x7fffffffffffffff, 0x7ff0000000000000, 0xfff0000000000000, 0x3ff0000000000000, 0xbff0000000000000, 1],
}


def random_minmax_values(rng, dtype, n):
    """Mostly signed zeros and NaNs of many payloads and signs, some ordinary values."""
    size = np.dtype(dtype).itemsize
    special = rng.choice(np.array(SPECIAL_BITS[size], dtype=np.uint64), n).astype(uints(dtype))
    # random low bits (never all zero) and sign: with the exponent all ones, NaNs of every kind
    nan_payloads = (rng.integers(0, 1 << 63, n, dtype=np.uint64) * 2 + 1).astype(uints(dtype))
    e_mask = {2: 0x7c00, 4: 0x7f800000, 8: 0x7ff0000000000000}[size]
    nans = nan_payloads | uints(dtype)(e_mask)  # exponent all ones, non-zero payload, either sign
    ordinary = rng.normal(0, 2, n).astype(dtype).view(uints(dtype))
    kind = rng.integers(0, 4, n)
    return np.select([kind == 0, kind == 1], [special, nans], ordinary).astype(uints(dtype)).view(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("reducer", ["min", "max"])
def test_min_max_bit_identical_to_numpy_fold(tmp_path, dtype, reducer):
    rng = np.random.default_rng(np.dtype(dtype).itemsize + (reducer == "max"))
    inputs = [random_minmax_values(rng, dtype, 4000) for _ in range(4)]
    fn = np.minimum if reducer == "min" else np.maximum
    want = numpy_fold(fn, inputs)
    assert np.isnan(want).sum() > 1000
    out = merge(tmp_path, write_inputs(tmp_path, inputs, attrs=[x[:500] for x in inputs]),
                {"x": {"reduce": reducer}, "@a": {"reduce": reducer}})
    with h5py.File(out) as m:
        got, got_attr = m["x"][()], m.attrs["a"]
    assert got.dtype == dtype and got_attr.dtype == dtype
    differ = np.flatnonzero(bits(got) != bits(want))
    assert differ.size == 0, (differ.size, [(hex(bits(got)[i]), hex(bits(want)[i])) for i in differ[:5]])
    assert np.array_equal(bits(got_attr), bits(want[:500]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_signed_zero_ties_and_nan_choice_as_numpy(tmp_path, dtype):
    u = uints(dtype)
    special = SPECIAL_BITS[np.dtype(dtype).itemsize]
    neg_zero, nan_a, nan_b = u(special[1]), u(special[4]), u(special[5])  # -0.0, a signalling NaN, a negative NaN
    a = np.array([0, neg_zero, nan_a, 0, nan_b], dtype=u).view(dtype)
    b = np.array([neg_zero, 0, nan_b, nan_a, 0], dtype=u).view(dtype)
    for reducer, fn in [("min", np.minimum), ("max", np.maximum)]:
        out = merge(tmp_path, write_inputs(tmp_path, [a, b]), {"x": {"reduce": reducer}}, f"{reducer}.h5")
        with h5py.File(out) as m:
            assert np.array_equal(bits(m["x"][()]), bits(fn(a, b))), reducer


# -- big-endian floats ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [">f2", ">f4", ">f8"])
def test_big_endian_floats(tmp_path, dtype):
    rng = np.random.default_rng(9)
    native = np.dtype(dtype).newbyteorder("=")
    if native.itemsize == 2:
        inputs = random_halves(rng, 3, 3000)
    else:
        inputs = [random_minmax_values(rng, native, 3000) for _ in range(3)]
    stored = [x.astype(dtype) for x in inputs]  # a byte swap: NaN payloads kept
    for reducer in ["sum", "mean", "min", "max"]:
        out = merge(tmp_path, write_inputs(tmp_path, stored), {"x": {"reduce": reducer}}, f"{reducer}.h5")
        if reducer in ("sum", "mean"):
            want = numpy_sum(inputs, native, mean=reducer == "mean")
        else:
            want = numpy_fold(np.minimum if reducer == "min" else np.maximum, inputs)
        with h5py.File(out) as m:
            got = m["x"][()]
        assert got.dtype == np.dtype(dtype), reducer
        assert np.array_equal(got.view(np.uint8), want.astype(dtype).view(np.uint8)), reducer


# -- bfloat16, a custom HDF5 float -------------------------------------------------------------------------------------

def bfloat16_type():
    t = h5py.h5t.IEEE_F32LE.copy()
    t.set_fields(15, 7, 8, 0, 7)  # sign, exponent position and size, mantissa position and size
    t.set_precision(16)
    t.set_size(2)
    t.set_ebias(127)
    return t


def write_bfloat16(path, dataset_bits, attr_bits):
    t = bfloat16_type()
    with h5py.File(path, "w") as f:
        d = h5py.h5d.create(f.id, b"x", t, h5py.h5s.create_simple(dataset_bits.shape))
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, dataset_bits, mtype=t)
        a = h5py.h5a.create(f.id, b"a", t, h5py.h5s.create_simple(attr_bits.shape))
        a.write(attr_bits, mtype=t)


def read_bfloat16(path):
    """The raw 16-bit patterns of "x" and "@a", and the datasets's type."""
    with h5py.File(path) as f:
        ds = f["x"].id
        x = np.zeros(ds.shape, np.uint16)
        ds.read(h5py.h5s.ALL, h5py.h5s.ALL, x, mtype=ds.get_type())
        attr = f.attrs.get_id("a")
        a = np.zeros(attr.shape, np.uint16)
        attr.read(a, mtype=attr.get_type())
        t = ds.get_type()
        return x, a, (t.get_size(), t.get_fields(), t.get_ebias(), t.get_order())


def decode_bfloat16(b):
    return (b.astype(np.uint32) << 16).view(np.float32)  # exact, payloads kept


def round_to_bfloat16(x):
    """float64 -> bfloat16 bits, to nearest even, written from the definition:
    8 significant bits, exponent range of float32, subnormals from 2**-133."""
    out = np.zeros(x.shape, np.uint16)
    for i, v in enumerate(x.tolist()):
        d = int(np.float64(v).view(np.uint64))
        sign = (d >> 63) << 15
        if np.isnan(v):
            payload = (d >> (52 - 7)) & 0x7f
            out[i] = sign | 0x7f80 | (payload or 1)
            continue
        if np.isinf(v) or v == 0:
            out[i] = sign | (0x7f80 if np.isinf(v) else 0)
            continue
        _, e = np.frexp(abs(v))  # abs(v) = m * 2**e, 0.5 <= m < 1
        q = max(int(e) - 8, -133)  # the weight of the last kept bit
        n = round(abs(v) / 2.0**q)  # exact scaling; Python rounds half to even
        value = n * 2.0**q
        if value >= 2.0**128:
            out[i] = sign | 0x7f80
        else:
            out[i] = sign | (int(np.float32(value).view(np.uint32)) >> 16)  # exact: at most 8 significant bits
    return out


def random_bfloat16(rng, n):
    kind = rng.integers(0, 4, n)
    sign = rng.integers(0, 2, n)
    exp = np.select([kind == 1, kind == 2], [rng.integers(0, 3, n), rng.integers(125, 130, n)],
                    rng.integers(0, 255, n))
    composed = (sign << 15) | (exp << 7) | rng.integers(0, 128, n)
    specials = rng.choice([0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x7f7f, 0xff7f, 0x0001], n)
    return np.select([kind == 0, kind == 3], [rng.integers(0, 1 << 16, n), specials], composed).astype(np.uint16)


@pytest.mark.parametrize("reducer", ["sum", "mean", "min", "max"])
def test_bfloat16_custom_float(tmp_path, reducer):
    rng = np.random.default_rng(21 + len(reducer))
    inputs = [random_bfloat16(rng, 4000) for _ in range(3)]
    paths = []
    for i, b in enumerate(inputs):
        paths.append(tmp_path / f"in-{i}.h5")
        write_bfloat16(paths[-1], b, b[:300])
    out = merge(tmp_path, paths, {"x": {"reduce": reducer}, "@a": {"reduce": reducer}})
    got, got_attr, got_type = read_bfloat16(out)
    assert got_type == (2, (15, 7, 8, 0, 7), 127, h5py.h5t.ORDER_LE)
    values = [decode_bfloat16(b) for b in inputs]
    if reducer in ("sum", "mean"):
        acc = float64_sum(values, mean=reducer == "mean")
        want = round_to_bfloat16(acc)
        assert np.isnan(acc).sum() > 100
    else:
        folded = numpy_fold(np.minimum if reducer == "min" else np.maximum, values)  # on the decoded float32 values
        assert not (folded.view(np.uint32) & 0xffff).any()
        want = (folded.view(np.uint32) >> 16).astype(np.uint16)
    differ = np.flatnonzero(got != want)
    assert differ.size == 0, (differ.size, [(hex(got[i]), hex(want[i])) for i in differ[:5]])
    assert np.array_equal(got_attr, want[:300])


def test_bfloat16_ties(tmp_path):
    """1 + 2**-8 is a bfloat16 tie: to even, 1.0; 1 + 2**-8 + 2**-16 is just above it: up."""
    one, tie, tiny = 0x3f80, 0x3b80, 0x3780  # 1.0, 2**-8, 2**-16
    inputs = [np.array([one, one], np.uint16), np.array([tie, tie], np.uint16), np.array([0, tiny], np.uint16)]
    paths = []
    for i, b in enumerate(inputs):
        paths.append(tmp_path / f"in-{i}.h5")
        write_bfloat16(paths[-1], b, b)
    got, got_attr, _ = read_bfloat16(merge(tmp_path, paths, {"x": {"reduce": "sum"}, "@a": {"reduce": "sum"}}))
    assert [hex(v) for v in got] == ["0x3f80", "0x3f81"]
    assert np.array_equal(got_attr, got)


# -- floats double cannot hold are refused ----------------------------------------------------------------------------

def test_float_wider_than_double_is_refused(tmp_path):
    if np.dtype(np.longdouble).itemsize <= 8:
        pytest.skip("long double is double here")
    paths = write_inputs(tmp_path, [np.ones(3, np.longdouble)] * 2)
    spec = write_spec(tmp_path / "s.json", {"x": {"reduce": "sum"}})
    res = run("merge", *paths, "-s", spec, "-o", tmp_path / "m.h5")
    assert_one_line_error(res, 1, "/x", "cannot reduce dtype float128", "float64 holds exactly")
    assert not (tmp_path / "m.h5").exists()
