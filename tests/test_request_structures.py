"""Per-KB structures a request reads instead of passing over whole tables (large repositories stay fast): each
gives exactly what the plain pass gives, on tables shaped to hit its edge cases."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

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


def _random_table(seed: int, by_file: bool):
    """A KB symbol table of random symbols (in file order or not) and edges (by source or not), with the DAG's node."""
    rng = np.random.default_rng(seed)
    n = 300
    words = ["get", "put", "map", "entry", "Hash", "resize", "", "node"]
    names = ["".join(w.capitalize() for w in rng.choice(words, rng.integers(1, 4))) or "X" for _ in range(n)]
    file_id = np.sort(rng.integers(0, 40, n)) if by_file else rng.integers(0, 40, n)
    symbols = pd.DataFrame(
        {
            "symbol_id": np.arange(100, 100 + n),
            "file_id": file_id.astype("int32"),
            "name": names,
            "qualified_name": [f"C{i % 7}.{name}" for i, name in enumerate(names)],
            "kind": rng.choice(["class", "method", "function", "field"], n),
            "start_line": rng.integers(1, 500, n),
            "end_line": rng.integers(500, 900, n),
            "body_tokens": rng.integers(1, 300, n),
            "docstring": [None] * n,
            "parent_id": pd.array([None] * n, "Int32"),
        }
    )
    src = rng.integers(100, 100 + n, 900)
    edges = pd.DataFrame(
        {
            "src_symbol_id": np.sort(src) if by_file else src,
            "dst_symbol_id": rng.integers(100, 100 + n, 900),
            "kind": rng.choice(["call", "base", "annotation"], 900),
        }
    )
    from tests.retrieval_dag import run_node

    return symbols, run_node("kb_symbol_table", kb_symbols=symbols, kb_symbol_edges=edges)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("by_file", [True, False])
def test_the_symbol_table_finds_the_rows_a_mask_over_every_symbol_edge_and_name_finds(seed, by_file):
    _, table = _random_table(seed, by_file)
    assert (table._by_file[0] is None) == by_file and (table._by_source[0] is None) == by_file  # both paths run
    rng = np.random.default_rng(seed)
    for files in ([], [3], [0, 39, 12], [5, 5, 2], list(range(0, 60, 3)), [1000]):
        rows = table.rows_of_files(np.array(files, dtype=np.int64))
        assert rows.tolist() == np.flatnonzero(np.isin(table.file_id, files)).tolist()
        assert table.edges_from(rows).tolist() == np.flatnonzero(np.isin(table.edge_src, rows)).tolist()
    codes = rng.integers(0, len(table.name_term_total), 25)
    shuffled = dataclasses.replace(table, name_term_code=rng.permutation(table.name_term_code))
    for names in (table, shuffled):  # (a KB's (name, term) rows come sorted by name)
        terms, of = names.name_term_rows(codes)
        want = [np.flatnonzero(names.name_term_code == code) for code in codes]
        assert terms.tolist() == np.concatenate(want).tolist()
        assert of.tolist() == np.repeat(np.arange(len(codes)), [len(w) for w in want]).tolist()


def _reference_scoped(scope: pd.DataFrame, table) -> dict:
    """What `scoped_symbols` finds, by masks over every symbol and every edge."""
    rows = np.flatnonzero(np.isin(table.file_id, scope.index.to_numpy()))
    local = np.full(len(table.symbol_id), -1, dtype=np.int64)
    local[rows] = np.arange(len(rows))
    src, dst = local[table.edge_src], local[table.edge_dst]
    inside = (src >= 0) & (dst >= 0)
    kinds = table.edge_kind[np.flatnonzero(inside)]
    return {
        "rows": rows,
        "local": local,
        "edge_src": src[inside],
        "edge_dst": dst[inside],
        "edge_at": np.flatnonzero(inside),
        "type_edge": np.isin(kinds, ("annotation", "base")),
    }


