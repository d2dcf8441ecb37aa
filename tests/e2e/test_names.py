"""Every name HDF5 allows works end to end: names that are not UTF-8, names
that are words of the spec language ("*", "@x", "split_axis", ...), and
backslashes. In JSON (spec keys, manifest, inspect --json) a name is written
as is, with a backslash as \\\\ and each byte that is not UTF-8 as \\xNN; a
member key that would read as a keyword has its first character as \\xNN."""
import json
import shutil

import h5py
import numpy as np
import pytest

import conftest
from conftest import assert_one_line_error, h5diff, listing, write_spec

# (name as HDF5 holds it, the spec key that names that member)
MEMBER_NAMES = [
    (b"\xff\xfe", "\\xff\\xfe"),
    (b"@foo", "\\x40foo"),
    (b"@", "\\x40"),
    (b"*", "\\x2a"),
    (b"split_axis", "\\x73plit_axis"),
    (b"reduce", "\\x72educe"),
    (b"packed", "\\x70acked"),
    (b"per_sequence", "\\x70er_sequence"),
    (b"axis", "axis"),
    (b"a\\b", "a\\\\b"),
    (b"\\x41", "\\\\x41"),
    (b"nl\nx", "nl\nx"),
    ("caf\u00e9".encode(), "caf\u00e9"),
    (b"\xc3(", "\\xc3("),
    (b"\xed\xa0\x80", "\\xed\\xa0\\x80"),  # an encoded surrogate is not UTF-8
]
IDS = [repr(n) for n, _ in MEMBER_NAMES]


def unescape(text):
    """The name a JSON string stands for (the README's rule)."""
    out, i = bytearray(), 0
    data = text.encode()
    while i < len(data):
        if data[i:i + 2] == b"\\\\":
            out += b"\\"
            i += 2
        elif data[i:i + 2] == b"\\x":
            out.append(int(data[i + 2:i + 4], 16))
            i += 4
        else:
            out.append(data[i])
            i += 1
    return bytes(out)


def escape(name):
    """How JSON writes a name or path (Python's UTF-8 decoder is as strict as RFC 3629)."""
    text = name.decode("utf-8", errors="surrogateescape").replace("\\", "\\\\")
    return "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text)


def run(*args, **kwargs):
    """Output may hold names that are not UTF-8 (inspect's text, log lines)."""
    return conftest.run(*args, errors="surrogateescape", **kwargs)


def make_batch(path, name):
    """A dataset, a group and attributes called `name`, beside ordinary ones."""
    with h5py.File(path, "w") as f:
        f.create_dataset(name, data=np.arange(12, dtype=np.int32).reshape(6, 2))
        g = f.create_group(b"g")
        g.create_group(name).create_dataset(b"x", data=np.arange(6, dtype=np.float32))
        g.create_dataset(b"y", data=np.arange(6, dtype=np.int8))
        f.attrs.create(name, 7)
        f[name].attrs.create(name, b"v")
        f.create_dataset(b"scalar", data=np.float64(0.5))
    return path


def all_paths(path):
    """Every object path, as bytes."""
    out = [b"/"]
    with h5py.File(path, "r") as f:
        def visit(group, prefix):
            for link in group.id.__iter__():
                p = prefix + b"/" + link
                out.append(p)
                obj = group[link]
                if isinstance(obj, h5py.Group):
                    visit(obj, p)
        visit(f, b"")
    return sorted(out)


@pytest.mark.parametrize("name,key", MEMBER_NAMES, ids=IDS)
def test_split_merge_round_trips_every_name(tmp_path, name, key):
    src = make_batch(tmp_path / "in.h5", name)
    run("split", src, "-n", 3, "-o", tmp_path / "mb", check=0)
    manifest = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    assert key in manifest["spec"] and key in manifest["spec"]["g"]
    assert escape(b"/" + name) in manifest["datasets"] and escape(b"/g/" + name + b"/x") in manifest["datasets"]
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0
    # the files alone, with the manifest's spec given by -s
    loose = tmp_path / "loose"
    loose.mkdir()
    for f in manifest["files"]:
        shutil.copy(tmp_path / "mb" / f["name"], loose / f["name"])
    spec = write_spec(tmp_path / "spec.json", manifest["spec"])
    run("merge", *sorted(loose.glob("*.h5")), "-s", spec, "-o", tmp_path / "files.h5", check=0)
    assert h5diff(src, tmp_path / "files.h5") == 0


@pytest.mark.parametrize("name,key", MEMBER_NAMES, ids=IDS)
def test_inspect_json_escapes_names(tmp_path, name, key):
    src = make_batch(tmp_path / "in.h5", name)
    out = json.loads(run("inspect", src, "-n", 2, "--json", check=0).out)
    paths = [unescape(n["path"]) for n in out["tree"]]
    assert sorted(paths) == all_paths(src)
    assert [n["path"] for n in out["tree"]] == [escape(p) for p in paths]
    root = next(n for n in out["tree"] if n["path"] == "/")
    assert unescape(root["attributes"][0]["name"]) == name
    dataset = next(n for n in out["tree"] if unescape(n["path"]) == b"/" + name)
    assert [unescape(a["name"]) for a in dataset["attributes"]] == [name]
    assert dataset["rows"] == [[[0, 3, 1]], [[3, 6, 1]]]
    # the text output shows every member too
    text = run("inspect", src, check=0).out
    assert text.count("\n") >= len(paths)


