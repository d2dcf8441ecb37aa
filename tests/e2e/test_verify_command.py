"""microbatch verify: a split directory, local or by URL, checked against its
manifest without merging it. Intact splits of every layout pass; a missing,
resized, changed or swapped file, rows the manifest does not record and a
microbatch file the manifest does not list fail (exit 1), each named; an
edited manifest, a file instead of a directory and a directory without a
split are refused. The directory is never touched."""
import json
import os
import shutil

import h5py
import numpy as np
import pytest

import servers
from conftest import (ENV, MIXED_SPEC, assert_one_line_error, listing, make_mixed_batch, run, summary,
                      write_spec)

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "sample_data")
N = 7


@pytest.fixture
def split(tmp_path):
    src = make_mixed_batch(tmp_path / "in.h5")
    spec = write_spec(tmp_path / "s.json", MIXED_SPEC)
    out = tmp_path / "mb"
    run("split", src, "-s", spec, "-n", N, "-o", out, check=0)
    return out


def files_of(directory):
    """The split's files: microbatch-*, rank-*, cp-* (every name but the manifest's)."""
    return sorted(n for n in listing(directory) if n.endswith(".h5"))


def state_of(directory):
    """Every entry with its size and modification time: what verify must leave as it was."""
    return {n: (os.stat(directory / n).st_size, os.stat(directory / n).st_mtime_ns) for n in listing(directory)}


def report(res):
    return summary(res, "verify-report")


def statuses(res):
    return {f["name"]: f["status"] for f in report(res)["files"] if f["status"] != "intact"}


def test_an_intact_split_passes_and_is_left_as_it_was(split):
    before = state_of(split)
    res = run("verify", split, check=0)
    assert f"{split}: intact: {N} files" in res.err and "sizes, digests and rows" in res.err
    r = report(run("verify", split, "--json", check=0))
    assert r["intact"] and r["listed"] and r["extra"] == []
    assert [f["name"] for f in r["files"]] == files_of(split)
    assert {f["status"] for f in r["files"]} == {"intact"}
    assert r["split_id"] == json.loads((split / "manifest.json").read_text())["split_id"]
    assert state_of(split) == before


@pytest.mark.parametrize("name, options", [
    ("batch", ["-n", "4"]),
    ("batch", ["-n", "2", "--dp-degree", "2", "--layout", "per-rank"]),
    ("packed", ["-n", "4"]),
    ("cp_batch", ["-n", "2", "--cp-degree", "2"]),
    ("cp_packed", ["-n", "2", "--cp-degree", "2"]),
])
def test_every_layout_of_the_sample_data_verifies(tmp_path, name, options):
    out = tmp_path / "mb"
    run("split", os.path.join(SAMPLE, f"{name}.h5"), "-s", os.path.join(SAMPLE, f"{name}_spec.json"), *options,
        "-o", out, check=0)
    r = report(run("verify", out, "--json", check=0))
    assert r["intact"] and len(r["files"]) == len(files_of(out)) > 1


def test_a_missing_file_is_named(split):
    os.remove(split / "microbatch-00003.h5")
    res = run("verify", split)
    assert res.code == 1
    assert f"{split}/microbatch-00003.h5: missing" in res.err
    assert f"{split}: not intact: 1 of {N} files missing or changed, 0 files not listed" in res.err
    res = run("verify", split, "--json")
    assert res.code == 1 and statuses(res) == {"microbatch-00003.h5": "missing"} and not report(res)["intact"]


def test_a_file_that_cannot_be_looked_at_is_an_error_not_missing(split):
    os.remove(split / "microbatch-00003.h5")
    os.symlink("microbatch-00003.h5", split / "microbatch-00003.h5")  # a loop: stat fails with ELOOP
    assert_one_line_error(run("verify", split), 1,
                          "microbatch-00003.h5: cannot read (Too many levels of symbolic links)")


def test_a_resized_file_and_a_changed_one_are_told_apart(split):
    with open(split / "microbatch-00001.h5", "ab") as f:
        f.write(b"\0")
    data = bytearray((split / "microbatch-00005.h5").read_bytes())
    data[-1] ^= 0xFF  # the last byte: the same size, other content
    (split / "microbatch-00005.h5").write_bytes(bytes(data))
    res = run("verify", split, "--json")
    assert res.code == 1
    assert statuses(res) == {"microbatch-00001.h5": "size", "microbatch-00005.h5": "digest"}
    size = (split / "microbatch-00001.h5").stat().st_size
    assert f"microbatch-00001.h5: {size} bytes, but the manifest says {size - 1}" in res.err
    assert "microbatch-00005.h5: its content digest differs from the manifest's" in res.err


