"""Per-KB structures a request reads instead of passing over whole tables (large repositories stay fast): each
gives exactly what the plain pass gives, on tables shaped to hit its edge cases."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.dataflows.retrieval import symbol_signals
from cra.dataflows.retrieval.import_graph import import_graph


def test_the_import_graph_finds_the_rows_a_mask_over_every_edge_finds():
    rng = np.random.default_rng(7)
    edges = pd.DataFrame(
        {"src_file_id": rng.integers(0, 40, 500).astype("int32"), "dst_file_id": rng.integers(0, 55, 500)}
    )
    edges.loc[::50, "dst_file_id"] = edges.loc[::50, "src_file_id"]  # self-imports
    graph = import_graph(edges)
    src, dst = edges["src_file_id"].to_numpy(), edges["dst_file_id"].to_numpy()
    for files in ([], [3], [0, 39, 54], [5, 5, 2], list(range(0, 60, 3)), [1000]):  # the last two by a table
        assert graph.rows_from(files).tolist() == np.flatnonzero(np.isin(src, files)).tolist()
        assert graph.rows_into(files).tolist() == np.flatnonzero(np.isin(dst, files)).tolist()
        out, into = np.isin(src, files) & (src != dst), np.isin(dst, files) & (src != dst)
        assert graph.neighbours(files).tolist() == np.unique(np.concatenate([dst[out], src[into]])).tolist()
    assert graph.src.dtype == np.int32  # the table's own dtype: callers' frames keep theirs
    assert len(import_graph(pd.DataFrame())) == 0 and not len(import_graph(pd.DataFrame()).rows_from([1]))


def _reference_scores(m: pd.DataFrame, score: np.ndarray) -> np.ndarray:
    """MEMBER_SHARE by a scan: each container below its best member (same file, name under it, no constructor)."""
    out = score.copy()
    names, files, kinds = m["qualified_name"].tolist(), m["file_id"].tolist(), m["kind"].tolist()
    constructor = [len(t) == 2 and t[0] == t[1] for t in (n.split(".")[-2:] for n in names)]
    for i, (name, file, kind) in enumerate(zip(names, files, kinds)):
        if kind not in symbol_signals.CONTAINER_KINDS:
            continue
        members = [
            score[j]
            for j, (other, f) in enumerate(zip(names, files))
            if f == file and other.startswith(name + ".") and not constructor[j]
        ]
        best = max(members, default=-np.inf)
        if symbol_signals.MEMBER_SHARE * score[i] <= best < score[i]:
            out[i] = np.nextafter(best, -np.inf)
    return out


def test_a_container_ranks_just_below_its_best_member_as_a_scan_of_every_row_says():
    rows = [
        (1, "Map", "interface", 1.0),
        (1, "Map.get", "method", 0.95),  # close enough: Map goes just below it
        (1, "Map.Entry", "interface", 0.97),  # Map's best member
        (1, "Map.Entry.getKey", "method", 0.96),  # a nested member counts for both containers
        (1, "Mapper.map", "method", 0.99),  # a longer name, not a member
        (2, "Map.put", "method", 0.99),  # another file's member does not count
        (2, "Map", "class", 0.5),
        (2, "Map.Map", "method", 0.49),  # the constructor does not count
        (3, "Node", "class", 0.8),
        (3, "Node.next", "field", 0.2),  # too far below: Node keeps its score
        (3, "Node-1.x", "method", 0.79),  # "-" sorts before ".": not a member
        (3, "Node/x", "method", 0.79),  # "/" sorts after ".": not a member
    ]
    m = pd.DataFrame(rows, columns=["file_id", "qualified_name", "kind", "score"])
    score = m["score"].to_numpy(dtype=float)
    got = symbol_signals._below_best_member(m, score)
    assert got.tolist() == _reference_scores(m, score).tolist()
    assert got[0] == np.nextafter(0.97, -np.inf) and got[6] == 0.5 and got[8] == 0.8  # the cases above happened


def test_range_maxima_are_the_maxima_of_the_slices():
    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 64, 300):
        values = np.where(rng.random(n) < 0.2, -np.inf, rng.random(n))
        lo = rng.integers(0, n + 1, 200)
        hi = np.minimum(lo + rng.integers(0, n + 1, 200), n)
        want = [values[a:b].max() if b > a else -np.inf for a, b in zip(lo, hi)]
        assert symbol_signals._range_max(values, lo, hi).tolist() == want


def test_per_file_sums_are_the_groupby_sums_for_dense_and_sparse_file_ids():
    from cra.dataflows.retrieval.signals import _per_file

    rng = np.random.default_rng(11)
    for top in (50, 10**12):
        rows = pd.Series(rng.choice(rng.integers(0, top, 30), 400))
        values = rng.random(400) < 0.3
        ids = np.unique(np.concatenate([rows.to_numpy()[:20], rng.integers(0, top, 10)]))
        want = pd.Series(values).groupby(rows.to_numpy()).sum().reindex(ids, fill_value=0).to_numpy(dtype=float)
        assert _per_file(rows, values, ids).tolist() == want.tolist()
