"""Every bad input: one clear line, the documented exit code, nothing that
could pass for finished output, and the input untouched."""
import hashlib
import os
import signal

import h5py
import numpy as np
import pytest

from conftest import BINARY, ENV, assert_one_line_error, h5diff, held_run, listing, project_version, run


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


SPEC_ERRORS = [
    # (spec text, needles)
    ('{"x": 0, "y": 0}', ["batch.h5", "file member /t is not covered"]),
    ('{"*": null, "nope": 0}', ["s.json:1:21", "names nothing in the file", "/nope"]),
    ('{"*": null, "x": 2}', ["split axis 2 is out of range for /x of rank 2"]),
    ('{"*": null, "x": -3}', ["split axis -3 is out of range"]),
    ('{"*": null, "t": 0}', ["cannot split /t", "rank-0", 'give "replicate"; merge also takes a reducer']),
    ('{"*": null, "@nope": "replicate"}', ["has no attribute nope"]),
    ('{"*": null, "@step": {"reduce": "sum"}}', ["/@step", "a reducer only applies to merge", 'give "replicate"']),
    ('{"*": null, "y": {"reduce": "mean"}}', ["/y", "a reducer only applies to merge",
                                               'for split, give an axis, "replicate" or "drop"']),
    ('{"*": null,\n "x": [0]}', ["s.json:2:7", "/x, which is a dataset"]),
    ('{"*": null, "x": {"split_axs": 0}}', ["s.json:1:32", "/x, which is a dataset", 'no member "split_axs"',
                                           'did you mean "split_axis" (a leaf\'s key)?']),
    ('{"split_axs": 0}', ['spec key "split_axs" names nothing', 'did you mean "split_axis" (a leaf\'s key)?']),
    ('{"*": 0', ["s.json:1:8"]),
    ('{"x": 0,, }', ["s.json:1:9"]),
    ('', ["s.json:1:1"]),
    ('{"x": "cut", "*": null}', ["s.json:1:7", "unknown leaf spec \"cut\""]),
    ('{"x": "replicat", "*": null}', ["s.json:1:7", 'unknown leaf spec "replicat": did you mean "replicate"?']),
    ('{"x": 1.5, "*": null}', ["a spec cannot be a fraction"]),
    ('{"x": 0, "x": 0, "*": null}', ["duplicate key \"x\""]),
    ('{"x": 123456789012345678901234567890, "*": null}', ["out of range"]),
    ('[' * 5000 + ']' * 5000, ["nesting deeper than"]),
    ('{"x": 0, "*": null, "\xff": 0}', ["s.json"]),
]


@pytest.mark.parametrize("text,needles", SPEC_ERRORS)
def test_spec_errors_exit_1_name_the_place_and_write_nothing(tmp_path, batch, text, needles):
    before = digest(batch)
    spec = tmp_path / "s.json"
    spec.write_bytes(text.encode("utf-8", "surrogateescape") if "\xff" not in text else text.encode("latin-1"))
    res = run("split", batch, "-s", spec, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, *needles)
    assert listing(tmp_path / "mb") == []
    assert digest(batch) == before


@pytest.mark.parametrize("args,needles", [
    (["split"], ["input"]),
    (["split", "{batch}", "-o", "{tmp}/mb"], ["exactly one of -n/--chunks and --micro-batch-size"]),
    (["split", "{batch}", "-n", "2", "--micro-batch-size", "3", "-o", "{tmp}/mb"], ["excludes"]),
    (["split", "{batch}", "-n", "0", "-o", "{tmp}/mb"], ["at least 1"]),
    (["split", "{batch}", "-n", "-4", "-o", "{tmp}/mb"], ["-n"]),
    (["split", "{batch}", "-n", "abc", "-o", "{tmp}/mb"], ["abc"]),
    (["split", "{batch}", "-n", "1000000000000", "-o", "{tmp}/mb"], ["limit"]),
    (["split", "{batch}", "--micro-batch-size", "0", "-o", "{tmp}/mb"], ["at least 1"]),
    (["split", "{batch}", "-n", "2", "--on-short", "maybe", "-o", "{tmp}/mb"], ["maybe"]),
    (["split", "{batch}", "-n", "2"], ["--output"]),
    (["frobnicate"], ["unknown command 'frobnicate'"]),
    ([], ["subcommand"]),
    (["merge", "-o", "{tmp}/m.h5"], ["inputs"]),
    (["merge", "{tmp}", "{batch}", "-o", "{tmp}/m.h5"], ["one directory", "not both"]),
    (["inspect", "{batch}", "--json", "--bogus"], ["--bogus"]),
])
def test_command_line_errors_exit_2(tmp_path, batch, args, needles):
    res = run(*[a.format(batch=batch, tmp=tmp_path) for a in args])
    assert_one_line_error(res, 2, *needles)
    assert not (tmp_path / "mb").exists() and not (tmp_path / "m.h5").exists()


