"""split (and merge) under mpirun: microbatch-mpi's ranks are the shards of
one split, and rank 0 writes the manifest once every rank has published;
a failure on any rank publishes nothing. microbatch itself (no MPI) refuses
to run as several tasks of a launcher."""
import fcntl
import filecmp
import os
import shutil
import signal
import subprocess

import h5py
import numpy as np
import pytest

# make_mixed_batch: test_shards' batch, a chunked tensor, groups, strings, packed tokens
from conftest import (BINARY, ENV, MIXED_SPEC, Result, alive, children, h5diff, held_run, listing, make_mixed_batch,
                      run, summary, wait_until, write_spec)

# Set by ctest when the build has microbatch-mpi (cmake found MPI); scripts/test.sh checks that CI's does.
MPI_BINARY = os.environ.get("MICROBATCH_MPI")

# OpenMPI as root, more ranks than cores, in a container (../shared/CLUSTER.md).
MPI_ENV = dict(ENV, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1")

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs mpirun (openmpi-bin)")


def mpirun(np_, binary, *args, wrap=None):
    """Runs `binary args` as np_ ranks; `wrap` is a shell line run by each rank before exec ($RANK is set)."""
    command = [binary, *map(str, args)]
    if wrap:
        command = ["sh", "-c", f'RANK=$OMPI_COMM_WORLD_RANK; {wrap}; exec "$@"', "rank", *command]
    proc = subprocess.run(["mpirun", "--oversubscribe", "-np", str(np_), *command], capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL, env=MPI_ENV)
    return Result(proc)


@pytest.fixture
def setup(tmp_path):
    src = make_mixed_batch(tmp_path / "in.h5")
    spec = write_spec(tmp_path / "s.json", MIXED_SPEC)
    plain = tmp_path / "plain"
    run("split", src, "-s", spec, "-n", 7, "-o", plain, check=0)
    return src, spec, plain


def same_split(plain, out):
    """Every microbatch file and the manifest byte-identical to the one-process split's."""
    names = [n for n in listing(plain) if n.endswith(".h5") or n == "manifest.json"]
    assert names and "manifest.json" in names
    for name in names:
        assert filecmp.cmp(plain / name, out / name, shallow=False), name


def nothing_published(out, planted=()):
    """No manifest, no microbatch file, no temporary: nothing that could pass for a split."""
    left = [n for n in listing(out) if (n.endswith(".h5") or n == "manifest.json" or ".tmp-" in n) and n not in planted]
    assert left == [], left


@pytest.fixture
def mpi_binary():
    if not MPI_BINARY:
        pytest.skip("built without microbatch-mpi (cmake found no MPI: libopenmpi-dev)")
    assert os.path.exists(MPI_BINARY), MPI_BINARY
    return MPI_BINARY


@pytest.mark.parametrize("ranks", [2, 4])
def test_split_as_ranks_writes_the_one_process_split(setup, tmp_path, mpi_binary, ranks):
    src, spec, plain = setup
    out = tmp_path / f"np{ranks}"
    res = mpirun(ranks, mpi_binary, "split", src, "-s", spec, "-n", 7, "-o", out)
    assert res.code == 0, res.err
    same_split(plain, out)
    assert not [n for n in listing(out) if n.startswith("part-") or n.startswith(".")]  # what a plain split leaves
    merged = tmp_path / "merged.h5"
    run("merge", out, "-o", merged, check=0)
    assert h5diff(src, merged) == 0


def test_more_ranks_than_files_and_workers_per_rank(setup, tmp_path, mpi_binary):
    src, spec, _ = setup
    plain = tmp_path / "plain3"
    run("split", src, "-s", spec, "-n", 3, "-o", plain, check=0)
    out = tmp_path / "np4"
    res = mpirun(4, mpi_binary, "split", src, "-s", spec, "-n", 3, "-o", out, "-j", 2)
    assert res.code == 0, res.err
    same_split(plain, out)


def test_json_summary_on_rank_zero_lists_every_file(setup, tmp_path, mpi_binary):
    src, spec, plain = setup
    out = tmp_path / "np2"
    res = mpirun(2, mpi_binary, "split", src, "-s", spec, "-n", 7, "-o", out, "--json")
    assert res.code == 0, res.err
    obj = summary(res, "split-summary")
    names = sorted(os.path.basename(f["path"]) for f in obj["files"])
    assert names == sorted(n for n in listing(plain) if n.endswith(".h5") or n == "manifest.json")


def test_a_rank_refused_at_start_publishes_nothing_anywhere(setup, tmp_path, mpi_binary):
    src, spec, _ = setup
    out = tmp_path / "out"
    out.mkdir()
    os.mkdir(out / "microbatch-00006.h5")  # in the last rank's share; rank 0 prepares the directory for the team
    res = mpirun(2, mpi_binary, "split", src, "-s", spec, "-n", 7, "-o", out)
    assert res.code != 0
    assert "microbatch-00006.h5" in res.err
    assert "rank 0 of 2 failed" in res.err  # what rank 1 says: rank 0 refused before any rank wrote
    nothing_published(out, planted=["microbatch-00006.h5"])
    assert not [n for n in listing(out) if n.startswith("part-")]


def test_a_rank_failing_mid_write_publishes_nothing_anywhere(setup, tmp_path, mpi_binary):
    src, spec, _ = setup
    out = tmp_path / "out"
    # Rank 1 may write files of at most 4 KiB (EFBIG instead of SIGXFSZ): it fails writing its first file.
    res = mpirun(2, mpi_binary, "split", src, "-s", spec, "-n", 7, "-o", out,
                 wrap="trap '' XFSZ; if [ $RANK = 1 ]; then ulimit -f 4; fi")
    assert res.code != 0, res.err
    assert "rank 1 of 2 failed" in res.err
    nothing_published(out)
    # A rerun (without the limit) into the same directory succeeds: nothing was left behind.
    res = mpirun(2, mpi_binary, "split", src, "-s", spec, "-n", 7, "-o", out)
    assert res.code == 0, res.err


# Holds a rank up for 3 seconds after MPI_Finalize returns, as a loaded node can: signals do not cut it short.
SLOW_FINALIZE = r"""
#include <dlfcn.h>
#include <time.h>
int MPI_Finalize(void) {
  int status = ((int (*)(void))dlsym(RTLD_NEXT, "MPI_Finalize"))();
  struct timespec left = {3, 0};
  while (nanosleep(&left, &left) != 0) {}
  return status;
}
"""


def test_the_failing_rank_says_why_before_the_team_exits(setup, tmp_path, mpi_binary):
    # mpirun kills every rank once one exits non-zero after MPI_Finalize: a rank that printed its error only
    # after leaving MPI (here held up there) was killed before it did, and nobody said why the split failed.
    src, spec, _ = setup
    source, shim = tmp_path / "slow.c", tmp_path / "slow.so"
    source.write_text(SLOW_FINALIZE)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", shim, source, "-ldl"], check=True, timeout=120)
    res = mpirun(2, mpi_binary, "split", src, "-s", spec, "-n", 7, "-o", tmp_path / "out",
                 wrap=f"trap '' XFSZ; if [ $RANK = 1 ]; then ulimit -f 4; export LD_PRELOAD={shim}; fi")
    assert res.code != 0, res.err
    errors = [line for line in res.err.splitlines() if line.startswith("microbatch: error:")]
    assert len(errors) == 2 and any("rank 1 of 2 failed" in line for line in errors), res.err
    assert any("cannot write data (File too large)" in line for line in errors), res.err  # rank 1's own


def test_a_held_directory_lock_stops_the_team_before_any_work(setup, tmp_path, mpi_binary):
    # Another run holds the output directory (a plain split, or finish): the team must not write a byte.
    src, spec, _ = setup
    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".microbatch.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        res = mpirun(2, mpi_binary, "split", src, "-s", spec, "-n", 7, "-o", out)
    assert res.code != 0, res
    assert "another microbatch run" in res.err, res.err
    assert [n for n in listing(out) if n != ".microbatch.lock"] == [], listing(out)


@pytest.mark.parametrize("earlier", [7, 9])
def test_force_over_a_finished_split_replaces_it_whole(setup, tmp_path, mpi_binary, earlier):
    # One rank removes the earlier split (manifest first), once, before anyone writes: no race between
    # ranks removing the same files, and an earlier split with more files is replaced, not refused.
    src, spec, plain = setup
    out = tmp_path / "out"
    for attempt in range(3):
        run("split", src, "-s", spec, "-n", earlier, "-o", out, "--force", check=0)
        res = mpirun(2, mpi_binary, "split", src, "-s", spec, "-n", 7, "-o", out, "--force")
        assert res.code == 0, f"attempt {attempt}: {res}"
        same_split(plain, out)
        assert listing(out) == listing(plain), listing(out)


def test_a_failed_team_removes_the_directory_it_created(setup, tmp_path, mpi_binary):
    src, spec, _ = setup
    for attempt in range(4):
        out = tmp_path / f"new-{attempt}" / "out"
        res = mpirun(2, mpi_binary, "split", src, "-s", spec, "-n", 7, "-o", out,
                     wrap="trap '' XFSZ; if [ $RANK = 1 ]; then ulimit -f 4; fi")
        assert res.code != 0, res.err
        assert not (tmp_path / f"new-{attempt}").exists(), f"attempt {attempt}: {listing(out)}"


def mpmd(binary, *commands, wdirs=None):
    """mpirun with one rank per command (`mpirun -np 1 A : -np 1 B`), each in its directory of `wdirs`."""
    argv = ["mpirun", "--oversubscribe"]
    for k, command in enumerate(commands):
        where = ["-wdir", str(wdirs[k])] if wdirs else []
        argv += ([":"] if k else []) + ["-np", "1", *where, binary, *map(str, command)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, env=MPI_ENV)
    return Result(proc)


def refused_by_every_rank(res, *named):
    assert res.code != 0, res
    lines = [line for line in res.err.splitlines() if "were not given the same command" in line
             or "different commands" in line]
    assert len(lines) == 2, res.err  # each rank says it
    for word in named:
        assert all(word in line for line in lines), res.err


@pytest.mark.parametrize("differ", ["-n", "--on-short", "-o", "input", "spec"])
def test_ranks_started_with_different_split_commands_refuse_before_any_work(setup, tmp_path, mpi_binary, differ):
    src, spec, _ = setup
    other_src = tmp_path / "other.h5"
    other_src.write_bytes(src.read_bytes())
    with h5py.File(other_src, "r+") as f:
        f.attrs["changed"] = 1
    other_spec = write_spec(tmp_path / "other.json", MIXED_SPEC)
    other_spec.write_text(other_spec.read_text() + " ")
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    base = ["split", src, "-s", spec, "-n", 7, "-o", out]
    other = {"-n": ["split", src, "-s", spec, "-n", 8, "-o", out],
             "--on-short": ["split", src, "-s", spec, "-n", 7, "-o", out, "--on-short", "downsize"],
             "-o": ["split", src, "-s", spec, "-n", 7, "-o", elsewhere],
             "input": ["split", other_src, "-s", spec, "-n", 7, "-o", out],
             "spec": ["split", src, "-s", other_spec, "-n", 7, "-o", out]}[differ]
    res = mpmd(mpi_binary, base, other)
    refused_by_every_rank(res, {"-n": "--chunks", "-o": "--output", "spec": "--spec"}.get(differ, differ))
    assert not out.exists() and not elsewhere.exists(), res.err


def test_ranks_seeing_different_files_under_one_name_refuse(setup, tmp_path, mpi_binary):
    # The same command line, but "in.h5" is another file on each rank (node-local disks).
    src, spec, _ = setup
    for node, stamp in (("a", 1_700_000_000), ("b", 1_700_000_100)):
        (tmp_path / node).mkdir()
        shutil.copy(src, tmp_path / node / "in.h5")
        os.utime(tmp_path / node / "in.h5", (stamp, stamp))
    out = tmp_path / "out"
    command = ["split", "in.h5", "-s", spec, "-n", 7, "-o", out]
    res = mpmd(mpi_binary, command, command, wdirs=[tmp_path / "a", tmp_path / "b"])
    refused_by_every_rank(res, "the named files' sizes and times")
    assert not out.exists()


def test_ranks_merging_different_splits_refuse(compressed_split, tmp_path, mpi_binary):
    # Two splits of the same shapes: each rank would read the other's rows.
    src, split, _ = compressed_split
    shutil.copytree(split, tmp_path / "twin")
    out = tmp_path / "m.h5"
    res = mpmd(mpi_binary, ["merge", split, "-o", out], ["merge", tmp_path / "twin", "-o", out])
    refused_by_every_rank(res, "inputs")
    assert not out.exists()
    assert [n for n in listing(tmp_path) if n.startswith(".m.h5")] == []


def test_ranks_running_different_subcommands_refuse(setup, tmp_path, mpi_binary):
    src, spec, plain = setup
    res = mpmd(mpi_binary, ["split", src, "-s", spec, "-n", 7, "-o", tmp_path / "out"],
               ["merge", plain, "-o", tmp_path / "m.h5"])
    refused_by_every_rank(res)
    assert not (tmp_path / "out").exists() and not (tmp_path / "m.h5").exists()


def test_shard_option_under_mpi_is_a_usage_error(setup, tmp_path, mpi_binary):
    src, spec, _ = setup
    res = mpirun(2, mpi_binary, "split", src, "-s", spec, "-n", 7, "-o", tmp_path / "o", "--shard", "0/2")
    assert res.code != 0
    assert "the ranks are the shards already" in res.err
    assert not (tmp_path / "o").exists()


def test_mpi_binary_alone_and_as_one_rank_is_a_plain_split(setup, tmp_path, mpi_binary):
    src, spec, plain = setup
    alone = tmp_path / "alone"
    res = subprocess.run([mpi_binary, "split", src, "-s", spec, "-n", "7", "-o", alone], capture_output=True,
                         text=True, env=ENV)
    assert res.returncode == 0, res.stderr
    same_split(plain, alone)
    one = tmp_path / "one"
    res = mpirun(1, mpi_binary, "split", src, "-s", spec, "-n", 7, "-o", one)
    assert res.code == 0, res.err
    same_split(plain, one)
    assert not [n for n in listing(one) if n.startswith("part-")]


@pytest.mark.parametrize("command", ["split", "merge", "finish"])
def test_build_without_mpi_refuses_to_run_as_several_tasks(setup, tmp_path, command):
    src, spec, plain = setup
    out = tmp_path / "out"
    args = {"split": ["split", src, "-s", spec, "-n", 7, "-o", out],
            "merge": ["merge", plain, "-o", out / "m.h5"],
            "finish": ["finish", out]}[command]
    if command != "split":
        out.mkdir()
    res = mpirun(2, BINARY, *args)
    assert res.code != 0
    lines = [l for l in res.err.splitlines() if l.startswith("microbatch: ")]
    assert len(lines) == 2, res.err  # one line from each task
    assert all(l.startswith("microbatch: error: ") and "cannot cooperate" in l for l in lines), res.err
    assert listing(out) == []  # nothing written (split: not even the directory)


def test_verify_writes_nothing_and_runs_on_every_task(setup):
    """verify, like inspect, only reads: each task of a launch checks the split on its own."""
    _, _, plain = setup
    res = mpirun(2, BINARY, "verify", plain)
    assert res.code == 0, res.err
    assert res.err.count(f"{plain}: intact: 7 files") == 2, res.err


def test_build_without_mpi_runs_as_one_task(setup, tmp_path):
    src, spec, plain = setup
    out = tmp_path / "out"
    res = mpirun(1, BINARY, "split", src, "-s", spec, "-n", 7, "-o", out)
    assert res.code == 0, res.err
    same_split(plain, out)


# -- merge ---------------------------------------------------------------------------


def make_compressed(path):
    """Large compressed split datasets whose chunks do not line up with 7 microbatches (so merge re-encodes them),
    one cut on axis 1 of three, with small and replicated data beside them."""
    rng = np.random.default_rng(5)
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=rng.integers(0, 50, (20000, 64)).astype(np.float32), chunks=(100, 64),
                         compression="gzip", shuffle=True)
        f.create_dataset("y", data=rng.integers(0, 9, (4, 6001, 32)).astype(np.int16), chunks=(3, 128, 16),
                         compression="gzip", compression_opts=6)
        f.create_dataset("plain", data=np.arange(6001 * 3, dtype=np.int64).reshape(6001, 3))
        f["small"] = np.arange(20000, dtype=np.int8) % 7
        f["w"] = np.float64(0.5)
        f.attrs["step"] = 3
    return path


