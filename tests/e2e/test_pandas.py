"""pandas / PyTables files: written by DataFrame.to_hdf itself, each piece
read back with pandas.read_hdf and judged against pandas' own slicing
(df.iloc[rows]); the merge against df. Never against our own reading."""
import json
import os

import h5py
import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("tables")

from conftest import assert_one_line_error, run, summary, write_spec

N = 50


def make_df(seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.integers(-100, 100, N),
            "b": rng.normal(size=N),
            "s": [f"name{i}" * (1 + i % 3) for i in range(N)],
            "f": rng.random(N).astype(np.float32),
        },
        index=pd.Index(np.arange(N) * 10 + 3, name="id"),
    )


# The spec the pandas preset builds for a table at /df, written by hand.
SPEC = {"df": {"table": {"split_axis": 0, "@NROWS": {"num_rows": "/df/table"}}, "_i_table": "drop"}}


def piece_rows(n, count):
    return [list(part) for part in np.array_split(np.arange(n), count)]


@pytest.mark.parametrize("data_columns", [None, True])
@pytest.mark.parametrize("count", [1, 4])
def test_table_pieces_are_iloc_rows_and_merge_is_df(tmp_path, data_columns, count):
    df = make_df()
    src = tmp_path / "df.h5"
    df.to_hdf(src, "df", format="table", data_columns=data_columns)
    with h5py.File(src) as f:
        assert "_i_table" in f["df"]  # PyTables indexed the table: the pieces hold no index tables
    out = tmp_path / "mb"
    run("split", src, "-s", write_spec(tmp_path / "spec.json", SPEC), "-n", count, "-o", out, check=0)
    for i, rows in enumerate(piece_rows(N, count)):
        path = out / f"microbatch-{i:05d}.h5"
        pd.testing.assert_frame_equal(pd.read_hdf(path, "df"), df.iloc[rows])
        with h5py.File(path) as f:
            assert f["df/table"].attrs["NROWS"] == len(rows)
            assert "_i_table" not in f["df"]
    merged = tmp_path / "merged.h5"
    run("merge", out, "-o", merged, check=0)
    pd.testing.assert_frame_equal(pd.read_hdf(merged, "df"), df)


def test_a_piece_answers_where_queries_on_data_columns(tmp_path):
    """Without its index tables, PyTables answers a query by scanning: the
    piece gives the rows of df.iloc[rows] that match."""
    df = make_df()
    src = tmp_path / "df.h5"
    df.to_hdf(src, "df", format="table", data_columns=True)
    out = tmp_path / "mb"
    run("split", src, "-s", write_spec(tmp_path / "spec.json", SPEC), "-n", 2, "-o", out, check=0)
    got = pd.read_hdf(out / "microbatch-00001.h5", "df", where="a > 0")
    part = df.iloc[25:]
    pd.testing.assert_frame_equal(got, part[part.a > 0])


def test_split_refuses_an_nrows_that_is_not_the_tables(tmp_path):
    df = make_df()
    src = tmp_path / "df.h5"
    df.to_hdf(src, "df", format="table")
    with h5py.File(src, "r+") as f:
        f["df/table"].attrs["NROWS"] = np.int64(N - 1)
    res = run("split", src, "-s", write_spec(tmp_path / "spec.json", SPEC), "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/df/table@NROWS", f"num_rows {N - 1}", f"/df/table has {N} rows")


def test_drop_is_refused_on_merge_and_on_attributes(tmp_path):
    df = make_df()
    src = tmp_path / "df.h5"
    df.to_hdf(src, "df", format="table")
    res = run("merge", src, "-s", write_spec(tmp_path / "spec.json", SPEC), "-o", tmp_path / "m.h5")
    assert_one_line_error(res, 1, "\"drop\" applies to split only")
    assert not os.path.exists(tmp_path / "m.h5")
    spec = {"df": {"table": 0, "_i_table": "drop", "@pandas_type": "drop"}}
    res = run("split", src, "-s", write_spec(tmp_path / "spec.json", spec), "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/df@pandas_type cannot be dropped")


def test_inspect_shows_what_split_drops(tmp_path):
    df = make_df()
    src = tmp_path / "df.h5"
    df.to_hdf(src, "df", format="table")
    res = run("inspect", src, "-s", write_spec(tmp_path / "spec.json", SPEC), check=0)
    assert "drop (not written by split)" in res.out
    # inspect --json: the drop and num_rows rules, valid against the schema
    doc = json.dumps(summary(run("inspect", src, "--json", check=0), "inspect"))
    assert '"mode": "drop"' in doc and '"quantity": "num_rows"' in doc


@pytest.mark.parametrize("data_columns", [None, True])
def test_preset_cuts_tables_and_drops_index_tables(tmp_path, data_columns):
    """No spec: the pandas preset is detected; every table of the store is
    cut by its own length (array_split), NROWS per piece."""
    df = make_df()
    other = make_df(1).iloc[:17]
    src = tmp_path / "store.h5"
    df.to_hdf(src, "df", format="table", data_columns=data_columns)
    other.to_hdf(src, "grp/other", format="table")
    res = run("inspect", src, check=0)
    assert "preset: pandas (detected" in res.out
    out = tmp_path / "mb"
    run("split", src, "-n", 3, "-o", out, check=0)
    for i, (rows, rows_other) in enumerate(zip(piece_rows(N, 3), piece_rows(17, 3))):
        path = out / f"microbatch-{i:05d}.h5"
        pd.testing.assert_frame_equal(pd.read_hdf(path, "df"), df.iloc[rows])
        pd.testing.assert_frame_equal(pd.read_hdf(path, "grp/other"), other.iloc[rows_other])
    merged = tmp_path / "merged.h5"
    run("merge", out, "-o", merged, check=0)
    pd.testing.assert_frame_equal(pd.read_hdf(merged, "df"), df)
    pd.testing.assert_frame_equal(pd.read_hdf(merged, "grp/other"), other)
    virtual = tmp_path / "virtual.h5"  # NROWS of a virtual table: the merged length
    run("merge", out, "--virtual", "-o", virtual, check=0)
    pd.testing.assert_frame_equal(pd.read_hdf(virtual, "df"), df)
    pd.testing.assert_frame_equal(pd.read_hdf(virtual, "grp/other"), other)


def test_preset_cuts_a_fixed_frame_of_numbers(tmp_path):
    df = make_df().drop(columns=["s"])
    src = tmp_path / "fixed.h5"
    df.to_hdf(src, "df", format="fixed")
    out = tmp_path / "mb"
    run("split", src, "-n", 4, "-o", out, check=0)
    for i, rows in enumerate(piece_rows(N, 4)):
        pd.testing.assert_frame_equal(pd.read_hdf(out / f"microbatch-{i:05d}.h5", "df"), df.iloc[rows])
    merged = tmp_path / "merged.h5"
    run("merge", out, "-o", merged, check=0)
    pd.testing.assert_frame_equal(pd.read_hdf(merged, "df"), df)


def test_preset_refuses_pickled_object_columns(tmp_path):
    df = make_df()  # "s" is an object column: format="fixed" pickles it
    src = tmp_path / "fixed.h5"
    df.to_hdf(src, "df", format="fixed")
    res = run("split", src, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, str(src), "/df/block", "_values", "pickled", 'format="table"')
    assert not os.path.exists(tmp_path / "mb" / "manifest.json")
