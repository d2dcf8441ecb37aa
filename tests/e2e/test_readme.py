"""The examples of the README and of the pages in docs/ run as written: every
```sh block whose commands are all microbatch commands runs, in page order,
with `microbatch` on PATH. Each page runs in its own shell, in a fresh copy
of sample_data/ (as the pages say). The try-outs of docs/remote.md and
docs/cluster.md run as written too: each starts a server the examples ship
(a local S3 server, a one-node Slurm), uses it and stops it."""
import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile

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


def shell_env(tmp_path):
    """The tests' environment with `microbatch` (the binary under test) first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(os.path.abspath(BINARY), bin_dir / "microbatch")
    return dict(ENV, PATH=f"{bin_dir}:{os.environ['PATH']}")


def run_lines(lines, cwd, env, timeout=600):
    """Runs `lines` in one bash, line i of the script being command i: the first command that fails stops
    it, and the trap says which. In a session of its own, ended whole if it runs out of time."""
    script = "\n".join(["set -e -o pipefail", "trap 'echo \"example failed at line $LINENO\" >&2' ERR", *lines]) + "\n"
    proc = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(script, proc.returncode, out, err)


def assert_ran(page, lines, proc):
    failed = re.search(r"example failed at line (\d+)", proc.stderr)
    line = lines[int(failed.group(1)) - 3] if failed else "(no line reported)"
    assert proc.returncode == 0, f"{page}: {line}\nexit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr}"


@pytest.mark.parametrize("page", list(PAGES))
def test_examples_run_verbatim_on_sample_data(page, tmp_path):
    lines = [line for block in example_blocks(page) for line in commands(block)]
    if not lines:
        assert PAGES[page] is None, f"{page} has no examples, yet the test expects {PAGES[page]}"
        return
    work = tmp_path / "sample"
    shutil.copytree(os.path.join(ROOT, "sample_data"), work)
    assert_ran(page, lines, run_lines(lines, work, shell_env(tmp_path)))
    if PAGES[page]:
        assert (work / PAGES[page]).exists(), f"{page}'s examples did not write {PAGES[page]}"


# -- the try-outs -------------------------------------------------------------------

# A try-out is a ```sh block whose first command starts a server one of the
# examples' scripts provides, `eval "$(examples/.../local-NAME.sh start)"`,
# and whose last stops it, `eval "$(SCRIPT stop)"`. The pages that have one,
# and a file it must leave behind:
TRYOUTS = {
    "docs/remote.md": "try-merged.h5",
    "docs/cluster.md": "try_mb/manifest.json",
}
START = re.compile(r'^eval "\$\((examples/[\w/.-]+\.sh) start\)"')


def tryouts(page):
    """[(the script that starts and stops the server, the block's commands)] of a page."""
    with open(os.path.join(ROOT, page)) as f:
        blocks = [commands(b) for b in sh_blocks(f.read())]
    return [(START.match(lines[0]).group(1), lines) for lines in blocks if lines and START.match(lines[0])]


def test_tryouts_are_found():
    for page in PAGES:
        found = tryouts(page)
        assert len(found) == (1 if page in TRYOUTS else 0), f"{page}: {len(found)} try-outs"
    for page in TRYOUTS:
        [(script, lines)] = tryouts(page)
        assert re.match(rf'^eval "\$\({re.escape(script)} stop\)"', lines[-1]), f"{page}: ends without stopping"
        assert any(line.startswith("microbatch verify") for line in lines), page


def stop_servers(script, state, env):
    """Stops what a try-out started and did not stop (it failed halfway): the servers keep their state in
    directories under `state` (their TMPDIR)."""
    for directory in glob.glob(os.path.join(state, "microbatch-local-*")):
        subprocess.run([os.path.join(ROOT, script), "stop", directory], env=env, capture_output=True, timeout=120)


@pytest.mark.parametrize("page", list(TRYOUTS))
def test_tryouts_run_verbatim(page, tmp_path):
    """Run from a directory laid out as the repository root: examples/ and a copy of sample_data/."""
    if page == "docs/cluster.md" and os.geteuid() != 0:
        pytest.skip("the one-node Slurm needs root")
    [(script, lines)] = tryouts(page)
    work = tmp_path / "root"
    shutil.copytree(os.path.join(ROOT, "sample_data"), work / "sample_data")
    os.symlink(os.path.abspath(os.path.join(ROOT, "examples")), work / "examples")
    # munged wants every directory above its socket searchable by all; pytest's tmp_path is not.
    state = tempfile.mkdtemp(prefix="mb-tryout-")
    os.chmod(state, 0o755)
    env = dict(shell_env(tmp_path), TMPDIR=state)
    try:
        proc = run_lines(lines, work, env)
        left = glob.glob(os.path.join(state, "microbatch-local-*"))
    finally:
        stop_servers(script, state, env)
        shutil.rmtree(state, ignore_errors=True)
    assert_ran(page, lines, proc)
    assert (work / TRYOUTS[page]).exists(), f"{page}'s try-out did not write {TRYOUTS[page]}"
    assert left == [], f"{page}'s try-out did not stop what it started"