SPEC_COMPRESSED = {"x": 0, "y": 1, "plain": 0, "small": 0, "w": "replicate"}


@pytest.fixture
def compressed_split(tmp_path):
    src = make_compressed(tmp_path / "big.h5")
    spec = write_spec(tmp_path / "big.json", SPEC_COMPRESSED)
    split = tmp_path / "split"
    run("split", src, "-s", spec, "-n", 7, "-o", split, check=0)
    one = tmp_path / "one.h5"
    run("merge", split, "-o", one, check=0)
    return src, split, one


def creation(path):
    """What h5py says of every dataset's creation properties."""
    with h5py.File(path, "r") as f:
        return {name: (f[name].dtype.str, f[name].shape, f[name].chunks, f[name].compression,
                       f[name].compression_opts, f[name].shuffle, f[name].fillvalue) for name in f}


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_merge_as_ranks_gives_the_one_process_merge(compressed_split, tmp_path, mpi_binary, ranks):
    """The same bytes whatever the number of ranks (3 and 4 interleave the
    bands of y, shared out along axis 1), one process included."""
    src, split, one = compressed_split
    out = tmp_path / f"np{ranks}.h5"
    res = mpirun(ranks, mpi_binary, "merge", split, "-o", out)
    assert res.code == 0, res.err
    assert h5diff(one, out) == 0 and h5diff(src, out) == 0
    assert creation(out) == creation(one)
    assert not [n for n in listing(tmp_path) if n.startswith(".")], listing(tmp_path)
    assert filecmp.cmp(one, out, shallow=False)


