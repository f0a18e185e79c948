"""The knowledge base on disk: versioned Parquet tables, swapped in atomically, loaded once per process.

Layout of a KB directory (default `<repo>/.cra/`):
    CURRENT            name of the live version directory (replaced atomically, last)
    v-<stamp>/         one file per table of `cra.dataflows.index.schema` (Parquet; the `_MAPPED` ones Arrow IPC,
                       the file-keyed ones of which, contents and PIECED, and the symbol-keyed SYMBOL_PIECED may be
                       kept in pieces instead: `<table>.pieces.json` naming row ranges of `<table>.seg-*.arrow`
                       segments), plus
                       metadata.json, plus the finished BM25 arrays of each term table (`<terms>.bm25.arrow`,
                       see LEXICONS; after a small edit, with the changed docs' beside it in
                       `<terms>.bm25.delta.arrow`, `cra.dataflows.lexicon_layers`): derived data, so a KB without
                       them (or of another lexicon format) is still read, by rebuilding; likewise the per-KB
                       word tables (`words.<name>*.arrow`, see `cra.drivers.kb.word_cache`), reused only when
                       written by the same `vocabulary` / `text` code
    scan-cache.json    what the last index saw of each file (`cra.drivers.kb.stat_cache`), naming the version it belongs to
A run that dies before CURRENT is replaced leaves the previous version live and intact. A version's files are never
modified once written, so a new version hard-links the files of tables that did not change from the live one, and
the segments of a pieced table whose rows it keeps (a one-file edit writes that file's rows, not the table).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cra.dataflows import lexical
from cra.dataflows.index.frames import positions_in
from cra.dataflows.index.mapped import int_chunks, same_ints, sorted_search
from cra.dataflows.index.schema import OPTIONAL, REQUEST_TABLES, SCHEMA_VERSION, TABLES, arrow_schema
from cra.dataflows.lexical import Bm25Index
from cra.dataflows.lexicon_layers import LayeredIndex, Lexicon
from cra.dataflows.retrieval import vocabulary
from cra.drivers.common.errors import CraError
from cra.drivers.kb.check import INVENTORY_KEY, KbDamaged, clear_damage, inventory, mark_damaged, version_damage
from cra.drivers.kb.location import CURRENT, KB_DIRNAME, check_writable, default_kb_dir, live_version  # noqa: F401 (re-exported)
from cra.drivers.kb.mapped import (
    MAX_PIECES,
    PIECES_SUFFIX,
    TEXT_TABLES,
    has_table,
    link_table,
    linked_segments,
    mapped_table,
    merged_pieces,
    segment_name,
    table_pieces,
    version_table,
    write_mapped,
    write_pieces,
    write_table,
)
from cra.drivers.kb.parquet_copies import SUFFIX as COPY_SUFFIX
from cra.drivers.kb.parquet_copies import parquet_table, write_copy
from cra.drivers.kb.word_cache import (
    carried_column_digests,
    read_word_tables,
    word_column_digests,
    word_input_digests,
    word_table_overrides,
    word_tables,
    write_word_tables,
)

_CURRENT = CURRENT
_METADATA = "metadata.json"


# term table -> its doc column: each gets a persisted BM25 index, written with the KB, read on first use
LEXICONS = {"file_terms": "file_id", "symbol_terms": "symbol_id", "commit_terms": "commit"}
BUILDS_APART_ROWS = 4_000_000  # term rows up to which the word tables are built beside the lexicons (see write_kb)
_LEXICON_SUFFIX = ".bm25.arrow"  # Arrow IPC, uncompressed: memory-mapped, a request reads only its terms' postings
_LEXICON_FORMAT = {b"cra_bm25_format": b"3", b"k1": repr(lexical.K1).encode(), b"b": repr(lexical.B).encode()}
_DELTA_SUFFIX = ".bm25.delta.arrow"  # a layered lexicon's delta and its base docs' ids (beside `<terms>.bm25.arrow`)

# tables kept as uncompressed Arrow IPC, memory-mapped when read: every file's text and every comment, of which a
# request reads those of the few files it packs (decoding them from Parquet took 3.4 s and 0.55 s on OpenJDK), and
# the term tables the lexicons are built from, which a re-index reads whole (Django's symbol terms: Parquet read
# 85 ms, written 128 ms; mapped 6 and 34 ms, 18 MB instead of 3), and the symbols, which every load and re-index
# reads whole and a re-index writes in pieces (OpenJDK's 745k rows: Parquet and its mapped copy took 1-2 s to write),
# and the references, likewise (2.9M rows)
_MAPPED = frozenset({"contents", "comments", *LEXICONS, "concept_terms", "symbols", "references"})
_ROW_GROUP = 1 << 20  # rows of a Parquet table converted and written at once (pyarrow's default row group size)


def table_file(name: str) -> str:
    """The file name of a table in a version directory."""
    return f"{name}.arrow" if name in _MAPPED else f"{name}.parquet"


def _write_table(staging: Path, name: str, frame: pd.DataFrame | None, copy: bool = False) -> None:
    """One table as Parquet (snappy, dictionary-encoded), or for _MAPPED tables as uncompressed Arrow IPC. copy: a
    Parquet table's mapped copy is written too (a re-index: the next one maps what this one wrote, instead of
    decoding it: OpenJDK's symbols 1.2 s)."""
    if name in _MAPPED:
        write_mapped(frame, name, staging / table_file(name))
        return
    if frame is None or frame.empty:  # typed by the schema, whatever an empty frame's columns were inferred as
        frame = pd.DataFrame({c: pd.Series(dtype=object) for c in TABLES[name]})
    missing = [c for c in OPTIONAL.get(name, ()) if c not in frame]
    frame = frame.assign(**{c: np.nan for c in missing}) if missing else frame
    frame, schema = frame[list(TABLES[name])], arrow_schema(name)
    coded = {c: "str" for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)}
    batches = (
        pandas_readable(
            pa.Table.from_pandas(
                frame.iloc[start : start + _ROW_GROUP].astype(coded), schema=schema, preserve_index=False
            )
        )
        for start in range(0, max(len(frame), 1), _ROW_GROUP)
    )  # dictionary-encoded terms decoded a group at a time
    first, written = next(batches), []
    with pq.ParquetWriter(staging / table_file(name), first.schema) as writer:  # (the schema with pandas' metadata)
        for batch in itertools.chain([first], batches):
            writer.write_table(batch)
            written += [batch] if copy else []
    if copy:
        write_copy(staging / table_file(name), pa.concat_tables(written))