def test_help_and_version(tmp_path):
    for cmd in ["split", "merge", "inspect"]:
        res = run(cmd, "--help", check=0)
        assert "Example" in res.out and "--help" in res.out
    version = run("--version", check=0).out.strip()
    assert version.startswith(f"microbatch {project_version()} (HDF5 ")  # exactly: test_cli


@pytest.mark.parametrize("make,needles", [
    (lambda p: None, ["no such file"]),
    (lambda p: p.write_bytes(b""), ["not an HDF5 file"]),
    (lambda p: p.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100), ["missing.h5"]),
    (lambda p: p.mkdir(), ["not a regular file"]),
    (lambda p: os.mkfifo(p), ["not a regular file"]),
    (lambda p: os.symlink(p, p), ["missing.h5"]),
])
def test_unreadable_inputs_exit_1(tmp_path, make, needles):
    path = tmp_path / "missing.h5"
    make(path)
    commands = [["split", path, "-n", 2, "-o", tmp_path / "mb"], ["inspect", path]]
    if not path.is_dir():  # a directory is merge's manifest form, tested elsewhere
        commands.append(["merge", path, path, "-o", tmp_path / "m.h5"])
    for args in commands:
        assert_one_line_error(run(*args), 1, *needles)
    assert not (tmp_path / "mb").exists() or listing(tmp_path / "mb") == []
    assert not (tmp_path / "m.h5").exists()