def test_chunks_that_line_up_give_the_same_bytes_too(tmp_path, mpi_binary):
    """Chunks that line up with the pieces move as stored, not shared out."""
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(2).integers(0, 50, (8000, 128)).astype(np.float32),
                         chunks=(500, 128), compression="gzip")
    run("split", src, "-n", 4, "-o", tmp_path / "mb", check=0)
    one, team = tmp_path / "one.h5", tmp_path / "team.h5"
    run("merge", tmp_path / "mb", "-o", one, check=0)
    res = mpirun(2, mpi_binary, "merge", tmp_path / "mb", "-o", team)
    assert res.code == 0, res.err
    assert h5diff(src, team) == 0
    assert filecmp.cmp(one, team, shallow=False)


def test_a_team_merge_is_the_bytes_of_a_merge_by_copies(tmp_path, mpi_binary):
    """One process merges these inputs as copies of the first (file bytes,
    past libhdf5); a team merges them through libhdf5: the same file."""
    from test_clones import small_datasets
    src = tmp_path / "in.h5"
    small_datasets(src, count=30)
    run("split", src, "-n", 4, "-o", tmp_path / "mb", check=0)
    one, team = tmp_path / "one.h5", tmp_path / "team.h5"
    assert "merged as a copy of the model" in run("merge", tmp_path / "mb", "-o", one, "-v", check=0).err
    res = mpirun(2, mpi_binary, "merge", tmp_path / "mb", "-o", team)
    assert res.code == 0, res.err
    assert filecmp.cmp(one, team, shallow=False)


