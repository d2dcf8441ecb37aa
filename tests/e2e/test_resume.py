"""split --resume: a run stopped at any moment (SIGKILL of its processes, SIGTERM) leaves the files it
published and their journal entries, never a manifest; a rerun of the same command keeps each file whose
bytes match its entry (same inode, same modification time), writes only the rest and ends with the bytes an
uninterrupted run writes (cmp, then verify). A tampered file or a damaged entry is written again; another
command, or the input changed since, is refused and nothing changes; over the same command's finished split
a rerun does nothing and exits 0."""
import filecmp
import json
import os
import shutil
import signal
import socket
import subprocess
import types

import h5py
import numpy as np
import pytest

import servers
from test_mpi import MPI_BINARY, MPI_ENV
from test_upload import objects
from conftest import (BINARY, ENV, alive, assert_one_line_error, children, h5diff, held_run, listing, run,
                      summary, wait_until, write_spec)

FILES = 8


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """A contiguous float32 batch of 8 MiB and an int64 index, its spec, and an uninterrupted split of it."""
    d = tmp_path_factory.mktemp("resume")
    src = d / "in.h5"
    rng = np.random.default_rng(45)
    with h5py.File(src, "w") as f:
        f["x"] = rng.random((64, 32768), dtype=np.float32)
        f["index"] = np.arange(64, dtype=np.int64)
        f["meta/step"] = np.int64(7)
    spec = write_spec(d / "s.json", {"meta": "replicate", "*": 0})
    run("split", src, "-s", spec, "-n", FILES, "-o", d / "ref", check=0)
    return src, spec, d / "ref"


def names(i):
    return f"microbatch-{i:05d}.h5"


def stamps(out):
    """Inode and modification time of each microbatch file under its final name."""
    return {n: (os.stat(out / n).st_ino, os.stat(out / n).st_mtime_ns) for n in listing(out)
            if n.startswith("microbatch-")}


def journal(out):
    return sorted(n for n in listing(out) if n.endswith(".journal"))


def assert_same_as(out, ref):
    """Every file of the uninterrupted split, byte for byte; nothing else but them."""
    assert listing(out) == listing(ref)
    for name in listing(ref):
        assert filecmp.cmp(out / name, ref / name, shallow=False), name
    run("verify", out, check=0)


def kill_all(proc):
    for pid in children(proc.pid) + [proc.pid]:
        os.kill(pid, signal.SIGKILL)


def stopped_run(tmp_path, batch, out, during, *flags, at=4):
    """A --resume split held as it closes file `at`, `during(proc)` done to it; returns its Result."""
    src, spec, _ = batch
    return held_run(tmp_path, [BINARY, "split", src, "-s", spec, "-n", FILES, "-o", out, "--resume", "-q", *flags],
                    during, close=f".{names(at)}.tmp-", resume=False)


def resumed(batch, out, *flags, code=0):
    src, spec, _ = batch
    res = run("split", src, "-s", spec, "-n", FILES, "-o", out, "--resume", "--json", *flags)
    assert res.code == code, res
    return summary(res, "split-summary") if code == 0 else res


# One process publishes a file as the next one closes (it was hashed meanwhile); two workers, each round of
# two files once both are written and hashed.
@pytest.mark.parametrize("flags,kept", [([], 3), (["-j", "2"], 4)], ids=["one process", "-j 2"])
def test_a_killed_run_is_finished_by_a_rerun_that_keeps_what_it_published(tmp_path, batch, flags, kept):
    out = tmp_path / "out"
    res = stopped_run(tmp_path, batch, out, kill_all, *flags)  # held closing file 4
    assert res.code == -signal.SIGKILL, res
    published = stamps(out)
    assert sorted(published) == [names(i) for i in range(kept)]
    assert journal(out) == [f".{n}.journal" for n in sorted(published)]
    assert "manifest.json" not in listing(out)
    report = resumed(batch, out, *flags)
    assert report["kept_files"] == kept
    assert report["kept_bytes"] == sum(os.path.getsize(out / n) for n in published)
    assert {n: v for n, v in stamps(out).items() if n in published} == published  # not written again
    assert_same_as(out, batch[2])


