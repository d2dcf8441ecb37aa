"""Generated crossings, the runs-and-places half: a drawn batch, spec and options (crossings/strategies.py),
split in a drawn way (one process, -j 2, shards then finish, an MPI team, --resume after a SIGKILL at a drawn
file) from and into a drawn place (a local file or directory, an s3:// prefix on s3rver, an http(s):// input on
nginx), must give the one-process local split of the same input byte for byte (files and manifest; the
manifest's `source` is the input as given), hold nothing else, pass `verify`, and merge back to the input
(h5diff, then h5py + numpy). A refused or stopped run publishes nothing. Profiles: crossings/profiles.py
(MB_CROSSINGS=ci|long); the CI numbers per property are below."""
import contextlib
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, note, strategies as st

import servers
from conftest import BINARY, ENV, assert_one_line_error, held_run, listing, run, write_spec
from crossings import runs
from crossings.profiles import settings_for
from crossings.strategies import packed_cases, row_cases, write_batch
from crossings.runs import How

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


def shard_orders():
    return st.integers(1, 3).flatmap(lambda p: st.permutations(list(range(p))))


def hows(resume=True):
    """One process, -j 2, shards in any order then finish, and (`resume`) --resume killed then rerun."""
    options = [st.just(How("one")), st.just(How("jobs")), shard_orders().map(lambda o: How("shards", shards=o))]
    if resume:
        options.append(st.sampled_from([1, 2]).map(lambda j: How("resume", jobs=j)))
    return st.one_of(*options)


class Example:
    """A drawn case written to disk, and its reference: the one-process local split, and its merge."""

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
        assert res.code == 0, res
        self.files = len([n for n in listing(self.reference) if n != "manifest.json"])
        self.reference_merge = runs.merge_into(w, str(self.reference), ENV)
        self.exact = not options.drop_last  # else merge gives the input without the dropped rows

    def argv(self, input_arg):
        return runs.split_argv(input_arg, self.spec, self.argv_tail)


def finished_like_reference(w, ex, how, out, input_arg, env, res):
    """Every invariant of a finished split at `out`."""
    assert res.code == 0, res
    runs.assert_is_reference(out, ex.reference, how, input_arg)
    assert runs.journal_entries(out) == []
    verified = run("verify", out.arg, env=env)
    assert verified.code == 0, verified
    runs.assert_merges_back(w, out, ex.reference_merge, ex.src, ex.exact, env)
    runs.assert_nothing_spooled(w)


def resume_point(data, ex, how):
    if how.kind == "resume":
        how.at = data.draw(st.integers(0, ex.files - 1), label="killed closing file")


# ---------------------------------------------------------------------------------------------- properties

@settings_for("local_runs", ci=10, long=400)
@given(case=cases(), how=hows(), data=st.data())
def test_a_local_split_run_any_way_is_the_reference(case, how, data):
    with world() as w:
        ex = Example(w, case)
        resume_point(data, ex, how)
        note(f"how: {how}")
        out = w.output("local")
        env = w.env()
        res = runs.split_by(w, how, ex.argv(str(ex.src)), out, env)
        finished_like_reference(w, ex, how, out, str(ex.src), env, res)


@settings_for("s3_runs", ci=5, long=150)
@given(case=cases(), how=hows(), where_in=st.sampled_from(["local", "s3"]), data=st.data())
def test_a_split_onto_an_s3_prefix_is_the_reference(s3, case, how, where_in, data):
    with world(s3=s3) as w:
        ex = Example(w, case)
        resume_point(data, ex, how)
        note(f"how: {how}; input: {where_in}")
        input_arg = w.place_input(where_in, ex.src)
        out = w.output("s3")
        env = w.env()
        res = runs.split_by(w, how, ex.argv(input_arg), out, env)
        finished_like_reference(w, ex, how, out, input_arg, env, res)
        assert s3.uploads_in_progress(out.prefix) == []


@settings_for("remote_input_runs", ci=4, long=150)
@given(case=cases(), how=hows(resume=False), where_in=st.sampled_from(["http", "https", "s3"]))
def test_a_split_of_a_remote_input_is_the_reference(s3, web, case, how, where_in):
    with world(s3=s3, web=web) as w:
        ex = Example(w, case)
        note(f"how: {how}; input: {where_in}")
        input_arg = w.place_input(where_in, ex.src)
        out = w.output("local")
        env = w.env(https=where_in == "https")
        res = runs.split_by(w, how, ex.argv(input_arg), out, env)
        finished_like_reference(w, ex, how, out, input_arg, env, res)


@pytest.mark.skipif(not HAVE_MPI, reason="needs microbatch-mpi (MICROBATCH_MPI) and mpirun")
@settings_for("team_runs", ci=3, long=60)
@given(case=cases(), ranks=st.sampled_from([2, 3]), where_in=st.sampled_from(["local", "http"]),
       where_out=st.sampled_from(["local", "s3"]), resume=st.booleans(), data=st.data())
def test_a_team_split_is_the_reference(s3, web, case, ranks, where_in, where_out, resume, data):
    with world(s3=s3, web=web) as w:
        ex = Example(w, case)
        how = How("mpi", ranks=ranks)
        input_arg = w.place_input(where_in, ex.src)
        out = w.output(where_out)
        env = w.env(mpi=True)
        if resume:  # the team killed as one of its ranks closes a drawn file, then run again
            at = data.draw(st.integers(0, ex.files - 1), label="killed closing file")
            note(f"team of {ranks} killed closing file {at}; input: {where_in}; output: {where_out}")
            runs.killed_resumable(w, ex.argv(input_arg), out, How("resume", at=at), env, mpi_ranks=ranks)
            assert "manifest.json" not in out.entries()
            res = runs.run_mpi(ranks, [*ex.argv(input_arg), "-o", out.arg, "--resume"], env)
        else:
            note(f"team of {ranks}; input: {where_in}; output: {where_out}")
            res = runs.split_by(w, how, ex.argv(input_arg), out, env)
        finished_like_reference(w, ex, how, out, input_arg, env, res)


@settings_for("merge_onto_s3", ci=4, long=150)
@given(case=cases())
def test_a_merge_onto_s3_is_the_local_merge(s3, case):
    with world(s3=s3) as w:
        ex = Example(w, case)
        target = runs.Prefix(s3, w.unique("merged"))
        env = w.env()
        res = run("merge", ex.reference, "-o", s3.s3_url(f"{target.prefix}/merged.h5"), env=env)
        assert res.code == 0, res
        assert list(target.entries()) == ["merged.h5"], target.entries()
        got = target.entries()["merged.h5"]
        assert open(got, "rb").read() == open(ex.reference_merge, "rb").read(), "differs from the local merge"
        if ex.exact:
            assert runs.h5diff(ex.src, got) == 0
        runs.assert_nothing_spooled(w)
        assert s3.uploads_in_progress(target.prefix) == []
