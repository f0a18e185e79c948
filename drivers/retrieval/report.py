"""The human-readable tables of `cra retrieve -v`: a tuning view of a request."""

from __future__ import annotations

import pandas as pd

from cra.dataflows.retrieval.learned import CANDIDATES
from cra.dataflows.retrieval.models import TIER_ORDER

SYMBOL_WIDTH = 70  # characters of a symbol's path::name in the -v table


def signal_table(signal_matrix: pd.DataFrame, weights: dict, top: int = 20) -> str:
    """Top files with each signal's raw value, the weighted total and, when the learned ranker ordered them, its
    score and the sum's own rank."""
    cols = [c for c in weights if c in signal_matrix.columns]
    learned = ["sum_rank", "learned"] if "learned" in signal_matrix.columns else []
    read = ["reader"] if "reader" in signal_matrix.columns else []
    view = signal_matrix.head(top)[["path", *cols, "total", "seed", *learned, *read]].copy()
    view.insert(0, "rank", range(1, len(view) + 1))
    header = "weights: " + ", ".join(f"{k}={v:.3f}" for k, v in weights.items() if v)
    if learned:
        view["sum_rank"] = view["sum_rank"].astype("Int64")
        header += (
            f"\norder: the learned ranker (data/models/file_ranker.json) re-ordered the weighted sum's {CANDIDATES} "
            "best files by its `learned` score; each takes the total of its new place (sum_rank: its place in the sum)"
        )
    if read:
        header += (
            "\nthen: the code reader (--reader) re-ordered the best of them by its `reader` score mixed with their rank"
        )
    return header + "\n" + view.to_string(index=False, float_format=lambda x: f"{x:.3f}", max_colwidth=60, na_rep="-")


def tier_table(symbol_tiers: pd.DataFrame) -> str:
    """Symbols per tier over the scoped files (before the budget)."""
    counts = symbol_tiers["tier"].value_counts().reindex(list(TIER_ORDER), fill_value=0)
    return "symbols per tier: " + ", ".join(f"{tier} {n}" for tier, n in counts.items())


def symbol_table(symbol_ranking: pd.DataFrame, weights: dict, top: int = 15) -> str:
    """The best-ranked symbols with each signal's value and the weighted score (the symbol signal matrix's head)."""
    cols = [c for c in weights if c in symbol_ranking.columns and weights[c]]
    view = symbol_ranking.head(top)
    symbols = [_shown(path, name) for path, name in zip(view["path"], view["qualified_name"])]
    read = ["reader"] if "reader" in view.columns else []
    view = view.assign(symbol=symbols)[["rank", "symbol", *cols, "score", *read]]
    header = "symbol weights: " + ", ".join(f"{k}={v:.3f}" for k, v in weights.items() if v)
    return (
        header
        + "\n"
        + view.to_string(index=False, float_format=lambda x: f"{x:.2f}", max_colwidth=SYMBOL_WIDTH, na_rep="-")
    )


def _shown(path: str, qualified_name: str) -> str:
    """`path::name` as the -v table shows it: a namespace the path already spells (`src/Foo/Bar/Baz.cs::Foo.Bar.Baz.M`)
    is left out, and a name still too long is cut at its start, where pandas would cut its end, the function."""
    dirs, parts = set(path.split("/")[:-1]), qualified_name.split(".")
    while len(parts) > 1 and parts[0] in dirs:
        parts.pop(0)
    name = f"{path}::{'.'.join(parts)}"
    return name if len(name) <= SYMBOL_WIDTH else "…" + name[-(SYMBOL_WIDTH - 1) :]


def auto_line(stop: dict) -> str:
    """Where `--budget auto` stopped adding bodies, and why."""
    return (
        f"budget auto: {stop['bodies']} bodies ({stop['ranked_kept']} ranked symbols kept); stopped: {stop['reason']}"
    )


def budget_table(budget_report: dict, token_count: int, budget: int) -> str:
    """What the budget kept, dropped and demoted."""
    return (
        f"budget: {token_count}/{budget} tokens in the package "
        f"(items before {budget_report.get('before')}, after {budget_report.get('after')}); "
        f"evicted {len(budget_report.get('evicted', []))}, demoted {len(budget_report.get('demoted', []))}, "
        f"classes shown whole {len(budget_report.get('widened', []))}"
    )


def verbose_report(result) -> str:
    """All three tables for one Retrieval."""
    package = result.package
    parts = [
        "task: "
        + ", ".join(f"{k}={v}" for k, v in package.task_query.to_dict().items() if k != "raw_description" and v),
        signal_table(result.signal_matrix, package.provenance.get("weights", {})),
    ]
    named = [f"{row['path']} ({row['seed_reason']})" for row in package.provenance.get("scope", []) if row.get("seed")]
    if named:
        parts.insert(1, "named by the task (seeds): " + "; ".join(named))
    if "symbol_ranking" in result.outputs:
        parts.append(symbol_table(result.outputs["symbol_ranking"], result.outputs.get("symbol_weights", {})))
    if "symbol_tiers" in result.outputs:
        parts.append(tier_table(result.outputs["symbol_tiers"]))
    if package.provenance.get("auto_budget"):
        parts.append(auto_line(package.provenance["auto_budget"]))
    parts.append(
        budget_table(
            result.outputs.get("budget_report", package.provenance.get("budget", {})),
            package.token_count,
            package.budget,
        )
    )
    return "\n\n".join(parts)
