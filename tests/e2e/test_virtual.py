"""merge --virtual: split leaves become virtual datasets over the microbatch
files, nothing is copied, replicated leaves are still checked."""
import os
import shutil

import h5py
import numpy as np

from conftest import assert_one_line_error, h5diff, run, write_spec


def make(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(0).standard_normal((200, 500)), chunks=(10, 500),
                         compression="gzip")  # 800 KB that gzip cannot shrink
        f["cols"] = np.arange(600).reshape(3, 200)
        f["text"] = np.array([f"s{i}" for i in range(200)], dtype=h5py.string_dtype())
        f["t"] = np.float32(0.5)
        f["x"].attrs["unit"] = "m"
        f.attrs["step"] = 4


def test_virtual_merge_reads_back_exactly_and_copies_nothing(tmp_path):
    src = tmp_path / "in.h5"
    make(src)
    spec = write_spec(tmp_path / "s.json", {"x": 0, "cols": 1, "text": 0, "t": "replicate"})
    run("split", src, "-s", spec, "-n", 4, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "v.h5", check=0)
    assert h5diff(src, tmp_path / "v.h5") == 0
    with h5py.File(tmp_path / "v.h5") as v:
        assert v["x"].is_virtual and v["cols"].is_virtual and v["text"].is_virtual
        assert not v["t"].is_virtual
        sources = {m.file_name for m in v["x"].virtual_sources()}
        assert sources == {str((tmp_path / "mb" / f"microbatch-{i:05d}.h5").resolve()) for i in range(4)}
    assert os.path.getsize(tmp_path / "v.h5") < os.path.getsize(src) / 4


def test_virtual_merge_of_data_parallel_layouts(tmp_path):
    src = tmp_path / "in.h5"
    make(src)
    spec = write_spec(tmp_path / "s.json", {"x": 0, "cols": 1, "text": 0, "t": "replicate"})
    for layout in ["per-microbatch", "per-rank"]:
        out = tmp_path / layout
        run("split", src, "-s", spec, "-n", 3, "--dp-degree", 2, "--align", "--layout", layout, "-o", out, check=0)
        run("merge", out, "--virtual", "-o", tmp_path / f"{layout}.h5", check=0)
        assert h5diff(src, tmp_path / f"{layout}.h5") == 0


def test_virtual_merge_still_checks_replicated_leaves_and_needs_the_files(tmp_path):
    src = tmp_path / "in.h5"
    make(src)
    run("split", src, "-n", 2, "-o", tmp_path / "mb", check=0)
    with h5py.File(tmp_path / "mb" / "microbatch-00001.h5", "a") as f:
        f["t"][()] = 0.25
    # The manifest's digest finds the change first; without that check the values do.
    assert_one_line_error(run("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "v.h5"), 1,
                          "microbatch-00001.h5", "content digest differs")
    assert_one_line_error(run("merge", tmp_path / "mb", "--virtual", "--no-verify", "-o", tmp_path / "v.h5"), 1,
                          "/t", "0.5 vs 0.25")
    assert not (tmp_path / "v.h5").exists()
    os.remove(tmp_path / "mb" / "microbatch-00000.h5")
    assert_one_line_error(run("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "v.h5"), 1,
                          "microbatch-00000.h5")


def test_packed_offsets_are_materialized_in_a_virtual_merge(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f["tok"] = np.arange(20)
        f["cu"] = np.array([0, 3, 9, 10, 20])
    spec = write_spec(tmp_path / "s.json", {"tok": {"packed": "/cu"}, "cu": "offsets"})
    run("split", src, "-s", spec, "-n", 2, "-o", tmp_path / "mb", check=0)
    run("merge", tmp_path / "mb", "--virtual", "-o", tmp_path / "v.h5", check=0)
    assert h5diff(src, tmp_path / "v.h5") == 0
    with h5py.File(tmp_path / "v.h5") as v:
        assert v["tok"].is_virtual and not v["cu"].is_virtual
