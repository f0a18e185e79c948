"""What the last index saw of each file, so a re-index reads only what changed and an unchanged tree costs a walk.

`<kb>/scan-cache.json` holds every scanned path's (size, mtime_ns, inode, sha1), in columns, as of the scan that
wrote the live KB version it names, plus a fingerprint of everything else a run depends on
(`cra.drivers.index.fingerprint`: options, git HEAD and tracked files, the walk's ignore count, the index code and
convention tables). A file whose stat still matches is not read or hashed again; a tree whose paths, stats and
fingerprint all match is not re-indexed at all (`unchanged_stats`).

Racily clean files (as git calls them): a file modified within RACY_NS before the scan that recorded it could be
edited again within the same mtime tick without its stat changing, so its stat alone is never trusted: it is read
and hashed again. This module is light to import (no pandas): `cra index` on an unchanged tree loads nothing else.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cra.drivers.common.output import write_text_atomic
from cra.drivers.kb.location import live_version

CACHE_FILE = "scan-cache.json"
RACY_NS = 2_000_000_000  # mtime granularity of the coarsest file systems we may meet (FAT: 2 s)
CACHE_FORMAT = 3  # of the cache file, and part of every fingerprint
# the cache's columns, a list each (a dict of 65,000 four-item lists took 65 ms to read and 70 to write; these 40)
_COLUMNS = ("paths", "sizes", "mtimes", "inodes", "hashes")


@dataclass(frozen=True)
class StatCache:
    version: str  # the KB version directory written by the scan these entries come from
    fingerprint: str  # index_fingerprint of that run
    scanned_ns: int  # wall clock when that scan began: entries modified within RACY_NS before it are not trusted
    entries: dict[str, Sequence]  # path -> (size, mtime_ns, inode, sha1 or None when oversized)
    code: str = ""  # code_digest() of that run: what a file is (binary, generated, unsupported) may change with it

    def trusted(self, path: str, stat: tuple[int, int, int]) -> str | None:
        """The recorded sha1 of path when its stat (size, mtime_ns, inode) still matches and is not racy, else None."""
        entry = self.entries.get(path)
        if entry is None or tuple(entry[:3]) != stat or entry[1] >= self.scanned_ns - RACY_NS:
            return None
        return entry[3]

    def vouched(
        self,
        stats: Mapping[str, tuple[int, int, int] | None],
        hashes: Mapping[str, str] | None = None,
        also: frozenset[str] | set[str] = frozenset(),
    ) -> dict[str, list]:
        """The entries (path -> [size, mtime_ns, inode, sha1]) whose file still has the stat recorded (stats: as
        `file_stats` took them, after the scan began), that stat not racy and the file not oversized: the content of
        these files is known without reading them. hashes: only those whose sha1 is the one given for their path, or
        whose path is in `also`. One pass over the cache, no call per file."""
        racy_from = self.scanned_ns - RACY_NS
        if hashes is None:
            return {
                path: entry
                for path, entry in self.entries.items()
                if entry[1] < racy_from and entry[3] is not None and stats.get(path) == (entry[0], entry[1], entry[2])
            }
        return {
            path: entry
            for path, entry in self.entries.items()
            if entry[1] < racy_from
            and entry[3] is not None
            and (hashes.get(path) == entry[3] or path in also)
            and stats.get(path) == (entry[0], entry[1], entry[2])
        }


@dataclass(frozen=True)
class ChangeHint:
    """What a caller that watches the tree knows (`cra serve --watch`): `walk` is the tree's walk as
    `cra.drivers.index.sources.source_paths` would return it, and since the scan that wrote the stat cache of KB
    version `version` only the `changed` paths (relative) may have changed; None: any may have."""

    walk: object  # a `cra.drivers.index.sources.SourcePaths` (not imported: this module stays light)
    version: str | None = None
    changed: frozenset[str] | None = None

    def stats(self, root: Path, cache: StatCache | None) -> dict[str, tuple[int, int, int] | None] | None:
        """(size, mtime_ns, inode) of every walked file as `file_stats` takes them, the unchanged ones from the
        cache instead of a stat each; None when the hint does not hold for this cache (another version is live)."""
        if cache is None or self.changed is None or cache.version != self.version:
            return None
        entries = cache.entries
        unknown = [rel for rel in self.walk.paths if rel in self.changed or rel not in entries]
        stats = {rel: (entry[0], entry[1], entry[2]) for rel, entry in entries.items() if rel in self.walk.paths}
        stats.update(file_stats(root, unknown))
        return stats


def file_stats(root: Path, paths: Iterable[str]) -> dict[str, tuple[int, int, int] | None]:
    """(size, mtime_ns, inode) of each file (a path relative to root), None when it cannot be stat'ed: one stat a
    file, taken once per run for both the fast exit and the scan."""
    stats: dict[str, tuple[int, int, int] | None] = {}
    with stat_under(root) as stat_of:
        for rel in paths:
            try:
                st = stat_of(rel)
            except OSError:
                stats[rel] = None
                continue
            stats[rel] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return stats


@contextmanager
def stat_under(root: Path):
    """os.stat of paths relative to root: through a descriptor of root where the platform allows (the kernel then
    resolves only the relative part: 30% less CPU on Django's 6,800 paths than the whole path)."""
    if os.stat not in os.supports_dir_fd:
        yield lambda rel: os.stat(os.path.join(root, rel))
        return
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        yield lambda rel: os.stat(rel, dir_fd=fd)
    finally:
        os.close(fd)


def file_stat(path: str) -> tuple[int, int, int] | None:
    """(size, mtime_ns, inode) of a file, None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


def sha1_of(path: str) -> str | None:
    """sha1 hex of a file's bytes, None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return hashlib.sha1(fh.read()).hexdigest()
    except OSError:
        return None


def read_cache(kb_dir: Path) -> StatCache | None:
    """The cache beside a KB when it belongs to the live version (CURRENT), else None (then every file is read)."""
    kb_dir = Path(kb_dir)
    try:
        data = json.loads((kb_dir / CACHE_FILE).read_text())
    except (OSError, ValueError):
        return None
    live = live_version(kb_dir)
    if (
        not isinstance(data, dict)
        or data.get("format") != CACHE_FORMAT
        or live is None
        or data.get("version") != live.name
    ):
        return None
    try:
        columns = [data[name] for name in _COLUMNS]
        entries = dict(zip(columns[0], zip(*columns[1:], strict=True), strict=True))
    except (KeyError, TypeError, ValueError):  # (not a cache this code wrote: every file is read)
        return None
    return StatCache(data["version"], data["fingerprint"], int(data["scanned_ns"]), entries, data.get("code", ""))


def write_cache(kb_dir: Path, cache: StatCache) -> None:
    """Replace the cache beside a KB (atomically: a reader sees the old one or the new one)."""
    entries = cache.entries.values()
    data = {
        "format": CACHE_FORMAT,
        "version": cache.version,
        "fingerprint": cache.fingerprint,
        "scanned_ns": cache.scanned_ns,
        "code": cache.code,
        "paths": list(cache.entries),
        **{name: [entry[k] for entry in entries] for k, name in enumerate(_COLUMNS[1:])},
    }
    write_text_atomic(Path(kb_dir) / CACHE_FILE, json.dumps(data, separators=(",", ":"), check_circular=False))


def unchanged_stats(
    kb_dir: Path,
    paths: Mapping[str, str],
    max_file_bytes: int,
    cache: StatCache | None,
    fingerprint: Callable[[], str],
    stats: dict[str, tuple[int, int, int] | None] | None = None,
    scanned_ns: int | None = None,
    first: Iterable[str] = (),
) -> dict | None:
    """The live KB's run statistics when re-indexing the tree (its files: relative path -> path, as walked) would
    rebuild exactly that KB (same paths, same contents, same fingerprint), else None. cache: `read_cache(kb_dir)`;
    fingerprint: what the run's fingerprint is now (asked for only once the paths match: it runs git). Files whose
    stat changed or is racy are hashed; when all of them kept their content the cache is refreshed with their new
    stats (the KB itself is never written here). stats: the files' stats taken after scanned_ns so far (path ->
    `file_stats` value), where the ones taken here are added (default: none kept). first: paths looked at before the
    others (a watcher's changed paths: an edit ends the check without a pass over every file)."""
    started = time.perf_counter()
    scanned_ns = time.time_ns() if stats is None or scanned_ns is None else scanned_ns
    if cache is None:
        return None
    if paths.keys() != cache.entries.keys():
        return None
    if fingerprint() != cache.fingerprint:
        return None
    entries, rechecked = dict(cache.entries), False
    for rel in [*(rel for rel in first if rel in paths), *paths] if first else paths:
        path = paths[rel]
        if stats is None:
            stat = file_stat(path)
        else:
            stat = stats[rel] if rel in stats else stats.setdefault(rel, file_stat(path))
        if stat is None:
            return None
        entry = cache.entries[rel]
        if entry[3] is None:  # oversized when indexed: unchanged while it still is
            if stat[0] <= max_file_bytes:
                return None
            continue
        if cache.trusted(rel, stat) is None:
            if stat[0] > max_file_bytes or sha1_of(path) != entry[3]:
                return None
            entries[rel], rechecked = [*stat, entry[3]], True
    try:
        metadata = json.loads((Path(kb_dir) / cache.version / "metadata.json").read_text())
    except (OSError, ValueError):
        return None
    if rechecked:
        write_cache(kb_dir, StatCache(cache.version, cache.fingerprint, scanned_ns, entries, cache.code))
    stats = {k: v for k, v in (metadata.get("stats") or {}).items() if k != "carried"}  # (what that run kept: not this)
    note = "nothing changed since the last index: the knowledge base was left as it was"
    return {
        **stats,
        "n_parsed": 0,
        "n_reused": stats.get("n_files", 0),
        "workers": 1,
        "notes": [note],
        "seconds": round(time.perf_counter() - started, 3),
        "kb_dir": str(kb_dir),
        "unchanged": True,
    }
