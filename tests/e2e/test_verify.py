"""merge verifies what it merges: the files of a split directory, and files
given one by one beside their manifest, must be the files the split wrote
(size, XXH3-128 digest, rows), all of them, in the split's order."""
import json
import shutil

import h5py
import numpy as np

from conftest import assert_one_line_error, h5diff, run, write_spec


def make(path, rows=12, seed=0):
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        f["x"] = rng.integers(0, 1000, size=(rows, 3))
        f["cols"] = np.arange(4 * rows).reshape(4, rows)
        f["t"] = np.float32(0.5)
    return path


def split(tmp_path, name, seed=0, *flags):
    src = make(tmp_path / f"{name}.h5", seed=seed)
    spec = write_spec(tmp_path / "s.json", {"x": 0, "cols": 1, "t": "replicate"})
    run("split", src, "-s", spec, "-n", 3, *flags, "-o", tmp_path / name, check=0)
    return src, sorted((tmp_path / name).glob("microbatch-*.h5"))


def refused(res, *needles, out=None):
    assert_one_line_error(res, 1, *needles)
    assert out is None or not out.exists()


def test_a_file_replaced_by_another_splits_piece_is_refused(tmp_path):
    _, files = split(tmp_path, "a", seed=0)
    _, others = split(tmp_path, "b", seed=1)
    shutil.copy(others[1], files[1])  # same shapes, other values: the same size
    out = tmp_path / "m.h5"
    refused(run("merge", tmp_path / "a", "-o", out), "microbatch-00001.h5", "content digest differs", out=out)
    refused(run("merge", *files, "-o", out), "microbatch-00001.h5", "content digest differs", out=out)
    # --no-verify skips the digest (the values then merge: the rows and sizes still match)
    run("merge", tmp_path / "a", "--no-verify", "-o", out, check=0)


def test_a_file_of_another_size_is_refused_even_without_digests(tmp_path):
    _, files = split(tmp_path, "a")
    with open(files[2], "ab") as f:
        f.write(b"\0" * 10)
    out = tmp_path / "m.h5"
    for flags in ([], ["--no-verify"]):
        refused(run("merge", tmp_path / "a", *flags, "-o", out), "microbatch-00002.h5", "bytes, but the manifest",
                out=out)


def test_files_beside_their_manifest_take_its_spec_and_order(tmp_path):
    src, files = split(tmp_path, "a")
    out = tmp_path / "m.h5"
    # mb/*.h5 uses the manifest's spec ("cols" is cut on axis 1, which the default spec would not do)
    run("merge", *files, "-o", out, check=0)
    assert h5diff(src, out) == 0
    refused(run("merge", files[0], files[0], files[1], "-o", tmp_path / "x.h5"), "microbatch-00000.h5",
            "given as input 1", out=tmp_path / "x.h5")
    refused(run("merge", files[0], files[2], "-o", tmp_path / "x.h5"), "is microbatch file 2", "given as input 1",
            out=tmp_path / "x.h5")


def test_files_of_different_splits_are_refused(tmp_path):
    _, a = split(tmp_path, "a", seed=0)
    _, b = split(tmp_path, "b", seed=1)
    out = tmp_path / "m.h5"
    refused(run("merge", a[0], b[1], a[2], "-o", out), "microbatch-00001.h5", "files of different splits", out=out)
    # a plain file among a split's files
    plain = tmp_path / "plain.h5"
    shutil.copy(a[1], plain)
    refused(run("merge", a[0], plain, a[2], "-o", out), "plain.h5", "not listed in", "different splits", out=out)


def test_rows_are_checked_against_the_manifest(tmp_path):
    _, files = split(tmp_path, "a")
    manifest = tmp_path / "a" / "manifest.json"
    m = json.loads(manifest.read_text())
    m["datasets"]["/x"]["rows"][0] = [[0, 3, 1]]  # says 3 rows; the file holds 4
    m["datasets"]["/x"]["rows"][1] = [[3, 8, 1]]
    manifest.write_text(json.dumps(m))
    out = tmp_path / "m.h5"
    refused(run("merge", tmp_path / "a", "-o", out), "microbatch-00000.h5", "/x has 4 rows on axis 0",
            "manifest of its split says 3", out=out)


def test_the_split_id_tells_splits_apart(tmp_path):
    _, _ = split(tmp_path, "a", seed=0)
    _, _ = split(tmp_path, "b", seed=1)
    ida = json.loads((tmp_path / "a" / "manifest.json").read_text())["split_id"]
    idb = json.loads((tmp_path / "b" / "manifest.json").read_text())["split_id"]
    assert ida != idb


def test_a_reordered_manifest_is_refused(tmp_path):
    # Entries swapped with their sizes and digests: every file still matches
    # its entry, but entry 0 would then take file 1's rows.
    _, files = split(tmp_path, "a")
    manifest = tmp_path / "a" / "manifest.json"
    m = json.loads(manifest.read_text())
    m["files"][0], m["files"][1] = m["files"][1], m["files"][0]
    manifest.write_text(json.dumps(m))
    out = tmp_path / "m.h5"
    for flags in ([], ["--no-verify"]):
        refused(run("merge", tmp_path / "a", *flags, "-o", out), "entry 0 of \"files\" is \"microbatch-00001.h5\"",
                "microbatch-00000.h5", "reordered", out=out)
        refused(run("merge", *files, *flags, "-o", out), "reordered", out=out)


def test_files_swapped_on_disk_are_caught_by_their_digests(tmp_path):
    _, files = split(tmp_path, "a")
    tmp = tmp_path / "tmp.h5"
    files[0].rename(tmp)
    files[1].rename(files[0])
    tmp.rename(files[1])
    out = tmp_path / "m.h5"
    refused(run("merge", tmp_path / "a", "-o", out), "microbatch-00000.h5", "content digest differs", out=out)
