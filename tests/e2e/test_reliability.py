"""Nothing lost or half-written, whatever goes wrong mid-run: SIGKILL at
random moments, file-size limits, unwritable outputs, corrupt inputs, limits."""
import os
import random
import resource
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

from conftest import (BINARY, CHECK_CLONES, ENV, assert_one_line_error, h5diff, held_run, listing, project_version,
                      run, signalled_in_a_stuck_read, wait_until, write_spec)

HERE = os.path.dirname(__file__)
CORRUPT = os.path.join(HERE, "..", "data", "corrupt")
SAMPLE = os.path.join(HERE, "..", "..", "sample_data", "batch.h5")


# Corrupt inputs make libhdf5 itself overrun its buffers (that is what these
# tests contain). Under AddressSanitizer, its memcpy interceptor would report
# the library's overrun before the crash guard sees the fault, so these runs
# ask ASan not to check intrinsics and string functions; our own code stays
# instrumented.
LIBRARY_FAULT_ENV = dict(ENV, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":replace_intrin=0:replace_str=0:intercept_strlen=0:intercept_strchr=0:intercept_strndup=0")


def finished_names(directory):
    return [f for f in listing(directory) if not f.startswith(".")]


@pytest.fixture(scope="module")
def medium(tmp_path_factory):
    """A batch that takes a noticeable time to split: gzip chunks, vlen strings, many datasets."""
    d = tmp_path_factory.mktemp("medium")
    path = d / "in.h5"
    rng = np.random.default_rng(5)
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=rng.standard_normal((256, 64, 256)).astype(np.float32), chunks=(8, 64, 256),
                         compression="gzip", compression_opts=4)
        f["text"] = np.array([f"row {i} " * (i % 9) for i in range(256)], dtype=h5py.string_dtype())
        for k in range(60):
            f[f"g/d{k}"] = np.arange(256 * 4).reshape(256, 4)
        f.attrs["step"] = 3
    spec = write_spec(d / "s.json", {"*": 0})
    run("split", path, "-s", spec, "-n", 6, "-o", d / "ref", check=0)
    started = time.monotonic()
    run("merge", d / "ref", "-o", d / "ref.h5", check=0)
    return path, spec, d / "ref", time.monotonic() - started


def timed_split(src, spec, out, *flags):
    """Splits `src` into 6 files (run(): checked); returns how long one such split took."""
    started = time.monotonic()
    run("split", src, "-s", spec, "-n", 6, "-o", out, "-q", *flags, check=0)
    return (time.monotonic() - started) / (2 if CHECK_CLONES else 1)  # run() then splits a second time


def test_sigkill_at_random_moments_never_leaves_a_finished_looking_output(tmp_path, medium):
    src, spec, ref, _ = medium
    rng = random.Random(11)
    kills = outcomes_complete = 0
    # Each kill comes at a random moment within 1.5 times the last whole split's time, on this machine as
    # loaded as it is now: the split before the loop, then each iteration's rerun.
    duration = timed_split(src, spec, tmp_path / "timed")
    for k in range(30):
        out = tmp_path / f"mb{k}"
        proc = subprocess.Popen([BINARY, "split", str(src), "-s", str(spec), "-n", "6", "-o", str(out), "-q"],
                                env=ENV, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, duration * 1.5))
        proc.kill()
        proc.wait()
        kills += proc.returncode == -signal.SIGKILL
        names = finished_names(out)
        if "manifest.json" in names:  # finished before the kill: everything must be there
            outcomes_complete += 1
            assert sorted(names) == sorted(listing(ref))
        # every file under a final name is a complete microbatch
        for name in names:
            if name.endswith(".h5"):
                assert h5diff(ref / name, out / name) == 0, name
        if out.exists() and "manifest.json" not in names:
            assert_one_line_error(run("merge", out, "-o", tmp_path / f"m{k}.h5"), 1, "no manifest")
        duration = timed_split(src, spec, out, "--force")
        assert finished_names(out) == listing(ref)
    assert kills >= 10  # most kills landed mid-run


