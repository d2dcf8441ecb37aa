"""Chunks that fall whole inside a microbatch are copied as stored bytes,
without decompressing; the result equals the slab path's (h5diff)."""
import os
import zlib

import h5py
import numpy as np

from conftest import ENV, h5diff, run, write_spec

SLAB_ENV = dict(ENV, MICROBATCH_NO_RAW_COPY="1")


def make(path, rows=64, chunk_rows=8, level_in_chunks=1):
    """A gzip-9 dataset whose chunks were written at gzip level 1: a raw copy
    keeps those bytes, a decompress-recompress would not."""
    data = np.random.default_rng(1).integers(0, 50, size=(rows, 32)).astype(np.int32)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=data.shape, dtype=np.int32, chunks=(chunk_rows, 16), compression="gzip",
                             compression_opts=9)
        for r in range(0, rows, chunk_rows):
            for c in range(0, 32, 16):
                block = np.ascontiguousarray(data[r:r + chunk_rows, c:c + 16])
                if block.shape != (chunk_rows, 16):  # the last chunk is stored at full size
                    full = np.zeros((chunk_rows, 16), np.int32)
                    full[:block.shape[0], :block.shape[1]] = block
                    block = full
                d.id.write_direct_chunk((r, c), zlib.compress(block.tobytes(), level_in_chunks))
        f["y"] = data[:, 0]
    return data


def stored_chunks(path, name="x"):
    with h5py.File(path) as f:
        d = f[name]
        return {d.id.get_chunk_info(i).chunk_offset: d.id.read_direct_chunk(d.id.get_chunk_info(i).chunk_offset)[1]
                for i in range(d.id.get_num_chunks())}


def test_aligned_split_and_merge_copy_chunks_as_stored(tmp_path):
    src = tmp_path / "in.h5"
    make(src)
    res = run("split", src, "-n", 4, "-o", tmp_path / "mb", "-v", check=0)  # 16 rows per microbatch: 2 chunks
    assert "chunks copied as stored bytes" in res.err
    source = stored_chunks(src)
    for i in range(4):
        got = stored_chunks(tmp_path / "mb" / f"microbatch-{i:05d}.h5")
        assert len(got) == 4
        for (r, c), raw in got.items():
            assert raw == source[(r + 16 * i, c)]  # level-1 bytes kept: not recompressed
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0
    assert stored_chunks(tmp_path / "m.h5") == source


def test_raw_path_equals_slab_path_on_uneven_cuts(tmp_path):
    src = tmp_path / "in.h5"
    make(src, rows=61, chunk_rows=8)  # 61 rows, chunks of 8: pieces 21/20/20 are not chunk-aligned
    spec = write_spec(tmp_path / "s.json", {"x": 0, "y": 0})
    for n in [2, 3, 5, 8]:
        raw, slab = tmp_path / f"raw{n}", tmp_path / f"slab{n}"
        run("split", src, "-s", spec, "-n", n, "-o", raw, check=0)
        run("split", src, "-s", spec, "-n", n, "-o", slab, check=0, env=SLAB_ENV)
        for name in sorted(os.listdir(raw)):
            if name.endswith(".h5"):
                assert h5diff(raw / name, slab / name) == 0, (n, name)
        run("merge", raw, "-o", tmp_path / f"m{n}.h5", check=0)
        run("merge", slab, "-o", tmp_path / f"s{n}.h5", check=0, env=SLAB_ENV)
        assert h5diff(src, tmp_path / f"m{n}.h5") == 0
        assert h5diff(tmp_path / f"m{n}.h5", tmp_path / f"s{n}.h5") == 0


def test_data_parallel_pieces_use_raw_chunks_when_aligned(tmp_path):
    src = tmp_path / "in.h5"
    make(src, rows=64, chunk_rows=8)
    res = run("split", src, "-n", 2, "--dp-degree", 2, "-o", tmp_path / "mb", "-v", check=0)
    assert "chunks copied as stored bytes" in res.err
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_variable_length_chunks_are_never_copied_as_stored(tmp_path):
    # A stored chunk of strings or sequences holds addresses in its own file's
    # heap; copied as bytes it would point at nothing in the microbatch.
    src = tmp_path / "in.h5"
    words = np.array([f"word {i}" * (1 + i % 3) for i in range(200_000)], dtype=object)  # over 1 MiB
    seqs = np.empty(200_000, dtype=object)
    seqs[:] = [np.arange(i % 5, dtype=np.int32) for i in range(200_000)]
    with h5py.File(src, "w") as f:
        f.create_dataset("t", data=words, dtype=h5py.string_dtype(), chunks=(10_000,))  # aligned with -n 4
        f.create_dataset("v", data=seqs, dtype=h5py.vlen_dtype(np.int32), chunks=(10_000,), compression="gzip")
    res = run("split", src, "-n", 4, "-o", tmp_path / "mb", "-v", check=0)
    assert "copied as stored bytes" not in res.err
    with h5py.File(tmp_path / "mb" / "microbatch-00003.h5", "r") as f:
        assert f["t"][0].decode() == words[150_000]
        np.testing.assert_array_equal(f["v"][-1], seqs[-1])
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0


def test_many_data_parallel_shards_still_copy_chunks_as_stored(tmp_path):
    """16 shards make 16 segments per microbatch: they keep the raw-chunk path (CP's per-document
    windows are for packed documents only)."""
    src = tmp_path / "in.h5"
    make(src, rows=256, chunk_rows=8)
    source = stored_chunks(src)
    res = run("split", src, "-n", 2, "--dp-degree", 16, "-o", tmp_path / "mb", "-v", check=0)
    assert "chunks copied as stored bytes" in res.err
    got = stored_chunks(tmp_path / "mb" / "microbatch-00000.h5")
    for (r, c), raw in got.items():  # row r of microbatch 0 is piece 0 (8 rows) of shard r // 8
        assert raw == source[(r // 8 * 16, c)]
    run("merge", tmp_path / "mb", "-o", tmp_path / "m.h5", check=0)
    assert h5diff(src, tmp_path / "m.h5") == 0
