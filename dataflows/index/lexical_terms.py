"""Term frequencies for the lexical (BM25) indexes: per file and per symbol, reused for unchanged files.

The counts of new/changed files are made by the per-file work in `parsing` (see its module docstring for
what a symbol's document is); this module keys them by the run's ids and merges the reused rows.
Weights are not computed here: `cra.dataflows.lexical.Bm25Index.from_terms` builds them when a KB is loaded.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.dataflows.index.file_rows import replaced_files, spliced_files
from cra.dataflows.index.frames import (
    MAX_SLICES,
    conform,
    ids_in,
    kept_rows,
    new_symbol_id_array,
    numpy_ints,
    ordered_by,
    previous_table,
    rekeyed_runs,
    spliced,
)
from cra.dataflows.index.parsing import symbol_ids_of_locals


def _merged(reused: pd.DataFrame, new: pd.DataFrame, doc: str) -> pd.DataFrame:
    """reused and new rows in doc order, as a fresh index writes them (new terms take the reused rows' string type so
    the stack stays arrow-backed). A doc's rows come from one side, each side in doc order: new rows go in as runs
    between slices of the reused ones, not by a sort. In doc order the lexicons are built without two extra sorts."""
    if not len(reused):
        return new
    if not len(new):
        return reused
    new = new.astype({"term": reused["term"].dtype})
    old, added = reused[doc].to_numpy(), new[doc].to_numpy()
    at = np.searchsorted(old, added, side="right")  # the reused row each new row goes before
    runs = np.flatnonzero(np.diff(at)) + 1
    if len(runs) >= MAX_SLICES or (old[1:] < old[:-1]).any() or (added[1:] < added[:-1]).any():
        return ordered_by(pd.concat([reused, new], ignore_index=True), doc)
    pieces, done = [], 0
    for start, end in zip(np.r_[0, runs], np.r_[runs, len(added)]):
        pieces += [reused.iloc[done : at[start]], new.iloc[start:end]]
        done = at[start]
    pieces.append(reused.iloc[done:])
    return pd.concat([piece for piece in pieces if len(piece)], ignore_index=True)


def kb_file_terms(
    indexed_files: pd.DataFrame, parsed_file_terms: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """(file_id, term, tf) of path + text for every file, by (file_id, term): counted for new/changed files, reused
    otherwise."""
    new = parsed_file_terms  # each file's terms come sorted from the parse: ordering the files orders the rows
    new = ordered_by(new, "file_id")  # no copy when in order already
    previous = previous_table(previous_kb, "file_terms")
    merged = None
    if previous_kb and "files" in previous_kb:  # (a few files changed: their rows found by binary search, replaced)
        merged = spliced_files(previous, replaced_files(indexed_files, previous_kb["files"]), new)
    if merged is None:  # (too many files, or rows out of order)
        keep = ids_in(previous["file_id"], indexed_files.loc[indexed_files["reused"], "file_id"])
        merged = _merged(kept_rows(numpy_ints(previous), keep), new, "file_id")
    return conform(merged, "file_terms")


def kb_symbol_terms(
    parsed_symbol_terms: pd.DataFrame, symbol_keys: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """(symbol_id, term, tf) of qualified name + signature + docstring + body + attached comments per symbol
    (a class's body is its own lines plus its members' names), by (symbol_id, term): re-keying keeps the reused
    rows' order, this run's rows go in between."""
    new = parsed_symbol_terms
    ids = symbol_ids_of_locals(
        new["file_id"].to_numpy(np.int32), new["local"].to_numpy(np.int32), symbol_keys[symbol_keys["local"] >= 0]
    )
    new = pd.DataFrame({"symbol_id": ids, "term": new["term"].array, "tf": new["tf"].to_numpy()}, copy=False)  # shared
    new = ordered_by(new, "symbol_id")  # each symbol's terms come sorted from the parse, symbols in id order
    previous = previous_table(previous_kb, "symbol_terms")
    runs = rekeyed_runs(previous["symbol_id"], symbol_keys)
    merged = None
    if runs is not None:
        starts, ends, shifts = runs
        merged = spliced(previous, starts, ends, new, "symbol_id", shifts, typed_as_previous=("symbol_id", "term"))
    if merged is not None:
        if str(merged["symbol_id"].dtype) not in ("int32", "int32[pyarrow]"):  # (a view's int32 ids kept as they are)
            merged = merged.astype({"symbol_id": np.int32})
        return conform(merged, "symbol_terms")
    previous = numpy_ints(previous)  # (a view's ints as arrays: masked and stacked below)
    ids = new_symbol_id_array(previous["symbol_id"], symbol_keys)
    kept = ids >= 0
    reused = kept_rows(previous, kept).assign(symbol_id=ids[kept].astype(np.int32))
    return conform(_merged(reused, new, "symbol_id"), "symbol_terms")
