"""The man page and the shell completions follow `--help`: every option a
command takes is documented in microbatch(1) and completed by bash, zsh and
fish; option values offered by completion are the ones the command accepts.
Bash completion is driven for real (compgen through the completion function).
The README names every command and option; every relative link in the README,
CHANGELOG.md and docs/*.md leads to a file (and heading) that exists. The
version is written once, in CMake's project(): --version, the man pages and
CHANGELOG.md's newest entry follow it."""
import glob
import os
import re
import subprocess

import pytest

from conftest import project_version, run
from markdown_pages import anchors, man_prose, prose, relative_links, statements

REPO = os.path.join(os.path.dirname(__file__), "..", "..")
MAN = os.path.join(REPO, "docs", "microbatch.1")
BASH = os.path.join(REPO, "completions", "microbatch.bash")
ZSH = os.path.join(REPO, "completions", "_microbatch")
FISH = os.path.join(REPO, "completions", "microbatch.fish")
COMMANDS = ["split", "merge", "inspect", "finish", "verify", "diff"]


def help_text(*command):
    res = run(*command, "--help", check=0)
    return res.out


def options(text):
    """The option names in a --help text: ['-s', '--spec', '-n', ...]."""
    names = []
    for line in text.splitlines():
        m = re.match(r"^  (-\w)?,?(--[\w-]+)", line)
        if m:
            names += [n for n in m.groups() if n]
    return names


def choices(text):
    """Option -> its closed set of values, from CLI11's 'TEXT:{a,b,c}'."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^  (?:-\w,)?(--[\w-]+) [A-Z]+:\{([^}]*)\}", line)
        if m:
            out[m.group(1)] = m.group(2).split(",")
    return out


def bash_complete(*words):
    """What the bash completion offers after `microbatch WORDS...` (the last word is being completed)."""
    script = f"""source {BASH}
