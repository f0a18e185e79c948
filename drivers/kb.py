"""The knowledge base on disk: versioned Parquet tables, swapped in atomically, loaded once per process.

Layout of a KB directory (default `<repo>/.cra/`):
    CURRENT            name of the live version directory (replaced atomically, last)
    v-<stamp>/         one Parquet file per table of `dataflows.index.schema`, plus metadata.json, plus the
                       finished BM25 arrays of each term table (`<terms>.bm25.parquet`, see LEXICONS): derived
                       data, so a KB without them (or of another lexicon format) is still read, by rebuilding;
                       likewise the per-KB word tables (`words.<name>*.parquet`, see WORD_TABLES), reused only
                       when written by the same `vocabulary` / `text` code
A run that dies before CURRENT is replaced leaves the previous version live and intact.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache, cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dataflows import lexical
from dataflows import text as text_module
from dataflows.index.schema import REQUEST_TABLES, SCHEMA_VERSION, TABLES, arrow_schema
from dataflows.lexical import Bm25Index
from dataflows.retrieval import vocabulary
from dataflows.retrieval import word_tables as word_table_nodes
from drivers.errors import CraError
from drivers.locks import exclusive_lock
from drivers.tokens import tokens_are_exact

KB_DIRNAME = ".cra"
_CURRENT = "CURRENT"
_METADATA = "metadata.json"
_LOCK = ".index.lock"  # held by the one index run writing this KB


def default_kb_dir(repo: Path) -> Path:
    """Where a repository's KB lives unless --kb says otherwise."""
    return Path(repo) / KB_DIRNAME


def _live_version(kb_dir: Path) -> Path | None:
    pointer = kb_dir / _CURRENT
    if not pointer.is_file():
        return None
    version = kb_dir / pointer.read_text().strip()
    return version if version.is_dir() else None


def _check_writable(kb_dir: Path) -> None:
    try:
        kb_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=kb_dir, prefix=".probe-"):
            pass
    except OSError as exc:
        raise CraError(
            f"KB directory {kb_dir} is not writable ({exc.strerror or exc}). "
            "Fix its permissions or choose another with --kb DIR."
        ) from None


# term table -> its doc column: each gets a persisted BM25 index, written with the KB, read on first use
LEXICONS = {"file_terms": "file_id", "symbol_terms": "symbol_id", "commit_terms": "commit"}
_LEXICON_SUFFIX = ".bm25.parquet"
_LEXICON_FORMAT = {b"cra_bm25_format": b"1", b"k1": repr(lexical.K1).encode(), b"b": repr(lexical.B).encode()}

_UNIQUE_TEXT = {("contents", "text")}  # one distinct long value per row: a dictionary page only costs time


def _write_table(staging: Path, name: str, frame: pd.DataFrame | None) -> None:
    """One table as Parquet (snappy; no dictionary encoding for columns of unique long texts)."""
    if frame is None or frame.empty:  # typed by the schema, whatever an empty frame's columns were inferred as
        frame = pd.DataFrame({c: pd.Series(dtype=object) for c in TABLES[name]})
    table = pa.Table.from_pandas(frame[list(TABLES[name])], schema=arrow_schema(name), preserve_index=False)
    dictionary = [c for c in TABLES[name] if (name, c) not in _UNIQUE_TEXT]
    pq.write_table(table, staging / f"{name}.parquet", use_dictionary=dictionary)


def _write_lexicon(staging: Path, terms: str, frame: pd.DataFrame) -> None:
    """The finished BM25 arrays of one term table as a one-row Parquet table of list columns."""
    index = Bm25Index.from_terms(frame, LEXICONS[terms])
    columns = {}
    for name, values in index.arrays().items():
        flat = pa.array(values, type=pa.string()) if values.dtype == object and name == "vocab" else pa.array(values)
        columns[name] = pa.ListArray.from_arrays(pa.array([0, len(flat)], type=pa.int32()), flat)
    table = pa.table(columns).replace_schema_metadata(_LEXICON_FORMAT)
    pq.write_table(table, staging / f"{terms}{_LEXICON_SUFFIX}", use_dictionary=False)


def _read_lexicon(version: Path, terms: str) -> Bm25Index | None:
    """The persisted BM25 index of a term table; None when absent or of another format (then rebuild)."""
    path = version / f"{terms}{_LEXICON_SUFFIX}"
    if not path.is_file():
        return None
    table = pq.read_table(path)
    if (table.schema.metadata or {}) != _LEXICON_FORMAT or table.num_rows != 1:
        return None
    return Bm25Index.from_arrays(
        *(table.column(name).combine_chunks().values.to_numpy(zero_copy_only=False) for name in lexical.ARRAYS)
    )


