"""split -o s3://BUCKET/PREFIX/ against a real s3rver on loopback: each file is uploaded as it is written,
the manifest last. The objects are the bytes a local split writes and merge back to the input (h5diff);
an earlier split is refused without --force and replaced with it; files of 16 MiB or more go up in parts;
the spool holds a few files, never the split. Faults: wrong credentials and a missing bucket refused before
any work, 5xx answers to parts retried, a wrong ETag refused, the store killed and the run stopped in the
middle: no manifest, the objects deleted where the store still answers, one line naming the URL."""
import contextlib
import filecmp
import json
import os
import signal
import subprocess
import threading
import time

import h5py
import numpy as np
import pytest

import servers
from batches import MIXED_SPEC, make_mixed_batch
from conftest import BINARY, ENV, assert_one_line_error, h5diff, listing, run, summary, wait_until, write_spec

pytestmark = pytest.mark.skipif(not servers.s3_installed(), reason="s3rver is not installed (install-deps.sh)")

MiB = 1 << 20


@pytest.fixture(scope="module")
def s3():
    with servers.s3() as server:
        yield server


@pytest.fixture
def env(s3, tmp_path):
    """The store's credentials, and a spool of the test's own ($TMPDIR) to look into."""
    spool = tmp_path / "spool"
    spool.mkdir()
    return dict(s3.env(ENV), TMPDIR=str(spool))


def objects(s3, prefix):
    """The keys under `prefix` that s3rver holds, with their bytes' paths on its disk."""
    directory = os.path.join(s3.root, servers.S3_BUCKET, prefix)
    suffix = "._S3rver_object"
    return {n[:-len(suffix)]: os.path.join(directory, n) for n in listing(directory) if n.endswith(suffix)}


