"""microbatch under a real one-node Slurm cluster (munged, slurmctld, slurmd)
that this file starts and stops (slurm_cluster.py): job arrays of shards with
a dependent finish, run with the very sbatch scripts docs/cluster.md shows
(examples/slurm/), a killed array task and its rerun, srun and sbatch
--ntasks with a build that cannot cooperate, and srun --mpi=pmix with an MPI
build (MICROBATCH_MPI). Every result is judged against a one-process split
(cmp) and every round trip against the input (h5diff)."""
import os
import re
import shlex
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from conftest import (BINARY, MIXED_SPEC, assert_one_line_error, h5diff, listing, make_mixed_batch, pause_shim,
                      run, wait_until, write_spec)
from slurm_cluster import Cluster, ClusterError
from test_shards import same_files

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
EXAMPLES = os.path.abspath(os.path.join(ROOT, "examples", "slurm"))
SPLIT = os.path.join(EXAMPLES, "split.sbatch")
FINISH = os.path.join(EXAMPLES, "finish.sbatch")
MPI_SCRIPT = os.path.join(EXAMPLES, "mpi.sbatch")
PIPELINE = os.path.join(EXAMPLES, "pipeline.sh")
SAMPLE = os.path.abspath(os.path.join(ROOT, "sample_data"))
N = 7  # microbatch files: 4 shards get 1, 2, 2 and 2 of them


@pytest.fixture(scope="module")
def slurm():
    """The cluster, shared by this file's tests. It not starting is a failure
    (with the daemons' logs), not a skip, except for a user who is not root."""
    if os.geteuid() != 0:
        pytest.skip("the Slurm test cluster needs root")
    cluster = Cluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def job_env(slurm, tmp_path):
    """Environment for submitting: the cluster's SLURM_CONF, `microbatch` on
    PATH (as the scripts expect), handle checks on. sbatch passes it on to the jobs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(os.path.abspath(BINARY), bin_dir / "microbatch")
    if os.environ.get("MICROBATCH_MPI"):
        os.symlink(os.path.abspath(os.environ["MICROBATCH_MPI"]), bin_dir / "microbatch-mpi")
    return dict(slurm.env, PATH=f"{bin_dir}:{os.environ['PATH']}", MICROBATCH_CHECK_HANDLES="1")


@pytest.fixture
def data(tmp_path):
    """The input, its spec and the one-process split everything is compared with."""
    src = make_mixed_batch(tmp_path / "in.h5")
    spec = write_spec(tmp_path / "s.json", MIXED_SPEC)
    plain = tmp_path / "plain"
    run("split", src, "-s", spec, "-n", N, "-o", plain, check=0)
    return src, spec, plain


def job_logs(directory):
    """Every job's output file, for failure messages."""
    return "\n".join(f"--- {p.name}\n{p.read_text()}" for p in sorted(directory.glob("*.out")))


def assert_states(slurm, states, expected, logs_dir):
    got = {job: state for job, (state, _) in states.items()}
    assert got == expected, f"{states}\n{job_logs(logs_dir)}\n{slurm.logs()}"


def round_trip(src, plain, out, tmp_path):
    """The sharded directory is the one-process split, file for file and
    manifest byte for byte; merging it gives the input back."""
    same_files(plain, out)
    assert not any(n.startswith("part-") for n in listing(plain))
    merged = tmp_path / "merged.h5"
    run("merge", out, "-o", merged, check=0)
    assert h5diff(src, merged) == 0


def submit_split(slurm, env, logs, array, src, spec, out):
    """The cluster page's array submission, with this test's array and log directory."""
    return slurm.sbatch(f"--array={array}", f"--output={logs}/%x-%A_%a.out", SPLIT, src, spec, out, N, env=env)


def submit_finish(slurm, env, logs, out, after=None):
    dependency = [f"--dependency=afterok:{after}"] if after else []
    return slurm.sbatch(*dependency, f"--output={logs}/%x-%j.out", FINISH, out, env=env)


# -- the cluster page's scripts ----------------------------------------------------------


def blocks_text(blocks):
    return "\n".join(line.strip() for block in blocks for line in block.splitlines())