def test_truncated_input_is_an_error_not_a_crash(tmp_path, batch):
    data = batch.read_bytes()
    for cut in [len(data) // 4, len(data) // 2, len(data) - 10]:
        bad = tmp_path / f"cut{cut}.h5"
        bad.write_bytes(data[:cut])
        res = run("split", bad, "-n", 2, "-o", tmp_path / f"mb{cut}")
        assert res.code == 1, res
        assert "HDF5-DIAG" not in res.err and len(res.err.strip().splitlines()) == 1
        assert [f for f in listing(tmp_path / f"mb{cut}") if not f.startswith(".")] == []


def test_unsupported_things_are_named(tmp_path):
    src = tmp_path / "refs.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(4)
        f.create_dataset("r", (2,), dtype=h5py.ref_dtype)
    assert_one_line_error(run("split", src, "-n", 2, "-o", tmp_path / "mb"), 1, "/r", "reference", "not supported")
    src = tmp_path / "soft.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(4)
        f["alias"] = h5py.SoftLink("/x")
    assert_one_line_error(run("split", src, "-n", 2, "-o", tmp_path / "mb"), 1, "/alias", "soft links")


def test_existing_output_needs_force_and_force_replaces_cleanly(tmp_path, batch):
    run("split", batch, "-n", 4, "-o", tmp_path / "mb", check=0)
    assert_one_line_error(run("split", batch, "-n", 2, "-o", tmp_path / "mb"), 1, "--force")
    assert len(listing(tmp_path / "mb")) == 5
    run("split", batch, "-n", 2, "-o", tmp_path / "mb", "--force", check=0)
    assert listing(tmp_path / "mb") == ["manifest.json", "microbatch-00000.h5", "microbatch-00001.h5"]


def test_output_path_that_is_a_file_or_unwritable(tmp_path, batch):
    (tmp_path / "file").write_text("x")
    assert_one_line_error(run("split", batch, "-n", 2, "-o", tmp_path / "file"), 1, "not a directory")
    assert_one_line_error(run("merge", batch, "-o", tmp_path), 1, "is a directory")
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        assert run("split", batch, "-n", 2, "-o", ro).code == 1


def test_inputs_never_change(tmp_path, batch):
    before = digest(batch)
    os.chmod(batch, 0o444)
    run("inspect", batch, check=0)
    run("split", batch, "-n", 3, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert digest(batch) == before


def test_split_force_never_removes_its_input(tmp_path, batch):
    run("split", batch, "-n", 2, "-o", tmp_path / "mb", check=0)
    inside = tmp_path / "mb" / "microbatch-00000.h5"
    before = digest(inside)
    res = run("split", inside, "-n", 2, "-o", tmp_path / "mb", "--force")
    assert_one_line_error(res, 1, "has a microbatch file name in the output directory")
    assert digest(inside) == before


# Where the run is held when the signal comes (conftest's pause shim): its first output file just created
# (handlers installed, output directory and lock taken, nothing copied yet), or that file written to its last
# byte and being closed (the files made as copies of it still to come). A finished-looking output after the
# signal, an exit other than the handler's, or a temporary left behind fails the test.
HELD_AT = {"first output created": None, "first output written": ".microbatch-00000.h5.tmp-"}


@pytest.mark.parametrize("held", list(HELD_AT))
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_run_leaves_nothing_that_passes_for_output(tmp_path, sig, held):
    src = tmp_path / "big.h5"
    with h5py.File(src, "w") as f:
        f["d"] = np.zeros((128, 1 << 20), dtype=np.uint8)  # 128 MiB: 16 MiB a file, 16 copy blocks of 1 MiB
    out = tmp_path / "mb"
    res = held_run(tmp_path, [BINARY, "split", src, "-n", 8, "-o", out, "--buffer-size", 1],
                   lambda proc: proc.send_signal(sig), close=HELD_AT[held], resume=False)
    assert res.code == 130, res
    assert "interrupted by signal" in res.err, res
    assert listing(out) == [], listing(out)


def test_a_spec_that_splits_nothing_is_refused_unless_copies_are_asked_for(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(6)
        f["y"] = np.arange(6.0)
    res = run("split", src, "--spec-json", '{"*": "replicate"}', "-n", 3, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "the spec splits no dataset", "each of the 3 files would be a whole copy",
                          "--allow-copies")
    assert not (tmp_path / "mb").exists()
    res = run("inspect", src, "--spec-json", '{"*": "replicate"}', "-n", 3)
    assert_one_line_error(res, 1, "the spec splits no dataset")
    run("split", src, "--spec-json", '{"*": "replicate"}', "-n", 3, "--allow-copies", "-o", tmp_path / "mb",
        check=0)
    for k in range(3):
        assert h5diff(src, tmp_path / "mb" / f"microbatch-{k:05}.h5") == 0


def test_a_dimension_no_dataset_has_is_refused_naming_those_there_are(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["time"] = np.arange(4.0)
        f["time"].make_scale("time")
        f["v"] = np.zeros((4, 3))
        f["v"].dims[0].attach_scale(f["time"])
    for dim, needles in [("depth", []), ("tme", ['did you mean "time"?'])]:
        res = run("split", src, "--spec-json", f'{{"*": {{"dim": "{dim}"}}}}', "-n", 2, "-o", tmp_path / "mb")
        assert_one_line_error(res, 1, "--spec-json:1:7", f'has dimension "{dim}"', '(theirs are "time")', *needles)
        assert not (tmp_path / "mb").exists()


@pytest.mark.parametrize("command", ["split", "merge", "finish"])
def test_several_tasks_of_a_launcher_are_told_to_run_microbatch_mpi(tmp_path, batch, command):
    """microbatch (no MPI) started as task 0 of 2 by mpirun (its variables, without mpirun): the one line says
    what to run instead, the installed microbatch-mpi, not how to rebuild."""
    out = tmp_path / "out"
    args = {"split": ["split", batch, "-n", 2, "-o", out], "merge": ["merge", batch, "-o", out / "m.h5"],
            "finish": ["finish", out]}[command]
    res = run(*args, env=dict(ENV, OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_RANK="0"))
    assert_one_line_error(res, 2, "started as task 0 of 2 by mpirun", "cannot cooperate",
                          "launch microbatch-mpi instead")
    assert "cmake" not in res.err and "MB_MPI" not in res.err, res
    assert not out.exists()