def make_big(path, rows=8, megabytes_per_row=5):
    """A batch whose microbatch files of one row are about `megabytes_per_row` MiB (random: incompressible)."""
    rng = np.random.default_rng(7)
    with h5py.File(path, "w") as f:
        f["x"] = rng.random((rows, megabytes_per_row * MiB // 8))
        f["y"] = np.arange(rows)
    return path


@pytest.fixture
def mixed(tmp_path):
    return make_mixed_batch(tmp_path / "in.h5"), write_spec(tmp_path / "s.json", MIXED_SPEC)


def test_the_objects_are_a_local_splits_bytes_and_merge_back(s3, env, mixed, tmp_path):
    src, spec = mixed
    run("split", src, "-s", spec, "-n", 5, "-o", tmp_path / "local", check=0)
    res = run("split", src, "-s", spec, "-n", 5, "-o", s3.s3_url("same/"), "--json", env=env, check=0)
    got = objects(s3, "same")
    assert sorted(got) == listing(tmp_path / "local")
    for name, path in got.items():
        assert filecmp.cmp(path, tmp_path / "local" / name, shallow=False), name
    report = summary(res, "split-summary")
    assert [f["path"] for f in report["files"]] == [s3.s3_url(f"same/{n}") for n in sorted(got)
                                                    if n != "manifest.json"] + [s3.s3_url("same/manifest.json")]
    assert [f["bytes"] for f in report["files"]] == [os.path.getsize(got[os.path.basename(f["path"])])
                                                     for f in report["files"]]
    assert listing(tmp_path / "spool") == []  # the spool is gone with the run
    run("merge", s3.s3_url("same/"), "-o", tmp_path / "merged.h5", env=env, check=0)
    assert h5diff(src, tmp_path / "merged.h5") == 0
    run("verify", s3.s3_url("same/"), env=env, check=0)


def test_an_earlier_split_is_refused_and_replaced_with_force(s3, env, mixed, tmp_path):
    src, spec = mixed
    url = s3.s3_url("again/")
    run("split", src, "-s", spec, "-n", 6, "-o", url, env=env, check=0)
    before = {n: open(p, "rb").read() for n, p in objects(s3, "again").items()}
    assert_one_line_error(run("split", src, "-s", spec, "-n", 3, "-o", url, env=env), 1,
                          "s3://bkt/again/", "earlier split", "--force")
    assert {n: open(p, "rb").read() for n, p in objects(s3, "again").items()} == before
    run("split", src, "-s", spec, "-n", 3, "-o", url, "--force", env=env, check=0)
    assert sorted(objects(s3, "again")) == ["manifest.json"] + [f"microbatch-{i:05d}.h5" for i in range(3)]
    run("verify", url, env=env, check=0)
    run("merge", url, "-o", tmp_path / "m.h5", env=env, check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_large_files_go_up_in_parts_and_the_spool_stays_within_its_bound(s3, env, tmp_path):
    src = make_big(tmp_path / "big.h5", rows=12, megabytes_per_row=17)
    seen = {"files": 0, "bytes": 0}
    done = threading.Event()

    def watch():  # the spool's peak, sampled while the split runs
        while not done.is_set():
            for d in listing(tmp_path / "spool"):
                path = tmp_path / "spool" / d
                names = [n for n in listing(path) if n.endswith(".h5") or ".h5." in n]
                sizes = [os.path.getsize(path / n) for n in names if os.path.exists(path / n)]
                seen["files"] = max(seen["files"], len(names))
                seen["bytes"] = max(seen["bytes"], sum(sizes))
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        res = run("split", src, "-n", 12, "--uploads", 1, "-o", s3.s3_url("big/"), "-v", env=env, check=0)
    finally:
        done.set()
        watcher.join()
    # 17 MiB files: three parts of 8 MiB each.
    assert res.err.count("uploaded in 3 parts of 8.00 MiB") == 12, res.err
    # The bound: two rounds of max(-j, 2 x --uploads) files = 4 files here, of the 12.
    assert 1 <= seen["files"] <= 4, seen
    assert seen["bytes"] <= 4 * 18 * MiB, seen
    print(f"spool peak: {seen['files']} files, {seen['bytes'] / MiB:.1f} MiB of a {12 * 17} MiB split")
    run("merge", s3.s3_url("big/"), "-o", tmp_path / "m.h5", env=env, check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_keep_local_keeps_a_complete_split_beside_the_objects(s3, env, mixed, tmp_path):
    src, spec = mixed
    run("split", src, "-s", spec, "-n", 4, "-o", s3.s3_url("kept/"), "--keep-local", tmp_path / "kept",
        env=env, check=0)
    run("verify", tmp_path / "kept", check=0)
    for name, path in objects(s3, "kept").items():
        assert filecmp.cmp(path, tmp_path / "kept" / name, shallow=False), name


def test_wrong_credentials_and_a_missing_bucket_are_refused_before_any_work(s3, env, mixed):
    src, spec = mixed
    bad = dict(env, AWS_SECRET_ACCESS_KEY="not-the-secret")
    assert_one_line_error(run("split", src, "-s", spec, "-n", 2, "-o", s3.s3_url("creds/"), env=bad), 1,
                          "s3://bkt/creds/", "GET of the listing failed", "403",
                          "signed with the credentials from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
    assert_one_line_error(run("split", src, "-s", spec, "-n", 2, "-o", "s3://no-such-bucket/x/", env=env), 1,
                          "NoSuchBucket")
    assert objects(s3, "creds") == {}
    assert listing(env["TMPDIR"]) == []


def test_outputs_that_are_not_s3_prefixes_are_usage_errors(s3, env, mixed, tmp_path):
    src, spec = mixed
    assert_one_line_error(run("split", src, "-s", spec, "-n", 2, "-o", "https://example.com/x/", env=env), 2,
                          "HTTP(S) URL")
    assert_one_line_error(run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "d", "--keep-local",
                              tmp_path / "k", env=env), 2, "--keep-local")


def test_5xx_answers_to_parts_are_retried(s3, env, tmp_path):
    src = make_big(tmp_path / "big.h5", rows=2, megabytes_per_row=17)
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("PUT", "partNumber=2", "500", times=2)
        proxy.fault("POST", "uploads", "500", times=1)
        run("split", src, "-n", 2, "-o", s3.s3_url("retried/"), env=dict(env, AWS_ENDPOINT_URL=proxy.endpoint),
            check=0)
        assert [m for _, _, m in proxy.requests()].count("500") == 3
    assert s3.uploads_in_progress("retried/") == []  # the upload whose start failed was not left open
    run("merge", s3.s3_url("retried/"), "-o", tmp_path / "m.h5", env=env, check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_an_etag_that_is_not_the_bytes_md5_is_refused_and_nothing_is_left(s3, env, mixed):
    src, spec = mixed
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("PUT", "microbatch-00001", "etag")
        res = run("split", src, "-s", spec, "-n", 3, "-o", s3.s3_url("etag/"),
                  env=dict(env, AWS_ENDPOINT_URL=proxy.endpoint))
    assert_one_line_error(res, 3, "s3://bkt/etag/microbatch-00001.h5", "ETag", "not the MD5")
    assert objects(s3, "etag") == {}  # what went up was deleted
    assert s3.uploads_in_progress("etag/") == []
    assert listing(env["TMPDIR"]) == []


def test_a_failed_or_stopped_run_leaves_no_multipart_upload_in_progress(s3, env, tmp_path):
    # Parts of an aborted upload bill the user until someone aborts it: every failure path aborts its own.
    src = make_big(tmp_path / "big.h5", rows=4, megabytes_per_row=17)  # four files of 17 MiB: three parts each
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("PUT", "partNumber=2", "403", times=1)
        res = run("split", src, "-n", 4, "--uploads", 2, "-o", s3.s3_url("aborted/"),
                  env=dict(env, AWS_ENDPOINT_URL=proxy.endpoint))
        assert_one_line_error(res, 1, "s3://bkt/aborted/microbatch-0000", "403")
        assert any(m == "403" for _, _, m in proxy.requests())
    assert s3.uploads_in_progress("aborted/") == []
    assert objects(s3, "aborted") == {}
    proc = start_split(["split", src, "-n", 4, "--uploads", 1, "-o", s3.s3_url("stopped-parts/")], env)
    until = time.monotonic() + 60
    while not s3.uploads_in_progress("stopped-parts/"):  # a multipart upload under way
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < until, "no multipart upload started"
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert s3.uploads_in_progress("stopped-parts/") == []
    assert objects(s3, "stopped-parts") == {}
    assert listing(env["TMPDIR"]) == []


def signal_delivered(pid, sig):
    """Whether `sig`, sent to process `pid`, is no longer pending: its handler has been called."""
    with open(f"/proc/{pid}/status") as f:
        pending = {k: int(v, 16) for k, v in (line.split(":") for line in f) if k in ("SigPnd", "ShdPnd")}
    return not any(mask & (1 << (sig - 1)) for mask in pending.values())


def test_a_stop_while_an_upload_is_created_aborts_the_upload_the_store_made(s3, env, tmp_path):
    # The store makes the upload when it gets the request; a run stopped before the answer, its id, came
    # back must still wait for it, to abort that upload.
    src = make_big(tmp_path / "big.h5", rows=4, megabytes_per_row=17)
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("POST", "uploads=", "held", times=1)
        proc = start_split(["split", src, "-n", 4, "--uploads", 1, "-o", s3.s3_url("creating/")],
                           dict(env, AWS_ENDPOINT_URL=proxy.endpoint))
        try:
            assert proxy.holding.wait(timeout=120), "no multipart upload was asked for"
            assert s3.uploads_in_progress("creating/") != []
            proc.send_signal(signal.SIGTERM)
            wait_until(lambda: signal_delivered(proc.pid, signal.SIGTERM), "SIGTERM was not delivered")
            # A run that gives the request up ends within curl's progress interval (at most a second),
            # leaving the upload behind; one that waits for the answer is still there. The wait can only
            # make the test pass less often on code that is wrong, never fail on code that is right.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        finally:
            proxy.release.set()
            proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert s3.uploads_in_progress("creating/") == []
    assert objects(s3, "creating") == {}
    assert listing(env["TMPDIR"]) == []


def test_encryption_and_request_payer_are_asked_as_the_aws_cli_asks_them(s3, env, tmp_path):
    # --sse and --sse-kms-key-id on each request that creates an object (a whole PUT, the start of a multipart
    # upload), --request-payer on every request, reads included; signed like the rest (s3rver checks).
    src = make_big(tmp_path / "big.h5", rows=2, megabytes_per_row=17)  # parts
    small = make_big(tmp_path / "small.h5", rows=2, megabytes_per_row=1)  # whole PUTs
    with servers.s3_proxy(s3) as proxy:
        e = dict(env, AWS_ENDPOINT_URL=proxy.endpoint)
        options = ["--sse", "aws:kms", "--sse-kms-key-id", "mb-test-key", "--request-payer", "requester"]
        run("split", src, "-n", 2, "-o", s3.s3_url("sse-big/"), *options, env=e, check=0)
        run("split", small, "-n", 2, "-o", s3.s3_url("sse-small/"), *options, env=e, check=0)
        run("merge", s3.s3_url("sse-small/"), "-o", tmp_path / "m.h5", "--request-payer", "requester", env=e, check=0)
        seen = list(proxy.headers_seen)
    assert h5diff(small, tmp_path / "m.h5") == 0
    creating = [(m, p, h) for m, p, h in seen if (m == "PUT" and "?" not in p) or (m == "POST" and p.endswith("?uploads="))]
    assert len(creating) >= 2 + 2 + 2  # two multipart starts, two whole files, two manifests
    for _, _, h in creating:
        assert h.get("x-amz-server-side-encryption") == "aws:kms", h
        assert h.get("x-amz-server-side-encryption-aws-kms-key-id") == "mb-test-key", h
    parts = [h for m, p, h in seen if "partNumber=" in p]
    assert parts and all("x-amz-server-side-encryption" not in h for h in parts)
    assert all(h.get("x-amz-request-payer") == "requester" for _, _, h in seen), seen
    assert any(m == "GET" and "sse-small/microbatch-00000.h5" in p for m, p, _ in seen)  # the merge's reads
    assert_one_line_error(run("split", small, "-n", 2, "-o", s3.s3_url("x/"), "--sse-kms-key-id", "k", env=env), 2,
                          "--sse aws:kms")
    assert_one_line_error(run("split", small, "-n", 2, "-o", s3.s3_url("x/"), "--sse", "DES", env=env), 2, "--sse")


def test_etags_under_sse_kms_are_not_taken_for_md5s(s3, env, tmp_path):
    # Under SSE-KMS an ETag looks like an MD5 and is not the bytes': the store checked each PUT and part against
    # its Content-MD5, and a split whose every answer is such (a whole file, parts, the completion, the manifest)
    # goes through and reads back the same.
    src = make_big(tmp_path / "big.h5", rows=2, megabytes_per_row=17)  # two files of 17 MiB: parts
    small = make_big(tmp_path / "small.h5", rows=2, megabytes_per_row=1)  # two files of 1 MiB: whole PUTs
    with servers.s3_proxy(s3) as proxy:
        for method in ("PUT", "POST"):
            proxy.fault(method, "kms", "kms", times=1000)
        e = dict(env, AWS_ENDPOINT_URL=proxy.endpoint)
        run("split", src, "-n", 2, "-o", s3.s3_url("kms-big/"), env=e, check=0)
        run("split", small, "-n", 2, "-o", s3.s3_url("kms-small/"), env=e, check=0)
        assert [m for _, _, m in proxy.requests()].count("kms") >= 9
    for name, source in (("kms-big", src), ("kms-small", small)):
        run("merge", s3.s3_url(f"{name}/"), "-o", tmp_path / f"{name}.h5", env=env, check=0)
        assert h5diff(source, tmp_path / f"{name}.h5") == 0


def test_of_two_runs_committing_one_prefix_one_wins(s3, env, mixed, tmp_path):
    # The manifest (and finish's, and a shard's part record) is put with If-None-Match: *. On a store that honours
    # it, a run whose manifest another run put meanwhile fails (exit 1) and leaves the other's commit standing,
    # and its files as they stand (two runs of one command wrote the same bytes): verify judges the result.
    src, spec = mixed
    with servers.s3_proxy(s3, conditional=True) as proxy:
        e = dict(env, AWS_ENDPOINT_URL=proxy.endpoint)
        run("split", src, "-s", spec, "-n", 3, "-o", s3.s3_url("one-wins/"), env=e, check=0)  # alone: commits
        proxy.fault("PUT", "raced/manifest.json", "taken")
        res = run("split", src, "-s", spec, "-n", 3, "-o", s3.s3_url("raced/"), env=e)
        assert_one_line_error(res, 1, "s3://bkt/raced/manifest.json", "another run committed it meanwhile",
                              "microbatch verify")
        for k in range(2):
            run("split", src, "-s", spec, "-n", 3, "-o", s3.s3_url("raced-finish/"), "--shard", f"{k}/2", env=e,
                check=0)
        proxy.fault("PUT", "raced-finish/manifest.json", "taken")
        res = run("finish", s3.s3_url("raced-finish/"), env=e)
        assert_one_line_error(res, 1, "s3://bkt/raced-finish/manifest.json", "another run committed it meanwhile")
    for prefix in ("raced", "raced-finish"):
        held = objects(s3, prefix)
        with open(held["manifest.json"]) as f:
            assert f.read() == servers.OTHER_COMMIT  # the other run's commit stands
    assert sorted(objects(s3, "raced")) == sorted(objects(s3, "one-wins"))  # the files stand too
    run("merge", s3.s3_url("one-wins/"), "-o", tmp_path / "m.h5", env=env, check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def start_split(args, env):
    return subprocess.Popen([BINARY, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def wait_for_objects(s3, prefix, proc, timeout=60):
    until = time.monotonic() + timeout
    while not objects(s3, prefix):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < until, "no object appeared"
        time.sleep(0.01)


def test_a_store_killed_mid_upload_leaves_no_manifest_and_one_line(env, tmp_path):
    src = make_big(tmp_path / "big.h5", rows=24, megabytes_per_row=5)
    with servers.s3() as own:
        env = dict(own.env(env), TMPDIR=env["TMPDIR"])
        proc = start_split(["split", src, "-n", 24, "--uploads", 1, "-o", own.s3_url("killed/")], env)
        wait_for_objects(own, "killed", proc)
        os.killpg(own.proc.pid, signal.SIGKILL)  # the store dies at once, mid-request
        own.proc.wait(timeout=10)
        out, err = proc.communicate(timeout=120)
        assert "manifest.json" not in objects(own, "killed")
    lines = [l for l in err.splitlines() if l.strip()]
    assert proc.returncode == 3 and len(lines) == 1, err
    assert lines[0].startswith("microbatch: error: s3://bkt/killed/microbatch-"), err
    assert "could not be deleted" in lines[0], err  # the store is gone: what is up is named
    assert listing(env["TMPDIR"]) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_run_stopped_mid_upload_deletes_what_it_uploaded(s3, env, tmp_path, sig):
    src = make_big(tmp_path / "big.h5", rows=24, megabytes_per_row=5)
    prefix = f"stopped-{sig.name}"
    proc = start_split(["split", src, "-n", 24, "--uploads", 1, "-o", s3.s3_url(prefix + "/")], env)
    wait_for_objects(s3, prefix, proc)
    proc.send_signal(sig)
    proc.communicate(timeout=120)
    assert proc.returncode == (130 if sig == signal.SIGTERM else -signal.SIGKILL)
    # SIGKILL: the uploading process sees its parent's socket close, deletes the objects and the spool.
    until = time.monotonic() + 60
    while (objects(s3, prefix) or listing(env["TMPDIR"])) and time.monotonic() < until:
        time.sleep(0.05)
    assert objects(s3, prefix) == {}
    assert s3.uploads_in_progress(prefix + "/") == []
    assert listing(env["TMPDIR"]) == []


def test_merge_uploads_its_output_whole_and_refuses_to_replace_without_force(s3, env, tmp_path):
    src = make_big(tmp_path / "big.h5", rows=4, megabytes_per_row=5)  # a 20 MiB merge: a multipart upload
    run("split", src, "-n", 4, "-o", tmp_path / "mb", check=0)
    url = s3.s3_url("merged/out.h5")
    res = run("merge", tmp_path / "mb", "-o", url, "--json", "-v", env=env, check=0)
    assert "uploaded in 3 parts" in res.err
    got = objects(s3, "merged")
    assert list(got) == ["out.h5"] and h5diff(src, got["out.h5"]) == 0
    assert summary(res, "merge-summary")["files"] == [{"path": url, "bytes": os.path.getsize(got["out.h5"])}]
    assert listing(env["TMPDIR"]) == []
    before = open(got["out.h5"], "rb").read()
    assert_one_line_error(run("merge", tmp_path / "mb", "-o", url, env=env), 1, url, "--force")
    assert open(got["out.h5"], "rb").read() == before
    run("merge", tmp_path / "mb", "-o", url, "--force", env=env, check=0)
    assert_one_line_error(run("merge", tmp_path / "mb", "-o", url, "--virtual", env=env), 2, "--virtual")


def test_merge_to_an_object_of_chunks_that_straddle_the_cuts_gives_the_local_merge(s3, env, tmp_path):
    # gzip chunks of 8 rows, cut into 7 microbatches of 14-15 rows: merging re-encodes them through a scratch
    # file, which lives beside the local spool file, not at a path made from the object's name.
    src = tmp_path / "gz.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(11).random((100, 4096), dtype=np.float32),
                         chunks=(8, 4096), compression="gzip")
        f["y"] = np.arange(100)
    run("split", src, "-n", 7, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "local.h5", check=0)
    url = s3.s3_url("straddled/m.h5")
    run("merge", tmp_path / "mb", "-o", url, env=env, check=0)
    got = objects(s3, "straddled")
    assert list(got) == ["m.h5"]
    assert filecmp.cmp(got["m.h5"], tmp_path / "local.h5", shallow=False)
    assert h5diff(src, got["m.h5"]) == 0
    assert listing(env["TMPDIR"]) == []


def test_a_merge_that_fails_uploads_nothing(s3, env, tmp_path):
    src = make_big(tmp_path / "big.h5", rows=4, megabytes_per_row=1)
    run("split", src, "-n", 4, "-o", tmp_path / "mb", check=0)
    with open(tmp_path / "mb" / "microbatch-00002.h5", "r+b") as f:  # changed after the split: refused
        f.seek(-1, os.SEEK_END)
        f.write(b"\xff")
    assert_one_line_error(run("merge", tmp_path / "mb", "-o", s3.s3_url("failed/out.h5"), env=env), 1,
                          "microbatch-00002.h5")
    assert objects(s3, "failed") == {}
    assert listing(env["TMPDIR"]) == []
