"""The command line itself: where a spec can come from (a file, a pipe,
standard input, --spec-json), "did you mean" for typos, --version, usage
lines, negative numbers, and the output directory a failed split made."""
import json
import os
import re
import resource
import signal
import subprocess
import threading
import time

import h5py
import numpy as np
import pytest

from conftest import (BINARY, ENV, assert_one_line_error, h5diff, held_run, listing, project_version, run,
                      signalled_in_a_stuck_read, write_spec)

HERE = os.path.dirname(__file__)
CORRUPT = os.path.join(HERE, "..", "data", "corrupt")
# As in test_reliability: under ASan, let libhdf5's own overruns reach the crash guard.
LIBRARY_FAULT_ENV = dict(ENV, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":replace_intrin=0:replace_str=0:intercept_strlen=0:intercept_strchr=0:intercept_strndup=0")

# x split on axis 1 (the default would be axis 0), so that the rules show which spec was read.
SPEC = {"x": 1, "y": 0, "t": "replicate"}


class Result:
    def __init__(self, proc):
        self.code, self.out, self.err = proc.returncode, proc.stdout, proc.stderr

    def __repr__(self):
        return f"exit {self.code}\nstdout: {self.out}\nstderr: {self.err}"


def run_stdin(text, *args):
    """Runs microbatch with `text` on its standard input (a pipe)."""
    return Result(subprocess.run([BINARY, *map(str, args)], input=text, capture_output=True, text=True,
                                 timeout=120, env=ENV))


def rules(res):
    """Each dataset's rule from `inspect --json` output."""
    assert res.code == 0, res
    return {n["path"]: n["rule"] for n in json.loads(res.out)["tree"] if n["kind"] == "dataset"}


@pytest.fixture
def expected(tmp_path, batch):
    """The rules inspect shows for SPEC read from a file."""
    return rules(run("inspect", batch, "-s", write_spec(tmp_path / "s.json", SPEC), "-n", 3, "--json"))


# --- specs from anywhere ----------------------------------------------------

def test_spec_from_standard_input(tmp_path, batch, expected):
    assert expected["/x"] != rules(run("inspect", batch, "-n", 3, "--json"))["/x"]  # the spec matters
    assert rules(run_stdin(json.dumps(SPEC), "inspect", batch, "-s", "-", "-n", 3, "--json")) == expected
    res = run_stdin(json.dumps(SPEC), "split", batch, "-s", "-", "-n", 3, "-o", tmp_path / "mb")
    assert res.code == 0, res
    with h5py.File(tmp_path / "mb" / "microbatch-00000.h5") as f:
        assert f["x"].shape == (10, 2)  # cut on axis 1
    res = run_stdin(json.dumps(SPEC), "merge", tmp_path / "mb", "-s", "-", "-o", tmp_path / "m.h5")
    assert res.code == 0, res
    assert h5diff(batch, tmp_path / "m.h5") == 0


def test_spec_from_process_substitution(tmp_path, batch, expected):
    """-s <(jq ...): bash passes /dev/fd/63, a pipe."""
    script = 'exec "$0" inspect "$1" -s <(printf %s "$2") -n 3 --json'
    proc = subprocess.run(["bash", "-c", script, BINARY, str(batch), json.dumps(SPEC)], capture_output=True,
                          text=True, timeout=120, env=ENV)
    assert rules(Result(proc)) == expected


def test_spec_from_a_fifo(tmp_path, batch, expected):
    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)

    def write():
        # Waits for a reader without blocking, so that a run that never opens the FIFO cannot hang the test.
        deadline = time.monotonic() + 120
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:  # ENXIO: no reader yet
                if time.monotonic() > deadline:
                    return
                time.sleep(0.01)
        os.set_blocking(fd, True)
        text = json.dumps(SPEC).encode()
        os.write(fd, text[:5])
        time.sleep(0.1)
        os.write(fd, text[5:])
        os.close(fd)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    res = run("inspect", batch, "-s", fifo, "-n", 3, "--json")
    writer.join()
    assert rules(res) == expected