@pytest.mark.parametrize("by_file", [True, False])
def test_scoped_symbols_and_their_names_match_a_pass_over_every_symbol(by_file):
    from cra.dataflows.retrieval.precision import scoped_symbols

    _, table = _random_table(3, by_file)
    files = [7, 3, 21, 30, 0, 12, 15, 18, 27, 33, 36, 39, 9, 24, 1000]  # not in order; the last holds no symbol
    scope = pd.DataFrame(
        {"rank": np.arange(1, 16), "seed": [True, None] + [False] * 13, "is_test": [False] * 15},
        index=pd.Index(files, name="file_id"),
    )
    s = scoped_symbols(scope, table)
    for name, want in _reference_scoped(scope, table).items():
        assert getattr(s, name).tolist() == want.tolist(), name
    assert len(s.edge_src) > 20 and s.type_edge.any()  # the edges the case is about are there
    weight_of = {"map": 1.0, "entri": 1.0, "hash": 0.5, "put": 0.5, "nowhere": 1.0}  # (stemmed name terms)
    kb_rows = s.rows[::2]
    row_weight = np.zeros(len(table.term_vocabulary))
    for word, w in weight_of.items():
        row_weight[table.term_vocabulary == word] = w
    row_weight = row_weight[table.name_term_id]
    n_names = len(table.name_term_total)  # the whole-table reference: a bincount over every (name, term) row
    matched = np.bincount(table.name_term_code[row_weight > 0], minlength=n_names)
    weight = np.bincount(table.name_term_code, weights=row_weight, minlength=n_names)
    code = table.name_code[kb_rows]
    named = code >= 0
    code = np.where(named, code, 0)
    total = np.where(named, table.name_term_total[code], 0)
    coverage = np.divide(matched[code], total, out=np.zeros(len(code)), where=total > 0)
    strong = (coverage >= 1.0) | ((coverage >= 0.5) & (weight[code] >= symbol_signals.STRONG_WEIGHT))
    want = np.where(named & strong & (weight[code] >= 1.0), coverage, 0.0)
    got = symbol_signals._name(table, kb_rows, weight_of)
    assert got.tolist() == want.tolist() and (got > 0).any()


@pytest.mark.parametrize("ids", [[3, 4, 5, 6, 7, 8], [2, 5, 9, 11, 40, 41], [9, 2, 11, 5, 40, 41]])
def test_values_spread_over_the_files_as_a_lookup_of_every_file_spreads_them(ids):
    from cra.dataflows.retrieval.signals import _over_files

    files = pd.DataFrame({"file_id": np.array(ids, dtype=np.int32)})
    for values in (
        pd.Series([0.5, 2.0, -1.0, 0.25], index=[ids[4], ids[0], ids[2], 1000]),  # clipped; 1000 is no file
        pd.Series([0.3, np.nan], index=pd.Index([ids[1], ids[5]], dtype="int64")),
        pd.Series([0.7, 0.1], index=[float(ids[3]), np.nan]),  # a float index (an unowned symbol): looked up
        pd.Series([], dtype=float),
    ):
        at = pd.Index(values.index).get_indexer(files["file_id"].to_numpy())
        want = np.where(at >= 0, values.to_numpy(dtype=float)[np.maximum(at, 0)] if len(values) else 0.0, 0.0)
        got = _over_files(files, values)
        assert got.tolist() == np.clip(np.nan_to_num(want), 0.0, 1.0).tolist()
        assert got.index.tolist() == ids and got.index.name == "file_id"


def test_matched_words_of_names_read_from_their_rows_are_those_of_a_pass_over_every_row():
    from cra.dataflows.retrieval.precision import _matched_words, _term_weights

    _, table = _random_table(4, True)
    term_weight = _term_weights(table, {"map": 1.0, "entri": 0.5, "nowhere": 1.0})
    hit = term_weight[table.name_term_id] > 0  # the whole-table reference: a flag per (name, term) row
    codes = np.unique(np.random.default_rng(4).integers(0, len(table.name_term_total), 40))
    want = {}
    for code in codes.tolist():
        a, b = np.searchsorted(table.name_term_code, [code, code + 1])
        want[code] = ", ".join(f"'{t}'" for t in table.term_vocabulary[table.name_term_id[a:b][hit[a:b]]])
    got = _matched_words(table, codes, term_weight)
    assert got == want and any(", " in words for words in got.values())  # names matching two terms are there


@pytest.mark.parametrize("ids", [[3, 4, 5, 6, 7], [2, 5, 9, 11, 40], [9, 2, 11, 5, 40]])
def test_file_rows_by_id_are_the_rows_a_hash_lookup_and_a_mask_find(ids):
    from cra.dataflows.retrieval.symbol_table import rows_of_ids, rows_with

    ids = pd.Series(np.array(ids, dtype=np.int32))
    for wanted in ([], [ids[3]], [ids[4], 1000, ids[0], -1], [ids[2], ids[2], ids[1]]):
        wanted = np.array(wanted, dtype=np.int64)
        assert rows_with(ids, wanted).tolist() == np.flatnonzero(np.isin(ids, wanted)).tolist()
        if len(set(wanted.tolist())) == len(wanted):
            assert rows_of_ids(ids, wanted).tolist() == pd.Index(ids).get_indexer(wanted).tolist()
