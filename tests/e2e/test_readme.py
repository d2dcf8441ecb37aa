"""The README's examples run as written: every ```sh block whose commands are
all microbatch commands runs, in README order, in one shell in a copy of
sample_data/ (as the README says), with `microbatch` on PATH."""
import os
import re
import shutil
import subprocess

from conftest import BINARY, ENV

HERE = os.path.dirname(__file__)
ROOT = os.path.join(HERE, "..", "..")


def sh_blocks(text):
    return re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)


def commands(block):
    return [l for l in block.splitlines() if l.strip() and not l.lstrip().startswith("#")]


def example_blocks():
    with open(os.path.join(ROOT, "README.md")) as f:
        blocks = sh_blocks(f.read())
    return [b for b in blocks if commands(b) and all(re.search(r"(^|\| )microbatch ", c) for c in commands(b))]


def test_readme_examples_are_found():
    blocks = example_blocks()
    text = "\n".join(blocks)
    assert len(blocks) >= 4, blocks  # split, merge, inspect, specs from anywhere
    for needle in ["microbatch split", "microbatch merge", "microbatch inspect", "-s -", "--spec-json"]:
        assert needle in text


def test_readme_examples_run_verbatim_on_sample_data(tmp_path):
    work = tmp_path / "sample"
    shutil.copytree(os.path.join(ROOT, "sample_data"), work)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(os.path.abspath(BINARY), bin_dir / "microbatch")
    env = dict(ENV, PATH=f"{bin_dir}:{os.environ['PATH']}")
    for block in example_blocks():
        for line in commands(block):
            proc = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=work, env=env, capture_output=True,
                                  text=True, timeout=300)
            assert proc.returncode == 0, f"{line}\nexit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr}"
    assert (work / "mb" / "manifest.json").exists()