# per-KB word tables (`dataflows.retrieval.vocabulary`), built from files + symbols when the KB is written
WORD_TABLES = word_table_nodes.PERSISTED  # node `kb_<name>` of dataflows.retrieval.word_tables
_WORD_INDEXES = ("path_components", "path_words", "symbol_name_words")  # vocabulary.WordIndex, three frames each
_WORD_INDEX_PARTS = ("rows", "vocabulary", "offsets")


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
}


@cache
def _word_table_driver():
    """A Hamilton driver over the word-table nodes (built once per process)."""
    from hamilton import driver

    return driver.Builder().with_modules(word_table_nodes).build()


def word_tables(files: pd.DataFrame, symbols: pd.DataFrame,
                wanted: tuple[str, ...] = WORD_TABLES) -> dict[str, pd.DataFrame | vocabulary.WordIndex]:
    """The word tables named in `wanted` for these KB frames, built by their nodes (`dataflows.retrieval.word_tables`)."""
    if not wanted:
        return {}
    built = _word_table_driver().execute([f"kb_{n}" for n in wanted], inputs={"kb_files": files, "kb_symbols": symbols})
    return {name: built[f"kb_{name}"] for name in wanted}


def _words_stamp() -> bytes:
    """Identifies the code that builds word tables: persisted ones made by other code are rebuilt, not trusted."""
    source = b"".join(Path(m.__file__).read_bytes() for m in (vocabulary, text_module, word_table_nodes))
    return hashlib.sha1(b"cra-words-1" + source).hexdigest().encode()


def _dtype_spec(dtype) -> str:
    """A dtype as a string `astype` takes back ('str' is the default string dtype, 'string[pyarrow]' the NA one)."""
    if isinstance(dtype, pd.StringDtype):
        return "str" if dtype.na_value is not pd.NA else f"string[{dtype.storage}]"
    return str(dtype)


def _word_frames(name: str, table) -> dict[str, pd.DataFrame]:
    """File stem -> frame: a word table as frames (a WordIndex as its rows, vocabulary and offsets)."""
    if isinstance(table, vocabulary.WordIndex):
        return {f"{name}.{part}": (pd.DataFrame({"offset": table.offsets}) if part == "offsets" else getattr(table, part))
                for part in _WORD_INDEX_PARTS}  # fmt: skip
    return {name: table}


def _write_frame(path: Path, frame: pd.DataFrame, stamp: bytes) -> None:
    """A frame as Parquet with its exact column and index dtypes recorded, so `_read_frame` restores it equal."""
    table = pa.Table.from_pandas(frame, preserve_index=None)  # a RangeIndex as metadata, any other as a column
    dtypes = {"columns": {c: _dtype_spec(frame[c].dtype) for c in frame.columns}, "index": _dtype_spec(frame.index.dtype)}
    meta = {**(table.schema.metadata or {}), b"cra_words": stamp, b"cra_dtypes": json.dumps(dtypes).encode()}
    pq.write_table(table.replace_schema_metadata(meta), path)


def _read_frame(path: Path, stamp: bytes) -> pd.DataFrame | None:
    """A frame written by `_write_frame`, dtypes restored; None when written by other word-table code."""
    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    if meta.get(b"cra_words") != stamp:
        return None
    dtypes = json.loads(meta[b"cra_dtypes"])
    frame = table.to_pandas()
    frame = frame.astype({c: d for c, d in dtypes["columns"].items() if _dtype_spec(frame[c].dtype) != d})
    if _dtype_spec(frame.index.dtype) != dtypes["index"]:
        frame.index = frame.index.astype(dtypes["index"])
    return frame


def _word_input_digests(files: pd.DataFrame, symbols: pd.DataFrame) -> dict[str, str]:
    """Per word table: a hash of the building code and of its input columns (row order included)."""
    frames, stamp = {"files": files, "symbols": symbols}, _words_stamp()

    @cache
    def column(frame: str, name: str) -> bytes:
        values = frames[frame][name] if name in frames[frame] else pd.Series([], dtype=object)
        if name == "concepts":  # lists (built) or arrays (read back): hashed as joined text either way
            values = values.map(lambda v: "\x1f".join(map(str, v)) if isinstance(v, (list, tuple, np.ndarray)) else "")
        return pd.util.hash_pandas_object(values, index=False).to_numpy().tobytes()

    return {table: hashlib.sha1(b"".join([stamp, *(f.encode() + c.encode() + column(f, c) for f, c in inputs)])).hexdigest()
            for table, inputs in _WORD_INPUTS.items()}  # fmt: skip


