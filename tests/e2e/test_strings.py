"""Variable-length strings: contiguous inputs are read from their global heap
without libhdf5's per-string conversion, and contiguous outputs written to
theirs without libhdf5's per-string inserts (io/transfer/strings.cpp),
everything else through libhdf5. Either way every microbatch holds exactly
the input's strings (judged with h5py), merge gives the input back (h5diff),
and libhdf5 reads and extends the collections written past it."""
import os
import subprocess

import h5py
import numpy as np
import pytest

from conftest import ENV, assert_one_line_error, h5diff, run

LIBRARY_ENV = dict(ENV, MICROBATCH_NO_RAW_COPY="1")
FAST = "strings read from the global heap"
PACKED = "strings written to the global heap"
# Above kWholeInMemory (1 MiB of char*): copied piece by piece, not read whole.
ROWS = 140_000


def strings(kind, rows=ROWS):
    if kind == "ascii":
        return [f"prompt {i} " + "x" * (i % 37) for i in range(rows)]
    if kind == "utf8":
        return [f"Grüße {i} — 東京 " + "é" * (i % 9) for i in range(rows)]
    if kind == "empty":
        return ["" if i % 3 else f"s{i}" for i in range(rows)]
    if kind == "long":  # some strings larger than a heap collection's 4 KiB
        return [("L" * (5000 + i) if i % 997 == 0 else f"short {i}") for i in range(rows)]
    raise ValueError(kind)


def make(path, kind, layout, shape=None):
    data = np.array(strings(kind), dtype=object)
    if shape:
        data = data.reshape(shape)
    dtype = h5py.string_dtype("ascii" if kind in ("ascii", "empty") else "utf-8")
    if kind == "ascii":
        data = np.array([s.encode() for s in data.ravel()], dtype=object).reshape(data.shape)
    opts = {"contiguous": {}, "chunked": {"chunks": (4096,) + data.shape[1:]},
            "gzip": {"chunks": (4096,) + data.shape[1:], "compression": "gzip"}}[layout]
    with h5py.File(path, "w") as f:
        f.create_dataset("text", data=data, dtype=dtype, **opts)
    return data


def fast_count(res, phrase=FAST):
    """Strings the log says were read from the heap (written to it, with
    phrase=PACKED) and through libhdf5."""
    fast = slow = 0
    for line in res.err.splitlines():
        if phrase in line:
            words = line.split()
            fast += int(words[words.index("strings") - 1])
            slow += int(words[words.index("through") - 1])
    return fast, slow


def values(path):
    with h5py.File(path) as f:
        return f["text"][()]


@pytest.mark.parametrize("kind", ["ascii", "utf8", "empty", "long"])
@pytest.mark.parametrize("layout", ["contiguous", "chunked", "gzip"])
def test_strings_split_and_merge_exactly(tmp_path, kind, layout):
    src = tmp_path / "in.h5"
    data = make(src, kind, layout)
    res = run("split", src, "-n", 3, "-o", tmp_path / "mb", "-v", check=0)
    # The heap paths take every contiguous string, and nothing else (outputs
    # keep the input's layout).
    expected = (ROWS, 0) if layout == "contiguous" else (0, 0)
    assert fast_count(res) == expected and fast_count(res, PACKED) == expected, res
    for i, part in enumerate(np.array_split(data, 3)):
        got = values(tmp_path / "mb" / f"microbatch-{i:05d}.h5")
        assert got.tolist() == part.tolist() if kind == "ascii" else [s.decode() for s in got] == part.tolist()
    res = run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", "-v", check=0)
    assert fast_count(res) == expected and fast_count(res, PACKED) == expected, res
    assert h5diff(src, tmp_path / "m.h5") == 0


def stored_addresses(path):
    """The collection address of every stored element record of /text
    (contiguous, 8-byte addresses): 0 is a null string."""
    with h5py.File(path) as f:
        d = f["text"]
        offset, n = d.id.get_offset(), d.size
    raw = np.fromfile(path, dtype=np.uint8, count=16 * n, offset=offset).reshape(n, 16)
    return raw[:, 4:12].copy().view("<u8").ravel()


