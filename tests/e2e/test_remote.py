"""Remote inputs: split and inspect read a batch by URL (http://,
https://, s3://), merge reads a split's files by URL; outputs stay local.
Real servers on 127.0.0.1 (servers.py): nginx over HTTP and HTTPS, s3rver
(it verifies Signature V4), and a server that misbehaves on purpose. Every
result is judged against the same work done on the local file (h5diff,
listings, manifests), every refusal is one line naming the URL, with
nothing published, and no credential is ever printed."""
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

import servers
# make_mixed_batch: a chunked gzip tensor, groups, strings, packed tokens: 7 microbatches
from conftest import (BINARY, ENV, MIXED_SPEC, Result, assert_one_line_error, h5diff, listing, make_mixed_batch, run,
                      wait_until, write_spec)

# nginx, openssl and s3rver come with scripts/install-deps.sh: without them these tests fail, not skip.

# The machine's own AWS settings never reach a run; each test gives its own. An s3:// name never
# sends a request off the machine: without a test's endpoint, it goes to a loopback port where
# nothing listens (AWS's hosts are no test's target).
BASE_ENV = servers.aws_isolated(ENV)
BASE_ENV["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"
BASE_ENV["MICROBATCH_HTTP_TIMEOUT"] = "10"  # nothing stalls unless a test says so; bounds a hang
N = 7


def env(**settings):
    e = dict(BASE_ENV)
    e.update({k: str(v) for k, v in settings.items()})
    return e


def remote(*args, environ=None, **kwargs):
    return run(*args, env=environ or BASE_ENV, **kwargs)


def settled(server, prefix):
    """The server's entries for `prefix`, once nginx has logged every request it ended before this call.
    nginx logs a request just after its last byte went out, which can be after the client has exited; its
    one worker does that before it reads the next request, so a request of the test's own, made now, is
    logged after all of them."""
    settled.marks = getattr(settled, "marks", 0) + 1
    mark = f"/settled-mark-{os.getpid()}-{settled.marks}"
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    try:
        conn.request("GET", mark)
        conn.getresponse().read()  # a 404, logged as any other request
    finally:
        conn.close()
    wait_until(lambda: any(e["uri"] == mark for e in server.requests()), f"nginx did not log {mark}")
    entries = server.requests()
    return servers.under(entries[:[e["uri"] for e in entries].index(mark)], prefix)


# --- servers and data, once per module ----------------------------------------

@pytest.fixture(scope="module")
def web():
    with servers.nginx() as server:
        yield server


@pytest.fixture(scope="module")
def s3():
    with servers.s3() as server:
        yield server


@pytest.fixture(scope="module")
def bad():
    with servers.faults(stall_seconds=30) as server:
        yield server


@pytest.fixture
def key(request):
    """A key prefix of this test's own on the module's servers: a digest of its name, so that no word
    an error message is checked for (403, closed...) can come from the URL."""
    return "k" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:10]


class Data:
    """The batch, its spec, its local split (`plain`) and that split merged (`merged`)."""

    def __init__(self, directory):
        self.dir = directory
        self.src = make_mixed_batch(directory / "in.h5")
        self.spec = write_spec(directory / "s.json", MIXED_SPEC)
        self.plain = directory / "plain"
        run("split", self.src, "-s", self.spec, "-n", N, "-o", self.plain, check=0)
        self.merged = directory / "merged.h5"
        run("merge", self.plain, "-o", self.merged, check=0)
        assert h5diff(self.src, self.merged) == 0
        self.files = [n for n in listing(self.plain) if n.endswith(".h5")]
        assert len(self.files) == N

    def split_args(self, source, out, *extra):
        return ["split", source, "-s", self.spec, "-n", N, "-o", out, *extra]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return Data(tmp_path_factory.mktemp("data"))


@pytest.fixture(autouse=True)
def no_faults_left(request):
    """A fault set by one test never outlives it."""
    yield
    if "bad" in request.fixturenames:
        request.getfixturevalue("bad").clear()


# --- judging -------------------------------------------------------------------

def manifest(directory):
    with open(directory / "manifest.json") as f:
        m = json.load(f)
    m.pop("source")  # the input's name as given: the URL, or the local path
    return m


def same_split(plain, out, sharded=False):
    """The same files as the local split (h5diff each) and its manifest but for the input's name;
    nothing else in `out` (but the part records shards leave)."""
    names = listing(out)
    if sharded:
        names = [n for n in names if not re.fullmatch(r"part-\d+-of-\d+\.json", n)]
    assert names == listing(plain)
    for name in listing(plain):
        if name.endswith(".h5"):
            assert h5diff(plain / name, out / name) == 0, name
    assert manifest(out) == manifest(plain)


def nothing_published(out):
    """No output directory, or an empty one: nothing that could pass for a split, not even a temporary."""
    assert listing(out) == [], listing(out)


def merged_like(data, res, out):
    assert res.code == 0, res
    assert h5diff(data.merged, out) == 0
    assert h5diff(data.src, out) == 0


def error_line(res, name, code=1):
    """The one 'microbatch: error:' line (other lines may be -v's debug lines) of a run that exit `code`,
    naming `name`; returns what it says after the name (a port or a key can hold "403" too)."""
    lines = [line for line in res.err.splitlines() if line.startswith("microbatch: error: ")]
    assert res.code == code and len(lines) == 1, res
    assert name in lines[0], res
    return lines[0].split(name, 1)[1]


def refused(res, name, *words, code=1):
    """A one-line refusal naming `name`, and saying each of `words` after it: exit 1 (fix the input, or
    the URL), or `code` 3 where a retry may succeed (the network failed, the object changed)."""
    assert_one_line_error(res, code, name)
    said = error_line(res, name, code)
    for w in words:
        assert w in said, res


