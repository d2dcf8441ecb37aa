"""What `cmake --install` puts in place for the package microbatch (the
component "cli", as CPack packs it), installed under a DESTDIR with prefix
/usr: the manual in /usr/share/doc/microbatch, where every relative link of
every installed page leads to an installed file (and heading), and the
examples the pages tell users to copy and run, runnable."""
import glob
import os
import subprocess

import pytest

from conftest import BINARY
from markdown_pages import anchors, relative_links

REPO = os.path.join(os.path.dirname(__file__), "..", "..")
BUILD = os.path.dirname(os.path.abspath(BINARY))  # the build directory of the binary under test
DOC = os.path.join("usr", "share", "doc", "microbatch")


@pytest.fixture(scope="module")
def destdir(tmp_path_factory):
    dest = tmp_path_factory.mktemp("destdir")
    proc = subprocess.run(["cmake", "--install", BUILD, "--component", "cli", "--prefix", "/usr"],
                          env=dict(os.environ, DESTDIR=str(dest)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return str(dest)


def installed_pages(destdir):
    pages = sorted(glob.glob(os.path.join(destdir, DOC, "**", "*.md"), recursive=True))
    names = {os.path.relpath(p, os.path.join(destdir, DOC)) for p in pages}
    assert {"README.md", "CHANGELOG.md", "docs/guide.md", "docs/cluster.md", "docs/remote.md"} <= names, names
    return pages


def broken_links(page, root):
    """The relative links of `page` that lead to no file (or no heading) under `root`."""
    with open(page) as f:
        text = f.read()
    broken = []
    for path, anchor in relative_links(text):
        target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if os.path.commonpath([target, root]) != root or not os.path.exists(target):
            broken.append(f"{path}: not installed")
        elif anchor and target.endswith(".md") and anchor not in anchors(open(target).read()):
            broken.append(f"{path}#{anchor}: no such heading")
    return broken


def test_every_relative_link_of_the_installed_manual_resolves(destdir):
    doc = os.path.join(destdir, DOC)
    broken = {os.path.relpath(p, doc): broken_links(p, doc) for p in installed_pages(destdir)}
    assert {page: links for page, links in broken.items() if links} == {}


def test_the_link_check_sees_a_link_that_leaves_the_installed_tree(tmp_path):
    root = tmp_path / "doc"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# A\n\n[here](a.md#a) [up](../../outside.md) [gone](b.md) [no](#b)\n")
    (tmp_path / "outside.md").write_text("# Outside\n")
    assert broken_links(str(root / "docs" / "a.md"), str(root)) == ["../../outside.md: not installed",
                                                                     "b.md: not installed", "#b: no such heading"]


def test_the_examples_are_installed_as_they_are_in_the_source(destdir):
    """Every file of examples/ (but what npm installs beside the S3 server), the same bytes; scripts runnable."""
    source = os.path.join(REPO, "examples")
    expected = sorted(os.path.relpath(os.path.join(d, f), source) for d, dirs, files in os.walk(source)
                      for f in files if "node_modules" not in os.path.relpath(d, source).split(os.sep))
    examples = os.path.join(destdir, DOC, "examples")
    found = sorted(os.path.relpath(os.path.join(d, f), examples) for d, _, files in os.walk(examples) for f in files)
    assert found == expected
    for name in found:
        with open(os.path.join(source, name), "rb") as a, open(os.path.join(examples, name), "rb") as b:
            assert a.read() == b.read(), name
        if os.access(os.path.join(source, name), os.X_OK):
            assert os.access(os.path.join(examples, name), os.X_OK), f"{name}: installed, but not executable"
