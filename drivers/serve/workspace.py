"""The repositories a long-running `cra serve` answers for: which paths it may read, and their KBs kept warm and fresh.

Security: a request names a repository (or none: the first one served) and maybe a file in it; both are resolved
(symlinks followed) and refused unless they lie inside a served repository or an allowed root.
Freshness: before a request the tree is stat-walked (the files `cra.drivers.index.sources.source_paths` would index, their
mtime and size, plus git's HEAD) into a fingerprint; when it differs from the one the live KB was built from, the
repository is re-indexed incrementally. The fingerprint is kept beside the KB (`<kb>/serve-state.json`, keyed by
the KB version) so a restarted server does not re-index a tree that did not move. With a watcher (`mark_changed`),
the walk runs only after the watcher saw a change.
Concurrency: one lock per repository around refresh and request (requests on one repository run one at a time;
different repositories run in parallel), plus the cross-process lock `index_repository` holds while it writes.
Watched (`cra serve --watch`, `cra.drivers.serve.watch`): a request never walks nor re-indexes; a background thread
per repository re-indexes what the watcher saw (in a warm child process, `cra.drivers.serve.index_worker`) and hands
the new KB over when it is loaded, and until then a request
answers from the KB it has, with a note of how stale it is (`Workspace.answering`).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.common.output import write_text_atomic
from cra.drivers.index.indexer import index_repository
from cra.drivers.index.sources import source_paths
from cra.drivers.kb.store import KnowledgeBase, default_kb_dir, load_kb
from cra.drivers.serve.edited import EditedFiles, edited_files
from cra.drivers.serve.index_worker import IndexWorker
from cra.drivers.serve.watch import WatchState, background_delay, log

STATE_FILE = "serve-state.json"  # in the KB directory: {"version": live KB version, "fingerprint": its tree's}
_LOAD_LOCK = threading.Lock()  # load_kb keeps a process-wide cache: one load at a time


def tree_fingerprint(root: Path) -> str:
    """A hash of what the index would read (path, mtime, size of every source file) and of git's HEAD: it changes
    when a file is edited, added, removed or (un)ignored, or a commit is made; nothing is opened but ignore files."""
    digest, walk = hashlib.sha1(), source_paths(root)
    digest.update((walk.config_digest or "").encode())  # (.cra.toml's patterns: which files count)
    for rel, path in sorted(walk.paths.items()):
        try:
            st = os.stat(path, follow_symlinks=False)
            digest.update(f"{rel}\0{st.st_mtime_ns}\0{st.st_size}\n".encode("utf-8", "surrogateescape"))
        except OSError:
            digest.update(f"{rel}\0gone\n".encode("utf-8", "surrogateescape"))
    digest.update(_git_head_state(root).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _git_head_state(root: Path) -> str:
    """HEAD, and the mtime and size of the ref it names and of packed-refs: moves when a commit is made."""
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
    except OSError:
        return ""
    parts = [head]
    refs = [git / head[5:].strip()] if head.startswith("ref:") else []
    for path in [*refs, git / "packed-refs"]:
        try:
            st = path.stat()
            parts.append(f"{path.name}:{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            parts.append(f"{path.name}:-")
    return "|".join(parts)


def live_version(kb_dir: Path) -> str | None:
    """The name of the KB's live version (its CURRENT pointer, see `cra.drivers.kb.store`), None when there is no KB yet."""
    try:
        return (Path(kb_dir) / "CURRENT").read_text().strip() or None
    except OSError:
        return None


@dataclass
class Repository:
    """One served repository: its root (resolved), its KB directory, and what this process knows of them."""

    root: Path
    kb_dir: Path
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    kb: KnowledgeBase | None = field(default=None, repr=False)
    loaded_version: str | None = None  # the KB version `kb` holds
    built_version: str | None = None  # the KB version `fingerprint` describes
    fingerprint: str | None = None  # the tree the built version was indexed from
    watched: bool = False  # a watcher reports its changes (then a request walks the tree only after one)
    changed: bool = True  # the watcher saw a change since the last check
    last_index: dict | None = field(default=None, repr=False)  # statistics of this process's last index run
    watch: WatchState = field(default_factory=WatchState, repr=False)  # background re-indexing (--watch)
    indexed: tuple[int, frozenset[str]] | None = field(default=None, repr=False)  # (id of kb, its file paths)


@dataclass(frozen=True)
class Answer:
    """What a request answers from: the repository, its KB, and how far that KB is behind the tree (None: not
    behind as far as the watcher knows; see `cra.drivers.serve.watch.WatchState.status`)."""

    repo: Repository
    kb: KnowledgeBase
    status: dict | None
    edited: EditedFiles | None = None  # the symbols of the changed files not in kb, read from them (watched only)