def test_cluster_page_shows_the_example_scripts_verbatim():
    with open(os.path.join(ROOT, "docs", "cluster.md")) as f:
        readme = f.read()
    blocks = re.findall(r"^ *```bash\n(.*?)^ *```", readme, flags=re.S | re.M)
    for name in ["split.sbatch", "finish.sbatch", "mpi.sbatch", "train.sbatch", "merge.sbatch", "pipeline.sh"]:
        with open(os.path.join(EXAMPLES, name)) as f:
            assert f.read() in blocks, f"docs/cluster.md does not show examples/slurm/{name} as it is"
        assert f"examples/slurm/{name}" in readme
        assert os.access(os.path.join(EXAMPLES, name), os.X_OK)
    # The submissions the page shows are the ones the tests make (submit_split, submit_finish).
    for command in ["JOB=$(sbatch --parsable --array=0-7 examples/slurm/split.sbatch batch.h5 spec.json /shared/mb 64)",
                    "JOB=$(MB_SHARDS=8 sbatch --parsable --array=2 examples/slurm/split.sbatch batch.h5 spec.json "
                    "/shared/mb 64)",
                    "sbatch --dependency=afterok:$JOB examples/slurm/finish.sbatch /shared/mb",
                    "sbatch --ntasks=4 examples/slurm/mpi.sbatch batch.h5 spec.json /shared/mb 64 /shared/merged.h5",
                    "examples/slurm/pipeline.sh batch.h5 spec.json /shared/mb 64 examples/slurm/train.sbatch "
                    "/shared/out outputs_spec.json /shared/outputs.h5"]:
        assert command in blocks_text(blocks), command


# -- job arrays ---------------------------------------------------------------------


def test_array_of_shards_then_dependent_finish(slurm, job_env, data, tmp_path):
    src, spec, plain = data
    out, logs = tmp_path / "mb", tmp_path / "logs"
    logs.mkdir()
    job = submit_split(slurm, job_env, logs, "0-3", src, spec, out)
    fin = submit_finish(slurm, job_env, logs, out, after=job)
    states = slurm.wait(job, fin)
    assert_states(slurm, states, {**{f"{job}_{k}": "COMPLETED" for k in range(4)}, fin: "COMPLETED"}, logs)
    assert sorted(n for n in listing(out) if n.startswith("part-")) == [f"part-{k:05}-of-00004.json"
                                                                          for k in range(4)]
    round_trip(src, plain, out, tmp_path)


# The test's stand-in for microbatch: in array task MB_TEST_VICTIM, "pause"
# loads conftest's pause shim (the task is killed while held up in its first
# output file), "fail" sets a file size limit of 1 KiB (microbatch ignores
# SIGXFSZ: its first write past 1 KiB fails, halfway through a microbatch file).
VICTIM = """#!/bin/bash
if [ "${SLURM_ARRAY_TASK_ID:-}" = "${MB_TEST_VICTIM:-}" ]; then
  case $MB_TEST_HOW in
    pause) export LD_PRELOAD=$MB_TEST_DIR/pause.so MB_TEST_PAUSED=$MB_TEST_DIR/paused ;;
    fail) ulimit -f 1 ;;
  esac
fi
exec REAL "$@"
"""


# scancel: SIGCONT, SIGTERM (microbatch removes its partial outputs, exit 130),
# SIGKILL after KillWait; so is scancel --signal=KILL of a batch job. With
# --batch, the batch script's process (microbatch) gets a SIGKILL at once:
# its hidden temporaries stay.
KILLS = {"scancel": (["scancel"], "CANCELLED"),
         "scancel --batch --signal=KILL": (["scancel", "--batch", "--signal=KILL"], "FAILED"),
         "write fails": (None, "FAILED")}


