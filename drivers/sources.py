"""Read a repository's source files into one frame: .gitignore honoured, noise and oversized files skipped.

This is the only place the indexer touches the file system; the index dataflow gets the frame.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pathspec

# directories that are never source, whatever .gitignore says
ALWAYS_SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".cra", "node_modules", ".venv", "__pycache__", ".mypy_cache",
        ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".eggs", ".idea",
    }
)  # fmt: skip
ALWAYS_SKIPPED_SUFFIXES = (".egg-info", ".pyc", ".pyo")


@dataclass(frozen=True)
class SourceScan:
    frame: pd.DataFrame  # path (posix, relative to root), data (bytes), size, hash (sha1 hex of data)
    n_ignored: int  # files and pruned directories left out by .gitignore / info/exclude / noise rules (not .git)
    oversized: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (path, error)


def _read_spec(path: Path) -> pathspec.GitIgnoreSpec | None:
    """The ignore rules in one .gitignore-style file, None when absent or empty."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if spec.patterns else None


def _is_ignored(rel: str, is_dir: bool, specs: list[tuple[str, pathspec.GitIgnoreSpec]]) -> bool:
    """Git semantics across levels: the deepest ignore file with a matching rule decides."""
    for base, spec in reversed(specs):
        local = rel[len(base) + 1 :] if base else rel
        result = spec.check_file(local + "/" if is_dir else local)
        if result.include is not None:
            return bool(result.include)
    return False


def _is_noise(name: str, is_dir: bool) -> bool:
    """Directories and files that are never worth indexing (caches, vendored installs, bytecode)."""
    if is_dir:
        return name in ALWAYS_SKIPPED_DIRS or name.endswith(".egg-info")
    return name.endswith(ALWAYS_SKIPPED_SUFFIXES)


def scan_sources(root: Path, max_file_bytes: int = 1_000_000) -> SourceScan:
    """Walk root (no symlinks, .git pruned, .gitignore at every level + .git/info/exclude) and read small files."""
    root = Path(root)
    rows: list[tuple[str, bytes, int, str]] = []
    oversized: list[str] = []
    unreadable: list[tuple[str, str]] = []
    n_ignored = 0
    root_specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    exclude = _read_spec(root / ".git" / "info" / "exclude")
    if exclude is not None:
        root_specs.append(("", exclude))
    stack: list[tuple[str, str, list[tuple[str, pathspec.GitIgnoreSpec]]]] = [(str(root), "", root_specs)]
    while stack:
        directory, rel_dir, inherited = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as err:
            unreadable.append((rel_dir or ".", str(err)))
            continue
        specs = inherited
        if any(e.name == ".gitignore" for e in entries):  # only open the ignore file where there is one
            own = _read_spec(Path(directory) / ".gitignore")
            if own is not None:
                specs = [*inherited, (rel_dir, own)]
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_symlink() or entry.name == ".git":
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if not is_dir and not entry.is_file(follow_symlinks=False):
                continue
            if _is_noise(entry.name, is_dir) or _is_ignored(rel, is_dir, specs):
                n_ignored += 1
                continue
            if is_dir:
                stack.append((entry.path, rel, specs))
                continue
            try:
                size = entry.stat(follow_symlinks=False).st_size
                if size > max_file_bytes:
                    oversized.append(rel)
                    continue
                with open(entry.path, "rb") as fh:
                    data = fh.read()
            except OSError as err:
                unreadable.append((rel, str(err)))
                continue
            rows.append((rel, data, len(data), hashlib.sha1(data).hexdigest()))
    frame = pd.DataFrame(rows, columns=["path", "data", "size", "hash"]).sort_values("path", ignore_index=True)
    frame["size"] = frame["size"].astype("int64")
    return SourceScan(frame=frame, n_ignored=n_ignored, oversized=sorted(oversized), unreadable=sorted(unreadable))
