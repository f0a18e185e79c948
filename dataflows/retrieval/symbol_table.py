"""The symbols of a loaded KB as arrays for the request path's precision stage (`SymbolTable`), built once per
loaded KB by the `kb_symbol_table` node. Request-time only: not part of the index code, so changing it never makes
a KB stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cra.dataflows.distinct import distinct
from cra.dataflows.index.conventions import test_attribute_pattern


def arrow_strings(values: pd.Series | pa.Array | pa.ChunkedArray) -> pa.Array:
    """A string column as Arrow: the array itself when it is Arrow-backed (a loaded KB's), else converted."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    array = values.array
    if hasattr(array, "__arrow_array__"):
        return pa.array(array)
    return pa.array(values.to_numpy(dtype=object), type=pa.string(), from_pandas=True)


class TakenStrings:
    """A string column left in Arrow: rows become Python str only when taken (`column[rows]`, nulls as `missing`).

    A loaded KB's symbol table holds five such columns; converting them whole cost a cold request 0.5 s at 1.2M
    symbols, while a request takes the few thousand rows of the files it scopes."""

    def __init__(self, values: pd.Series | pa.Array | pa.ChunkedArray, missing: str | None = None):
        self._values = arrow_strings(values)
        self._missing = missing

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, rows) -> np.ndarray | str | None:
        """Row positions (an integer or integer array) or a boolean mask over every row."""
        if isinstance(rows, (int, np.integer)):
            value = self._values[int(rows)].as_py()
            return self._missing if value is None else value
        rows = np.asarray(rows)
        rows = np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.int64, copy=False)
        taken = self._values.take(rows)
        out = np.asarray(taken.to_numpy(zero_copy_only=False), dtype=object)
        if self._missing is not None and taken.null_count:
            out[taken.is_null().to_numpy(zero_copy_only=False)] = self._missing
        return out


