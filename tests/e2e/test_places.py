"""The guarantees of docs/behavior.md hold on every kind of place (io/store), the same on an S3 prefix (a real
s3rver on loopback) as in a local directory: an output that is one of the run's inputs is refused even with
--force (a microbatch file, the manifest, the input of a split); a commit object whose PUT landed but whose
answer was lost is undone by finish as by split, and the exit status says the run failed."""
import filecmp

import pytest

import servers
from conftest import assert_one_line_error, h5diff, listing, run
from test_upload import env, mixed, objects, s3  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(not servers.s3_installed(), reason="s3rver is not installed (install-deps.sh)")


@pytest.fixture
def places(s3, env, mixed, tmp_path):
    """One split in a directory and the same split under a prefix: (local dir, prefix URL, prefix key)."""
    src, spec = mixed
    local = tmp_path / "local"
    run("split", src, "-s", spec, "-n", 3, "-o", local, check=0)
    run("split", src, "-s", spec, "-n", 3, "-o", s3.s3_url("p/"), "--force", env=env, check=0)  # one server a module
    return local, s3.s3_url("p/"), "p"


def unchanged(s3, prefix, local):
    """The prefix still holds the split the directory holds, byte for byte."""
    got = objects(s3, prefix)
    assert sorted(got) == listing(local)
    for name, path in got.items():
        assert filecmp.cmp(path, local / name, shallow=False), name


@pytest.mark.parametrize("member", ["microbatch-00001.h5", "manifest.json"])
def test_merge_refuses_an_output_that_is_one_of_its_inputs(s3, env, places, member):
    local, url, prefix = places
    assert_one_line_error(run("merge", local, "-o", local / member, "--force", env=env), 1,
                          f"{local / member}: the output would replace", "which this run reads")
    assert_one_line_error(run("merge", url, "-o", url + member, "--force", env=env), 1,
                          f"s3://bkt/{prefix}/{member}: the output would replace", "which this run reads")
    unchanged(s3, prefix, local)
    assert listing(env["TMPDIR"]) == []


def test_merge_refuses_an_input_given_one_by_one_as_its_output(s3, env, places):
    local, url, prefix = places
    files = [url + f"microbatch-{i:05d}.h5" for i in range(3)]
    assert_one_line_error(run("merge", *files, "-o", url + "manifest.json", "--force", env=env), 1,
                          f"s3://bkt/{prefix}/manifest.json: the output would replace", "which this run reads")
    unchanged(s3, prefix, local)


@pytest.mark.parametrize("shard", [[], ["--shard", "0/2"]])
def test_split_refuses_to_replace_its_own_input_even_with_force(s3, env, mixed, places, shard, tmp_path):
    local, url, prefix = places
    for out, shown, first in [(local, str(local), local / "microbatch-00000.h5"),
                              (url, f"s3://bkt/{prefix}/", url + "microbatch-00000.h5")]:
        res = run("split", first, "-n", 2, "-o", out, "--force", *shard, env=env)
        assert_one_line_error(res, 1, shown, "the input", "choose another output directory")
    unchanged(s3, prefix, local)
    run("merge", url, "-o", tmp_path / "merged.h5", env=env, check=0)
    assert h5diff(mixed[0], tmp_path / "merged.h5") == 0


def test_finish_undoes_a_manifest_whose_answer_was_lost(s3, env, mixed, tmp_path):
    # The store keeps every PUT of the manifest but each answer is a 500: finish fails (exit 3), the manifest it
    # put is deleted, and a rerun that gets its answers finishes the split.
    src, spec = mixed
    url = s3.s3_url("lost-finish/")
    for k in range(2):
        run("split", src, "-s", spec, "-n", 5, "-o", url, "--shard", f"{k}/2", env=env, check=0)
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("PUT", "lost-finish/manifest.json", "lost", times=100)
        res = run("finish", url, env=dict(env, AWS_ENDPOINT_URL=proxy.endpoint))
        assert any(m == "lost" for _, _, m in proxy.requests())
    assert_one_line_error(res, 3, "s3://bkt/lost-finish/manifest.json")
    assert "manifest.json" not in objects(s3, "lost-finish")
    run("finish", url, env=env, check=0)
    run("split", src, "-s", spec, "-n", 5, "-o", tmp_path / "plain", check=0)
    assert filecmp.cmp(objects(s3, "lost-finish")["manifest.json"], tmp_path / "plain" / "manifest.json",
                       shallow=False)


@pytest.mark.parametrize("command", ["split", "merge"])
def test_a_commit_whose_answer_was_lost_is_undone(s3, env, mixed, tmp_path, command):
    # The store keeps every PUT of the commit object (a split's manifest, a merged object) but each answer is a
    # 500: the run fails (exit 3), the object it put is deleted, and nothing passes for finished.
    src, spec = mixed
    prefix = f"lost-{command}"
    if command == "split":
        argv, committed = ["split", src, "-s", spec, "-n", 3, "-o", s3.s3_url(f"{prefix}/")], f"{prefix}/manifest.json"
    else:
        run("split", src, "-s", spec, "-n", 3, "-o", tmp_path / "mb", check=0)
        argv, committed = ["merge", tmp_path / "mb", "-o", s3.s3_url(f"{prefix}/m.h5")], f"{prefix}/m.h5"
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("PUT", committed, "lost", times=100)
        proxy.fault("POST", committed, "lost", times=100)  # a multipart upload's completion
        res = run(*argv, env=dict(env, AWS_ENDPOINT_URL=proxy.endpoint))
        assert any(m == "lost" for _, _, m in proxy.requests()), proxy.requests()
    assert_one_line_error(res, 3, f"s3://bkt/{committed}")
    assert committed.split("/")[1] not in objects(s3, prefix), objects(s3, prefix)


def test_a_forced_merge_whose_upload_failed_leaves_the_earlier_object(s3, env, mixed, tmp_path):
    # Every PUT of the new object is refused before it reaches the store (HTTP 500): the run fails (exit 3) and
    # the object --force was to replace is still the one at the key, byte for byte.
    src, spec = mixed
    run("split", src, "-s", spec, "-n", 3, "-o", tmp_path / "mb", check=0)
    url = s3.s3_url("forced/m.h5")
    run("merge", tmp_path / "mb", "-o", url, env=env, check=0)
    before = open(objects(s3, "forced")["m.h5"], "rb").read()
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("PUT", "forced/m.h5", "500", times=100)
        res = run("merge", tmp_path / "mb", "-o", url, "--force", env=dict(env, AWS_ENDPOINT_URL=proxy.endpoint))
        assert any(m == "500" for _, _, m in proxy.requests()), proxy.requests()
    assert_one_line_error(res, 3, url)
    assert open(objects(s3, "forced")["m.h5"], "rb").read() == before