def test_merge_with_a_rank_failing_publishes_nothing(compressed_split, tmp_path, mpi_binary):
    src, split, _ = compressed_split
    out = tmp_path / "m.h5"
    res = mpirun(2, mpi_binary, "merge", split, "-o", out, wrap="trap '' XFSZ; if [ $RANK = 1 ]; then ulimit -f 64; fi")
    assert res.code != 0, res.err
    assert "rank 1 of 2 failed" in res.err
    assert not out.exists()
    assert not [n for n in listing(tmp_path) if n.startswith(".")], listing(tmp_path)


@pytest.mark.parametrize("changed", [0, 1])
def test_ranks_share_the_digest_checks_and_a_changed_file_is_refused(compressed_split, tmp_path, mpi_binary,
                                                                      changed):
    """Rank R checks inputs R, R + P, ... against the manifest: a file changed after the split is refused
    whichever rank's share it is in, and nothing is published."""
    _, split, _ = compressed_split
    victim = split / sorted(n for n in listing(split) if n.endswith(".h5"))[changed]
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF  # the same size, another digest
    victim.write_bytes(bytes(data))
    out = tmp_path / "m.h5"
    res = mpirun(2, mpi_binary, "merge", split, "-o", out)
    assert res.code == 1, res.err
    assert f"{victim.name}: its content digest differs from the manifest's" in res.err
    assert f"rank {changed} of 2 failed" in res.err  # the file's own rank found it; the other stopped too
    assert not out.exists()
    assert not [n for n in listing(tmp_path) if n.startswith(".")], listing(tmp_path)


