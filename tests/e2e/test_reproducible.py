"""The same input, spec and flags give byte-identical microbatch files,
manifest and merged file on every run (outputs record no object times)."""
import ctypes
import filecmp
import time

import h5py
import numpy as np

from conftest import h5diff, listing, run, write_spec


def write_batch(path, track_times):
    rng = np.random.default_rng(5)
    with h5py.File(path, "w", track_order=False) as f:
        f.attrs["step"] = 3
        f.attrs["name"] = "run"
        f.create_dataset("contig", data=rng.standard_normal((40, 8)).astype(np.float32), track_times=track_times)
        f.create_dataset("big", data=np.arange(40 * 4096, dtype=np.int32).reshape(40, 4096),
                         track_times=track_times)  # contiguous, copied as file bytes
        f.create_dataset("gz", data=np.arange(40 * 30, dtype=np.float64).reshape(40, 30), chunks=(7, 30),
                         compression="gzip", compression_opts=4, shuffle=True, track_times=track_times)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        f.create_dataset("compact", data=np.arange(40, dtype=np.int8), dcpl=dcpl, shape=(40,), dtype=np.int8,
                         track_times=track_times)
        f.create_dataset("text", data=np.array([str(i) * (i % 5) for i in range(40)], dtype=h5py.string_dtype()),
                         track_times=track_times)
        f.create_dataset("scalar", data=np.float32(0.5), track_times=track_times)
        g = f.create_group("g/inner")
        g.create_dataset("ids", data=np.arange(40, dtype=np.uint16), chunks=(8,), maxshape=(None,),
                         track_times=track_times)
        g.attrs["kind"] = np.arange(3)
        f["g"].attrs["note"] = "groups"


def hdf5_library():
    """The libhdf5 that h5py has loaded (h5py does not expose object times)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/libhdf5" in path and ".so" in path and "_hl" not in path:
                return ctypes.CDLL(path)
    raise RuntimeError("libhdf5 is not loaded")


def object_times(path):
    """{name: (atime, mtime, ctime, btime)} of every object, by H5Oget_info_by_name2 (1.10's H5O_info_t)."""
    lib = hdf5_library()
    out = {}
    with h5py.File(path, "r") as f:
        names = ["."]
        f.visit(names.append)
        for name in names:
            info = ctypes.create_string_buffer(1024)
            H5O_INFO_TIME = 0x2
            assert lib.H5Oget_info_by_name2(ctypes.c_int64(f.id.id), name.encode(), info, ctypes.c_uint(H5O_INFO_TIME),
                                            ctypes.c_int64(0)) >= 0
            # fileno, addr, type, rc, then four time_t
            out[name] = tuple(int.from_bytes(info.raw[o:o + 8], "little") for o in (24, 32, 40, 48))
    return out


def split(src, spec, out, *flags):
    run("split", src, "-s", spec, "-n", 5, "-o", out, *flags, check=0)
    return listing(out)


def assert_same_files(a, b):
    names = listing(a)
    assert names == listing(b) and "manifest.json" in names
    for name in names:
        assert filecmp.cmp(a / name, b / name, shallow=False), name


def test_split_and_merge_are_byte_identical_on_every_run(tmp_path):
    for track_times in [False, True]:
        base = tmp_path / f"times-{track_times}"
        base.mkdir()
        src = base / "in.h5"
        write_batch(src, track_times)
        spec = write_spec(base / "s.json", {"scalar": "replicate", "*": 0})
        # The manifest names the input as given: every run is given the same path.
        split(src, spec, base / "one")
        time.sleep(1.1)  # object times have a resolution of one second
        split(src, spec, base / "two")
        assert_same_files(base / "one", base / "two")
        split(src, spec, base / "jobs", "-j", 2)
        assert_same_files(base / "one", base / "jobs")
        run("split", src, "-s", spec, "-n", 5, "-o", base / "jobs", "-j", 3, "--force", check=0)
        assert_same_files(base / "one", base / "jobs")
        run("merge", base / "one", "-o", base / "m1.h5", check=0)
        time.sleep(1.1)
        run("merge", base / "one", "-o", base / "m2.h5", check=0)
        assert filecmp.cmp(base / "m1.h5", base / "m2.h5", shallow=False)
        assert h5diff(src, base / "m1.h5") == 0
        run("merge", base / "one", "-o", base / "v1.h5", "--virtual", check=0)
        time.sleep(1.1)
        run("merge", base / "one", "-o", base / "v2.h5", "--virtual", check=0)
        assert filecmp.cmp(base / "v1.h5", base / "v2.h5", shallow=False)
        assert h5diff(src, base / "v1.h5") == 0


def test_outputs_record_no_object_times(tmp_path):
    src = tmp_path / "in.h5"
    write_batch(src, True)
    assert object_times(src)["contig"] != (0, 0, 0, 0)  # the input does record them
    spec = write_spec(tmp_path / "s.json", {"scalar": "replicate", "*": 0})
    split(src, spec, tmp_path / "mb")
    run("merge", tmp_path / "mb", "-o", tmp_path / "out.h5", check=0)
    for path in [tmp_path / "mb" / "microbatch-00000.h5", tmp_path / "out.h5"]:
        times = object_times(path)
        assert len(times) == 10
        for name, t in times.items():
            assert t == (0, 0, 0, 0), (path, name)