def no_secret_in(res, *secrets):
    for s in secrets:
        assert s not in res.out and s not in res.err, f"{s!r} printed:\n{res}"


def fetched_lines(res):
    """The -v debug lines 'URL: N requests, B bytes fetched', as [(url, N, B)]."""
    return [(m.group(1), int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"(\S+): (\d+) requests?, (\d+) bytes fetched", res.err)]


# --- HTTP (nginx) ----------------------------------------------------------------

def test_split_over_http_is_the_local_split(web, data, tmp_path, key):
    url = web.put(data.src, f"{key}/in.h5")
    out = tmp_path / "out"
    run(*data.split_args(url, out), env=BASE_ENV, check=0)
    same_split(data.plain, out)
    with open(out / "manifest.json") as f:
        assert json.load(f)["source"] == url
    merged = tmp_path / "m.h5"
    run("merge", out, "-o", merged, check=0)
    assert h5diff(data.src, merged) == 0
    served = settled(web, f"{key}/")
    assert served, "nginx served nothing"
    assert all(e["status"] in (200, 206) for e in served), served


def test_split_with_workers_over_http(web, data, tmp_path, key):
    # -j forks workers: each must read the URL on connections of its own.
    url = web.put(data.src, f"{key}/in.h5")
    out = tmp_path / "out"
    run(*data.split_args(url, out, "-j", 2), env=BASE_ENV, check=0)
    same_split(data.plain, out)


def test_debug_log_counts_what_the_server_served(web, data, tmp_path, key):
    url = web.put(data.src, f"{key}/in.h5")
    res = remote(*data.split_args(url, tmp_path / "out", "-v"))
    assert res.code == 0, res
    lines = [line for line in fetched_lines(res) if line[0] == url]
    assert lines, res.err
    served = settled(web, f"{key}/")
    assert sum(n for _, n, _ in lines) == len(served)
    assert sum(b for _, _, b in lines) == sum(e["bytes"] for e in served)


def test_each_small_remote_file_is_fetched_once(web, data, tmp_path, key):
    # README: a URL opened again costs no request (split plans, then copies; merge digests, then reads),
    # and an input of up to 16 MiB stays in the block cache between merge's digest and its reads.
    url = web.put(data.src, f"{key}/in/in.h5")
    assert os.path.getsize(data.src) < 16 << 20
    run(*data.split_args(url, tmp_path / "out"), env=BASE_ENV, check=0)
    assert [e["uri"] for e in settled(web, f"{key}/in/")] == [f"/{key}/in/in.h5"]
    web.put_dir(data.plain, f"{key}/mb")
    run("merge", web.url(f"{key}/mb/manifest.json"), "-o", tmp_path / "m.h5", env=BASE_ENV, check=0)
    uris = sorted(e["uri"] for e in settled(web, f"{key}/mb/"))
    files = sorted(n for n in os.listdir(data.plain) if os.path.isfile(data.plain / n))
    assert uris == [f"/{key}/mb/{n}" for n in files], uris


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_merge_of_a_remote_split_by_its_manifest_url(web, data, tmp_path, key, scheme):
    base = web.put_dir(data.plain, key)
    if scheme == "https":
        base = web.https_url(key)
    out = tmp_path / "m.h5"
    res = remote("merge", f"{base}/manifest.json", "-o", out, environ=env(AWS_CA_BUNDLE=web.cert))
    merged_like(data, res, out)


@pytest.mark.parametrize("where", ["http", "s3"])
def test_merge_of_remote_files_named_one_by_one(web, s3, data, tmp_path, key, where):
    server = web if where == "http" else s3
    server.put_dir(data.plain, key)
    names = [server.url(f"{key}/{n}") if where == "http" else s3.s3_url(f"{key}/{n}") for n in data.files]
    local = tmp_path / "local.h5"
    run("merge", *[data.plain / n for n in data.files], "-o", local, check=0)
    out = tmp_path / "m.h5"
    res = remote("merge", *names, "-o", out, environ=s3_env(s3))
    assert res.code == 0, res
    assert h5diff(local, out) == 0
    assert h5diff(data.src, out) == 0


def test_https_with_the_ca_bundle(web, data, tmp_path, key):
    web.put(data.src, f"{key}/in.h5")
    url = web.https_url(f"{key}/in.h5")
    out = tmp_path / "out"
    run(*data.split_args(url, out), env=env(AWS_CA_BUNDLE=web.cert), check=0)
    same_split(data.plain, out)


def test_https_without_the_ca_bundle_is_a_certificate_error(web, data, tmp_path, key):
    web.put(data.src, f"{key}/in.h5")
    url = web.https_url(f"{key}/in.h5")
    out = tmp_path / "out"
    refused(remote(*data.split_args(url, out)), url, "certificate")
    nothing_published(out)


@pytest.mark.parametrize("args", [[], ["--json"], ["-s", "SPEC"], ["-s", "SPEC", "--json"]],
                         ids=["text", "json", "spec", "spec-json"])
def test_inspect_of_a_url_is_inspect_of_the_file(web, data, key, args):
    args = [str(data.spec) if a == "SPEC" else a for a in args]
    url = web.put(data.src, f"{key}/in.h5")
    local = run("inspect", data.src, *args, check=0)
    res = remote("inspect", url, *args)
    assert res.code == 0, res
    assert res.out.replace(url, "NAME") == local.out.replace(str(data.src), "NAME")
    assert url in res.out


# --- S3 (s3rver) --------------------------------------------------------------------

def s3_env(s3, **kwargs):
    return s3.env(BASE_ENV, **kwargs)