def pandas_readable(table: pa.Table) -> pa.Table:
    """The table with pandas' metadata naming its Arrow-backed list columns (a files table's concepts) as the object
    columns a reader without a types mapper makes of them: pyarrow cannot rebuild a `list<...>[pyarrow]` dtype."""
    metadata = table.schema.pandas_metadata
    if not metadata or not any("list<" in str(c.get("numpy_type")) for c in metadata.get("columns", [])):
        return table
    for column in metadata["columns"]:
        if "list<" in str(column.get("numpy_type")):
            column["numpy_type"] = "object"
    return table.replace_schema_metadata({**table.schema.metadata, b"pandas": json.dumps(metadata).encode()})


def _read_table(version: Path, name: str, arrow_lists: bool = False, copies: bool = False) -> pd.DataFrame:
    """One table as a frame; a _MAPPED one is a zero-copy view of its memory-mapped file (Arrow-backed columns),
    unless the version predates that (its Parquet file is read; the next `cra index` rewrites it). arrow_lists:
    list columns (file concepts, decorators) stay Arrow-backed instead of becoming a Python list per row, which
    took a cold request 0.5 s at 100k files; a request does not read them, only word tables built anew do.
    copies: a Parquet table is read from its mapped copy (`cra.drivers.kb.parquet_copies`), made if missing."""
    lists = (lambda t: pd.ArrowDtype(t) if pa.types.is_list(t) else None) if arrow_lists else None
    if name in _MAPPED and has_table(version, name):
        return version_table(version, name).to_pandas(types_mapper=pd.ArrowDtype if name in TEXT_TABLES else lists)
    if copies:
        return parquet_table(version, name).to_pandas(types_mapper=lists)
    return (
        pq.ParquetFile(version / f"{name}.parquet").read().to_pandas(types_mapper=lists)
    )  # (not pq.read_table: its dataset layer cost 46 ms)


def _lexicon_columns(index: Bm25Index) -> dict[str, pa.Array]:
    """An index's arrays as one-row list columns (a lexicon file's layout)."""
    columns = {}
    for name, values in index.arrays().items():
        if isinstance(values, lexical.ArrowVocabulary):
            flat = values.array.cast(pa.string())
        else:
            flat = (
                pa.array(values, type=pa.string()) if values.dtype == object and name == "vocab" else pa.array(values)
            )
        columns[name] = pa.ListArray.from_arrays(pa.array([0, len(flat)], type=pa.int32()), flat)
    return columns


def _write_lexicon(
    staging: Path, terms: str, frame: pd.DataFrame, index: Lexicon | None = None, live: Path | None = None
) -> None:
    """The finished BM25 arrays of one term table (index: as patched, else built from the frame) as a one-row Arrow
    IPC table of list columns; a layered index as the live version's base file, linked, and its delta beside it
    (folded and written whole when the base cannot be linked)."""
    if isinstance(index, LayeredIndex):
        if _linked(staging, live, f"{terms}{_LEXICON_SUFFIX}"):
            columns = _lexicon_columns(index.delta)
            columns["base_ids"] = pa.ListArray.from_arrays(
                pa.array([0, len(index.base_ids)], type=pa.int32()), pa.array(index.base_ids, type=pa.int64())
            )
            one = pa.array([0, 1], type=pa.int32())  # (its postings, as `_patched_lexicon` checked them)
            columns["n_postings"] = pa.ListArray.from_arrays(one, pa.array([index.n_postings], type=pa.int64()))
            write_table(pa.table(columns).replace_schema_metadata(_LEXICON_FORMAT), staging / f"{terms}{_DELTA_SUFFIX}")
            return
        index = index.merged(LEXICONS[terms])
    index = index if index is not None else Bm25Index.from_terms(frame, LEXICONS[terms])
    write_table(
        pa.table(_lexicon_columns(index)).replace_schema_metadata(_LEXICON_FORMAT),
        staging / f"{terms}{_LEXICON_SUFFIX}",
    )


def _lexicon_arrays(path: Path, extra: tuple[str, ...] = ()) -> dict[str, pa.Array] | None:
    """The arrays of a lexicon file (memory-mapped), None when it is of another format."""
    table = mapped_table(path)
    if (table.schema.metadata or {}) != _LEXICON_FORMAT or table.num_rows != 1:
        return None
    names = (*lexical.ARRAYS, *extra)
    if not all(name in table.column_names for name in names):
        return None
    return {name: table.column(name).chunk(0).values for name in table.column_names}


def _index_of(values: dict[str, pa.Array]) -> Bm25Index:
    """The index over a lexicon file's arrays (views of the mapped file, not copies)."""
    vocab = lexical.ArrowVocabulary(values["vocab"])
    return Bm25Index(vocab, *(values[name].to_numpy(zero_copy_only=False) for name in lexical.ARRAYS[1:]))


def _read_lexicon(version: Path, terms: str) -> Lexicon | None:
    """The persisted BM25 index of a term table, memory-mapped (arrays are views of the file: a request pages in
    the postings of its own terms only), layered when a delta lies beside it; None when absent or of another format
    (then rebuild)."""
    path = version / f"{terms}{_LEXICON_SUFFIX}"
    if not path.is_file():
        return None
    values = _lexicon_arrays(path)
    if values is None:
        return None
    if not (version / f"{terms}{_DELTA_SUFFIX}").is_file():
        return _index_of(values)
    delta = _lexicon_arrays(version / f"{terms}{_DELTA_SUFFIX}", ("base_ids",))
    if delta is None or len(delta["base_ids"]) != len(values["doc_ids"]):
        return None
    postings = int(delta["n_postings"][0].as_py()) if "n_postings" in delta else None
    return LayeredIndex(_index_of(values), delta["base_ids"].to_numpy(zero_copy_only=False), _index_of(delta), postings)


def previous_lexicon(kb_dir: Path, terms: str = "file_terms") -> Lexicon | None:
    """The live version's persisted lexicon of a term table (memory-mapped), for a re-index to read the previous
    document frequencies from; None when there is none or it cannot be read (the caller counts them itself)."""
    try:
        version = live_version(Path(kb_dir))
        return _read_lexicon(version, terms) if version is not None else None
    except (OSError, ValueError, pa.ArrowException):
        return None


PATCH_MAX_SHARE = 0.25  # a lexicon is patched when the rows of its changed docs are at most this share of its table
# and layered (`cra.dataflows.lexicon_layers`: its file linked, the docs not carried from it written beside it) while
# those docs' rows are at most this share: a one-file edit writes a few kB instead of the whole lexicon (OpenJDK's
# file terms: 127 MB); beyond it the layers are folded into one lexicon again
LAYER_MAX_SHARE = 0.05


