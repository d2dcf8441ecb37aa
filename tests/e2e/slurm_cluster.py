"""A real one-node Slurm cluster for the tests: its own munged, slurmctld and
slurmd, started in a few seconds and stopped, by pid, at the end.

Everything the daemons use is in one fresh temporary directory: the configs
(SLURM_CONF points there, so the clients use them too), the munge key and
socket, the state, spool, pid and log files. The ports are free ones picked
at start. Nothing of the machine's own munge or Slurm setup is read or
changed, so a cluster left over by an earlier, killed run cannot get in the
way (and one running beside this one neither). Needs root (slurmd runs jobs
as their user) and the Debian packages slurm-wlm and munge; no systemd."""
import contextlib
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

DAEMONS = {"munged": "/usr/sbin/munged", "slurmctld": "/usr/sbin/slurmctld", "slurmd": "/usr/sbin/slurmd"}
# Job states after which a job does nothing more.
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL",
        "DEADLINE"}
# Variables of an outer Slurm job or MPI launcher that must not leak into the
# test cluster's clients and jobs.
FOREIGN = re.compile(r"^(SLURM_|SBATCH_|SRUN_|SALLOC_|SQUEUE_|SINFO_|PMI|PMIX_|OMPI_)")


class ClusterError(Exception):
    pass


def end_with_parent():
    """In the child before exec: SIGTERM when the test process dies, so that
    a killed test run (SIGKILL, a ctest timeout) leaves no daemons behind."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SLURM_CONF = """\
