"""Shared helpers for the end-to-end tests: run the built binary, write HDF5
files with h5py, judge results with h5diff (an independent implementation)."""
import filecmp
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import h5py
import numpy as np
import jsonschema
import pytest

import servers  # noqa: E402
from h5compare import h5diff  # noqa: F401  (the one strict comparison every test uses)
from batches import MIXED_SPEC, make_layout_batch, make_mixed_batch, make_packed  # noqa: F401  (the shared builders)

BINARY = os.environ.get("MICROBATCH", os.path.join(os.path.dirname(__file__), "..", "..", "build", "microbatch"))


class Result:
    def __init__(self, proc):
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def __repr__(self):
        return f"exit {self.code}\nstdout: {self.out}\nstderr: {self.err}"


# Every run also checks that no HDF5 handle is left open at exit (exit 70 if one is), and sees none of the
# machine's AWS settings (servers.AWS_ISOLATED).
ENV = servers.aws_isolated(dict(os.environ, MICROBATCH_CHECK_HANDLES="1"))


# Set (the gcc build's ctest sets it): every local split a test makes is made again with copies of model files
# off, and must write the same bytes (io/split/clone.hpp). So every datatype, layout and spec the suite knows
# is a case of the proof that a file written as a copy is the file libhdf5 would have written.
CHECK_CLONES = os.environ.get("MICROBATCH_CHECK_CLONES") == "1"


def run(*args, check=None, **kwargs):
    """Runs microbatch; `check` asserts the exit code."""
    args = [str(a) for a in args]
    env = kwargs.pop("env", ENV)
    proc = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, env=env, **kwargs)
    res = Result(proc)
    if check is not None:
        assert res.code == check, res
    if CHECK_CLONES and res.code == 0:
        split_again_without_copies(args, env, kwargs.get("cwd"))
    return res


def split_again_without_copies(args, env, cwd):
    """The split `args` made, made again into a new directory with MICROBATCH_NO_CLONES: every .h5 file the
    first wrote must be the same bytes. Remote inputs are left out (their tests count requests)."""
    if not args or args[0] != "split" or "-o" not in args or "MICROBATCH_NO_CLONES" in env:
        return
    if any(a.startswith(("http://", "https://", "s3://")) for a in args):
        return
    k = args.index("-o") + 1
    first = os.path.join(cwd or os.getcwd(), args[k])
    again = tempfile.mkdtemp(prefix="no-clones-")
    try:
        out = os.path.join(again, "out")
        proc = subprocess.run([BINARY, *args[:k], out, *args[k + 1:]], capture_output=True, timeout=600,
                              stdin=subprocess.DEVNULL, env=dict(env, MICROBATCH_NO_CLONES="1"), cwd=cwd)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        for name in (n for n in os.listdir(out) if n.endswith(".h5")):  # none for a shard without files
            assert filecmp.cmp(os.path.join(first, name), os.path.join(out, name), shallow=False), \
                f"{name}: written as a copy, not the bytes libhdf5 writes"
    finally:
        shutil.rmtree(again)


def write_spec(path, spec):
    with open(path, "w") as f:
        if isinstance(spec, str):
            f.write(spec)
        else:
            json.dump(spec, f)
    return path


def listing(directory):
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


def assert_one_line_error(res, code, *needles):
    """A failed run: the exit code, one line on stderr naming what it is about."""
    assert res.code == code, res
    lines = [l for l in res.err.splitlines() if l.strip()]
    assert len(lines) == 1, res
    assert lines[0].startswith("microbatch: error: "), res
    for n in needles:
        assert n in lines[0], res
    assert "HDF5-DIAG" not in res.err


@pytest.fixture
def batch(tmp_path):
    """A small batch with a split tensor, a rank-0 scalar and root attributes."""
    path = tmp_path / "batch.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(40, dtype=np.int64).reshape(10, 4)
        f["y"] = np.arange(10, dtype=np.float32)
        f["t"] = np.float32(0.5)
        f.attrs["step"] = 7
    return path


