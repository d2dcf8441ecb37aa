"""The examples of the README and of the pages in docs/ run as written: every
```sh block whose commands are all microbatch commands runs, in page order,
with `microbatch` on PATH. Each page runs in its own shell, in a fresh copy
of sample_data/ (as the pages say)."""
import glob
import os
import re
import shutil
import subprocess

import pytest

from conftest import BINARY, ENV

HERE = os.path.dirname(__file__)
ROOT = os.path.join(HERE, "..", "..")

# The pages whose examples run, in the order the README lists them, and a
# file each page's examples must leave behind (None: nothing to check).
PAGES = {
    "README.md": "mb/manifest.json",
    "docs/guide.md": "mb/manifest.json",
    "docs/cluster.md": "sharded/manifest.json",
    "docs/remote.md": None,
    "docs/behavior.md": None,
    "docs/performance.md": None,
    "docs/design.md": None,
    "docs/testing.md": None,
}


def sh_blocks(text):
    return re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)


def commands(block):
    return [l for l in block.splitlines() if l.strip() and not l.lstrip().startswith("#")]


def example_blocks(page):
    with open(os.path.join(ROOT, page)) as f:
        blocks = sh_blocks(f.read())
    return [b for b in blocks if commands(b) and all(re.search(r"(^|\| )microbatch ", c) for c in commands(b))]


def test_every_page_is_run():
    pages = {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))} | {"README.md"}
    assert pages == set(PAGES), "a page in docs/ that test_readme.py does not run (or one that is gone)"


def test_examples_are_found():
    blocks = [b for page in PAGES for b in example_blocks(page)]
    text = "\n".join(blocks)
    assert len(blocks) >= 4, blocks  # split, merge, inspect, specs from anywhere
    for needle in ["microbatch split", "microbatch merge", "microbatch inspect", "microbatch finish", "-s -",
                   "--spec-json", "--cp-degree", "--shard"]:
        assert needle in text, needle
    readme = "\n".join(example_blocks("README.md"))
    for needle in ["microbatch split", "microbatch merge", "microbatch inspect"]:
        assert needle in readme, needle
    assert example_blocks("docs/guide.md") and example_blocks("docs/cluster.md")


@pytest.mark.parametrize("page", list(PAGES))
def test_examples_run_verbatim_on_sample_data(page, tmp_path):
    lines = [line for block in example_blocks(page) for line in commands(block)]
    if not lines:
        assert PAGES[page] is None, f"{page} has no examples, yet the test expects {PAGES[page]}"
        return
    work = tmp_path / "sample"
    shutil.copytree(os.path.join(ROOT, "sample_data"), work)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(os.path.abspath(BINARY), bin_dir / "microbatch")
    env = dict(ENV, PATH=f"{bin_dir}:{os.environ['PATH']}")
    # One shell for the page: line i of the script is command i; the first
    # command that fails stops it, and the trap says which.
    script = "\n".join(["set -e -o pipefail", "trap 'echo \"example failed at line $LINENO\" >&2' ERR", *lines]) + "\n"
    proc = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    failed = re.search(r"example failed at line (\d+)", proc.stderr)
    line = lines[int(failed.group(1)) - 3] if failed else "(no line reported)"
    assert proc.returncode == 0, f"{page}: {line}\nexit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr}"
    if PAGES[page]:
        assert (work / PAGES[page]).exists(), f"{page}'s examples did not write {PAGES[page]}"