def test_heap_path_and_library_path_write_the_same(tmp_path):
    # Half the elements never written: null strings (collection address 0),
    # which libhdf5 reads as null pointers and writes back as null; the
    # written ones include empty strings, which are not null.
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        d = f.create_dataset("text", (ROWS,), dtype=h5py.string_dtype())
        d[: ROWS // 2] = np.array(strings("empty", ROWS // 2), dtype=object)
    nulls = stored_addresses(src) == 0
    assert nulls[ROWS // 2:].all() and not nulls[: ROWS // 2].any()
    fast = run("split", src, "-n", 4, "-o", tmp_path / "fast", "-v", check=0)
    slow = run("split", src, "-n", 4, "-o", tmp_path / "slow", "-v", env=LIBRARY_ENV, check=0)
    assert fast_count(fast) == (ROWS, 0) and fast_count(slow) == (0, 0)
    assert fast_count(fast, PACKED) == (ROWS, 0) and fast_count(slow, PACKED) == (0, 0)
    for i, part in enumerate(np.array_split(nulls, 4)):
        name = f"microbatch-{i:05d}.h5"
        assert values(tmp_path / "fast" / name).tolist() == values(tmp_path / "slow" / name).tolist()
        assert ((stored_addresses(tmp_path / "fast" / name) == 0) == part).all()
        assert ((stored_addresses(tmp_path / "slow" / name) == 0) == part).all()
    run("merge", tmp_path / "fast", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0
    assert ((stored_addresses(tmp_path / "m.h5") == 0) == nulls).all()


def test_two_dimensional_strings_and_rows_cut_along_axis_1(tmp_path):
    src = tmp_path / "in.h5"
    data = make(src, "utf8", "contiguous", shape=(ROWS // 4, 4))
    res = run("split", src, "-n", 2, "-o", tmp_path / "mb", "-v", check=0)
    assert fast_count(res) == (ROWS, 0), res
    for i, part in enumerate(np.array_split(data, 2)):
        got = values(tmp_path / "mb" / f"microbatch-{i:05d}.h5")
        assert [[s.decode() for s in row] for row in got] == part.tolist()
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0
    # Columns cut along axis 1: each file's rows are strided runs, so every
    # block goes through libhdf5, with the same result.
    spec = tmp_path / "s.json"
    spec.write_text('{"text": 1}')
    res = run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "cols", "-v", check=0)
    fast, slow = fast_count(res)
    assert fast + slow == ROWS and slow > 0, res
    for i, part in enumerate(np.array_split(data, 2, axis=1)):
        got = values(tmp_path / "cols" / f"microbatch-{i:05d}.h5")
        assert [[s.decode() for s in row] for row in got] == part.tolist()
    run("merge", tmp_path / "cols", "-o", tmp_path / "mc.h5", check=0)
    assert h5diff(src, tmp_path / "mc.h5") == 0


def test_small_buffer_cuts_pieces_and_leaves_huge_collections_to_libhdf5(tmp_path):
    # --buffer-size 1: blocks of 1 MiB of records and pointers, pieces of at
    # most 1 MiB of string bytes; the 3 MiB strings live in collections larger
    # than the budget, so their blocks are read by libhdf5.
    src = tmp_path / "in.h5"
    data = np.array([("H" * (3 << 20) if i in (7, 90_000) else "m" * (i % 300)) for i in range(ROWS)], dtype=object)
    with h5py.File(src, "w") as f:
        f.create_dataset("text", data=data, dtype=h5py.string_dtype())
    res = run("split", src, "-n", 2, "-o", tmp_path / "mb", "-v", "--buffer-size", 1, check=0)
    fast, slow = fast_count(res)
    assert fast + slow == ROWS and fast > 0 and slow > 0, res
    for i, part in enumerate(np.array_split(data, 2)):
        assert [s.decode() for s in values(tmp_path / "mb" / f"microbatch-{i:05d}.h5")] == part.tolist()
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", "--buffer-size", 1, check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_damaged_heap_collection_is_an_error_not_wrong_strings(tmp_path):
    # One collection's signature overwritten: the heap path refuses it and
    # leaves the block to libhdf5, which refuses it too (one line, naming the
    # file and the dataset); no microbatch is left behind.
    src = tmp_path / "in.h5"
    make(src, "ascii", "contiguous")
    raw = bytearray(src.read_bytes())
    at = raw.find(b"GCOL", len(raw) // 2)
    assert at > 0
    raw[at:at + 4] = b"GCOX"
    src.write_bytes(bytes(raw))
    res = run("split", src, "-n", 3, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "in.h5", "/text")
    assert not os.path.exists(tmp_path / "mb")


def collections(path):
    """{address: (size, {index: (refcount, bytes)})} of every global heap
    collection the records of /text point at (8-byte sizes), parsed as the
    file format spec lays them out."""
    raw = path.read_bytes()
    out = {}
    for address in set(stored_addresses(path).tolist()) - {0}:
        assert raw[address:address + 5] == b"GCOL\x01"
        size = int.from_bytes(raw[address + 8:address + 16], "little")
        objects, at = {}, address + 16
        while at + 16 <= address + size:
            index = int.from_bytes(raw[at:at + 2], "little")
            refs = int.from_bytes(raw[at + 2:at + 4], "little")
            length = int.from_bytes(raw[at + 8:at + 16], "little")
            if index == 0:  # the free space, its header counted in its size
                at += length
                continue
            objects[index] = (refs, raw[at + 16:at + 16 + length])
            at += 16 + (length + 7) // 8 * 8
        assert at == address + size
        out[address] = (size, objects)
    return out


def test_collections_written_past_libhdf5_are_libhdf5s_own_layout_and_it_extends_them(tmp_path):
    src = tmp_path / "in.h5"
    data = make(src, "long", "contiguous")
    res = run("split", src, "-n", 3, "-o", tmp_path / "mb", "-v", check=0)
    assert fast_count(res, PACKED) == (ROWS, 0), res
    res = run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", "-v", check=0)
    assert fast_count(res, PACKED) == (ROWS, 0), res
    merged = tmp_path / "m.h5"
    assert h5diff(src, merged) == 0
    # As H5HG lays collections out: 4 KiB to 64 KiB (one larger string
    # alone), objects numbered from 1 with no references counted; every
    # record's string is its object's bytes.
    heap = collections(merged)
    assert len(heap) > 10
    for size, objects in heap.values():
        assert size % 8 == 0 and size >= 4096 and (size <= 65536 or len(objects) == 1)
        assert sorted(objects) == list(range(1, len(objects) + 1))
        assert all(refs == 0 for refs, _ in objects.values())
    with h5py.File(merged) as f:
        offset = f["text"].id.get_offset()
    records = np.fromfile(merged, dtype=np.uint8, count=16 * ROWS, offset=offset).reshape(ROWS, 16)
    for i in (0, 1, 997, 1994, ROWS - 1):
        length = int.from_bytes(records[i, :4].tobytes(), "little")
        address = int.from_bytes(records[i, 4:12].tobytes(), "little")
        index = int.from_bytes(records[i, 12:].tobytes(), "little")
        assert heap[address][1][index][1] == data[i].encode() and length == len(data[i])
    # libhdf5 rewrites strings in those collections (freeing objects in
    # them), adds its own, and repacks the file: the strings stay right.
    expected = [s.encode() for s in data]
    with h5py.File(merged, "r+") as f:
        f["text"][5:8] = np.array(["new", "", "N" * 70_000], dtype=object)
        f.create_dataset("more", data=np.array([f"more {i}" for i in range(3000)], dtype=object),
                         dtype=h5py.string_dtype())
    expected[5:8] = [b"new", b"", b"N" * 70_000]
    with h5py.File(merged) as f:
        assert f["text"][()].tolist() == expected and f["more"][2999] == b"more 2999"
    subprocess.run(["h5repack", str(merged), str(tmp_path / "r.h5")], check=True)
    assert h5diff(merged, tmp_path / "r.h5") == 0
    # Through libhdf5 instead: the same strings.
    res = run("merge", tmp_path / "mb", "-o", tmp_path / "slow.h5", "-v", env=LIBRARY_ENV, check=0)
    assert fast_count(res, PACKED) == (0, 0), res
    assert h5diff(src, tmp_path / "slow.h5") == 0


def test_strings_libhdf5_read_are_written_past_it_and_a_few_short_ones_left_to_it(tmp_path):
    # A user block: the input's heap addresses are not file offsets, so
    # libhdf5 reads the strings; the outputs have none, so they are written
    # past it. Pieces of 32,769 strings: blocks of 32,768 and 1, and one short
    # string would leave most of a 4 KiB collection free: libhdf5 writes it,
    # into a collection it shares.
    rows = 8 * 32_769
    src = tmp_path / "in.h5"
    data = np.array([f"s{i}" for i in range(rows)], dtype=object)
    with h5py.File(src, "w", userblock_size=512) as f:
        f.create_dataset("text", data=data, dtype=h5py.string_dtype())
    res = run("split", src, "-n", 8, "-o", tmp_path / "mb", "-v", check=0)
    assert fast_count(res) == (0, rows), res
    assert fast_count(res, PACKED) == (rows - 8, 8), res
    for i, part in enumerate(np.array_split(data, 8)):
        assert [s.decode() for s in values(tmp_path / "mb" / f"microbatch-{i:05d}.h5")] == part.tolist()
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_strings_with_a_fill_value_of_their_own_are_left_to_libhdf5(tmp_path):
    # libhdf5 writes a user's fill value into the heap for every element when
    # it allocates the dataset, and frees what H5Dwrite overwrites: records
    # written past it would leave those fill strings behind (values right,
    # the file half again as large). Such outputs are written with H5Dwrite.
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        d = f.create_dataset("text", (ROWS,), dtype=h5py.string_dtype(), fillvalue=b"unset")
        d[: ROWS // 2] = np.array(strings("ascii", ROWS // 2), dtype=object)
    expected = values(src).tolist()
    assert expected[-1] == b"unset"
    res = run("split", src, "-n", 4, "-o", tmp_path / "mb", "-v", check=0)
    assert fast_count(res) == (ROWS, 0) and fast_count(res, PACKED) == (0, ROWS), res
    res = run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", "-v", check=0)
    assert fast_count(res, PACKED) == (0, ROWS), res
    assert values(tmp_path / "m.h5").tolist() == expected
    slow = run("merge", tmp_path / "mb", "-o", tmp_path / "slow.h5", env=LIBRARY_ENV, check=0)
    assert slow.code == 0
    assert os.path.getsize(tmp_path / "m.h5") <= os.path.getsize(tmp_path / "slow.h5") * 1.05


@pytest.mark.parametrize("options", [["-n", "2"], ["-n", "2", "-j", "2"], ["-n", "2", "--cp-degree", "2"]],
                         ids=["plain", "jobs", "context-parallel"])
def test_ascii_strings_beside_utf8_ones_keep_their_character_set(tmp_path, options):
    """libhdf5 1.10 takes variable-length strings of either character set for the same type: an ASCII
    dataset beside a UTF-8 attribute must neither be read through the other's type nor come back UTF-8."""
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("s", data=["a", "b", "c", "d"], dtype=h5py.string_dtype("ascii"))
        f["x"] = np.arange(16).reshape(4, 4)
        f.attrs["u"] = ""
        f["x"].attrs.create("b", "z", dtype=h5py.string_dtype("ascii"))
    spec = '{"s": 0, "x": {"split_axis": 0, "sequence_axis": 1}}'
    run("split", src, "--spec-json", spec, *options, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    assert h5diff(src, tmp_path / "out.h5") == 0
    with h5py.File(tmp_path / "out.h5") as f:
        assert h5py.check_string_dtype(f["s"].dtype).encoding == "ascii"
        assert f["s"][()].tolist() == [b"a", b"b", b"c", b"d"]
