"""Context assembly: the budgeted files become one ordered, deduplicated ContextPackage.

Files by relevance rank, symbols primary -> supporting -> type context (then by line), each symbol once in the
file that defines it, import edges only between files the package contains, provenance for every choice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pandas as pd

from cra.dataflows.retrieval.markdown import edges_between, ordered_files, package_markdown
from cra.dataflows.retrieval.models import CompanionNote, ContextPackage, FileContext, TaskQuery
from cra.dataflows.retrieval.signal_list import SIGNALS
from cra.dataflows.retrieval.symbol_signals import SYMBOL_SIGNALS

RANKING_ROWS = 20  # rows of the symbol ranking the provenance carries


def included_edges(budgeted_files: list[FileContext], context_edges: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """(source path, target path) import edges among the files the package contains, by source then target rank."""
    return edges_between(ordered_files(budgeted_files), context_edges)


def companion_notes(kb_companions: pd.DataFrame | None = None) -> tuple[CompanionNote, ...]:
    """Changelogs / release notes the repository's fixes usually change too (learned at index time), as notes
    shown beside the code instead of files ranked against it."""
    if kb_companions is None or kb_companions.empty:
        return ()
    rows = zip(kb_companions["path"], kb_companions["share"], kb_companions["n_fix_commits"], kb_companions["latest"])
    return tuple(
        CompanionNote(
            str(path),
            f"changed by {share:.0%} of this repository's fix commits ({int(n)}); a fix "
            "usually adds an entry here. Latest entries:",
            str(latest or ""),
        )
        for path, share, n, latest in rows
    )


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
    symbol_ranking: pd.DataFrame | None = None,
    auto_budget_stop: dict | None = None,
    pinned_tokens: int = 0,
    companion_notes: tuple[CompanionNote, ...] = (),
    pinned_sections: tuple = (),  # of PinnedSection (Hamilton checks the plain type only)
    path_scope_report: dict | None = None,
) -> ContextPackage:
    """The curated package for stage 3: pinned sections first, then ordered files, edges among them, companion notes
    when they fit the budget, exact token count, provenance."""
    files = ordered_files(budgeted_files)
    query = dataclasses.replace(task_query, raw_description=budgeted_task_text)
    provenance = {
        "scope": _scope_provenance(scope),
        "weights": {str(k): float(v) for k, v in signal_weights.items()},
        "budget": budget_report | ({"pinned": int(pinned_tokens)} if pinned_sections else {}),
        "warnings": [*scope_warnings, *budget_report.get("warnings", []), *_empty_package_warning(files, scope)],
        "symbols": _symbol_provenance(files, symbol_tiers),
        "symbol_ranking": _ranking_provenance(symbol_ranking),
        **({"auto_budget": auto_budget_stop} if auto_budget_stop else {}),
        **({"path_scope": path_scope_report} if path_scope_report else {}),
        **{p.name: p.provenance for p in pinned_sections},
    }

    def measured(notes: tuple[CompanionNote, ...]) -> int:
        return count_tokens(package_markdown(query.raw_description, files, included_edges, notes, pinned_sections))

    tokens = measured(companion_notes)
    if companion_notes and tokens > budget:  # the notes never push a package over its budget
        companion_notes = ()
        tokens = measured(())
    return ContextPackage(
        query, files, included_edges, tokens, int(budget), provenance, companion_notes, pinned_sections
    )


def _empty_package_warning(files: list[FileContext], scope: pd.DataFrame) -> list[str]:
    """A package without code is worth saying out loud: the agent gets the task and nothing to work from."""
    if files:
        return []
    why = "the scope is empty" if scope.empty else "no file of the scope fitted the budget"
    return [f"the package holds no file ({why}); re-index the repository or raise --budget"]


def _scope_provenance(scope: pd.DataFrame) -> list[dict]:
    """The whole ranked scope: path, rank, total score, seed (and why), how it was added, every signal value."""
    signals = [c for c in SIGNALS if c in scope.columns]
    order = np.argsort(scope["rank"].to_numpy(), kind="stable")
    values = np.round(np.column_stack([scope[s].to_numpy(dtype=float) for s in signals]), 6) if signals else None
    rows = values[order].tolist() if signals else [[] for _ in order]
    columns = (
        scope[c].to_numpy()[order].tolist() for c in ("path", "rank", "total_score", "seed", "seed_reason", "added_by")
    )
    return [
        {
            "path": str(p),
            "rank": int(r),
            "total_score": round(float(t), 6),
            "seed": bool(s),
            "seed_reason": str(why),
            "added_by": str(a),
            "signals": dict(zip(signals, v)),
        }
        | _reader_score(scope, i)
        for i, (p, r, t, s, why, a, v) in zip(order, zip(*columns, rows))
    ]


def _reader_score(frame: pd.DataFrame, i: int) -> dict:
    """{"reader": score} of row i when the code reader scored it (`reranking`), else nothing."""
    if "reader" not in frame.columns:
        return {}
    value = float(frame["reader"].iat[i])
    return {} if np.isnan(value) else {"reader": round(value, 4)}


def _ranking_provenance(symbol_ranking: pd.DataFrame | None) -> list[dict]:
    """The top RANKING_ROWS of the symbol ranking: where each is, its score and every signal's value."""
    if symbol_ranking is None:
        return []
    top = symbol_ranking.head(RANKING_ROWS)
    values = np.round(top[list(SYMBOL_SIGNALS)].to_numpy(dtype=float), 4).tolist()
    columns = (top[c].tolist() for c in ("rank", "path", "qualified_name", "kind", "score"))
    return [
        {
            "rank": int(r),
            "path": str(p),
            "symbol": str(q),
            "kind": str(k),
            "score": round(float(sc), 4),
            "signals": dict(zip(SYMBOL_SIGNALS, v)),
        }
        | _reader_score(top, i)
        for i, (r, p, q, k, sc, v) in enumerate(zip(*columns, values))
    ]


def _symbol_provenance(files: tuple[FileContext, ...], symbol_tiers: pd.DataFrame) -> list[dict]:
    """Every included symbol with its tier, depth and why it was chosen."""
    reasons = None  # the tiers' reasons, looked up only for a symbol that carries none itself
    out = []
    for f in files:
        for shown in f.symbols:
            for s in (shown, *shown.members):  # a class shown whole: its members' lines are in its body
                if not s.reason and reasons is None:
                    reasons = dict(zip(symbol_tiers["symbol_id"], symbol_tiers["reason"]))
                out.append(
                    {
                        "path": f.path,
                        "symbol": s.qualified_name,
                        "tier": s.relevance,
                        "depth": "body" if s.body is not None or s is not shown else "signature",
                        "reason": s.reason or reasons.get(s.symbol_id, ""),
                    }
                    | ({} if s is shown else {"inside": shown.qualified_name})
                )
    return out