def test_sigkill_during_merge_leaves_no_output_or_a_complete_one(tmp_path, medium):
    src, _, ref, duration = medium
    rng = random.Random(12)
    for k in range(20):
        out = tmp_path / f"m{k}.h5"
        proc = subprocess.Popen([BINARY, "merge", str(ref), "-o", str(out), "-q"], env=ENV,
                                stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, duration * 1.2))
        proc.kill()
        proc.wait()
        if out.exists():
            assert h5diff(src, out) == 0
        # A killed run's temporary, scratch file (its share of the re-encoded datasets) and lock file (nobody
        # holds it), nothing else.
        left = {f for f in listing(tmp_path) if f.startswith(f".m{k}.h5")}
        assert left <= {f".m{k}.h5.tmp-{proc.pid}", f".m{k}.h5.rank-0-of-1.scratch", f".m{k}.h5.lock"}, left
        if k % 4 == 0:  # a rerun onto the output removes them
            run("merge", ref, "-o", out, "--force", check=0)
            assert [f for f in listing(tmp_path) if f.startswith(f".m{k}.h5")] == []


def limit_file_size(nbytes):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))


@pytest.mark.parametrize("command", ["split", "merge"])
def test_a_stop_signal_after_the_last_byte_publishes_nothing(tmp_path, medium, command):
    # SIGTERM while the last output is being closed: past every copy loop's check, before publishing.
    path, spec, ref, _ = medium
    out = tmp_path / ("mb" if command == "split" else "m.h5")
    args = ["split", path, "-s", spec, "-n", 6, "-o", out] if command == "split" else ["merge", ref, "-o", out]
    closing = ".microbatch-00005.h5.tmp-" if command == "split" else ".m.h5.tmp-"
    res = held_run(tmp_path, [BINARY, *args], lambda proc: proc.send_signal(signal.SIGTERM), close=closing,
                   resume=False)
    assert res.code == 130, res
    # "interrupted by signal 15", or, when what is left to do outlasts the 3 s grace (a sanitizer build),
    # "interrupted, and the current read did not return in time": either way nothing is published.
    assert "interrupted" in res.err, res
    if command == "merge":
        assert not out.exists()
    else:
        assert not out.exists() or finished_names(out) == [], listing(out)
    assert [n for n in listing(tmp_path) if n.startswith(".")] == []


def test_file_size_limit_is_a_clean_error(tmp_path, medium):
    src, spec, _, _ = medium
    res = run("split", src, "-s", spec, "-n", 3, "-o", tmp_path / "mb", preexec_fn=limit_file_size(1 << 20))
    assert_one_line_error(res, 1, "microbatch-0000")
    assert not (tmp_path / "mb").exists()  # split created it, and removed it on failure
    res = run("merge", SAMPLE, SAMPLE, "-o", tmp_path / "m.h5", preexec_fn=limit_file_size(20000))
    assert_one_line_error(res, 1, "m.h5")
    assert listing(tmp_path) == []


def test_a_full_disk_is_exit_3_and_leaves_nothing(small_disk, medium):
    # No space left is the environment's failure, not the input's: a CI job may retry it elsewhere.
    src, spec, ref, _ = medium
    res = run("split", src, "-s", spec, "-n", 3, "-o", small_disk / "mb")
    assert_one_line_error(res, 3, "microbatch-0000", "No space left on device")
    res = run("merge", ref, "-o", small_disk / "m.h5")
    assert_one_line_error(res, 3, "m.h5", "No space left on device")
    assert listing(small_disk) == []


def test_a_full_disk_while_file_bytes_are_copied_is_exit_3(small_disk, tmp_path):
    # A contiguous dataset's rows are copied by the kernel (copy_file_range), not by HDF5: its ENOSPC too
    # is the environment's failure.
    src = tmp_path / "contiguous.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(1 << 20, dtype=np.float32).reshape(1024, 1024)  # 4 MiB, twice the disk
    res = run("split", src, "-n", 1, "-o", small_disk / "mb")
    assert_one_line_error(res, 3, "/x", "No space left on device")
    assert listing(small_disk) == []


def limit_memory(nbytes):
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))


