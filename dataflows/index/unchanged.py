"""Which of the previous KB's whole-repository tables a re-index would build again exactly as they are
(`unchanged_tables`), so that the driver carries them over instead (`CARRIED_NODES`).

A one-file edit that moves no symbol, import or reference (a comment, a changed expression, a line added inside a
function) changes that file's texts and terms, yet every re-index used to rebuild the symbol, reference, symbol-term
and edge tables of the whole repository around it, and resolve their imports again: OpenJDK's 745,000 symbols and
20M symbol terms, about 2.5 s of a one-file re-index. Comparing the changed files' parsed rows with their previous
rows says, per table, whether anything would change.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.dataflows.index.edges import import_context
from cra.dataflows.index.frames import ids_in
from cra.dataflows.index.languages import NAMESPACE_LANGUAGES
from cra.dataflows.index.mapped import int_chunks, sorted_search

# the nodes the driver overrides (`cra.drivers.index.dag`) for each table this run leaves as it was: its KB table's
# node, for import bindings also what resolving them again would give; "symbol_ids": every symbol keeps its id
CARRIED_NODES = {
    "symbols": ("kb_symbols",),
    "imports": ("kb_imports",),
    "references": ("kb_references",),
    "symbol_terms": ("kb_symbol_terms",),
    "import_bindings": ("import_context", "import_bindings", "kb_import_bindings"),
    "edges": ("kb_edges",),
    "symbol_edges": ("kb_symbol_edges",),
    "symbol_ids": ("symbol_keys",),
}
# the tables a run may read as views of the live version's mapped files (Arrow-backed columns, no copy) and leave so
# when it carries them over, each with the tables built from it, which must then be carried too: their nodes would
# read the view (the nodes that do run on a carried table, `health.unread_sources` and `index_stats`, read its
# integer columns, the same from a view)
VIEWABLE = {
    "symbols": ("import_bindings", "symbol_edges"),
    "imports": ("import_bindings", "symbol_edges"),
    "references": ("symbol_edges",),
    "edges": ("symbol_edges",),
    "symbol_terms": (),
    "import_bindings": (),
    "symbol_edges": (),
}
# the term tables, whose nodes splice the previous rows as they come (`frames.spliced`): views whatever the run
# carries (OpenJDK's 13M file-term, 7M concept-term and 20M symbol-term rows, their integer columns not copied twice)
SPLICED_VIEWS = frozenset({"file_terms", "concept_terms", "symbol_terms"})
DEFERRED = frozenset({*VIEWABLE, *SPLICED_VIEWS})  # what a re-index may read as views (`PreviousTables.deferred`)
_NEEDED = ("files", "symbols", "imports", "references", "symbol_terms", "import_bindings", "edges", "symbol_edges")
_FACTS = ["path", "language", "module", "package", "is_test"]  # what resolving imports and test edges reads of a file
_IDENTITY = ["name", "qualified_name", "kind"]  # (with the file, position and parent) what references resolve against
_DETAIL = ["start_line", "end_line", "signature", "docstring", "decorators"]
_TOKENS = ["signature_tokens", "body_tokens", "docstring_tokens"]


def unchanged_tables(
    indexed_files: pd.DataFrame,
    previous_files: pd.DataFrame,
    previous_kb: dict[str, pd.DataFrame] | None,
    go_modules: dict[str, str],
    package_roots: dict[str, dict[str, list[str]]],
    new_symbol_rows: pd.DataFrame,
    parsed_imports: pd.DataFrame,
    parsed_references: pd.DataFrame,
    parsed_symbol_terms: pd.DataFrame,
    previous_import_context: str | None = None,
) -> frozenset[str]:
    """The KB tables this run would build exactly as the previous KB holds them. None unless the same files are
    indexed under the same ids with the same facts; then each table whose rows of the changed files are the same
    (symbol ids follow: a file keeps its block while its symbols keep their number), and the resolved imports and
    edges where every input to their resolution is the same (import statements but for their lines, the import
    context, `edges.import_context`, and, in C# and PHP, the symbols by name, kind and nesting)."""
    if (
        not previous_kb
        or any(name not in previous_kb for name in _NEEDED)
        or not _same_files(indexed_files, previous_files)
    ):
        return frozenset()
    changed = np.sort(indexed_files.loc[~indexed_files["reused"].to_numpy(dtype=bool), "file_id"].to_numpy(np.int64))
    out = set()
    new_imports = _ordered(parsed_imports, "file_id", "line")
    old_imports = _rows_of(previous_kb["imports"], "file_id", changed)
    statements = ["file_id", "target", "names", "level"]
    same_statements = _cells(new_imports, statements) == _cells(old_imports, statements)
    if same_statements and _cells(new_imports, ["line"]) == _cells(old_imports, ["line"]):
        out.add("imports")
    before = previous_kb["symbols"]
    out |= _same_symbol_tables(previous_kb, changed, new_symbol_rows, parsed_references, parsed_symbol_terms)
    # imports resolve against symbols only in the languages that import namespaced names (C#, PHP)
    namespaced = indexed_files.loc[indexed_files["file_id"].isin(changed), "language"].isin(NAMESPACE_LANGUAGES).any()
    if (
        same_statements
        and ("symbol_ids" in out or not namespaced)
        and previous_import_context == import_context(indexed_files, go_modules, package_roots, before)
    ):
        out |= {"import_bindings", "edges"}
        if "references" in out:
            out.add("symbol_edges")
    return frozenset(out)


def _same_symbol_tables(
    previous_kb: dict[str, pd.DataFrame],
    changed: np.ndarray,
    new_symbol_rows: pd.DataFrame,
    parsed_references: pd.DataFrame,
    parsed_symbol_terms: pd.DataFrame,
) -> set[str]:
    """Of the symbol-keyed tables, those whose rows of the changed files are the same, with "symbol_ids" when every
    symbol keeps its id, name, kind and nesting (nothing of them otherwise)."""
    old_symbols = _rows_of(previous_kb["symbols"], "file_id", changed)
    first = _first_ids(old_symbols, changed)
    counts = _symbol_counts(new_symbol_rows, changed)
    if first is None or counts != _symbol_counts(old_symbols, changed):
        return set()
    new_symbols = _ordered(new_symbol_rows, "file_id", "local")
    old_symbols = _local(
        _local(old_symbols, changed, first, "symbol_id", "local"), changed, first, "parent_id", "parent_local"
    )
    identity = ["file_id", "local", *_IDENTITY, "parent_local"]
    if _cells(new_symbols, identity) != _cells(old_symbols, identity):
        return set()
    out = {"symbol_ids"}
    if _cells(new_symbols, _DETAIL + _TOKENS) == _cells(old_symbols, _DETAIL + _TOKENS):
        out.add("symbols")
    references = _known_locals(parsed_references, changed, counts)
    old_references = _rows_of(previous_kb["references"], "file_id", changed)
    old_references = _local(old_references, changed, first, "symbol_id", "local")
    columns = ["file_id", "local", "name", "kind"]
    if len(references) == len(old_references) and _cells(_ordered(references, "file_id", "local"), columns) == _cells(
        old_references, columns
    ):
        out.add("references")
    terms = _known_locals(parsed_symbol_terms, changed, counts)
    has = np.asarray(counts) > 0
    spans = np.c_[first, first + counts][has]
    old_terms = _rows_in_spans(previous_kb["symbol_terms"], "symbol_id", spans)
    at = np.searchsorted(spans[:, 0], old_terms["symbol_id"].to_numpy(np.int64), "right") - 1
    old_terms = _local(old_terms.assign(file_id=changed[has][at]), changed, first, "symbol_id", "local")
    columns = ["file_id", "local", "term", "tf"]
    if _cells(_ordered(terms, "file_id", "local"), columns) == _cells(old_terms, columns):
        out.add("symbol_terms")
    return out


def viewed_tables(carried: frozenset[str]) -> frozenset[str]:
    """The tables a run that carries these may leave as views: `SPLICED_VIEWS`, and the carried ones whose
    dependents are carried too (`VIEWABLE`)."""
    return SPLICED_VIEWS | {name for name, built in VIEWABLE.items() if name in carried and carried.issuperset(built)}


def carried_nodes(
    carried: frozenset[str],
    previous_kb: dict[str, pd.DataFrame],
    previous_import_context: str | None,
    indexed_files: pd.DataFrame,
) -> dict[str, object]:
    """The value of each node that `CARRIED_NODES` names for these carried tables: the previous KB's table, the
    previous import context, and the symbol keys of a run in which every symbol keeps its id."""
    values = {name: previous_kb[table] for table in carried if table in previous_kb for name in CARRIED_NODES[table]}
    if "import_bindings" in carried:
        values["import_context"] = previous_import_context
    if "symbol_ids" in carried:
        values["symbol_keys"] = kept_symbol_keys(previous_kb["symbols"], indexed_files)
    return values


def kept_symbol_keys(symbols: pd.DataFrame, indexed_files: pd.DataFrame) -> pd.DataFrame:
    """`parsing.symbol_keys` of a run in which every symbol keeps its id (symbols: the previous KB's, in id order):
    the reused files' rows keyed by their old id, the parsed files' by their position in the file. Integer columns
    of the previous table, not a concatenation and sort of its rows (OpenJDK: 0.4 s)."""
    files, ids = symbols["file_id"].to_numpy(np.int64), symbols["symbol_id"].to_numpy(np.int64)
    parsed = ids_in(symbols["file_id"], indexed_files.loc[~indexed_files["reused"].to_numpy(dtype=bool), "file_id"])
    return pd.DataFrame(
        {
            "file_id": files,
            "old_id": np.where(parsed, -1, ids),
            "local": np.where(parsed, _ranks(files), -1),
            "symbol_id": ids,
        }
    )


def _same_files(indexed_files: pd.DataFrame, previous_files: pd.DataFrame) -> bool:
    """Whether the same paths are indexed under the same ids, and the files read again kept their facts."""
    if len(indexed_files) != len(previous_files):
        return False
    now = indexed_files.sort_values("file_id")
    ids = now["file_id"].to_numpy(np.int64)
    if not np.array_equal(ids, previous_files["file_id"].to_numpy(np.int64)):
        return False
    if not np.array_equal(now["path"].to_numpy(dtype=object), previous_files["path"].to_numpy(dtype=object)):
        return False
    read = ~now["reused"].to_numpy(dtype=bool)
    return _cells(now[read], _FACTS) == _cells(previous_files[read], _FACTS)


def _rows_of(frame: pd.DataFrame, column: str, ids: np.ndarray) -> pd.DataFrame:
    """The rows whose column (sorted, as the KB writes it) holds one of these sorted ids."""
    return _rows_in_spans(frame, column, np.c_[ids, ids + 1])


def _rows_in_spans(frame: pd.DataFrame, column: str, spans: np.ndarray) -> pd.DataFrame:
    """The rows whose sorted column's value lies in one of the [start, end) spans, taken as slices (a take from a
    mapped table walks its chunks, and a search with wider values casts the whole column: 20M symbol-term ids)."""
    values = int_chunks(frame[column])
    if values is None:  # (not integers)
        values = [frame[column].to_numpy()]
    starts, ends = sorted_search(values, spans[:, 0]), sorted_search(values, spans[:, 1])
    pieces = [frame.iloc[s:e] for s, e in zip(starts.tolist(), ends.tolist()) if e > s]
    return pd.concat(pieces) if len(pieces) > 1 else pieces[0] if pieces else frame.iloc[:0]


def _first_ids(symbols: pd.DataFrame, files: np.ndarray) -> np.ndarray | None:
    """Each file's first symbol id (-1 for a file without symbols; symbols: these files' rows), or None where a
    file's ids do not run consecutively from it (then positions cannot be told from ids)."""
    ids, owners = symbols["symbol_id"].to_numpy(np.int64), symbols["file_id"].to_numpy(np.int64)
    first = np.full(len(files), -1, dtype=np.int64)
    if not len(ids):
        return first
    ranks = _ranks(owners)
    first[np.searchsorted(files, owners[ranks == 0])] = ids[ranks == 0]
    return first if np.array_equal(ids, first[np.searchsorted(files, owners)] + ranks) else None


def _ranks(sorted_keys: np.ndarray) -> np.ndarray:
    """Each row's position among the rows of its key (keys sorted)."""
    if not len(sorted_keys):
        return sorted_keys
    starts = np.r_[0, np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1]
    return np.arange(len(sorted_keys)) - np.repeat(starts, np.diff(np.r_[starts, len(sorted_keys)]))


def _symbol_counts(symbols: pd.DataFrame, files: np.ndarray) -> list[int]:
    """How many of these symbol rows each of these files has."""
    owners = symbols["file_id"].to_numpy(np.int64)
    return np.bincount(np.searchsorted(files, owners), minlength=len(files))[: len(files)].tolist()


def _known_locals(rows: pd.DataFrame, files: np.ndarray, counts: list[int]) -> pd.DataFrame:
    """Parsed rows that belong to one of their file's symbols (others get no symbol id and are dropped)."""
    local = rows["local"].astype("float64").fillna(-1).to_numpy(np.int64)
    count = (
        np.asarray(counts, dtype=np.int64)[np.searchsorted(files, rows["file_id"].to_numpy(np.int64))]
        if len(rows)
        else local
    )
    return rows[(local >= 0) & (local < count)]


def _local(frame: pd.DataFrame, files: np.ndarray, first: np.ndarray, column: str, as_: str) -> pd.DataFrame:
    """frame with as_: column's symbol ids as positions within their file (null stays null)."""
    ids = frame[column].astype("float64").to_numpy()
    return frame.assign(**{as_: ids - first[np.searchsorted(files, frame["file_id"].to_numpy(np.int64))]})


def _ordered(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    """The rows in the order the KB keeps them: by these columns, ties in parse order."""
    return frame.sort_values(list(columns), kind="stable") if len(frame) else frame


def _cells(frame: pd.DataFrame, columns: list[str]) -> list[tuple]:
    """The rows' values as plain Python (null as None, lists as tuples, numbers as int where integral), row by row."""
    return list(zip(*(_plain(frame[c].to_numpy(dtype=object)) for c in columns))) if len(frame) else []


def _plain(values: np.ndarray) -> list:
    """One column's values as `_cells` compares them."""
    out = []
    for v in values.tolist():
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            out.append(None)
        elif isinstance(v, (list, tuple, np.ndarray)):
            out.append(tuple(str(x) for x in v))
        elif isinstance(v, float) and v.is_integer():
            out.append(int(v))
        else:
            out.append(v)
    return out
