"""Index a repository: scan files and git history, run the index dataflow, write the KB (`index_repository`).

A run first asks the stat cache (`cra.drivers.kb.stat_cache`) whether anything changed: if not, the live KB is left as it
is and nothing heavier than a directory walk is loaded. Otherwise the previous KB is read, files whose stat still
matches are not read again, the dataflow (`cra.drivers.index.dag`) re-parses what changed, and the new version is written
(`cra.drivers.kb.store`) with a fresh stat cache beside it. The persisted word tables are `cra.drivers.kb.word_cache`.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from cra.drivers.common import tokens
from cra.drivers.common.errors import CraError
from cra.drivers.common.locks import exclusive_lock
from cra.drivers.index import fingerprint, sources
from cra.drivers.kb import check as kb_check
from cra.drivers.kb import stat_cache
from cra.drivers.kb.location import check_writable, default_kb_dir

INDEX_LOCK = ".index.lock"  # in a KB directory: held by the one index run writing it
# the previous KB's tables in the order they are read, four at a time: files first (the scan waits for it), then
# about the order in which the dataflow's nodes first ask for them
READ_ORDER = (
    "files",
    "contents",
    "commits",
    "commit_terms",
    "symbols",
    "imports",
    "concept_terms",
    "file_terms",
    "comments",
    "references",
    "symbol_terms",
    "import_bindings",
    "edges",
    "symbol_edges",
    "commit_files",
    "cochange",
    "companions",
)
# the index machinery (Hamilton, pandas, the dataflow modules), loaded on first use: an unchanged tree never needs it
_DAG_NAMES = frozenset(
    {
        "INDEX_MODULES",
        "KB_OUTPUTS",
        "PARALLEL_MIN_FILES",
        "IndexFailed",
        "ParseProgress",
        "index_driver",
        "index_frames",
    }
)


def __getattr__(name: str):
    if name in _DAG_NAMES:
        from cra.drivers.index import dag as index_dag

        return getattr(index_dag, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    rebuild: bool = False,
    engine=None,
    hint: stat_cache.ChangeHint | None = None,
) -> dict:
    """Index (or incrementally re-index) a repository into its KB; returns the run's statistics.

    The live version is checked first (`cra.drivers.kb.check.live_damage`): a damaged one is rebuilt from the tree, as
    every version is with rebuild=True (nothing of the live version, nor parsed batches an interrupted run left, used).

    One index run per KB at a time: a second run waits for the first (on_wait() is called once if it has to),
    then re-indexes incrementally from what the first wrote.

    engine: a Dask or Ray cluster for the parse (`cra.drivers.index.engines.Engine`; default: this machine).
    hint: what a watcher knows of the tree (`cra.drivers.kb.stat_cache.ChangeHint`, `cra serve --watch`): its walk is
    used instead of walking, and only its changed paths are stat'ed while the stat cache it names is live."""
    _check_not_starting_a_worker()
    repo = _check_repo(Path(repo))
    kb_dir = Path(kb_dir) if kb_dir else default_kb_dir(repo)
    check_writable(kb_dir)
    with exclusive_lock(index_lock_path(kb_dir), on_wait=on_wait), _collector_paused():
        try:
            return _index_locked(
                repo, kb_dir, history, max_file_bytes, on_progress, history_from, workers, rebuild, engine, hint
            )
        finally:
            tokens.release()


