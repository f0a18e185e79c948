"""The walk of a watched tree kept up to date from the paths its watcher saw change, instead of walked again per run.

Why: on OpenJDK (59,581 files) walking the tree and stat'ing every file cost ~0.8 s of each background re-index of
`cra serve --watch`, for an edit of one file. The index worker keeps the walk of its last run (`WalkMemory`); the
next run's walk is that one with the changed paths looked at (`walk_after`): a file modified, added or removed is
followed; anything it cannot follow exactly (a directory, an ignore file, .cra.toml, git's refs, a path the walk
would count among the ignored, a file the walk would leave out) makes the run walk the tree, as does every
FULL_WALK_EVERY-th run (a missed event cannot leave the KB wrong for long), a change of git's index (what git
tracks) and another KB version live than the one the last run wrote (indexed by someone else).
"""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

from cra.drivers.index.sources import SourcePaths, source_paths
from cra.drivers.kb.location import live_version
from cra.drivers.kb.stat_cache import ChangeHint
from cra.drivers.serve.watch import ChangeFilter

FULL_WALK_EVERY = 20  # runs: one in this many walks the tree whatever the watcher said
_WALKED_AGAIN = (".gitignore", ".cra.toml")  # files that change which files the walk keeps


@dataclasses.dataclass
class WalkMemory:
    """The walk of a worker's last successful run on one repository and KB, and what it is valid for."""

    walk: SourcePaths
    version: str | None  # the KB version live after that run (the stat cache the changed paths are relative to)
    git_index: tuple | None  # stat of .git/index when it was walked (git's tracked files)
    hinted_runs: int = 0  # runs since the tree was last walked


def git_index_stat(root: Path) -> tuple | None:
    """(size, mtime_ns, inode) of .git/index: moves when what git tracks may have changed."""
    try:
        st = os.stat(Path(root) / ".git" / "index")
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


def walk_after(root: Path, kb_dir: Path, last: SourcePaths, changed: list[str]) -> SourcePaths | None:
    """The walk `source_paths(root)` would return now, given its last result and every path changed since; None
    when a change is one this cannot follow exactly (then walk)."""
    root = Path(root)
    paths, deleted, added = dict(last.paths), [], []
    for rel in changed:
        if not rel or rel.startswith(".git/") or rel.rsplit("/", 1)[-1] in _WALKED_AGAIN:
            return None
        try:
            mode = os.lstat(root / rel).st_mode
        except FileNotFoundError:
            mode = None
        except OSError:
            return None
        if mode is not None and not stat.S_ISREG(mode):
            return None  # a directory (its files), a symlink, a device: walked
        if rel in paths:
            if mode is None:
                deleted.append(rel)
            continue
        if mode is None:
            deleted.append(rel)  # not walked before: a temporary file come and gone, or a directory removed
        else:
            added.append(rel)
    if not deleted and not added:
        return last
    rules = ChangeFilter(root, kb_dir)
    for rel in deleted:
        if rel in paths:
            del paths[rel]
        elif any(p.startswith(rel + "/") for p in paths) or False in (rules.walked(rel, d) for d in (False, True)):
            return None  # a directory's files gone, or a path the walk counted among the ignored
    for rel in added:
        if rules.walked(rel, False) is not True:
            return None  # left out by the ignore rules or noise (the walk counts it; git may track it)
        paths[rel] = str(root / rel)
    if added and last.config_digest is not None:
        from cra.drivers.index.repo_config import read_repo_config

        keeps = read_repo_config(root).keeps()
        if not all(keeps(rel) for rel in added):
            return None  # .cra.toml leaves it out: walked, so that the left-out list is the walk's
    return dataclasses.replace(last, paths=paths)


def change_hint(
    root: Path, kb_dir: Path, memory: WalkMemory | None, changed: list[str] | None, git_index: tuple | None
) -> ChangeHint:
    """The hint of the next run: the walk kept up to date and the changed paths when the memory of the last run
    allows, else a fresh walk (with no changed paths: every file is stat'ed). git_index: `git_index_stat` now."""
    version = live_version(Path(kb_dir))
    version = version.name if version is not None else None
    if (
        memory is not None
        and changed is not None
        and memory.version == version
        and memory.hinted_runs + 1 < FULL_WALK_EVERY
        and git_index == memory.git_index
    ):
        walk = walk_after(root, kb_dir, memory.walk, changed)
        if walk is not None:
            return ChangeHint(walk, version, frozenset(changed))
    return ChangeHint(source_paths(root))


def remembered(root: Path, kb_dir: Path, hint: ChangeHint, git_index: tuple | None, memory: WalkMemory | None):
    """The memory after a run with this hint succeeded (git_index: as stat'ed before the hint was made)."""
    version = live_version(Path(kb_dir))
    hinted_runs = memory.hinted_runs + 1 if hint.changed is not None and memory is not None else 0
    return WalkMemory(hint.walk, version.name if version is not None else None, git_index, hinted_runs)