def _kept_docs(
    tables: dict[str, pd.DataFrame], previous: dict[str, pd.DataFrame], wanted=("file_terms", "symbol_terms")
) -> dict[str, np.ndarray]:
    """Per patchable term table (of those `wanted`: the lexicons not linked as they are), a lookup from the live
    version's doc id to the doc id it has now, -1 where the doc is gone or was indexed again: files of the same path
    and content keep their terms (a file's terms are its path and text), and so do their symbols (a symbol's terms
    are its own file's lines), in the same order. {} when the tables to map are missing or the kept symbols do not
    pair up."""
    if not set(wanted) & {"file_terms", "symbol_terms"}:
        return {}
    try:
        before, now = previous["files"], tables["files"]
        at = positions_in(before["path"], now["path"])
        same = at >= 0
        same[same] = before["hash"].to_numpy(dtype=object)[same] == now["hash"].to_numpy(dtype=object)[at[same]]
        old_files = before["file_id"].to_numpy(np.int64)
        files = np.full(int(old_files.max(initial=-1)) + 1, -1, dtype=np.int64)
        files[old_files[same]] = now["file_id"].to_numpy(np.int64)[at[same]]
        out = {"file_terms": files}
        if "symbol_terms" not in wanted:  # (its lexicon is linked: 745k symbols of OpenJDK not mapped for nothing)
            return out
        symbols_before, symbols_now = previous["symbols"], tables["symbols"]
        old_ids, old_file = (symbols_before[c].to_numpy(np.int64) for c in ("symbol_id", "file_id"))
        new_ids, new_file = (symbols_now[c].to_numpy(np.int64) for c in ("symbol_id", "file_id"))
        kept_now = np.zeros(int(max(new_file.max(initial=-1), files.max(initial=-1))) + 1, dtype=bool)
        kept_now[files[files >= 0]] = True
        mapped = files[old_file]
        keep_old, keep_new = mapped >= 0, kept_now[new_file]
        if not np.array_equal(mapped[keep_old], new_file[keep_new]):  # not the same symbols of the same files
            return out
        if (np.diff(old_ids) <= 0).any() or (np.diff(new_ids) <= 0).any():
            return out
        symbols = np.full(int(old_ids.max(initial=-1)) + 1, -1, dtype=np.int64)
        symbols[old_ids[keep_old]] = new_ids[keep_new]
        return {**out, "symbol_terms": symbols}
    except (KeyError, IndexError, ValueError, TypeError):
        return {}


def _rows_of_other_docs(docs: np.ndarray, kept_ids: np.ndarray) -> np.ndarray:
    """Positions of the rows whose doc is not among kept_ids (sorted): found per doc from the runs of a doc-ordered
    column (a KB's term tables), not by a lookup and a mask per row, then a frame filtered by it (OpenJDK's 20M
    symbol-term rows: 0.3 s); by a lookup per row when the rows are not in doc order."""
    docs = docs if docs.dtype.kind in "iu" else docs.astype(np.int64)
    if not len(docs):
        return np.array([], dtype=np.int64)
    if not (docs[1:] >= docs[:-1]).all():
        is_kept = np.zeros(int(max(docs.max(), kept_ids.max(initial=-1))) + 1, dtype=bool)
        is_kept[kept_ids] = True
        return np.flatnonzero(~is_kept[docs])
    first = np.flatnonzero(np.r_[True, docs[1:] != docs[:-1]])
    distinct, ends = docs[first], np.r_[first[1:], len(docs)]
    at = np.minimum(np.searchsorted(kept_ids, distinct), max(len(kept_ids) - 1, 0))
    other = kept_ids[at] != distinct if len(kept_ids) else np.ones(len(distinct), dtype=bool)
    lo, counts = first[other], (ends - first)[other]
    return np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum(), dtype=np.int64)


def _rows_taken(frame: pd.DataFrame, rows: np.ndarray, max_runs: int = 10_000) -> pd.DataFrame:
    """frame.iloc[rows] for ascending rows, as slices of their runs of consecutive rows joined: taking a changed
    file's 3,000 rows of OpenJDK's symbol terms (20M rows, Arrow strings in 20 chunks) by position took 0.5 s."""
    if not len(rows):
        return frame.iloc[:0]  # (a take of no rows still walks Arrow's chunks)
    cuts = np.flatnonzero(np.diff(rows) != 1) + 1
    if len(cuts) >= max_runs:
        return frame.iloc[rows]
    firsts, lasts = rows[np.r_[0, cuts]], rows[np.r_[cuts - 1, len(rows) - 1]] + 1
    return pd.concat([frame.iloc[a:b] for a, b in zip(firsts, lasts)])


def _patched_lexicon(live: Path | None, terms: str, frame: pd.DataFrame, kept: np.ndarray | None) -> Lexicon | None:
    """The live version's lexicon of a term table brought to this frame of its rows: its base with the docs not
    carried from it layered over it (up to LAYER_MAX_SHARE of the rows), or patched into one (`Bm25Index.patched`,
    up to PATCH_MAX_SHARE); None when there is nothing to patch from, or more changed (then it is built)."""
    if live is None or kept is None or frame is None or not len(frame):
        return None
    before = _read_lexicon(live, terms)
    if before is None:
        return None
    base = before.base if isinstance(before, LayeredIndex) else before
    doc = LEXICONS[terms]
    old_docs = np.asarray(before.base_ids if isinstance(before, LayeredIndex) else base.doc_ids, dtype=np.int64)
    new_ids, inside = np.full(len(old_docs), -1, dtype=np.int64), (old_docs >= 0) & (old_docs < len(kept))
    new_ids[inside] = kept[old_docs[inside]]
    rows = _rows_of_other_docs(frame[doc].to_numpy(), np.sort(new_ids[new_ids >= 0]))
    if len(rows) > PATCH_MAX_SHARE * len(frame):
        return None
    try:
        added = _rows_taken(frame, rows)
        if len(rows) <= LAYER_MAX_SHARE * len(frame):
            if (np.diff(new_ids[new_ids >= 0]) <= 0).any():
                raise ValueError("kept docs must keep their order")
            index = LayeredIndex(base, new_ids, Bm25Index.from_terms(added, doc))
        else:
            index = base.patched(new_ids, added, doc)
    except (ValueError, IndexError, OSError, pa.ArrowException):  # kept docs out of order, an unreadable page: built
        return None
    if index.n_postings != len(frame) or index.doc_len.sum() != frame["tf"].sum():
        return None  # not the rows of this table (cannot happen when the kept docs' terms are as before): built
    return index


