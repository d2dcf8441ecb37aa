"""The Store contract (tests/unit/test_store.cpp) run against a real S3 server on loopback: the S3 prefix keeps
what a local directory keeps. The unit-test binary does the checking; this file gives it a store to talk to."""
import os
import subprocess

import pytest

import servers
from conftest import ENV
from test_upload import objects, s3  # noqa: F401  (fixtures)

UNIT_TESTS = os.environ.get("MB_UNIT_TESTS")

pytestmark = [pytest.mark.skipif(not servers.s3_installed(), reason="s3rver is not installed (install-deps.sh)"),
              pytest.mark.skipif(not UNIT_TESTS, reason="MB_UNIT_TESTS names no unit-test binary (ctest sets it)")]


def test_an_s3_prefix_keeps_the_store_contract(s3):
    env = dict(s3.env(ENV), MB_TEST_S3_PREFIX=s3.s3_url("contract/"))
    proc = subprocess.run([UNIT_TESTS, "--test-case=store contract: an S3 prefix*"],
                          env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the S3 contract ran against s3://bkt/contract/" in proc.stdout, proc.stdout
    assert objects(s3, "contract") == {}  # it removed what it wrote


def test_an_s3_prefix_publishes_a_run(s3, tmp_path):
    # Through the proxy, which passes on only whole requests, as S3 takes them: s3rver keeps the part of a PUT
    # it got before the client gave up (the abandoned publication's), which S3 never does.
    with servers.s3_proxy(s3) as proxy:
        env = dict(s3.env(ENV), MB_TEST_S3_PREFIX=s3.s3_url("publication/"), TMPDIR=str(tmp_path),
                   AWS_ENDPOINT_URL=proxy.endpoint)
        proc = subprocess.run([UNIT_TESTS, "--test-case=publication: onto an S3 prefix*"],
                              env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        proxy.wait_idle()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the S3 publication ran against s3://bkt/publication/" in proc.stdout, proc.stdout
    assert objects(s3, "publication") == {}  # it removed what it wrote
    assert os.listdir(tmp_path) == []  # no spool left
