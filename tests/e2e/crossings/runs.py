"""How a split runs and where it reads and writes, for the generated crossings of test_crossings_runs.py.

How: one process, `-j 2`, `--shard K/P` for every K (in a drawn order) then `finish`, an MPI team
(`mpirun -np P microbatch-mpi split`), or `split --resume` SIGKILLed as it closes a drawn file, then run again.
Where: the input is a local file, an http(s):// URL on nginx or an s3:// object on s3rver; the output a local
directory or an s3:// prefix. Every result is judged against a one-process local split of the same input,
spec and options (the reference)."""
import filecmp
import itertools
import json
import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Optional

import h5py
import numpy as np
from hypothesis import note
from hypothesis.errors import InvalidArgument

import servers
from conftest import BINARY, ENV, Result, alive, children, h5diff, held_run, listing, run, wait_until
from test_mpi import MPI_BINARY, MPI_ENV
from crossings.crashes import checked

held_run = checked(held_run)  # no generated case may crash (crossings/crashes.py)
run = checked(run)  # no generated case may crash (crossings/crashes.py)

S3_OBJECT = "._S3rver_object"
_UNIQUE = itertools.count()


# ---------------------------------------------------------------------------------------------- places

class LocalDir:
    """An output directory."""
    kind = "local"

    def __init__(self, path):
        self.path = path

    @property
    def arg(self):
        return str(self.path)

    def entries(self):
        """Every name in the directory (hidden ones too), with its path."""
        return {n: os.path.join(self.path, n) for n in listing(self.path)}

    def exists(self):
        return os.path.exists(self.path)

    def merge_source(self):
        return str(self.path)


class Prefix:
    """An s3:// prefix on s3rver, read back from the server's own disk (keys and bytes as it stores them)."""
    kind = "s3"

    def __init__(self, s3, prefix):
        self.s3, self.prefix = s3, prefix.strip("/")

    @property
    def arg(self):
        return self.s3.s3_url(self.prefix + "/")

    def entries(self):
        """Every key under the prefix (at any depth, hidden names too), relative to it, with its bytes' path."""
        top = os.path.join(self.s3.root, servers.S3_BUCKET, self.prefix)
        found = {}
        for here, _, files in os.walk(top):
            for f in files:
                if f.endswith(S3_OBJECT):
                    key = os.path.relpath(os.path.join(here, f[:-len(S3_OBJECT)]), top)
                    found[key] = os.path.join(here, f)
        return found

    def exists(self):
        return bool(self.entries()) or bool(self.s3.uploads_in_progress(self.prefix + "/"))

    def merge_source(self):
        return self.arg


@dataclass
class World:
    """The servers of a module (None where not started) and the directory an example works in."""
    work: object                      # pathlib.Path, empty at the start of an example
    s3: object = None
    web: object = None

    def unique(self, stem):
        """A name no other example of this process has used (keys on a module's store outlive examples)."""
        return f"{stem}-{os.getpid()}-{next(_UNIQUE)}"

    def spool(self, name="spool"):
        """A run's $TMPDIR: S3 outputs are spooled there, and nothing may stay in it when the run ends."""
        path = self.work / name
        path.mkdir(exist_ok=True)
        return path

    def env(self, mpi=False, https=False, spool="spool"):
        env = dict(MPI_ENV if mpi else ENV)
        if self.s3 is not None:
            env = self.s3.env(env)
        if https:
            env["AWS_CA_BUNDLE"] = self.web.cert
        env["TMPDIR"] = str(self.spool(spool))
        return env

    def place_input(self, kind, src):
        """The name a run gives for the input `src` published as `kind` (local, http, https, s3)."""
        if kind == "local":
            return str(src)
        key = f"{self.unique('in')}/{os.path.basename(src)}"
        if kind == "s3":
            self.s3.put(str(src), key)
            return self.s3.s3_url(key)
        self.web.put(str(src), key)
        return self.web.url(key) if kind == "http" else self.web.https_url(key)

    def output(self, kind):
        if kind == "local":
            return LocalDir(self.work / self.unique("out"))
        return Prefix(self.s3, self.unique("out"))


# ---------------------------------------------------------------------------------------------- how

