"""Many inputs: merge opens each input once and closes it before the next
(the first stays open as the model), so it merges more microbatch files than
the process may hold descriptors; what outlives one input (reducers'
accumulators, small results assembled in memory, offsets' token counts) is
carried within --buffer-size, and a reduced dataset too large for it is
reduced block by block after the walk. Judged with h5diff, h5py and numpy."""
import json
import resource
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from conftest import assert_one_line_error, h5diff, listing, make_layout_batch, make_packed, run, write_spec
from test_reducers import bits, numpy_fold, numpy_sum

NOFILE = 64  # descriptors a limited run may hold: far fewer than its inputs


def limit_descriptors():
    # Soft and hard limit: microbatch raises its soft limit to the hard one.
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


def limited(*args, check=None):
    """run(), with at most NOFILE open file descriptors."""
    return run(*args, check=check, preexec_fn=limit_descriptors)


def loose_copy(directory, dest, pattern="*.h5"):
    """The split's files, copied where no manifest.json lies beside them, in order."""
    dest.mkdir()
    files = []
    for f in sorted(directory.glob(pattern)):
        shutil.copy(f, dest / f.name)
        files.append(dest / f.name)
    return files


def test_the_limit_holds_in_the_child():
    out = subprocess.run(["sh", "-c", "ulimit -n; ulimit -Hn"], capture_output=True, text=True,
                         preexec_fn=limit_descriptors, check=True).stdout.split()
    assert out == [str(NOFILE), str(NOFILE)]


# -- 1. more inputs than descriptors ---------------------------------------------------------------------------------

ROWS, PIECES = 3000, 300


def make_batch(path):
    rng = np.random.default_rng(1)
    with h5py.File(path, "w") as f:
        f["ids"] = np.arange(ROWS, dtype=np.int64) * 7 - 5
        f["x"] = rng.normal(size=(ROWS, 4)).astype(np.float32)
        f["temperature"] = np.float64(0.7)
        f.attrs["step"] = np.int64(1234)
        f["x"].attrs["unit"] = "logit"
    return path


@pytest.fixture(scope="module")
def split300(tmp_path_factory):
    """The batch and its split into 300 microbatches (split without the limit)."""
    root = tmp_path_factory.mktemp("split300")
    src = make_batch(root / "batch.h5")
    run("split", src, "-n", PIECES, "-o", root / "mb", check=0)
    return src, root / "mb"


def test_split_into_more_files_than_descriptors(tmp_path):
    src = make_batch(tmp_path / "batch.h5")
    # Split keeps fewer outputs open at once under a low descriptor limit.
    res = limited("split", src, "-n", PIECES, "-o", tmp_path / "mb")
    assert res.code == 0, res
    files = sorted((tmp_path / "mb").glob("microbatch-*.h5"))
    assert len(files) == PIECES and (tmp_path / "mb" / "manifest.json").exists()
    with h5py.File(src) as f:
        ids, x = f["ids"][()], f["x"][()]
    for path, want_ids, want_x in zip(files, np.array_split(ids, PIECES), np.array_split(x, PIECES)):
        with h5py.File(path) as m:
            assert np.array_equal(m["ids"][()], want_ids) and np.array_equal(m["x"][()], want_x)
            assert m["temperature"][()] == 0.7 and m.attrs["step"] == 1234


def test_merge_directory_of_more_files_than_descriptors(tmp_path, split300):
    src, mb = split300
    res = limited("merge", mb, "-o", tmp_path / "m.h5")
    assert res.code == 0, res
    assert h5diff(src, tmp_path / "m.h5") == 0
    with h5py.File(tmp_path / "m.h5") as m, h5py.File(src) as f:
        assert np.array_equal(m["ids"][()], f["ids"][()]) and np.array_equal(m["x"][()], f["x"][()])
        assert m.attrs["step"] == 1234 and m["temperature"][()] == 0.7