def test_s3_signed_split_is_the_local_split(s3, data, tmp_path, key):
    s3.put(data.src, f"{key}/in.h5")
    out = tmp_path / "out"
    run(*data.split_args(s3.s3_url(f"{key}/in.h5"), out), env=s3_env(s3), check=0)
    same_split(data.plain, out)


def test_s3_wrong_secret_is_refused_with_403(s3, data, tmp_path, key):
    s3.put(data.src, f"{key}/in.h5")
    name = s3.s3_url(f"{key}/in.h5")
    out = tmp_path / "out"
    wrong = "mbWrong/Secret+zyxwvutsrqponmlkjihgfedcba"
    res = remote(*data.split_args(name, out, "-v"), environ=s3_env(s3, secret=wrong))
    assert "403" in error_line(res, name), res
    no_secret_in(res, wrong)
    nothing_published(out)
    refused(remote(*data.split_args(name, out), environ=s3_env(s3, secret=wrong)), name, "403")
    nothing_published(out)


def test_s3_anonymous_only_when_asked(s3, data, tmp_path, key):
    # A public bucket is read unsigned with --no-sign-request; without it, no credentials is an error that says
    # where it looked, before any request; and --no-sign-request on a private bucket is refused there (403).
    s3.put(data.src, f"{key}/in.h5", bucket=servers.S3_PUBLIC_BUCKET)
    s3.put(data.src, f"{key}/in.h5")
    public = s3.s3_url(f"{key}/in.h5", bucket=servers.S3_PUBLIC_BUCKET)
    out = tmp_path / "out"
    run(*data.split_args(public, out), "--no-sign-request", env=s3_env(s3, signed=False), check=0)
    same_split(data.plain, out)
    res = remote(*data.split_args(public, tmp_path / "o2"), environ=s3_env(s3, signed=False))
    assert_one_line_error(res, 2)
    assert "no AWS credentials" in res.err and "--no-sign-request" in res.err, res
    nothing_published(tmp_path / "o2")
    res = remote(*data.split_args(s3.s3_url(f"{key}/in.h5"), tmp_path / "o3"), "--no-sign-request",
                 environ=s3_env(s3, signed=False))
    assert "403" in error_line(res, s3.s3_url(f"{key}/in.h5")), res
    nothing_published(tmp_path / "o3")


def test_s3_with_a_session_token_and_no_credential_printed(s3, data, tmp_path, key):
    # s3rver does not check the token, but the request must still be signed right with it among the
    # signed headers; -v (debug logging) must show neither the secret nor the token.
    token = "mbSessionToken/ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+abcdef=="
    s3.put(data.src, f"{key}/in.h5")
    out = tmp_path / "out"
    res = remote(*data.split_args(s3.s3_url(f"{key}/in.h5"), out, "-v"), environ=s3_env(s3, token=token))
    assert res.code == 0, res
    no_secret_in(res, servers.S3_SECRET, token)
    same_split(data.plain, out)
    # and the token with a wrong secret is still refused: the request was signed, not sent anonymously
    res = remote(*data.split_args(s3.s3_url(f"{key}/in.h5"), tmp_path / "o2", "-v"),
                 environ=s3_env(s3, token=token, secret="mbWrong/Secret"))
    assert "403" in error_line(res, s3.s3_url(f"{key}/in.h5")), res
    no_secret_in(res, token, "mbWrong/Secret")


def test_s3_endpoint_url_s3_comes_before_endpoint_url(s3, data, tmp_path, key):
    s3.put(data.src, f"{key}/in.h5")
    with servers.unreachable() as nowhere:
        e = s3_env(s3, signed=True)
        e.update(AWS_ENDPOINT_URL=nowhere, AWS_ENDPOINT_URL_S3=s3.endpoint)
        out = tmp_path / "out"
        run(*data.split_args(s3.s3_url(f"{key}/in.h5"), out), env=e, check=0)
        same_split(data.plain, out)
        # and AWS_ENDPOINT_URL alone is where requests go
        e.pop("AWS_ENDPOINT_URL_S3")
        out = tmp_path / "out2"
        refused(remote(*data.split_args(s3.s3_url(f"{key}/in.h5"), out), environ=e), s3.s3_url(f"{key}/in.h5"),
                "cannot connect", code=3)
        nothing_published(out)


