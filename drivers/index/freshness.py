"""Whether a KB is older than its tree, cheaply enough for every `cra retrieve`: the stat cache the last index wrote
(`cra.drivers.kb.stat_cache`) against the files' stats now. Light to import (no pandas).

Edited and removed files: every file the last index saw is stat'ed (a sample of SAMPLE_FILES on larger trees); one
whose stat (size, mtime, inode) moved is hashed (up to HASH_LIMIT of them) so that a `touch` or a checkout of the same
content does not count. Added files: a file added (or renamed) changes its directory's mtime, so the directories of
the indexed files are stat'ed, and only when one changed since the last scan is the tree walked as the index walks it
(`source_paths`) to find what is new. Not seen: a file added to a directory holding no indexed file at all, and on
file systems with coarse timestamps, a change within the same tick as the scan began (`cra index` reads those again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.kb import stat_cache

SAMPLE_FILES = 20_000  # files stat'ed at most (Django's 6,700 in about 15 ms here; beyond, an even sample)
HASH_LIMIT = 100  # files whose stat moved that are hashed to see whether their content did; beyond, counted changed
AUTO_REFRESH_FILES = 2_000  # trees of at most this many files are re-indexed by `cra retrieve` when stale (see README)


@dataclass(frozen=True)
class Staleness:
    """How a tree moved since its KB was indexed (counts of a sample when `sampled` of the `indexed` files were
    looked at)."""

    changed: int
    added: int
    removed: int
    indexed: int
    sampled: int

    @property
    def stale(self) -> bool:
        return bool(self.changed or self.added or self.removed)

    def describe(self) -> str:
        counts = ((self.changed, "changed"), (self.added, "added"), (self.removed, "removed"))
        parts = [f"{n} {what}" for n, what in counts if n]
        of = f" (of {self.sampled:,} of its {self.indexed:,} files looked at)" if self.sampled < self.indexed else ""
        return f"{', '.join(parts)} since it was indexed{of}"


def kb_staleness(repo: Path, kb_dir: Path) -> Staleness | None:
    """How repo moved since its KB's live version was indexed; None when that cannot be told (no stat cache for the
    live version, e.g. a KB indexed by an older cra or from a git revision)."""
    cache = stat_cache.read_cache(kb_dir)
    if cache is None:
        return None
    paths = list(cache.entries)
    step = -(-len(paths) // SAMPLE_FILES) or 1
    sample = paths[::step]
    changed = removed = 0
    moved = []
    with stat_cache.stat_under(repo) as stat_of:
        for rel in sample:
            try:
                st = stat_of(rel)
            except OSError:
                removed += 1
                continue
            entry = cache.entries[rel]
            if st.st_mtime_ns == entry[1] and st.st_size == entry[0] and st.st_ino == entry[2]:
                continue  # (a racily clean file, which the index reads again, is taken as unchanged)
            if entry[3] is None or st.st_size != entry[0]:
                changed += 1
            else:
                moved.append((rel, entry[3]))
        directories = {""} | {rel.rsplit("/", 1)[0] for rel in sample if "/" in rel}
        walk = any(_modified_since(stat_of, rel or ".", cache.scanned_ns) for rel in directories)
    changed += sum(stat_cache.sha1_of(str(Path(repo, rel))) != sha1 for rel, sha1 in moved[:HASH_LIMIT])
    changed += len(moved[HASH_LIMIT:])
    added = 0
    if walk:  # a directory changed since the scan (an entry added, removed or renamed): the tree is walked
        from cra.drivers.index.sources import source_paths

        now = source_paths(Path(repo)).paths.keys()
        added = len(now - cache.entries.keys())
        removed = len(cache.entries.keys() - now) if step == 1 else removed
    return Staleness(changed, added, removed, len(paths), len(sample))


def _modified_since(stat_of, rel: str, since_ns: int) -> bool:
    try:
        return stat_of(rel).st_mtime_ns >= since_ns
    except OSError:
        return True


def indexed_root(kb_dir: Path) -> Path | None:
    """The repository a KB was indexed from, as its metadata records it."""
    from cra.drivers.kb.location import live_version

    try:
        return Path(json.loads((live_version(Path(kb_dir)) / "metadata.json").read_text())["repo_root"])
    except (OSError, TypeError, ValueError, KeyError):
        return None


def fresh_kb(repo: Path, kb_dir: Path, refresh: bool | None, warn):
    """The KB a request answers from (`cra.drivers.kb.store.load_kb`), re-indexed incrementally first when refresh is True, or
    when it is None and the KB turns out older than a tree of at most AUTO_REFRESH_FILES files; a KB older than a
    larger tree (or with refresh False) is answered from as it is, after warn(message) says so and how to update it.
    The staleness check runs before the load, not beside it in a thread: its many short stat calls each wait for the
    GIL behind the load's decoding (a convoy: 0.73 s for check and load together on Django, 0.33 s one after the
    other)."""
    from cra.drivers.kb.store import load_kb

    if refresh:
        _reindex(repo, kb_dir, warn, "")
        return load_kb(kb_dir)
    staleness = _staleness_or_none(repo, kb_dir)
    if staleness is not None and staleness.stale:
        older = f"the knowledge base is older than the tree: {staleness.describe()}"
        if refresh is None and staleness.indexed <= AUTO_REFRESH_FILES:
            try:
                _reindex(repo, kb_dir, warn, f"{older}; ")
            except CraError as exc:  # (not asked for: the request goes on)
                warn(f"{older}; it could not be re-indexed ({exc}), so the answer comes from it as it is")
        else:
            warn(
                f"{older}; the answer comes from it as it is. `cra index {repo}` or `cra retrieve --refresh` brings "
                "it up to date"
            )
    return load_kb(kb_dir)


def _staleness_or_none(repo: Path, kb_dir: Path) -> Staleness | None:
    try:
        return kb_staleness(repo, kb_dir)
    except (OSError, CraError):  # (a tree that cannot be walked: the request says what is wrong, or answers)
        return None


def _reindex(repo: Path, kb_dir: Path, warn, why: str) -> None:
    from cra.drivers.index.indexer import index_repository

    stats = index_repository(
        repo,
        kb_dir,
        on_wait=lambda: warn("another `cra index` is writing this knowledge base; waiting for it to finish"),
    )
    if not stats.get("unchanged"):
        parsed = stats.get("n_parsed", 0)
        files = "file" if parsed == 1 else "files"
        warn(f"{why}re-indexed first: parsed {parsed} {files} in {stats.get('seconds', 0):.1f} s")
