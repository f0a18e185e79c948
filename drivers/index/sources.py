"""Read a repository's source files into one frame: .gitignore honoured, noise and oversized files skipped.

This is the only place the indexer touches the file system; the index dataflow gets the frame.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cra.drivers.index.gitignore import IgnoreRules, is_ignored, parse_ignore_file
from cra.drivers.index.repo_config import read_repo_config

# directories that are never source, whatever .gitignore says
ALWAYS_SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".cra",
        "node_modules",
        ".venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".eggs",
        ".idea",
    }
)
ALWAYS_SKIPPED_SUFFIXES = (".egg-info", ".pyc", ".pyo")

if TYPE_CHECKING:  # pandas loads only when files are actually read: `cra index` on an unchanged tree never does
    import pandas as pd


@dataclass(frozen=True)
class SourceScan:
    frame: pd.DataFrame  # path (posix, relative to root), data (bytes; None when not read, see scan_sources), size, hash (sha1 hex of data)
    n_ignored: int  # files and pruned directories left out by .gitignore / info/exclude / noise rules (not .git)
    oversized: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (path, error)
    entries: dict[str, list] = field(
        default_factory=dict
    )  # path -> [size, mtime_ns, inode, sha1 or None when oversized]: the stat cache's entries (stat before reading)
    walk: SourcePaths | None = None  # the walk the scan read


def _read_rules(path: Path, base: str) -> IgnoreRules | None:
    """The compiled rules of one ignore file (a regular file, not a symlink, as git reads it); None when absent or empty."""
    try:
        if not path.is_file() or path.is_symlink():
            return None
        data = path.read_bytes()
    except OSError:
        return None
    return parse_ignore_file(data, os.fsencode(base))


def _tracked_files(root: Path) -> list[str]:
    """Paths git tracks in root's work tree (ignore rules never apply to them); empty without git or a work tree."""
    if not (root / ".git").exists():
        return []
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}  # a hook's GIT_DIR must not redirect us
    try:
        done = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=False, env=env)
    except OSError:
        return []
    return [os.fsdecode(p) for p in done.stdout.split(b"\0") if p] if done.returncode == 0 else []


def _is_noise(name: str, is_dir: bool) -> bool:
    """Directories and files that are never worth indexing (caches, vendored installs, bytecode)."""
    if is_dir:
        return name in ALWAYS_SKIPPED_DIRS or name.endswith(".egg-info")
    return name.endswith(ALWAYS_SKIPPED_SUFFIXES)


def _noise_path(rel: str) -> bool:
    """Does a relative path lie in a noise directory or name a noise file?"""
    *dirs, name = rel.split("/")
    return _is_noise(name, False) or any(_is_noise(d, True) or d == ".git" for d in dirs)