@pytest.mark.parametrize("given", ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"])
def test_s3_half_credentials_are_a_usage_error(s3, data, tmp_path, key, given):
    s3.put(data.src, f"{key}/in.h5")
    e = s3_env(s3, signed=False)
    e[given] = servers.S3_SECRET if given == "AWS_SECRET_ACCESS_KEY" else servers.S3_KEY_ID
    out = tmp_path / "out"
    res = remote(*data.split_args(s3.s3_url(f"{key}/in.h5"), out), environ=e)
    assert_one_line_error(res, 2)
    no_secret_in(res, servers.S3_SECRET)
    nothing_published(out)


def test_merge_of_an_s3_split_by_its_manifest(s3, data, tmp_path, key):
    s3.put_dir(data.plain, key)
    out = tmp_path / "m.h5"
    res = remote("merge", s3.s3_url(f"{key}/manifest.json"), "-o", out, environ=s3_env(s3))
    merged_like(data, res, out)


def test_presigned_url_is_fetched_as_given_and_its_query_never_shown(s3, data, tmp_path, key):
    s3.put(data.src, f"{key}/in.h5")
    url = s3.presign(f"{key}/in.h5")
    out = tmp_path / "out"
    run(*data.split_args(url, out), env=BASE_ENV, check=0)  # no credentials: the query carries the signature
    same_split(data.plain, out)
    signature = url.rsplit("X-Amz-Signature=", 1)[1]
    # signed with the wrong secret: s3rver answers 403; the message names the URL without its query
    wrong = s3.presign(f"{key}/in.h5", secret="mbWrong/Secret")
    out = tmp_path / "out2"
    res = remote(*data.split_args(wrong, out, "-v"))
    assert "403" in error_line(res, s3.url(f"{key}/in.h5")), res
    no_secret_in(res, wrong.rsplit("X-Amz-Signature=", 1)[1], signature, "X-Amz-Credential")
    res = remote(*data.split_args(wrong, out))
    refused(res, s3.url(f"{key}/in.h5"), "403")
    nothing_published(out)


def test_a_presigned_url_with_a_session_token_prints_no_credential(s3, data, tmp_path, key):
    # Temporary credentials put the session token in a presigned URL's query: it is a credential, and
    # nothing microbatch prints may hold it (nor the signature), with -v or not, whatever succeeds.
    token = "mbPresignedToken/0123456789+ABCDEFGHIJKLMNOPQRSTUVWXYZ=="
    s3.put(data.src, f"{key}/in.h5")
    url = s3.presign(f"{key}/in.h5", token=token)
    signature = url.rsplit("X-Amz-Signature=", 1)[1]
    quoted = url.split("X-Amz-Security-Token=", 1)[1].split("&", 1)[0]  # as it is in the URL
    out = tmp_path / "out"
    res = remote(*data.split_args(url, out, "-v"))
    assert res.code == 0, res
    no_secret_in(res, token, quoted, signature)
    same_split(data.plain, out)
    for args in ([], ["--json"], ["-v"]):
        res = remote("inspect", url, *args)
        assert res.code == 0, res
        no_secret_in(res, token, quoted, signature)


def test_shards_of_an_s3_object_then_finish_give_the_local_split(s3, data, tmp_path, key):
    s3.put(data.src, f"{key}/in.h5")
    out = tmp_path / "sh"
    for k in range(2):
        run(*data.split_args(s3.s3_url(f"{key}/in.h5"), out, "--shard", f"{k}/2"), env=s3_env(s3), check=0)
    run("finish", out, check=0)
    same_split(data.plain, out, sharded=True)


# --- outputs are local files or s3:// names (test_upload.py) ------------------------

@pytest.mark.parametrize("target", ["http://127.0.0.1:9/out", "https://127.0.0.1:9/out"])
def test_http_outputs_are_usage_errors(web, data, tmp_path, key, target):
    url = web.put(data.src, f"{key}/in.h5")
    web.put_dir(data.plain, f"{key}/split")
    # run in tmp_path: an -o taken for a local path would show up there
    assert_one_line_error(remote(*data.split_args(url, target), cwd=tmp_path), 2)
    assert_one_line_error(remote(*data.split_args(data.src, target), cwd=tmp_path), 2)
    assert_one_line_error(remote("merge", web.url(f"{key}/split/manifest.json"), "-o", target + ".h5",
                             cwd=tmp_path), 2)
    assert_one_line_error(remote("merge", data.plain, "-o", target + ".h5", cwd=tmp_path), 2)
    assert listing(tmp_path) == []


def test_virtual_merge_of_remote_inputs_is_a_usage_error(web, data, tmp_path, key):
    base = web.put_dir(data.plain, key)
    out = tmp_path / "dest" / "v.h5"
    out.parent.mkdir()
    assert_one_line_error(remote("merge", "--virtual", f"{base}/manifest.json", "-o", out), 2)
    assert_one_line_error(remote("merge", "--virtual", *[f"{base}/{n}" for n in data.files], "-o", out), 2)
    assert listing(out.parent) == []


# --- faults ---------------------------------------------------------------------------

STALL_ENV = {"MICROBATCH_HTTP_TIMEOUT": "2"}

# mode -> what the one-line error says
FAULT_WORDS = {"404": "404", "403": "403", "drop": "closed", "truncate": "closed", "stall": "timed out"}
# Exit 1 for what a retry cannot cure; 3 for the network failing (after the retries).
FAULT_CODES = {"404": 1, "403": 1, "drop": 3, "truncate": 3, "stall": 3, "500": 3, "429": 3}


def clean_requests(bad, data, tmp_path, key):
    """Publishes the batch on the faulty server; returns (its path, URL, requests a clean split makes)."""
    url = bad.put(data.src, f"{key}/in.h5")
    out = tmp_path / "clean"
    run(*data.split_args(url, out), env=BASE_ENV, check=0)
    same_split(data.plain, out)
    count = len(bad.requests(f"{key}/"))
    assert count >= 1
    return f"/{key}/in.h5", url, count


@pytest.mark.parametrize("mode", sorted(FAULT_WORDS))
def test_a_fault_from_the_first_request_is_one_line_and_publishes_nothing(bad, data, tmp_path, key, mode):
    bad.put(data.src, f"{key}/in.h5")
    url = bad.fault_url(mode, f"{key}/in.h5")
    out = tmp_path / "out"
    res = remote(*data.split_args(url, out), environ=env(**STALL_ENV))
    refused(res, url, FAULT_WORDS[mode], code=FAULT_CODES[mode])
    nothing_published(out)


def test_a_server_that_never_answers_times_out(bad, data, tmp_path, key):
    url = bad.put(data.src, f"{key}/in.h5")
    bad.fault("silent")  # every new connection: accepted, never read, never answered
    out = tmp_path / "out"
    res = remote(*data.split_args(url, out), environ=env(**STALL_ENV))
    refused(res, url, "timed out", code=3)
    nothing_published(out)


def test_a_trickling_server_is_a_network_stall(bad, tmp_path, key):
    # Headers, then 2 bytes a second: every byte is progress to a byte-count timeout, and the
    # watchdog must not blame the HDF5 library for the network's stall.
    url = bad.put(make_version(tmp_path / "in.h5", 1, 400), f"{key}/in.h5")  # more than the first request's MiB
    bad.fault("trickle", prefix=f"/{key}/in.h5", after=1)
    out = tmp_path / "out"
    args = [BINARY, "split", url, "-n", "4", "-o", str(out), "--stall-timeout", "1"]
    started = time.monotonic()
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60, env=env(**STALL_ENV))
    except subprocess.TimeoutExpired:
        pytest.fail("a server sending 2 bytes a second was not stopped within 60 s")
    res = Result(proc)
    refused(res, url, "network stalled", "MICROBATCH_HTTP_MIN_RATE", code=3)
    assert "HDF5" not in res.err, res
    assert time.monotonic() - started < 30, res  # 3 attempts of 2 s each, and their backoff
    nothing_published(out)