def _word_table_stems(name: str) -> list[str]:
    """The file stems of one persisted word table (a WordIndex is three files)."""
    return [f"{name}.{part}" for part in _WORD_INDEX_PARTS] if name in _WORD_INDEXES else [name]


def _reused_word_tables(staging: Path, previous: Path | None, digests: dict[str, str]) -> set[str]:
    """Hard-link into staging the previous version's word tables that were built from the same inputs by the same
    code (on most re-indexes names and paths did not change); the names of those linked."""
    try:
        before = json.loads((previous / _METADATA).read_text()).get("word_inputs") if previous else None
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
                os.link(previous / f"words.{stem}.parquet", staging / f"words.{stem}.parquet")
        except OSError:
            for stem in _word_table_stems(name):
                (staging / f"words.{stem}.parquet").unlink(missing_ok=True)
            continue
        linked.add(name)
    return linked


def _write_word_tables(staging: Path, files: pd.DataFrame, symbols: pd.DataFrame, previous: Path | None,
                       digests: dict[str, str]) -> None:
    """Every word table of these KB frames as `words.<name>[.<part>].parquet`, stamped with the code's hash;
    those whose inputs are unchanged are linked from the previous version instead of built."""
    reused = _reused_word_tables(staging, previous, digests)
    stamp = _words_stamp()
    for name, table in word_tables(files, symbols, tuple(n for n in WORD_TABLES if n not in reused)).items():
        for stem, frame in _word_frames(name, table).items():
            _write_frame(staging / f"words.{stem}.parquet", frame, stamp)


def _read_word_tables(version: Path) -> dict[str, pd.DataFrame | vocabulary.WordIndex]:
    """The persisted word tables of a KB version: all of them, or {} (absent, partial or by other code)."""
    stamp = _words_stamp()
    wanted = [stem for name in WORD_TABLES for stem in _word_table_stems(name)]
    paths = [version / f"words.{stem}.parquet" for stem in wanted]
    if not all(p.is_file() for p in paths):
        return {}
    with ThreadPoolExecutor(max_workers=4) as pool:  # Parquet decoding releases the GIL
        frames = dict(zip(wanted, pool.map(lambda p: _read_frame(p, stamp), paths)))
    if any(f is None for f in frames.values()):
        return {}
    out = {}
    for name in WORD_TABLES:
        if name in _WORD_INDEXES:
            offsets = frames[f"{name}.offsets"]["offset"].to_numpy()
            out[name] = vocabulary.WordIndex(frames[f"{name}.rows"], frames[f"{name}.vocabulary"], offsets)
        else:
            out[name] = frames[name]
    return out


def write_kb(kb_dir: Path, tables: dict[str, pd.DataFrame], metadata: dict) -> Path:
    """Write all tables + metadata (plus the BM25 index of each given term table and, given files and symbols, the
    word tables) into a fresh version directory, then point CURRENT at it."""
    kb_dir = Path(kb_dir)
    _check_writable(kb_dir)
    staging = Path(tempfile.mkdtemp(dir=kb_dir, prefix=".tmp-"))
    jobs = [lambda name=name: _write_lexicon(staging, name, tables[name]) for name in LEXICONS if tables.get(name) is not None]
    jobs += [lambda name=name: _write_table(staging, name, tables.get(name)) for name in TABLES]
    if tables.get("files") is not None and tables.get("symbols") is not None:
        digests = _word_input_digests(tables["files"], tables["symbols"])
        metadata = {**metadata, "word_inputs": digests}
        previous = _live_version(kb_dir)
        jobs.insert(0, lambda: _write_word_tables(staging, tables["files"], tables["symbols"], previous, digests))
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:  # arrow conversion and encoding release the GIL
            list(pool.map(lambda job: job(), jobs))
        (staging / _METADATA).write_text(json.dumps({**metadata, "schema_version": SCHEMA_VERSION}, indent=2, default=str))
        version = kb_dir / f"v-{time.strftime('%Y%m%dT%H%M%S')}-{staging.name[5:]}"
        staging.rename(version)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    pointer_tmp = kb_dir / f".{_CURRENT}.tmp"
    pointer_tmp.write_text(version.name)
    os.replace(pointer_tmp, kb_dir / _CURRENT)
    for old in kb_dir.iterdir():  # earlier versions and debris of interrupted runs
        if old.is_dir() and old != version and (old.name.startswith(("v-", ".tmp-"))):
            shutil.rmtree(old, ignore_errors=True)
    return version