def _same_table(name: str, frame: pd.DataFrame | None, before: pd.DataFrame | None) -> bool:
    """Whether a table to write holds the same values as the live version's as read (then its file is linked, not
    written): columns compared as the schema's arrow types, so lists equal arrays and None equals NaN."""
    if frame is None or before is None or len(frame) != len(before):
        return False
    if not len(frame):
        return True  # an empty table is written typed by the schema, whatever its frame's dtypes
    try:
        return all(_same_column(frame[c], before[c], t) for c, t in TABLES[name].items())
    except (KeyError, TypeError, ValueError, pa.ArrowException):  # not provably equal: written
        return False


def _same_column(values: pd.Series, before: pd.Series, typ: pa.DataType) -> bool:
    """Whether two columns of one length hold the same values as the schema's Arrow type. Object columns compare the
    rows that are not the very same object only: a re-index carries the unchanged files' lists (decorators, import
    names) over as the objects read, and converting them all took OpenJDK's one-file re-index 0.2 s."""
    if values.dtype == before.dtype and values.dtype != object:
        return values.equals(before)
    if values.dtype == object and before.dtype == object:
        ours, theirs = values.to_numpy(dtype=object), before.to_numpy(dtype=object)
        differ = np.fromiter((a is not b for a, b in zip(ours, theirs)), dtype=bool, count=len(ours))
        if not differ.any():
            return True
        values, before = values[differ], before[differ]
    return _as_arrow(values, typ).equals(_as_arrow(before, typ))


def _as_arrow(values: pd.Series, typ: pa.DataType) -> pa.Array:
    """A column as one Arrow array of the schema's type: an arrow-backed column (as read back) converts to a chunked
    array, which does not compare with a plain one (an object column of this run's texts)."""
    array = pa.array(values, type=typ, from_pandas=True)
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def _same_contents(tables: dict[str, pd.DataFrame], previous: dict[str, pd.DataFrame]) -> bool:
    """Whether the contents to write are the live version's: each text is its file's content, so the same files with
    the same hashes mean the same texts, without comparing every text (0.8 s at 100,000 files, and a copy of them)."""
    files, before = tables.get("files"), previous.get("files")
    contents, contents_before = tables.get("contents"), previous.get("contents")
    if files is None or before is None or contents is None or contents_before is None:
        return False
    if len(files) != len(before) or len(contents) != len(contents_before):
        return False
    same_ids = np.array_equal(files["file_id"].to_numpy(np.int64), before["file_id"].to_numpy(np.int64))
    return same_ids and bool((files["hash"].to_numpy(dtype=object) == before["hash"].to_numpy(dtype=object)).all())


# file-keyed mapped tables a one-file change used to rewrite whole (OpenJDK: comments 154 MB, file terms 242 MB,
# concept terms 128 MB): while every file keeps its id, a new version keeps them as pieces, the live version's
# segments for the files that did not change (hard-linked) and one new segment with the changed files' rows
PIECED = ("comments", "file_terms", "concept_terms", "references")
SYMBOL_PIECED = ("symbols", "symbol_terms")  # in pieces over the changed files' spans of symbol ids (blocks per file)


@dataclass(frozen=True)
class Pieces:
    """How a pieced table is written: `pieces` over the live version's segments and the new `segment`, which holds
    the new frame's `rows`."""

    pieces: list[tuple[str, int, int]]
    segment: str
    rows: np.ndarray


def _changed_file_ids(tables: dict[str, pd.DataFrame], previous: dict[str, pd.DataFrame]) -> np.ndarray | None:
    """The file ids whose rows this run replaced, in either version: those of files changed, added or removed, and
    those a file added or removed moved within its chunk (`cra.dataflows.index.frames.path_block_ids`); every other
    file has the same path, id and content in both. None when the files tables are missing."""
    before, now = previous.get("files"), tables.get("files")
    if before is None or now is None:
        return None
    ids = now["file_id"].to_numpy(np.int64)
    if len(before) == len(now) and np.array_equal(before["file_id"].to_numpy(np.int64), ids):
        if before["path"].astype(object).tolist() == now["path"].astype(object).tolist():
            changed = before["hash"].astype(object).to_numpy() != now["hash"].astype(object).to_numpy()
            return ids[changed]
    old = pd.DataFrame({"path": before["path"].astype(object), "hash": before["hash"].astype(object)})
    new = pd.DataFrame({"path": now["path"].astype(object), "hash": now["hash"].astype(object)})
    old_ids = before["file_id"].to_numpy(np.int64)
    both = new.assign(file_id=ids).merge(old.assign(old_id=old_ids), on=["path", "hash"], how="inner")
    kept = both.loc[both["file_id"] == both["old_id"], "file_id"].to_numpy(np.int64)
    return np.union1d(np.setdiff1d(ids, kept), np.setdiff1d(old_ids, kept))


def _piece_key(name: str) -> str:
    """The column a pieced table is ordered and split by."""
    return "symbol_id" if name in SYMBOL_PIECED else "file_id"


def _symbol_spans(tables: dict[str, pd.DataFrame], previous: dict[str, pd.DataFrame], changed: np.ndarray):
    """Per changed file that has symbols before or now, the span [first, last] of its symbol ids in either version,
    ascending: the rows of a symbol-keyed table that a one-file edit can change. Symbol ids come in per-file blocks in
    path order (`cra.dataflows.index.frames.block_symbol_ids`), so no other file's id falls in a span; whether the
    other files kept their ids is checked row by row in `_pieces`. None when the symbols are not in file order."""
    spans = []
    for symbols in (previous.get("symbols"), tables.get("symbols")):
        if symbols is None:
            return None
        files, ids = symbols["file_id"].to_numpy(np.int64), symbols["symbol_id"].to_numpy(np.int64)
        if (np.diff(files) < 0).any() or (np.diff(ids) <= 0).any():
            return None
        lo, hi = np.searchsorted(files, changed), np.searchsorted(files, changed, side="right")
        has = hi > lo
        ids = np.r_[ids, 0]  # (a sentinel: where a file has no symbol, its bounds point past the end)
        spans.append((has, np.where(has, ids[lo], 0), np.where(has, ids[hi - 1], 0)))
    (had, old_lo, old_hi), (has, new_lo, new_hi) = spans
    some = had | has
    big = np.iinfo(np.int64).max
    lo = np.minimum(np.where(had, old_lo, big), np.where(has, new_lo, big))[some]
    hi = np.maximum(np.where(had, old_hi, -1), np.where(has, new_hi, -1))[some]
    return merged_spans(lo, hi)


