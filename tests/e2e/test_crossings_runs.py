"""Generated crossings, the runs-and-places half: a drawn batch, spec and options (crossings/strategies.py),
split in a drawn way (one process, -j 2, shards then finish, an MPI team, --resume after a SIGKILL at a drawn
file) from and into a drawn place (a local file or directory, an s3:// prefix on s3rver, an http(s):// input on
nginx), must give the one-process local split of the same input byte for byte (files and manifest; the
manifest's `source` is the input as given), hold nothing else, pass `verify`, and merge back to the input
(h5diff, then h5py + numpy). A refused or stopped run publishes nothing. Profiles: crossings/profiles.py
(MB_CROSSINGS=ci|long); the CI numbers per property are below."""
import contextlib
import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, event, example, given, note, strategies as st

import servers
from conftest import BINARY, ENV, held_run, listing, run, write_spec
from crossings import runs
from crossings.profiles import settings_for
from crossings.strategies import Batch, Leaf, Options, Storage, packed_cases, row_cases, write_batch
from crossings.runs import How
from crossings.crashes import checked

held_run = checked(held_run)  # no generated case may crash (crossings/crashes.py)
run = checked(run)  # no generated case may crash (crossings/crashes.py)

# Examples per property. CI: the whole file within about 2.5 minutes on two cores (MPI and S3 examples are
# the slow ones); the counts are kept off the decorators, whose text keys Hypothesis's example database.
CI = {
    "local_runs": 24,
    "s3_runs": 15,
    "remote_input_runs": 10,
    "team_runs": 8,
    "merge_onto_s3": 20,
    "refused_runs": 16,
    "unfinished_resumable": 10,
    "torn_journal": 10,
}
LONG = {
    "local_runs": 200,
    "s3_runs": 100,
    "remote_input_runs": 100,
    "team_runs": 60,
    "merge_onto_s3": 150,
    "refused_runs": 100,
    "unfinished_resumable": 100,
    "torn_journal": 100,
}

HAVE_MPI = bool(runs.MPI_BINARY) and shutil.which("mpirun") is not None


# ---------------------------------------------------------------------------------------------- servers

@pytest.fixture(scope="module")
def s3():
    with servers.s3() as server:
        yield server


@pytest.fixture(scope="module")
def web():
    with servers.nginx() as server:
        yield server


@contextlib.contextmanager
def world(s3=None, web=None):
    """A fresh directory for one example (tmp_path is shared by every example of a property)."""
    with tempfile.TemporaryDirectory(prefix="mb-crossings-") as d:
        yield runs.World(Path(d), s3=s3, web=web)


# ---------------------------------------------------------------------------------------------- draws

def cases():
    """A batch with its spec and options the docs accept (-j is the run's, drawn apart)."""
    return st.one_of(row_cases(jobs=False), packed_cases(jobs=False))


