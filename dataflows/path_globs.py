"""Repository path globs, shared by the retrieval's path scope (`cra retrieve --path`) and `.cra.toml`'s include and
exclude lists: one meaning for both. A pattern is relative to the repository root; `**` spans any number of folders,
`*` and `?` stay within one name, `[...]` is a character class; a pattern matches a path or any folder above it, so
`django/db`, `django/db/` and `django/db/**` all name the whole subtree. Pure functions, no I/O."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (loaded by `matching` only: `.cra.toml`'s globs are read by every `cra index`, unchanged tree too)
    import numpy as np
    import pandas as pd

_GLOB_CHARS = frozenset("*?[")


def normalised_pattern(pattern: str) -> str:
    """The pattern as paths are stored (posix, no leading `./`, no trailing `/`); ValueError saying what is wrong
    when it is empty, absolute or climbs out of the repository with `..`."""
    if not isinstance(pattern, str):
        raise ValueError(f"{pattern!r} is not a path: give a string such as 'services/api'")
    text = pattern.strip().replace("\\", "/")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if text.startswith("/"):
        raise ValueError(f"'{pattern}' is absolute: give it relative to the repository root, e.g. 'services/api'")
    if ".." in parts:
        raise ValueError(f"'{pattern}' leaves the repository ('..'): give a path inside it, e.g. 'services/api'")
    if not parts and text not in (".", "./"):
        raise ValueError("an empty path names nothing: give a folder or a glob such as 'services/api'")
    return "/".join(parts) or "."


def glob_regex(pattern: str) -> str:
    """The regular expression (source) a normalised pattern stands for: the path itself or anything beneath it."""
    if pattern == ".":
        return ".*"
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body[0] in "!^" else body).replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out) + "(?:/.*)?"


def is_glob(pattern: str) -> bool:
    """Does the pattern hold a wildcard (else it names one folder or file)?"""
    return any(c in _GLOB_CHARS for c in pattern)


def matching(paths: pd.Series, patterns: tuple[str, ...] | list[str]) -> np.ndarray:
    """Per path: does any of the (normalised) patterns match it; every path when there is no pattern."""
    import numpy as np

    if not len(patterns):
        return np.ones(len(paths), dtype=bool)
    if not len(paths):
        return np.zeros(0, dtype=bool)
    regex = "^(?:" + "|".join(f"(?:{glob_regex(p)})" for p in patterns) + ")$"
    return paths.astype(str).str.match(regex).to_numpy(dtype=bool)


def matches_per_pattern(paths: pd.Series, patterns: tuple[str, ...] | list[str]) -> dict[str, int]:
    """pattern -> how many of the paths it matches (a pattern matching none is most likely a typo)."""
    return {p: int(matching(paths, (p,)).sum()) for p in patterns}