@pytest.mark.skipif("ASAN_OPTIONS" in os.environ, reason="AddressSanitizer reserves terabytes of address space")
@pytest.mark.parametrize("workers", [1, 2])
def test_out_of_memory_names_the_object_and_the_buffer_size(tmp_path, workers):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        x = f.create_dataset("x", (48 * 1024, 1024), dtype="f8")  # 384 MiB
        for k in range(0, x.shape[0], 8192):
            x[k:k + 8192] = 1.0
    res = run("split", src, "-n", 2, "-j", workers, "-o", tmp_path / "mb", "--buffer-size", 4096,
              env=dict(ENV, MICROBATCH_NO_RAW_COPY="1"), preexec_fn=limit_memory(200 << 20))
    assert_one_line_error(res, 1, "in.h5: /x: out of memory", "--buffer-size")
    assert not (tmp_path / "mb").exists()
    # The advice works: the same run with a smaller buffer fits the same limit.
    run("split", src, "-n", 2, "-j", workers, "-o", tmp_path / "mb", "--buffer-size", 16,
        env=dict(ENV, MICROBATCH_NO_RAW_COPY="1"), preexec_fn=limit_memory(200 << 20), check=0)


def test_unwritable_outputs(tmp_path):
    # /proc refuses new files even to root
    assert_one_line_error(run("split", SAMPLE, "-n", 2, "-o", "/proc/microbatch-test"), 1,
                          "cannot create the output directory")
    assert_one_line_error(run("merge", SAMPLE, "-o", "/proc/microbatch-test.h5"), 1, "/proc/microbatch-test.h5")
    assert_one_line_error(run("merge", SAMPLE, "-o", tmp_path / "no" / "such" / "dir.h5"), 1, "dir.h5")


@pytest.mark.parametrize("name,needle", [
    ("vlen-heap-segv-dataset.h5", "the HDF5 library crashed reading this (SIGSEGV)"),
    ("vlen-heap-segv-attribute.h5", "the HDF5 library crashed reading this (SIGSEGV)"),
    ("vlen-heap-loop.h5", "no progress within --stall-timeout"),
    ("object-header-segv.h5", "the HDF5 library crashed reading this (SIGSEGV)"),
    ("object-header-strdup-overflow.h5", "the HDF5 library crashed reading this (SIGSEGV)"),
])
def test_library_crashes_and_hangs_on_corrupt_files_are_contained(tmp_path, name, needle):
    """Inputs on which libhdf5 1.10.8 itself crashes or loops (found by byte flips
    and by fuzz_h5read): a clean error naming the object, nothing written."""
    res = run("split", os.path.join(CORRUPT, name), "-n", 2, "-o", tmp_path / "mb", "--stall-timeout", 2,
              env=LIBRARY_FAULT_ENV)
    assert_one_line_error(res, 1, name, needle, "partial outputs removed")
    assert listing(tmp_path / "mb") == []


@pytest.mark.parametrize("command", ["split", "split -j 2", "merge"])
def test_a_crash_is_blamed_on_the_code_that_faulted(tmp_path, command):
    """A fault inside libhdf5 on a damaged file is the input's (exit 1); a fault of microbatch's own code, on a
    healthy file (MICROBATCH_TEST_FAULT, test-only), is a defect of microbatch (exit 4), never the input's."""
    out = tmp_path / "out"
    out.mkdir()  # merge's output goes in it

    def run_command(src, env):
        if command == "merge":
            return run("merge", src, src, "-o", out / "merged.h5", env=env)
        return run(*command.split(), src, "-n", 2, "-o", out, env=env)

    damaged = os.path.join(CORRUPT, "vlen-heap-segv-dataset.h5")
    res = run_command(damaged, LIBRARY_FAULT_ENV)
    assert_one_line_error(res, 1, "vlen-heap-segv-dataset.h5: /", "the HDF5 library crashed reading this (SIGSEGV); "
                          "the file is probably corrupt; partial outputs removed")
    assert "defect" not in res.err
    assert listing(out) == []
    res = run_command(SAMPLE, dict(ENV, MICROBATCH_TEST_FAULT="/labels"))
    assert_one_line_error(res, 4, "batch.h5: /labels: ", f"microbatch {project_version()} crashed (SIGSEGV) in its own "
                          "code: a defect of microbatch, not of the input; please report it; partial outputs removed")
    assert "corrupt" not in res.err
    assert listing(out) == []
    # Armed at an object the run never comes to: no fault, the run as usual.
    res = run_command(SAMPLE, dict(ENV, MICROBATCH_TEST_FAULT="/no/such/object"))
    assert res.code == 0, res


