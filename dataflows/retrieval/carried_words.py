"""The symbol word tables of a re-index patched from the previous KB's: a name's words, terms and norms are its own,
so the rows of symbols whose name and qualified name did not change are carried over (re-coded), and only the names
and symbols the change added are split, stemmed and normalised. Every table equals the one built from scratch
(`cra.dataflows.retrieval.vocabulary`); adding one function to Django costs what one name costs, not 42,000 symbols.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cra.dataflows.retrieval import vocabulary
from cra.dataflows.retrieval.vocabulary import WordIndex
from cra.dataflows.text import stem_words


@dataclass(frozen=True, eq=False)
class PreviousSymbolWords:
    """The previous KB version's symbol word tables and the symbol columns they were built from."""

    symbols: pd.DataFrame  # symbol_id, file_id, name, qualified_name: its symbols, in its row order
    names: pd.DataFrame  # symbol_names
    codes: pd.DataFrame  # symbol_name_codes (one row per symbol, in the same order)
    norms: pd.DataFrame  # symbol_norms (likewise)
    terms: pd.DataFrame  # symbol_name_terms
    words: WordIndex  # symbol_name_words


@dataclass(frozen=True, eq=False)
class SymbolNamePatch:
    """This KB's distinct symbol names found from the previous KB's, and how its codes and rows map onto these."""

    names: pd.DataFrame  # this KB's symbol_names
    row_codes: np.ndarray  # name code of each symbol row (-1: no name)
    new_code: np.ndarray  # this code of each previous name code (-1: the name is gone)
    fresh: np.ndarray  # codes (ascending) of the names the previous KB lacked
    carried_rows: np.ndarray  # per symbol row: its previous row (same id, file, name, qualified name), else -1
    previous: PreviousSymbolWords


def _strings(values) -> pa.Array:
    """Any string column (objects or Arrow-backed) as one large_string Arrow array, nulls kept."""
    array = pa.array(values, from_pandas=True)
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    return array.cast(pa.large_string())


