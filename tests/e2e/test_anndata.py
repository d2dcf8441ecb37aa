"""AnnData .h5ad files: written by anndata itself, split by cells (obs), each
piece read back with anndata.read_h5ad and judged against anndata's own
slicing of the original object (adata[rows], adata.obs.iloc[rows]); the
merge is judged against the original. Never against our own reading."""
import json
import os

import h5py
import numpy as np
import pytest

anndata = pytest.importorskip("anndata")
pd = pytest.importorskip("pandas")
sp = pytest.importorskip("scipy.sparse")

from conftest import assert_one_line_error, run, summary, write_spec

N_OBS, N_VARS = 40, 12


def make_adata(seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(N_OBS, N_VARS, density=0.3, format="csr", random_state=seed, dtype=np.float32)
    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(rng.choice(["B", "T", "NK", "Mono"], N_OBS)),
            "n_genes": rng.integers(0, 1000, N_OBS),
            "batch": [f"run{i % 3}" for i in range(N_OBS)],
            "qc": rng.normal(size=N_OBS),
        },
        index=[f"cell{i}" for i in range(N_OBS)],
    )
    var = pd.DataFrame(
        {"gene_ids": [f"ENSG{i:05d}" for i in range(N_VARS)], "highly_variable": rng.random(N_VARS) > 0.5},
        index=[f"G{i}" for i in range(N_VARS)],
    )
    a = anndata.AnnData(X=X, obs=obs, var=var)
    a.layers["counts"] = sp.csr_matrix(np.round(X.toarray() * 10))
    a.layers["dense"] = X.toarray() * 2
    a.obsm["X_pca"] = rng.normal(size=(N_OBS, 3))
    a.obsm["connect"] = sp.random(N_OBS, 5, density=0.4, format="csr", random_state=seed + 1)
    a.varm["PCs"] = rng.normal(size=(N_VARS, 3))
    a.uns["params"] = {"n_pcs": 3, "method": "umap", "weights": np.arange(4.0)}
    a.uns["title"] = "a test"
    return a


def csr(path):
    return {"indptr": "offsets", "data": {"packed": f"{path}/indptr"}, "indices": {"packed": f"{path}/indptr"},
            "@shape": {"num_sequences": f"{path}/indptr", "index": 0}}


def cells(path="/X/indptr"):
    return {"per_sequence": path}  # one row per cell: the rows X's indptr gives each piece


# The spec the anndata preset builds for make_adata()'s file, written by hand.
SPEC = {
    "X": csr("/X"),
    "layers": {"counts": csr("/layers/counts"), "dense": cells()},
    # write_h5ad stores string columns as categoricals too (batch)
    "obs": {"_index": cells(), "cell_type": {"codes": cells(), "categories": "replicate"}, "n_genes": cells(),
            "batch": {"codes": cells(), "categories": "replicate"}, "qc": cells()},
    "obsm": {"X_pca": cells(), "connect": csr("/obsm/connect")},
    "var": "replicate", "varm": "replicate", "varp": "replicate", "obsp": "replicate", "uns": "replicate",
}


def rows_of_pieces(a, pieces):
    """Each piece's cells as positions in `a` (by name): contiguous runs, in order, covering every cell."""
    out = [np.asarray(a.obs_names.get_indexer(anndata.read_h5ad(p).obs_names), dtype=np.int64) for p in pieces]
    assert [int(i) for rows in out for i in rows] == list(range(a.n_obs))
    return out


def piece_rows(n, count):
    return [list(part) for part in np.array_split(np.arange(n), count)]


def assert_same_matrix(a, b):
    if isinstance(b, pd.DataFrame):  # a dataframe in obsm
        return pd.testing.assert_frame_equal(a, frame(b))
    assert a.shape == b.shape and a.dtype == b.dtype
    if sp.issparse(a) or sp.issparse(b):
        assert sp.issparse(a) and sp.issparse(b)
        assert a.format == b.format
        assert (a != b).nnz == 0
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def assert_same_uns(a, b):
    assert set(a) == set(b)
    for k in a:
        if isinstance(a[k], dict):
            assert_same_uns(a[k], b[k])
        else:
            np.testing.assert_array_equal(a[k], b[k])


def frame(df):
    return pd.DataFrame(df)  # a view's DataFrameView, as a plain frame (assert_frame_equal checks the class)


