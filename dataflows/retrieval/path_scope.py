"""The path scope (`cra retrieve --path`, the MCP tools' `scope`): a candidate filter between scoring and ranking, so
the ranking, the learned re-ranker, the import and co-change expansion, the tiers and the budget see in-scope files
only and the budget is filled with them.

Signals are still computed over the whole KB (BM25 statistics, centrality and import distances are the repository's),
but only in-scope files are ranked. Graph expansion never pulls in an out-of-scope file: the expansion's neighbours
are kept only where they are candidates. The one way in from outside is being named by the task itself: a file hint
(`see django/utils/timezone.py`) or a stack-trace frame; such a seed is kept, and the provenance lists it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.dataflows.path_globs import matches_per_pattern, matching

# seed reasons (`signals.seed_files`) that name a file by its path: the task's own words, so kept outside the scope
_NAMED_BY_PATH = ("file hint '", "trace frame '")


def in_path_scope(kb_files: pd.DataFrame, path_scope: tuple = ()) -> pd.Series:
    """file_id -> inside the path scope (every file when no scope is given), in KB order."""
    index = pd.Index(kb_files["file_id"], name="file_id")
    return pd.Series(matching(kb_files["path"], tuple(path_scope)), index=index, name="in_scope")


def path_scope_counts(kb_files: pd.DataFrame, path_scope: tuple = ()) -> dict[str, int]:
    """pattern -> how many indexed files it matches: a pattern matching none is an error the driver reports."""
    return matches_per_pattern(kb_files["path"], tuple(path_scope))


def named_outside_scope(seed_files: pd.Series, in_path_scope: pd.Series) -> pd.Index:
    """Seeds outside the path scope that the task names by path (file hint, trace frame): kept as candidates."""
    if not len(seed_files) or bool(in_path_scope.all()):
        return pd.Index([], dtype="int64", name="file_id")
    reasons = seed_files.astype(str)
    named = np.zeros(len(reasons), dtype=bool)
    for prefix in _NAMED_BY_PATH:
        named |= reasons.str.contains(prefix, regex=False).to_numpy(dtype=bool)
    inside = in_path_scope.reindex(seed_files.index).fillna(False).to_numpy(dtype=bool)
    return seed_files.index[named & ~inside]


def candidate_matrix(
    summed_matrix: pd.DataFrame, in_path_scope: pd.Series, named_outside_scope: pd.Index
) -> pd.DataFrame:
    """The scored files retrieval may rank, best first: those in the path scope and those the task names by path
    (every file when no scope is given)."""
    if bool(in_path_scope.all()):
        return summed_matrix
    inside = in_path_scope.reindex(summed_matrix.index).fillna(False).to_numpy(dtype=bool)
    keep = inside | summed_matrix.index.isin(named_outside_scope)
    return summed_matrix[keep]


def path_scope_report(
    kb_files: pd.DataFrame, in_path_scope: pd.Series, named_outside_scope: pd.Index, path_scope: tuple = ()
) -> dict:
    """What the JSON provenance says of the path scope: the patterns, how many indexed files each side of it, and
    the out-of-scope files kept because the task names them. Empty when no scope was given."""
    if not len(path_scope):
        return {}
    paths = pd.Series(kb_files["path"].to_numpy(), index=pd.Index(kb_files["file_id"]))
    inside = int(in_path_scope.sum())
    return {
        "paths": list(path_scope),
        "files_in_scope": inside,
        "files_out_of_scope": len(in_path_scope) - inside,
        "named_outside": sorted(str(p) for p in paths.reindex(named_outside_scope).dropna()),
    }


def path_scope_warnings(path_scope_report: dict) -> list[str]:
    """What the user should know the path scope left out (one line), and which named files it let in."""
    if not path_scope_report:
        return []
    r = path_scope_report
    shown = ", ".join(r["paths"])
    total = r["files_in_scope"] + r["files_out_of_scope"]
    out = [
        f"path scope {shown}: {r['files_in_scope']:,} of {total:,} indexed files in scope; "
        f"{r['files_out_of_scope']:,} out of scope were not ranked"
    ]
    if r["named_outside"]:
        named = ", ".join(r["named_outside"][:3]) + (" ..." if len(r["named_outside"]) > 3 else "")
        n = len(r["named_outside"])
        out.append(f"kept {n} out-of-scope file{'s' if n > 1 else ''} the task names by path: {named}")
    return out