@dataclass(frozen=True, eq=False)
class SymbolTable:
    """The symbols of a KB as arrays (one entry per kb_symbols row) for the precision stage's request path.

    Parents, name terms and symbol edges resolved to row numbers once per loaded KB, so `symbol_tiers` gathers by
    position; strings stay in Arrow until a request takes its rows.
    """

    symbol_id: np.ndarray  # kb_symbols["symbol_id"], its own dtype
    file_id: np.ndarray  # kb_symbols["file_id"], its own dtype
    rows: pd.Index  # symbol_id -> row (its hash table is built once)
    name: TakenStrings
    qualified_name: TakenStrings  # "" when there is none
    kind: TakenStrings
    start_line: np.ndarray
    parent: np.ndarray  # row of the parent symbol, -1 when none (or not in the KB)
    is_test_fn: np.ndarray  # a function / method with 'test' in its name
    is_test_code: np.ndarray  # a test by its own attributes, in any file (Rust `#[test]` in a source file)
    name_norm: TakenStrings  # `norm` of the name (None when there is no name)
    qualified_norm: TakenStrings  # `norm` of the qualified name (None when there is none)
    name_code: np.ndarray  # row of the name in `symbol_names` (-1: no name)
    name_term_code: np.ndarray  # `symbol_name_terms`: name code of each (code, term) row, sorted by code
    name_term_id: np.ndarray  # ... and its term's position in `term_vocabulary`
    term_vocabulary: np.ndarray  # distinct name terms, sorted (object)
    name_term_total: np.ndarray  # per name code: how many (non-empty) terms it has
    edge_src: np.ndarray  # distinct (src, dst, kind) symbol edges between KB symbols, as rows, in KB order
    edge_dst: np.ndarray
    edge_kind: TakenStrings

    def rows_of_files(self, file_ids: np.ndarray) -> np.ndarray:
        """The rows of these files' symbols, ascending: `np.flatnonzero(np.isin(self.file_id, file_ids))` by binary
        search over the rows grouped by file, not a pass over every symbol of the KB per request."""
        file_ids = np.asarray(file_ids)
        if file_ids.dtype.kind not in "iu" or self.file_id.dtype.kind not in "iu":
            return np.flatnonzero(np.isin(self.file_id, file_ids))
        order, keys = self._by_file
        wanted = distinct(file_ids)
        rows = spans(np.searchsorted(keys, wanted, side="left"), np.searchsorted(keys, wanted, side="right"))
        return rows if order is None else np.sort(order[rows])

    def edges_from(self, rows: np.ndarray) -> np.ndarray:
        """Positions of the edges whose source is one of these distinct rows, ascending (KB edge order): a binary
        search over the edges grouped by source, not a pass over all of them."""
        order, keys = self._by_source
        rows = np.asarray(rows, dtype=np.int64)
        at = spans(np.searchsorted(keys, rows, side="left"), np.searchsorted(keys, rows, side="right"))
        return at if order is None else np.sort(order[at])

    def name_term_rows(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The `name_term_code` rows of these name codes, in row order per code, and which code (its position in
        `codes`) each belongs to: a request's few names without a pass over every (name, term) row."""
        order, keys = self._by_name_code
        codes = np.asarray(codes, dtype=np.int64)
        lo, hi = np.searchsorted(keys, codes, side="left"), np.searchsorted(keys, codes, side="right")
        at = spans(lo, hi)
        return (at if order is None else order[at]), np.repeat(np.arange(len(codes)), hi - lo)

    def name_matches(self, codes: np.ndarray, term_weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per name code asked: how many of its terms weigh more than 0 in `term_weight` (one weight per term of
        `term_vocabulary`), and their summed weight, added in row order: from these names' rows only."""
        terms, of = self.name_term_rows(codes)
        row_weight = term_weight[self.name_term_id[terms]]
        matched = np.bincount(of[row_weight > 0], minlength=len(codes))
        return matched, np.bincount(of, weights=row_weight, minlength=len(codes))

    @cached_property
    def _by_file(self) -> tuple[np.ndarray | None, np.ndarray]:
        return grouped(self.file_id)

    @cached_property
    def _by_source(self) -> tuple[np.ndarray | None, np.ndarray]:
        return grouped(self.edge_src)

    @cached_property
    def _by_name_code(self) -> tuple[np.ndarray | None, np.ndarray]:
        return grouped(self.name_term_code)


def grouped(keys: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """(a stable order sorting keys, None when they already are; the sorted keys): built once per loaded KB, where
    the KB's own order (symbols by file, edges by source) is almost always sorted already, one linear check."""
    if len(keys) < 2 or bool((keys[1:] >= keys[:-1]).all()):
        return None, keys
    order = np.argsort(keys, kind="stable")
    return order, keys[order]


def spans(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The integers of every range [lo[i], hi[i]), concatenated in order (`np.r_` of the aranges, without a loop)."""
    size = np.asarray(hi, dtype=np.int64) - np.asarray(lo, dtype=np.int64)
    keep = size > 0
    lo, size = np.asarray(lo, dtype=np.int64)[keep], size[keep]
    if not len(size):
        return np.zeros(0, dtype=np.int64)
    starts = np.cumsum(size) - size
    return np.repeat(lo - starts, size) + np.arange(int(size.sum()), dtype=np.int64)


def test_code(kb_symbols: pd.DataFrame, kb_files: pd.DataFrame | None, language_conventions: dict | None) -> np.ndarray:
    """Per symbol: whether its attributes make it a test (`tests.attributes` of its file's language), whatever file
    it is in: Rust keeps unit tests inside the source file they test."""
    out = np.zeros(len(kb_symbols), dtype=bool)
    if not language_conventions or kb_files is None or kb_files.empty or kb_symbols.empty:
        return out
    if "decorators" not in kb_symbols:
        return out
    language_code, languages = pd.factorize(kb_files["language"])  # per file, then per symbol through its file
    at = id_rows(kb_files["file_id"].to_numpy(), kb_symbols["file_id"].to_numpy())
    language = np.where(at >= 0, language_code[at], -1)
    for code, lang in enumerate(languages):
        pattern = test_attribute_pattern(lang, language_conventions)
        if pattern is None:
            continue
        rows = _with_attributes(kb_symbols["decorators"], np.flatnonzero(language == code))
        out[rows] = _any_matches(kb_symbols["decorators"].iloc[rows], pattern)
    return out


def _any_matches(lists: pd.Series, pattern) -> np.ndarray:
    """Per list of strings: whether any item matches the pattern. A loaded KB's Arrow lists are matched once per
    distinct item (OpenJDK's 102,481 annotations are 7,209 distinct strings, half of them `Override`)."""
    if not isinstance(lists.dtype, pd.ArrowDtype):
        return np.array([any(pattern.search(str(x)) for x in a) for a in lists.tolist()], dtype=bool)
    array = pa.array(lists)
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    items = pc.dictionary_encode(pc.list_flatten(array).cast(pa.string()), null_encoding="encode")
    matched = np.array([bool(pattern.search(str(x))) for x in items.dictionary.to_pylist()], dtype=bool)
    hit = matched[items.indices.to_numpy(zero_copy_only=False)] if len(matched) else np.zeros(0, dtype=bool)
    out = np.zeros(len(array), dtype=bool)
    out[pc.list_parent_indices(array).to_numpy(zero_copy_only=False)[hit]] = True
    return out


def id_rows(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The row of each wanted id in the distinct `ids` (-1 when absent): by subtraction when ids are consecutive, as
    a KB's are, by binary search when sorted, else by hash (no hash table over a million ids on a cold request)."""
    wanted = np.asarray(wanted, dtype=np.int64)
    if not len(ids) or not (ids[1:] > ids[:-1]).all():
        return pd.Index(ids).get_indexer(wanted)
    first = int(ids[0])
    if int(ids[-1]) - first == len(ids) - 1:
        at = wanted - first
        return np.where((at >= 0) & (at < len(ids)), at, -1)
    at = np.minimum(np.searchsorted(ids.astype(np.int64), wanted), len(ids) - 1)
    return np.where(ids[at] == wanted, at, -1)


def rows_of_ids(ids, wanted) -> np.ndarray:
    """`pd.Index(ids).get_indexer(wanted)` (-1 when absent): by `id_rows` when ids are strictly ascending integers, as a
    KB's file ids are, rather than a hash table over all of them built anew on every call."""
    ids, wanted = np.asarray(ids), np.asarray(wanted)
    if ids.dtype.kind in "iu" and wanted.dtype.kind in "iu" and bool((ids[1:] > ids[:-1]).all()):
        return id_rows(ids, wanted)
    return pd.Index(ids).get_indexer(wanted)


def rows_with(ids, wanted) -> np.ndarray:
    """`np.flatnonzero(np.isin(ids, wanted))`: by `id_rows` when ids are strictly ascending integers (a KB's file ids),
    not a pass hashing every row."""
    ids, wanted = np.asarray(ids), np.asarray(wanted)
    if ids.dtype.kind in "iu" and wanted.dtype.kind in "iu" and bool((ids[1:] > ids[:-1]).all()):
        at = id_rows(ids, distinct(wanted))
        return at[at >= 0]
    return np.flatnonzero(np.isin(ids, wanted))


def _with_attributes(column: pd.Series, rows: np.ndarray) -> np.ndarray:
    """The rows whose attribute list is not empty: measured in Arrow for a loaded KB's list column, so only those
    lists become Python objects (a million symbols' lists took a second to convert, on every cold request)."""
    part = column.iloc[rows]
    if isinstance(part.dtype, pd.ArrowDtype):
        lengths = pc.list_value_length(pa.array(part)).fill_null(0).to_numpy(zero_copy_only=False)
    else:
        lengths = np.array([len(a) if isinstance(a, (list, tuple, np.ndarray)) else 0 for a in part], dtype=np.int64)
    return rows[lengths > 0]


DERIVED_ARRAYS = (  # what `symbol_table` derives (the rest are views of the KB's columns), by array
    "parent",
    "is_test_fn",
    "is_test_code",
    "name_code",
    "name_term_id",
    "term_vocabulary",
    "name_term_total",
    "edge_src",
    "edge_dst",
    "edge_rows",
)


def symbol_table(
    kb_symbols: pd.DataFrame,
    kb_symbol_edges: pd.DataFrame,
    name_codes: pd.DataFrame,
    name_terms: pd.DataFrame,
    name_norms: pd.DataFrame,
    kb_files: pd.DataFrame | None = None,
    language_conventions: dict | None = None,
) -> SymbolTable:
    """The `SymbolTable` of these KB frames and their `symbol_name_codes`, `symbol_name_terms` and `symbol_norms`
    (kb_files and language_conventions: which symbols are tests by their attributes)."""
    derived = derived_arrays(kb_symbols, kb_symbol_edges, name_codes, name_terms, kb_files, language_conventions)
    return table_of(kb_symbols, kb_symbol_edges, name_terms, name_norms, derived)


def derived_arrays(
    kb_symbols: pd.DataFrame,
    kb_symbol_edges: pd.DataFrame,
    name_codes: pd.DataFrame,
    name_terms: pd.DataFrame,
    kb_files: pd.DataFrame | None = None,
    language_conventions: dict | None = None,
) -> dict[str, np.ndarray]:
    """The arrays of DERIVED_ARRAYS: the costly part of a `SymbolTable` (0.3-0.5 s at 745k symbols and 980k edges),
    which a KB version may keep on disk (`cra.drivers.kb.symbol_cache`); edge_rows: the rows of kb_symbol_edges kept."""
    symbol_id = kb_symbols["symbol_id"].to_numpy()
    parent_ids = kb_symbols["parent_id"].astype("Float64").fillna(-1).to_numpy(dtype=np.int64)
    parent = np.where(parent_ids >= 0, id_rows(symbol_id, parent_ids), -1)
    is_fn = kb_symbols["kind"].isin(["function", "method"]).to_numpy(dtype=bool)
    has_test = pc.match_substring(pc.utf8_lower(arrow_strings(kb_symbols["name"])), "test").fill_null(False)
    is_test_fn = is_fn & has_test.to_numpy(zero_copy_only=False)
    by_symbol = name_codes["name_code"]
    if not by_symbol.index.equals(pd.Index(symbol_id)):
        by_symbol = by_symbol.reindex(pd.Index(symbol_id, name="symbol_id"))
    codes = by_symbol.fillna(-1).to_numpy(dtype=np.int64)
    term_id, vocab = pd.factorize(name_terms["term"], sort=True)
    term_code = name_terms["code"].to_numpy(dtype=np.int64)
    n_names = max(int(codes.max(initial=-1)), int(term_code.max(initial=-1))) + 1
    distinct = np.flatnonzero(~_duplicated_edges(kb_symbol_edges))
    src = id_rows(symbol_id, kb_symbol_edges["src_symbol_id"].to_numpy()[distinct])
    dst = id_rows(symbol_id, kb_symbol_edges["dst_symbol_id"].to_numpy()[distinct])
    known = (src >= 0) & (dst >= 0)
    vocabulary = np.asarray(vocab, dtype=object)
    return {
        "parent": parent.astype(np.int64),
        "is_test_fn": is_test_fn,
        "is_test_code": test_code(kb_symbols, kb_files, language_conventions),
        "name_code": codes,
        "name_term_id": term_id.astype(np.int64),
        "term_vocabulary": vocabulary,
        "name_term_total": np.bincount(term_code[vocabulary[term_id] != ""], minlength=n_names),
        "edge_src": src[known].astype(np.int64),
        "edge_dst": dst[known].astype(np.int64),
        "edge_rows": distinct[known].astype(np.int64),
    }


def _duplicated_edges(kb_symbol_edges: pd.DataFrame) -> np.ndarray:
    """Per edge: whether an earlier row has the same (src, dst, kind); hashed as one integer when the id ranges fit
    (3x faster than a frame's `duplicated` over three columns), else as the frame's three integer columns."""
    src = kb_symbol_edges["src_symbol_id"].to_numpy(dtype=np.int64)
    dst = kb_symbol_edges["dst_symbol_id"].to_numpy(dtype=np.int64)
    kind = pd.factorize(kb_symbol_edges["kind"])[0].astype(np.int64) + 1  # (-1: no kind)
    if not len(src):
        return np.zeros(0, dtype=bool)
    src, dst = src - src.min(), dst - dst.min()
    spans = [int(src.max()) + 1, int(dst.max()) + 1, int(kind.max()) + 1]
    if spans[0] * spans[1] * spans[2] < 1 << 62:
        return pd.Series((src * spans[1] + dst) * spans[2] + kind).duplicated().to_numpy()
    return pd.DataFrame({"src": src, "dst": dst, "kind": kind}).duplicated().to_numpy()


def table_of(
    kb_symbols: pd.DataFrame,
    kb_symbol_edges: pd.DataFrame,
    name_terms: pd.DataFrame,
    name_norms: pd.DataFrame,
    derived: dict[str, np.ndarray],
) -> SymbolTable:
    """The `SymbolTable` of the KB frames and their `derived_arrays` (built now or read back): the rest are views."""
    symbol_id = kb_symbols["symbol_id"].to_numpy()
    edge_kind = arrow_strings(kb_symbol_edges["kind"]).take(pa.array(derived["edge_rows"]))
    return SymbolTable(
        symbol_id=symbol_id,
        file_id=kb_symbols["file_id"].to_numpy(),
        rows=pd.Index(symbol_id),
        name=TakenStrings(kb_symbols["name"]),
        qualified_name=TakenStrings(kb_symbols["qualified_name"], missing=""),
        kind=TakenStrings(kb_symbols["kind"]),
        start_line=kb_symbols["start_line"].to_numpy(),
        parent=derived["parent"],
        is_test_fn=derived["is_test_fn"],
        is_test_code=derived["is_test_code"],
        name_norm=TakenStrings(name_norms["name"]),
        qualified_norm=TakenStrings(name_norms["qualified"]),
        name_code=derived["name_code"],
        name_term_code=name_terms["code"].to_numpy(dtype=np.int64),
        name_term_id=derived["name_term_id"],
        term_vocabulary=derived["term_vocabulary"],
        name_term_total=derived["name_term_total"],
        edge_src=derived["edge_src"],
        edge_dst=derived["edge_dst"],
        edge_kind=TakenStrings(edge_kind),
    )