def _same_strings(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Per position: equal values, or both null."""
    equal = pc.fill_null(pc.equal(a, b), False)
    return pc.or_(equal, pc.and_(pc.is_null(a), pc.is_null(b))).to_numpy(zero_copy_only=False)


def _carried_rows(symbols: pd.DataFrame, previous: pd.DataFrame) -> np.ndarray:
    """Per symbol row, the previous row with the same symbol_id, file_id, name and qualified name; -1 where none."""
    ids = symbols["symbol_id"].to_numpy(np.int64)
    if not len(previous):
        return np.full(len(ids), -1, dtype=np.int64)
    at = pd.Index(previous["symbol_id"].to_numpy(np.int64)).get_indexer(ids)
    safe = np.where(at >= 0, at, 0)
    same = (at >= 0) & (previous["file_id"].to_numpy(np.int64)[safe] == symbols["file_id"].to_numpy(np.int64))
    for column in ("name", "qualified_name"):
        same &= _same_strings(_strings(symbols[column]), _strings(previous[column]).take(pa.array(safe)))
    return np.where(same, at, -1).astype(np.int64)


FEW_NAMES = 8  # names looked up by a scan each (Django's 27,000 names: 0.2 ms a name) rather than by a hash of all


def _positions(names: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Position of each wanted name among the distinct names, -1 where absent (`pd.Index(names).get_indexer`); a
    re-index after a small edit looks up a name or two, which a scan finds without hashing every name (5 ms)."""
    if len(wanted) > FEW_NAMES:
        return pd.Index(names).get_indexer(wanted)
    hits = [np.flatnonzero(names == name) for name in wanted]
    return np.array([hit[0] if len(hit) else -1 for hit in hits], dtype=np.intp)


def symbol_name_patch(kb_symbols: pd.DataFrame, previous: PreviousSymbolWords) -> SymbolNamePatch | None:
    """This KB's `symbol_names` (first-seen order, as built from scratch) with each row's name code, found through
    the previous KB's codes for the symbols it carries and by a lookup of the other rows' names only; None when the
    previous tables do not line up with its symbols (then everything is built)."""
    before = previous.symbols
    if len(previous.codes) != len(before) or not np.array_equal(
        previous.codes.index.to_numpy(np.int64), before["symbol_id"].to_numpy(np.int64)
    ):
        return None
    carried_rows = _carried_rows(kb_symbols, before)
    carried = carried_rows >= 0
    known = len(previous.names)
    keys = np.full(len(kb_symbols), -1, dtype=np.int64)  # a previous name code, or known + a new name's number
    keys[carried] = previous.codes["name_code"].to_numpy(np.int64)[carried_rows[carried]]
    other = np.flatnonzero(~carried & kb_symbols["name"].notna().to_numpy())
    other_names = np.array([str(n) for n in kb_symbols["name"].iloc[other].to_numpy(dtype=object)], dtype=object)
    found = _positions(previous.names["name"].to_numpy(dtype=object), other_names)
    numbers, new_keys = pd.factorize(other_names[found < 0]) if (found < 0).any() else (np.array([], int), [])
    keys[other] = found
    keys[other[found < 0]] = known + numbers
    order = pd.unique(keys[keys >= 0])  # keys in first-seen order: this KB's names in code order
    code_of = np.full(known + len(new_keys), -1, dtype=np.int64)
    code_of[order] = np.arange(len(order))
    all_names = np.concatenate([previous.names["name"].to_numpy(dtype=object), np.asarray(new_keys, dtype=object)])
    lower = pa.concat_arrays(  # (Arrow strings taken in order: no Python string per name)
        [_strings(previous.names["lower"]), pa.array([n.lower() for n in new_keys], type=pa.large_string())]
    )
    names = pd.DataFrame(
        {
            "name": pd.Series(all_names[order], dtype=object),
            "lower": pd.array(lower.take(pa.array(order)), dtype="string[pyarrow]"),
        }
    )
    return SymbolNamePatch(
        names=names,
        row_codes=np.where(keys >= 0, code_of[np.maximum(keys, 0)], -1).astype(np.intp),
        new_code=code_of[:known],
        fresh=np.sort(code_of[known:]),
        carried_rows=carried_rows,
        previous=previous,
    )


def symbol_name_codes(kb_symbols: pd.DataFrame, patch: SymbolNamePatch) -> pd.DataFrame:
    """`vocabulary.symbol_name_codes` from the patch's row codes (no lookup of every symbol's name)."""
    return pd.DataFrame(
        {"file_id": kb_symbols["file_id"].to_numpy(), "name_code": patch.row_codes},
        index=pd.Index(kb_symbols["symbol_id"], name="symbol_id"),
    )


def symbol_name_words(patch: SymbolNamePatch) -> WordIndex:
    """`vocabulary.symbol_name_word_index` of the patch's names: the previous rows of names kept (re-coded), the new
    names split, the vocabulary kept sorted with its stems (only words it lacked are stemmed), empty words dropped."""
    index, names = patch.previous.words, patch.names
    entries = index.vocabulary["entry"].to_numpy(dtype=object)
    stems = index.vocabulary["stem"].to_numpy(dtype=object)
    word_of_row = np.repeat(np.arange(len(entries)), np.diff(index.offsets))
    codes = patch.new_code[index.rows["code"].to_numpy(np.int64)]
    kept = codes >= 0
    parents, split = vocabulary.split_words(vocabulary.camel_snake(names["name"].iloc[patch.fresh]))
    split = split.to_numpy(dtype=object)
    hit = pd.Index(entries).get_indexer(split) if len(split) else np.array([], dtype=np.intp)
    added = np.array(sorted(set(split[hit < 0].tolist())), dtype=object)  # (code point order, as Arrow sorts)
    at = np.searchsorted(entries, added) if len(added) else np.array([], dtype=np.int64)
    moved = np.arange(len(entries)) + np.searchsorted(at, np.arange(len(entries)), side="right")
    entries, stems = np.insert(entries, at, added), np.insert(stems, at, stem_words(added.tolist()))
    fresh_words = np.where(hit >= 0, moved[np.maximum(hit, 0)], 0)
    if len(added):
        fresh_words[hit < 0] = at[np.searchsorted(added, split[hit < 0])] + np.searchsorted(added, split[hit < 0])
    words = np.concatenate([moved[word_of_row[kept]], fresh_words]).astype(np.int64)
    codes = np.concatenate([codes[kept], patch.fresh[parents]]).astype(np.int64)
    # each word's rows by code, as a build splits names in code order: one key per row, sorted stably (the carried
    # rows are one sorted run when no kept name changed places, which a merge sort takes in one pass)
    order = np.argsort(words * max(len(names), 1) + codes, kind="stable")
    words, codes = words[order], codes[order]
    counts = np.bincount(words, minlength=len(entries))
    used = counts > 0
    vocabulary_ = pd.DataFrame({"entry": entries[used], "stem": stems[used]}, dtype=object)
    offsets = np.concatenate([[0], np.cumsum(counts[used])]).astype(np.int64)
    return WordIndex(pd.DataFrame({"code": codes}), vocabulary_, offsets)


def symbol_name_terms(patch: SymbolNamePatch) -> pd.DataFrame:
    """`vocabulary.symbol_name_terms` of the patch's names: the previous rows of names kept, re-coded, and the new
    names' terms built."""
    return vocabulary.carried_name_terms(patch.names, patch.new_code, patch.fresh, patch.previous.terms)


def symbol_norms(kb_symbols: pd.DataFrame, patch: SymbolNamePatch) -> pd.DataFrame:
    """`vocabulary.symbol_norms`: the previous norms of the symbols carried, the others' normalised."""
    carried = patch.carried_rows >= 0
    built = np.flatnonzero(~carried)
    rows = np.concatenate([np.flatnonzero(carried), built])
    place = np.empty(len(rows), dtype=np.int64)
    place[rows] = np.arange(len(rows))
    columns = {}
    for column, source in (("name", "name"), ("qualified", "qualified_name")):
        before = _strings(patch.previous.norms[column]).take(pa.array(patch.carried_rows[carried]))
        new = _strings(vocabulary.norms(kb_symbols[source].iloc[built]))
        joined = pa.concat_arrays([before, new]).take(pa.array(place)).cast(pa.string())
        columns[column] = pd.array(joined, dtype="string[pyarrow]")
    return pd.DataFrame(columns, dtype="string[pyarrow]")