@dataclass
class How:
    kind: str                         # one | jobs | shards | mpi | resume
    shards: Optional[list] = None     # shards: the order the K of P run in
    ranks: int = 0                    # mpi
    at: str = ""                      # resume: the file whose close the run is SIGKILLed at ("": once it
                                      # has created its first output file)
    jobs: int = 1                     # resume: -j
    killed_shard: Optional[int] = None  # resume by shards: the shard that is killed

    def __str__(self):
        if self.kind == "shards":
            return f"shards {self.shards} of {len(self.shards)}"
        if self.kind == "mpi":
            return f"mpirun -np {self.ranks}"
        if self.kind == "resume":
            where = f"closing {self.at}" if self.at else "having created its first file"
            shards = f", shards {self.shards}, shard {self.killed_shard} killed" if self.shards else ""
            return f"--resume killed {where} (-j {self.jobs}{shards})"
        return self.kind


def split_argv(input_arg, spec_path, options):
    argv = ["split", input_arg]
    if spec_path is not None:
        argv += ["-s", str(spec_path)]
    return argv + [str(o) for o in options]


def mpirun_argv(ranks, argv):
    return ["mpirun", "--oversubscribe", "-np", str(ranks), MPI_BINARY, *map(str, argv)]


@checked
def run_mpi(ranks, argv, env):
    proc = subprocess.run(mpirun_argv(ranks, argv), capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, env=env)
    return Result(proc)


def process_tree(pid):
    """`pid` and every process below it."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children(p))
    return found


def kill_tree(proc):
    """SIGKILL to the run and every process it started, at once; returns their ids."""
    pids = process_tree(proc.pid)
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def killed_resumable(world, argv, out, how, env, mpi_ranks=0):
    """`argv -o out --resume`, held as it closes file `how.at` (or once it has created its first output
    file) and SIGKILLed there with every process it started; returns once all of them are gone. A SIGKILL of every process leaves its spool in $TMPDIR (no
    process is left to remove it), so the run gets one of its own, apart from the spool judged after the
    rerun. A file written as a copy of another (io/split/clone.hpp) is never closed through libhdf5, where
    the hold is, so the killed run makes none: MICROBATCH_CHECK_CLONES proves its bytes the same."""
    env = dict(env, TMPDIR=str(world.spool("killed-spool")), MICROBATCH_NO_CLONES="1")
    full = [*argv, "-o", out.arg, "--resume", "-q"] + (["-j", str(how.jobs)] if how.jobs != 1 else [])
    command = mpirun_argv(mpi_ranks, full) if mpi_ranks else [BINARY, *map(str, full)]
    pids = []
    held = world.work / world.unique("held")
    held.mkdir()
    res = held_run(held, command, lambda proc: pids.extend(kill_tree(proc)), env=env,
                   close=f".{how.at}.tmp-" if how.at else None, resume=False)
    assert res.code != 0, str(res)
    wait_until(lambda: not any(alive(p) for p in pids), "a process of the killed run outlived it")
    noted(f"left by the killed run: {sorted(out.entries())}")
    return res


def noted(text):
    """Hypothesis's note() inside a property; nothing elsewhere (a helper may be called from a plain test)."""
    try:
        note(text)
    except InvalidArgument:
        pass


def split_by(world, how, argv, out, env):
    """Runs the split `argv` into `out` the way `how` says; returns the Result of the command that ends it."""
    if how.kind == "one":
        return run(*argv, "-o", out.arg, env=env)
    if how.kind == "jobs":
        return run(*argv, "-o", out.arg, "-j", "2", env=env)
    if how.kind == "shards":
        count = len(how.shards)
        for k in how.shards:
            res = run(*argv, "-o", out.arg, "--shard", f"{k}/{count}", env=env)
            if res.code != 0:
                return res
            assert "manifest.json" not in out.entries(), f"shard {k}/{count} wrote the manifest"
        return run("finish", out.arg, env=env)
    if how.kind == "mpi":
        return run_mpi(how.ranks, [*argv, "-o", out.arg], env)
    if how.kind == "resume":
        jobs = ["-j", str(how.jobs)] if how.jobs != 1 else []
        if not how.shards:
            killed_resumable(world, argv, out, how, env)
            assert "manifest.json" not in out.entries(), "a killed run published a manifest"
            return run(*argv, "-o", out.arg, "--resume", *jobs, env=env)
        count = len(how.shards)
        for k in how.shards:  # every shard with --resume, the killed one run again at once
            shard = ["--shard", f"{k}/{count}"]
            if k == how.killed_shard:
                killed_resumable(world, [*argv, *shard], out, how, env)
            res = run(*argv, *shard, "-o", out.arg, "--resume", *jobs, env=env)
            if res.code != 0:
                return res
        assert "manifest.json" not in out.entries(), "a shard wrote the manifest"
        return run("finish", out.arg, env=env)
    raise AssertionError(how)