def merged_spans(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Spans [lo, hi] sorted and those that overlap joined: a file added moves the later files of its chunk into ids
    that the file before each held, so their spans over the two versions overlap."""
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], np.maximum.accumulate(hi[order]) if len(hi) else hi
    starts = np.r_[True, lo[1:] > hi[:-1]] if len(lo) else np.zeros(0, dtype=bool)
    ends = np.r_[starts[1:], True] if len(lo) else starts
    return np.c_[lo[starts], hi[ends]]


def _pieces(
    name: str,
    frame: pd.DataFrame | None,
    before: pd.DataFrame | None,
    spans: np.ndarray,
    live: Path,
    key: str = "file_id",
) -> Pieces | None:
    """The pieces that give `frame` from the live version's table `before` (both ordered by `key`, the rows of each
    span of keys together): the rows outside the spans kept as the live segments hold them, those inside (the
    changed files' rows: `spans` [first, last] of their file ids, or of their symbol ids) in one new segment. None
    when they do not pair up or would be too many. Work per changed file, not per row (OpenJDK's 13M file-term
    rows): their ranges are found by binary search. The kept rows' symbol ids, the one thing a re-index may renumber
    in them (a file outgrowing its block of ids), are checked to be the live ones."""
    if frame is None or before is None or not len(before) or not has_table(live, name):
        return None  # (nothing to keep, or the live version holds the table in another form: written whole)
    old_chunks, new_chunks = int_chunks(before[key]), int_chunks(frame[key])  # (a view's: not copied)
    if old_chunks is None or new_chunks is None:
        return None
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    first, last = spans[:, 0], spans[:, 1]
    if (last < first).any() or (first[1:] <= last[:-1]).any():  # (spans must be ascending and apart)
        return None
    old_bounds = np.c_[sorted_search(old_chunks, first), sorted_search(old_chunks, last, side="right")].ravel()
    new_bounds = np.c_[sorted_search(new_chunks, first), sorted_search(new_chunks, last, side="right")].ravel()
    n_old, n_new = len(before), len(frame)
    old_kept = np.diff(np.r_[0, old_bounds, n_old])[::2]  # rows kept before, between and after the changed
    if not np.array_equal(old_kept, np.diff(np.r_[0, new_bounds, n_new])[::2]):
        return None
    kept_old = [(int(lo), int(hi)) for lo, hi in zip(np.r_[0, old_bounds[1::2]], np.r_[old_bounds[::2], n_old])]
    kept_new = [(int(lo), int(hi)) for lo, hi in zip(np.r_[0, new_bounds[1::2]], np.r_[new_bounds[::2], n_new])]
    if key == "symbol_id":  # (the key itself: kept rows keep their ids exactly)
        if not all(same_ints(new_chunks, *n, old_chunks, *o) for o, n in zip(kept_old, kept_new)):
            return None
    elif "symbol_id" in frame.columns and not all(
        np.array_equal(
            *(_float_ids(f["symbol_id"], lo, hi) for f, (lo, hi) in ((frame, n), (before, o))), equal_nan=True
        )
        for o, n in zip(kept_old, kept_new)
    ):
        return None
    old_pieces = table_pieces(live, name) or [(table_file(name), 0, len(before))]
    starts = np.cumsum([0] + [stop - start for _, start, stop in old_pieces])
    if starts[-1] != len(before):
        return None
    rows = np.concatenate([np.arange(lo, hi) for lo, hi in zip(new_bounds[::2], new_bounds[1::2])] or [[]])
    rows = rows.astype(np.int64)
    segment, pieces, in_segment = segment_name(name), [], 0
    for k, (lo, hi) in enumerate(kept_old):
        for p in range(np.searchsorted(starts, lo, side="right") - 1, len(old_pieces)) if hi > lo else ():
            if starts[p] >= hi:
                break
            file, start, _ = old_pieces[p]
            first_row, end_row = int(max(lo, starts[p]) - starts[p]), int(min(hi, starts[p + 1]) - starts[p])
            pieces.append((file, start + first_row, start + end_row))
        if k < len(spans) and new_bounds[2 * k + 1] > new_bounds[2 * k]:
            count = int(new_bounds[2 * k + 1] - new_bounds[2 * k])
            pieces.append((segment, in_segment, in_segment + count))
            in_segment += count
    if len(pieces) > MAX_PIECES:
        return None
    old_rows = np.concatenate([np.arange(lo, hi) for lo, hi in zip(old_bounds[::2], old_bounds[1::2])] or [[]])
    if len(rows) == len(old_rows) and _same_table(
        name,
        _rows_taken(frame, rows).reset_index(drop=True),
        _rows_taken(before, old_rows.astype(np.int64)).reset_index(drop=True),
    ):  # the changed files' rows are as they were (a function added without comments): the table is the live one's
        return Pieces([], "", rows[:0])
    return Pieces(merged_pieces(pieces), segment, rows)


def _float_ids(ids: pd.Series, lo: int, hi: int) -> np.ndarray:
    """Rows lo:hi of a nullable id column as floats (NaN where there is none), comparable whatever its dtype."""
    return ids.iloc[lo:hi].to_numpy(dtype="float64", na_value=np.nan)


def _write_pieced(staging: Path, live: Path, name: str, frame: pd.DataFrame, plan: Pieces) -> None:
    """Write a table as the pieces of `plan`: the live segments linked, the new one written, then the pieces file."""
    if len(plan.rows):
        write_mapped(_rows_taken(frame, plan.rows), name, staging / plan.segment)
    write_pieces(staging / f"{name}{PIECES_SUFFIX}", linked_segments(live, staging, name, plan.pieces, plan.segment))


def _linked_table(staging: Path, live: Path | None, name: str) -> bool:
    """Hard-link a table of the live version into staging, its one file or its pieces and their segments."""
    pieces = table_pieces(live, name) if live is not None and name in _MAPPED else None
    if pieces is None:
        linked = _linked(staging, live, table_file(name))
        if linked and name not in _MAPPED:  # its mapped copy, if a load made one, stays valid: the same inode
            _linked(staging, live, f"{name}{COPY_SUFFIX}")
        return linked
    return all(_linked(staging, live, file) for file in {file for file, _, _ in pieces}) and _linked(
        staging, live, f"{name}{PIECES_SUFFIX}"
    )


def _linked(staging: Path, live: Path | None, filename: str) -> bool:
    """Hard-link a file of the live version into staging (a version's files are never modified); False if impossible."""
    if live is None or not (live / filename).is_file():
        return False
    try:
        os.link(live / filename, staging / filename)
    except OSError:
        return False
    return True


def _linked_lexicon(staging: Path, live: Path | None, terms: str) -> bool:
    """Hard-link the live version's lexicon of a term table, its delta too when it has one; False if impossible."""
    linked = _linked(staging, live, f"{terms}{_LEXICON_SUFFIX}")
    if linked and live is not None and (live / f"{terms}{_DELTA_SUFFIX}").is_file():
        if not _linked(staging, live, f"{terms}{_DELTA_SUFFIX}"):
            (staging / f"{terms}{_LEXICON_SUFFIX}").unlink()
            return False
    return linked


def write_kb(
    kb_dir: Path,
    tables: dict[str, pd.DataFrame],
    metadata: dict,
    previous: dict[str, pd.DataFrame] | None = None,
    written: dict[str, Path] | None = None,
    trim_heap: bool = True,
    reuse_live: bool = True,
) -> Path:
    """Write all tables + metadata (plus the BM25 index of each given term table and, given files and symbols, the
    word tables) into a fresh version directory, then point CURRENT at it.

    written: the directories of tables already written in their KB file format (the index writes contents before its
    parse, whole or in pieces), by name: linked into the version (copied across file systems), not converted again.

    previous: the live version's tables as read; a table equal to its previous frame (and the BM25 index of an
    unchanged term table) is hard-linked from the live version instead of written again. It is emptied once compared,
    so that a large KB's previous tables are not held beside the arrays the write builds (1.5 GB at 100,000 files);
    likewise each of `tables` is removed from it once written and, for those the lexicons and word tables are built
    from, once these are built (the caller's last use: OpenJDK's texts, comments and file terms are not held while
    its symbol lexicon is built).

    trim_heap: hand freed memory back to the system after each job (`cra.drivers.common.heap.glibc_trim`): for a run
    over many files, where the peak matters; a small re-index is faster without.

    reuse_live: False when the live version is damaged: none of its files is linked (nor its word tables).

    The metadata records every file's size and footer (`cra.drivers.kb.check.inventory`), checked before reuse."""
    kb_dir = Path(kb_dir)
    check_writable(kb_dir)
    staging = Path(tempfile.mkdtemp(dir=kb_dir, prefix=".tmp-"))
    live = live_version(kb_dir) if previous else None
    changed = _changed_file_ids(tables, previous) if live is not None else None
    # the live version's own frames, carried over by the index run (`cra.dataflows.index.unchanged`): linked
    carried = {
        name
        for name in TABLES
        if live is not None and tables.get(name) is not None and tables[name] is previous.get(name)
    }
    spans = {name: np.c_[changed, changed] for name in PIECED if name not in carried} if changed is not None else {}
    if (
        changed is not None
        and not carried.issuperset(SYMBOL_PIECED)
        and (symbol_spans := _symbol_spans(tables, previous, changed)) is not None
    ):
        spans.update({name: symbol_spans for name in SYMBOL_PIECED if name not in carried})
    plans = {
        name: plan
        for name, keys in spans.items()
        if (plan := _pieces(name, tables.get(name), previous.get(name), keys, live, _piece_key(name))) is not None
    }
    same = carried | {name for name, plan in plans.items() if not plan.pieces}  # (no row changed)
    same |= {
        name
        for name in TABLES
        if live is not None
        and name != "contents"
        and name not in plans
        and name not in carried
        and _same_table(name, tables.get(name), previous.get(name))
    }
    if live is not None and _same_contents(tables, previous):
        same.add("contents")
    kept_docs = _kept_docs(tables, previous, [n for n in LEXICONS if n not in same]) if live is not None else {}
    if previous:
        previous.clear()

    from cra.drivers.common.heap import glibc_trim

    # each table is let go of once the jobs that read it (its write, and the lexicon or word tables built from it) are
    # done: the caller's was the last use
    jobs_reading = Counter(list(TABLES))
    lock, trim = threading.Lock(), glibc_trim() if trim_heap else None

    def done(*names: str) -> None:
        with lock:
            for name in names:
                jobs_reading[name] -= 1
                if jobs_reading[name] <= 0:
                    tables.pop(name, None)
        if trim is not None:  # hand the freed heap back (the next job's arrays would otherwise come on top of it)
            trim()

    def table_job(name: str) -> None:
        linked = name in same and _linked_table(staging, live, name)
        if not linked and name in plans:
            _write_pieced(staging, live, name, tables[name], plans[name])
        elif not linked and name in (written or {}):
            link_table(Path(written[name]), staging, name)
        elif not linked:
            _write_table(staging, name, tables.get(name), copy=live is not None)
        done(name)

    def lexicon_job(name: str) -> None:
        if not (name in same and _linked_lexicon(staging, live, name)):
            patched = _patched_lexicon(live, name, tables[name], kept_docs.get(name))
            _write_lexicon(staging, name, tables[name], patched, live)
        done(name)

    builds = [lambda name=name: lexicon_job(name) for name in LEXICONS if tables.get(name) is not None]
    jobs_reading.update(name for name in LEXICONS if tables.get(name) is not None)
    writes = [lambda name=name: table_job(name) for name in TABLES]
    words, digests, columns = [], {}, {}
    if tables.get("files") is not None and tables.get("symbols") is not None:
        previous_version = live_version(kb_dir) if reuse_live else None

        def words_job() -> None:  # (the inputs' digests too: hashing names and paths is no work for the main thread)
            known = carried_column_digests(previous_version, [n for n in ("files", "symbols") if n in carried])
            columns.update(word_column_digests(tables["files"], tables["symbols"], known))
            digests.update(word_input_digests(tables["files"], tables["symbols"], columns))
            write_word_tables(staging, tables["files"], tables["symbols"], previous_version, digests)
            done("files", "symbols")

        words = [words_job]
        jobs_reading.update(["files", "symbols"])
    # one thread writes the tables; the lexicons and word tables are built with arrays of their own the size of their
    # table: where a large KB's lexicons are built whole, one after another in a second thread (two at once took
    # OpenJDK's write 0.6 GB higher); else (a small KB, or lexicons patched from the live ones) the word tables (Python
    # string work) in a third thread beside the lexicons (numpy and Arrow, which release the GIL): Django's re-index
    # after an edit writes in 0.27 s instead of 0.34, OpenJDK's after a function is added in 0.3 s less
    term_rows = sum(len(tables[name]) for name in LEXICONS if tables.get(name) is not None)
    patched = all(
        kept_docs.get(name) is not None for name in LEXICONS if tables.get(name) is not None and name not in same
    )
    groups = (words + builds, writes) if term_rows > BUILDS_APART_ROWS and not patched else (words, builds, writes)
    try:
        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            list(pool.map(lambda group: [job() for job in group], groups))
        metadata = {**metadata, **({"word_inputs": digests, "word_columns": columns} if words else {})}
        metadata = {**metadata, "schema_version": SCHEMA_VERSION, INVENTORY_KEY: inventory(staging)}
        (staging / _METADATA).write_text(json.dumps(metadata, indent=2, default=str))
        version = kb_dir / f"v-{time.strftime('%Y%m%dT%H%M%S')}-{staging.name[5:]}"
        staging.rename(version)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    pointer_tmp = kb_dir / f".{_CURRENT}.tmp"
    pointer_tmp.write_text(version.name)
    os.replace(pointer_tmp, kb_dir / _CURRENT)
    clear_damage(kb_dir)
    for old in kb_dir.iterdir():  # earlier versions and debris of interrupted runs
        if old.is_dir() and old != version and (old.name.startswith(("v-", ".tmp-"))):
            shutil.rmtree(old, ignore_errors=True)
    return version


def read_metadata(kb_dir: Path) -> dict:
    """The live version's metadata, or a CraError that says how to get a KB."""
    kb_dir = Path(kb_dir)
    version = live_version(kb_dir)
    if version is None:
        raise CraError(
            f"No knowledge base at {kb_dir}. Run `cra index REPO` (add --kb {kb_dir} if you keep it there) first."
        )
    try:
        metadata = json.loads((version / _METADATA).read_text())
    except (OSError, ValueError) as exc:
        raise KbDamaged(kb_dir, version.name, f"{_METADATA}: {exc}") from None
    found = metadata.get("schema_version")
    if found != SCHEMA_VERSION:
        raise CraError(
            f"The knowledge base at {kb_dir} has schema version {found}; this cra reads version {SCHEMA_VERSION}. "
            "Re-run `cra index REPO` to rebuild it."
        )
    return metadata


def has_usable_kb(kb_dir: Path) -> bool:
    """Whether kb_dir holds a KB this version of cra can read (else it needs `cra index`)."""
    try:
        read_metadata(kb_dir)
    except CraError:
        return False
    return True


def read_tables(kb_dir: Path, names, arrow_lists: bool = False, copies: bool = False) -> dict[str, pd.DataFrame]:
    """Selected tables of the live version as pandas frames (arrow_lists, copies: see `_read_table`)."""
    read_metadata(kb_dir)
    version = live_version(Path(kb_dir))

    def read(name: str) -> pd.DataFrame:
        try:
            return _read_table(version, name, arrow_lists, copies)
        except (OSError, pa.ArrowException) as exc:
            raise mark_damaged(kb_dir, f"{table_file(name)}: {exc}") from None

    names = list(names)
    if len(names) == 1:
        return {names[0]: read(names[0])}
    with ThreadPoolExecutor(max_workers=4) as pool:  # Parquet decoding releases the GIL
        return dict(zip(names, pool.map(read, names)))


# a re-index reads the previous term tables whole (OpenJDK: 40M rows): their term columns stay views of the mapped
# files as Arrow strings, instead of copies cast to pandas' large strings (0.6 GB, 0.35 GB more at the run's peak)
_TERM_TABLES = frozenset({*LEXICONS, "concept_terms"})
_MAPPED_STRINGS = {pa.string(): pd.ArrowDtype(pa.string())}


class PreviousTables(dict):
    """The live version's tables by name, read in background threads from the moment it is made: a re-index makes it
    before it imports the dataflow and scans the tree, so the reading overlaps both instead of coming before them.
    A table asked for (`[]`, `get`, `items`) waits for its own read only.

    deferred: tables only mapped at first (their files opened, nothing decoded), so that a re-index which carries
    them over, or splices a few files' rows into them (`cra.dataflows.index.unchanged.DEFERRED`), never holds them as
    pandas columns: `views` gives them as frames of Arrow-backed columns over the mapped files (OpenJDK's symbols,
    references, symbol, file and concept terms, imports and edges took a one-file re-index 0.75 GB of heap); `[]`,
    or `converted`, reads them as the others are read. arrow_lists: the tables whose list columns stay Arrow-backed
    (the files table's concepts: `cra.dataflows.index.metadata.file_concepts`)."""

    def __init__(self, kb_dir: Path, names, arrow_lists=(), threads: int = 4, deferred=()) -> None:
        read_metadata(kb_dir)
        names = list(names)
        super().__init__(dict.fromkeys(names))
        kb_dir, version = Path(kb_dir), live_version(Path(kb_dir))
        self.deferred = frozenset(deferred) & set(names)
        self._mapped: dict[str, pa.Table] = {}  # a deferred table's mapped Arrow table, once read
        self._given: list[dict] = []  # the plain dicts handed out (`_handed`)

        def mapped(name: str) -> pa.Table:
            return version_table(version, name) if has_table(version, name) else parquet_table(version, name)

        def read(name: str) -> pd.DataFrame | pa.Table:
            try:
                if name in self.deferred:
                    return mapped(name)
                if name in _TERM_TABLES and has_table(version, name):
                    return version_table(version, name).to_pandas(types_mapper=_MAPPED_STRINGS.get)
                return _read_table(version, name, name in arrow_lists, copies=True)  # (mapped; copied for the next run)
            except (OSError, pa.ArrowException) as exc:
                raise mark_damaged(kb_dir, f"{table_file(name)}: {exc}") from None

        def converted(name: str, table: pa.Table) -> pd.DataFrame:  # (as `read` converts the others)
            lists = (lambda t: pd.ArrowDtype(t) if pa.types.is_list(t) else None) if name in arrow_lists else None
            mapper = pd.ArrowDtype if name in _MAPPED and name in TEXT_TABLES else lists
            try:
                return table.to_pandas(types_mapper=_MAPPED_STRINGS.get if name in _TERM_TABLES else mapper)
            except (OSError, pa.ArrowException) as exc:
                raise mark_damaged(kb_dir, f"{table_file(name)}: {exc}") from None

        self._converted = converted
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="previous-kb")
        for name in names:  # (in the order given: the tables the dataflow needs first, first)
            dict.__setitem__(self, name, self._pool.submit(read, name))
        self._pool.shutdown(wait=False)  # (the threads end once the reads queued are done)

    def __getitem__(self, name: str) -> pd.DataFrame:
        value = dict.__getitem__(self, name)
        if isinstance(value, Future):
            value = value.result()
            dict.__setitem__(self, name, value)
        if isinstance(value, pa.Table):  # (deferred, not converted yet)
            value = self._converted(name, value)
            dict.__setitem__(self, name, value)
        return value

    def get(self, name, default=None):
        return self[name] if name in self else default

    def items(self):
        return [(name, self[name]) for name in self]

    def settled(self) -> None:
        """Wait for every read, so that a table the version cannot give fails here (the deferred ones: mapped)."""
        for name in self:
            value = dict.__getitem__(self, name)
            if isinstance(value, Future):
                value = value.result()
                dict.__setitem__(self, name, value)
            if isinstance(value, pa.Table):
                self._mapped[name] = value

    def views(self) -> dict[str, pd.DataFrame]:
        """Every table, the deferred ones not converted yet as frames of Arrow-backed columns over their mapped files
        (zero-copy: no heap, and only the pages a node reads are loaded); these frames are the tables from now on."""
        self.settled()
        for name in self.deferred:
            if isinstance(value := dict.__getitem__(self, name), pa.Table):
                dict.__setitem__(self, name, value.to_pandas(types_mapper=pd.ArrowDtype))
        return self._handed()

    def converted(self, names) -> dict[str, pd.DataFrame]:
        """Every table, with these deferred ones read as the others are (a view given before is replaced: only the
        tables a run carries over stay views), converted in threads (Arrow's conversion releases the GIL)."""
        self.settled()
        todo = [name for name in names if name in self._mapped]
        for name in todo:
            dict.__setitem__(self, name, self._mapped.pop(name))
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(self.__getitem__, todo))
        return self._handed()

    def _handed(self) -> dict[str, pd.DataFrame]:
        """The tables as a plain dict (what the dataflow takes), emptied with this one (see `clear`)."""
        given = dict(self.items())
        self._given.append(given)
        return given

    def clear(self) -> None:
        """Let go of every table, in the dicts handed out too: `write_kb` empties its previous tables once compared,
        so that they are not held beside the arrays the write builds (the dataflow's copy held 0.6 GB of OpenJDK's)."""
        for given in self._given:
            given.clear()
        self._given.clear()
        self._mapped.clear()
        super().clear()


