"""The shared h5diff helper every test judges with: equal only when h5diff compared everything and found no
difference (h5diff itself exits 0 on objects it cannot compare)."""
import h5py
import numpy as np
import pytest

from conftest import h5diff


def write(path, **members):
    with h5py.File(path, "w") as f:
        f.attrs["step"] = 3
        for name, value in members.items():
            f[name] = value
    return path


BASE = {"x": np.arange(4, dtype="i4"), "g/y": np.float64(2.5), "empty": np.zeros((0, 3), "f4"),
        "null": h5py.Empty("f8"), "text": np.array(["a", "b"], dtype=h5py.string_dtype())}


def test_equal_files_with_empty_datasets_are_equal(tmp_path):
    assert h5diff(write(tmp_path / "a.h5", **BASE), write(tmp_path / "b.h5", **BASE)) == 0


@pytest.mark.parametrize("name,other", [
    ("x", np.arange(4, dtype="f8")),                 # another class: "not comparable", exit 0
    ("x", np.arange(4, dtype="i8")),                 # another storage type, values equal
    ("x", np.arange(4, dtype="i4").reshape(2, 2)),   # another shape
    ("x", np.array([0, 1, 2, 4], dtype="i4")),       # another value
    ("empty", np.zeros((0, 4), "f4")),               # empty, another shape
    ("empty", np.zeros((0, 3), "f8")),               # empty, another type
    ("null", h5py.Empty("i8")),                      # null dataspace, another type
    ("text", np.array([b"a", b"b"])),                # fixed-length against variable-length strings
    # ASCII against UTF-8 variable-length strings of the same content: h5diff sees no difference
    ("text", np.array(["a", "b"], dtype=h5py.string_dtype("ascii"))),
])
def test_any_difference_is_one(tmp_path, name, other):
    changed = dict(BASE, **{name: other})
    assert h5diff(write(tmp_path / "a.h5", **BASE), write(tmp_path / "b.h5", **changed)) != 0


def test_unwritten_datasets_are_compared_by_the_values_they_read_as(tmp_path):
    files = []
    for name, fill in [("a", 2.5), ("b", 2.5), ("c", -1.0)]:
        with h5py.File(tmp_path / f"{name}.h5", "w") as f:
            f.create_dataset("x", shape=(10, 3), dtype="f4", fillvalue=fill)  # never written: no storage
        files.append(tmp_path / f"{name}.h5")
    assert h5diff(files[0], files[1]) == 0
    assert h5diff(files[0], files[2]) != 0


def test_a_missing_member_or_attribute_is_a_difference(tmp_path):
    a = write(tmp_path / "a.h5", **BASE)
    fewer = {k: v for k, v in BASE.items() if k != "g/y"}
    assert h5diff(a, write(tmp_path / "b.h5", **fewer)) != 0
    b = write(tmp_path / "c.h5", **BASE)
    with h5py.File(b, "a") as f:
        f.attrs["step"] = 4
    assert h5diff(a, b) != 0


def test_virtual_datasets_are_compared(tmp_path):
    source = write(tmp_path / "source.h5", x=np.arange(4))
    layout = h5py.VirtualLayout(shape=(4,), dtype="i8")
    layout[:] = h5py.VirtualSource(str(source), "x", shape=(4,))
    with h5py.File(tmp_path / "virtual.h5", "w") as f:
        f.attrs["step"] = 3
        f.create_virtual_dataset("x", layout)
    assert h5diff(source, tmp_path / "virtual.h5") == 0
    other = write(tmp_path / "other.h5", x=np.array([0, 1, 2, 5]))
    assert h5diff(tmp_path / "virtual.h5", other) != 0


def test_an_attribute_of_another_datatype_is_a_difference(tmp_path):
    a = write(tmp_path / "a.h5", **BASE)
    b = write(tmp_path / "b.h5", **BASE)
    for path, encoding in [(a, "utf-8"), (b, "ascii")]:
        with h5py.File(path, "a") as f:
            f["x"].attrs.create("name", "n", dtype=h5py.string_dtype(encoding))
    assert h5diff(a, b) != 0
