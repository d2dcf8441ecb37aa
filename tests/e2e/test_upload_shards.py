"""split --shard K/P onto an s3:// prefix and finish there, and mpirun's ranks onto a prefix, against a real
s3rver on loopback: each shard uploads its files, then its part record; finish lists the prefix, checks the
records as it does in a directory and puts the manifest a one-process split writes, byte for byte (a team's
rank 0 does it, then deletes the part records). A shard's earlier output needs --force, a part of another
split or a stray object is refused, a shard or rank that fails leaves nothing."""
import filecmp
import json
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest

import servers
from conftest import BINARY, Result, assert_one_line_error, h5diff, listing, run, summary
from test_upload import env, mixed, objects, s3  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(not servers.s3_installed(), reason="s3rver is not installed (install-deps.sh)")


def shard_args(src, spec, out, k, p, n=7):
    return ["split", src, "-s", spec, "-n", n, "-o", out, "--shard", f"{k}/{p}"]


def parts(p):
    return [f"part-{k:05d}-of-{p:05d}.json" for k in range(p)]


def test_concurrent_shards_then_finish_give_the_plain_split(s3, env, mixed, tmp_path):
    src, spec = mixed
    run("split", src, "-s", spec, "-n", 7, "-o", tmp_path / "plain", check=0)
    url = s3.s3_url("shards/")
    procs = [subprocess.Popen([BINARY, *map(str, shard_args(src, spec, url, k, 3))], env=env,
                              stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for k in range(3)]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
        p.stderr.close()
    files = [f"microbatch-{i:05d}.h5" for i in range(7)]
    assert sorted(objects(s3, "shards")) == files + parts(3)  # no manifest before finish
    res = run("finish", url, env=env, check=0)
    assert "s3://bkt/shards/manifest.json" in res.err
    got = objects(s3, "shards")
    for name in files + ["manifest.json"]:
        assert filecmp.cmp(got[name], tmp_path / "plain" / name, shallow=False), name
    assert listing(env["TMPDIR"]) == []
    run("verify", url, env=env, check=0)
    run("merge", url, "-o", tmp_path / "merged.h5", env=env, check=0)
    assert h5diff(src, tmp_path / "merged.h5") == 0
    assert_one_line_error(run("finish", url, env=env), 1, "s3://bkt/shards/manifest.json", "finished already")


def test_finish_names_a_missing_part_and_a_stray_object(s3, env, mixed, tmp_path):
    src, spec = mixed
    url = s3.s3_url("partial/")
    res = run(*shard_args(src, spec, url, 0, 2), "--json", env=env, check=0)
    files = summary(res, "split-summary")["files"]  # its share, then its part record, with their sizes
    got = objects(s3, "partial")
    assert [f["path"] for f in files] == [s3.s3_url(f"partial/{n}") for n in sorted(got)]
    assert [f["bytes"] for f in files] == [os.path.getsize(got[n]) for n in sorted(got)]
    assert_one_line_error(run("finish", url, env=env), 1, "s3://bkt/partial/part-00001-of-00002.json", "missing",
                          "--shard 1/2")
    run(*shard_args(src, spec, url, 1, 2), env=env, check=0)
    s3.put(src, "partial/microbatch-00009.h5")  # another split's file
    assert_one_line_error(run("finish", url, env=env), 1, "s3://bkt/partial/microbatch-00009.h5",
                          "not listed in any part record")
    assert "manifest.json" not in objects(s3, "partial")


def test_finish_refuses_a_file_of_another_size(s3, env, mixed, tmp_path):
    src, spec = mixed
    url = s3.s3_url("resized/")
    for k in range(2):
        run(*shard_args(src, spec, url, k, 2), env=env, check=0)
    s3.put(src, "resized/microbatch-00005.h5")  # replaced after its shard finished
    assert_one_line_error(run("finish", url, env=env), 1, "s3://bkt/resized/microbatch-00005.h5", "bytes",
                          "run shard 1 again")
    assert "manifest.json" not in objects(s3, "resized")


def test_a_shards_earlier_output_needs_force_and_a_finished_split_too(s3, env, mixed, tmp_path):
    src, spec = mixed
    url = s3.s3_url("rerun/")
    run(*shard_args(src, spec, url, 0, 2), env=env, check=0)
    assert_one_line_error(run(*shard_args(src, spec, url, 0, 2), env=env), 1, "s3://bkt/rerun/", "earlier run",
                          "--force")
    run(*shard_args(src, spec, url, 0, 2), "--force", env=env, check=0)
    run(*shard_args(src, spec, url, 1, 2), env=env, check=0)
    run("finish", url, env=env, check=0)
    assert_one_line_error(run(*shard_args(src, spec, url, 1, 2), env=env), 1, "finished split", "--force")
    run(*shard_args(src, spec, url, 1, 2), "--force", env=env, check=0)
    assert "manifest.json" not in objects(s3, "rerun")  # deleted first: the prefix is no finished split now
    run("finish", url, env=env, check=0)
    run("merge", url, "-o", tmp_path / "m.h5", env=env, check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_a_plain_split_refuses_a_prefix_of_unfinished_shards_and_replaces_it_with_force(s3, env, mixed, tmp_path):
    src, spec = mixed
    url = s3.s3_url("unfinished/")
    run(*shard_args(src, spec, url, 0, 2), env=env, check=0)  # files 0..3 and part 0: no manifest yet
    before = sorted(objects(s3, "unfinished"))
    assert_one_line_error(run("split", src, "-s", spec, "-n", 2, "-o", url, env=env), 1, "s3://bkt/unfinished/",
                          "earlier split", "--force")
    assert sorted(objects(s3, "unfinished")) == before
    run("split", src, "-s", spec, "-n", 2, "-o", url, "--force", env=env, check=0)
    # The shard's part record and the files the new split does not overwrite are gone.
    assert sorted(objects(s3, "unfinished")) == ["manifest.json", "microbatch-00000.h5", "microbatch-00001.h5"]
    run("verify", url, env=env, check=0)


def test_an_empty_shard_and_names_without_the_final_slash(s3, env, mixed, tmp_path):
    src, spec = mixed
    for k in range(3):  # 2 files over 3 shards: shard 0 writes none, only its part record
        run(*shard_args(src, spec, s3.s3_url("sparse"), k, 3, n=2), env=env, check=0)
    assert sorted(objects(s3, "sparse")) == ["microbatch-00000.h5", "microbatch-00001.h5"] + parts(3)
    run("finish", s3.s3_url("sparse"), env=env, check=0)
    run("verify", s3.s3_url("sparse/"), env=env, check=0)
    upper = run("verify", s3.s3_url("sparse/").replace("s3://", "S3://"), "--json", env=env, check=0)
    assert json.loads(upper.out)["listed"]  # the scheme in any case is S3's
    run("merge", s3.s3_url("sparse/"), "-o", tmp_path / "m.h5", env=env, check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0
    assert listing(env["TMPDIR"]) == []


def test_keys_with_spaces_and_signs_are_listed_and_signed(s3, env, mixed, tmp_path):
    src, spec = mixed
    url = s3.s3_url("odd name+1&2/")
    for k in range(2):
        run(*shard_args(src, spec, url, k, 2), env=env, check=0)
    run("finish", url, env=env, check=0)
    run("verify", url, env=env, check=0)
    run("merge", url, "-o", tmp_path / "m.h5", env=env, check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_a_shard_refuses_a_prefix_with_another_splits_part(s3, env, mixed):
    src, spec = mixed
    url = s3.s3_url("other/")
    run(*shard_args(src, spec, url, 0, 2, n=4), env=env, check=0)
    before = sorted(objects(s3, "other"))
    assert_one_line_error(run(*shard_args(src, spec, url, 1, 2, n=6), env=env), 1, "s3://bkt/other/",
                          "part-00000-of-00002.json", "another split")
    assert sorted(objects(s3, "other")) == before


def test_a_shard_that_fails_leaves_no_part_record_and_deletes_its_files(s3, env, mixed):
    src, spec = mixed
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("PUT", "microbatch-00005", "etag")
        res = run(*shard_args(src, spec, s3.s3_url("failed/"), 1, 2),
                  env=dict(env, AWS_ENDPOINT_URL=proxy.endpoint))
    assert_one_line_error(res, 3, "s3://bkt/failed/microbatch-00005.h5", "ETag")
    assert objects(s3, "failed") == {}
    assert listing(env["TMPDIR"]) == []


def test_wrong_credentials_are_refused_before_any_work(s3, env, mixed):
    src, spec = mixed
    bad = dict(env, AWS_SECRET_ACCESS_KEY="not-the-secret")
    assert_one_line_error(run(*shard_args(src, spec, s3.s3_url("creds/"), 0, 2), env=bad), 1, "s3://bkt/creds/",
                          "GET of the listing failed", "403", "AWS_SECRET_ACCESS_KEY")
    assert_one_line_error(run("finish", s3.s3_url("creds/"), env=bad), 1, "GET of the listing failed", "403")
    assert listing(env["TMPDIR"]) == []


def test_a_prefix_of_more_than_a_thousand_objects_is_listed_page_by_page(s3, env, tmp_path):
    # ListObjectsV2 answers at most 1,000 keys a page: finish and verify must read on past the first.
    src = tmp_path / "rows.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(1005)
    url = s3.s3_url("pages/")
    run("split", src, "-n", 1005, "-o", url, "--shard", "0/1", env=env, check=0)
    run("finish", url, env=env, check=0)
    s3.put(src, "pages/microbatch-01005.h5")  # sorts after every listed file: on the second page
    res = run("verify", url, "--json", env=env)
    assert res.code == 1 and json.loads(res.out)["extra"] == ["microbatch-01005.h5"], res
    run("merge", url, "-o", tmp_path / "m.h5", env=env, check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


MPI_BINARY = os.environ.get("MICROBATCH_MPI")
needs_mpi = pytest.mark.skipif(shutil.which("mpirun") is None or not MPI_BINARY,
                               reason="needs mpirun and microbatch-mpi (MICROBATCH_MPI)")


def mpirun(np_, env, *args):
    env = dict(env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1")
    return Result(subprocess.run(["mpirun", "-np", str(np_), MPI_BINARY, *map(str, args)], capture_output=True,
                                 text=True, timeout=600, stdin=subprocess.DEVNULL, env=env))


@needs_mpi
def test_mpi_ranks_split_onto_a_prefix_as_one_process_does(s3, env, mixed, tmp_path):
    src, spec = mixed
    run("split", src, "-s", spec, "-n", 7, "-o", tmp_path / "plain", check=0)
    url = s3.s3_url("team/")
    res = mpirun(3, env, "split", src, "-s", spec, "-n", 7, "-o", url, "--json")
    assert res.code == 0, res
    got = objects(s3, "team")
    assert sorted(got) == sorted(listing(tmp_path / "plain"))  # the part records are gone
    for name, path in got.items():
        assert filecmp.cmp(path, tmp_path / "plain" / name, shallow=False), name
    files = summary(res, "split-summary")["files"]
    assert [f["path"] for f in files] == [s3.s3_url(f"team/{n}") for n in sorted(got) if n != "manifest.json"] + \
        [s3.s3_url("team/manifest.json")]
    assert [f["bytes"] for f in files] == [os.path.getsize(got[os.path.basename(f["path"])]) for f in files]
    assert listing(env["TMPDIR"]) == []
    run("merge", url, "-o", tmp_path / "m.h5", env=env, check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0

    again = mpirun(2, env, "split", src, "-s", spec, "-n", 3, "-o", url)
    assert again.code == 1 and "s3://bkt/team/: holds the output of an earlier split" in again.err, again
    assert sorted(objects(s3, "team")) == sorted(got)
    assert mpirun(2, env, "split", src, "-s", spec, "-n", 3, "-o", url, "--force").code == 0
    assert sorted(objects(s3, "team")) == ["manifest.json"] + [f"microbatch-{i:05d}.h5" for i in range(3)]
    run("verify", url, env=env, check=0)


@needs_mpi
def test_mpi_keep_local_is_a_usage_error(s3, env, mixed, tmp_path):
    src, spec = mixed
    res = mpirun(2, env, "split", src, "-s", spec, "-n", 4, "-o", s3.s3_url("kept/"), "--keep-local", tmp_path / "k")
    assert res.code == 2 and "--keep-local and an MPI launch" in res.err, res
    assert objects(s3, "kept") == {}


@needs_mpi
def test_mpi_a_rank_that_fails_leaves_nothing_under_the_prefix(s3, env, mixed):
    src, spec = mixed
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("PUT", "microbatch-00005", "etag")
        res = mpirun(3, dict(env, AWS_ENDPOINT_URL=proxy.endpoint), "split", src, "-s", spec, "-n", 7, "-o",
                     s3.s3_url("team-failed/"))
    assert res.code != 0 and "s3://bkt/team-failed/microbatch-00005.h5" in res.err, res
    assert objects(s3, "team-failed") == {}
    assert listing(env["TMPDIR"]) == []


@pytest.mark.parametrize("last", ["manifest.json", "part-00001-of-00002.json"])
def test_a_commit_whose_answer_is_lost_is_deleted_with_the_files(s3, env, mixed, last):
    # The store keeps every PUT of the last object but each answer is a 500: the run fails, and what landed goes.
    src, spec = mixed
    shard = ["--shard", "1/2"] if last.startswith("part-") else []
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("PUT", f"lost/{last}", "lost", times=100)
        res = run("split", src, "-s", spec, "-n", 7, "-o", s3.s3_url("lost/"), *shard,
                  env=dict(env, AWS_ENDPOINT_URL=proxy.endpoint))
        assert any(m == "lost" for _, _, m in proxy.requests())
    assert_one_line_error(res, 3, f"s3://bkt/lost/{last}")
    assert objects(s3, "lost") == {}
    assert listing(env["TMPDIR"]) == []


@needs_mpi
@pytest.mark.parametrize("fault", ["500", "lost"])
def test_mpi_a_team_whose_manifest_put_fails_deletes_what_its_ranks_published(s3, env, mixed, fault):
    # Every rank has uploaded its files and part record when rank 0's manifest fails (refused, or stored with
    # its answer lost): rank 0 deletes them all, the manifest first.
    src, spec = mixed
    prefix = f"team-{fault}"
    with servers.s3_proxy(s3) as proxy:
        proxy.fault("PUT", f"{prefix}/manifest.json", fault, times=100)
        res = mpirun(3, dict(env, AWS_ENDPOINT_URL=proxy.endpoint), "split", src, "-s", spec, "-n", 7, "-o",
                     s3.s3_url(f"{prefix}/"))
        assert any(m is None and "part-" in p for _, p, m in proxy.requests())  # the parts were up
    assert res.code != 0 and f"s3://bkt/{prefix}/manifest.json: PUT of the object failed" in res.err, res
    assert objects(s3, prefix) == {}
    assert listing(env["TMPDIR"]) == []