def test_a_scratch_file_of_a_running_merge_is_left_alone(compressed_split, tmp_path, mpi_binary):
    """Another merge onto this output holds its lock: refused at once, and its files are not touched."""
    _, split, _ = compressed_split
    out = tmp_path / "m.h5"
    planted = tmp_path / ".m.h5.rank-1-of-2.scratch"
    planted.write_bytes(b"theirs")
    with open(tmp_path / ".m.h5.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        res = mpirun(2, mpi_binary, "merge", split, "-o", out)
    assert res.code != 0
    assert "another microbatch run is writing this output" in res.err and "rank 0 of 2 failed" in res.err, res.err
    assert not out.exists()
    assert planted.read_bytes() == b"theirs"


def test_a_rerun_clears_what_a_killed_team_merge_left(compressed_split, tmp_path, mpi_binary):
    """SIGKILL of one rank: mpirun kills the others, which leaves rank 0's temporary, the other ranks'
    scratch files and the lock file. A rerun, without --force, recognises them as a dead run's (nobody
    holds the lock), removes them and merges."""
    _, split, one = compressed_split
    out = tmp_path / "m.h5"
    argv = ["mpirun", "--oversubscribe", "-np", "2", mpi_binary, "merge", split, "-o", out]

    ranks = []

    def kill_a_rank(proc):
        ranks.extend(children(proc.pid))
        assert ranks, "no rank found"
        os.kill(ranks[-1], signal.SIGKILL)

    res = held_run(tmp_path, argv, kill_a_rank, env=MPI_ENV, resume=False)
    assert res.code != 0, res
    wait_until(lambda: not any(alive(r) for r in ranks), "a rank outlived mpirun")
    assert not out.exists()
    left = [n for n in listing(tmp_path) if n.startswith(".m.h5")]
    assert any("scratch" in n for n in left), left  # what blocked every rerun
    res = mpirun(2, mpi_binary, "merge", split, "-o", out)
    assert res.code == 0, res.err
    assert h5diff(one, out) == 0
    assert [n for n in listing(tmp_path) if n.startswith(".m.h5")] == []


@pytest.mark.parametrize("command", ["split", "merge"])
def test_sigterm_after_the_last_byte_publishes_nothing_and_leaves_nothing(compressed_split, tmp_path, mpi_binary,
                                                                          command):
    # mpirun forwards SIGTERM to every rank; rank 0 is held just before it closes its last output (past
    # every copy loop's check), in a call the signal does not end (as one stuck in the library), longer than
    # mpirun waits before its SIGKILL. An interrupted team publishes nothing, on any rank, and each rank's
    # handler removed its temporaries (and the lock) as the signal came: nothing is left for a rerun to clean.
    src, split, _ = compressed_split
    out = tmp_path / ("mb" if command == "split" else "m.h5")
    args = ["split", src, "-n", 4, "-o", out] if command == "split" else ["merge", split, "-o", out]
    closing = ".microbatch-00001.h5.tmp-" if command == "split" else ".m.h5.tmp-"
    argv = ["mpirun", "--oversubscribe", "-np", "3", mpi_binary, *args]
    ranks = []

    def stop(proc):
        ranks.extend(children(proc.pid))
        assert ranks, "no rank found"
        proc.send_signal(signal.SIGTERM)

    res = held_run(tmp_path, argv, stop, env=dict(MPI_ENV, MB_TEST_PAUSE_DEAF="1"), close=closing, resume=False)
    assert res.code != 0, res
    # Ranks mpirun killed may still be exiting when it has: what they leave is looked at once they are gone.
    wait_until(lambda: not any(alive(r) for r in ranks), "a rank outlived mpirun")
    if command == "merge":
        assert not out.exists()
        assert [n for n in listing(tmp_path) if n.startswith(".m.h5")] == [], listing(tmp_path)
    else:
        assert not out.exists() or listing(out) == [], listing(out)
    res = mpirun(3, mpi_binary, *args)
    assert res.code == 0, res.err


def test_virtual_merge_under_mpi_is_a_usage_error(compressed_split, tmp_path, mpi_binary):
    _, split, _ = compressed_split
    res = mpirun(2, mpi_binary, "merge", split, "-o", tmp_path / "v.h5", "--virtual")
    assert res.code != 0
    assert "run it as one process" in res.err
    assert not (tmp_path / "v.h5").exists()
