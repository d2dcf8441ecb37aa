"""Hard links: an object with two (or more) names stays one object with
those names in every microbatch and in the merged file."""
import os
import shutil

import h5py
import numpy as np

from conftest import assert_one_line_error, h5diff, listing, run, write_spec


def addr(f, path):
    return h5py.h5o.get_info(f[path].id).addr


def same_object(f, a, b):
    """h5py's own identity (same file, same object header) and the address agree."""
    return f[a] == f[b] and f[a].id == f[b].id and addr(f, a) == addr(f, b)


def write_linked(path):
    with h5py.File(path, "w") as f:
        f["a"] = np.arange(12, dtype=np.float32).reshape(6, 2)
        f["a"].attrs["unit"] = "m"
        f["b"] = f["a"]  # a dataset under two names
        f["g/x"] = np.arange(6)
        f["g/t"] = np.float64(0.25)
        f["g"].attrs["kind"] = "group"
        f["h"] = f["g"]  # a group under two names
        f["z/also_x"] = f["g/x"]  # a dataset inside the group, linked again elsewhere
        f["c"] = f["a"]  # a third name


LINKED = [("/a", "/b"), ("/a", "/c"), ("/g", "/h"), ("/g/x", "/z/also_x"), ("/g/x", "/h/x")]


def test_dataset_and_group_linked_twice_stay_one_object(tmp_path):
    src = tmp_path / "in.h5"
    write_linked(src)
    run("split", src, "-n", 3, "-o", tmp_path / "mb", check=0)
    for name in ["microbatch-00000.h5", "microbatch-00001.h5", "microbatch-00002.h5"]:
        with h5py.File(tmp_path / "mb" / name) as m:
            for a, b in LINKED:
                assert same_object(m, a, b), (name, a, b)
            assert h5py.h5o.get_info(m["a"].id).rc == 3
            assert m["a"].shape == (2, 2) and m["h/x"].shape == (2,)
    out = tmp_path / "out.h5"
    run("merge", tmp_path / "mb", "-o", out, check=0)
    assert h5diff(src, out) == 0
    with h5py.File(out) as m:
        for a, b in LINKED:
            assert same_object(m, a, b), (a, b)
        assert np.array_equal(m["b"][()], np.arange(12, dtype=np.float32).reshape(6, 2))


def test_hard_links_with_merge_virtual(tmp_path):
    src = tmp_path / "in.h5"
    write_linked(src)
    run("split", src, "-n", 2, "-o", tmp_path / "mb", check=0)
    out = tmp_path / "out.h5"
    run("merge", tmp_path / "mb", "-o", out, "--virtual", check=0)
    assert h5diff(src, out) == 0
    with h5py.File(out) as m:
        assert m["a"].is_virtual
        for a, b in LINKED:
            assert same_object(m, a, b), (a, b)


def test_names_of_one_object_need_the_same_rule(tmp_path):
    src = tmp_path / "in.h5"
    write_linked(src)
    spec = write_spec(tmp_path / "s.json", {"a": 1, "*": None})
    res = run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/a", "/b", "one object", "same rule")
    assert listing(tmp_path / "mb") == []
    spec = write_spec(tmp_path / "s2.json", {"g": None, "h": {"x": "replicate", "t": None}, "*": None})
    res = run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/g/x", "/h/x", "one object")
    assert listing(tmp_path / "mb") == []
    # The same rule given to every name is fine.
    spec = write_spec(tmp_path / "s3.json", {"a": 1, "b": 1, "c": 1, "*": None})
    run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "ok", check=0)


def test_reduced_attributes_of_a_linked_group_need_the_same_rule(tmp_path):
    parts = []
    for i in range(2):
        p = tmp_path / f"part{i}.h5"
        with h5py.File(p, "w") as f:
            f["g/x"] = np.arange(3) + i
            f["g"].attrs["n"] = i + 1
            f["h"] = f["g"]
        parts.append(p)
    spec = write_spec(tmp_path / "s.json", {"g": {"@n": {"reduce": "sum"}, "*": None}, "*": None})
    res = run("merge", *parts, "-s", spec, "-o", tmp_path / "out.h5")
    assert_one_line_error(res, 1, "/g@n", "/h@n", "one object")
    assert not os.path.exists(tmp_path / "out.h5")
    both = write_spec(tmp_path / "s2.json", {"g": {"@n": {"reduce": "sum"}, "*": None},
                                             "h": {"@n": {"reduce": "sum"}, "*": None}})
    run("merge", *parts, "-s", both, "-o", tmp_path / "out.h5", check=0)
    with h5py.File(tmp_path / "out.h5") as m:
        assert m["g"].attrs["n"] == 3 and same_object(m, "/g", "/h")
        assert np.array_equal(m["h/x"][()], [0, 1, 2, 1, 2, 3])


def copy_pieces(tmp_path):
    """The microbatch files of a split, without the manifest (merge FILE...)."""
    src = tmp_path / "in.h5"
    write_linked(src)
    run("split", src, "-n", 2, "-o", tmp_path / "mb", check=0)
    loose = tmp_path / "loose"
    loose.mkdir()
    files = []
    for name in ["microbatch-00000.h5", "microbatch-00001.h5"]:
        shutil.copy(tmp_path / "mb" / name, loose / name)
        files.append(loose / name)
    return files


def test_merge_refuses_an_input_whose_names_are_separate_objects(tmp_path):
    files = copy_pieces(tmp_path)
    with h5py.File(files[1], "a") as f:  # /b: the same values, but its own object
        data = f["b"][()]
        del f["b"]
        f["b"] = data
        f["b"].attrs["unit"] = "m"
    res = run("merge", *files, "-o", tmp_path / "out.h5")
    assert_one_line_error(res, 1, str(files[1]), "/b", "/a", "separate object", "hard link")
    assert not os.path.exists(tmp_path / "out.h5")


def test_merge_refuses_an_input_with_a_hard_link_the_first_lacks(tmp_path):
    files = copy_pieces(tmp_path)
    with h5py.File(files[1], "a") as f:  # /z/also_x becomes a further name of /a
        del f["z/also_x"]
        f["z/also_x"] = f["a"]
    res = run("merge", *files, "-o", tmp_path / "out.h5")
    assert_one_line_error(res, 1, str(files[1]), "/z/also_x is another name of /a", "hard link")
    assert not os.path.exists(tmp_path / "out.h5")


def test_merge_refuses_a_link_the_first_input_does_not_have(tmp_path):
    files = copy_pieces(tmp_path)
    with h5py.File(files[0], "a") as f:  # the first input holds two objects where the second holds one
        data = f["z/also_x"][()]
        del f["z/also_x"]
        f["z/also_x"] = data
    res = run("merge", *files, "-o", tmp_path / "out.h5")
    assert_one_line_error(res, 1, str(files[1]), "/z/also_x", "/g/x", "separate object", "hard link")
    assert not os.path.exists(tmp_path / "out.h5")


def test_names_that_multiply_without_bound_are_refused(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:  # /l29 has 2^29 paths to /l00/x: no cycle, but no tree either
        f["l00/x"] = np.arange(4)
        for i in range(1, 30):
            g = f.create_group(f"l{i:02d}")
            g["a"] = g["b"] = f[f"l{i - 1:02d}"]
    res = run("split", src, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, str(src), "more than 1000000 further names")
    assert listing(tmp_path / "mb") == []