COMP_WORDS=(microbatch {' '.join(repr(w) for w in words)}); COMP_CWORD={len(words)}
_microbatch; printf '%s\\n' "${{COMPREPLY[@]}}" """
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    return [w for w in out.splitlines() if w]


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)], ids=["top", *COMMANDS])
def test_every_option_is_in_the_man_page(command):
    man = open(MAN).read().replace("\\-", "-")
    found = options(help_text(*command))
    assert "--help" in found and len(found) > 4  # the parser reads this --help at all
    missing = [o for o in found if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", man)]
    assert missing == [], f"in `microbatch {' '.join(command)} --help` but not in docs/microbatch.1"


@pytest.mark.parametrize("command", COMMANDS)
def test_bash_completes_every_option_of_each_command(command):
    offered = set(bash_complete(command, "-"))
    expected = set(options(help_text(command)))
    assert expected - offered == set(), "options --help lists that bash does not complete"
    assert offered - expected == set(), "options bash completes that the command does not take"


@pytest.mark.parametrize("command", COMMANDS)
def test_bash_completes_option_values_as_the_command_accepts_them(command):
    for option, values in choices(help_text(command)).items():
        assert sorted(bash_complete(command, option, "")) == sorted(values), option


def test_bash_completes_subcommands_and_files(tmp_path):
    assert bash_complete("sp") == ["split"]
    assert set(bash_complete("")) >= {"split", "merge", "inspect", "finish"}
    (tmp_path / "batch.h5").touch()
    (tmp_path / "spec.json").touch()
    (tmp_path / "notes.txt").touch()
    (tmp_path / "cells.h5ad").touch()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert sorted(bash_complete("split", "")) == ["batch.h5", "cells.h5ad"]
        assert bash_complete("split", "batch.h5", "-s", "") == ["spec.json"]
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("path", [ZSH, FISH], ids=["zsh", "fish"])
def test_zsh_and_fish_completions_name_every_option(path):
    text = open(path).read()
    every = set()
    for command in [[], *([c] for c in COMMANDS)]:
        every |= set(options(help_text(*command)))
    for option in sorted(every):
        if path == FISH:  # fish spells them `-s X` / `-l long`
            flag = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
            assert flag in text, option
        else:
            assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text), option


# -- the README and docs/*.md -------------------------------------------------------

README = os.path.join(REPO, "README.md")
PAGES = [README, os.path.join(REPO, "CHANGELOG.md"), *sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))]
EXAMPLES = os.path.join(REPO, "examples", "slurm")


@pytest.mark.parametrize("page", PAGES, ids=[os.path.relpath(p, REPO) for p in PAGES])
def test_relative_links_lead_to_files_that_exist(page):
    text = open(page).read()
    broken = []
    for path, anchor in relative_links(text):
        target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(target):
            broken.append(f"{path}: no such file")
        elif anchor and target.endswith(".md") and anchor not in anchors(open(target).read()):
            broken.append(f"{path}#{anchor}: no such heading")
    assert broken == [], f"broken links in {os.path.relpath(page, REPO)}"


def test_the_link_check_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[a](missing.md) [b](#title) [c](#nothing) `[d](code.md)` [e](https://x.org/y)\n")
    assert list(relative_links(page.read_text())) == [("missing.md", ""), ("", "title"), ("", "nothing")]
    assert anchors("# Under MPI: `mpirun`, `srun`\n## pandas / PyTables\n") == {"under-mpi-mpirun-srun",
                                                                              "pandas--pytables"}


# What the binary does, which a page must not contradict, each checked against
# the binary by its own tests: an input changed while it is read is exit 3
# (test_changed_inputs.py, test_remote.py); outputs may be s3:// objects
# (test_remote.py, and the try-out of remote.md that test_readme.py runs).
EXIT_CLAIMS = [(re.compile(r"chang\w* while (?:it is |it was |they are )?(?:being )?read|replaced while (?:it is )?read",
                           re.I), "3")]
FALSE_CLAIMS = [re.compile(r"outputs are local\b(?! files or S3)", re.I)]
MAN_PAGES = sorted(glob.glob(os.path.join(REPO, "docs", "*.1")))
TODAY = [p for p in PAGES if not p.endswith("CHANGELOG.md")] + MAN_PAGES  # the changelog tells history


def page_statements(page):
    text = open(page).read()
    return list(statements(man_prose(text) if page.endswith(".1") else prose(text)))


@pytest.mark.parametrize("page", TODAY, ids=[os.path.relpath(p, REPO) for p in TODAY])
def test_pages_give_the_exit_status_the_binary_gives(page):
    wrong = []
    for sentence in page_statements(page):
        for topic, code in EXIT_CLAIMS:
            if topic.search(sentence) and set(re.findall(r"\bexit (\d+)", sentence)) - {code}:
                wrong.append(f"exit {code} expected: {sentence}")
        wrong += [f"not true: {sentence}" for claim in FALSE_CLAIMS if claim.search(sentence)]
    assert wrong == [], os.path.relpath(page, REPO)


def test_the_statements_of_a_page_are_its_sentences():
    text = "# Title\n\n| 3 | a retry |\n| 1 | the data |\n\nOne. Two (exit 3).\n- An item. Its end\n  goes on.\n"
    assert list(statements(text)) == ["# Title", "| 3 | a retry |", "| 1 | the data |", "One.", "Two (exit 3).",
                                      "- An item.", "Its end goes on."]
    man = ".SH EXIT\nA fault\n.B is\nretried (exit 3).\n.PP\nNext.\n"
    assert list(statements(man_prose(man))) == ["A fault is retried (exit 3).", "Next."]


def test_the_readme_names_every_option():
    text = open(README).read()
    every = set()
    for command in [[], *([c] for c in COMMANDS)]:
        every |= set(options(help_text(*command)))
    missing = [o for o in sorted(every) if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text)]
    assert missing == [], "options of --help that the README's synopsis does not name"


def test_the_readme_names_every_command():
    top = help_text()
    listed = re.findall(r"^  (\w+) {2,}\S", top.split("Subcommands:")[1], flags=re.M)
    assert set(listed) >= set(COMMANDS)
    text = open(README).read()
    for command in listed:
        assert f"microbatch {command}" in text, command




@pytest.mark.parametrize("command", COMMANDS)
def test_zsh_and_fish_offer_the_values_the_command_accepts(command):
    zsh, fish = open(ZSH).read(), open(FISH).read()
    for option, values in choices(help_text(command)).items():
        offered = re.findall(rf"{re.escape(option)}\[[^\]]*\]:[\w ]+:\(([^)]*)\)", zsh)
        assert offered and all(sorted(v.split()) == sorted(values) for v in offered), f"zsh: {option}"
        offered = re.findall(rf"-l {re.escape(option[2:])} .*?-a '([^']*)'", fish)
        assert offered and all(sorted(v.split()) == sorted(values) for v in offered), f"fish: {option}"


def test_the_man_page_describes_every_value_an_option_takes():
    man = open(MAN).read().replace("\\-", "-")
    for command in COMMANDS:
        for option, values in choices(help_text(command)).items():
            missing = [v for v in values if not re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", man)]
            assert missing == [], f"{option} takes {missing}, which docs/microbatch.1 does not name"


def test_the_newest_changelog_entry_is_the_version_the_tool_prints():
    entries = re.findall(r"^## \[([^\]]+)\]", open(os.path.join(REPO, "CHANGELOG.md")).read(), re.M)
    printed = run("--version", check=0).out.split()[1]
    assert printed == project_version()
    assert entries and entries[0] == printed, f"CHANGELOG.md's newest entry is {entries[:1]}, --version says {printed}"


@pytest.mark.parametrize("page", ["microbatch.1", "microbatch-mpi.1"])
def test_man_pages_take_the_version_from_cmake(page):
    th = [line for line in open(os.path.join(REPO, "docs", page)) if line.startswith(".TH ")]
    assert len(th) == 1 and '"microbatch @PROJECT_VERSION@"' in th[0], th


def doc_pages():
    return [os.path.join(REPO, "README.md"), *sorted(glob.glob(os.path.join(REPO, "docs", "*.md"))),
            os.path.join(REPO, "docs", "microbatch.1"), os.path.join(REPO, "docs", "microbatch-mpi.1")]


def test_versions_shown_in_the_docs_are_the_binarys():
    printed = run("--version", check=0).out.split()[1]
    shown = {(os.path.relpath(page, REPO), v) for page in doc_pages()
             for v in re.findall(r"microbatch (\d+\.\d+\.\d+)\b", open(page).read())}
    assert shown and all(v == printed for _, v in shown), f"--version says {printed}; the docs show {sorted(shown)}"


def test_the_pages_the_man_page_sends_to_for_a_try_out_have_one():
    man = " ".join(open(os.path.join(REPO, "docs", "microbatch.1")).read().split())
    said = re.search(r"([\w.]+\.md) and ([\w.]+\.md) (?:\([^)]*\) )?each have a section \"Try it on one machine\"", man)
    assert said, "the man page's SEE ALSO no longer says which pages have a try-out"
    for page in said.groups():
        text = open(os.path.join(REPO, "docs", page)).read()
        assert re.search(r"^## Try it on one machine$", text, re.M), f"{page} has no section 'Try it on one machine'"
