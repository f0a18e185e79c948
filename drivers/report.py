"""The human-readable tables of `cra retrieve -v`: the seed's tuning view of a request."""

from __future__ import annotations

import pandas as pd

from dataflows.retrieval.models import TIER_ORDER


def signal_table(signal_matrix: pd.DataFrame, weights: dict, top: int = 20) -> str:
    """Top files with each signal's raw value and the weighted total."""
    cols = [c for c in weights if c in signal_matrix.columns]
    view = signal_matrix.head(top)[["path", *cols, "total", "seed"]].copy()
    view.insert(0, "rank", range(1, len(view) + 1))
    header = "weights: " + ", ".join(f"{k}={v:.3f}" for k, v in weights.items() if v)
    return header + "\n" + view.to_string(index=False, float_format=lambda x: f"{x:.3f}", max_colwidth=60)


def tier_table(symbol_tiers: pd.DataFrame) -> str:
    """Symbols per tier over the scoped files (before the budget)."""
    counts = symbol_tiers["tier"].value_counts().reindex(list(TIER_ORDER), fill_value=0)
    return "symbols per tier: " + ", ".join(f"{tier} {n}" for tier, n in counts.items())


def budget_table(budget_report: dict, token_count: int, budget: int) -> str:
    """What the budget kept, dropped and demoted."""
    return (
        f"budget: {token_count}/{budget} tokens in the package "
        f"(items before {budget_report.get('before')}, after {budget_report.get('after')}); "
        f"evicted {len(budget_report.get('evicted', []))}, demoted {len(budget_report.get('demoted', []))}"
    )


def verbose_report(result) -> str:
    """All three tables for one Retrieval."""
    package = result.package
    parts = [
        "task: " + ", ".join(f"{k}={v}" for k, v in package.task_query.to_dict().items() if k != "raw_description" and v),
        signal_table(result.signal_matrix, package.provenance.get("weights", {})),
    ]
    if "symbol_tiers" in result.outputs:
        parts.append(tier_table(result.outputs["symbol_tiers"]))
    parts.append(budget_table(result.outputs.get("budget_report", package.provenance.get("budget", {})), package.token_count, package.budget))
    return "\n\n".join(parts)