@pytest.mark.parametrize("kill", list(KILLS))
def test_a_killed_array_task_is_named_by_finish_and_rerun_alone(slurm, job_env, data, tmp_path, kill):
    src, spec, plain = data
    out, logs = tmp_path / "mb", tmp_path / "logs"
    logs.mkdir()
    command, state = KILLS[kill]
    wrapper = tmp_path / "bin" / "microbatch"
    wrapper.unlink()
    wrapper.write_text(VICTIM.replace("REAL", shlex.quote(os.path.abspath(BINARY))))
    wrapper.chmod(0o755)
    if command:
        pause_shim(tmp_path)
    env = dict(job_env, MB_TEST_VICTIM="2", MB_TEST_HOW="pause" if command else "fail", MB_TEST_DIR=str(tmp_path))
    job = submit_split(slurm, env, logs, "0-3", src, spec, out)
    fin = submit_finish(slurm, env, logs, out, after=job)
    victim = f"{job}_2"
    if command:
        wait_until((tmp_path / "paused").exists, "the victim did not start its first file")
        assert any(".h5.tmp-" in n for n in listing(out)), listing(out)  # halfway through a file
        slurm.command(*command, victim)
    states = slurm.wait(job, fin)
    assert_states(slurm, states, {f"{job}_0": "COMPLETED", f"{job}_1": "COMPLETED", f"{job}_3": "COMPLETED",
                                  victim: state, fin: "CANCELLED"}, logs)
    log = (logs / f"mb-split-{job}_2.out").read_text()
    if kill == "write fails":
        assert states[victim][1] == "1:0", states
        lines = log.splitlines()
        assert lines[0].startswith(f"== job {job}_2 attempt 0 ") and len(lines) == 2, log  # the attempt, one error
        assert "File too large" in lines[1], log
    elif kill == "scancel":
        # "interrupted by signal 15", or, when the write it was held in outlasts the 3 s grace (a loaded
        # machine), "interrupted, and the current read did not return in time": both remove what it wrote.
        assert "interrupted" in log and "partial outputs removed" in log, log
        assert not any(".h5.tmp-" in n for n in listing(out)), listing(out)  # partial outputs removed
    else:
        assert states[victim][1] == "0:9", states
        assert any(".h5.tmp-" in n for n in listing(out)), listing(out)  # its temporaries, left behind
    assert not (out / "manifest.json").exists()
    assert not (out / "part-00002-of-00004.json").exists()

    # finish, run on its own, names the shard and writes no manifest.
    again = submit_finish(slurm, job_env, logs, out)
    assert slurm.wait(again)[again] == ("FAILED", "1:0")
    res = run("finish", out)
    assert_one_line_error(res, 1, "part-00002-of-00004.json", "shard 2 of 4")
    assert (logs / f"mb-finish-{again}.out").read_text() == res.err
    assert not (out / "manifest.json").exists()

    # Rerun that task alone (with the real microbatch), then finish.
    rerun = submit_split(slurm, dict(job_env, MB_SHARDS="4"), logs, "2", src, spec, out)
    fin = submit_finish(slurm, job_env, logs, out, after=rerun)
    assert_states(slurm, slurm.wait(rerun, fin), {f"{rerun}_2": "COMPLETED", fin: "COMPLETED"}, logs)
    round_trip(src, plain, out, tmp_path)


# The test's stand-in for microbatch in a requeue: array task MB_TEST_VICTIM,
# on its first run only, is held as it closes a file named MB_TEST_CLOSE.
REQUEUED = """#!/bin/bash
if [ "${SLURM_ARRAY_TASK_ID:-}" = "${MB_TEST_VICTIM:-}" ] && [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then
  export LD_PRELOAD=$MB_TEST_DIR/pause.so MB_TEST_PAUSED=$MB_TEST_DIR/paused MB_TEST_PAUSE_CLOSE=$MB_TEST_CLOSE
fi
exec REAL "$@"
"""