def _check_not_starting_a_worker() -> None:
    """Fail at once in a parse worker that is importing the script which started it: a script that indexes without
    `if __name__ == "__main__":` is re-run by every worker (fork server, spawn), and there its index run would wait
    for ever on the lock its parent holds. The worker dies, and the parent's run fails with `IndexFailed`'s advice."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):  # (what multiprocessing itself checks)
        raise CraError(
            'A parse worker is importing a script that indexes: put the script\'s code under `if __name__ == "__main__":`.'
        )


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off for the run: an index run makes few reference cycles, and the passes the
    collector makes anyway over every object of the loaded KB cost 0.1 s of a one-file re-index of Django. A run over
    many files collects after each of its tasks itself (`cra.drivers.index.memory.CollectingExecutor`)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _stage(on_progress, text: str) -> None:
    """Tell a progress display that has stages (`cra.drivers.common.progress.Progress.stage`) what the run is doing."""
    stage = getattr(on_progress, "stage", None)
    if stage is not None:
        stage(text)


def _index_locked(
    repo: Path,
    kb_dir: Path,
    history,
    max_file_bytes,
    on_progress,
    history_from,
    workers,
    rebuild: bool = False,
    engine=None,
    hint: stat_cache.ChangeHint | None = None,
) -> dict:
    started = time.perf_counter()  # the whole run: reading the previous KB, indexing, writing the new one
    _stage(on_progress, "looking for changes")
    walk = hint.walk if hint is not None and history_from is None else sources.source_paths(repo)
    damage = None if rebuild else kb_check.live_damage(kb_dir)
    notes = []
    if rebuild:
        from cra.drivers.kb.resume import drop_checkpoints

        drop_checkpoints(kb_dir)
        notes.append("rebuilt from the source tree (--rebuild): every file parsed again")
    elif damage is not None:
        notes.append(f"the knowledge base was damaged ({damage}): rebuilt from the source tree")
    reuse = not rebuild and damage is None
    cache = stat_cache.read_cache(kb_dir) if reuse else None  # (read once: the fast exit and the scan both consult it)
    scanned_ns = time.time_ns()  # before any file is stat'ed or read: what the stat cache written below is as of
    # one stat a file for the fast exit and the scan both: those the fast exit took (up to the first change), the
    # rest once the previous tables are being read (without a cache the scan reads every file: none needed)
    stats: dict | None = {} if cache is not None else None
    if stats is not None and hint is not None and history_from is None:
        stats.update(hint.stats(repo, cache) or {})  # (what the watcher vouches for: a stat of the changed paths only)
    if history_from is None and reuse:
        unchanged = stat_cache.unchanged_stats(
            kb_dir,
            walk.paths,
            max_file_bytes,
            cache,
            lambda: fingerprint.index_fingerprint(repo, walk, history, max_file_bytes),
            stats,
            scanned_ns,
            hint.changed or () if hint is not None else (),
        )
        if unchanged is not None:
            return {**unchanged, "seconds": round(time.perf_counter() - started, 3)}
    tokens.preload()  # cl100k loads in a helper process while this one imports and reads the previous KB
    from cra.dataflows.index.unchanged import DEFERRED
    from cra.drivers.kb.resume import RESUME_DIR, drop_checkpoints  # (pandas: not loaded for an unchanged tree)
    from cra.drivers.kb.store import PreviousTables, live_version, previous_lexicon, read_metadata, write_kb

    previous, skipped, import_context, lexicon = None, {}, None, None
    if reuse and live_version(kb_dir) is not None:
        try:
            previous_metadata = read_metadata(kb_dir)
            if cache is not None and cache.entries and not any(path in walk.paths for path in cache.entries):
                notes.append(
                    "previous KB not reused: none of the files it indexed is in this tree (another directory "
                    "indexed into the same --kb?)"
                )  # (held while every file is parsed again: 3.5x the memory)
            elif previous_metadata.get("index_code") == fingerprint.code_digest():
                # read in threads while the tree is scanned; where the tree has the same paths, those an edit may
                # carry over only mapped (a file added or removed moves every id: nothing is carried, and tables
                # read late took OpenJDK's re-index 0.6 GB higher than tables read now)
                same_paths = cache is not None and cache.entries.keys() == walk.paths.keys()
                previous = PreviousTables(
                    kb_dir, READ_ORDER, arrow_lists={"files"}, deferred=DEFERRED if same_paths else ()
                )
                lexicon = previous_lexicon(kb_dir)  # (its document frequencies: see metadata.file_concepts)
                # nothing re-counted: every count is the previous KB's (tiktoken is then not loaded at all)
                previous_exact = previous_metadata.get("tokenizer") == "cl100k_base"
                previous_stats = previous_metadata.get("stats") or {}
                skipped = {k: list(v) for k, v in (previous_stats.get("skipped") or {}).items()}
                import_context = previous_stats.get("import_context")
            else:  # what it holds may differ from what this code would index: nothing of it is carried over
                notes.append("previous KB not reused: it was written by another version of the index code")
        except CraError as exc:
            notes.append(f"previous KB not reused: {exc}")
            reuse = reuse and not isinstance(exc, kb_check.KbDamaged)  # (nothing of a damaged version is linked)
    from cra.drivers.index.dag import PARALLEL_MIN_FILES, index_frames  # (while the previous tables are read)

    _stage(on_progress, "reading the tree")
    if stats is not None:
        if len(stats) < len(walk.paths):  # (a hint's stats hold every walked path: no pass over them)
            stats.update(stat_cache.file_stats(repo, [rel for rel in walk.paths if rel not in stats]))
    known, unreadable = None, None
    try:
        known = _known_files(cache, previous, skipped, stats)
    except CraError as exc:  # (the files table could not be read)
        unreadable = exc
    # (scan_sources is looked up on its module: tests/kb_compare.py substitutes it)
    scan = sources.scan_sources(repo, max_file_bytes=max_file_bytes, known=known, walk=walk)
    try:
        if unreadable is None and previous is not None:  # every table read before the dataflow runs, as a plain dict
            previous.settled()  # (the reads started above: a table the version cannot give fails here)
    except CraError as exc:
        unreadable = exc
    if unreadable is not None:
        notes.append(f"previous KB not reused: {unreadable}")
        reuse = reuse and not isinstance(unreadable, kb_check.KbDamaged)  # (nothing of a damaged version is linked)
        previous = None
        if known:  # the files the scan left unread on that KB's word are read after all: it vouches for nothing now
            scan = sources.scan_sources(repo, max_file_bytes=max_file_bytes, walk=walk)
    contents_dir = Path(tempfile.mkdtemp(dir=kb_dir, prefix=".tmp-contents-"))  # the run writes contents there; linked
    try:
        tables, stats = index_frames(
            repo,
            previous_kb=previous,
            previous_file_lexicon=lexicon if previous is not None else None,
            history=history,
            max_file_bytes=max_file_bytes,
            on_progress=on_progress,
            history_from=history_from,
            workers=workers,
            scan=scan,
            previous_skipped=skipped,
            previous_import_context=import_context,
            resume_dir=kb_dir / RESUME_DIR,
            contents_dir=contents_dir,
            engine=engine,
            previous_version=live_version(kb_dir) if previous is not None else None,
        )
        exact = tokens.tokens_are_exact() if stats["n_parsed"] or previous is None else previous_exact
        notes.extend(stats.pop("engine_notes", []))
        if stats.get("n_resumed"):
            notes.append(f"resumed: {stats['n_resumed']} files parsed by an interrupted run were not parsed again")
        stats = {**stats, "seconds": round(time.perf_counter() - started, 3), "notes": notes, "tokens_exact": exact}
        metadata = {
            "repo_root": str(repo),
            "indexed_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "head": stats.get("head"),
            "history_available": bool(stats.get("history_available")),
            "tokenizer": "cl100k_base" if exact else "len/4 estimate",
            "index_code": fingerprint.code_digest(),  # a KB of other index code is never reused (see above)
            "stats": stats,
        }
        _stage(on_progress, "writing the knowledge base")
        version = write_kb(
            kb_dir,
            tables,
            metadata,
            previous,
            written={"contents": contents_dir},
            trim_heap=stats["n_parsed"] >= PARALLEL_MIN_FILES,
            reuse_live=reuse,
        )
    finally:
        shutil.rmtree(contents_dir, ignore_errors=True)
    drop_checkpoints(kb_dir)
    if history_from is None and scan.walk is not None:  # (a scan made elsewhere, e.g. tests/kb_compare.py, has no walk)
        run_fingerprint = fingerprint.index_fingerprint(repo, scan.walk, history, max_file_bytes)
        stat_cache.write_cache(
            kb_dir,
            stat_cache.StatCache(version.name, run_fingerprint, scanned_ns, scan.entries, fingerprint.code_digest()),
        )
    stats["seconds"] = round(time.perf_counter() - started, 3)
    stats["kb_dir"] = str(kb_dir)
    return stats


def _known_files(
    cache: stat_cache.StatCache | None,
    previous: dict | None,
    skipped: dict[str, list[str]],
    stats: dict[str, tuple[int, int, int] | None] | None,
) -> dict[str, list] | None:
    """The files the stat cache vouches for (path -> its entry, `StatCache.vouched`; stats: this run's
    `file_stats`), or None: those the previous KB indexed with the content the cache recorded, and, when the index
    code is the same, those the last run left out (`skipped`: reason -> paths) but for manifests, whose text the
    dataflow reads."""
    if cache is None or previous is None or "files" not in previous or stats is None:
        return None
    from cra.dataflows.index.conventions import manifest_names
    from cra.drivers.common.conventions import load_conventions

    left_out = set().union(*skipped.values()) if cache.code == fingerprint.code_digest() else set()
    manifests = manifest_names(load_conventions()) | {"go.mod"}
    left_out -= {p for p in left_out if p.rsplit("/", 1)[-1] in manifests}
    files = previous["files"]  # (waits for its read: the last thing asked)
    return cache.vouched(stats, dict(zip(files["path"].tolist(), files["hash"].tolist())), left_out)


def index_lock_path(kb_dir: Path) -> Path:
    """The lock file that one `cra index` run holds while it writes kb_dir (a second run waits on it)."""
    return Path(kb_dir) / INDEX_LOCK
