"""The per-KB word tables on disk (`words.<name>[.<part>].arrow` in a KB version): written with the KB, reused
when their inputs did not change, read back with exact dtypes. Derived data: a version without them (or written
by other word-table code) is still read, by rebuilding them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cra.dataflows import text as text_module
from cra.dataflows.retrieval import carried_words, vocabulary
from cra.dataflows.retrieval import word_tables as word_table_nodes
from cra.drivers.common.conventions import load_conventions
from cra.drivers.kb.mapped import has_table, mapped_table, version_table, write_table
from cra.drivers.kb.parquet_copies import parquet_table

METADATA = "metadata.json"  # of a KB version: `word_inputs` holds the digests of the tables written with it

# per-KB word tables (`cra.dataflows.retrieval.vocabulary`), built from files + symbols when the KB is written
WORD_TABLES = word_table_nodes.PERSISTED  # node `kb_<name>` of cra.dataflows.retrieval.word_tables
_WORD_INDEXES = ("path_components", "path_words", "symbol_name_words")  # vocabulary.WordIndex, three frames each
_WORD_INDEX_PARTS = ("rows", "vocabulary", "offsets")
_NAME_INDEX_PARTS = ("text", "starts", "files", "offsets")  # vocabulary.NameIndex: one frame per field


# what each word table is built from (frame, columns): a table whose inputs did not change is reused as it was
_WORD_INPUTS = {
    "path_components": (("files", "file_id"), ("files", "path")),
    "path_words": (("files", "file_id"), ("files", "path")),
    "symbol_names": (("symbols", "name"),),
    "symbol_name_words": (("symbols", "name"),),
    "symbol_name_codes": (("symbols", "symbol_id"), ("symbols", "file_id"), ("symbols", "name")),
    "symbol_name_terms": (("symbols", "name"),),
    "symbol_norms": (("symbols", "name"), ("symbols", "qualified_name")),
    "domain_words": (("files", "file_id"), ("files", "domain")),
    "module_words": (("files", "file_id"), ("files", "module")),
    "file_concepts": (("files", "file_id"), ("files", "concepts")),
    "concept_vocabulary": (("files", "concepts"),),
    "symbol_name_index": (("symbols", "symbol_id"), ("symbols", "file_id"), ("symbols", "name")),
}


@cache
def _word_table_driver():
    """A Hamilton driver over the word-table nodes (built once per process; without Hamilton's plugins for
    whatever else is installed: dask and matplotlib alone take 0.7 s to import)."""
    from hamilton import driver

    return driver.Builder().with_modules(word_table_nodes).build()


def word_tables(
    files: pd.DataFrame, symbols: pd.DataFrame, wanted: tuple[str, ...] = WORD_TABLES, previous: dict | None = None
) -> dict[str, pd.DataFrame | vocabulary.WordIndex]:
    """The word tables named in `wanted` for these KB frames, built by their nodes (`cra.dataflows.retrieval.word_tables`;
    previous: what they carry over from the KB before, by input name, see `_carried_inputs`)."""
    if not wanted:
        return {}
    inputs = {"kb_files": files, "kb_symbols": symbols, **(previous or {})}
    built = _word_table_driver().execute([f"kb_{n}" for n in wanted], inputs=inputs)
    return {name: built[f"kb_{name}"] for name in wanted}


def _words_stamp() -> bytes:
    """Identifies the code that builds word tables: persisted ones made by other code are rebuilt, not trusted."""
    source = b"".join(Path(m.__file__).read_bytes() for m in (vocabulary, text_module, word_table_nodes, carried_words))
    return hashlib.sha1(b"cra-words-1" + source).hexdigest().encode()


def _dtype_spec(dtype) -> str:
    """A dtype as a string `astype` takes back ('str' is the default string dtype, 'string[pyarrow]' the NA one)."""
    if isinstance(dtype, pd.StringDtype):
        return "str" if dtype.na_value is not pd.NA else f"string[{dtype.storage}]"
    return str(dtype)


def _word_frames(name: str, table) -> dict[str, pd.DataFrame]:
    """File stem -> frame: a word table as frames (a WordIndex as its rows, vocabulary and offsets; a NameIndex as
    one frame per field: its text as one row)."""
    if isinstance(table, vocabulary.WordIndex):
        return {
            f"{name}.{part}": (pd.DataFrame({"offset": table.offsets}) if part == "offsets" else getattr(table, part))
            for part in _WORD_INDEX_PARTS
        }
    if isinstance(table, vocabulary.NameIndex):
        return {
            f"{name}.{part}": pd.DataFrame({part: [table.text] if part == "text" else getattr(table, part)})
            for part in _NAME_INDEX_PARTS
        }
    return {name: table}


def _word_file(version: Path, stem: str) -> Path:
    """Where a word table (or one part of it) is stored: uncompressed Arrow IPC, memory-mapped when read (as Parquet,
    Django's took 180 ms to write and 120 ms to read; as Arrow 27 and 21 ms)."""
    return version / f"words.{stem}.arrow"


def _write_frame(path: Path, frame: pd.DataFrame, stamp: bytes) -> None:
    """A frame as an Arrow IPC file with its exact column and index dtypes recorded, so `_read_frame` restores it equal."""
    table = pa.Table.from_pandas(frame, preserve_index=None)  # a RangeIndex as metadata, any other as a column
    dtypes = {
        "columns": {c: _dtype_spec(frame[c].dtype) for c in frame.columns},
        "index": _dtype_spec(frame.index.dtype),
    }
    meta = {**(table.schema.metadata or {}), b"cra_words": stamp, b"cra_dtypes": json.dumps(dtypes).encode()}
    write_table(table.replace_schema_metadata(meta), path)


def _read_frame(path: Path, stamp: bytes) -> pd.DataFrame | None:
    """A frame written by `_write_frame`, dtypes restored; None when written by other word-table code."""
    table = mapped_table(path)
    meta = table.schema.metadata or {}
    if meta.get(b"cra_words") != stamp:
        return None
    dtypes = json.loads(meta[b"cra_dtypes"])
    frame = table.to_pandas(split_blocks=True)  # integer columns: views of the mapped file, not copies
    frame = frame.astype({c: d for c, d in dtypes["columns"].items() if _dtype_spec(frame[c].dtype) != d})
    if _dtype_spec(frame.index.dtype) != dtypes["index"]:
        frame.index = frame.index.astype(dtypes["index"])
    return frame


def _text_digest(values: pa.Array) -> bytes:
    """A digest of a string array's values and nulls, whatever its chunks, slicing or buffers: an Arrow-backed column
    (names and paths as a KB is read back) is hashed from its bytes, 5x faster than hash_pandas_object."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[values.offset : values.offset + len(values) + 1]
    digest = hashlib.sha1((offsets - offsets[0]).tobytes())
    data = values.buffers()[2]
    digest.update(memoryview(data)[offsets[0] : offsets[-1]] if data is not None else b"")
    digest.update(values.is_null().to_numpy(zero_copy_only=False).tobytes())
    return digest.digest()


def word_column_digests(
    files: pd.DataFrame, symbols: pd.DataFrame, known: Mapping[str, str] | None = None
) -> dict[str, str]:
    """sha1 of each input column of the word tables ("frame.column" -> hex, row order included); those in `known`
    taken as given: a frame a re-index carried over unchanged has the digests the run that wrote it recorded
    (`word_columns`), and hashing OpenJDK's 745k symbol names again took 0.2 s."""
    frames, known = {"files": files, "symbols": symbols}, known or {}

    def column(frame: str, name: str) -> bytes:
        values = frames[frame][name] if name in frames[frame] else pd.Series([], dtype=object)
        if values.dtype.kind == "f":  # (a column of no values, or only nulls, as pandas types an empty one)
            values = values.astype(object)
        if values.dtype.kind in "iu":
            return values.to_numpy(np.int64).tobytes()
        if name == "concepts":  # lists (built) or arrays (read back): their lengths, then their words
            lists = pa.array(values, from_pandas=True, type=pa.list_(pa.large_string()))
            return pc.list_value_length(lists).fill_null(-1).to_numpy().tobytes() + _text_digest(pc.list_flatten(lists))
        return _text_digest(pa.array(values, from_pandas=True, type=pa.large_string()))

    keys = sorted({(frame, name) for inputs in _WORD_INPUTS.values() for frame, name in inputs})
    return {
        f"{frame}.{name}": known.get(f"{frame}.{name}") or hashlib.sha1(column(frame, name)).hexdigest()
        for frame, name in keys
    }


def word_input_digests(
    files: pd.DataFrame, symbols: pd.DataFrame, columns: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Per word table: a hash of the building code and of its input columns' digests (`word_column_digests`, or
    these `columns` of them)."""
    columns = word_column_digests(files, symbols) if columns is None else columns
    stamp = _words_stamp()
    return {
        table: hashlib.sha1(
            b"".join([stamp, *(f"{f}.{c}={columns[f'{f}.{c}']};".encode() for f, c in inputs)])
        ).hexdigest()
        for table, inputs in _WORD_INPUTS.items()
    }


def carried_column_digests(previous: Path | None, frames: Iterable[str]) -> dict[str, str]:
    """The column digests (`word_column_digests`) the previous version recorded for these frames; {} when it has
    none."""
    try:
        before = json.loads((previous / METADATA).read_text()).get("word_columns") if previous else None
    except (OSError, ValueError):
        return {}
    if not isinstance(before, dict):
        return {}
    wanted = tuple(f"{frame}." for frame in frames)
    return {key: value for key, value in before.items() if key.startswith(wanted) and isinstance(value, str)}


def _word_table_stems(name: str) -> list[str]:
    """The file stems of one persisted word table (a WordIndex is three files, a NameIndex four)."""
    parts = _WORD_INDEX_PARTS if name in _WORD_INDEXES else _NAME_INDEX_PARTS if name == "symbol_name_index" else ()
    return [f"{name}.{part}" for part in parts] or [name]


def _reused_word_tables(staging: Path, previous: Path | None, digests: dict[str, str]) -> set[str]:
    """Hard-link into staging the previous version's word tables that were built from the same inputs by the same
    code (on most re-indexes names and paths did not change); the names of those linked."""
    try:
        before = json.loads((previous / METADATA).read_text()).get("word_inputs") if previous else None
    except (OSError, ValueError):
        return set()
    if not isinstance(before, dict):  # an older KB: everything is built
        return set()
    linked = set()
    for name, digest in digests.items():
        if before.get(name) != digest:
            continue
        try:
            for stem in _word_table_stems(name):
                os.link(_word_file(previous, stem), _word_file(staging, stem))
        except OSError:
            for stem in _word_table_stems(name):
                _word_file(staging, stem).unlink(missing_ok=True)
            continue
        linked.add(name)
    return linked


def write_word_tables(
    staging: Path, files: pd.DataFrame, symbols: pd.DataFrame, previous: Path | None, digests: dict[str, str]
) -> None:
    """Every word table of these KB frames as `words.<name>[.<part>].arrow`, stamped with the code's hash;
    those whose inputs are unchanged are linked from the previous version instead of built."""
    reused = _reused_word_tables(staging, previous, digests)
    stamp = _words_stamp()
    wanted = tuple(n for n in WORD_TABLES if n not in reused)
    for name, table in word_tables(files, symbols, wanted, _carried_inputs(previous, wanted, stamp)).items():
        for stem, frame in _word_frames(name, table).items():
            _write_frame(_word_file(staging, stem), frame, stamp)


_SYMBOL_TABLES = ("symbol_names", "symbol_name_words", "symbol_name_codes", "symbol_name_terms", "symbol_norms")
_PREVIOUS_SYMBOLS = [
    "symbol_id",
    "file_id",
    "name",
    "qualified_name",
]  # what the previous symbol tables were built from


def _carried_inputs(previous: Path | None, wanted: tuple[str, ...], stamp: bytes) -> dict:
    """What the word tables built again carry over: for the symbol tables (`cra.dataflows.retrieval.carried_words`)
    the previous version's symbol word tables (written by this code) and the symbol columns they were built from, for
    the concept vocabulary the previous one (its stems); what is missing or unreadable is left out (built from
    scratch)."""
    if previous is None:
        return {}
    out = {}
    if "concept_vocabulary" in wanted and _word_file(previous, "concept_vocabulary").is_file():
        try:
            concepts = _read_frame(_word_file(previous, "concept_vocabulary"), stamp)
        except (OSError, ValueError, KeyError, pa.ArrowException):
            concepts = None
        out.update({"previous_concept_vocabulary": concepts} if concepts is not None else {})
    if not any(table in wanted for table in (*_SYMBOL_TABLES, "symbol_name_index")):
        return out
    stems = [stem for name in _SYMBOL_TABLES for stem in _word_table_stems(name)]
    try:
        frames = {
            stem: _read_frame(_word_file(previous, stem), stamp) if _word_file(previous, stem).is_file() else None
            for stem in stems
        }
        symbols = (
            version_table(previous, "symbols")
            if has_table(previous, "symbols")
            else parquet_table(previous, "symbols", make_copy=False)  # (a version of symbols in Parquet)
        )
        symbols = symbols.select(_PREVIOUS_SYMBOLS).to_pandas()
    except (OSError, ValueError, KeyError, pa.ArrowException):
        return out
    if any(frame is None for frame in frames.values()):
        return out
    words = vocabulary.WordIndex(
        frames["symbol_name_words.rows"],
        frames["symbol_name_words.vocabulary"],
        frames["symbol_name_words.offsets"]["offset"].to_numpy(),
    )
    carried = carried_words.PreviousSymbolWords(
        symbols=symbols,
        names=frames["symbol_names"],
        codes=frames["symbol_name_codes"],
        norms=frames["symbol_norms"],
        terms=frames["symbol_name_terms"],
        words=words,
    )
    return {**out, "previous_symbol_words": carried}


def read_word_tables(version: Path) -> dict[str, object]:
    """The persisted word tables of a KB version: all of them, or {} (absent, partial or by other code)."""
    stamp = _words_stamp()
    wanted = [stem for name in WORD_TABLES for stem in _word_table_stems(name)]
    paths = [_word_file(version, stem) for stem in wanted]
    if not all(p.is_file() for p in paths):
        return {}
    frames = {stem: _read_frame(path, stamp) for stem, path in zip(wanted, paths)}
    if any(f is None for f in frames.values()):
        return {}
    out = {}
    for name in WORD_TABLES:
        if name in _WORD_INDEXES:
            offsets = frames[f"{name}.offsets"]["offset"].to_numpy()
            out[name] = vocabulary.WordIndex(frames[f"{name}.rows"], frames[f"{name}.vocabulary"], offsets)
        elif name == "symbol_name_index":
            fields = {part: frames[f"{name}.{part}"][part] for part in _NAME_INDEX_PARTS}
            out[name] = vocabulary.NameIndex(
                text=str(fields.pop("text").iloc[0]), **{k: v.to_numpy() for k, v in fields.items()}
            )
        else:
            out[name] = frames[name]
    return out


def word_table_overrides(
    words: dict, tables: dict[str, pd.DataFrame], version: Path | None = None
) -> dict[str, object]:
    """Every node of `cra.dataflows.retrieval.word_tables` as a retrieval-DAG override (`kb_<name>`): the persisted
    tables, and the name index and symbol table built from them and the KB's tables (version: the KB version those
    tables were read from, which keeps the symbol table's derived arrays, `cra.drivers.kb.symbol_cache`)."""
    from cra.drivers.kb import symbol_cache

    overrides = {f"kb_{name}": table for name, table in words.items()}
    conventions = load_conventions()
    overrides["kb_symbol_table"] = symbol_cache.symbol_table(version, _words_stamp(), words, tables, conventions)
    derived = [f"kb_{name}" for name in word_table_nodes.DERIVED if f"kb_{name}" not in overrides]
    if not derived:
        return overrides
    inputs = {
        "kb_files": tables["files"],
        "kb_symbols": tables["symbols"],
        "kb_symbol_edges": tables["symbol_edges"],
        "language_conventions": conventions,
    }
    return overrides | _word_table_driver().execute(derived, inputs=inputs, overrides=overrides)
