"""Term frequencies for the lexical (BM25) indexes: per file and per symbol, reused for unchanged files.

The counts of new/changed files are made by the per-file work in `parsing` (see its module docstring for
what a symbol's document is); this module keys them by the run's ids and merges the reused rows.
Weights are not computed here: `dataflows.lexical.Bm25Index.from_terms` builds them when a KB is loaded.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dataflows.index.frames import conform, kept_rows, new_symbol_ids, ordered_by, previous_table
from dataflows.index.parsing import symbol_ids_of_locals


def _append(reused: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """reused rows then new rows; new terms take the reused rows' string type so the stack stays arrow-backed."""
    if not len(reused):
        return new
    if not len(new):
        return reused
    new = new.astype({"term": reused["term"].dtype})
    return pd.concat([reused, new], ignore_index=True)


def kb_file_terms(
    indexed_files: pd.DataFrame, parsed_file_terms: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """(file_id, term, tf) of path + text for every file: counted for new/changed files, reused otherwise;
    reused rows keep their previous (sorted) order, this run's rows follow sorted by (file_id, term)."""
    new = parsed_file_terms  # each file's terms come sorted from the parse: ordering the files orders the rows
    new = ordered_by(new, "file_id")  # no copy when in order already
    previous = previous_table(previous_kb, "file_terms")
    reused = kept_rows(previous, previous["file_id"].isin(indexed_files.loc[indexed_files["reused"], "file_id"]))
    return conform(_append(reused, new), "file_terms")


def kb_symbol_terms(
    parsed_symbol_terms: pd.DataFrame, symbol_keys: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None
) -> pd.DataFrame:
    """(symbol_id, term, tf) of qualified name + signature + docstring + body + attached comments per symbol
    (a class's body is its own lines plus its members' names); reused rows first (re-keying keeps their
    order), then this run's rows sorted by (symbol_id, term)."""
    new = parsed_symbol_terms
    ids = symbol_ids_of_locals(new["file_id"].to_numpy(np.int32), new["local"].to_numpy(np.int32), symbol_keys[symbol_keys["local"] >= 0])
    new = pd.DataFrame({"symbol_id": ids, "term": new["term"].array, "tf": new["tf"].to_numpy()}, copy=False)  # shared
    new = ordered_by(new, "symbol_id")  # each symbol's terms come sorted from the parse, symbols in id order
    previous = previous_table(previous_kb, "symbol_terms")
    reused = previous.assign(symbol_id=new_symbol_ids(previous["symbol_id"], symbol_keys))
    reused = kept_rows(reused, reused["symbol_id"].notna())
    return conform(_append(reused, new), "symbol_terms")