def test_a_requeued_array_task_keeps_the_files_it_had_published(slurm, job_env, data, tmp_path):
    """scontrol requeue of a task held after it published two files (the script's --requeue and --resume):
    Slurm stops it and runs it again, which keeps those two files (same inode and time) and writes the
    rest; finish then writes the one-process split."""
    src, spec, plain = data
    out, logs = tmp_path / "mb", tmp_path / "logs"
    logs.mkdir()
    wrapper = tmp_path / "bin" / "microbatch"
    wrapper.unlink()
    wrapper.write_text(REQUEUED.replace("REAL", shlex.quote(os.path.abspath(BINARY))))
    wrapper.chmod(0o755)
    pause_shim(tmp_path)
    # Two shards of 7 files: task 1 writes files 3..6, two at a time (-j 2): held closing file 5, files 3
    # and 4 are published.
    env = dict(job_env, MB_TEST_VICTIM="1", MB_TEST_DIR=str(tmp_path), MB_TEST_CLOSE=".microbatch-00005.h5.tmp-")
    job = submit_split(slurm, env, logs, "0-1", src, spec, out)
    fin = submit_finish(slurm, env, logs, out, after=job)
    wait_until((tmp_path / "paused").exists, "the task did not reach its third file")
    published = {n: (os.stat(out / n).st_ino, os.stat(out / n).st_mtime_ns) for n in
                 ["microbatch-00003.h5", "microbatch-00004.h5"]}
    slurm.command("scontrol", "requeue", f"{job}_1")
    states = slurm.wait(job, fin)
    assert_states(slurm, states, {f"{job}_0": "COMPLETED", f"{job}_1": "COMPLETED", fin: "COMPLETED"}, logs)
    assert {n: (os.stat(out / n).st_ino, os.stat(out / n).st_mtime_ns) for n in published} == published
    log = (logs / f"mb-split-{job}_1.out").read_text()
    # One log for both attempts (--open-mode=append), each attempt's lines after a line naming it.
    assert re.findall(r"^== job \S+ attempt (\d+) ", log, re.M) == ["0", "1"], job_logs(logs)
    assert log.index("resumed: 2 of 4 files kept") > log.index(" attempt 1 "), job_logs(logs)
    assert not any(n.endswith(".journal") for n in listing(out)), listing(out)
    round_trip(src, plain, out, tmp_path)


# -- launchers and a build that cannot cooperate -----------------------------------

LAUNCHER = re.compile(r"^(SLURM_|PMI|PMIX_|OMPI_)")


def launcher_variables(slurm, env, tmp_path, how, *args):
    """{task: {variable: value}} of the SLURM_*, PMI*, PMIX_* and OMPI_* variables a
    process sees: `how` is "batch" (an sbatch script), "array" or "srun"."""
    dump = tmp_path / f"env-{how}-{'-'.join(args)}"
    dump.mkdir()
    script = f'env > {dump}/task-${{SLURM_ARRAY_TASK_ID:-${{SLURM_PROCID:-0}}}}'
    if how == "srun":
        slurm.command("srun", *args, "bash", "-c", script, env=env)
    else:
        job = slurm.sbatch(*args, "--output=/dev/null", "--wrap", script, env=env)
        assert all(s == "COMPLETED" for s, _ in slurm.wait(job).values())
    tasks = {}
    for task in sorted(dump.iterdir()):
        pairs = (line.split("=", 1) for line in task.read_text().splitlines() if "=" in line)
        tasks[task.name] = {k: v for k, v in pairs if LAUNCHER.match(k)}
    return tasks


def test_launcher_variables(slurm, job_env, tmp_path):
    """What a process can tell about how it was started (printed with -s; the
    launcher refusal is written from these): several tasks of one srun step
    see SLURM_STEP_NUM_TASKS > 1; a batch script of --ntasks=2 is one process
    and sees SLURM_NTASKS=2 but no step variables."""
    cases = {
        "(a) batch script, sbatch --ntasks=2": launcher_variables(slurm, job_env, tmp_path, "batch", "--ntasks=2"),
        "(b) srun -n 2": launcher_variables(slurm, job_env, tmp_path, "srun", "-n", "2"),
        "(c) srun -n 1": launcher_variables(slurm, job_env, tmp_path, "srun", "-n", "1"),
        "(d) array task, sbatch --array=0-1": launcher_variables(slurm, job_env, tmp_path, "array", "--array=0-1"),
        "(e) srun --mpi=pmix -n 2": launcher_variables(slurm, job_env, tmp_path, "srun", "--mpi=pmix", "-n", "2"),
    }
    for case, tasks in cases.items():
        print(f"\n== {case}: {len(tasks)} process(es)")
        for task, variables in tasks.items():
            print(f"-- {task}: " + " ".join(f"{k}={v}" for k, v in sorted(variables.items())))
    (batch,) = cases["(a) batch script, sbatch --ntasks=2"].values()
    assert batch["SLURM_NTASKS"] == "2" and "SLURM_STEP_NUM_TASKS" not in batch and "PMIX_RANK" not in batch
    srun2 = cases["(b) srun -n 2"]
    assert sorted(t["SLURM_PROCID"] for t in srun2.values()) == ["0", "1"]
    assert all(t["SLURM_STEP_NUM_TASKS"] == "2" and "PMIX_RANK" not in t for t in srun2.values())
    (srun1,) = cases["(c) srun -n 1"].values()
    assert srun1["SLURM_STEP_NUM_TASKS"] == "1"
    array = cases["(d) array task, sbatch --array=0-1"]
    assert len(array) == 2 and all("SLURM_STEP_NUM_TASKS" not in t and "SLURM_NTASKS" not in t
                                   for t in array.values())
    pmix = cases["(e) srun --mpi=pmix -n 2"]
    assert sorted(t["PMIX_RANK"] for t in pmix.values()) == ["0", "1"]
    # OpenMPI sets OMPI_* only in the processes it starts itself (MPI_Init under srun sets them later).
    assert not any(k.startswith("OMPI_") for tasks in cases.values() for t in tasks.values() for k in t)