def test_a_spec_names_every_kind_of_member_by_its_escape(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        for name, _ in MEMBER_NAMES:
            f.create_dataset(name, data=np.arange(8, dtype=np.int16).reshape(4, 2))
        f.create_dataset(b"rest", data=np.arange(6))
    spec = {key: (1 if i % 2 else "replicate") for i, (_, key) in enumerate(MEMBER_NAMES)}
    spec["*"] = 0  # the wildcard still works beside a member called "*"
    write_spec(tmp_path / "s.json", spec)
    res = json.loads(run("inspect", src, "-s", tmp_path / "s.json", "--json", check=0).out)
    rules = {unescape(n["path"]): n.get("rule") for n in res["tree"]}
    for i, (name, _) in enumerate(MEMBER_NAMES):
        assert rules[b"/" + name] == ({"mode": "split", "axis": 1} if i % 2 else {"mode": "replicate"}), name
    assert rules[b"/rest"] == {"mode": "split", "axis": 0}
    run("split", src, "-s", tmp_path / "s.json", "-n", 2, "-o", tmp_path / "mb", check=0)
    with h5py.File(tmp_path / "mb" / "microbatch-00000.h5") as m:
        for i, (name, _) in enumerate(MEMBER_NAMES):
            assert m[name].shape == ((4, 1) if i % 2 else (4, 2)), name
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0


def test_attribute_reducers_on_odd_attribute_names(tmp_path):
    names = [b"\xfe", b"@x", b"*", b"a\\b", b"split_axis", b"a/b", b"."]
    keys = ["@\\xfe", "@@x", "@*", "@a\\\\b", "@split_axis", "@a/b", "@."]
    files = []
    for i in range(3):
        path = tmp_path / f"mb{i}.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.arange(2) + 2 * i)
            for k, n in enumerate(names):
                f.attrs.create(n, np.int64(10 * k + i))
        files.append(path)
    spec = write_spec(tmp_path / "s.json", {**{k: {"reduce": "sum"} for k in keys}, "*": 0})
    run("merge", *files, "-s", spec, "-o", tmp_path / "out.h5", check=0)
    with h5py.File(tmp_path / "out.h5") as f:
        for k, n in enumerate(names):
            assert int(f.attrs[n]) == sum(10 * k + i for i in range(3)), n


def test_packed_sequences_below_a_name_that_is_not_utf8(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        g = f.create_group(b"\xff")
        g.create_dataset(b"cu", data=np.array([0, 3, 4, 9], np.int32))
        g.create_dataset(b"@tok", data=np.arange(9))
        g.create_dataset(b"*", data=np.arange(3))
    spec = write_spec(tmp_path / "s.json", {"\\xff": {
        "cu": "offsets", "\\x40tok": {"packed": "/\\xff/cu"}, "\\x2a": {"per_sequence": "/\\xff/cu"}}})
    run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "mb", check=0)
    manifest = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    assert manifest["sequences"]["offsets"] == ["/\\xff/cu"]
    assert manifest["spec"]["\\xff"]["\\x40tok"] == {"packed": "/\\xff/cu", "axis": 0}
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0
    seq = json.loads(run("inspect", src, "-s", spec, "-n", 2, "--json", check=0).out)["sequences"]
    assert seq["offsets"] == ["/\\xff/cu"]


@pytest.mark.parametrize("spec,needles", [
    ({"a\\q": 0}, ["s.json:1:2:", "unknown escape \"\\q\""]),
    ({"x": 0, "\\x78": 1}, ["names the same member as an earlier key"]),
    ({"x": {"packed": "/a\\"}}, ["unknown escape"]),
])
def test_bad_escapes_in_a_spec_are_named(tmp_path, spec, needles):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(4)
    write_spec(tmp_path / "s.json", spec)
    assert_one_line_error(run("split", src, "-s", tmp_path / "s.json", "-n", 2, "-o", tmp_path / "mb"), 1, *needles)
    assert listing(tmp_path / "mb") == []


def test_a_source_file_name_that_is_not_utf8(tmp_path):
    src = bytes(tmp_path) + b"/in-\xff.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(4)
    res = run("split", src.decode(errors="surrogateescape"), "-n", 2, "-o", tmp_path / "mb")
    assert res.code == 0, res
    manifest = json.loads((tmp_path / "mb" / "manifest.json").read_text())
    assert unescape(manifest["source"]) == src
    out = json.loads(run("inspect", src.decode(errors="surrogateescape"), "--json", check=0).out)
    assert unescape(out["file"]) == src


def test_inspect_keeps_attributes_apart_when_paths_and_names_hold_at_signs(tmp_path):
    # "/x@" with attribute "y" and "/x" with attribute "@y" both read "/x@@y"
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["x@"] = 1
        f["x@"].attrs["y"] = 1
        f["x"] = 2
        f["x"].attrs["@y"] = 2
    tree = json.loads(run("inspect", src, "--json", check=0).out)["tree"]
    values = {(n["path"], a["name"]): a["value"] for n in tree for a in n["attributes"]}
    assert values == {("/x@", "y"): 1, ("/x", "@y"): 2}
    text = run("inspect", src, check=0).out
    assert "@@y = 2" in text and "@y = 1" in text
