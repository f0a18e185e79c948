"""Imports that name files (C / C++ `#include "x.h"`, Ruby `require`, PHP `require_once`): next to the importing
file, then (unless explicitly relative: level 1) by path suffix anywhere (helper library, not a Hamilton module)."""

from __future__ import annotations

import posixpath
from collections import defaultdict


def by_suffix(paths: list[str], languages: list[str], wanted: frozenset[str]) -> dict[str, list[str]]:
    """Every path suffix ("b/c.h" of "a/b/c.h") -> the paths of the wanted languages ending in it, in file order."""
    out: dict[str, list[str]] = defaultdict(list)
    for path in (p for p, lang in zip(paths, languages) if lang in wanted):
        parts = path.split("/")
        for k in range(len(parts)):
            out["/".join(parts[k:])].append(path)
    return out


def file_path(repo, path: str, target: str, level: int, extensions: tuple[str, ...]):
    """A path import: next to the importer, then (level 0) the file ending in that path closest to the importer
    (repo: a `RepositoryFiles`)."""
    directory = posixpath.dirname(path)
    near = posixpath.normpath(posixpath.join(directory, target))
    for candidate in (near, *(near + e for e in extensions)):
        if candidate in repo.by_path:
            return [(repo.by_path[candidate], None, None)]
    if level:
        return []
    tail = "/".join(p for p in target.split("/") if p not in ("", ".", ".."))
    for key in (tail, *(tail + e for e in extensions)):
        found = repo.by_suffix.get(key)
        if found:
            best = max(found, key=lambda c: (len(posixpath.commonpath([directory, posixpath.dirname(c)])), -len(c)))
            return [(repo.by_path[best], None, None)]
    return []