def several_files(case):
    """The case makes two files or more (an estimate from the drawn lengths and options): shards, workers,
    a team and a resumed run only differ from one process where there are several files to share out."""
    batch, o = case
    if batch.kind == "rows":
        lengths = [leaf.shape[leaf.axis] // o.dp for leaf in batch.leaves if leaf.role == "split"]
    else:
        lengths = [len(batch.lengths["/cu_seqlens"]) // o.dp]
    if o.mbs:
        return (max(lengths) // o.mbs if o.drop_last else -(-max(lengths) // o.mbs)) >= 2
    return o.n >= 2 and (o.on_short == "empty" or min(lengths) >= 2)


def run_cases():
    """Cases for the runs: mostly ones with several files, and any case as well."""
    return st.one_of(cases().filter(several_files), cases())


def shard_orders():
    return st.integers(1, 3).flatmap(lambda p: st.permutations(list(range(p))))


def hows(kind):
    """A way of running of `kind`: one process, -j 2, shards in a drawn order then finish, --resume killed
    then run again (the file it is killed at is drawn once the reference says how many there are)."""
    if kind == "shards":
        return shard_orders().map(lambda order: How("shards", shards=order))
    if kind == "resume":
        return st.builds(lambda j, order: How("resume", jobs=j, shards=order), st.sampled_from([1, 2]),
                         st.one_of(st.none(), shard_orders()))
    return st.just(How(kind))


class Example:
    """A drawn case written to disk, and its reference: the one-process local split (and its merge)."""

    def __init__(self, w, case):
        batch, options = case
        self.batch, self.options = batch, options
        self.src = write_batch(w.work / "in.h5", batch)
        self.spec = write_spec(w.work / "spec.json", batch.spec)
        self.argv_tail = options.argv()
        note(f"spec: {batch.spec}")
        note(f"options: {' '.join(self.argv_tail)}")
        self.reference = w.work / "reference"
        res = run(*runs.split_argv(str(self.src), self.spec, self.argv_tail), "-o", self.reference, env=ENV)
        assert res.code == 0, str(res)
        with open(self.reference / "manifest.json") as f:
            self.names = [entry["name"] for entry in json.load(f)["files"]]  # the layouts name files their own way
        self.files = len(self.names)
        self.world = w
        self._merged = None
        self.exact = not options.drop_last  # else merge gives the input without the dropped rows
        event(f"batch: {batch.kind}, {min(self.files, 4)}{'+' if self.files > 4 else ''} files")
        event(f"options: {' '.join(o for o in self.argv_tail if o.startswith('-') and o not in ('-n', '-j')) or '-n'}")

    @property
    def reference_merge(self):
        """The merge of the reference split, made when a property first needs it."""
        if self._merged is None:
            self._merged = runs.merge_into(self.world, str(self.reference), ENV)
        return self._merged

    def argv(self, input_arg):
        return runs.split_argv(input_arg, self.spec, self.argv_tail)


def finished_like_reference(w, ex, how, out, input_arg, env, res):
    """Every invariant of a finished split at `out`."""
    assert res.code == 0, str(res)
    runs.assert_is_reference(out, ex.reference, how, input_arg)
    assert runs.journal_entries(out) == []
    verified = run("verify", out.arg, env=env)
    assert verified.code == 0, str(verified)
    runs.assert_merges_back(w, out, ex.reference_merge, ex.src, ex.exact, env)
    runs.assert_nothing_spooled(w)


def kill_point(data, ex):
    """Where a resumable run is killed: as it closes a drawn file (its index), or once it has created its
    first output file (-1)."""
    return data.draw(st.integers(-1, ex.files - 1), label="killed closing file (-1: having created one)")


def resume_point(data, ex, how):
    if how.kind != "resume":
        return
    point = kill_point(data, ex)
    how.at = ex.names[point] if point >= 0 else ""
    if how.shards:
        count = len(how.shards)
        how.killed_shard = runs.shard_of(point, ex.files, count) if point >= 0 else \
            data.draw(st.sampled_from(runs.shards_with_files(ex.files, count)), label="killed shard")


# ---------------------------------------------------------------------------------------------- properties

HOWS = ["one", "jobs", "shards", "resume"]


@pytest.mark.parametrize("kind", HOWS)
@settings_for("local_runs", ci=CI["local_runs"], long=LONG["local_runs"])
@given(case=run_cases(), data=st.data())
def test_a_local_split_run_any_way_is_the_reference(kind, case, data):
    how = data.draw(hows(kind), label="how")
    with world() as w:
        ex = Example(w, case)
        resume_point(data, ex, how)
        note(f"how: {how}")
        event(f"how: {how.kind}{' by shards' if how.kind == 'resume' and how.shards else ''}")
        out = w.output("local")
        env = w.env()
        res = runs.split_by(w, how, ex.argv(str(ex.src)), out, env)
        finished_like_reference(w, ex, how, out, str(ex.src), env, res)


@pytest.mark.parametrize("kind", HOWS)
@settings_for("s3_runs", ci=CI["s3_runs"], long=LONG["s3_runs"])
@given(case=run_cases(), where_in=st.sampled_from(["local", "s3"]), data=st.data())
def test_a_split_onto_an_s3_prefix_is_the_reference(s3, kind, case, where_in, data):
    how = data.draw(hows(kind), label="how")
    with world(s3=s3) as w:
        ex = Example(w, case)
        resume_point(data, ex, how)
        note(f"how: {how}; input: {where_in}")
        event(f"how: {how.kind}; input: {where_in}")
        input_arg = w.place_input(where_in, ex.src)
        out = w.output("s3")
        env = w.env()
        res = runs.split_by(w, how, ex.argv(input_arg), out, env)
        finished_like_reference(w, ex, how, out, input_arg, env, res)
        assert s3.uploads_in_progress(out.prefix) == []


@pytest.mark.parametrize("where_in", ["http", "https", "s3"])
@settings_for("remote_input_runs", ci=CI["remote_input_runs"], long=LONG["remote_input_runs"])
@given(case=run_cases(), how=st.sampled_from(["one", "jobs", "shards"]).flatmap(hows))
def test_a_split_of_a_remote_input_is_the_reference(s3, web, where_in, case, how):
    with world(s3=s3, web=web) as w:
        ex = Example(w, case)
        note(f"how: {how}; input: {where_in}")
        event(f"how: {how.kind}; input: {where_in}")
        input_arg = w.place_input(where_in, ex.src)
        out = w.output("local")
        env = w.env(https=where_in == "https")
        res = runs.split_by(w, how, ex.argv(input_arg), out, env)
        finished_like_reference(w, ex, how, out, input_arg, env, res)


@pytest.mark.skipif(not HAVE_MPI, reason="needs microbatch-mpi (MICROBATCH_MPI) and mpirun")
@pytest.mark.parametrize("where_out", ["local", "s3"])
@settings_for("team_runs", ci=CI["team_runs"], long=LONG["team_runs"])
@given(case=run_cases(), ranks=st.sampled_from([2, 3]), where_in=st.sampled_from(["local", "http"]),
       resume=st.booleans(), data=st.data())
def test_a_team_split_is_the_reference(s3, web, where_out, case, ranks, where_in, resume, data):
    with world(s3=s3, web=web) as w:
        ex = Example(w, case)
        how = How("mpi", ranks=ranks)
        input_arg = w.place_input(where_in, ex.src)
        out = w.output(where_out)
        env = w.env(mpi=True)
        if resume:  # the team killed as one of its ranks closes a drawn file, then run again
            point = kill_point(data, ex)
            at = ex.names[point] if point >= 0 else ""
            note(f"team of {ranks} killed at {at or 'its first file'}; input: {where_in}; output: {where_out}")
            runs.killed_resumable(w, ex.argv(input_arg), out, How("resume", at=at), env, mpi_ranks=ranks)
            assert "manifest.json" not in out.entries()
            res = runs.run_mpi(ranks, [*ex.argv(input_arg), "-o", out.arg, "--resume"], env)
        else:
            note(f"team of {ranks}; input: {where_in}; output: {where_out}")
            res = runs.split_by(w, how, ex.argv(input_arg), out, env)
        finished_like_reference(w, ex, how, out, input_arg, env, res)


# gzip chunks of 4 rows cut at rows 4 and 7: merge re-encodes the chunk that straddles a cut
STRADDLING = (Batch("rows", [Leaf("/x", np.dtype("<f4"), (10, 3), "split", axis=0, spec=0, seed=3,
                                  storage=Storage(layout="chunked", chunks=(4, 3), gzip=6, shuffle=True))],
                    {}, {"x": 0}), Options(n=3))


@settings_for("merge_onto_s3", ci=CI["merge_onto_s3"], long=LONG["merge_onto_s3"])
@given(case=cases(), where_in=st.sampled_from(["local", "s3", "http", "https"]))
@example(case=STRADDLING, where_in="local")
def test_a_merge_onto_s3_is_the_local_merge(s3, web, case, where_in):
    """`merge -o s3://BUCKET/KEY.h5` of the reference split (from its directory, or published on s3 or
    http(s)) puts the bytes a local merge writes, and nothing else: no other key, no upload left open, nothing
    in the spool."""
    with world(s3=s3, web=web) as w:
        ex = Example(w, case)
        note(f"merged from: {where_in}")
        event(f"merged from: {where_in}")
        source = published_split(w, ex.reference, where_in)
        target = runs.Prefix(s3, w.unique("merged"))
        env = w.env(https=where_in == "https")
        res = run("merge", source, "-o", s3.s3_url(f"{target.prefix}/merged.h5"), env=env)
        assert res.code == 0, str(res)
        assert list(target.entries()) == ["merged.h5"], target.entries()
        got = target.entries()["merged.h5"]
        assert open(got, "rb").read() == open(ex.reference_merge, "rb").read(), "differs from the local merge"
        if ex.exact:
            assert runs.h5diff(ex.src, got) == 0
        runs.assert_nothing_spooled(w)
        assert s3.uploads_in_progress(target.prefix) == []


def published_split(w, reference, where):
    """The name of the split `reference` (a directory) published as `where`: the directory itself, or its
    files under an s3:// prefix or an http(s):// directory (the URL ends in /)."""
    if where == "local":
        return str(reference)
    prefix = w.unique("split")
    if where == "s3":
        for name in listing(reference):
            w.s3.put(str(reference / name), f"{prefix}/{name}")
        return w.s3.s3_url(f"{prefix}/")
    w.web.put_dir(str(reference), prefix)
    return (w.web.url(prefix) if where == "http" else w.web.https_url(prefix)) + "/"


# ---------------------------------------------------------------------------------------------- refusals

REFUSALS = ["misfit", "exists", "usage", "stopped"]


def shard_with_files(data, files, label):
    """--shard K/P of a drawn P with K a shard that has files of its own (the partition -j uses)."""
    count = data.draw(st.integers(1, 3), label=f"{label}: shards")
    return data.draw(st.sampled_from(runs.shards_with_files(files, count)), label=f"{label}: shard"), count


def refused_hows():
    kinds = ["one", "jobs", "shard"] + (["mpi"] if HAVE_MPI else [])
    return st.sampled_from(kinds)


def one_error_line(res):
    """One line says what is wrong; the warnings an accepted plan gives (downsizing, a short last piece) may
    come before it, as they do for a run that goes on."""
    lines = [l for l in res.err.splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("microbatch: error: ")]
    assert len(errors) == 1, str(res)
    assert all(l.startswith(("microbatch: warning: ", "microbatch: error: ")) for l in lines), str(res)
    assert "HDF5-DIAG" not in res.err


def plant_earlier_split(w, out, reference):
    """A finished split of the same input at `out` (the reference's files and manifest)."""
    if out.kind == "local":
        shutil.copytree(reference, out.path)
    else:
        for name in listing(reference):
            w.s3.put(str(reference / name), f"{out.prefix}/{name}")


def contents(out):
    return {n: open(p, "rb").read() for n, p in out.entries().items()}


@pytest.mark.parametrize("why", REFUSALS)
@settings_for("refused_runs", ci=CI["refused_runs"], long=LONG["refused_runs"])
@given(case=cases(), how=refused_hows(), where=st.sampled_from(["local", "s3"]), data=st.data())
def test_a_refused_or_stopped_run_publishes_nothing(s3, why, case, how, where, data):
    with world(s3=s3) as w:
        ex = Example(w, case)
        out = w.output(where)
        mpi = how == "mpi"
        env = w.env(mpi=mpi)
        spec = ex.spec
        extra = []
        if how == "jobs":
            extra = ["-j", "2"]
        elif how == "shard":
            k, count = shard_with_files(data, ex.files, "refused")
            extra = ["--shard", f"{k}/{count}"]
        ranks = data.draw(st.sampled_from([2, 3]), label="ranks") if mpi else 0
        note(f"{why}; how: {how} {' '.join(extra)} {ranks or ''}; output: {where}")
        event(f"{why}; how: {how}; output: {where}")
        if why == "misfit":  # a spec key that names nothing in the file: refused before anything is written
            spec = write_spec(w.work / "misfit.json", dict(ex.batch.spec, no_such_member=0))
        if why == "exists":
            plant_earlier_split(w, out, ex.reference)
        if why == "usage":
            extra += ["--resume", "--force"]  # documented as a usage error (exit 2)
        before = contents(out)
        argv = [*runs.split_argv(str(ex.src), spec, ex.argv_tail), "-o", out.arg, *extra]
        if why == "stopped":  # SIGTERM once the run has created its first output file
            command = runs.mpirun_argv(ranks, argv) if mpi else [BINARY, *map(str, argv)]
            pids = []

            def stop(proc):
                pids.extend(runs.process_tree(proc.pid))
                proc.send_signal(signal.SIGTERM)

            held = w.work / "held"
            held.mkdir()
            res = held_run(held, command, stop, env=env, resume=False)
            runs.wait_until(lambda: not any(runs.alive(p) for p in pids), "a process of the stopped run outlived it")
            assert res.code == 130 if not mpi else res.code != 0, str(res)
        else:
            res = runs.run_mpi(ranks, argv, env) if mpi else run(*argv, env=env)
            want = {"misfit": 1, "exists": 1, "usage": 2}[why]
            assert res.code == want, str(res)  # under MPI the failing rank's status, the others' 1 (docs/behavior.md)
            if not mpi:
                one_error_line(res)
        after = contents(out)
        if why == "stopped" and mpi and where == "local":
            # mpirun SIGKILLs its ranks a second after SIGTERM: hidden temporaries may stay, for the next run
            after = {n: b for n, b in after.items() if not n.startswith(".")}
        assert after == before, f"a refused run changed the output: {sorted(after)} (was {sorted(before)})"
        if out.kind == "local" and not before:
            assert not out.exists() or mpi and why == "stopped", "the directory the run created is left"
        if out.kind == "s3":
            assert s3.uploads_in_progress(out.prefix) == []
        runs.assert_nothing_spooled(w)
        if why == "stopped":  # the same command again needs no cleaning and writes the reference
            again = runs.run_mpi(ranks, argv, env) if mpi else run(*argv, env=env)
            assert again.code == 0, str(again)
            if how != "shard":
                runs.assert_is_reference(out, ex.reference, How("one"), str(ex.src))


# ---------------------------------------------------------------------------------------------- unfinished

@settings_for("unfinished_resumable", ci=CI["unfinished_resumable"], long=LONG["unfinished_resumable"])
@given(case=run_cases(), jobs=st.sampled_from([1, 2]), data=st.data())
def test_the_files_of_an_unfinished_resumable_split_do_not_merge(case, jobs, data):
    """Without its manifest a directory is not a finished split (docs/behavior.md); the microbatch files a
    killed --resume run published, given one by one, are the files of an unfinished split: merge refuses
    them and writes nothing."""
    with world() as w:
        ex = Example(w, case)
        assume(ex.files >= 2)
        at = ex.names[data.draw(st.integers(1, ex.files - 1), label="killed closing file")]
        out = w.output("local")
        runs.killed_resumable(w, ex.argv(str(ex.src)), out, How("resume", at=at, jobs=jobs), w.env())
        published = [n for n in ex.names if n in out.entries()]
        note(f"published before the kill: {published}")
        assume(published)
        target = w.work / "m"
        target.mkdir()
        res = run("merge", *[out.path / n for n in published], "-o", target / "merged.h5",
                  *ex.options.merge_argv(), env=w.env())
        assert res.code != 0, f"merged the files of an unfinished split: {res}"
        assert listing(target) == []


# ---------------------------------------------------------------------------------------------- torn entries

@settings_for("torn_journal", ci=CI["torn_journal"], long=LONG["torn_journal"])
@given(case=run_cases(), jobs=st.sampled_from([1, 2]), data=st.data())
def test_a_resume_after_torn_journal_entries_is_the_reference(case, jobs, data):
    """Journal entries are written unsynced before their file is published: a crash can lose or tear them, and
    such an entry is never trusted: its file is written again (docs/behavior.md, "Resuming an interrupted
    split"). A rerun of the same command after a killed run some of whose entries were torn or lost still
    finishes the split with the reference's bytes, with no --force; when none of them is left intact, nothing
    tells the place is this command's, and the rerun refuses it (exit 1, one line), changing nothing."""
    with world() as w:
        ex = Example(w, case)
        assume(ex.files >= 2)
        at = ex.names[data.draw(st.integers(1, ex.files - 1), label="killed closing file")]
        out = w.output("local")
        env = w.env()
        argv = ex.argv(str(ex.src))
        runs.killed_resumable(w, argv, out, How("resume", at=at, jobs=jobs), env)
        entries = runs.journal_entries(out)
        assume(entries)
        torn = data.draw(st.lists(st.sampled_from(entries), min_size=1, unique=True), label="torn entries")
        for name in torn:
            path = out.path / name
            keep = data.draw(st.integers(0, os.path.getsize(path) - 1), label=f"{name}: bytes kept (0: lost)")
            if keep == 0 and data.draw(st.booleans(), label=f"{name}: removed"):
                os.remove(path)
            else:
                os.truncate(path, keep)
        event(f"torn: {'all' if len(torn) == len(entries) else 'some'} of the entries")
        before = sorted(os.listdir(out.path))
        res = run(*argv, "-o", out.arg, "--resume", *(["-j", str(jobs)] if jobs != 1 else []), env=env)
        if len(torn) < len(entries):
            finished_like_reference(w, ex, How("resume", jobs=jobs), out, str(ex.src), env, res)
            return
        damaged = any(os.path.exists(out.path / name) for name in torn)
        assert res.code == 1, str(res)
        one_error_line(res)
        assert ("journal entries are damaged" if damaged else "not an earlier run") in res.err, str(res)
        # the killed run's temporaries and lock may go (behavior.md: leftovers are recognised); nothing else
        kept = lambda names: [n for n in names if ".tmp-" not in n and not n.startswith(".microbatch.lock")]
        assert kept(sorted(os.listdir(out.path))) == kept(before)
