"""The manifest's content digests, computed here from their definition with
Debian's libxxhash (through ctypes, not microbatch's code): XXH3-128 over the
XXH3-128 of each 1 MiB block of the file (16-byte canonical form), then the
size (8 bytes, little-endian). A split hashes the bytes it copies from its
input as they pass, and reads back only the rest; whatever the path, the
digests must be those of the files. Manifests of version 2 (XXH3-128 of
whole files) are still verified and merged."""
import ctypes
import json
import struct

import h5py
import numpy as np
import pytest

from conftest import assert_one_line_error, h5diff, run

_xxhash = ctypes.CDLL("libxxhash.so.0")


class _Hash128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]


_xxhash.XXH3_128bits.restype = _Hash128
_xxhash.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def xxh3_128(data):
    h = _xxhash.XXH3_128bits(data, len(data))
    return struct.pack(">QQ", h.high64, h.low64)  # XXH128's canonical form: the hex microbatch prints


def blocks_digest(path):
    data = path.read_bytes()
    inner = b"".join(xxh3_128(data[at:at + (1 << 20)]) for at in range(0, len(data), 1 << 20))
    return xxh3_128(inner + struct.pack("<Q", len(data))).hex()


def whole_digest(path):
    return xxh3_128(path.read_bytes()).hex()


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Contiguous data copied as file bytes at offsets that are not block-aligned, a chunked dataset and
    small ones written through the library."""
    path = tmp_path_factory.mktemp("digests") / "batch.h5"
    rng = np.random.default_rng(5)
    with h5py.File(path, "w") as f:
        f["pad"] = np.arange(1000, dtype=np.int8)  # moves x's data off any block boundary
        f["x"] = rng.standard_normal((3001, 1500)).astype(np.float32)  # 18 MiB, rows of 6000 bytes
        f.create_dataset("c", data=rng.integers(0, 9, (3001, 40)), chunks=(100, 40), compression="gzip")
        f["y"] = np.arange(3001, dtype=np.int64)
        f.attrs["step"] = 3
    return path


def assert_digests_are_the_files(directory):
    m = json.loads((directory / "manifest.json").read_text())
    assert m["version"] == 3
    for f in m["files"]:
        assert f["xxh3_128_blocks"] == blocks_digest(directory / f["name"]), f["name"]
    return m


@pytest.mark.parametrize("options", [[], ["-j", "2"], ["--resume"], ["--buffer-size", "1"]],
                         ids=["hashed-as-copied", "workers", "resume", "steps-of-1-MiB"])
def test_split_digests_are_the_files_block_digests(tmp_path, batch, options):
    out = tmp_path / "mb"
    run("split", batch, "-n", 3, "-o", out, *options, check=0)
    assert_digests_are_the_files(out)
    run("verify", out, check=0)
    run("merge", out, "-o", tmp_path / "m.h5", check=0)
    assert h5diff(batch, tmp_path / "m.h5") == 0


def test_a_shard_split_and_finish_record_the_files_block_digests(tmp_path, batch):
    out = tmp_path / "mb"
    for k in range(2):
        run("split", batch, "-n", 3, "-o", out, "--shard", f"{k}/2", check=0)
    run("finish", out, check=0)
    assert_digests_are_the_files(out)


def as_version_2(directory):
    """Rewrites a split's manifest as microbatch 0.6 wrote it: version 2, XXH3-128 of whole files."""
    manifest = directory / "manifest.json"
    m = json.loads(manifest.read_text())
    m["version"] = 2
    for f in m["files"]:
        del f["xxh3_128_blocks"]
        f["xxh3_128"] = whole_digest(directory / f["name"])
    manifest.write_text(json.dumps(m, indent=2))
    return m


def test_a_version_2_split_is_still_verified_and_merged(tmp_path, batch):
    out = tmp_path / "mb"
    run("split", batch, "-n", 3, "-o", out, check=0)
    m = as_version_2(out)
    # The split id covers the file records, whose digests were of the other kind: set it as 0.6 would have.
    m["split_id"] = xxh3_128(json.dumps(
        {"spec": m["spec"], "options": m["options"], "files": [[f["name"], f["size"], f["xxh3_128"]]
                                                                for f in m["files"]]},
        separators=(",", ":"), ensure_ascii=False).encode()).hex()
    (out / "manifest.json").write_text(json.dumps(m, indent=2))
    run("verify", out, check=0)
    run("merge", out, "-o", tmp_path / "m.h5", check=0)
    assert h5diff(batch, tmp_path / "m.h5") == 0
    # A changed byte is found by the whole-file digest as well.
    target = out / "microbatch-00001.h5"
    data = bytearray(target.read_bytes())
    data[-1] ^= 1
    target.write_bytes(bytes(data))
    assert_one_line_error(run("merge", out, "-o", tmp_path / "m2.h5"), 1, "microbatch-00001.h5",
                          "its content digest differs from the manifest's")
    assert not (tmp_path / "m2.h5").exists()