def test_merge_virtual_of_more_files_than_descriptors(tmp_path, split300):
    src, mb = split300
    res = limited("merge", mb, "--virtual", "-o", tmp_path / "v.h5")
    assert res.code == 0, res
    # libhdf5 would read the sources past the limit as fill values: merge says so.
    assert "warning" in res.err and "descriptor limit (64)" in res.err and "fill values" in res.err
    # Reading a virtual dataset opens its sources: without the limit.
    with h5py.File(tmp_path / "v.h5") as v, h5py.File(src) as f:
        assert v["ids"].is_virtual and v["x"].is_virtual
        assert len(v["x"].virtual_sources()) == PIECES
        assert np.array_equal(v["ids"][()], f["ids"][()]) and np.array_equal(v["x"][()], f["x"][()])
        assert v["x"].dtype == np.float32 and v["x"].attrs["unit"] == "logit"
        assert v["temperature"][()] == 0.7 and v.attrs["step"] == 1234
    assert h5diff(src, tmp_path / "v.h5") == 0


def test_merge_virtual_within_the_limit_does_not_warn(tmp_path):
    src = make_batch(tmp_path / "batch.h5")
    run("split", src, "-n", 20, "-o", tmp_path / "mb", check=0)
    res = limited("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "v.h5", check=0)
    assert "warning" not in res.err


def test_merge_files_without_manifest_surveys_more_files_than_descriptors(tmp_path, split300):
    # No manifest: the per-input lengths come from one pass over the inputs' shapes.
    src, mb = split300
    files = loose_copy(mb, tmp_path / "loose")
    res = limited("merge", *files, "-o", tmp_path / "m.h5")
    assert res.code == 0, res
    assert h5diff(src, tmp_path / "m.h5") == 0
    res = limited("merge", *files, "--virtual", "-o", tmp_path / "v.h5")
    assert res.code == 0, res
    with h5py.File(tmp_path / "v.h5") as v, h5py.File(src) as f:
        assert np.array_equal(v["ids"][()], f["ids"][()]) and np.array_equal(v["x"][()], f["x"][()])


# -- 2. data-parallel layouts with many inputs -----------------------------------------------------------------------

DP_SPEC = {"ids": 0, "cols": 1, "text": 0, "scale": "replicate"}


@pytest.mark.parametrize("layout,align", [("per-microbatch", False), ("per-rank", True)])
def test_data_parallel_merge_of_many_files(tmp_path, layout, align):
    src = make_layout_batch(tmp_path / "in.h5", 1000)
    spec = write_spec(tmp_path / "s.json", DP_SPEC)
    flags = ["--dp-degree", 2, "--layout", layout] + (["--align"] if align else [])
    run("split", src, "-s", spec, "-n", 100, *flags, "-o", tmp_path / "mb", check=0)
    files = [tmp_path / "mb" / f["name"] for f in json.loads((tmp_path / "mb" / "manifest.json").read_text())["files"]]
    assert len(files) == (100 if layout == "per-microbatch" else 200)
    res = limited("merge", tmp_path / "mb", "-o", tmp_path / "dir.h5")
    assert res.code == 0, res
    assert h5diff(src, tmp_path / "dir.h5") == 0
    # the files alone, with the same flags: lengths from the survey
    loose = loose_copy(tmp_path / "mb", tmp_path / "loose")
    assert [f.name for f in loose] == [f.name for f in files]
    res = limited("merge", *loose, "-s", spec, *flags, "-o", tmp_path / "files.h5")
    assert res.code == 0, res
    assert h5diff(src, tmp_path / "files.h5") == 0
    with h5py.File(tmp_path / "files.h5") as m, h5py.File(src) as f:
        assert np.array_equal(m["cols"][()], f["cols"][()]) and list(m["text"][()]) == list(f["text"][()])


# -- 3. packed sequences in many microbatches ------------------------------------------------------------------------

PACKED_SPEC = {
    "tokens": {"packed": "/cu_seqlens"},
    "labels": {"packed": "/cu_seqlens", "axis": -1},
    "cu_seqlens": "offsets",
    "seq_ids": {"per_sequence": "/cu_seqlens"},
    "max_len": "replicate",
}


def test_packed_sequences_merged_from_many_microbatches(tmp_path):
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 40, 600)
    src = tmp_path / "in.h5"
    offsets = make_packed(src, lengths, members=("tokens", "labels", "cu_seqlens", "seq_ids", "max_len"))
    spec = write_spec(tmp_path / "s.json", PACKED_SPEC)
    run("split", src, "-s", spec, "-n", 150, "-o", tmp_path / "mb", check=0)
    runs = json.loads((tmp_path / "mb" / "manifest.json").read_text())["sequences"]["runs"]
    assert len(runs) == 150
    loose = loose_copy(tmp_path / "mb", tmp_path / "loose")
    with h5py.File(loose[-1]) as m:
        assert m["cu_seqlens"][0] == 0  # rebased: merge must shift it back
    for name, inputs, flags in [("dir.h5", [tmp_path / "mb"], []), ("files.h5", loose, ["-s", spec])]:
        res = limited("merge", *inputs, *flags, "-o", tmp_path / name)
        assert res.code == 0, res
        assert h5diff(src, tmp_path / name) == 0
        with h5py.File(tmp_path / name) as m, h5py.File(src) as f:
            assert m["cu_seqlens"].dtype == np.int32 and np.array_equal(m["cu_seqlens"][()], offsets)
            assert np.array_equal(m["tokens"][()], f["tokens"][()])
            assert np.array_equal(m["labels"][()], f["labels"][()])
            assert list(m["seq_ids"][()]) == list(f["seq_ids"][()])