def test_sigterm_leaves_the_published_files_for_a_rerun(tmp_path, batch):
    out = tmp_path / "out"
    res = stopped_run(tmp_path, batch, out, lambda proc: proc.send_signal(signal.SIGTERM), at=4)
    assert res.code == 130 and "interrupted" in res.err, res
    published = stamps(out)
    assert sorted(published) == [names(i) for i in range(3)]
    assert [n for n in listing(out) if n.startswith(".") and not n.endswith(".journal")] == []  # no temporary
    assert resumed(batch, out)["kept_files"] == 3
    assert {n: v for n, v in stamps(out).items() if n in published} == published
    assert_same_as(out, batch[2])


def test_a_tampered_file_or_a_damaged_entry_is_written_again(tmp_path, batch):
    out = tmp_path / "out"
    stopped_run(tmp_path, batch, out, kill_all, at=7)  # files 0..5 published
    with open(out / names(1), "r+b") as f:  # a flipped byte, same size
        f.seek(os.path.getsize(out / names(1)) - 100)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 1]))
    os.truncate(out / names(2), 1000)
    with open(out / f".{names(3)}.journal", "a") as f:
        f.write("garbage")
    entry = json.loads(open(out / f".{names(4)}.journal").read())
    entry["run"] = "0" * 32  # another run's entry
    open(out / f".{names(4)}.journal", "w").write(json.dumps(entry))
    before = stamps(out)
    report = resumed(batch, out)
    assert report["kept_files"] == 2  # files 0 and 5
    after = stamps(out)
    assert [n for n in before if after[n] == before[n]] == [names(0), names(5)]
    assert_same_as(out, batch[2])


def unvouched(out):
    """The microbatch files under their final names without a journal entry beside them."""
    return sorted(n for n in listing(out) if n.startswith("microbatch-") and f".{n}.journal" not in listing(out))


@pytest.mark.parametrize("held", [f".{names(0)}.journal", f"/{names(1)}"],
                         ids=["before the first entry", "before a file, after its entry"])
def test_a_kill_as_a_file_is_published_leaves_what_a_rerun_heals(tmp_path, batch, held):
    """Killed as file 0's entry goes into place, or as file 1 does after its entry: never a file without
    its entry (a rerun could not tell it is this command's); an entry without its file is dropped."""
    out = tmp_path / "out"
    src, spec, ref = batch
    argv = [BINARY, "split", src, "-s", spec, "-n", FILES, "-o", out, "--resume", "-q"]
    res = held_run(tmp_path, argv, kill_all, rename=held, resume=False)
    assert res.code == -signal.SIGKILL, res
    assert unvouched(out) == [] and "manifest.json" not in listing(out), listing(out)
    published = stamps(out)
    assert sorted(published) == ([] if held.endswith(".journal") else [names(0)])
    report = resumed(batch, out)
    assert report["kept_files"] == len(published)
    assert {n: v for n, v in stamps(out).items() if n in published} == published
    assert_same_as(out, ref)


def test_files_without_entries_beside_this_runs_entries_are_written_again(tmp_path, batch):
    out = tmp_path / "out"
    stopped_run(tmp_path, batch, out, kill_all, at=7)  # files 0..5 published
    for i in (0, 2, 3):  # their entries lost (a crash before they reached the disk)
        os.remove(out / f".{names(i)}.journal")
    before = stamps(out)
    assert resumed(batch, out)["kept_files"] == 3  # files 1, 4 and 5
    after = stamps(out)
    assert [n for n in before if after[n] == before[n]] == [names(1), names(4), names(5)]
    assert_same_as(out, batch[2])