def split_in_tasks(slurm, env, tmp_path, tasks, binary, src, spec, out, *srun_options):
    """srun -n `tasks` of `binary split`; returns {task: (exit status, stderr)}."""
    rc = tmp_path / "rc"
    rc.mkdir()
    script = f'"$0" "$@" 2> {rc}/err.$SLURM_PROCID; echo $? > {rc}/rc.$SLURM_PROCID'
    slurm.command("srun", *srun_options, "-n", tasks, "bash", "-c", script, binary, "split", src, "-s", spec,
                  "-n", N, "-o", out, env=env, check=False)
    return {t: (int((rc / f"rc.{t}").read_text()), (rc / f"err.{t}").read_text()) for t in range(tasks)}


def test_srun_of_two_tasks_of_a_build_that_cannot_cooperate_is_refused(slurm, job_env, data, tmp_path):
    src, spec, _ = data
    out = tmp_path / "mb"
    results = split_in_tasks(slurm, job_env, tmp_path, 2, BINARY, src, spec, out)
    for task, (code, err) in results.items():
        assert code == 2, (task, code, err)
        lines = [l for l in err.splitlines() if l.strip()]
        assert len(lines) == 1 and lines[0].startswith("microbatch: error: ") and "cannot cooperate" in lines[0], err
    assert not any(n == "manifest.json" or n.endswith(".h5") for n in listing(out)), listing(out)


def test_one_process_under_slurm_is_not_refused(slurm, job_env, data, tmp_path):
    """A batch script of --ntasks=2 that runs microbatch itself (one process,
    SLURM_NTASKS=2), and srun -n 1, split as they would anywhere."""
    src, spec, plain = data
    out, logs = tmp_path / "mb", tmp_path / "logs"
    logs.mkdir()
    job = slurm.sbatch("--ntasks=2", f"--output={logs}/batch-%j.out", "--wrap",
                       f"microbatch split '{src}' -s '{spec}' -n {N} -o '{out}'", env=job_env)
    assert_states(slurm, slurm.wait(job), {job: "COMPLETED"}, logs)
    round_trip(src, plain, out, tmp_path)
    one = tmp_path / "one"
    results = split_in_tasks(slurm, job_env, tmp_path, 1, BINARY, src, spec, one)
    assert results[0][0] == 0 and "error" not in results[0][1], results
    same_files(plain, one)


# -- MPI under Slurm ----------------------------------------------------------------

HELLO = r"""#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d of %d sum %d\n", rank, size, sum);
  MPI_Finalize();
  return 0;
}
"""

