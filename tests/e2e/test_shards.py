"""split --shard K/P and finish: P processes (Slurm array tasks, or anything
else) each write their share of one split's files into one directory and a
part record; finish checks the records and writes the manifest a
one-process split writes, byte for byte."""
import filecmp
import json
import os
import signal
import subprocess

import h5py
import numpy as np
import pytest

from conftest import (BINARY, ENV, MIXED_SPEC, assert_one_line_error, h5diff, listing, make_mixed_batch,
                      pause_shim, run, summary, wait_until, write_spec)


@pytest.fixture
def setup(tmp_path):
    src = make_mixed_batch(tmp_path / "in.h5")
    spec = write_spec(tmp_path / "s.json", MIXED_SPEC)
    return src, spec


def split_args(src, spec, out, n=7):
    return ["split", src, "-s", spec, "-n", n, "-o", out]


def same_files(a, b):
    """Every file of split `a` (microbatch files and manifest) byte-identical in `b`."""
    names = [n for n in listing(a) if n.endswith(".h5") or n == "manifest.json"]
    assert names
    for name in names:
        assert filecmp.cmp(a / name, b / name, shallow=False), name


def finished_like(plain, out, src, merged):
    """finish writes the plain split's manifest; the files are the plain split's; the merge is the input."""
    run("finish", out, check=0)
    same_files(plain, out)
    run("merge", out, "-o", merged, check=0)
    assert h5diff(src, merged) == 0


def test_a_plain_split_is_reproducible(tmp_path, setup):
    src, spec = setup
    run(*split_args(src, spec, tmp_path / "a"), check=0)
    run(*split_args(src, spec, tmp_path / "b"), check=0)
    same_files(tmp_path / "a", tmp_path / "b")


def test_a_shard_logs_what_it_wrote(tmp_path, setup):
    """An array task's log is read alone: it names its own files, not the whole split's."""
    src, spec = setup
    out = tmp_path / "sh"
    res = run(*split_args(src, spec, out), "--shard", "1/2", check=0)  # 7 files: shard 1 writes [3, 7)
    assert (f"shard 1 of 2: 4 of 7 microbatch files (microbatch-00003.h5 .. microbatch-00006.h5) of {src} in {out}; "
            f"'microbatch finish {out}' once all 2 are done") in res.err
    assert "into 7 microbatches" not in res.err
    res = run(*split_args(src, spec, tmp_path / "one", n=1), "--shard", "1/2", check=0)
    assert "shard 1 of 2: 1 of 1 microbatch files (microbatch-00000.h5)" in res.err
    res = run(*split_args(src, spec, tmp_path / "empty", n=1), "--shard", "0/2", check=0)
    assert "shard 0 of 2: 0 of 1 microbatch files (none: more shards than files)" in res.err


@pytest.mark.parametrize("shards", [1, 2, 3, 5])
def test_shards_one_after_another_then_finish_give_the_plain_split(tmp_path, setup, shards):
    src, spec = setup
    run(*split_args(src, spec, tmp_path / "plain"), check=0)
    out = tmp_path / "sh"
    for k in range(shards):
        run(*split_args(src, spec, out), "--shard", f"{k}/{shards}", check=0)
        assert not (out / "manifest.json").exists()
        assert (out / f"part-{k:05}-of-{shards:05}.json").exists()
    finished_like(tmp_path / "plain", out, src, tmp_path / "m.h5")


def test_shards_write_only_their_share(tmp_path, setup):
    src, spec = setup
    out = tmp_path / "sh"
    run(*split_args(src, spec, out), "--shard", "1/3", check=0)
    # 7 files over 3 shards: [0, 2), [2, 4), [4, 7)
    assert sorted(n for n in listing(out) if n.endswith(".h5")) == ["microbatch-00002.h5", "microbatch-00003.h5"]
    part = json.loads((out / "part-00001-of-00003.json").read_text())
    assert (part["shard"], part["shards"], part["first_file"], part["end_file"]) == (1, 3, 2, 4)
    assert [f["name"] for f in part["files"]] == ["microbatch-00002.h5", "microbatch-00003.h5"]
    assert part["files"][0]["size"] == os.path.getsize(out / "microbatch-00002.h5")
    assert part["input"]["size"] == os.path.getsize(src)
    assert part["manifest_head"]["options"]["chunks"] == 7


