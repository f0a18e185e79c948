"""Per-task analysis of failed attempts: failure pattern, dominant category, root-cause hypothesis, interventions.

Every node here works on the attempts of many tasks at once (one row per attempt, `task_id` column) and returns a
Series indexed by task_id, so `cra retry --all` and a single report run the same code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.dataflows.escalation.categories import UNKNOWN

PATTERNS = ("single_failure", "consistent", "intermittent_network", "varied")


def _categorised(attempts: pd.DataFrame, attempt_categories: pd.Series) -> pd.DataFrame:
    return pd.DataFrame(
        {"task_id": attempts["task_id"], "attempt_number": attempts["attempt_number"], "category": attempt_categories}
    )


def failure_patterns(attempts: pd.DataFrame, attempt_categories: pd.Series) -> pd.Series:
    """Pattern of each task's failures: one attempt, one category throughout, mostly network, or varied."""
    frame = _categorised(attempts, attempt_categories)
    groups = frame.groupby("task_id", sort=False)["category"]
    n, distinct = groups.size(), groups.nunique()
    network = frame["category"].eq("network").groupby(frame["task_id"], sort=False).sum()
    pattern = np.select([n == 1, distinct == 1, network * 2 > n], list(PATTERNS[:3]), PATTERNS[3])
    return pd.Series(pattern, index=n.index, name="failure_pattern")


def category_counts(attempts: pd.DataFrame, attempt_categories: pd.Series) -> pd.DataFrame:
    """Attempts per (task, category), most frequent first, ties broken by the most recent attempt."""
    frame = _categorised(attempts, attempt_categories)
    counts = frame.groupby(["task_id", "category"], sort=False).agg(
        attempts=("attempt_number", "size"), latest=("attempt_number", "max")
    )
    return counts.sort_values(["attempts", "latest"], ascending=False, kind="stable").reset_index()


def dominant_categories(category_counts: pd.DataFrame) -> pd.Series:
    """Each task's most frequent error category (ties: the most recent): what the report is about."""
    return category_counts.groupby("task_id", sort=False)["category"].first().rename("error_category")


def attempt_totals(attempts: pd.DataFrame) -> pd.Series:
    """Number of recorded attempts per task."""
    return attempts.groupby("task_id", sort=False).size().rename("total_attempts")


def _texts(category_texts: dict, category: str) -> dict:
    return {**category_texts.get(UNKNOWN, {}), **category_texts.get(category, {})}


def root_cause_hypotheses(
    failure_patterns: pd.Series,
    dominant_categories: pd.Series,
    category_counts: pd.DataFrame,
    attempt_totals: pd.Series,
    category_texts: dict,
    pattern_texts: dict,
) -> pd.Series:
    """One-sentence hypothesis per task from its pattern's template and its category's cause (deterministic)."""
    breakdown = category_counts.assign(part=category_counts["category"] + " " + category_counts["attempts"].astype(str))
    breakdowns = breakdown.groupby("task_id", sort=False)["part"].agg(", ".join)
    network = category_counts[category_counts["category"].eq("network")].set_index("task_id")["attempts"]
    out = {}
    for task_id, pattern in failure_patterns.items():
        category = dominant_categories[task_id]
        out[task_id] = pattern_texts[pattern]["hypothesis"].format(
            category=category,
            cause=_texts(category_texts, category).get("cause", ""),
            n=attempt_totals[task_id],
            network=int(network.get(task_id, 0)),
            breakdown=breakdowns[task_id],
        )
    return pd.Series(out, dtype=object, name="root_cause_hypothesis")


def suggested_interventions(
    failure_patterns: pd.Series, dominant_categories: pd.Series, category_texts: dict, pattern_texts: dict
) -> pd.Series:
    """Actionable steps per task: its category's interventions, then its pattern's (deterministic, no duplicates)."""
    out = {}
    for task_id, pattern in failure_patterns.items():
        steps = [
            *_texts(category_texts, dominant_categories[task_id]).get("interventions", ()),
            *pattern_texts[pattern].get("interventions", ()),
        ]
        out[task_id] = tuple(dict.fromkeys(steps))
    return pd.Series(out, dtype=object, name="suggested_interventions")