def test_spec_json_inline(tmp_path, batch, expected):
    assert rules(run("inspect", batch, "--spec-json", json.dumps(SPEC), "-n", 3, "--json")) == expected
    run("split", batch, "--spec-json", '{"*": null, "x": 1}', "-n", 2, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "--spec-json", '{"*": null, "x": 1}', "-o", tmp_path / "m.h5", check=0)
    assert h5diff(batch, tmp_path / "m.h5") == 0


def test_spec_and_spec_json_together_is_a_usage_error(tmp_path, batch):
    spec = write_spec(tmp_path / "s.json", SPEC)
    for args in (["split", batch, "-n", 2, "-o", tmp_path / "mb"], ["inspect", batch], ["merge", batch, "-o",
                                                                                       tmp_path / "m.h5"]):
        res = run(*args, "-s", spec, "--spec-json", '{"*": 0}')
        assert_one_line_error(res, 2, "-s/--spec or --spec-json, not both")
    assert not (tmp_path / "mb").exists() and not (tmp_path / "m.h5").exists()


@pytest.mark.parametrize("text,needles", [
    ('{"*": 0', ["1:8"]),
    ('{"x": 0,, }', ["1:9"]),
    ('{"*": null, "nope": 0}', ["1:21", "names nothing in the file", "/nope"]),
])
def test_errors_name_stdin_and_spec_json_with_line_and_column(tmp_path, batch, text, needles):
    res = run_stdin(text, "split", batch, "-s", "-", "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "<stdin>:" + needles[0], *needles[1:])
    res = run("split", batch, "--spec-json", text, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "--spec-json:" + needles[0], *needles[1:])
    assert not (tmp_path / "mb").exists()


@pytest.mark.parametrize("make,needle", [
    (lambda p: p, "cannot read the spec: no such file"),
    (lambda p: (p.mkdir(), p)[1], "cannot read the spec: it is a directory"),
    (lambda p: "/dev/zero", "cannot read the spec: it is a character device"),
])
def test_spec_paths_that_cannot_be_read(tmp_path, batch, make, needle):
    """A missing file, a directory and a device: a clear error at once (a read
    from /dev/zero would never end)."""
    spec = make(tmp_path / "spec.json")
    for args in (["split", batch, "-s", spec, "-n", 2, "-o", tmp_path / "mb"], ["inspect", batch, "-s", spec],
                 ["merge", batch, "-s", spec, "-o", tmp_path / "m.h5"]):
        assert_one_line_error(run(*args), 1, f"{spec}: {needle}")
    assert not (tmp_path / "mb").exists() and not (tmp_path / "m.h5").exists()


# --- did you mean -------------------------------------------------------------

@pytest.mark.parametrize("args,needle", [
    (["splt", "{batch}"], "unknown command 'splt': did you mean split?"),
    (["mrege", "{batch}"], "unknown command 'mrege': did you mean merge?"),
    (["inspct", "{batch}"], "unknown command 'inspct': did you mean inspect?"),
    (["split", "{batch}", "-n", "2", "-o", "{tmp}/mb", "--dp-degre", "2"],
     "unknown option '--dp-degre' for split: did you mean --dp-degree?"),
    (["split", "{batch}", "-n", "2", "-o", "{tmp}/mb", "-dp-degree", "2"], "did you mean --dp-degree?"),
    (["split", "{batch}", "-n", "2", "--outpt", "{tmp}/mb"], "did you mean --output?"),
    (["split", "{batch}", "--micro-batch-szie", "3", "-o", "{tmp}/mb"], "did you mean --micro-batch-size?"),
    (["split", "{batch}", "-n", "2", "-o", "{tmp}/mb", "--spec-jsno", "{{}}"], "did you mean --spec-json?"),
    (["inspect", "{batch}", "--jsno"], "unknown option '--jsno' for inspect: did you mean --json?"),
    (["merge", "{batch}", "-o", "{tmp}/m.h5", "--virtaul"], "did you mean --virtual?"),
    (["--verison"], "unknown option '--verison': did you mean --version?"),
])
def test_typos_get_did_you_mean(tmp_path, batch, args, needle):
    res = run(*[a.format(batch=batch, tmp=tmp_path) for a in args])
    assert_one_line_error(res, 2, needle)
    assert not (tmp_path / "mb").exists() and not (tmp_path / "m.h5").exists()


@pytest.mark.parametrize("args,needle", [
    (["frobnicate"], "unknown command 'frobnicate' (expected split, merge, inspect, finish, verify, diff; see --help)"),
    (["inspect", "{batch}", "--json", "--bogus"], "--bogus"),
    (["split", "{batch}", "-n", "2", "-o", "{tmp}/mb", "-x"], "-x"),
])
def test_nothing_close_no_suggestion(tmp_path, batch, args, needle):
    res = run(*[a.format(batch=batch, tmp=tmp_path) for a in args])
    assert_one_line_error(res, 2, needle)
    assert "did you mean" not in res.err


@pytest.fixture
def named(tmp_path):
    path = tmp_path / "named.h5"
    with h5py.File(path, "w") as f:
        f["input_ids"] = np.arange(8).reshape(4, 2)
        f["labels"] = np.arange(4)
        f.attrs["step"] = 1
    return path


def test_misspelt_spec_key_suggests_the_member(tmp_path, named):
    spec = write_spec(tmp_path / "s.json", '{"input_id": 0, "labels": 0}')
    res = run("split", named, "-s", spec, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, 's.json:1:14: spec key "input_id" names nothing in the file: / has no member '
                          '/input_id; did you mean "input_ids"?')
    res = run("inspect", named, "--spec-json", '{"*": null, "@stpe": "replicate"}')
    assert_one_line_error(res, 1, 'has no attribute stpe; did you mean "@step"?')
    res = run("inspect", named, "--spec-json", '{"*": null, "zzz": 0}')
    assert_one_line_error(res, 1, "names nothing")
    assert "did you mean" not in res.err


def test_uncovered_member_says_how_to_cover_it(tmp_path, named):
    res = run("split", named, "--spec-json", '{"labels": 0}', "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "file member /input_ids is not covered by the spec",
                          'add a key "input_ids" for it, or "*": null')


# --- small things -------------------------------------------------------------

def test_version_names_the_tool_and_the_hdf5_library():
    expected = f"microbatch {project_version()} (HDF5 {h5py.version.hdf5_version})"
    assert re.fullmatch(r"microbatch \d+\.\d+\.\d+ \(HDF5 1\.10\.\d+\)", expected)
    for flag in ("--version", "-V"):
        res = run(flag, check=0)
        assert res.out.strip() == expected, res
        assert res.err == ""


def test_usage_lines_say_microbatch_not_the_path():
    res = run("--help", check=0)
    assert "Usage: microbatch [OPTIONS] SUBCOMMAND" in res.out, res
    for cmd in ["split", "merge", "inspect"]:
        res = run(cmd, "--help", check=0)
        assert f"Usage: microbatch {cmd} [OPTIONS]" in res.out, res
        assert BINARY not in res.out


@pytest.mark.parametrize("args,option", [
    (["split", "{batch}", "-n", "-3", "-o", "{tmp}/mb"], "-n/--chunks"),
    (["split", "{batch}", "--chunks", "-3", "-o", "{tmp}/mb"], "-n/--chunks"),
    (["split", "{batch}", "--micro-batch-size", "-3", "-o", "{tmp}/mb"], "--micro-batch-size"),
    (["split", "{batch}", "-n", "2", "--dp-degree", "-3", "-o", "{tmp}/mb"], "--dp-degree"),
    (["split", "{batch}", "-n", "2", "-j", "-3", "-o", "{tmp}/mb"], "-j/--jobs"),
    (["split", "{batch}", "-n", "2", "--buffer-size", "-3", "-o", "{tmp}/mb"], "--buffer-size"),
    (["split", "{batch}", "-n", "2", "--stall-timeout", "-3", "-o", "{tmp}/mb"], "--stall-timeout"),
    (["merge", "{batch}", "--dp-degree", "-3", "-o", "{tmp}/m.h5"], "--dp-degree"),
    (["merge", "{batch}", "--buffer-size", "-3", "-o", "{tmp}/m.h5"], "--buffer-size"),
    (["inspect", "{batch}", "-n", "-3"], "-n/--chunks"),
    (["inspect", "{batch}", "--micro-batch-size", "-3"], "--micro-batch-size"),
])
def test_negative_numbers_are_command_line_errors(tmp_path, batch, args, option):
    res = run(*[a.format(batch=batch, tmp=tmp_path) for a in args])
    assert_one_line_error(res, 2, f"{option}: -3 is negative; give a whole number")
    assert "1844674407370955" not in res.err
    assert not (tmp_path / "mb").exists() and not (tmp_path / "m.h5").exists()


def test_numbers_are_decimal(tmp_path, batch):
    """strtoull's base 0 would read 010 as 8 and 0x4 as 4."""
    assert json.loads(run("inspect", batch, "-n", "010", "--json", check=0).out)["chunks"] == 10
    assert_one_line_error(run("inspect", batch, "-n", "0x4"), 2, "-n/--chunks: '0x4' is not a whole number")
    assert_one_line_error(run("inspect", batch, "-n", "+4"), 2, "'+4' is not a whole number")


# --- places: a name with a scheme is a URL -----------------------------------------

# Schemes microbatch does not read or write: each is a usage error, never a local directory such as ./gs:/bkt/.
OTHER_URLS = ["gs://bkt/x/", "az://container/x/", "hdfs://namenode/x/", "abfss://c@acct.dfs.core.windows.net/x/",
              "GS://bkt/x/", "file:///tmp/x/"]


def place_commands(url, batch, split):
    """Every command and option that takes a place, each given `url` there (a directory or prefix URL)."""
    return [["split", batch, "-n", 2, "-o", url],
            ["split", url + "b.h5", "-n", 2, "-o", "out"],
            ["split", batch, "-n", 2, "-s", url + "spec.json", "-o", "out"],
            ["merge", url, "-o", "m.h5"],
            ["merge", split / "microbatch-00000.h5", url + "microbatch-00001.h5", "-o", "m.h5"],
            ["merge", split, "-o", url + "m.h5"],
            ["inspect", url + "b.h5"],
            ["diff", batch, url + "b.h5"],
            ["verify", url],
            ["finish", url]]


@pytest.mark.parametrize("url", OTHER_URLS)
def test_a_scheme_microbatch_does_not_take_is_a_usage_error(tmp_path, batch, url):
    split = tmp_path / "split"
    run("split", batch, "-n", 2, "-o", split, check=0)
    work = tmp_path / "work"
    work.mkdir()
    scheme = url.split("://")[0].lower()
    for argv in place_commands(url, batch, split):
        res = run(*argv, cwd=work)
        assert_one_line_error(res, 2, f"does not read or write {scheme}:// URLs", "s3://", "https://")
        assert listing(work) == [], (argv, listing(work))
    assert listing(split) == ["manifest.json", "microbatch-00000.h5", "microbatch-00001.h5"]


def test_a_spec_named_by_a_url_is_a_usage_error(tmp_path, batch):
    res = run("split", batch, "-n", 2, "-s", "s3://bkt/spec.json", "-o", "out", cwd=tmp_path)
    assert_one_line_error(res, 2, "-s/--spec: s3://bkt/spec.json is a URL", "local file")
    assert listing(tmp_path) == ["batch.h5"]


@pytest.mark.parametrize("name", ["a:b", "./c:d", "e:f/g"])
def test_a_path_holding_a_colon_stays_a_local_path(tmp_path, batch, name):
    run("split", batch, "-n", 2, "-o", name, cwd=tmp_path, check=0)
    assert listing(tmp_path / name) == ["manifest.json", "microbatch-00000.h5", "microbatch-00001.h5"]
    run("inspect", f"{name}/microbatch-00000.h5", cwd=tmp_path, check=0)
    run("merge", name, "-o", "x:y.h5", cwd=tmp_path, check=0)
    assert h5diff(batch, tmp_path / "x:y.h5") == 0


# --- the output directory of a failed split -------------------------------------

@pytest.fixture
def big(tmp_path):
    """4 MiB of data: its split fails under a 1 MiB file-size limit."""
    path = tmp_path / "big.h5"
    with h5py.File(path, "w") as f:
        f["d"] = np.arange(1 << 19, dtype=np.int64).reshape(1 << 10, 1 << 9)
    return path


def limit_file_size(nbytes):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failed_split_removes_the_directories_it_created(tmp_path, big, jobs):
    for out in (tmp_path / "mb", tmp_path / "new" / "deeper" / "mb"):
        res = run("split", big, "-n", 2, "-o", out, "-j", jobs, preexec_fn=limit_file_size(1 << 20))
        assert_one_line_error(res, 1, "microbatch-0000")
    assert sorted(os.listdir(tmp_path)) == ["big.h5"]


def test_a_failed_split_leaves_an_existing_directory_as_it_was(tmp_path, big):
    empty, full = tmp_path / "empty", tmp_path / "full"
    empty.mkdir()
    full.mkdir()
    (full / "notes.txt").write_text("mine")
    for out in (empty, full, tmp_path / "full" / "sub"):
        res = run("split", big, "-n", 2, "-o", out, preexec_fn=limit_file_size(1 << 20))
        assert_one_line_error(res, 1, "microbatch-0000")
    assert listing(empty) == [] and empty.is_dir()
    assert listing(full) == ["notes.txt"]


def test_an_interrupted_split_removes_the_directory_it_created(tmp_path):
    src = tmp_path / "big.h5"
    with h5py.File(src, "w") as f:
        f["d"] = np.zeros((128, 1 << 20), dtype=np.uint8)
    out = tmp_path / "new" / "mb"
    # SIGINT once the split has created its first output (the pause shim holds it there): mid-run.
    res = held_run(tmp_path, [BINARY, "split", src, "-n", 8, "-o", out, "--buffer-size", 1],
                   lambda proc: proc.send_signal(signal.SIGINT), resume=False)
    assert res.code == 130, res
    assert "interrupted by signal" in res.err, res
    assert not out.parent.exists(), listing(out)


def test_a_forced_exit_removes_the_directory_it_created(tmp_path):
    """The crash guard and the stop-signal grace period (io/run/guard) remove it too."""
    res = run("split", os.path.join(CORRUPT, "vlen-heap-segv-dataset.h5"), "-n", 2, "-o", tmp_path / "a" / "mb",
              env=LIBRARY_FAULT_ENV)
    assert_one_line_error(res, 1, "the HDF5 library crashed reading this (SIGSEGV)")
    assert not (tmp_path / "a").exists()
    argv = [BINARY, "split", os.path.join(CORRUPT, "vlen-heap-loop.h5"), "-n", 2, "-o", tmp_path / "b" / "mb",
            "--stall-timeout", 0]
    res = signalled_in_a_stuck_read(tmp_path, argv, signal.SIGTERM, env=LIBRARY_FAULT_ENV)
    assert res.code == 130 and "did not return in time" in res.err, res
    assert not (tmp_path / "b").exists()
    # That input loops while its tree is read, before the directory exists. Here the stuck call comes once it
    # does: held at the first output file, deaf to the signal as a library call is (the pause shim).
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["d"] = np.zeros((16, 1 << 20), dtype=np.uint8)
    res = held_run(tmp_path, [BINARY, "split", src, "-n", 8, "-o", tmp_path / "c" / "mb"],
                   lambda proc: proc.send_signal(signal.SIGTERM), env=dict(ENV, MB_TEST_PAUSE_DEAF="1"), resume=False)
    assert res.code == 130 and "did not return in time" in res.err, res
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("command", ["split", "merge", "inspect", "finish", "verify"])
def test_help_says_what_numbers_mean_not_the_validator(command):
    text = run(command, "--help", check=0).out
    assert "UINT" not in text and "[1 - " not in text, text