def shard_of(index, files, count):
    """The shard of `count` that writes file `index` of `files`: shard K writes [K*F/P, (K+1)*F/P)."""
    return next(k for k in range(count) if k * files // count <= index < (k + 1) * files // count)


def shards_with_files(files, count):
    return [k for k in range(count) if k * files // count < (k + 1) * files // count]


# ---------------------------------------------------------------------------------------------- judging

def expected_names(reference, how):
    """What a finished split holds: the reference's files and manifest; a split by shards keeps its part
    records beside them (docs/cluster.md); a team's rank 0 removes them."""
    names_ = set(listing(reference))
    if how.kind in ("shards", "resume") and how.shards:
        count = len(how.shards)
        names_ |= {f"part-{k:05d}-of-{count:05d}.json" for k in range(count)}
    return names_


def same_manifest(got, want, source):
    """The manifest a run wrote is the reference's byte for byte, but for `source`, which records the input as
    the command line gave it (docs/guide.md)."""
    with open(want) as f:
        reference = f.read()
    with open(got) as f:
        text = f.read()
    ref_source = json.loads(reference)["source"]
    assert json.loads(text)["source"] == source, (json.loads(text)["source"], source)
    if source != ref_source:
        text = text.replace(f'"source": {json.dumps(source)}', f'"source": {json.dumps(ref_source)}', 1)
    assert text == reference, f"manifest differs from the reference's:\n{text}\n---\n{reference}"


def assert_is_reference(out, reference, how, source):
    """`out` holds exactly the reference split: the same names and nothing else, every file the same bytes,
    the manifest the same but for the source."""
    entries = out.entries()
    assert set(entries) == expected_names(reference, how), sorted(entries)
    for name in listing(reference):
        if name == "manifest.json":
            same_manifest(entries[name], os.path.join(reference, name), source)
        else:
            assert filecmp.cmp(entries[name], os.path.join(reference, name), shallow=False), name


def assert_nothing_spooled(world):
    left = listing(world.spool())
    assert left == [], f"left in $TMPDIR: {left}"


def same_values(a, b):
    """Every dataset and attribute of `a` in `b` with the same shape, dtype and bits (h5py + numpy)."""
    def visit(fa, fb):
        seen = []
        fa.visititems(lambda name, obj: seen.append(name))
        seen_b = []
        fb.visititems(lambda name, obj: seen_b.append(name))
        assert sorted(seen) == sorted(seen_b), (seen, seen_b)
        for name in [""] + seen:
            x, y = (fa[name], fb[name]) if name else (fa, fb)
            assert sorted(x.attrs) == sorted(y.attrs), name
            for k in x.attrs:
                same_array(x.attrs[k], y.attrs[k], f"{name}@{k}")
            if isinstance(x, h5py.Dataset):
                assert isinstance(y, h5py.Dataset), name
                assert (x.shape, x.dtype) == (y.shape, y.dtype), name
                if x.shape is not None:
                    same_array(x[()], y[()], name)
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        visit(fa, fb)


def same_array(p, q, what):
    if isinstance(p, h5py.Empty) or isinstance(q, h5py.Empty):
        assert isinstance(p, h5py.Empty) and isinstance(q, h5py.Empty), what
        return
    p, q = np.asarray(p), np.asarray(q)
    assert p.shape == q.shape and p.dtype == q.dtype, (what, p.dtype, q.dtype, p.shape, q.shape)
    if p.dtype.kind == "O":
        assert p.tolist() == q.tolist(), what
    else:
        assert p.tobytes() == q.tobytes(), what


def merge_into(world, source, env, extra=()):
    """Merges `source` into a file of a new directory; the directory must hold that file alone after."""
    where = world.work / world.unique("merged")
    where.mkdir()
    res = run("merge", source, "-o", where / "merged.h5", *extra, env=env)
    assert res.code == 0, str(res)
    assert listing(where) == ["merged.h5"], listing(where)
    return where / "merged.h5"


def assert_merges_back(world, out, reference_merge, src, exact, env):
    """`merge` of the result writes the reference's merged file, byte for byte; and the input, when the split
    dropped nothing (`exact`)."""
    merged = merge_into(world, out.merge_source(), env)
    assert filecmp.cmp(merged, reference_merge, shallow=False), "merge of the result differs from the reference's"
    if exact:
        assert h5diff(src, merged) == 0
        same_values(src, merged)


def journal_entries(out):
    return sorted(n for n in out.entries() if n.endswith(".journal"))
