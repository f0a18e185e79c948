"""Which indexed paths a file hint or trace-frame path names (a helper of task analysis, signals and scope; not a node)."""

from __future__ import annotations

import re

import pandas as pd


def path_matches(paths: pd.Series, hint: str) -> pd.Series:
    """Which indexed paths a hint names: glob match, or suffix match on path-component boundaries either way.

    A longer hint (an absolute trace path) matches an indexed path of 2+ components that it ends with.
    """
    hint = hint.replace("\\", "/").lstrip("./") if not hint.startswith("*") else hint
    if any(c in hint for c in "*?["):
        pattern = re.escape(hint).replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        return paths.str.fullmatch(rf"(?:.*/)?{pattern}", case=False)
    lower = paths.str.lower()
    hint_lower = hint.lower()
    named = (lower == hint_lower) | lower.str.endswith("/" + hint_lower)
    # suffixes of the hint (2+ components) that could be indexed paths: a handful per hint, not a file loop
    parts = hint_lower.split("/")
    suffixes = {"/".join(parts[i:]) for i in range(1, len(parts) - 1)}
    contained = lower.isin(suffixes)
    return named | contained
