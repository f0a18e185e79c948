"""`cra serve --watch`: edits re-indexed in the background while requests answer from the last good KB.

A watcher thread (watchfiles: inotify / FSEvents / ReadDirectoryChanges, so an idle tree costs nothing and a change
is seen within ~50 ms) keeps the changes the index would read: files that .gitignore, the noise rules and the KB's
own folder leave out are dropped, as are git's internals other than its refs (a commit moves the history the KB
holds); an ignored path added or removed where the walk counts it asks the next run to walk the tree. Each served
repository has one re-index thread: it takes every change seen so far, has the same incremental `index_repository`
a `cra index` runs done in a warm child process (`cra.drivers.serve.index_worker`) with the changed paths as a hint
(`cra.drivers.serve.tree_walk`: no walk, a stat of those paths only), loads the new version (from then on a search of
symbols reads its tables: `WatchState.loaded`), builds what the other requests need of it (lexicons, word tables),
and only then hands it to them. Edits that arrive meanwhile are taken by the next run, so a burst of
edits costs one or two runs, not one per file. Until a run is handed over, a request answers from the KB it already
has and says how stale that is (`WatchState.status`); a run that fails leaves that KB in place and the next request
says why.

Test hook: CRA_SERVE_REINDEX_DELAY_S (seconds, default 0) makes every background run wait that long before it
starts, so a test can ask while a re-index is in progress. Nothing else reads it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from cra.drivers.index.gitignore import IgnoreRules, is_ignored
from cra.drivers.index.sources import _is_noise, _read_rules

log = logging.getLogger("cra.serve")

DELAY_ENV = "CRA_SERVE_REINDEX_DELAY_S"
STEP_MS = 50  # watchfiles yields a batch once no change came for this long ...
DEBOUNCE_MS = 400  # ... or this long after its first change, whichever comes first
_GIT_REFS = ("HEAD", "packed-refs")  # under .git: what moves when a commit is made or a branch switched


@dataclass
class WatchState:
    """What the watcher and the re-index thread know of one repository, guarded by `lock`: the changes not yet in the
    KB requests answer from, the run in progress, the last failure."""

    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    wake: threading.Event = field(default_factory=threading.Event, repr=False)
    pending: dict[str, tuple[int, float]] = field(default_factory=dict)  # path -> (sequence, wall time) of its change
    sequence: int = 0
    taken: int = 0  # the sequence number up to which the run in progress (or the last one) took the changes
    running_since: float | None = None  # wall time the run in progress started
    kb_of: float | None = None  # wall time of the tree the served KB was indexed from
    error: str | None = None  # why the last run failed (cleared by a run that succeeds)
    runs: int = 0  # background runs finished (for tests and logs)
    rewalk: bool = False  # a change the paths do not tell (an ignored path added or removed): the next run walks
    loaded: tuple | None = None  # (KB, version, sequence taken, started) of the run preparing it: searches read it
    edited: object | None = None  # the pending files' symbols as on disk (`cra.drivers.serve.edited.EditedFiles`)

    def changed(self, paths: set[str], rewalk: bool = False) -> None:
        """The watcher saw these (relevant) paths change: remember them and wake the re-index thread. rewalk: it saw
        something else change too that the walk counts (the next run walks the tree instead of trusting the paths)."""
        now = time.time()
        with self.lock:
            self.rewalk = self.rewalk or rewalk
            if not paths:  # (nothing the index reads: no run for this alone)
                return
            for path in paths:
                self.sequence += 1
                old = self.pending.get(path)  # (a change already waiting and not taken by a run: still the oldest)
                self.pending[path] = (self.sequence, old[1] if old is not None and old[0] > self.taken else now)
        self.wake.set()

    @property
    def first_change(self) -> float | None:
        """Wall time of the oldest change not in the served KB."""
        return min((seen for _, seen in self.pending.values()), default=None)

    def status(self, now: float | None = None, since: tuple[int, float] | None = None) -> dict | None:
        """Call with lock held. How far the served KB is behind the tree, for a request's answer; None when it is
        not behind (no change seen since it was indexed, and the last run did not fail). since: (sequence taken,
        wall time started) of the run whose KB answers instead (`loaded`): only the changes after it are missing."""
        pending, error, running, kb_of = self.pending, self.error, self.running_since, self.kb_of
        if since is not None:
            pending = {p: seen for p, seen in pending.items() if seen[0] > since[0]}
            error, running, kb_of = None, None, since[1]
        if not pending and error is None:
            return None
        now = time.time() if now is None else now
        n, first_change = len(pending), min((seen for _, seen in pending.values()), default=None)
        files = f"{n} changed file{'s' if n != 1 else ''}"
        since_text = f" since {_clock(first_change)}" if first_change else ""
        age = now - kb_of if kb_of else None
        answered = "answered from the KB" + (f" of {_clock(kb_of)} ({_seconds(age)} old)" if age is not None else "")
        if error is not None:
            state = "failed"
            note = (
                f"index: the background re-index failed ({error}); {answered}"
                + (f", without {files}{since_text}" if n else "")
                + ". It is tried again on the next edit; the index tool re-indexes now."
            )
        elif running is not None:
            state, note = "re-indexing", f"index: re-indexing {files}{since_text}; {answered}"
        else:
            state, note = "pending", f"index: {files}{since_text} not re-indexed yet; {answered}"
        return {
            "state": state,
            "changed_files": n,
            "changed_since": _iso(first_change),
            "kb_of": _iso(kb_of),
            "kb_age_s": round(age, 3) if age is not None else None,
            "error": error,
            "note": note,
        }


def _clock(t: float) -> str:
    return datetime.fromtimestamp(t).strftime("%H:%M:%S")


def _iso(t: float | None) -> str | None:
    return datetime.fromtimestamp(t).astimezone().isoformat(timespec="milliseconds") if t else None


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.0f} h"


class ChangeFilter:
    """Which changed paths under a repository the index would read, as `cra.drivers.index.sources.source_paths`
    chooses them: not in the KB directory, not noise, neither the path nor a directory above it ignored by
    .git/info/exclude or a .gitignore; under .git, only HEAD and the refs. A file the served KB holds (git tracks
    some ignored files) always counts. The ignore files are read once and again after one of them changes."""

    def __init__(self, root: Path, kb_dir: Path, indexed=lambda: frozenset()):
        self.root, self.kb_dir, self.indexed = Path(root), Path(kb_dir), indexed
        self._rules: dict[str, IgnoreRules | None] = {}

    def relevant(self, path: str) -> bool:
        return self.verdict(path) == "read"

    def verdict(self, path: str) -> str:
        """ "read": a path the index reads (or may: a deleted one that was); "counted": one it leaves out where its
        walk counts it among the ignored (adding or removing it changes that count), or .git/info/exclude; "": one
        it never gets to (outside, the KB, git's internals, under a directory left out)."""
        try:
            rel = Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return ""
        if rel in ("", "."):
            return ""
        if Path(path).is_relative_to(self.kb_dir):
            return ""
        parts = rel.split("/")
        if parts[0] == ".git":
            if rel == ".git/info/exclude":
                self._rules.clear()
                return "counted"
            ref = (len(parts) == 2 and parts[1] in _GIT_REFS) or (
                len(parts) > 2 and parts[1] == "refs" and not parts[-1].endswith(".lock")
            )
            return "read" if ref else ""
        if parts[-1] == ".gitignore":
            self._rules.clear()
        if rel in self.indexed():
            return "read"
        kinds = [os.path.isdir(path)] if os.path.lexists(path) else [False, True]  # (a deleted path: either kind)
        kept = [self.walked(rel, d) for d in kinds]
        return "read" if any(kept) else "counted" if False in kept else ""

    def walked(self, rel: str, is_dir: bool) -> bool | None:
        """Would the walk keep this path (relative, of this kind): True; leave it out as ignored or noise where it
        lies (it counts among the walk's ignored): False; None when a directory above it is left out (the walk never
        gets there). Git's tracked files and .cra.toml's patterns are not considered."""
        parts = rel.split("/")
        stack = [r for r in (self._rules_of(".git/info/exclude", ""),) if r is not None]
        for depth, name in enumerate(parts[:-1]):
            directory = "/".join(parts[:depth])
            own = self._rules_of(f"{directory}/.gitignore" if directory else ".gitignore", directory)
            stack += [own] if own is not None else []
            sub = "/".join(parts[: depth + 1])
            if _is_noise(name, True) or name == ".cra" or is_ignored(os.fsencode(sub), True, stack):
                return None
        directory = "/".join(parts[:-1])
        own = self._rules_of(f"{directory}/.gitignore" if directory else ".gitignore", directory)
        stack += [own] if own is not None else []
        return not _is_noise(parts[-1], is_dir) and not is_ignored(os.fsencode(rel), is_dir, stack)

    def _rules_of(self, rel: str, base: str) -> IgnoreRules | None:
        if rel not in self._rules:
            self._rules[rel] = _read_rules(self.root / rel, base)
        return self._rules[rel]


def background_delay() -> float:
    """The test hook's delay (CRA_SERVE_REINDEX_DELAY_S), 0 when unset or not a number."""
    try:
        return max(0.0, float(os.environ.get(DELAY_ENV, "0") or 0))
    except ValueError:
        return 0.0


def watch(ws, stop: threading.Event) -> None:
    """The watcher loop over every watched repository of the workspace, until stop is set. A watcher that cannot
    run (e.g. the system's limit of inotify watches reached) hands freshness back to the requests' own tree walk."""
    import watchfiles

    repos = [r for r in ws.repos.values() if r.watched]
    filters = {r.root: ChangeFilter(r.root, r.kb_dir, lambda r=r: ws.indexed_paths(r)) for r in repos}

    rewalk: set[Path] = set()  # roots where a path the walk counts among its ignored was added or removed

    def interesting(change, path: str) -> bool:
        verdicts = {root: f.verdict(path) for root, f in filters.items()}
        if change != watchfiles.Change.modified:
            rewalk.update(root for root, verdict in verdicts.items() if verdict == "counted")
        return "read" in verdicts.values()

    try:
        ws.worker.start()  # (warm before the first edit)
        for changes in watchfiles.watch(
            *[str(r.root) for r in repos],
            watch_filter=interesting,
            stop_event=stop,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            raise_interrupt=False,
        ):
            for repo in repos:
                paths = {p for _, p in changes if Path(p).is_relative_to(repo.root)}
                if paths:
                    ws.changed(repo, {Path(p).relative_to(repo.root).as_posix() for p in paths}, repo.root in rewalk)
                elif repo.root in rewalk:
                    repo.watch.changed(set(), rewalk=True)
            rewalk.clear()
    except Exception as exc:  # the requests walk the tree again instead
        log.warning("watching files failed (%s); requests check the tree for changes themselves", exc)
        for repo in repos:
            repo.watched = False
            repo.changed = True
