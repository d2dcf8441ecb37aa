"""The build's MB_MPI choice: AUTO, ON or OFF, said at configure time; any other value is refused.
The source archive is the commit, and configures."""
import os
import subprocess
import tarfile

from conftest import BINARY, project_version

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def configure(tmp_path, value):
    return subprocess.run(["cmake", "-S", ROOT, "-B", str(tmp_path / "build"), f"-DMB_MPI={value}"],
                          capture_output=True, text=True, timeout=300)


def test_mb_mpi_off_says_it_builds_no_mpi_binary(tmp_path):
    proc = configure(tmp_path, "OFF")
    assert proc.returncode == 0, proc.stderr
    assert "microbatch-mpi: not built (MB_MPI=OFF)" in proc.stdout


def test_mb_mpi_takes_only_auto_on_or_off(tmp_path):
    proc = configure(tmp_path, "sometimes")
    assert proc.returncode != 0
    assert "MB_MPI must be AUTO, ON or OFF, not 'SOMETIMES'" in proc.stderr


def test_the_source_archive_holds_the_commit_and_configures(tmp_path):
    """scripts/source-archive.sh: every tracked file of HEAD, with its mode, and nothing else;
    unpacked, CMake configures it (tests included) as it does a checkout."""
    proc = subprocess.run([os.path.join(ROOT, "scripts", "source-archive.sh"), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    archive = proc.stdout.strip()
    version = project_version()
    assert archive == str(tmp_path / f"microbatch-{version}.tar.gz")
    tracked = subprocess.run(["git", "-C", ROOT, "ls-tree", "-r", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    modes = {line.split("\t", 1)[1]: line.split()[0] for line in tracked}
    with tarfile.open(archive) as tar:
        members = {m.name.removeprefix(f"microbatch-{version}/"): m for m in tar.getmembers() if m.isfile()}
        assert sorted(members) == sorted(modes)
        for name in ("scripts/demo.sh", "scripts/test.sh"):
            assert members[name].mode & 0o111 and modes[name] == "100755", name
        tar.extractall(tmp_path / "src")
    build = subprocess.run(["cmake", "-S", str(tmp_path / "src" / f"microbatch-{version}"), "-B",
                            str(tmp_path / "build")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr


def test_cmake_install_installs_both_binaries_where_mpi_was_found(tmp_path):
    """cmake --install of the build under test: microbatch-mpi too when the build made it (MICROBATCH_MPI)."""
    build = os.path.dirname(os.path.abspath(BINARY))
    proc = subprocess.run(["cmake", "--install", build, "--prefix", str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    binaries = sorted(os.listdir(tmp_path / "bin"))
    assert binaries == (["microbatch", "microbatch-mpi"] if os.environ.get("MICROBATCH_MPI") else ["microbatch"])
    pages = sorted(os.listdir(tmp_path / "share" / "man" / "man1"))
    assert pages == sorted(f"{b}.1.gz" for b in binaries)
    for b in binaries:
        package = "microbatch-mpi" if b == "microbatch-mpi" else "microbatch"
        assert {"copyright", "LICENSE"} <= set(os.listdir(tmp_path / "share" / "doc" / package))