def _is_regular_file(path: Path) -> bool:
    """A regular file, not a symlink (what the walk reads)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


@dataclass(frozen=True)
class SourcePaths:
    """Which files a scan would read, without reading them."""

    paths: dict[str, str]  # relative posix path -> path to open, every file the index would consider
    n_ignored: int  # files and pruned directories left out by .gitignore / info/exclude / noise rules (not .git)
    unreadable: list[tuple[str, str]]  # (directory, error) of directories that could not be listed
    tracked: tuple[str, ...] = ()  # what `git ls-files` listed (empty without git)
    config_excluded: tuple[str, ...] = ()  # files the walk found that .cra.toml's include/exclude left out, sorted
    config_digest: str | None = None  # .cra.toml's patterns (`RepoConfig.digest`): part of the index fingerprint


def source_paths(root: Path) -> SourcePaths:
    """The files of root the index considers, chosen as git does (`git ls-files -co --exclude-standard`); nothing
    is opened but ignore files, so a caller can stat the result cheaply (e.g. to see whether a KB is stale).

    The walk skips symlinks and noise, and prunes every directory that the ignore files of its ancestors
    (.git/info/exclude, then each .gitignore from the root down) exclude once all their patterns have been
    applied, so `*` then `!*/` keeps every directory and nothing under an excluded one comes back. Files that
    git tracks are kept whatever the rules say. A tree without .git honours its .gitignore files the same way.
    Then the root's `.cra.toml` (`cra.drivers.index.repo_config`) has the last word, over tracked files too; a
    `.cra.toml` that cannot be used is a CraError.
    """
    root = Path(root)
    config = read_repo_config(root)
    found: dict[str, str] = {}  # relative path -> path to open
    unreadable: list[tuple[str, str]] = []
    n_ignored = 0
    exclude = _read_rules(root / ".git" / "info" / "exclude", "")
    stack: list[tuple[str, str, tuple[IgnoreRules, ...]]] = [(str(root), "", (exclude,) if exclude else ())]
    while stack:
        directory, rel_dir, rules = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError as err:
            unreadable.append((rel_dir or ".", str(err)))
            continue
        if any(e.name == ".gitignore" for e in entries):  # only open the ignore file where there is one
            own = _read_rules(Path(directory) / ".gitignore", rel_dir)
            if own is not None:
                rules = (*rules, own)
        for entry in entries:
            if entry.name in (".git", ".cra") or entry.is_symlink():  # git's and our own store: not the tree
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if not is_dir and not entry.is_file(follow_symlinks=False):
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if _is_noise(entry.name, is_dir) or (rules and is_ignored(os.fsencode(rel), is_dir, rules)):
                n_ignored += 1
            elif is_dir:
                stack.append((entry.path, rel, rules))
            else:
                found[rel] = entry.path
    tracked = _tracked_files(root)
    for rel in tracked:
        if rel not in found and not _noise_path(rel) and _is_regular_file(root / rel):
            found[rel] = str(root / rel)
    excluded: tuple[str, ...] = ()
    if config.digest is not None:
        keeps = config.keeps()
        excluded = tuple(sorted(rel for rel in found if not keeps(rel)))
        for rel in excluded:
            del found[rel]
    return SourcePaths(found, n_ignored, unreadable, tuple(tracked), excluded, config.digest)


def scan_sources(
    root: Path,
    max_file_bytes: int = 1_000_000,
    known: Mapping[str, list] | None = None,
    walk: SourcePaths | None = None,
) -> SourceScan:
    """Read root's small source files, chosen by `source_paths` (or given as its result, `walk`).

    known: path -> [size, mtime_ns, inode, sha1] of files whose content the caller vouches for (their stat, taken
    after this run began, is the one the stat cache recorded with that hash: `cra.drivers.kb.stat_cache.StatCache.vouched`):
    they are not opened (a re-index: most files); their row has that hash and data None."""
    import numpy as np
    import pandas as pd

    walked = walk if walk is not None else source_paths(root)
    found, n_ignored, unreadable = walked.paths, walked.n_ignored, list(walked.unreadable)
    known = known if known is not None else {}
    paths: list[str] = []
    datas: list[bytes | None] = []
    sizes: list[int] = []
    hashes: list[str] = []
    oversized: list[str] = []
    entries: dict[str, list] = {}
    for rel in sorted(found):  # (in path order: the frame's)
        entry = known.get(rel)
        if entry is not None and entry[0] <= max_file_bytes:
            entries[rel] = entry
            paths.append(rel)
            datas.append(None)
            sizes.append(entry[0])
            hashes.append(entry[3])
            continue
        try:
            with open(found[rel], "rb") as fh:
                st = os.fstat(fh.fileno())
                if st.st_size > max_file_bytes:
                    entries[rel] = [st.st_size, st.st_mtime_ns, st.st_ino, None]
                    oversized.append(rel)
                    continue
                data = fh.read()
        except OSError as err:
            unreadable.append((rel, str(err)))
            continue
        sha1 = hashlib.sha1(data).hexdigest()
        entries[rel] = [st.st_size, st.st_mtime_ns, st.st_ino, sha1]
        paths.append(rel)
        datas.append(data)
        sizes.append(len(data))
        hashes.append(sha1)
    frame = pd.DataFrame(
        {"path": paths, "data": pd.Series(datas, dtype=object), "size": np.array(sizes, dtype="int64"), "hash": hashes}
    )
    if not paths:  # (typed as a frame of no rows always was, not float)
        frame = frame.astype({"path": object, "hash": object})
    return SourceScan(
        frame=frame,
        n_ignored=n_ignored,
        oversized=oversized,
        unreadable=sorted(unreadable),
        entries=entries,
        walk=walked,
    )