def test_concurrent_shards_then_finish(tmp_path, setup):
    src, spec = setup
    run(*split_args(src, spec, tmp_path / "plain"), check=0)
    out = tmp_path / "sh"
    procs = [subprocess.Popen([BINARY, *map(str, split_args(src, spec, out)), "--shard", f"{k}/2"], env=ENV,
                              stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for k in range(2)]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
        p.stderr.close()
    run("finish", out, check=0)
    same_files(tmp_path / "plain", out)


def test_more_shards_than_files_write_empty_part_records(tmp_path, setup):
    src, spec = setup
    run(*split_args(src, spec, tmp_path / "plain", n=2), check=0)
    out = tmp_path / "sh"
    for k in range(4):
        run(*split_args(src, spec, out, n=2), "--shard", f"{k}/4", check=0)
    assert json.loads((out / "part-00000-of-00004.json").read_text())["files"] == []
    run("finish", out, check=0)
    same_files(tmp_path / "plain", out)


@pytest.mark.parametrize("task_min", [0, 3])
def test_shard_auto_takes_slurm_array_variables(tmp_path, setup, task_min):
    src, spec = setup
    run(*split_args(src, spec, tmp_path / "plain"), check=0)
    out = tmp_path / "sh"
    for k in range(3):
        env = dict(ENV, SLURM_ARRAY_TASK_ID=str(task_min + k), SLURM_ARRAY_TASK_COUNT="3",
                   SLURM_ARRAY_TASK_MIN=str(task_min))
        run(*split_args(src, spec, out), "--shard", "auto", env=env, check=0)
        assert (out / f"part-{k:05}-of-00003.json").exists()
    run("finish", out, check=0)
    same_files(tmp_path / "plain", out)


def test_shard_auto_without_slurm_variables_is_a_usage_error(tmp_path, setup):
    src, spec = setup
    env = {k: v for k, v in ENV.items() if not k.startswith("SLURM_ARRAY")}
    env["SLURM_ARRAY_TASK_ID"] = "1"
    res = run(*split_args(src, spec, tmp_path / "sh"), "--shard", "auto", env=env)
    assert_one_line_error(res, 2, "SLURM_ARRAY_TASK_COUNT")
    assert not (tmp_path / "sh").exists()


@pytest.mark.parametrize("value", ["3/3", "1/0", "-1/2", "a/2", "2", "1/2/3", " 1/2", "", "0x1/2"])
def test_bad_shard_values_are_usage_errors(tmp_path, setup, value):
    src, spec = setup
    res = run(*split_args(src, spec, tmp_path / "sh"), "--shard", value)
    assert res.code == 2, res
    assert not (tmp_path / "sh").exists()


def write_shards(src, spec, out, shards, n=7, skip=()):
    for k in range(shards):
        if k not in skip:
            run(*split_args(src, spec, out, n=n), "--shard", f"{k}/{shards}", check=0)


def test_finish_names_a_missing_part(tmp_path, setup):
    src, spec = setup
    out = tmp_path / "sh"
    write_shards(src, spec, out, 3, skip=(1,))
    assert_one_line_error(run("finish", out), 1, "part-00001-of-00003.json", "missing")
    assert not (out / "manifest.json").exists()


@pytest.mark.parametrize("other", [["-n", "8"], ["-s", "other"]])
def test_finish_refuses_a_part_of_another_split(tmp_path, setup, other):
    src, spec = setup
    out, elsewhere = tmp_path / "sh", tmp_path / "other"
    write_shards(src, spec, out, 3)
    args = split_args(src, spec, elsewhere)
    if other[0] == "-n":
        args[args.index("-n") + 1] = other[1]
    else:
        args[args.index("-s") + 1] = write_spec(tmp_path / "o.json", {"x": 0, "g": 0, "text": 0, "tok": 0, "cu": 0})
    run(*args, "--shard", "2/3", check=0)
    os.replace(elsewhere / "part-00002-of-00003.json", out / "part-00002-of-00003.json")
    assert_one_line_error(run("finish", out), 1, "part-00002-of-00003.json", "another split")
    assert not (out / "manifest.json").exists()


def test_a_shard_refuses_a_directory_with_another_splits_part(tmp_path, setup):
    src, spec = setup
    out = tmp_path / "sh"
    run(*split_args(src, spec, out, n=8), "--shard", "0/2", check=0)
    res = run(*split_args(src, spec, out, n=7), "--shard", "1/2")
    assert res.code == 1, res
    assert "part-00000-of-00002.json" in res.err or "microbatch-" in res.err, res


@pytest.mark.parametrize("damage", ["missing", "resized", "dangling"])
def test_finish_refuses_a_listed_file_missing_or_of_another_size(tmp_path, setup, damage):
    src, spec = setup
    out = tmp_path / "sh"
    write_shards(src, spec, out, 2)
    victim = out / "microbatch-00005.h5"
    if damage == "resized":
        with open(victim, "ab") as f:
            f.write(b"x")
    else:
        victim.unlink()
        if damage == "dangling":  # a name with no size to read: missing, not 0 bytes
            victim.symlink_to(tmp_path / "gone.h5")
    res = run("finish", out)
    assert_one_line_error(res, 1, "microbatch-00005.h5", "shard 1", "bytes" if damage == "resized" else "missing")
    assert not (out / "manifest.json").exists()


@pytest.mark.parametrize("stray", ["microbatch-00007.h5", "rank-00000-microbatch-00001.h5", "part-00003-of-00002.json"])
def test_finish_refuses_a_stray_output_no_part_record_lists(tmp_path, setup, stray):
    # A plain split refuses a directory holding such a file; finish must not
    # publish a manifest beside it either.
    src, spec = setup
    out = tmp_path / "sh"
    write_shards(src, spec, out, 2)
    (out / stray).write_bytes((out / "microbatch-00000.h5").read_bytes())
    assert_one_line_error(run("finish", out), 1, stray, "not listed in any part record")
    assert not (out / "manifest.json").exists()
    (out / stray).unlink()
    run("finish", out, check=0)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "incomplete"])