def test_a_rerun_over_entries_that_are_all_torn_says_so_and_changes_nothing(tmp_path, batch):
    out = tmp_path / "out"
    stopped_run(tmp_path, batch, out, kill_all)  # files 0..2 published
    entries = journal(out)
    assert len(entries) == 3, listing(out)
    for entry in entries:
        text = open(out / entry).read()
        open(out / entry, "w").write(text[:len(text) // 2])
    def kept():  # the published files and journal (the killed run's temporaries go at any claim)
        return {n: os.stat(out / n).st_mtime_ns for n in listing(out) if not n.startswith(".") or n in entries}

    before = kept()
    src, spec, _ = batch
    res = run("split", src, "-s", spec, "-n", FILES, "-o", out, "--resume")
    assert_one_line_error(res, 1, "its journal entries are damaged (3)", "cannot tell whether it was this command",
                          "--force")
    assert "another input" not in res.err, res.err
    assert kept() == before


def test_over_the_same_commands_finished_split_a_rerun_does_nothing(tmp_path, batch):
    out = tmp_path / "out"
    first = resumed(batch, out)  # no earlier run: a plain split
    assert first["kept_files"] == 0
    assert_same_as(out, batch[2])
    before = {n: os.stat(out / n).st_mtime_ns for n in listing(out)}
    again = resumed(batch, out)
    assert again["kept_files"] == FILES and again["data_bytes"] == 0
    assert {n: os.stat(out / n).st_mtime_ns for n in listing(out)} == before


def test_another_command_or_a_changed_input_is_refused_and_nothing_changes(tmp_path, batch):
    src, spec, ref = batch
    out = tmp_path / "out"
    stopped_run(tmp_path, batch, out, kill_all)

    def kept():  # the published files and journal (the killed run's temporary and lock file go at any claim)
        return {n: open(out / n, "rb").read() for n in listing(out) if ".tmp-" not in n and not n.endswith(".lock")}

    before = kept()
    res = run("split", src, "-s", spec, "-n", 4, "-o", out, "--resume")
    assert_one_line_error(res, 1, str(out), "--force")
    changed = tmp_path / "in.h5"
    with h5py.File(src) as a, h5py.File(changed, "w") as b:
        for name in ("x", "index", "meta/step"):
            b[name] = a[name][()]
    res = run("split", changed, "-s", spec, "-n", FILES, "-o", out, "--resume")
    assert_one_line_error(res, 1, "not an earlier run of this command")
    res = run("split", src, "-s", spec, "-n", FILES, "-o", out)  # a plain split: continue it, or replace it
    assert_one_line_error(res, 1, "unfinished split", "--resume", "--force")
    assert kept() == before
    run("split", src, "-s", spec, "-n", FILES, "-o", out, "--force", check=0)
    assert_same_as(out, ref)  # the journal went with the files it replaced


def test_an_input_modified_after_a_finished_split_is_refused(tmp_path, batch):
    src, spec, ref = batch
    own = tmp_path / "in.h5"
    own.write_bytes(src.read_bytes())
    out = tmp_path / "out"
    run("split", own, "-s", spec, "-n", FILES, "-o", out, check=0)
    later = os.stat(out / "manifest.json").st_mtime_ns + 10**9
    os.utime(own, ns=(later, later))
    res = run("split", own, "-s", spec, "-n", FILES, "-o", out, "--resume")
    assert_one_line_error(res, 1, "older than the input", "--force")
    os.utime(own, ns=(later - 10**10, later - 10**10))
    assert resumed((own, spec, ref), out)["kept_files"] == FILES
    same_second = os.stat(out / "manifest.json").st_mtime_ns // 10**9 * 10**9 + 999_999_999
    os.utime(own, ns=(same_second, same_second))  # modified within the manifest's second: not told apart
    assert resumed((own, spec, ref), out)["kept_files"] == FILES


def test_a_finished_split_whose_file_changed_is_refused(tmp_path, batch):
    src, spec, _ = batch
    out = tmp_path / "out"
    run("split", src, "-s", spec, "-n", FILES, "-o", out, check=0)
    os.truncate(out / names(2), 10)
    res = run("split", src, "-s", spec, "-n", FILES, "-o", out, "--resume")
    assert_one_line_error(res, 1, names(2), "finished split", "no longer matches")


def test_over_another_commands_finished_split_or_shards_without_a_journal_it_refuses(tmp_path, batch):
    src, spec, _ = batch
    out = tmp_path / "out"
    run("split", src, "-s", spec, "-n", FILES, "-o", out, check=0)
    before = {n: os.stat(out / n).st_mtime_ns for n in listing(out)}
    res = run("split", src, "-s", spec, "-n", 4, "-o", out, "--resume")
    assert_one_line_error(res, 1, "a finished split (manifest.json)", "--force")
    assert {n: os.stat(out / n).st_mtime_ns for n in listing(out)} == before
    shards = tmp_path / "shards"  # shards that ran without --resume: their files have no journal entry
    run("split", src, "-s", spec, "-n", FILES, "-o", shards, "--shard", "0/2", check=0)
    res = run("split", src, "-s", spec, "-n", FILES, "-o", shards, "--resume")
    assert_one_line_error(res, 1, "not an earlier run of this command", "--force")
    assert sorted(n for n in listing(shards) if n.startswith("microbatch-")) == [names(i) for i in range(4)]
    empty = tmp_path / "empty"  # a shard with no file of its own: its part record alone
    run("split", src, "-s", spec, "-n", FILES, "-o", empty, "--shard", "0/9", check=0)
    res = run("split", src, "-s", spec, "-n", FILES, "-o", empty, "--resume")
    assert_one_line_error(res, 1, "part records of a split by shards", "part-00000-of-00009.json")
    assert listing(empty) == ["part-00000-of-00009.json"]


def test_a_shard_whose_part_stands_is_checked_against_it(tmp_path, batch):
    src, spec, _ = batch
    out = tmp_path / "out"
    for k in (0, 1):
        run("split", src, "-s", spec, "-n", FILES, "-o", out, "--shard", f"{k}/2", "--resume", check=0)
    os.truncate(out / names(1), 100)
    res = run("split", src, "-s", spec, "-n", FILES, "-o", out, "--shard", "0/2", "--resume")
    assert_one_line_error(res, 1, names(1), "finished shard (part-00000-of-00002.json)", "no longer matches")
    assert resumed(batch, out, "--shard", "1/2")["kept_files"] == 4  # the other shard's part is whole


@pytest.mark.parametrize("flags,needle", [(["--force"], "--resume"), (["--keep-local", "kept"], "--keep-local")])
def test_resume_with_options_it_cannot_honour_is_a_usage_error(tmp_path, batch, flags, needle):
    src, spec, _ = batch
    res = run("split", src, "-s", spec, "-n", FILES, "-o", tmp_path / "out", "--resume", *flags)
    assert_one_line_error(res, 2, needle)
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def s3():
    if not servers.s3_installed():
        pytest.skip("s3rver is not installed (install-deps.sh)")
    with servers.s3() as server:
        yield server


@pytest.mark.parametrize("stop", ["SIGKILL", "SIGTERM"])
def test_on_a_prefix_a_rerun_uploads_only_what_was_not_up(s3, tmp_path, batch, stop):
    src, spec, ref = batch
    spool = tmp_path / "spool"
    spool.mkdir()
    prefix = f"resume-{stop}"
    with servers.s3_proxy(s3) as proxy:
        env = dict(s3.env(ENV), TMPDIR=str(spool), AWS_ENDPOINT_URL=proxy.endpoint)
        argv = [BINARY, "split", src, "-s", spec, "-n", FILES, "-o", s3.s3_url(f"{prefix}/"), "--resume", "-q",
                "--uploads", "1"]
        # One upload at a time, rounds of two files: by the time file 6 is closed, files 0 to 3 are up.
        during = kill_all if stop == "SIGKILL" else (lambda proc: proc.send_signal(signal.SIGTERM))
        held_run(tmp_path, argv, during, env=env, close=f".{names(6)}.tmp-", resume=False)
        proxy.wait_idle()  # what the killed run had sent is done (or not) on the store by now
        up = objects(s3, prefix)
        kept = sorted(n for n in up if f".{n}.journal" in up)
        assert kept[:2] == [names(0), names(1)] and "manifest.json" not in up, sorted(up)
        if stop == "SIGTERM":  # the run took back what was not confirmed; what was stays
            assert sorted(n for n in up if n.startswith("microbatch-")) == kept
        tampered = []
        if stop == "SIGKILL":  # a byte of a kept object flipped on the store: found by its digest, put again
            tampered = [kept.pop(0)]
            with open(up[tampered[0]], "r+b") as f:
                f.seek(-10, os.SEEK_END)
                byte = f.read(1)
                f.seek(-1, os.SEEK_CUR)
                f.write(bytes([byte[0] ^ 1]))
        before = len(proxy.requests())
        res = run("split", src, "-s", spec, "-n", FILES, "-o", s3.s3_url(f"{prefix}/"), "--resume", "--json",
                  env=env, check=0)
        put = {p.split("?")[0].rsplit("/", 1)[1] for m, p, _ in proxy.requests()[before:] if m == "PUT"}
    assert summary(res, "split-summary")["kept_files"] == len(kept)
    assert not put & set(kept), put  # a kept file is not uploaded again
    assert set(tampered) <= put, put
    got = objects(s3, prefix)
    assert sorted(got) == listing(ref)  # the journal is gone with the manifest up
    for name, path in got.items():
        assert filecmp.cmp(path, ref / name, shallow=False), name
    run("verify", s3.s3_url(f"{prefix}/"), env=s3.env(ENV), check=0)
    again = run("split", src, "-s", spec, "-n", FILES, "-o", s3.s3_url(f"{prefix}/"), "--resume", "--json",
                env=s3.env(ENV), check=0)  # the finished split, its manifest written within the input's second
    assert (summary(again, "split-summary")["kept_files"], summary(again, "split-summary")["data_bytes"]) == (FILES, 0)


def test_a_manifest_past_16_mib_on_a_prefix_is_read_whole(s3, tmp_path, batch):
    """A manifest on a prefix is read whole, up to 64 MiB (a split of many files has a large one): verify and
    merge read it through the prefix. Made large here by 20 MiB of leading whitespace, which JSON allows."""
    src, spec, ref = batch
    url, env = s3.s3_url("big-manifest/"), s3.env(ENV)
    run("split", src, "-s", spec, "-n", FILES, "-o", url, env=env, check=0)
    padded = tmp_path / "manifest.json"
    with open(objects(s3, "big-manifest")["manifest.json"], "rb") as f:
        padded.write_bytes(b" " * (20 << 20) + f.read())
    s3.put(padded, "big-manifest/manifest.json")
    run("verify", url, env=env, check=0)
    run("merge", url, "-o", tmp_path / "m.h5", env=env, check=0)
    run("merge", ref, "-o", tmp_path / "ref.h5", check=0)
    assert h5diff(tmp_path / "ref.h5", tmp_path / "m.h5") == 0


def test_the_proxy_drops_a_request_whose_client_died_mid_send(tmp_path):
    """The harness the prefix tests stand on: a run killed while sending a body must not leave the proxy
    relaying half a request (with the whole request's Content-Length) to a store that waits for the rest
    while the proxy waits for its answer. The store here is a socket that never answers."""
    with socket.create_server(("127.0.0.1", 0)) as store:
        store.setblocking(False)
        target = types.SimpleNamespace(port=store.getsockname()[1], root=str(tmp_path))
        with servers.s3_proxy(target) as proxy:
            port = int(proxy.endpoint.rsplit(":", 1)[1])
            with socket.create_connection(("127.0.0.1", port)) as client:
                client.sendall(b"PUT /bkt/half HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n" +
                               b"x" * 10)
                wait_until(lambda: proxy.in_flight == 1, what="the proxy reading the body")
            proxy.wait_idle(timeout=10)
        with pytest.raises(BlockingIOError):  # nothing was relayed
            store.accept()


def test_on_a_prefix_a_kill_as_the_first_file_goes_up_leaves_what_a_rerun_heals(s3, tmp_path, batch):
    """The first PUT of file 0's (its entry, which goes first) is done by the store and its answer held;
    the run is killed then: no object without its entry, and the rerun ends with the whole split."""
    src, spec, ref = batch
    spool = tmp_path / "spool"
    spool.mkdir()
    prefix = "resume-between"
    with servers.s3_proxy(s3) as proxy:
        env = dict(s3.env(ENV), TMPDIR=str(spool), AWS_ENDPOINT_URL=proxy.endpoint)
        proxy.fault("PUT", names(0), "held")
        argv = [str(a) for a in [BINARY, "split", src, "-s", spec, "-n", FILES, "-o", s3.s3_url(f"{prefix}/"),
                                 "--resume", "-q", "--uploads", "1"]]
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: proxy.holding.is_set() or proc.poll() is not None, "no PUT of file 0 was held")
            assert proxy.holding.is_set(), proc.communicate()
            kill_all(proc)
        finally:
            proxy.release.set()
            proc.kill()
            proc.communicate()
        proxy.wait_idle()
        up = objects(s3, prefix)
        assert "manifest.json" not in up and names(0) not in up, sorted(up)
        assert [n for n in up if n.startswith("microbatch-") and f".{n}.journal" not in up] == [], sorted(up)
        res = run("split", src, "-s", spec, "-n", FILES, "-o", s3.s3_url(f"{prefix}/"), "--resume", "--json",
                  env=env, check=0)
    assert summary(res, "split-summary")["kept_files"] == 0
    got = objects(s3, prefix)
    assert sorted(got) == listing(ref)
    for name, path in got.items():
        assert filecmp.cmp(path, ref / name, shallow=False), name
    run("verify", s3.s3_url(f"{prefix}/"), env=s3.env(ENV), check=0)


def test_merge_of_a_prefixs_unfinished_split_refuses_unless_allowed(s3, tmp_path, batch):
    src, spec, _ = batch
    spool = tmp_path / "spool"
    spool.mkdir()
    env = dict(s3.env(ENV), TMPDIR=str(spool))
    prefix = s3.s3_url("unfinished/")
    argv = [BINARY, "split", src, "-s", spec, "-n", FILES, "-o", prefix, "--resume", "-q", "--uploads", "1"]
    with servers.s3_proxy(s3) as proxy:  # what the killed run had sent is done (or not) on the store by now
        held_run(tmp_path, argv, kill_all, env=dict(env, AWS_ENDPOINT_URL=proxy.endpoint),
                 close=f".{names(6)}.tmp-", resume=False)
        proxy.wait_idle()
    up = objects(s3, "unfinished")
    # An entry goes up before its file: the files whose entry is up and whose bytes are all there.
    kept = sorted(n for n in up if f".{n}.journal" in up and
                  os.path.getsize(up[n]) == json.load(open(up[f".{n}.journal"]))["size"])
    assert kept and "manifest.json" not in up, sorted(up)
    res = run("merge", prefix, "-o", tmp_path / "m.h5", env=env)
    assert_one_line_error(res, 1, prefix, "an unfinished split", "with --resume")
    urls = [prefix + n for n in kept]
    res = run("merge", *urls, "-o", tmp_path / "m.h5", env=env)
    assert_one_line_error(res, 1, urls[0], "unfinished split", "with --resume", "--allow-unfinished")
    assert not (tmp_path / "m.h5").exists()
    run("merge", *urls, "-o", tmp_path / "m.h5", "--allow-unfinished", env=env, check=0)
    assert_rows_of(tmp_path / "m.h5", src, len(kept))


def assert_rows_of(merged, src, files):
    """`merged` holds the input's first `files` microbatches, exactly (8 rows each)."""
    rows = files * 64 // FILES
    with h5py.File(merged, "r") as m, h5py.File(src, "r") as f:
        assert m["x"].shape[0] == rows
        assert np.array_equal(m["x"][...], f["x"][:rows]) and np.array_equal(m["index"][...], f["index"][:rows])


def test_merge_of_an_unfinished_split_refuses_unless_allowed(tmp_path, batch):
    out = tmp_path / "out"
    stopped_run(tmp_path, batch, out, kill_all)  # files 0..2 published, each with its journal entry
    published = stamps(out)
    assert published and journal(out) and "manifest.json" not in listing(out), listing(out)
    merged = tmp_path / "m.h5"
    res = run("merge", out, "-o", merged)
    assert_one_line_error(res, 1, str(out), "an unfinished split", f"{len(published)} files", "with --resume")
    assert "merge also takes the files" not in res.err
    assert_one_line_error(run("verify", out), 1, str(out), "an unfinished split", "with --resume")
    files = [out / n for n in sorted(published)]
    res = run("merge", *files, "-o", merged)
    assert_one_line_error(res, 1, str(files[0]), "unfinished split", "with --resume", "--allow-unfinished")
    assert not merged.exists()
    run("merge", *files, "-o", merged, "--allow-unfinished", check=0)
    assert_rows_of(merged, batch[0], len(files))
    assert stamps(out) == published  # the unfinished split is as it was: a rerun finishes it
    assert resumed(batch, out)["kept_files"] == len(published)
    assert_same_as(out, batch[2])


def split_files(out):
    """The split's files and manifest (a split by shards keeps its part records beside them)."""
    return [n for n in listing(out) if not n.startswith("part-")]


def test_shards_resume_their_own_files_then_finish_writes_the_split(tmp_path, batch):
    src, spec, ref = batch
    out = tmp_path / "out"
    run("split", src, "-s", spec, "-n", FILES, "-o", out, "--shard", "0/2", "--resume", check=0)
    argv = [BINARY, "split", src, "-s", spec, "-n", FILES, "-o", out, "--shard", "1/2", "--resume", "-q"]
    res = held_run(tmp_path, argv, kill_all, close=f".{names(7)}.tmp-", resume=False)
    assert res.code == -signal.SIGKILL, res
    published = stamps(out)
    assert sorted(published) == [names(i) for i in range(6)]  # shard 0's four, and two of shard 1's
    done = resumed(batch, out, "--shard", "0/2")  # its part record stands: nothing to do
    assert (done["kept_files"], done["data_bytes"]) == (4, 0)
    assert resumed(batch, out, "--shard", "1/2")["kept_files"] == 2
    assert {n: v for n, v in stamps(out).items() if n in published} == published
    assert len(journal(out)) == FILES  # the entries stay until the manifest is written
    run("finish", out, check=0)
    assert journal(out) == []
    assert split_files(out) == listing(ref)
    for name in listing(ref):
        assert filecmp.cmp(out / name, ref / name, shallow=False), name
    run("verify", out, check=0)


@pytest.fixture
def mpi_binary():
    if not MPI_BINARY or not shutil.which("mpirun"):
        pytest.skip("built without microbatch-mpi, or no mpirun")
    return MPI_BINARY


def test_a_team_with_a_killed_rank_is_finished_by_a_rerun(tmp_path, batch, mpi_binary):
    src, spec, ref = batch
    out = tmp_path / "out"
    argv = [str(a) for a in ["mpirun", "--oversubscribe", "-np", "2", mpi_binary, "split", src, "-s", spec, "-n",
                             FILES, "-o", out, "--resume", "-q"]]
    ranks = []

    def kill_a_rank(proc):  # rank 0 (files 0..3) is held closing file 3 (0 and 1 published); rank 1 is killed
        ranks.extend(children(proc.pid))
        assert ranks, "no rank found"
        os.kill(ranks[-1], signal.SIGKILL)

    res = held_run(tmp_path, argv, kill_a_rank, env=MPI_ENV, close=f".{names(3)}.tmp-", resume=False)
    assert res.code != 0, res
    wait_until(lambda: not any(alive(r) for r in ranks), "a rank outlived mpirun")
    # Rank 1 ran on until it was killed: a file it renamed into place just before is not kept (no entry yet).
    published = {n: v for n, v in stamps(out).items() if f".{n}.journal" in listing(out)}
    assert {names(0), names(1)} <= set(published) and "manifest.json" not in listing(out), listing(out)
    again = subprocess.run(argv[:-1] + ["--json"], capture_output=True, text=True, env=MPI_ENV, timeout=600,
                           stdin=subprocess.DEVNULL)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["kept_files"] == len(published)
    assert {n: v for n, v in stamps(out).items() if n in published} == published
    assert_same_as(out, ref)  # no part record, no journal entry left
    before = {n: os.stat(out / n).st_mtime_ns for n in listing(out)}
    third = subprocess.run(argv, capture_output=True, text=True, env=MPI_ENV, timeout=600, stdin=subprocess.DEVNULL)
    assert third.returncode == 0, third.stderr  # over the team's finished split: nothing to do
    assert {n: os.stat(out / n).st_mtime_ns for n in listing(out)} == before


def test_a_ranks_files_without_entries_beside_the_teams_entries_are_written_again(tmp_path, batch, mpi_binary):
    """Rank 1 (files 4..7) held closing file 7 (4 and 5 published), killed once rank 0 published file 0;
    rank 1's entries then lost: its share holds files and no entry, the other rank's entries say whose
    the place is, and the rerun writes rank 1's files again."""
    src, spec, ref = batch
    out = tmp_path / "out"
    argv = [str(a) for a in ["mpirun", "--oversubscribe", "-np", "2", mpi_binary, "split", src, "-s", spec, "-n",
                             FILES, "-o", out, "--resume", "-q"]]
    ranks = []

    def kill_the_team(proc):
        wait_until(lambda: {names(0), f".{names(0)}.journal"} <= set(listing(out)), "rank 0 published nothing")
        ranks.extend(children(proc.pid))
        for pid in ranks + [proc.pid]:
            os.kill(pid, signal.SIGKILL)

    held_run(tmp_path, argv, kill_the_team, env=MPI_ENV, close=f".{names(7)}.tmp-", resume=False)
    wait_until(lambda: not any(alive(r) for r in ranks), "a rank outlived mpirun")
    for i in (4, 5):
        assert names(i) in listing(out), listing(out)
        os.remove(out / f".{names(i)}.journal")
    published = {n: v for n, v in stamps(out).items() if f".{n}.journal" in listing(out)}
    assert names(0) in published and "manifest.json" not in listing(out), listing(out)
    again = subprocess.run(argv + ["--json"], capture_output=True, text=True, env=MPI_ENV, timeout=600,
                           stdin=subprocess.DEVNULL)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["kept_files"] == len(published)
    assert {n: v for n, v in stamps(out).items() if n in published} == published
    assert_same_as(out, ref)
