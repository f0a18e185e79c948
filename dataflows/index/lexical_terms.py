"""Term frequencies for the lexical (BM25) indexes: per file and per symbol, reused for unchanged files.

The counts of new/changed files are made by the per-file work in `parsing` (see its module docstring for
what a symbol's document is); this module keys them by the run's ids and merges the reused rows.
Weights are not computed here: `dataflows.lexical.Bm25Index.from_terms` builds them when a KB is loaded.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dataflows.index.frames import conform, kept_rows, new_symbol_ids, previous_table, take_rows
from dataflows.index.parsing import ParsedBatch


def _append(reused: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """reused rows then new rows; new terms take the reused rows' string type so the stack stays arrow-backed."""
    if not len(reused):
        return new
    if not len(new):
        return reused
    new = new.astype({"term": reused["term"].dtype})
    return pd.concat([reused, new], ignore_index=True)


def kb_file_terms(
    indexed_files: pd.DataFrame, parsed_rows: ParsedBatch, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """(file_id, term, tf) of path + text for every file: counted for new/changed files, reused otherwise;
    reused rows keep their previous (sorted) order, this run's rows follow sorted by (file_id, term)."""
    new = parsed_rows.file_terms  # each file's terms come sorted from the parse: ordering the files orders the rows
    new = take_rows(new, np.argsort(new["file_id"].to_numpy(np.int64), kind="stable"))  # no copy when in order already
    previous = previous_table(previous_kb, "file_terms")
    reused = kept_rows(previous, previous["file_id"].isin(indexed_files.loc[indexed_files["reused"], "file_id"]))
    return conform(_append(reused, new), "file_terms")


def _new_symbol_ids(file_ids: np.ndarray, locals_: np.ndarray, keys: pd.DataFrame) -> np.ndarray:
    """The symbol_id of each (file_id, local) of this run's symbols (keys: their rows of symbol_keys), NaN where
    there is none. A parsed file's symbols take consecutive ids in local order, so an id is its file's first plus
    its local: int32 arrays the size of the rows, not a hash of 20M (file, local) pairs (OpenJDK: 480 -> 100 MB)."""
    key_files, key_locals = keys["file_id"].to_numpy(np.int64), keys["local"].to_numpy(np.int64)
    key_ids = keys["symbol_id"].to_numpy(np.int64)
    size = int(max(key_files.max(initial=-1), file_ids.max(initial=-1))) + 1
    first = np.zeros(size, dtype=np.int64)
    first[key_files[key_locals == 0]] = key_ids[key_locals == 0]
    count = np.bincount(key_files, minlength=size).astype(np.int32)
    if not (key_ids == first[key_files] + key_locals).all():  # (symbol_keys numbers new symbols this way)
        raise ValueError("new symbols are not numbered consecutively per file")
    ids = first.astype(np.int32)[file_ids]
    ids += locals_.astype(np.int32)
    known = locals_ < count[file_ids]
    return ids if known.all() else np.where(known, ids, np.nan)


def kb_symbol_terms(
    parsed_rows: ParsedBatch, symbol_keys: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """(symbol_id, term, tf) of qualified name + signature + docstring + body + attached comments per symbol
    (a class's body is its own lines plus its members' names); reused rows first (re-keying keeps their
    order), then this run's rows sorted by (symbol_id, term)."""
    new = parsed_rows.symbol_terms
    ids = _new_symbol_ids(new["file_id"].to_numpy(np.int32), new["local"].to_numpy(np.int32), symbol_keys[symbol_keys["local"] >= 0])
    in_order = bool((ids[1:] >= ids[:-1]).all())  # each symbol's terms come sorted from the parse, symbols in id order
    new = pd.DataFrame({"symbol_id": ids, "term": new["term"].array, "tf": new["tf"].to_numpy()})  # terms not copied
    if not in_order:
        new = take_rows(new, np.argsort(new["symbol_id"].to_numpy(np.float64), kind="stable"))
    previous = previous_table(previous_kb, "symbol_terms")
    reused = previous.assign(symbol_id=new_symbol_ids(previous["symbol_id"], symbol_keys))
    reused = kept_rows(reused, reused["symbol_id"].notna())
    return conform(_append(reused, new), "symbol_terms")