def _read_terms(kb_dir: Path, name: str) -> pd.DataFrame:
    """A term table with its term column read dictionary-encoded (categorical): the lexicon builds 2x faster."""
    read_metadata(kb_dir)
    version = live_version(Path(kb_dir))
    try:
        if has_table(version, name):
            frame = version_table(version, name).to_pandas()
            return frame.assign(term=frame["term"].astype("category"))
        return (
            pq.ParquetFile(version / f"{name}.parquet", read_dictionary=["term"]).read().to_pandas()
        )  # (an older version's)
    except (OSError, pa.ArrowException) as exc:
        raise mark_damaged(kb_dir, f"{table_file(name)}: {exc}") from None


@dataclass
class KnowledgeBase:
    """A loaded KB: request tables in memory; lexical indexes and word tables built once, on first use.

    The word tables (`cra.dataflows.retrieval.word_tables`) hold the per-file / per-symbol string work (splitting
    paths and names into words, stemming) so that a request only merges against them.
    """

    kb_dir: Path
    metadata: dict
    tables: dict[str, pd.DataFrame] = field(repr=False)
    version: Path | None = field(default=None, repr=False)  # the version the tables were read from, when known

    @property
    def files(self) -> pd.DataFrame:
        return self.tables["files"]

    @cached_property
    def contents(self) -> pd.DataFrame:
        return read_tables(self.kb_dir, ["contents"])["contents"]

    def lexicon(self, terms: str) -> Lexicon:
        """The BM25 index of a term table: persisted arrays when the KB has them, else built from the terms."""
        version = live_version(self.kb_dir)
        try:
            found = _read_lexicon(version, terms) if version is not None else None
        except (OSError, pa.ArrowException) as exc:
            raise mark_damaged(self.kb_dir, f"{terms}{_LEXICON_SUFFIX}: {exc}") from None
        return found if found is not None else Bm25Index.from_terms(_read_terms(self.kb_dir, terms), LEXICONS[terms])

    @cached_property
    def file_lexicon(self) -> Lexicon:
        return self.lexicon("file_terms")

    @cached_property
    def commit_lexicon(self) -> Lexicon:
        return self.lexicon("commit_terms")

    @cached_property
    def symbol_lexicon(self) -> Lexicon:
        return self.lexicon("symbol_terms")

    @cached_property
    def words(self) -> dict[str, pd.DataFrame | vocabulary.WordIndex]:
        """The per-KB word tables: as persisted with the KB, or (older KB, changed vocabulary code) built now."""
        version = self.version or live_version(self.kb_dir)  # (those of the version the tables came from)
        try:
            found = read_word_tables(version) if version is not None else {}
        except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
            raise mark_damaged(self.kb_dir, f"word tables: {exc}") from None
        return found or word_tables(self.files, self.tables["symbols"])

    @cached_property
    def word_overrides(self) -> dict[str, object]:
        """Every node of `cra.dataflows.retrieval.word_tables` as a retrieval-DAG override (`kb_<name>`): the persisted
        tables, and the name index and symbol table built from them once per loaded KB."""
        return word_table_overrides(self.words, self.tables, self.version)

    @cached_property
    def task_free_overrides(self) -> dict[str, object]:
        """The word-table overrides plus the nodes that depend on the KB alone, not on the task (how many files
        import each file, the issue templates' lines), computed once per loaded KB instead of once per request."""
        from cra.dataflows.retrieval.combination import file_roles
        from cra.dataflows.retrieval.issue_templates import issue_template_lines
        from cra.dataflows.retrieval.signals import structural_centrality

        return {
            **self.word_overrides,
            "structural_centrality": structural_centrality(self.files, self.tables["edges"]),
            "file_roles": file_roles(self.files),
            "issue_template_lines": issue_template_lines(self.files, self.contents),
        }


_LOADED: dict[tuple[str, str], KnowledgeBase] = {}


def load_kb(kb_dir: Path) -> KnowledgeBase:
    """The KB at kb_dir, loaded once per process per version (a re-index is picked up on the next call)."""
    kb_dir = Path(kb_dir).resolve()
    metadata = read_metadata(kb_dir)
    key = (str(kb_dir), (kb_dir / _CURRENT).read_text().strip())
    if key not in _LOADED:
        damage = version_damage(kb_dir / key[1], metadata)  # (a few small reads: each file's size and footer)
        if damage is not None:
            raise mark_damaged(kb_dir, damage)
        _LOADED.clear()
        tables = read_tables(kb_dir, REQUEST_TABLES, arrow_lists=True, copies=True)
        same = (kb_dir / _CURRENT).read_text().strip() == key[1]  # (not re-indexed while read)
        _LOADED[key] = KnowledgeBase(kb_dir, metadata, tables, kb_dir / key[1] if same else None)
    return _LOADED[key]