# OpenMPI in containers (CLUSTER.md).
MPI_ENV = {"OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def test_srun_has_pmix_and_starts_an_openmpi_program(slurm, tmp_path):
    """What the MPI build relies on: srun --mpi=pmix starts OpenMPI ranks that
    find each other (no mpirun)."""
    assert re.search(r"^\s*pmix$", slurm.command("srun", "--mpi=list").stdout, flags=re.M)
    if shutil.which("mpicc") is None:
        pytest.fail("mpicc is missing: scripts/install-deps.sh installs libopenmpi-dev")
    source, hello = tmp_path / "hello.c", tmp_path / "hello"
    source.write_text(HELLO)
    subprocess.run(["mpicc", "-o", hello, source], check=True, capture_output=True, timeout=120)
    res = slurm.command("srun", "--mpi=pmix", "-n", 2, hello, env=dict(slurm.env, **MPI_ENV))
    assert sorted(res.stdout.splitlines()) == ["rank 0 of 2 sum 1", "rank 1 of 2 sum 1"], res


@pytest.mark.skipif(not os.environ.get("MICROBATCH_MPI"),
                    reason="MICROBATCH_MPI (the path of an MPI-enabled microbatch) is not set")
def test_srun_pmix_split_with_the_mpi_build(slurm, job_env, data, tmp_path):
    src, spec, plain = data
    out = tmp_path / "mb"
    results = split_in_tasks(slurm, dict(job_env, **MPI_ENV), tmp_path, 2, os.environ["MICROBATCH_MPI"], src, spec,
                             out, "--mpi=pmix")
    assert all(code == 0 for code, _ in results.values()), results
    assert not any(n.startswith("part-") for n in listing(out))
    round_trip(src, plain, out, tmp_path)


@pytest.mark.skipif(not os.environ.get("MICROBATCH_MPI"),
                    reason="MICROBATCH_MPI (the path of an MPI-enabled microbatch) is not set")
def test_the_readme_mpi_job_splits_and_merges_as_ranks(slurm, job_env, data, tmp_path):
    """examples/slurm/mpi.sbatch as docs/cluster.md submits it, with 2 tasks."""
    src, spec, plain = data
    out, merged, logs = tmp_path / "mb", tmp_path / "merged.h5", tmp_path / "logs"
    logs.mkdir()
    job = slurm.sbatch("--ntasks=2", f"--output={logs}/%x-%j.out", MPI_SCRIPT, src, spec, out, N, merged,
                       env=dict(job_env, **MPI_ENV))
    assert_states(slurm, slurm.wait(job), {job: "COMPLETED"}, logs)
    same_files(plain, out)
    assert not any(n.startswith("part-") for n in listing(out))
    assert h5diff(src, merged) == 0


def test_the_pipeline_splits_trains_and_merges_the_outputs(slurm, job_env, tmp_path):
    """examples/slurm/pipeline.sh on sample_data: split array, finish, the stand-in training job, the merge of
    its outputs. The merged outputs are computed again here from batch.h5's rows with numpy."""
    (tmp_path / "bin" / "python3").symlink_to("/usr/bin/python3")  # the one with h5py
    logs, mb, outputs, merged = tmp_path / "logs", tmp_path / "mb", tmp_path / "out", tmp_path / "outputs.h5"
    logs.mkdir()
    res = slurm.command(PIPELINE, os.path.join(SAMPLE, "batch.h5"), os.path.join(SAMPLE, "batch_spec.json"), mb, 4,
                        os.path.join(EXAMPLES, "train.sbatch"), outputs, os.path.join(SAMPLE, "outputs_spec.json"),
                        merged, env=dict(job_env, TASKS="2"), cwd=logs)
    jobs = dict(field.split("=") for field in res.stdout.split())
    assert list(jobs) == ["split", "finish", "train", "merge"], res.stdout
    states = slurm.wait(*jobs.values())
    expected = {f"{jobs['split']}_{k}": "COMPLETED" for k in range(2)}
    expected.update({jobs[j]: "COMPLETED" for j in ["finish", "train", "merge"]})
    assert_states(slurm, states, expected, logs)
    assert "shard 1 of 2: 2 of 4 microbatch files" in (logs / f"mb-split-{jobs['split']}_1.out").read_text()
    with h5py.File(os.path.join(SAMPLE, "batch.h5"), "r") as f:
        ids, mask, step = f["input_ids"][...], f["attention_mask"][...], f.attrs["step"]
    losses = [np.float32(np.log1p(ids[r:r + 2][mask[r:r + 2]].mean())) for r in range(0, 8, 2)]
    with h5py.File(merged, "r") as m:
        np.testing.assert_array_equal(m["logits"][...], (ids[..., None] % 16 == np.arange(16)).astype(np.float32))
        acc = np.float64(0)
        for loss in losses:  # in input order, in float64, rounded once (docs/behavior.md, Reducers)
            acc = acc + np.float64(loss)
        assert m["loss"][()] == np.float32(acc / 4) and m["loss"].dtype == np.float32
        assert m.attrs["num_tokens"] == mask.sum() and m.attrs["step"] == step