def read_metadata(kb_dir: Path) -> dict:
    """The live version's metadata, or a CraError that says how to get a KB."""
    kb_dir = Path(kb_dir)
    version = _live_version(kb_dir)
    if version is None:
        raise CraError(f"No knowledge base at {kb_dir}. Run `cra index REPO` (add --kb {kb_dir} if you keep it there) first.")
    try:
        metadata = json.loads((version / _METADATA).read_text())
    except (OSError, ValueError) as exc:
        raise CraError(f"The knowledge base at {kb_dir} is damaged ({exc}). Re-run `cra index REPO`.") from None
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


def read_tables(kb_dir: Path, names) -> dict[str, pd.DataFrame]:
    """Selected tables of the live version as pandas frames."""
    read_metadata(kb_dir)
    version = _live_version(Path(kb_dir))
    try:
        names = list(names)
        if len(names) == 1:
            return {names[0]: pq.read_table(version / f"{names[0]}.parquet").to_pandas()}
        with ThreadPoolExecutor(max_workers=4) as pool:  # Parquet decoding releases the GIL
            frames = pool.map(lambda name: pq.read_table(version / f"{name}.parquet").to_pandas(), names)
            return dict(zip(names, frames))
    except (OSError, pa.ArrowException) as exc:
        raise CraError(f"The knowledge base at {kb_dir} is damaged ({exc}). Re-run `cra index REPO`.") from None


def _read_terms(kb_dir: Path, name: str) -> pd.DataFrame:
    """A term table with its term column read dictionary-encoded (categorical): the lexicon builds 2x faster."""
    read_metadata(kb_dir)
    version = _live_version(Path(kb_dir))
    try:
        return pq.read_table(version / f"{name}.parquet", read_dictionary=["term"]).to_pandas()
    except (OSError, pa.ArrowException) as exc:
        raise CraError(f"The knowledge base at {kb_dir} is damaged ({exc}). Re-run `cra index REPO`.") from None


@dataclass
class KnowledgeBase:
    """A loaded KB: request tables in memory; lexical indexes and word tables built once, on first use.

    The word tables (`dataflows.retrieval.word_tables`) hold the per-file / per-symbol string work (splitting
    paths and names into words, stemming) so that a request only merges against them.
    """

    kb_dir: Path
    metadata: dict
    tables: dict[str, pd.DataFrame] = field(repr=False)

    @property
    def files(self) -> pd.DataFrame:
        return self.tables["files"]

    @cached_property
    def contents(self) -> pd.DataFrame:
        return read_tables(self.kb_dir, ["contents"])["contents"]

    def lexicon(self, terms: str) -> Bm25Index:
        """The BM25 index of a term table: persisted arrays when the KB has them, else built from the terms."""
        version = _live_version(self.kb_dir)
        try:
            found = _read_lexicon(version, terms) if version is not None else None
        except (OSError, pa.ArrowException) as exc:
            raise CraError(f"The knowledge base at {self.kb_dir} is damaged ({exc}). Re-run `cra index REPO`.") from None
        return found if found is not None else Bm25Index.from_terms(_read_terms(self.kb_dir, terms), LEXICONS[terms])

    @cached_property
    def file_lexicon(self) -> Bm25Index:
        return self.lexicon("file_terms")

    @cached_property
    def commit_lexicon(self) -> Bm25Index:
        return self.lexicon("commit_terms")

    @cached_property
    def symbol_lexicon(self) -> Bm25Index:
        return self.lexicon("symbol_terms")

    @cached_property
    def words(self) -> dict[str, pd.DataFrame | vocabulary.WordIndex]:
        """The per-KB word tables: as persisted with the KB, or (older KB, changed vocabulary code) built now."""
        version = _live_version(self.kb_dir)
        try:
            found = _read_word_tables(version) if version is not None else {}
        except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
            raise CraError(f"The knowledge base at {self.kb_dir} is damaged ({exc}). Re-run `cra index REPO`.") from None
        return found or word_tables(self.files, self.tables["symbols"])

    @cached_property
    def word_overrides(self) -> dict[str, object]:
        """Every node of `dataflows.retrieval.word_tables` as a retrieval-DAG override (`kb_<name>`): the persisted
        tables, and the name index and symbol table built from them once per loaded KB."""
        tables = {f"kb_{name}": table for name, table in self.words.items()}
        t = self.tables
        inputs = {"kb_files": t["files"], "kb_symbols": t["symbols"], "kb_comments": t["comments"],
                  "kb_symbol_edges": t["symbol_edges"]}  # fmt: skip
        derived = [f"kb_{name}" for name in word_table_nodes.DERIVED]
        return tables | _word_table_driver().execute(derived, inputs=inputs, overrides=tables)