# -- 4. reducers over many plain files: carried, and deferred past the budget ----------------------------------------

REDUCED = 20


def write_reduced_inputs(tmp_path):
    """Plain files (no split): the same tree, large reduced datasets, a split leaf and a reduced attribute."""
    rng = np.random.default_rng(4)
    values = {"loss": [], "lo": [], "hi": [], "rows": [], "@tokens": []}
    paths = []
    for i in range(REDUCED):
        loss = (rng.normal(size=(400, 1000)) * 10.0 ** rng.integers(-4, 5, (400, 1000))).astype(np.float32)
        lo = rng.integers(-2**31, 2**31, (200, 1000), dtype=np.int32)
        hi = rng.integers(-2**63, 2**63 - 1, (100, 1000), dtype=np.int64)
        rows = np.full((i % 3 + 1, 3), i, dtype=np.float64)
        tokens = np.int64(1000 + i)
        p = tmp_path / f"out-{i:03d}.h5"
        with h5py.File(p, "w") as f:
            f["loss"], f["stats/lo"], f["stats/hi"], f["rows"] = loss, lo, hi, rows
            f.attrs["tokens"] = tokens
        for key, v in [("loss", loss), ("lo", lo), ("hi", hi), ("rows", rows), ("@tokens", tokens)]:
            values[key].append(v)
        paths.append(p)
    return paths, values


REDUCE_SPEC = {"loss": {"reduce": "sum"}, "stats": {"lo": {"reduce": "min"}, "hi": {"reduce": "max"}}, "rows": 0,
               "@tokens": {"reduce": "sum"}}


def test_reducers_over_many_inputs_deferred_and_carried_agree_with_numpy(tmp_path):
    paths, values = write_reduced_inputs(tmp_path)
    spec = write_spec(tmp_path / "s.json", REDUCE_SPEC)
    # 400 x 1000 float32 accumulators need 8 MB: past a 1 MiB budget, reduced block by block after the walk.
    for name, flags in [("deferred.h5", ["--buffer-size", 1]), ("carried.h5", [])]:
        res = limited("merge", *paths, "-s", spec, *flags, "-o", tmp_path / name)
        assert res.code == 0, res
    want_loss = numpy_sum([x.ravel() for x in values["loss"]], np.float32).reshape(400, 1000)
    assert not np.array_equal(want_loss, numpy_fold(np.add, values["loss"]))  # float32 adds would differ
    for name in ["deferred.h5", "carried.h5"]:
        with h5py.File(tmp_path / name) as m:
            loss = m["loss"][()]
            assert loss.dtype == np.float32
            differ = np.flatnonzero(bits(loss) != bits(want_loss))
            assert differ.size == 0, (name, differ.size, differ[:5])
            assert m["stats/lo"].dtype == np.int32 and m["stats/hi"].dtype == np.int64
            assert np.array_equal(m["stats/lo"][()], numpy_fold(np.minimum, values["lo"])), name
            assert np.array_equal(m["stats/hi"][()], numpy_fold(np.maximum, values["hi"])), name
            assert np.array_equal(m["rows"][()], np.concatenate(values["rows"])), name
            assert m.attrs["tokens"] == sum(range(1000, 1000 + REDUCED)), name
    assert h5diff(tmp_path / "deferred.h5", tmp_path / "carried.h5") == 0