def test_corrupt_dataspace_class_is_a_clean_error(tmp_path):
    """fuzz_h5read under UBSan: an attribute whose dataspace class is outside
    libhdf5's enum (8) was loaded into the enum type (undefined behaviour)."""
    src = os.path.join(CORRUPT, "dataspace-class-out-of-range.h5")
    for args in (["inspect", src], ["split", src, "-n", 2, "-o", tmp_path / "mb"]):
        assert_one_line_error(run(*args), 1, "/@name", "cannot read the dataspace")
    assert listing(tmp_path / "mb") == []


def test_every_kept_corrupt_input_is_contained():
    """No corrupt input is kept without a test above."""
    kept = set(os.listdir(CORRUPT))
    tested = {"vlen-heap-segv-dataset.h5", "vlen-heap-segv-attribute.h5", "vlen-heap-loop.h5",
              "object-header-segv.h5", "object-header-strdup-overflow.h5", "dataspace-class-out-of-range.h5"}
    assert kept == tested


def test_time_stopped_is_not_a_stall(tmp_path):
    """split -j 2 stopped with SIGSTOP of its process group (a shell's Ctrl-Z,
    a batch system's suspend) for longer than --stall-timeout, then continued:
    it finishes, exactly."""
    src = tmp_path / "in.h5"
    rows = 16 * 1024
    values = np.random.default_rng(0).integers(0, 1000, size=(rows, 256)).astype(np.float32)
    with h5py.File(src, "w") as f:
        for name in "abcd":
            f.create_dataset(name, data=values, chunks=(1024, 256), compression="gzip", compression_opts=1)
    # Through hyperslabs, decompressed and compressed again: a run of a second or more.
    env = dict(ENV, MICROBATCH_NO_RAW_COPY="1")
    proc = subprocess.Popen([BINARY, "split", str(src), "-n", "4", "-j", "2", "-o", str(tmp_path / "mb"),
                             "--buffer-size", "1", "--stall-timeout", "1"], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Stopped again and again: a watchdog that counted the time stopped would fire at one of them (whichever
    # of its thread and the copy runs first after SIGCONT).
    for _ in range(4):
        time.sleep(0.2)
        if proc.poll() is not None:
            break
        os.killpg(proc.pid, signal.SIGSTOP)
        time.sleep(1.5)
        os.killpg(proc.pid, signal.SIGCONT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def reading_a_pipe(pid):
    """The main thread of `pid` waits in the kernel to read a pipe."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return "pipe" in f.read()  # pipe_read, anon_pipe_read; pipe_wait before Linux 5.6
    except OSError:
        return False


def test_a_spec_from_a_slow_pipe_is_not_a_stall(tmp_path):
    """-s - (or -s <(jq ...)) waits on the pipe's writer, not on the library:
    a spec that comes after --stall-timeout is read, not a "stuck" error."""
    proc = subprocess.Popen([BINARY, "split", SAMPLE, "-n", "2", "-s", "-", "-o", str(tmp_path / "mb"),
                             "--stall-timeout", "1"], env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    # The spec comes 2.5 s (more than --stall-timeout) after split began to wait for it on the pipe.
    wait_until(lambda: reading_a_pipe(proc.pid) or proc.poll() is not None, "split did not read its standard input")
    time.sleep(2.5)
    _, err = proc.communicate(b"null", timeout=60)
    assert proc.returncode == 0, err.decode()
    assert (tmp_path / "mb" / "manifest.json").exists()


def test_stop_signal_during_a_stuck_library_call_still_exits_clean(tmp_path):
    argv = [BINARY, "split", os.path.join(CORRUPT, "vlen-heap-loop.h5"), "-n", 2, "-o", tmp_path / "mb",
            "--stall-timeout", 0]
    res = signalled_in_a_stuck_read(tmp_path, argv, signal.SIGTERM, env=LIBRARY_FAULT_ENV)
    assert res.code == 130, res
    assert "did not return in time; partial outputs removed" in res.err
    assert listing(tmp_path / "mb") == []


def test_truncated_inputs_at_many_offsets(tmp_path):
    data = open(SAMPLE, "rb").read()
    codes = {}
    for cut in sorted(set(np.linspace(0, len(data) - 1, 40).astype(int))):
        bad = tmp_path / "cut.h5"
        bad.write_bytes(data[:cut])
        res = run("split", bad, "-n", 2, "-o", tmp_path / f"o{cut}", "--stall-timeout", 5, env=LIBRARY_FAULT_ENV)
        codes[cut] = res.code
        assert res.code == 1, (cut, res)
        assert len(res.err.strip().splitlines()) == 1 and "HDF5-DIAG" not in res.err
        assert finished_names(tmp_path / f"o{cut}") == []
    assert len(codes) >= 35


def test_random_byte_flips_never_crash_hang_or_leave_partial_output(tmp_path):
    data = open(SAMPLE, "rb").read()
    rng = random.Random(2026)
    seen = {0: 0, 1: 0}
    for t in range(150):
        mutant = bytearray(data)
        for _ in range(rng.choice([1, 4, 16])):
            # half of the flips land in the first 4 KiB, where the metadata is
            pos = rng.randrange(len(mutant)) if rng.random() < 0.5 else rng.randrange(4096)
            mutant[pos] = rng.randrange(256)
        bad = tmp_path / "flip.h5"
        bad.write_bytes(bytes(mutant))
        out = tmp_path / f"o{t}"
        res = run("split", bad, "-n", 2, "-o", out, "--stall-timeout", 3, env=LIBRARY_FAULT_ENV)
        assert res.code in (0, 1), (t, res)
        seen[res.code] += 1
        if res.code == 1:
            assert len(res.err.strip().splitlines()) == 1, (t, res)
            assert finished_names(out) == []
        else:
            assert "manifest.json" in finished_names(out)
    assert seen[1] > 0 and seen[0] > 0


def test_shapes_whose_element_count_overflows(tmp_path):
    src = tmp_path / "huge.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("huge", shape=(2**40, 2**30), maxshape=(None, None), chunks=(1, 1), dtype="u1")
        f["x"] = np.arange(4)
    assert_one_line_error(run("split", src, "-n", 2, "-o", tmp_path / "mb"), 1, "/huge", "more than 2^64 elements")
    assert listing(tmp_path / "mb") == []


def test_long_names_and_many_attributes(tmp_path):
    src = tmp_path / "names.h5"
    long_name = "n" * 10000
    with h5py.File(src, "w") as f:
        f[f"g/{long_name}"] = np.arange(6)
        for k in range(500):
            f["g"].attrs[f"a{k:03d}_" + "x" * 200] = k
    run("split", src, "-n", 3, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_values_larger_than_the_file_are_refused_before_allocating(tmp_path):
    """A dataspace can claim any size (corrupt, or a sparse chunked dataset);
    nothing read whole may need more memory than the file holds."""
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["tok"] = np.arange(10)
        f.create_dataset("cu", shape=(2**33,), dtype=np.int64, chunks=(1024,))  # 64 GiB claimed, nothing stored
    spec = write_spec(tmp_path / "s.json", {"tok": {"packed": "/cu"}, "cu": "offsets"})
    res = run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/cu", "claims 68719476736 bytes", "refusing to read it whole")
    assert listing(tmp_path / "mb") == []


def test_hard_link_cycles_and_deep_nesting_are_refused(tmp_path):
    src = tmp_path / "cycle.h5"
    with h5py.File(src, "w") as f:
        f["a/x"] = np.arange(4)
        f["a/b/back"] = f["a"]  # /a/b/back is /a again
    assert_one_line_error(run("split", src, "-n", 2, "-o", tmp_path / "mb"), 1, "/a/b/back", "cycle")
    assert listing(tmp_path / "mb") == []
    shared = tmp_path / "shared.h5"
    with h5py.File(shared, "w") as f:  # the same group under two names is no cycle
        f["a/x"] = np.arange(4)
        f["alias"] = f["a"]
    run("split", shared, "-n", 2, "-o", tmp_path / "ok", check=0)
    deep = tmp_path / "deep.h5"
    with h5py.File(deep, "w") as f:
        f.create_group("/".join(["g"] * 600))
    assert_one_line_error(run("inspect", deep), 1, "nested deeper than 512")
