"""The build's MB_MPI choice: AUTO, ON or OFF, said at configure time; any other value is refused."""
import os
import subprocess

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
