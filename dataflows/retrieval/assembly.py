"""Context assembly (seed 001 step 6): the budgeted files become one ordered, deduplicated ContextPackage.

Files by relevance rank, symbols primary -> supporting -> type context (then by line), each symbol once in the
file that defines it, import edges only between files the package contains, provenance for every choice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from dataflows.retrieval.combination import SIGNALS
from dataflows.retrieval.models import ContextPackage, FileContext, TaskQuery
from dataflows.retrieval.render import _TIER_ORDER, _markdown



def included_edges(budgeted_files: list[FileContext], kb_edges: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """(source path, target path) import edges among the files the package contains, by source then target rank."""
    return _edges_between(_ordered_files(budgeted_files), kb_edges)


def context_package(
    task_query: TaskQuery,
    budgeted_task_text: str,
    budgeted_files: list[FileContext],
    included_edges: tuple[tuple[str, str], ...],
    budget: int,
    budget_report: dict,
    scope: pd.DataFrame,
    signal_weights: pd.Series,
    scope_warnings: list[str],
    symbol_tiers: pd.DataFrame,
    count_tokens: Callable,
) -> ContextPackage:
    """The curated package for stage 3: ordered files, edges among them, exact token count, provenance."""
    files = _ordered_files(budgeted_files)
    query = dataclasses.replace(task_query, raw_description=budgeted_task_text)
    provenance = {
        "scope": _scope_provenance(scope),
        "weights": {str(k): float(v) for k, v in signal_weights.items()},
        "budget": budget_report,
        "warnings": [*scope_warnings, *budget_report.get("warnings", [])],
        "symbols": _symbol_provenance(files, symbol_tiers),
    }
    tokens = count_tokens(_markdown(query.raw_description, files, included_edges))
    return ContextPackage(query, files, included_edges, tokens, int(budget), provenance)


def _ordered_files(files: Iterable[FileContext]) -> tuple[FileContext, ...]:
    """Files by rank, symbols primary -> supporting -> type_context then line, each symbol once (in its own file)."""
    files = sorted(files, key=lambda f: (f.relevance_rank, f.path))
    home = {s.symbol_id for f in files for s in f.symbols if s.file_id == f.file_id}
    seen: set[int] = set()
    out = []
    for f in files:
        keep = []
        for s in sorted(f.symbols, key=lambda s: (_TIER_ORDER.get(s.relevance, 9), s.start_line, s.symbol_id)):
            if s.symbol_id in seen or (s.file_id != f.file_id and s.symbol_id in home):
                continue
            seen.add(s.symbol_id)
            keep.append(s)
        if keep or f.test_assertions:
            out.append(dataclasses.replace(f, symbols=tuple(keep)))
    return tuple(out)


def _edges_between(files: tuple[FileContext, ...], kb_edges: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """Import edges whose both ends are among `files`, as path pairs, self-loops and duplicates dropped."""
    ids = np.fromiter((f.file_id for f in files), dtype=np.int64, count=len(files))
    src, dst = kb_edges["src_file_id"].to_numpy(dtype=np.int64), kb_edges["dst_file_id"].to_numpy(dtype=np.int64)
    keep = np.flatnonzero(np.isin(src, ids) & np.isin(dst, ids) & (src != dst))
    if not len(keep):
        return ()
    rank = {file_id: i for i, file_id in enumerate(ids.tolist())}
    path = {f.file_id: f.path for f in files}
    pairs = dict.fromkeys(zip(src[keep].tolist(), dst[keep].tolist()))  # distinct, first occurrence kept
    ordered = sorted(pairs, key=lambda e: (rank[e[0]], rank[e[1]]))
    return tuple((path[s], path[d]) for s, d in ordered)


def _scope_provenance(scope: pd.DataFrame) -> list[dict]:
    """The whole ranked scope: path, rank, total score, seed, how it was added, every signal value."""
    signals = [c for c in SIGNALS if c in scope.columns]
    order = np.argsort(scope["rank"].to_numpy(), kind="stable")
    values = np.round(np.column_stack([scope[s].to_numpy(dtype=float) for s in signals]), 6) if signals else None
    rows = values[order].tolist() if signals else [[] for _ in order]
    columns = (scope[c].to_numpy()[order].tolist() for c in ("path", "rank", "total_score", "seed", "added_by"))
    return [
        {
            "path": str(p),
            "rank": int(r),
            "total_score": round(float(t), 6),
            "seed": bool(s),
            "added_by": str(a),
            "signals": dict(zip(signals, v)),
        }
        for p, r, t, s, a, v in zip(*columns, rows)
    ]


def _symbol_provenance(files: tuple[FileContext, ...], symbol_tiers: pd.DataFrame) -> list[dict]:
    """Every included symbol with its tier, depth and why it was chosen."""
    reasons = None  # the tiers' reasons, looked up only for a symbol that carries none itself
    out = []
    for f in files:
        for s in f.symbols:
            if not s.reason and reasons is None:
                reasons = dict(zip(symbol_tiers["symbol_id"], symbol_tiers["reason"]))
            out.append({
                "path": f.path,
                "symbol": s.qualified_name,
                "tier": s.relevance,
                "depth": "body" if s.body is not None else "signature",
                "reason": s.reason or reasons.get(s.symbol_id, ""),
            })
    return out