def test_deferred_mean_and_sum_overflow_name_the_element(tmp_path):
    # A deferred integer sum that overflows is refused naming the flat element
    # index (counted over the whole dataset, not the block); nothing is left.
    rng = np.random.default_rng(6)
    big = [rng.integers(1, 2**26, (300, 1000), dtype=np.int32) for _ in range(REDUCED)]  # 20 of them fit int32
    big[-1][250, 7] = 2**31 - 1 - 5  # with the positive values before it, this one element overflows
    paths = []
    for i, v in enumerate(big):
        paths.append(tmp_path / f"in-{i:03d}.h5")
        with h5py.File(paths[-1], "w") as f:
            f["c"] = v
            f["m"] = (v[:200] / 7).astype(np.float32)
    spec = write_spec(tmp_path / "mean.json", {"c": {"reduce": "max"}, "m": {"reduce": "mean"}})
    res = limited("merge", *paths, "-s", spec, "--buffer-size", 1, "-o", tmp_path / "mean.h5")
    assert res.code == 0, res
    with h5py.File(tmp_path / "mean.h5") as m:
        want = numpy_sum([(v[:200] / 7).astype(np.float32).ravel() for v in big], np.float32, mean=True)
        assert np.array_equal(bits(m["m"][()].ravel()), bits(want))
        assert np.array_equal(m["c"][()], numpy_fold(np.maximum, big))
    spec = write_spec(tmp_path / "sum.json", {"c": {"reduce": "sum"}, "m": {"reduce": "mean"}})
    (tmp_path / "o").mkdir()
    res = limited("merge", *paths, "-s", spec, "--buffer-size", 1, "-o", tmp_path / "o" / "sum.h5")
    total = sum(int(v[250, 7]) for v in big)
    assert_one_line_error(res, 1, "/c", "sum overflows int32", f"element {250 * 1000 + 7}", str(total))
    assert listing(tmp_path / "o") == []


# -- 5. errors name the right input among many ------------------------------------------------------------------------

def write_plain(tmp_path, n=50, tweak=None):
    paths = []
    for i in range(n):
        p = tmp_path / f"mb-{i:03d}.h5"
        with h5py.File(p, "w") as f:
            f["x"] = np.full((i % 4 + 1, 2), i, dtype=np.int32)
            f["g/y"] = np.arange(3 * (i % 2 + 1), dtype=np.float32)
            f["cfg"] = np.array([1.5, 2.5, 3.5])
            f.attrs["step"] = 9
            if tweak and i in tweak:
                tweak[i](f)
        paths.append(p)
    return paths


ERR_SPEC = {"x": 0, "g": {"y": 0}, "cfg": "replicate"}


def test_replicated_difference_names_the_input_among_many(tmp_path):
    def change(f):
        f["cfg"][1] = -2.5
    (tmp_path / "in").mkdir()
    paths = write_plain(tmp_path / "in", tweak={37: change, 45: change})
    spec = write_spec(tmp_path / "s.json", ERR_SPEC)
    (tmp_path / "o").mkdir()
    res = limited("merge", *paths, "-s", spec, "-o", tmp_path / "o" / "m.h5")
    assert_one_line_error(res, 1, "/cfg", "microbatch 0", "microbatch 37", "mb-037.h5",
                          "[1.5, 2.5, 3.5] vs [1.5, -2.5, 3.5]")
    assert "mb-045" not in res.err and "microbatch 36" not in res.err
    assert listing(tmp_path / "o") == []