def assert_same_adata(piece, expected, obs=None):
    """piece against anndata's own object; obs (when given) against the dataframe's own slicing."""
    assert piece.shape == expected.shape
    assert_same_matrix(piece.X, expected.X)
    pd.testing.assert_frame_equal(piece.var, frame(expected.var))
    if obs is None:
        pd.testing.assert_frame_equal(piece.obs, frame(expected.obs))
    else:
        # Categories are replicated (every piece keeps the batch's); anndata's
        # view drops unused ones, pandas' own slicing keeps them.
        pd.testing.assert_frame_equal(piece.obs, obs)
        trimmed = piece.obs.copy()
        for c in trimmed.columns:
            if isinstance(trimmed[c].dtype, pd.CategoricalDtype):
                trimmed[c] = trimmed[c].cat.remove_unused_categories()
        pd.testing.assert_frame_equal(trimmed, frame(expected.obs))
    assert set(piece.layers.keys()) == set(expected.layers.keys())
    for k in expected.layers.keys():
        assert_same_matrix(piece.layers[k], expected.layers[k])
    assert set(piece.obsm.keys()) == set(expected.obsm.keys())
    for k in expected.obsm.keys():
        assert_same_matrix(piece.obsm[k], expected.obsm[k])
    for k in expected.varm.keys():
        assert_same_matrix(piece.varm[k], expected.varm[k])
    assert_same_uns(piece.uns, expected.uns)


def split_pieces(tmp_path, src, count, *args):
    out = tmp_path / "mb"
    run("split", src, *args, "-n", count, "-o", out, check=0)
    return out, [out / f"microbatch-{i:05d}.h5ad" for i in range(count)]


@pytest.mark.parametrize("balance", ["tokens", "sequences"])
@pytest.mark.parametrize("count", [1, 3, 7])
def test_pieces_are_adata_rows_and_merge_is_adata(tmp_path, count, balance):
    a = make_adata()
    src = tmp_path / "a.h5ad"
    a.write_h5ad(src)
    out, pieces = split_pieces(tmp_path, src, count, "-s", write_spec(tmp_path / "spec.json", SPEC),
                               "--balance", balance)
    rows_each = rows_of_pieces(a, pieces)
    if balance == "sequences":  # array_split of the cells
        assert [list(r) for r in rows_each] == piece_rows(N_OBS, count)
    for path, rows in zip(pieces, rows_each):
        piece = anndata.read_h5ad(path)
        with h5py.File(path) as f:  # the shape attributes state the piece's own rows
            assert list(f["X"].attrs["shape"]) == [len(rows), N_VARS]
            assert list(f["obsm/connect"].attrs["shape"]) == [len(rows), 5]
        assert_same_adata(piece, a[rows], obs=a.obs.iloc[rows])
    merged = tmp_path / "merged.h5ad"
    run("merge", out, "-o", merged, check=0)
    assert_same_adata(anndata.read_h5ad(merged), a)


def test_dense_x_and_an_empty_piece(tmp_path):
    a = make_adata()
    a.X = a.X.toarray()
    src = tmp_path / "a.h5ad"
    a.write_h5ad(src)
    # The cells' rows come from the first CSR matrix left: layers/counts.
    spec = json.loads(json.dumps(dict(SPEC, X=cells())).replace("/X/indptr", "/layers/counts/indptr"))
    out, pieces = split_pieces(tmp_path, src, 41, "-s", write_spec(tmp_path / "spec.json", spec),
                               "--on-short", "empty")
    rows_each = rows_of_pieces(a, pieces)
    assert sorted(map(len, rows_each)) == [0] + [1] * 40
    for path, rows in zip(pieces, rows_each):
        assert_same_adata(anndata.read_h5ad(path), a[rows], obs=a.obs.iloc[rows])
    merged = tmp_path / "merged.h5ad"
    run("merge", out, "-o", merged, check=0)
    assert_same_adata(anndata.read_h5ad(merged), a)


def test_csc_split_along_var(tmp_path):
    """A CSC matrix is cut along the axis its indptr indexes: the columns
    (var), with obs replicated; each piece is adata[:, cols]."""
    a = make_adata()
    a = anndata.AnnData(X=sp.csc_matrix(a.X), obs=a.obs, var=a.var)
    src = tmp_path / "a.h5ad"
    a.write_h5ad(src)
    spec = {"X": dict(csr("/X"), **{"@shape": {"num_sequences": "/X/indptr", "index": 1}}),
            "var": {"_index": 0, "gene_ids": 0, "highly_variable": 0},
            "obs": "replicate", "obsm": "replicate", "layers": "replicate", "varm": "replicate",
            "varp": "replicate", "obsp": "replicate", "uns": "replicate"}
    out, pieces = split_pieces(tmp_path, src, 3, "-s", write_spec(tmp_path / "spec.json", spec))
    for path, cols in zip(pieces, piece_rows(N_VARS, 3)):
        piece = anndata.read_h5ad(path)
        expected = a[:, cols]
        assert_same_matrix(piece.X, expected.X)
        pd.testing.assert_frame_equal(piece.var, frame(expected.var))
        pd.testing.assert_frame_equal(piece.obs, frame(expected.obs))
    merged = tmp_path / "merged.h5ad"
    run("merge", out, "-o", merged, check=0)
    m = anndata.read_h5ad(merged)
    assert_same_matrix(m.X, a.X)
    pd.testing.assert_frame_equal(m.var, a.var)