def test_a_bad_minimum_rate_is_a_usage_error(data, tmp_path):
    res = remote(*data.split_args("http://127.0.0.1:9/in.h5", tmp_path / "out"),
                 environ=env(MICROBATCH_HTTP_MIN_RATE="fast"))
    assert_one_line_error(res, 2, "MICROBATCH_HTTP_MIN_RATE", "fast")


def test_unreachable_is_cannot_connect(data, tmp_path):
    with servers.unreachable() as nowhere:
        url = f"{nowhere}/in.h5"
        out = tmp_path / "out"
        refused(remote(*data.split_args(url, out)), url, "cannot connect", code=3)
        nothing_published(out)
        refused(remote("inspect", url), url, "cannot connect", code=3)
        dest = tmp_path / "dest"
        dest.mkdir()
        res = remote("merge", f"{nowhere}/split/manifest.json", "-o", dest / "m.h5")
        refused(res, f"{nowhere}/split/manifest.json", "cannot connect", code=3)
        assert listing(dest) == []


@pytest.mark.parametrize("mode", ["drop", "truncate", "stall", "500", "404"])
def test_a_fault_in_the_middle_of_a_split_publishes_nothing(bad, data, tmp_path, key, mode):
    path, url, count = clean_requests(bad, data, tmp_path, key)
    bad.fault(mode, prefix=path, after=count // 2)  # the open went well; a read halfway fails, every try
    out = tmp_path / "out"
    res = remote(*data.split_args(url, out), environ=env(**STALL_ENV))
    refused(res, url, *([FAULT_WORDS[mode]] if mode in FAULT_WORDS else []), code=FAULT_CODES[mode])
    nothing_published(out)


@pytest.mark.parametrize("mode", ["drop", "truncate", "stall", "500", "429"])
def test_a_transient_fault_once_is_retried_and_the_split_exact(bad, data, tmp_path, key, mode):
    path, url, count = clean_requests(bad, data, tmp_path, key)
    before = len(bad.requests(f"{key}/"))
    bad.fault(mode, prefix=path, after=count // 2, times=1)
    out = tmp_path / "out"
    res = remote(*data.split_args(url, out), environ=env(**STALL_ENV))
    assert res.code == 0, res
    same_split(data.plain, out)
    assert len(bad.requests(f"{key}/")) - before == count + 1  # the one faulty answer, tried again once


def test_500_once_then_ok_by_url_prefix(bad, data, tmp_path, key):
    bad.put(data.src, f"{key}/in.h5")
    url = bad.fault_url("500once", f"{key}/in.h5")
    out = tmp_path / "out"
    run(*data.split_args(url, out), env=BASE_ENV, check=0)
    same_split(data.plain, out)
    assert bad.requests(f"500once/{key}/")[0]["status"] == 500


def test_transient_faults_are_tried_three_times_and_others_once(bad, data, tmp_path, key):
    bad.put(data.src, f"{key}/in.h5")
    for mode, tries in [("500", 3), ("drop", 3), ("404", 1), ("403", 1)]:
        url = bad.fault_url(mode, f"{key}/in.h5")
        out = tmp_path / f"out-{mode}"
        res = remote(*data.split_args(url, out))
        refused(res, url, code=FAULT_CODES[mode])
        nothing_published(out)
        tried = bad.requests(f"{mode}/{key}/")
        assert len(tried) == tries, (mode, tried)


def test_a_query_is_never_shown(bad, data, tmp_path, key):
    bad.put(data.src, f"{key}/in.h5")
    url = bad.fault_url("404", f"{key}/in.h5")
    secret = "mbQuerySecret0123456789"
    out = tmp_path / "out"
    for extra in ([], ["-v"]):
        res = remote(*data.split_args(f"{url}?X-Amz-Signature={secret}&X-Amz-Security-Token={secret}x", out, *extra))
        assert res.code == 1, res
        no_secret_in(res, secret)
    res = remote(*data.split_args(f"{url}?X-Amz-Signature={secret}", out))
    refused(res, url, "404")
    nothing_published(out)


@pytest.mark.parametrize("mode", ["404", "drop"])
def test_a_fault_on_one_file_of_a_remote_merge_writes_nothing(bad, data, tmp_path, key, mode):
    base = bad.put_dir(data.plain, key)
    victim = data.files[3]
    bad.fault(mode, prefix=f"/{key}/{victim}")
    dest = tmp_path / "dest"
    dest.mkdir()
    res = remote("merge", f"{base}/manifest.json", "-o", dest / "m.h5")
    refused(res, f"{base}/{victim}", FAULT_WORDS[mode], code=FAULT_CODES[mode])
    assert listing(dest) == []


def test_a_remote_file_of_another_content_than_its_manifest_says_is_refused(web, data, tmp_path, key):
    # The manifest's sizes and digests hold for remote files too: one file swapped for another.
    base = web.put_dir(data.plain, key)
    web.put(data.plain / data.files[4], f"{key}/{data.files[3]}")
    dest = tmp_path / "dest"
    dest.mkdir()
    refused(remote("merge", f"{base}/manifest.json", "-o", dest / "m.h5"), f"{base}/{data.files[3]}")
    assert listing(dest) == []


def make_version(path, seed, rows):
    with h5py.File(path, "w") as f:
        f["x"] = np.random.default_rng(seed).standard_normal((rows, 1000)).astype(np.float32)  # 1.6 MB and more
        f["y"] = np.random.default_rng(seed + 1).integers(0, 100, rows)
        f.attrs["step"] = 1  # the same in both versions: only the data tells them apart
    return path


def split_while_replaced(bad, tmp_path, key, jobs, style=None):
    """The server answers as if the file had been replaced by another batch (more rows, other values)
    from its Nth request on, for each N a clean split makes: exit 1 publishing nothing, or an output
    that is one version exactly; never a plan of one version filled with the rows of the other."""
    v1 = make_version(tmp_path / "v1.h5", 1, 400)
    v2 = make_version(tmp_path / "v2.h5", 2, 500)
    url = bad.put(v1, f"{key}/in.h5")
    bad.put(v2, f"{key}/in.h5.v2")
    bad.validators(**(style or {}))
    run("split", url, "-n", 4, "-j", jobs, "-o", tmp_path / "clean", env=BASE_ENV, check=0)
    count = len(bad.requests(f"{key}/"))
    assert count >= 2, bad.requests(f"{key}/")  # the file is read in more than one request
    refusals = 0
    for after in range(count):
        bad.clear()
        bad.validators(**(style or {}))
        bad.fault("changed", prefix=f"/{key}/in.h5", after=after)
        out, merged = tmp_path / f"out-{after}", tmp_path / f"m-{after}.h5"
        res = remote("split", url, "-n", 4, "-j", jobs, "-o", out)
        if res.code != 0:
            refused(res, url, "changed while it was", code=3)
            nothing_published(out)
            refusals += 1
            continue
        run("merge", out, "-o", merged, check=0)
        assert h5diff(v1, merged) == 0 or h5diff(v2, merged) == 0, f"version changed after {after} requests: " \
            f"exit 0 with an output that is neither version\n{res}"
    return refusals


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_object_replaced_while_a_split_reads_it_is_refused_or_read_as_one_version(bad, tmp_path, key, jobs):
    split_while_replaced(bad, tmp_path, key, jobs)


@pytest.mark.parametrize("style", [dict(etag="strong", if_match=False), dict(etag="weak"),
                                   dict(etag=None, last_modified=True), dict(etag=None)],
                         ids=["if-match-ignored", "weak-etag", "last-modified-only", "no-validator"])
def test_a_replaced_object_is_caught_by_whatever_validator_the_server_sends(bad, tmp_path, key, style):
    # Every answer's ETag (weak too), Last-Modified and total size are compared with the first
    # answer's: each is enough to refuse a split that would mix two versions (v2 has more rows).
    assert split_while_replaced(bad, tmp_path, key, 1, style) > 0


@pytest.mark.parametrize("style", [dict(etag="strong", if_match=False), dict(etag=None, last_modified=True)],
                         ids=["if-match-ignored", "last-modified-only"])
def test_a_file_replaced_after_merge_checked_its_digest_is_refused(bad, tmp_path, key, style):
    # merge digests each file, then reads it again: reads of a block (1 MiB) or more are fetched
    # again, and must be of the version the digest was taken of.
    src = make_version(tmp_path / "in.h5", 1, 800)
    run("split", src, "-n", 2, "-o", tmp_path / "mb", check=0)
    base = bad.put_dir(tmp_path / "mb", key)
    victim = f"/{key}/microbatch-00001.h5"
    bad.validators(**style)
    dest = tmp_path / "dest"
    dest.mkdir()
    merged_like_src = remote("merge", f"{base}/manifest.json", "-o", dest / "clean.h5")
    assert merged_like_src.code == 0 and h5diff(src, dest / "clean.h5") == 0, merged_like_src
    (dest / "clean.h5").unlink()
    count = len(bad.requests(victim))
    assert count >= 2, bad.requests(victim)
    for after in range(count):
        bad.clear()
        bad.validators(**style)
        bad.fault("changed", prefix=victim, after=after)
        res = remote("merge", f"{base}/manifest.json", "-o", dest / "m.h5")
        # From the first request on: another file than the manifest's (1); after it: changed while read (3).
        assert res.code in (1, 3), f"changed after {after} requests:\n{res}"
        said = "content digest differs" if res.code == 1 else "changed while it was read"
        assert_one_line_error(res, res.code, f"{base}/microbatch-00001.h5", said)
        assert listing(dest) == []


@pytest.mark.parametrize("rows", [400, 500])
def test_shards_of_an_object_replaced_between_them_do_not_finish_as_one_split(web, tmp_path, key, rows):
    # Shard 0 reads version 1; the object is replaced (same size and tree, other values; or more rows);
    # shard 1 reads version 2. Each shard is exact for what it read, but finish must not make one split
    # of the two: refused by shard 1 or by finish, or else the merge is one version exactly.
    v1 = make_version(tmp_path / "v1.h5", 1, 400)
    v2 = make_version(tmp_path / "v2.h5", 2, rows)
    if rows == 400:
        assert os.path.getsize(v1) == os.path.getsize(v2)
    url = web.put(v1, f"{key}/in.h5")
    out = tmp_path / "sh"
    run("split", url, "-n", 4, "-o", out, "--shard", "0/2", env=BASE_ENV, check=0)
    served = web.put(v2, f"{key}/in.h5")
    # nginx's ETag is the modification time in seconds and the size: another second, another version.
    target = os.path.join(web.root, f"{key}/in.h5")
    os.utime(target, (os.path.getmtime(target) + 2, os.path.getmtime(target) + 2))
    assert served == url
    res = remote("split", url, "-n", 4, "-o", out, "--shard", "1/2")
    if res.code == 0:
        res = run("finish", out)
    if res.code != 0:
        assert_one_line_error(res, 1)
        assert "manifest.json" not in listing(out)
        return
    merged = tmp_path / "m.h5"
    run("merge", out, "-o", merged, check=0)
    assert h5diff(v1, merged) == 0 or h5diff(v2, merged) == 0, "finish made one split of two versions"


def test_a_remote_file_that_is_not_hdf5(web, data, tmp_path, key):
    url = web.put(data.plain / "manifest.json", f"{key}/in.h5")
    out = tmp_path / "out"
    refused(remote(*data.split_args(url, out)), url)
    nothing_published(out)
    refused(remote("inspect", url), url)


def test_a_missing_manifest_of_a_remote_split(web, data, tmp_path, key):
    dest = tmp_path / "dest"
    dest.mkdir()
    url = web.url(f"{key}/manifest.json")
    refused(remote("merge", url, "-o", dest / "m.h5"), url, "no manifest", "the output of a finished split")
    assert listing(dest) == []


# --- shards and MPI: each process reads only its own ranges --------------------------------

BIG_ROWS, BIG_COLS = 1024, 16384  # float32: 64 MiB, contiguous
BIG_SPEC = {"x": 0, "y": 0}


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = tmp_path_factory.mktemp("big")
    src = d / "big.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.arange(BIG_ROWS * BIG_COLS, dtype=np.float32).reshape(BIG_ROWS, BIG_COLS))
        f["y"] = np.arange(BIG_ROWS, dtype=np.int32)
        f.attrs["step"] = 3
    spec = write_spec(d / "s.json", BIG_SPEC)
    plain = d / "plain"
    run("split", src, "-s", spec, "-n", 8, "-o", plain, check=0)
    return src, spec, plain


def test_shards_of_a_url_then_finish_give_the_local_split_and_read_only_their_share(web, big, tmp_path, key):
    src, spec, plain = big
    url = web.put(src, f"{key}/big.h5")
    size = os.path.getsize(src)
    assert size >= 64 << 20
    out = tmp_path / "sh"
    served = []
    for k in range(2):
        before = sum(e["bytes"] for e in settled(web, f"{key}/"))
        run("split", url, "-s", spec, "-n", 8, "-o", out, "--shard", f"{k}/2", env=BASE_ENV, check=0)
        served.append(sum(e["bytes"] for e in settled(web, f"{key}/")) - before)
    run("finish", out, check=0)
    same_split(plain, out, sharded=True)
    for k, b in enumerate(served):
        assert b < 0.6 * size, f"shard {k} of 2 fetched {b} of {size} bytes"
    merged = tmp_path / "m.h5"
    run("merge", out, "-o", merged, check=0)
    assert h5diff(src, merged) == 0


MPI_BINARY = os.environ.get("MICROBATCH_MPI")


def test_mpirun_split_of_a_url(web, big, tmp_path, key):
    if not MPI_BINARY or shutil.which("mpirun") is None:
        pytest.skip("needs microbatch-mpi (MICROBATCH_MPI) and mpirun")
    from test_mpi import mpirun
    src, spec, plain = big
    url = web.put(src, f"{key}/big.h5")
    out = tmp_path / "np2"
    res = mpirun(2, MPI_BINARY, "split", url, "-s", spec, "-n", 8, "-o", out)
    assert res.code == 0, res
    same_split(plain, out)
    # two ranks, each its own half of the rows: neither the whole file twice nor more
    assert sum(e["bytes"] for e in settled(web, f"{key}/")) < 1.2 * os.path.getsize(src)
    # and the ranks merge the remote split back
    base = web.put_dir(plain, f"{key}/split")
    merged = tmp_path / "m.h5"
    res = mpirun(2, MPI_BINARY, "merge", f"{base}/manifest.json", "-o", merged)
    assert res.code == 0, res
    assert h5diff(src, merged) == 0


def test_a_stop_signal_ends_a_stalled_request_at_once(bad, data, tmp_path, key):
    # The server never answers; SIGINT must not wait for MICROBATCH_HTTP_TIMEOUT (here 60 s).
    url = bad.put(data.src, f"{key}/in.h5")
    bad.fault("silent")
    out = tmp_path / "out"
    silent = len([e for e in bad.requests() if e["fault"] == "silent"])
    proc = subprocess.Popen([BINARY, *map(str, data.split_args(url, out))], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env(MICROBATCH_HTTP_TIMEOUT="60"))
    # The signal comes once the server has accepted the run's connection: its request is under way.
    wait_until(lambda: len([e for e in bad.requests() if e["fault"] == "silent"]) > silent or proc.poll() is not None,
               "the run did not connect")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    # Ended by the stop request (libcurl asks about it about once a second), not by the guard's forced exit
    # at the end of its 3 s grace ("did not return in time"), nor by MICROBATCH_HTTP_TIMEOUT.
    assert "interrupted by signal 2" in err and "did not return in time" not in err, err
    nothing_published(out)


def test_data_stored_in_other_files_is_refused_in_a_remote_file(web, tmp_path, key):
    # libhdf5 opens a virtual dataset's sources and external storage by name, past the driver.
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(10)
    layout = h5py.VirtualLayout(shape=(10,), dtype="i8")
    layout[:] = h5py.VirtualSource("src.h5", "x", shape=(10,))
    for name, build in (("virtual", lambda f: f.create_virtual_dataset("d", layout)),
                       ("external", lambda f: f.create_dataset("d", (10,), dtype="i8",
                                                               external=[("ext.bin", 0, 80)]))):
        path = tmp_path / f"{name}.h5"
        with h5py.File(path, "w") as f:
            build(f)
            f["y"] = np.arange(10)
        web.put(src, f"{key}/src.h5")
        url = web.put(path, f"{key}/{name}.h5")
        out = tmp_path / f"out-{name}"
        res = remote("split", url, "-n", 2, "-o", out)
        refused(res, url, "stored in other files")
        nothing_published(out)


# --- servers that answer a Range request with the whole file ------------------------------

@pytest.fixture(scope="module")
def simple():
    with servers.python_http() as server:
        yield server


WHOLE_FILE_LINE = "the server answers range requests with the whole file (HTTP 200)"


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_server_without_range_is_read_whole_once_into_a_temporary_copy(simple, big, tmp_path, key, jobs):
    # python3 -m http.server answers every GET with the whole file: it is read once, into an unnamed
    # temporary file in TMPDIR that nothing outlives, and the split is the local split.
    src, spec, plain = big
    url = simple.put(src, f"{key}/big.h5")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out"
    res = run("split", url, "-s", spec, "-n", 8, "-j", jobs, "-o", out, env=env(TMPDIR=tmp), check=0)
    same_split(plain, out)
    assert res.err.count(WHOLE_FILE_LINE) == 1, res
    assert str(tmp) in res.err, res
    assert [e["status"] for e in simple.requests(f"{key}/")] == [200], simple.requests(f"{key}/")
    assert listing(tmp) == []
    # merge reads the pieces from such a server too
    base = simple.put_dir(out, f"{key}/split")
    merged = tmp_path / "m.h5"
    run("merge", f"{base}/manifest.json", "-o", merged, env=env(TMPDIR=tmp), check=0)
    assert h5diff(src, merged) == 0
    assert listing(tmp) == []


def test_small_files_of_a_server_without_range_are_read_again_whole(bad, big, tmp_path, key):
    # Pieces smaller than the first request are not copied to disk: their bytes come from the block
    # cache, and once the cache has let them go (128 pieces of 512 KiB: more than it keeps), from the
    # whole file read again.
    src, spec, _ = big
    pieces = tmp_path / "pieces"
    run("split", src, "-s", spec, "-n", 128, "-o", pieces, check=0)
    bad.validators(ranges=False)
    base = bad.put_dir(pieces, f"{key}/split")
    merged = tmp_path / "m.h5"
    res = remote("merge", f"{base}/manifest.json", "-o", merged)
    assert res.code == 0, res
    assert h5diff(src, merged) == 0
    asked = [e["uri"] for e in bad.requests(f"{key}/split/") if e["uri"].endswith(".h5")]
    assert all(e["status"] == 200 for e in bad.requests(f"{key}/split/")), bad.requests(f"{key}/split/")
    assert len(asked) > len(set(asked)) == 128, "no piece was read again: the test proves nothing"


def test_a_dropped_whole_file_is_read_again_and_the_split_exact(bad, big, tmp_path, key):
    src, spec, plain = big
    url = bad.put(src, f"{key}/big.h5")
    bad.validators(ranges=False)
    bad.fault("drop", prefix=f"/{key}/", times=1)
    out = tmp_path / "out"
    run("split", url, "-s", spec, "-n", 8, "-o", out, env=BASE_ENV, check=0)
    same_split(plain, out)
    assert [e["fault"] for e in bad.requests(f"{key}/")] == ["drop", None]


def test_a_full_temporary_directory_is_exit_3_and_publishes_nothing(simple, big, small_disk, tmp_path, key):
    src, spec, _ = big
    url = simple.put(src, f"{key}/big.h5")
    out = tmp_path / "out"
    res = remote("split", url, "-s", spec, "-n", 8, "-o", out, environ=env(TMPDIR=small_disk))
    # the info line that the copy was being made, then the one error line
    said = error_line(res, url, code=3)
    assert "temporary copy" in said and "No space left on device" in said, res
    assert WHOLE_FILE_LINE in res.err
    nothing_published(out)
    assert listing(small_disk) == []


def test_a_server_that_stops_answering_ranges_is_refused(bad, big, tmp_path, key):
    # The first request got a range (206); a later one the whole file (200): not a server that ignores
    # Range from the start, but one whose answers cannot be trusted to be the bytes asked for.
    src, spec, _ = big
    url = bad.put(src, f"{key}/big.h5")
    bad.fault("whole", prefix=f"/{key}/", after=1)
    out = tmp_path / "out"
    res = remote("split", url, "-s", spec, "-n", 8, "-o", out)
    refused(res, url, "stopped answering range requests")
    nothing_published(out)


def test_an_unusable_temporary_directory_is_one_line_naming_it(simple, big, tmp_path, key):
    src, spec, _ = big
    url = simple.put(src, f"{key}/big.h5")
    missing = tmp_path / "no-such-dir"
    out = tmp_path / "out"
    res = remote("split", url, "-s", spec, "-n", 8, "-o", out, environ=env(TMPDIR=missing))
    said = error_line(res, url, code=1)  # a directory that is not there: fix TMPDIR, not a retry
    assert f"cannot make a temporary file in {missing}" in said and "set TMPDIR" in said, res
    nothing_published(out)