def _resolve_dir(path: Path, what: str) -> Path:
    path = Path(path).expanduser()
    if not path.is_dir():
        raise CraError(f"{what} {path} is not a directory. Pass an existing repository root.")
    return path.resolve()


class Workspace:
    """The served repositories, the roots under which others may be opened, and their warm, fresh KBs."""

    def __init__(
        self,
        repos: list[Path],
        allow_roots: list[Path] = (),
        kb_dir: Path | None = None,
        history: int = 2000,
        watched: bool = False,
    ):
        if kb_dir is not None and len(repos) != 1:
            raise CraError("--kb names one KB directory: use it with exactly one --repo.")
        self.repos: dict[Path, Repository] = {}
        for repo in repos:
            root = _resolve_dir(repo, "Repository")
            self.repos[root] = Repository(
                root, Path(kb_dir).resolve() if kb_dir else default_kb_dir(root), watched=watched
            )
        self.default = next(iter(self.repos))
        self.allow_roots = [_resolve_dir(r, "Allowed root") for r in allow_roots]
        self.history = history
        self._lock = threading.Lock()  # guards self.repos when a repository under an allowed root is opened
        self.stop = threading.Event()  # set when the server stops: background re-index threads end
        self._threads: dict[Path, threading.Thread] = {}
        self.worker = IndexWorker()  # the background re-index's process (started by the watcher)

    # --- security -----------------------------------------------------------------------------------------------

    def repository(self, name: str | None = None) -> Repository:
        """The served repository a request names (None: the first served), or a CraError when it is not allowed:
        outside the served repositories and allowed roots (symlinks resolved), missing, or not a directory."""
        if name is None or not str(name).strip():
            return self.repos[self.default]
        if "\0" in str(name):
            raise CraError("The repo argument contains a NUL byte. Pass a repository path.")
        by_name = [r for r in self.repos.values() if r.root.name == name]
        if len(by_name) == 1 and os.sep not in name:
            return by_name[0]
        wanted = Path(name).expanduser()
        try:
            real = wanted.resolve(strict=True)
        except (OSError, RuntimeError):
            raise CraError(f"Repository {name} does not exist. Served: {self.served()}.") from None
        with self._lock:
            if real in self.repos:
                return self.repos[real]
            if not any(real.is_relative_to(root) for root in self.allow_roots):
                raise CraError(
                    f"Repository {name} is outside the repositories this server may read ({self.served()}). "
                    "Restart `cra serve` with --repo PATH or --allow-root DIR to allow it."
                )
            if not real.is_dir():
                raise CraError(f"{name} is not a directory. Pass a repository root.")
            self.repos[real] = Repository(real, default_kb_dir(real))
            return self.repos[real]

    def served(self) -> str:
        """The served repositories and allowed roots, for messages."""
        roots = ", ".join(str(r) for r in self.repos)
        return roots + "".join(f", anything under {r}" for r in self.allow_roots)

    def relative_path(self, repo: Repository, path: str) -> str:
        """A file path of a request as a POSIX path relative to the repository; a CraError for paths that leave it
        (`..`, an absolute path elsewhere, a symlink pointing out of the root)."""
        if not isinstance(path, str) or not path.strip() or "\0" in path:
            raise CraError("The path is empty or malformed. Pass a file path relative to the repository root.")
        given = Path(path.strip())
        if given.is_absolute():
            lexical = Path(os.path.normpath(given))
            if not lexical.is_relative_to(repo.root):  # the root may have been named through a symlink
                lexical = Path(os.path.realpath(given))
            if not lexical.is_relative_to(repo.root):
                raise CraError(f"Path {path} is outside repository {repo.root}. Pass a path inside it.")
            rel = lexical.relative_to(repo.root)
        else:
            rel = Path(os.path.normpath(given))
        if rel.parts[:1] == ("..",):
            raise CraError(f"Path {path} leaves repository {repo.root} (path traversal). Pass a path inside it.")
        real = (repo.root / rel).resolve()
        if not real.is_relative_to(repo.root):
            raise CraError(f"Path {path} is a symlink out of repository {repo.root}; it is not read.")
        return rel.as_posix()

    # --- freshness ----------------------------------------------------------------------------------------------

    def mark_changed(self, root: Path) -> None:
        """A watcher saw something change under root: the next request (or refresh) walks that repository again."""
        for repo in list(self.repos.values()):
            if Path(root).is_relative_to(repo.root):
                repo.changed = True

    @contextmanager
    def fresh(self, name: str | None = None) -> Iterator[tuple[Repository, KnowledgeBase]]:
        """The repository a request names and its KB, re-indexed first if the tree moved; the repository stays
        locked for the block, so a concurrent request never sees a KB swapped under it."""
        with self.answering(name) as answer:
            yield answer.repo, answer.kb

    @contextmanager
    def answering(self, name: str | None = None, tables_only: bool = False) -> Iterator[Answer]:
        """As `fresh`, with the note of how stale the KB is. A watched repository that has a KB is not walked
        nor re-indexed here: its background thread does that, and the request answers from the last good KB; one
        that reads the KB's tables only (tables_only: a search of symbols) from the KB a run has loaded and is
        still preparing (lexicons, word tables), when there is one."""
        repo = self.repository(name)
        with repo.lock:
            if repo.watched and repo.kb is not None:
                with repo.watch.lock:
                    idle = repo.watch.running_since is None and not repo.watch.pending
                    kb, status, edited = repo.kb, repo.watch.status(), repo.watch.edited
                    loaded = repo.watch.loaded if tables_only else None
                    if loaded is not None:
                        kb, status = loaded[0], repo.watch.status(since=loaded[2:])
                current = live_version(repo.kb_dir) if idle else None
                if current is not None and current != repo.loaded_version:  # indexed by someone else meanwhile
                    self._load(repo)
                    kb = repo.kb
                yield Answer(repo, kb, status, edited if status is not None else None)
                return
            self._refresh(repo)
            yield Answer(repo, repo.kb, None)

    def changed(self, repo: Repository, paths: set[str], rewalk: bool = False) -> None:
        """The watcher saw these paths of a watched repository change: its background thread re-indexes them
        (rewalk: walking the tree, see `WatchState.changed`)."""
        repo.watch.changed(paths, rewalk)
        self._read_edits(repo)
        with self._lock:
            thread = self._threads.get(repo.root)
            if thread is None or not thread.is_alive():
                thread = threading.Thread(
                    target=self._reindex_in_background, args=(repo,), name=f"cra-reindex-{repo.root.name}", daemon=True
                )
                self._threads[repo.root] = thread
                thread.start()

    def _read_edits(self, repo: Repository) -> None:
        """Parse the files the served KB lacks, for searches meanwhile (`cra.drivers.serve.edited`); in the watcher's
        thread, so a search after an edit finds the edit without waiting for the re-index."""
        state = repo.watch
        with state.lock:
            sequence, paths = state.sequence, sorted(state.pending)
        try:
            edited = edited_files(repo.root, paths) if paths else None
        except Exception as exc:  # (a parser's bug: searches answer from the KB alone, as before)
            log.warning("reading the changed files of %s failed: %s", repo.root, exc)
            edited = None
        with state.lock:
            if state.sequence == sequence:  # (else a later change reads them again)
                state.edited = edited

    def indexed_paths(self, repo: Repository) -> frozenset[str]:
        """The file paths of the KB a repository's requests answer from (computed once per KB)."""
        kb, known = repo.kb, repo.indexed
        if kb is None:
            return frozenset()
        if known is None or known[0] != id(kb):
            known = (id(kb), frozenset(kb.files["path"].tolist()))
            repo.indexed = known
        return known[1]

    def _reindex_in_background(self, repo: Repository) -> None:
        """Until the server stops: take the changes seen so far, re-index, load and prepare the new KB, hand it to
        requests. A failure keeps the previous KB and is reported by the next request; the next change retries."""
        state = repo.watch
        while not self.stop.is_set():
            if not state.wake.wait(timeout=1.0):
                continue
            state.wake.clear()
            with state.lock:
                if not state.pending:
                    continue
                taken, started = state.sequence, time.time()
                state.taken, state.running_since = taken, started
                # every change not in the served KB (those of a run that failed too); None: the run walks the tree
                changed, state.rewalk = (None if state.rewalk else sorted(state.pending)), False
            try:
                if delay := background_delay():
                    time.sleep(delay)
                repo.last_index = self.worker.index(repo.root, repo.kb_dir, self.history, changed)
                version = live_version(repo.kb_dir)
                with _LOAD_LOCK:
                    kb = load_kb(repo.kb_dir)
                with state.lock:  # a search of symbols reads its tables from now on (OpenJDK: 0.5-1 s sooner)
                    state.loaded = (kb, version, taken, started)
                prepared(kb)  # (the other requests answer from the last prepared KB meanwhile)
            except Exception as exc:  # kept for the next request; the server goes on
                why = str(exc) if isinstance(exc, CraError) else f"{type(exc).__name__}: {exc}"
                log.warning("background re-index of %s failed: %s", repo.root, why)
                with state.lock:
                    state.error, state.running_since, state.loaded = why, None, None
                    state.rewalk = state.rewalk or changed is None
                continue
            with state.lock:
                repo.kb, repo.loaded_version = kb, version
                state.kb_of, state.running_since, state.error, state.loaded = started, None, None, None
                state.pending = {p: seen for p, seen in state.pending.items() if seen[0] > taken}
                state.edited = state.edited if state.pending else None  # (what is still pending was read on its change)
                state.runs += 1

    def refresh(self, name: str | None = None) -> None:
        """Bring one repository's KB up to date (what a watcher calls in the background)."""
        repo = self.repository(name)
        with repo.lock:
            self._refresh(repo)

    def index(self, name: str | None = None) -> tuple[Repository, dict]:
        """Re-index a repository now (incrementally) and load the result; its statistics."""
        repo = self.repository(name)
        with repo.lock:
            repo.changed = False
            with repo.watch.lock:
                taken = repo.watch.sequence
            self._index(repo, tree_fingerprint(repo.root))
            self._load(repo)
            with repo.watch.lock:  # what the watcher saw before this run is in the KB now
                repo.watch.pending = {p: seen for p, seen in repo.watch.pending.items() if seen[0] > taken}
                repo.watch.error = None
            return repo, repo.last_index

    def repair(self, damaged) -> bool:
        """Rebuild a served KB that a request found damaged (a `cra.drivers.kb.check.KbDamaged`), unless another request
        rebuilt it meanwhile; False when no served repository keeps its KB there (then nothing is done)."""
        repo = next((r for r in list(self.repos.values()) if r.kb_dir == Path(damaged.kb_dir).resolve()), None)
        if repo is None:
            return False
        with repo.lock:
            if damaged.version is None or live_version(repo.kb_dir) == damaged.version:
                repo.kb, repo.loaded_version = None, None
                self._index(repo, tree_fingerprint(repo.root), rebuild=True)
            self._load(repo)
        return True

    def _refresh(self, repo: Repository) -> None:
        """Call with repo.lock held: index if the tree moved since the live KB was built, load if not loaded."""
        if (
            repo.watched
            and not repo.changed
            and repo.kb is not None
            and live_version(repo.kb_dir) == repo.loaded_version
        ):
            return
        repo.changed = False  # cleared before the walk: a change seen from now on is walked again next time
        fingerprint = tree_fingerprint(repo.root)
        current = live_version(repo.kb_dir)
        if current is not None and repo.built_version != current:
            repo.built_version, repo.fingerprint = current, self._recorded_fingerprint(repo, current)
        if current is None or fingerprint != repo.fingerprint:
            self._index(repo, fingerprint)
        self._load(repo)

    def _index(self, repo: Repository, fingerprint: str, rebuild: bool = False) -> None:
        repo.last_index = index_repository(repo.root, repo.kb_dir, history=self.history, rebuild=rebuild)
        version = live_version(repo.kb_dir)
        repo.built_version, repo.fingerprint = version, fingerprint
        write_text_atomic(repo.kb_dir / STATE_FILE, json.dumps({"version": version, "fingerprint": fingerprint}) + "\n")

    def _load(self, repo: Repository) -> None:
        current = live_version(repo.kb_dir)
        if repo.kb is None or repo.loaded_version != current:
            with _LOAD_LOCK:
                kb = load_kb(repo.kb_dir)
            if repo.watched:  # (it must answer after a re-index removed its version's files)
                prepared(kb)
            with repo.watch.lock:
                repo.kb, repo.loaded_version = kb, current
                repo.watch.kb_of = _indexed_at(kb)

    @staticmethod
    def _recorded_fingerprint(repo: Repository, version: str) -> str | None:
        """The fingerprint a server recorded for this KB version, None when none did (then the tree is re-indexed)."""
        try:
            state = json.loads((repo.kb_dir / STATE_FILE).read_text())
        except (OSError, ValueError):
            return None
        return state.get("fingerprint") if isinstance(state, dict) and state.get("version") == version else None


def prepared(kb: KnowledgeBase) -> KnowledgeBase:
    """The KB with everything a request reads of it loaded or built (contents mapped, lexicons, word tables): so that
    it answers without waiting, and after a re-index has removed its version's files from disk."""
    from cra.drivers.retrieval.retriever import request_overrides

    kb.contents, kb.file_lexicon, kb.symbol_lexicon, kb.commit_lexicon, request_overrides(kb)  # noqa: B018
    return kb


def _indexed_at(kb: KnowledgeBase) -> float | None:
    """When a KB was indexed, as its metadata says (wall time), None when it does not."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(kb.metadata["indexed_at"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return None
