"""Term frequencies for the lexical (BM25) indexes: per file and per symbol, reused for unchanged files.

Weights are not computed here: `dataflows.lexical.Bm25Index.from_terms` builds them when a KB is loaded.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import numpy as np
import pandas as pd

from dataflows.index.parsing import _conform, _old_to_new, _previous
from dataflows.text import terms


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@lru_cache(maxsize=500_000)
def _identifier_terms(identifier: str) -> tuple[str, ...]:
    """`terms` of one identifier, cached: code repeats the same identifiers thousands of times."""
    return tuple(terms(identifier))


def _term_counts(text: str) -> Counter:
    """Same counts as Counter(terms(text)) (terms works identifier by identifier), ~4x faster on code."""
    counts: Counter = Counter()
    for identifier, n in Counter(_IDENTIFIER.findall(text)).items():
        for term in _identifier_terms(identifier):
            counts[term] += n
    return counts


def _term_rows(ids, docs, id_col: str) -> pd.DataFrame:
    """(id, term, tf) rows of documents, terms sorted within a document for a deterministic table."""
    rows = [(i, term, tf) for i, doc in zip(ids, docs) for term, tf in sorted(_term_counts(doc).items())]
    return pd.DataFrame(rows, columns=[id_col, "term", "tf"])


def kb_file_terms(indexed_files: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None) -> pd.DataFrame:
    """(file_id, term, tf) of path + text for every file: computed for new/changed files, reused otherwise."""
    new_files = indexed_files[~indexed_files["reused"]]
    new = _term_rows(new_files["file_id"], (new_files["path"] + "\n" + new_files["text"]).tolist(), "file_id")
    previous = _previous(previous_kb, "file_terms")
    reused = previous[previous["file_id"].isin(indexed_files.loc[indexed_files["reused"], "file_id"])]
    frame = pd.concat([f for f in (reused, new) if len(f)] or [new], ignore_index=True)
    return _conform(frame.sort_values(["file_id", "term"], kind="stable"), "file_terms")


def kb_symbol_terms(
    new_symbol_rows: pd.DataFrame,
    kb_comments: pd.DataFrame,
    symbol_keys: pd.DataFrame,
    previous_kb: dict[str, pd.DataFrame] | None,
) -> pd.DataFrame:
    """(symbol_id, term, tf) of qualified name + signature + docstring + body + attached comments per symbol."""
    keys = symbol_keys[symbol_keys["local"] >= 0]
    local_ids = pd.Series(keys["symbol_id"].to_numpy(), index=pd.MultiIndex.from_arrays([keys["file_id"], keys["local"]]))
    ids = local_ids.reindex(pd.MultiIndex.from_arrays([new_symbol_rows["file_id"], new_symbol_rows["local"]])).to_numpy()
    attached = kb_comments[kb_comments["symbol_id"].notna()].groupby("symbol_id")["text"].agg("\n".join)
    comments = attached.reindex(ids).fillna("").to_numpy() if len(ids) else np.array([], dtype=object)
    parts = [new_symbol_rows[c].fillna("").astype(str) for c in ("qualified_name", "signature", "docstring", "body")]
    docs = ["\n".join(texts) for texts in zip(*parts, comments)]
    new = _term_rows(ids, docs, "symbol_id")
    previous = _previous(previous_kb, "symbol_terms")
    reused = previous.assign(symbol_id=previous["symbol_id"].map(_old_to_new(symbol_keys)))
    reused = reused[reused["symbol_id"].notna()]
    frame = pd.concat([f for f in (reused, new) if len(f)] or [new], ignore_index=True)
    return _conform(frame.sort_values(["symbol_id", "term"], kind="stable"), "symbol_terms")