# Written by tests/e2e/slurm_cluster.py: a one-node cluster of its own.
ClusterName=mbtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/run/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
# Schedule every second (not every minute) so that dependent jobs start soon.
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
# A job whose dependency can no longer be satisfied is cancelled, not kept pending.
DependencyParameters=kill_invalid_depend
# scancel: SIGTERM, then SIGKILL after 2 s (not 30 s).
KillWait=2
# The node offers {cpus} CPUs whatever the machine has, so that a few small
# tasks run at once on 2 cores.
SlurmdParameters=config_overrides
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES OverSubscribe=YES MaxTime=INFINITE State=UP
"""

# CLUSTER.md: slurmd of 22.05 needs a cgroup plugin even with proctrack/linuxproc
# and task/none ("disabled" does not exist in 22.05).
CGROUP_CONF = """\
CgroupPlugin=cgroup/v1
IgnoreSystemd=yes
CgroupAutomount=no
"""


class Cluster:
    """One node, `cpus` CPUs. start() returns once sinfo shows the node idle;
    stop() ends the jobs, then the daemons, then removes the directory."""

    def __init__(self, cpus=4, start_timeout=120):
        self.cpus = cpus
        self.start_timeout = start_timeout
        self.host = socket.gethostname().split(".")[0]
        self.root = None
        self.procs = {}  # name -> Popen of what this cluster started

    # -- paths and environment -------------------------------------------------

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    @property
    def env(self):
        """The environment for Slurm clients (sbatch, srun, ...): this cluster's
        SLURM_CONF and none of an outer job's or launcher's variables."""
        env = {k: v for k, v in os.environ.items() if not FOREIGN.match(k)}
        env["SLURM_CONF"] = self.path("slurm.conf")
        return env

    # -- start -------------------------------------------------------------------

    def start(self):
        if os.geteuid() != 0:
            raise ClusterError("the Slurm test cluster needs root (slurmd starts jobs as their user)")
        for name, exe in DAEMONS.items():
            if not os.access(exe, os.X_OK):
                raise ClusterError(f"{exe} is missing: scripts/install-deps.sh installs slurm-wlm and munge")
        # munged wants every directory above its socket searchable by all, and
        # pytest's tmp_path is not: a directory of its own under /tmp.
        self.root = tempfile.mkdtemp(prefix="mb-slurm-")
        os.chmod(self.root, 0o755)
        for d in ["run", "state", "spool", "log"]:
            os.mkdir(self.path(d), 0o755)
        os.mkdir(self.path("munge"), 0o700)
        try:
            self._configure()
            self._start_munged()
            self._spawn("slurmctld", [DAEMONS["slurmctld"], "-D", "-f", self.path("slurm.conf")])
            self._spawn("slurmd", [DAEMONS["slurmd"], "-D", "-f", self.path("slurm.conf")])
            self._wait_idle()
        except BaseException:
            self.stop(remove=False)
            raise
        return self

    def _configure(self):
        with open(self.path("slurm.conf"), "w") as f:
            f.write(SLURM_CONF.format(host=self.host, root=self.root, cpus=self.cpus, ctld_port=free_port(),
                                      slurmd_port=free_port()))
        with open(self.path("cgroup.conf"), "w") as f:
            f.write(CGROUP_CONF)

    def _start_munged(self):
        key = self.path("munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o600)
        self._spawn("munged", [DAEMONS["munged"], "--foreground", f"--socket={self.path('run', 'munge.socket')}",
                               f"--key-file={key}", f"--pid-file={self.path('run', 'munged.pid')}",
                               f"--log-file={self.path('log', 'munged.log')}",
                               f"--seed-file={self.path('munge', 'munged.seed')}"])
        deadline = time.monotonic() + self.start_timeout
        while not os.path.exists(self.path("run", "munge.socket")):
            self._check_alive("munged")
            if time.monotonic() > deadline:
                raise ClusterError(self._failure("munged did not create its socket"))
            time.sleep(0.02)

    def _spawn(self, name, argv):
        out = open(self.path("log", f"{name}.out"), "w")
        # A session of its own: a Ctrl-C of the test run is not delivered to the
        # daemons as well; stop() ends them in order.
        self.procs[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                            env=self.env, start_new_session=True, preexec_fn=end_with_parent)
        out.close()

    def _check_alive(self, name):
        code = self.procs[name].poll()
        if code is not None:
            raise ClusterError(self._failure(f"{name} exited with status {code}"))

    def _wait_idle(self):
        deadline = time.monotonic() + self.start_timeout
        state = ""
        while time.monotonic() < deadline:
            for name in self.procs:
                self._check_alive(name)
            res = subprocess.run(["sinfo", "-h", "-n", self.host, "-o", "%T"], capture_output=True, text=True,
                                 env=self.env, timeout=30)
            state = res.stdout.strip() or res.stderr.strip()
            if state == "idle":
                return
            time.sleep(0.1)
        raise ClusterError(self._failure(f"the node is not idle after {self.start_timeout} s (sinfo: {state!r})"))

    def logs(self, lines=40):
        """The end of every daemon's log, for failure messages."""
        text = []
        for name in sorted(os.listdir(self.path("log"))) if self.root else []:
            with open(self.path("log", name), errors="replace") as f:
                tail = f.read().splitlines()[-lines:]
            text.append(f"--- {name}\n" + "\n".join(tail))
        return "\n".join(text)

    def _failure(self, what):
        return f"Slurm test cluster in {self.root}: {what}\n{self.logs()}"

    # -- jobs --------------------------------------------------------------------

    def command(self, *argv, check=True, timeout=60, **kwargs):
        """Runs a Slurm client command against this cluster."""
        res = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                             env=kwargs.pop("env", self.env), stdin=subprocess.DEVNULL, **kwargs)
        if check and res.returncode != 0:
            raise ClusterError(self._failure(f"{argv}: exit {res.returncode}\n{res.stdout}\n{res.stderr}"))
        return res

    def sbatch(self, *args, **kwargs):
        """Submits a job; returns its id (the array job's id for an array)."""
        res = self.command("sbatch", "--parsable", *args, **kwargs)
        return res.stdout.strip().split(";")[0]

    def jobs(self, job):
        """{job id (123 or 123_4): (state, exit code)} of a job or array job,
        as `scontrol show job` tells."""
        res = self.command("scontrol", "show", "job", "-o", job, check=False)
        jobs = {}
        for line in res.stdout.splitlines():
            fields = dict(re.findall(r"(\w+)=(\S*)", line))
            if "JobState" not in fields:
                continue
            name = fields["JobId"]
            if fields.get("ArrayTaskId"):
                name = f"{fields['ArrayJobId']}_{fields['ArrayTaskId']}"
            jobs[name] = (fields["JobState"], fields.get("ExitCode", ""))
        return jobs

    def wait(self, *jobs, timeout=300, until=DONE):
        """Waits until every task of `jobs` is in a state of `until`; returns
        their states as jobs() does."""
        deadline = time.monotonic() + timeout
        while True:
            states = {}
            for job in jobs:
                states.update(self.jobs(job))
            if states and all(s in until for s, _ in states.values()):
                return states
            if time.monotonic() > deadline:
                raise ClusterError(self._failure(f"jobs {jobs} not done after {timeout} s: {states}"))
            time.sleep(0.1)

    # -- stop --------------------------------------------------------------------

    def _steps(self):
        """Pids of the slurmstepd processes of this cluster's jobs: slurmd starts
        them detached, so they are found by the log file they hold open."""
        log = self.path("log", "slurmd.log")
        pids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if not f.read().startswith(b"slurmstepd"):
                        continue
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        continue  # a zombie: already gone
                if any(os.readlink(f"/proc/{pid}/fd/{fd}") == log for fd in os.listdir(f"/proc/{pid}/fd")):
                    pids.append(int(pid))
        return pids

    def _end_jobs(self, timeout=15):
        """Cancels every job of this cluster and waits until their steps are gone."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self.command("scancel", "--user", "root", check=False, timeout=30)
        deadline = time.monotonic() + timeout
        while self._steps() and time.monotonic() < deadline:
            time.sleep(0.1)
        sessions = set()
        for pid in self._steps():  # still there: these are this cluster's, end them and their jobs
            with contextlib.suppress(OSError):
                sessions.add(os.getsid(pid))
        for pid in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                if os.getsid(int(pid)) in sessions:
                    os.kill(int(pid), signal.SIGKILL)

    def stop(self, remove=True):
        """Ends the jobs, then slurmd, slurmctld and munged: only what start()
        started, by pid. Keeps the directory if MB_SLURM_KEEP is set."""
        if self.procs.get("slurmd") is not None:
            self._end_jobs()
        for name in ["slurmd", "slurmctld", "munged"]:
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        if remove and self.root and not os.environ.get("MB_SLURM_KEEP"):
            shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def cluster(**kwargs):
    c = Cluster(**kwargs)
    c.start()
    try:
        yield c
    finally:
        c.stop()