# An LD_PRELOAD shim that holds microbatch up for 2 minutes right after it has
# created its first output file (every process of it: -j workers as well), so
# that a test can kill it halfway through its work at the same point every
# time; the file named by MB_TEST_PAUSED appears once it is there (a stop
# signal sent from then on ends the hold, whenever it lands). With
# MB_TEST_PAUSE_CLOSE, it holds instead just before it closes the first file
# whose name contains that text (after the last byte is written, before the
# output is published). With MB_TEST_RESUME, it goes on as soon as that file
# exists (a test changes something meanwhile). A signal ends the wait early
# (with MB_TEST_PAUSE_DEAF it does not: a call stuck in the library), and a
# test run that dies leaves no process behind for long. Each held process
# also creates MB_TEST_PAUSED.PID. Apart from holding: the file named by
# MB_TEST_ENTERED appears when the process enters its first read of
# variable-length data (H5Dread, H5Aread), just before the library's code
# runs: for an input whose heap loops, proof that the process is in a call
# that never returns, with no check for a stop signal left before it.
PAUSE_SHIM = r"""#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
typedef int64_t hid_t;
typedef int herr_t;
typedef hid_t (*create_fn)(const char*, unsigned, hid_t, hid_t);
typedef herr_t (*close_fn)(hid_t);
typedef ssize_t (*name_fn)(hid_t, char*, size_t);
typedef herr_t (*dread_fn)(hid_t, hid_t, hid_t, hid_t, hid_t, void*);
typedef herr_t (*aread_fn)(hid_t, hid_t, void*);
typedef int (*class_fn)(hid_t);
typedef int (*detect_fn)(hid_t, int);
/* While a process is held, a stop signal goes through on_stop, which notes it and calls the run's own
   handler. The note, not an interrupted sleep, ends the wait: the signal may come while the held thread
   is between two sleeps, or be taken by another of the process's threads. */
static const int stop_signals[3] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction run_handlers[3];
static volatile sig_atomic_t stop_seen = 0;
static void on_stop(int sig, siginfo_t* info, void* context) {
  stop_seen = 1;
  for (int k = 0; k < 3; ++k) {
    if (stop_signals[k] != sig) continue;
    const struct sigaction* run = &run_handlers[k];
    if (run->sa_flags & SA_SIGINFO) {
      run->sa_sigaction(sig, info, context);
    } else if (run->sa_handler == SIG_DFL) {
      signal(sig, SIG_DFL);
      raise(sig);
    } else if (run->sa_handler != SIG_IGN) {
      run->sa_handler(sig);
    }
  }
}
static void hold(void) {
  const char* marker = getenv("MB_TEST_PAUSED");
  if (!marker) return;
  unsetenv("MB_TEST_PAUSED");
  struct sigaction noting;
  memset(&noting, 0, sizeof noting);
  noting.sa_sigaction = on_stop;
  noting.sa_flags = SA_SIGINFO;
  sigemptyset(&noting.sa_mask);
  for (int k = 0; k < 3; ++k) sigaction(stop_signals[k], &noting, &run_handlers[k]);
  char mine[4096];  /* MARKER.PID as well: which of a run's processes are held */
  snprintf(mine, sizeof mine, "%s.%d", marker, (int)getpid());
  close(open(mine, O_CREAT | O_WRONLY, 0644));
  close(open(marker, O_CREAT | O_WRONLY, 0644));
  const char* resume = getenv("MB_TEST_RESUME");
  const int deaf = getenv("MB_TEST_PAUSE_DEAF") != NULL;  /* a call stuck in the library: signals do not end it */
  for (int i = 0; i < 12000 && !(resume && access(resume, F_OK) == 0) && !(stop_seen && !deaf); ++i)
    usleep(10000);
  for (int k = 0; k < 3; ++k) sigaction(stop_signals[k], &run_handlers[k], NULL);
}
hid_t H5Fcreate(const char* name, unsigned flags, hid_t fcpl, hid_t fapl) {
  hid_t id = ((create_fn)dlsym(RTLD_NEXT, "H5Fcreate"))(name, flags, fcpl, fapl);
  if (!getenv("MB_TEST_PAUSE_CLOSE") && !getenv("MB_TEST_PAUSE_RENAME")) hold();
  return id;
}
/* MB_TEST_PAUSE_RENAME: held before the first rename (or its hard-link fallback) onto a path that holds it. */
static void before_rename(const char* to) {
  const char* which = getenv("MB_TEST_PAUSE_RENAME");
  if (which && to && strstr(to, which)) hold();
}
typedef int (*renameat2_fn)(int, const char*, int, const char*, unsigned);
int renameat2(int olddirfd, const char* from, int newdirfd, const char* to, unsigned flags) {
  before_rename(to);
  return ((renameat2_fn)dlsym(RTLD_NEXT, "renameat2"))(olddirfd, from, newdirfd, to, flags);
}
typedef int (*rename_fn)(const char*, const char*);
int rename(const char* from, const char* to) {
  before_rename(to);
  return ((rename_fn)dlsym(RTLD_NEXT, "rename"))(from, to);
}
int link(const char* from, const char* to) {
  before_rename(to);
  return ((rename_fn)dlsym(RTLD_NEXT, "link"))(from, to);
}
herr_t H5Fclose(hid_t id) {
  const char* which = getenv("MB_TEST_PAUSE_CLOSE");
  char name[4096];
  if (which && ((name_fn)dlsym(RTLD_NEXT, "H5Fget_name"))(id, name, sizeof name) > 0 && strstr(name, which)) hold();
  return ((close_fn)dlsym(RTLD_NEXT, "H5Fclose"))(id);
}
static void entering_read(hid_t type) {
  const char* marker = getenv("MB_TEST_ENTERED");
  if (!marker) return;
  const int string_class = 3, vlen_class = 9;  /* H5T_STRING, H5T_VLEN */
  const int vlen = ((detect_fn)dlsym(RTLD_DEFAULT, "H5Tdetect_class"))(type, vlen_class) > 0 ||
                   (((class_fn)dlsym(RTLD_DEFAULT, "H5Tget_class"))(type) == string_class &&
                    ((class_fn)dlsym(RTLD_DEFAULT, "H5Tis_variable_str"))(type) > 0);
  if (!vlen) return;
  unsetenv("MB_TEST_ENTERED");
  close(open(marker, O_CREAT | O_WRONLY, 0644));
}
herr_t H5Dread(hid_t dset, hid_t type, hid_t mem_space, hid_t file_space, hid_t dxpl, void* buf) {
  entering_read(type);
  return ((dread_fn)dlsym(RTLD_NEXT, "H5Dread"))(dset, type, mem_space, file_space, dxpl, buf);
}
herr_t H5Aread(hid_t attr, hid_t type, void* buf) {
  entering_read(type);
  return ((aread_fn)dlsym(RTLD_NEXT, "H5Aread"))(attr, type, buf);
}
"""


