"""`search_symbols`' matching: every symbol's name, qualified name and path lowered once per loaded KB, each query
matched over them by Arrow's string kernels.

Why: matching a query lowered and concatenated the name, qualified name and path of every symbol again, which on
OpenJDK (745k symbols) took 1.5-2 s a call; a served KB is asked many times (an agent polls for what it just wrote).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cra.dataflows.distinct import distinct_union

_CACHED = "_symbol_search_columns"  # the KB instance's own attribute: dropped with the KB when a re-index replaces it
N_TIERS = (
    6  # exact name, qualified name, name prefix, name substring, qualified substring, every word in qualified+path
)


def _columns(kb) -> dict[str, pa.Array]:
    """The lowered name, qualified name and `qualified path` text of every symbol of the KB (its row order):
    computed on the first search of a loaded KB, in Arrow's kernels (OpenJDK: 0.2 s, 135 MB; with pandas' string
    methods 0.6-1.1 s, paid by the first search after `cra serve --watch` hands a re-indexed KB over)."""
    found = kb.__dict__.get(_CACHED)
    if found is None:
        symbols, files = kb.tables["symbols"], kb.files
        where = pd.Index(files["file_id"]).get_indexer(symbols["file_id"])  # (-1: a file the table lacks: null)
        paths = _text(files["path"]).take(pa.array(where, mask=where < 0))
        names = pc.utf8_lower(_text(symbols["name"]))
        qualified = pc.utf8_lower(pc.fill_null(_text(symbols["qualified_name"]), ""))
        found = {
            "name": names,
            "qualified": qualified,
            "haystack": pc.binary_join_element_wise(qualified, pc.utf8_lower(paths), pa.scalar(" ", pa.large_string())),
        }
        kb.__dict__[_CACHED] = found
    return found


def _text(column: pd.Series) -> pa.Array:
    """A string column as one Arrow large_string array."""
    return pa.array(column, type=pa.large_string())


def _rows_containing(text: pa.Array, rows: np.ndarray | None, word: str) -> np.ndarray:
    """The rows (of all, or of `rows`) whose text contains word."""
    subset = text if rows is None else text.take(rows)
    hit = np.flatnonzero(pc.fill_null(pc.match_substring(subset, word), False).to_numpy(zero_copy_only=False))
    return hit if rows is None else rows[hit]


def matching_symbols(kb, query: str, file_ids: pd.Series | None = None) -> pd.DataFrame:
    """The symbols (rows of the KB's symbols table, with `tier`, `path` and `name_length`) that match a query, best
    first: by tier (see N_TIERS), then shorter name, path, start line; file_ids: only symbols of these files.

    Only three scans see every symbol: the query in the names, in the `qualified path` text, and the query's first
    word there; every other test runs on the rows these found (a qualified name that equals, ends with or contains
    the query lies in that text too)."""
    columns, symbols = _columns(kb), kb.tables["symbols"]
    q = query.strip().lower()
    name, qualified, haystack = columns["name"], columns["qualified"], columns["haystack"]
    first, *others = q.split()
    every_word = _rows_containing(haystack, None, first)
    for word in others:
        every_word = _rows_containing(haystack, every_word, word)
    candidates = distinct_union(
        _rows_containing(name, None, q), every_word, _rows_containing(haystack, None, q) if others else every_word
    )
    if file_ids is not None:
        candidates = candidates[np.isin(symbols["file_id"].to_numpy()[candidates], np.asarray(file_ids))]
    name, qualified = name.take(candidates), qualified.take(candidates)
    tiers = [
        pc.equal(name, q),
        pc.or_(pc.equal(qualified, q), pc.ends_with(qualified, "." + q)),
        pc.starts_with(name, q),
        pc.match_substring(name, q),
        pc.match_substring(qualified, q),
        np.isin(candidates, every_word, assume_unique=True),
    ]
    tier = np.full(len(candidates), N_TIERS, dtype=np.int64)
    for i, hit in reversed(list(enumerate(tiers))):
        hit = hit if isinstance(hit, np.ndarray) else pc.fill_null(hit, False).to_numpy(zero_copy_only=False)
        tier[hit] = i
    keep = tier < N_TIERS
    found = symbols.iloc[candidates[keep]]
    found = found.assign(
        tier=tier[keep],
        path=found["file_id"].map(kb.files.set_index("file_id")["path"]),
        name_length=pc.utf8_length(name.filter(keep)).to_numpy(),
    )
    return found.sort_values(["tier", "name_length", "path", "start_line"], kind="stable")