def test_two_files_of_one_size_swapped_are_caught(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(24).reshape(12, 2)  # every microbatch file the same size
    out = tmp_path / "mb"
    run("split", src, "-n", "4", "-o", out, check=0)
    a, b = out / "microbatch-00000.h5", out / "microbatch-00001.h5"
    assert a.stat().st_size == b.stat().st_size
    a.rename(tmp_path / "a")
    b.rename(a)
    (tmp_path / "a").rename(b)
    res = run("verify", out, "--json")
    assert res.code == 1 and statuses(res) == {"microbatch-00000.h5": "digest", "microbatch-00001.h5": "digest"}


def test_rows_the_manifest_does_not_record_are_named(split):
    # The split id covers the spec, options and files, not the row records: a manifest whose rows were
    # edited still names the right files, and only the files themselves can tell.
    manifest = split / "manifest.json"
    m = json.loads(manifest.read_text())
    path = next(p for p, d in m["datasets"].items() if d["axis"] == 0 and "positions" not in d)
    start, stop, step = m["datasets"][path]["rows"][0][0]
    m["datasets"][path]["rows"][0] = [[start, stop - 1, step]]
    manifest.write_text(json.dumps(m))
    res = run("verify", split, "--json")
    assert res.code == 1 and statuses(res) == {"microbatch-00000.h5": "rows"}
    held = (stop - start) // step
    assert f"microbatch-00000.h5: {path} has {held} rows on axis 0, but the manifest says {held - 1}" in res.err


def test_a_microbatch_file_the_manifest_does_not_list_fails_other_files_do_not(split):
    shutil.copy(split / "microbatch-00000.h5", split / "microbatch-00099.h5")
    (split / "notes.txt").write_text("mine")
    (split / ".microbatch-00007.h5.tmp-123").write_text("a killed run's temporary")
    res = run("verify", split, "--json")
    assert res.code == 1
    r = report(res)
    assert r["extra"] == ["microbatch-00099.h5"] and statuses(res) == {}
    assert f"{split}/microbatch-00099.h5: not listed in {split}/manifest.json" in res.err
    os.remove(split / "microbatch-00099.h5")
    run("verify", split, check=0)


def test_an_edited_manifest_is_refused(split):
    manifest = split / "manifest.json"
    m = json.loads(manifest.read_text())
    m["files"][2]["xxh3_128_blocks"] = "0" * 32  # the file's own digest stays what it was
    manifest.write_text(json.dumps(m))
    assert_one_line_error(run("verify", split), 1, "manifest.json: its split_id does not match",
                          "the manifest was edited")
    res = run("verify", split, "--json")
    assert res.code == 1 and summary(res, "error")["error"]["exit_status"] == 1


def test_what_is_not_a_split_directory_is_refused(split, tmp_path):
    assert_one_line_error(run("verify", split / "microbatch-00000.h5"), 2, "is not a split directory")
    assert_one_line_error(run("verify", tmp_path / "nowhere"), 1, "nowhere: no such directory")
    (tmp_path / "empty").mkdir()
    assert_one_line_error(run("verify", tmp_path / "empty"), 1, "manifest.json")
    assert_one_line_error(run("verify"), 2, "dir is required")


# --- remote -----------------------------------------------------------------------

REMOTE_ENV = servers.aws_isolated(ENV)
REMOTE_ENV.update(AWS_ENDPOINT_URL="http://127.0.0.1:9", MICROBATCH_HTTP_TIMEOUT="10")


@pytest.fixture(scope="module")
def web():
    with servers.nginx() as server:
        yield server


@pytest.fixture(scope="module")
def s3():
    with servers.s3() as server:
        yield server


def test_a_split_on_a_web_server_verifies_and_a_missing_file_is_named(web, split, tmp_path):
    base = web.put_dir(split, "web-intact")
    r = report(run("verify", f"{base}/", "--json", env=REMOTE_ENV, check=0))
    assert r["intact"] and not r["listed"] and len(r["files"]) == N
    os.remove(split / "microbatch-00004.h5")
    base = web.put_dir(split, "web-missing")
    res = run("verify", f"{base}/manifest.json", "--json", env=REMOTE_ENV)
    assert res.code == 1 and statuses(res) == {"microbatch-00004.h5": "missing"}
    assert "an HTTP(S) URL cannot be listed" in res.err
    assert_one_line_error(run("verify", f"{base}/microbatch-00000.h5", env=REMOTE_ENV), 2,
                          "is not a split directory")


def test_a_split_in_s3_verifies(s3, split):
    s3.put_dir(split, "s3-intact")
    r = report(run("verify", s3.s3_url("s3-intact/"), "--json", env=s3.env(REMOTE_ENV), check=0))
    assert r["intact"] and r["listed"] and [f["name"] for f in r["files"]] == files_of(split)


def test_credentials_that_may_read_but_not_list_verify_the_listed_files(s3, split):
    s3.put_dir(split, "s3-unlisted")
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("GET", "list-type=2", "403")
        res = run("verify", s3.s3_url("s3-unlisted/"), "--json", env=dict(s3.env(REMOTE_ENV),
                                                                            AWS_ENDPOINT_URL=proxy.endpoint))
    r = report(res)
    assert res.code == 0 and r["intact"] and not r["listed"] and len(r["files"]) == N, res
    assert "the prefix cannot be listed" in res.err and "AccessDenied" in res.err


def test_an_s3_prefix_is_listed_for_files_the_manifest_does_not_list(s3, split):
    s3.put_dir(split, "s3-extra")
    s3.put(split / "microbatch-00000.h5", "s3-extra/microbatch-00099.h5")  # another split's, say
    s3.put(split / "microbatch-00000.h5", "s3-extra/notes.txt")  # not named as an output: left alone
    s3.put(split / "microbatch-00000.h5", "s3-extra/sub/microbatch-00098.h5")  # below the prefix: not beside it
    for target in (s3.s3_url("s3-extra/"), s3.s3_url("s3-extra/manifest.json")):
        res = run("verify", target, "--json", env=s3.env(REMOTE_ENV))
        r = report(res)
        assert res.code == 1 and r["listed"] and r["extra"] == ["microbatch-00099.h5"] and statuses(res) == {}
        assert "s3://bkt/s3-extra/microbatch-00099.h5: not listed in s3://bkt/s3-extra/manifest.json" in res.err