def pause_shim(directory):
    """Builds the pause shim as `directory`/pause.so (gcc); returns its path."""
    source, shim = os.path.join(directory, "pause.c"), os.path.join(directory, "pause.so")
    with open(source, "w") as f:
        f.write(PAUSE_SHIM)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", shim, source, "-ldl"], check=True, timeout=120)
    return shim


def held_run(tmp_path, argv, during, env=None, close=None, resume=True, rename=None):
    """Runs `argv` (a command line: microbatch's, or mpirun's) under the pause shim, held after it
    created its first output file (or, with `close`, before it closes the first file whose name holds
    it; with `rename`, before it renames something onto the first path that holds it); runs
    `during(proc)` then, and lets it go on (without `resume`, only a signal that reaches the held
    process does: `during` sends one). Returns its Result."""
    held = dict(env or ENV, LD_PRELOAD=pause_shim(tmp_path), MB_TEST_PAUSED=str(tmp_path / "paused"),
                MB_TEST_RESUME=str(tmp_path / "resume"))
    if close:
        held["MB_TEST_PAUSE_CLOSE"] = close
    if rename:
        held["MB_TEST_PAUSE_RENAME"] = rename
    proc = subprocess.Popen([str(a) for a in argv], env=held, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (tmp_path / "paused").exists() or proc.poll() is not None,
                   "the run did not reach the point it is held at")
        assert (tmp_path / "paused").exists(), f"exit {proc.returncode} before the point it is held at"
        during(proc)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    if resume:
        (tmp_path / "resume").touch()
    out, err = proc.communicate(timeout=150)
    return Result(subprocess.CompletedProcess(argv, proc.returncode, out, err))


def signalled_in_a_stuck_read(tmp_path, argv, sig, env=None):
    """Runs `argv` (microbatch's command line, on an input whose variable-length data loops in the library)
    under the pause shim and sends it `sig` once it has entered its first read of such data (MB_TEST_ENTERED):
    the signal comes while it is in a call that does not return. Returns its Result."""
    return in_a_stuck_read(tmp_path, argv, lambda proc: proc.send_signal(sig), env)


def in_a_stuck_read(tmp_path, argv, during, env=None):
    """Runs `argv` as signalled_in_a_stuck_read does, and `during(proc)` once it is in the read that does not
    return. Returns its Result."""
    entered = tmp_path / "entered"
    watched = dict(env or ENV, LD_PRELOAD=pause_shim(tmp_path), MB_TEST_ENTERED=str(entered))
    proc = subprocess.Popen([str(a) for a in argv], env=watched, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: entered.exists() or proc.poll() is not None, "the run did not read variable-length data")
        assert entered.exists(), f"exit {proc.returncode} before it read variable-length data"
        during(proc)
        out, err = proc.communicate(timeout=60)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return Result(subprocess.CompletedProcess(argv, proc.returncode, out, err))


def wait_until(condition, what, timeout=120):
    """Polls `condition` until it holds; the deadline only bounds a run that never gets there."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} after {timeout} s"
        time.sleep(0.05)


def alive(pid):
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children(pid):
    found = []
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{p}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(p))
        except OSError:
            pass
    return found


SCHEMAS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "schema")


def project_version():
    """The version CMake's project() declares: the one place it is written."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "CMakeLists.txt")) as f:
        return re.search(r"^project\(microbatch VERSION (\d+\.\d+\.\d+)", f.read(), re.M).group(1)


def schema(name):
    with open(os.path.join(SCHEMAS, f"{name}.schema.json")) as f:
        s = json.load(f)
    jsonschema.Draft7Validator.check_schema(s)
    return s


def summary(res, name):
    """The one JSON object on stdout (split/merge --json, inspect --json), validated against its schema."""
    obj = json.loads(res.out)  # the whole of stdout is one object
    jsonschema.validate(obj, schema(name))
    return obj


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs (as root; skipped where mounting is not allowed), unmounted at the end."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)
