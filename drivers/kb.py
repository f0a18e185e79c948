"""The knowledge base on disk: versioned Parquet tables, swapped in atomically, loaded once per process.

Layout of a KB directory (default `<repo>/.cra/`):
    CURRENT            name of the live version directory (replaced atomically, last)
    v-<stamp>/         one Parquet file per table of `dataflows.index.schema`, plus metadata.json
A run that dies before CURRENT is replaced leaves the previous version live and intact.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dataflows.index.schema import REQUEST_TABLES, SCHEMA_VERSION, TABLES, arrow_schema
from dataflows.lexical import Bm25Index
from dataflows.retrieval import vocabulary
from drivers.errors import CraError
from drivers.tokens import tokens_are_exact

KB_DIRNAME = ".cra"
_CURRENT = "CURRENT"
_METADATA = "metadata.json"


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


_UNIQUE_TEXT = {("contents", "text")}  # one distinct long value per row: a dictionary page only costs time


def _write_table(staging: Path, name: str, frame: pd.DataFrame | None) -> None:
    """One table as Parquet (snappy; no dictionary encoding for columns of unique long texts)."""
    if frame is None:
        frame = pd.DataFrame({c: pd.Series(dtype=object) for c in TABLES[name]})
    table = pa.Table.from_pandas(frame[list(TABLES[name])], schema=arrow_schema(name), preserve_index=False)
    dictionary = [c for c in TABLES[name] if (name, c) not in _UNIQUE_TEXT]
    pq.write_table(table, staging / f"{name}.parquet", use_dictionary=dictionary)


def write_kb(kb_dir: Path, tables: dict[str, pd.DataFrame], metadata: dict) -> Path:
    """Write all tables + metadata into a fresh version directory, then point CURRENT at it."""
    kb_dir = Path(kb_dir)
    _check_writable(kb_dir)
    staging = Path(tempfile.mkdtemp(dir=kb_dir, prefix=".tmp-"))
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:  # arrow conversion and encoding release the GIL
            list(pool.map(lambda name: _write_table(staging, name, tables.get(name)), TABLES))
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

    The word tables (`dataflows.retrieval.vocabulary`) hold the per-file / per-symbol string work (splitting
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

    @cached_property
    def file_lexicon(self) -> Bm25Index:
        return Bm25Index.from_terms(_read_terms(self.kb_dir, "file_terms"), "file_id")

    @cached_property
    def commit_lexicon(self) -> Bm25Index:
        return Bm25Index.from_terms(_read_terms(self.kb_dir, "commit_terms"), "commit")

    @cached_property
    def symbol_lexicon(self) -> Bm25Index:
        return Bm25Index.from_terms(_read_terms(self.kb_dir, "symbol_terms"), "symbol_id")

    @cached_property
    def path_table(self) -> pd.DataFrame:
        return vocabulary.path_components(self.files)

    @cached_property
    def path_components(self) -> vocabulary.WordIndex:
        return vocabulary.path_component_index(self.path_table)

    @cached_property
    def path_words(self) -> vocabulary.WordIndex:
        return vocabulary.path_word_index(self.path_table)

    @cached_property
    def symbol_names(self) -> pd.DataFrame:
        return vocabulary.symbol_names(self.tables["symbols"])

    @cached_property
    def symbol_name_words(self) -> vocabulary.WordIndex:
        return vocabulary.symbol_name_word_index(self.symbol_names)

    @cached_property
    def symbol_name_codes(self) -> pd.DataFrame:
        return vocabulary.symbol_name_codes(self.tables["symbols"], self.symbol_names)

    @cached_property
    def domain_words(self) -> pd.DataFrame:
        return vocabulary.domain_words(self.files)

    @cached_property
    def module_words(self) -> pd.DataFrame:
        return vocabulary.module_words(self.files)

    @cached_property
    def file_concepts(self) -> pd.DataFrame:
        return vocabulary.file_concepts(self.files)

    @cached_property
    def concept_vocabulary(self) -> pd.DataFrame:
        return vocabulary.concept_vocabulary(self.files)


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
) -> dict:
    """Index (or incrementally re-index) a repository into its KB; returns the run's statistics."""
    from drivers.indexer import index_frames  # the Hamilton indexer; imported late to keep `cra --help` fast

    repo = _check_repo(Path(repo))
    kb_dir = Path(kb_dir) if kb_dir else default_kb_dir(repo)
    _check_writable(kb_dir)
    previous, notes = None, []
    if _live_version(kb_dir) is not None:
        try:
            previous = read_tables(kb_dir, TABLES)
            # nothing re-counted: every count is the previous KB's (tiktoken is then not loaded at all)
            previous_exact = read_metadata(kb_dir).get("tokenizer") == "cl100k_base"
        except CraError as exc:
            notes.append(f"previous KB not reused: {exc}")
    started = time.perf_counter()
    tables, stats = index_frames(repo, previous_kb=previous, history=history, max_file_bytes=max_file_bytes,
                                 on_progress=on_progress, history_from=history_from)
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
    stats["kb_dir"] = str(kb_dir)
    return stats