_LOADED: dict[tuple[str, str], KnowledgeBase] = {}


def load_kb(kb_dir: Path) -> KnowledgeBase:
    """The KB at kb_dir, loaded once per process per version (a re-index is picked up on the next call)."""
    kb_dir = Path(kb_dir).resolve()
    metadata = read_metadata(kb_dir)
    key = (str(kb_dir), (kb_dir / _CURRENT).read_text().strip())
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = KnowledgeBase(kb_dir, metadata, read_tables(kb_dir, REQUEST_TABLES))
    return _LOADED[key]


def _check_repo(repo: Path) -> Path:
    if not repo.exists():
        raise CraError(f"Repository path {repo} does not exist. Pass the directory of a source tree.")
    if not repo.is_dir():
        raise CraError(f"{repo} is a file, not a directory. Pass the repository's root directory.")
    if not os.access(repo, os.R_OK | os.X_OK):
        raise CraError(f"Repository directory {repo} is not readable. Fix its permissions.")
    return repo.resolve()


def index_repository(
    repo: Path,
    kb_dir: Path | None = None,
    history: int = 2000,
    max_file_bytes: int = 1_000_000,
    on_progress=None,
    history_from: tuple[Path, str] | None = None,
    workers: int | None = None,
    on_wait=None,
) -> dict:
    """Index (or incrementally re-index) a repository into its KB; returns the run's statistics.

    One index run per KB at a time: a second run waits for the first (on_wait() is called once if it has to),
    then re-indexes incrementally from what the first wrote."""
    repo = _check_repo(Path(repo))
    kb_dir = Path(kb_dir) if kb_dir else default_kb_dir(repo)
    _check_writable(kb_dir)
    with exclusive_lock(index_lock_path(kb_dir), on_wait=on_wait):
        return _index_locked(repo, kb_dir, history, max_file_bytes, on_progress, history_from, workers)


def _index_locked(repo: Path, kb_dir: Path, history, max_file_bytes, on_progress, history_from, workers) -> dict:
    from drivers.indexer import index_frames  # the Hamilton indexer; imported late to keep `cra --help` fast

    started = time.perf_counter()  # the whole run: reading the previous KB, indexing, writing the new one
    previous, notes = None, []
    if _live_version(kb_dir) is not None:
        try:
            previous = read_tables(kb_dir, TABLES)
            # nothing re-counted: every count is the previous KB's (tiktoken is then not loaded at all)
            previous_exact = read_metadata(kb_dir).get("tokenizer") == "cl100k_base"
        except CraError as exc:
            notes.append(f"previous KB not reused: {exc}")
    tables, stats = index_frames(repo, previous_kb=previous, history=history, max_file_bytes=max_file_bytes,
                                 on_progress=on_progress, history_from=history_from, workers=workers)
    exact = tokens_are_exact() if stats["n_parsed"] or previous is None else previous_exact
    stats = {**stats, "seconds": round(time.perf_counter() - started, 3), "notes": notes, "tokens_exact": exact}
    metadata = {
        "repo_root": str(repo),
        "indexed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "head": stats.get("head"),
        "history_available": bool(stats.get("history_available")),
        "tokenizer": "cl100k_base" if exact else "len/4 estimate",
        "stats": stats,
    }
    write_kb(kb_dir, tables, metadata)
    stats["seconds"] = round(time.perf_counter() - started, 3)
    stats["kb_dir"] = str(kb_dir)
    return stats


def index_lock_path(kb_dir: Path) -> Path:
    """The lock file that one `cra index` run holds while it writes kb_dir (a second run waits on it)."""
    return Path(kb_dir) / _LOCK