def test_finish_refuses_a_malformed_part_record(tmp_path, setup, damage):
    src, spec = setup
    out = tmp_path / "sh"
    write_shards(src, spec, out, 2)
    part = out / "part-00001-of-00002.json"
    text = part.read_text()
    if damage == "truncated":
        part.write_text(text[: len(text) // 2])
    elif damage == "garbage":
        part.write_text("not json\n")
    else:
        j = json.loads(text)
        del j["complete"]
        part.write_text(json.dumps(j))
    assert_one_line_error(run("finish", out), 1, "part-00001-of-00002.json")
    assert not (out / "manifest.json").exists()


def other_shard(j):
    j["shard"] = 0


def other_share(j):
    j["first_file"], j["end_file"] = j["first_file"] - 1, j["end_file"] - 1


def other_name(j):
    j["files"][0]["name"] = "microbatch-00000.h5"


@pytest.mark.parametrize("edit, says", [(other_shard, "records shard 0 of 2, not 1 of 2"),
                                        (other_share, "not this shard's share"),
                                        (other_name, "lists microbatch-00000.h5 where the split has")],
                         ids=["shard", "share", "name"])
def test_finish_refuses_a_part_record_that_says_something_else(tmp_path, setup, edit, says):
    # Well-formed records that do not agree with their name, their share or the split's file names.
    src, spec = setup
    out = tmp_path / "sh"
    write_shards(src, spec, out, 2)
    part = out / "part-00001-of-00002.json"
    j = json.loads(part.read_text())
    edit(j)
    part.write_text(json.dumps(j))
    assert_one_line_error(run("finish", out), 1, "part-00001-of-00002.json", says)
    assert not (out / "manifest.json").exists()


def test_a_killed_shard_leaves_no_part_and_a_rerun_lets_finish_succeed(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(1).standard_normal((64, 1 << 12)).astype(np.float32),
                         chunks=(3, 1 << 10), compression="gzip")
    args = ["split", src, "-n", 16, "-o", tmp_path / "sh"]
    run(*args, "--shard", "0/2", check=0)
    # Killed once it has created its first output file (the pause shim holds it there), never after it finished.
    env = dict(ENV, LD_PRELOAD=pause_shim(tmp_path), MB_TEST_PAUSED=str(tmp_path / "paused"))
    proc = subprocess.Popen([BINARY, *map(str, args), "--shard", "1/2"], env=env, stdin=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_until((tmp_path / "paused").exists, "the shard did not create an output")
    proc.kill()
    assert proc.wait(timeout=60) == -signal.SIGKILL
    out = tmp_path / "sh"
    assert not (out / "part-00001-of-00002.json").exists()
    assert_one_line_error(run("finish", out), 1, "part-00001-of-00002.json", "shard 1 of 2")
    run(*args, "--shard", "1/2", check=0)  # the rerun takes over from what the killed run left
    run("split", src, "-n", 16, "-o", tmp_path / "plain", check=0)
    finished_like(tmp_path / "plain", out, src, tmp_path / "m.h5")


def test_rerunning_a_shard_needs_force_and_replaces_only_its_files(tmp_path, setup):
    src, spec = setup
    out = tmp_path / "sh"
    write_shards(src, spec, out, 2)
    before = os.stat(out / "microbatch-00000.h5").st_mtime_ns
    assert_one_line_error(run(*split_args(src, spec, out), "--shard", "1/2"), 1, "--force")
    run(*split_args(src, spec, out), "--shard", "1/2", "--force", check=0)
    assert os.stat(out / "microbatch-00000.h5").st_mtime_ns == before  # shard 0's file untouched
    run("finish", out, check=0)
    run(*split_args(src, spec, tmp_path / "plain"), check=0)
    same_files(tmp_path / "plain", out)


def test_finish_twice_and_a_plain_split_over_parts(tmp_path, setup):
    src, spec = setup
    out = tmp_path / "sh"
    write_shards(src, spec, out, 2)
    run("finish", out, check=0)
    assert_one_line_error(run("finish", out), 1, "manifest.json", "finished")
    # A plain split treats part records as earlier output: refused, then replaced with --force.
    assert_one_line_error(run(*split_args(src, spec, out)), 1, "--force")
    run(*split_args(src, spec, out), "--force", check=0)
    assert not any(n.startswith("part-") for n in listing(out))


def test_jobs_inside_a_shard(tmp_path, setup):
    src, spec = setup
    run(*split_args(src, spec, tmp_path / "plain"), check=0)
    out = tmp_path / "sh"
    for k in range(2):
        run(*split_args(src, spec, out), "--shard", f"{k}/2", "-j", 2, check=0)
    run("finish", out, check=0)
    same_files(tmp_path / "plain", out)


def test_shard_json_summaries_count_only_their_share(tmp_path, setup):
    src, spec = setup
    plain = summary(run(*split_args(src, spec, tmp_path / "plain"), "--json", check=0), "split-summary")
    parts = [summary(run(*split_args(src, spec, tmp_path / "sh"), "--shard", f"{k}/3", "--json", check=0),
                     "split-summary") for k in range(3)]
    assert sum(p["data_bytes"] for p in parts) == plain["data_bytes"]
    assert all(0 < p["data_bytes"] < plain["data_bytes"] for p in parts)
    assert parts[1]["files"][-1]["path"].endswith("part-00001-of-00003.json"), parts[1]


def test_finish_json_summary(tmp_path, setup):
    """finish --json, as every command: the manifest written and the split's files it lists, valid against
    docs/schema/finish-summary.schema.json; a failure is one error object."""
    src, spec = setup
    out = tmp_path / "sh"
    write_shards(src, spec, out, 3, skip=(1,))
    res = run("finish", out, "--json")
    assert res.code == 1 and summary(res, "error")["error"]["exit_status"] == 1, res
    run(*split_args(src, spec, out), "--shard", "1/3", check=0)
    res = run("finish", out, "--json", "-q", check=0)
    s = summary(res, "finish-summary")
    assert res.err == ""
    manifest = out / "manifest.json"
    assert s["files"] == [{"path": str(manifest), "bytes": manifest.stat().st_size}]
    assert s["bytes"] == manifest.stat().st_size
    listed = json.loads(manifest.read_text())["files"]
    assert s["split_files"] == [{"path": str(out / f["name"]), "bytes": f["size"]} for f in listed]
    assert s["split_bytes"] == sum(os.path.getsize(out / f["name"]) for f in listed)
    assert s["microbatches"] == 7 and s["output_dir"] == str(out) and s["warnings"] == []
