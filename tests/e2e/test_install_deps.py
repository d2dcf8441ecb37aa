"""What each script's dependency step asks apt-get for, on a machine with nothing installed.

The scripts run with stubs first on PATH: dpkg-query says no package is
installed, apt-get and npm record what they are asked, and cmake stops the
script where its build would begin (exit 42). scripts/demo.sh and
scripts/package.sh must install what building (and the demo, the packages)
needs and none of what only the tests use."""
import os
import stat
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STOPPED_AT_BUILD = 42

BUILD = {"cmake", "g++", "make", "pkg-config", "libhdf5-dev", "libcli11-dev", "nlohmann-json3-dev",
         "libspdlog-dev", "libfmt-dev", "libxxhash-dev", "libcurl4-openssl-dev", "libssl-dev"}
# Packages that only the tests use: neither the demo nor the packages may pull them in.
TEST_ONLY = {"doctest-dev", "hdf5-filter-plugin", "python3-h5py", "python3-numpy", "python3-pytest",
             "python3-jsonschema", "python3-xarray", "python3-netcdf4", "python3-h5netcdf", "python3-anndata",
             "python3-scipy", "python3-pandas", "python3-tables", "clang-14", "libclang-rt-14-dev", "man-db",
             "slurm-wlm", "munge", "nginx-light", "openssl", "curl", "nodejs", "npm", "awscli",
             "python3-hypothesis", "gcovr", "strace"}

STUBS = {
    "dpkg-query": "exit 1",  # nothing is installed
    "apt-get": 'echo "apt-get $*" >> "$STUB_LOG"',
    "npm": 'echo "npm $*" >> "$STUB_LOG"',
    "sudo": 'exec "$@"',
    "cmake": f"exit {STOPPED_AT_BUILD}",
}


def run_with_stubs(tmp_path, *command, installed=False):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in STUBS.items():
        if name == "dpkg-query" and installed:
            body = "echo 'install ok installed'"
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "calls.log"
    log.write_text("")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", STUB_LOG=str(log))
    proc = subprocess.run([os.path.join(ROOT, *command[0].split("/")), *command[1:]], env=env,
                          capture_output=True, text=True, timeout=120)
    return proc, log.read_text().splitlines()


def asked_to_install(calls):
    """The packages of the one `apt-get install` call."""
    installs = [c.split() for c in calls if c.startswith("apt-get install")]
    assert len(installs) == 1, calls
    return {word for word in installs[0][2:] if not word.startswith("-")}


@pytest.mark.parametrize("script, needs", [
    ("scripts/demo.sh", BUILD | {"hdf5-tools"}),
    ("scripts/package.sh", BUILD | {"libopenmpi-dev", "openmpi-bin", "dpkg-dev", "file"}),
])
def test_demo_and_package_install_what_they_need_and_nothing_tests_use(tmp_path, script, needs):
    proc, calls = run_with_stubs(tmp_path, script)
    assert proc.returncode == STOPPED_AT_BUILD, proc.stderr  # it got as far as the build, and no further
    packages = asked_to_install(calls)
    assert needs <= packages, f"{script} does not install {sorted(needs - packages)}"
    assert packages & TEST_ONLY == set(), f"{script} installs test-only packages {sorted(packages & TEST_ONLY)}"
    assert not [c for c in calls if c.startswith("npm")], calls


def test_the_test_command_installs_the_test_world(tmp_path):
    """The same stubs see every test-only package asked for by the test step: the check above can fail."""
    proc, calls = run_with_stubs(tmp_path, "scripts/install-deps.sh", "test")
    assert proc.returncode == 0, proc.stderr
    packages = asked_to_install(calls)
    assert (TEST_ONLY - {"npm"}) | BUILD <= packages, sorted(TEST_ONLY - packages)


def test_nothing_is_installed_when_everything_is_there(tmp_path):
    proc, calls = run_with_stubs(tmp_path, "scripts/install-deps.sh", "package", installed=True)
    assert proc.returncode == 0, proc.stderr
    assert calls == []


def test_an_unknown_purpose_is_a_usage_error(tmp_path):
    proc, calls = run_with_stubs(tmp_path, "scripts/install-deps.sh", "everything")
    assert proc.returncode == 2
    assert "usage: scripts/install-deps.sh [demo|package|test]" in proc.stderr
    assert calls == []