@pytest.mark.parametrize("missing,needles", [
    ("x", ["mb-041.h5", "member /x is missing"]),            # a cut dataset: found by the survey
    ("g/y", ["mb-041.h5", "member /g/y is missing"]),        # in a group
    ("cfg", ["mb-041.h5", "member /cfg is missing"]),        # a replicated one: found on the walk
])
def test_missing_member_names_the_input_among_many(tmp_path, missing, needles):
    (tmp_path / "in").mkdir()
    paths = write_plain(tmp_path / "in", tweak={41: lambda f: f.__delitem__(missing)})
    spec = write_spec(tmp_path / "s.json", ERR_SPEC)
    (tmp_path / "o").mkdir()
    res = limited("merge", *paths, "-s", spec, "-o", tmp_path / "o" / "m.h5")
    assert_one_line_error(res, 1, *needles)
    assert "mb-040" not in res.err and "mb-042" not in res.err
    assert listing(tmp_path / "o") == []
    res = limited("merge", *paths, "-s", spec, "--virtual", "-o", tmp_path / "o" / "v.h5")
    assert_one_line_error(res, 1, *needles)
    assert listing(tmp_path / "o") == []


def test_split_files_tampered_without_manifest_name_the_input(tmp_path):
    # A split's files on their own: one with another replicated value, one with a row too many.
    src = make_layout_batch(tmp_path / "in.h5", 200)
    spec = write_spec(tmp_path / "s.json", DP_SPEC)
    run("split", src, "-s", spec, "-n", 50, "-o", tmp_path / "mb", check=0)
    loose = loose_copy(tmp_path / "mb", tmp_path / "loose")
    with h5py.File(loose[37], "a") as f:
        f["scale"][()] = 3.0
    (tmp_path / "o").mkdir()
    res = limited("merge", *loose, "-s", spec, "-o", tmp_path / "o" / "m.h5")
    assert_one_line_error(res, 1, "/scale", "microbatch 37", "microbatch-00037.h5", "2.5 vs 3.0")
    assert listing(tmp_path / "o") == []


# -- 6. small results assembled in memory across inputs ---------------------------------------------------------------

def make_small_datasets(path):
    """200 small datasets of many kinds; the float64 ones alone (100 x 16 KB) exceed a 1 MiB budget."""
    rng = np.random.default_rng(8)
    spec = {"*": None}  # the default (axis 0) for every member not named
    with h5py.File(path, "w") as f:
        for k in range(200):
            g = f"g{k % 10}"
            name = f"d{k:03d}"
            kind = k % 8
            if kind in (0, 1, 2, 3):
                f[f"{g}/{name}"] = rng.normal(size=(1000, 2))
            elif kind == 4:
                f[f"{g}/{name}"] = np.array([f"s{k}-{i}" * (i % 5) for i in range(60)], dtype=h5py.string_dtype())
            elif kind == 5:
                f[f"{g}/{name}"] = rng.integers(-100, 100, (3, 80), dtype=np.int16)
                spec.setdefault(g, {"*": None})[name] = 1  # cut on axis 1
            elif kind == 6:
                f.create_dataset(f"{g}/{name}", data=rng.integers(0, 9, (400, 3)), chunks=(50, 3), compression="gzip")
            else:
                rec = np.zeros(40, dtype=[("a", "<i4"), ("b", "S3"), ("c", "<f2")])
                rec["a"] = np.arange(40) * k
                rec["b"] = [b"ab%d" % (i % 10) for i in range(40)]
                rec["c"] = np.arange(40) / 8
                f[f"{g}/{name}"] = rec
            f[f"{g}/{name}"].attrs["k"] = k
        f["step"] = np.int64(3)
    return spec


def test_small_results_assembled_across_many_inputs_within_the_budget(tmp_path):
    src = tmp_path / "in.h5"
    spec = write_spec(tmp_path / "s.json", make_small_datasets(src))
    run("split", src, "-s", spec, "-n", 20, "-o", tmp_path / "mb", check=0)
    loose = loose_copy(tmp_path / "mb", tmp_path / "loose")
    for name, inputs, flags in [("small.h5", [tmp_path / "mb"], ["--buffer-size", 1]),
                                ("default.h5", [tmp_path / "mb"], []),
                                ("files.h5", loose, ["-s", spec, "--buffer-size", 1])]:
        res = limited("merge", *inputs, *flags, "-o", tmp_path / name)
        assert res.code == 0, (name, res)
        assert h5diff(src, tmp_path / name) == 0, name
    with h5py.File(tmp_path / "small.h5") as m, h5py.File(src) as f:
        for k in range(0, 200, 7):
            path = f"g{k % 10}/d{k:03d}"
            assert np.array_equal(m[path][()], f[path][()]), path