def test_merge_refuses_pieces_whose_column_counts_differ(tmp_path):
    """shape[1] beside the derived shape[0] is replicated: pieces of different
    matrices are refused, not merged under the first one's column count."""
    a = make_adata()
    src = tmp_path / "a.h5ad"
    a.write_h5ad(src)
    out, pieces = split_pieces(tmp_path, src, 2, "-s", write_spec(tmp_path / "spec.json", SPEC))
    os.remove(out / "manifest.json")  # files given alone, with a spec
    with h5py.File(pieces[1], "r+") as f:
        f["X"].attrs["shape"] = np.array([20, N_VARS + 1], dtype=np.int64)
    res = run("merge", *pieces, "-s", write_spec(tmp_path / "spec.json", SPEC), "-o", tmp_path / "m.h5ad")
    assert_one_line_error(res, 1, "/X@shape")
    assert not os.path.exists(tmp_path / "m.h5ad")


def test_split_refuses_a_shape_that_is_not_its_indptr(tmp_path):
    a = make_adata()
    src = tmp_path / "a.h5ad"
    a.write_h5ad(src)
    with h5py.File(src, "r+") as f:
        f["X"].attrs["shape"] = np.array([N_OBS + 1, N_VARS], dtype=np.int64)
    res = run("split", src, "-s", write_spec(tmp_path / "spec.json", SPEC), "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/X@shape", f"num_sequences {N_OBS + 1}", f"give num_sequences {N_OBS}")
    assert not os.path.exists(tmp_path / "mb" / "microbatch-00000.h5ad")


def test_index_needs_a_1d_integer_attribute(tmp_path):
    a = make_adata()
    src = tmp_path / "a.h5ad"
    a.write_h5ad(src)
    spec = dict(SPEC, X=dict(csr("/X"), **{"@shape": {"num_sequences": "/X/indptr", "index": 2}}))
    res = run("split", src, "-s", write_spec(tmp_path / "spec.json", spec), "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, "/X@shape", "\"index\": 2", "shape (2,)")


def test_preset_builds_the_spec_from_the_tree(tmp_path):
    """No spec: the anndata preset is detected (root encoding-type) and cuts
    cells, whatever the file holds (raw, nullable columns, a dataframe in obsm)."""
    a = make_adata()
    a.obs["maybe"] = pd.array([None if i % 5 == 0 else i for i in range(N_OBS)], dtype="Int64")
    a.obsm["meta"] = pd.DataFrame({"x": np.arange(N_OBS) * 0.5}, index=a.obs_names)
    a.raw = a
    src = tmp_path / "a.h5ad"
    a.write_h5ad(src)
    res = run("inspect", src, check=0)
    assert "preset: anndata (detected" in res.out
    assert "num_sequences of /X/indptr, per file, as element 0" in res.out
    doc = summary(run("inspect", src, "--json", check=0), "inspect")  # valid against the schema
    assert '"index": 0' in json.dumps(doc)
    out, pieces = split_pieces(tmp_path, src, 3)
    for path, rows in zip(pieces, rows_of_pieces(a, pieces)):
        piece = anndata.read_h5ad(path)
        expected = a[rows]
        assert_same_adata(piece, expected, obs=a.obs.iloc[rows])
        assert_same_matrix(piece.raw.X, expected.raw.X)
        pd.testing.assert_frame_equal(piece.raw.var, frame(expected.raw.var))
    merged = tmp_path / "merged.h5ad"
    run("merge", out, "-o", merged, check=0)
    m = anndata.read_h5ad(merged)
    assert_same_adata(m, a)
    assert_same_matrix(m.raw.X, a.raw.X)
    virtual = tmp_path / "virtual.h5ad"
    run("merge", out, "--virtual", "-o", virtual, check=0)
    assert_same_adata(anndata.read_h5ad(virtual), a)


def test_preset_refuses_a_csc_matrix_it_would_cut_by_cells(tmp_path):
    a = make_adata()
    a.layers["counts"] = sp.csc_matrix(a.layers["counts"])
    src = tmp_path / "a.h5ad"
    a.write_h5ad(src)
    res = run("split", src, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, str(src), "/layers/counts", "CSC", "tocsr()")
    assert not os.path.exists(tmp_path / "mb" / "manifest.json")


def test_preset_refuses_obsp(tmp_path):
    """obsp (cell x cell) is refused: a pair of cells may span two pieces."""
    a = make_adata()
    a.obsp["distances"] = sp.random(N_OBS, N_OBS, density=0.1, format="csr", random_state=3)
    src = tmp_path / "a.h5ad"
    a.write_h5ad(src)
    res = run("split", src, "-n", 2, "-o", tmp_path / "mb")
    assert_one_line_error(res, 1, str(src), "/obsp/distances", "cell x cell")
    assert not os.path.exists(tmp_path / "mb" / "manifest.json")
