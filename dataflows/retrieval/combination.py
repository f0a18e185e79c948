"""Signal combination (seed 001, step 3): effective weights and the per-file signal matrix.

Weights: defaults (one dict, replaceable by a data file) -> task-type adjustment -> user override ->
signals that are zero for every file get 0 -> renormalised to sum 1.
"""

from __future__ import annotations

import pandas as pd

from dataflows.retrieval.models import TaskQuery

# seed 001's eight defaults plus lexical_match (BM25 over contents); normalised after adjustment
DEFAULT_WEIGHTS: dict[str, float] = {
    "path_match": 0.20,
    "symbol_match": 0.25,
    "dependency_proximity": 0.15,
    "cochange_affinity": 0.10,
    "recency": 0.05,
    "domain_match": 0.10,
    "concept_overlap": 0.10,
    "structural_centrality": 0.05,
    "lexical_match": 0.30,
    "symbol_lexical_match": 0.20,
}
# seed 001's task-type adjustments: named weights replaced before normalisation
TASK_TYPE_WEIGHTS: dict[str, dict[str, float]] = {
    "bug_fix": {"recency": 0.15, "structural_centrality": 0.0},
    "refactor": {"structural_centrality": 0.15},
    "test": {"symbol_match": 0.30},
}
SIGNALS: tuple[str, ...] = tuple(DEFAULT_WEIGHTS)


def configured_signal_weights(task_query: TaskQuery, weights_override: dict | None) -> pd.Series:
    """Raw weight per signal: defaults, then the task type's adjustment, then the user's override."""
    weights = {**DEFAULT_WEIGHTS, **TASK_TYPE_WEIGHTS.get(task_query.task_type, {})}
    override = dict(weights_override or {})
    unknown = sorted(set(override) - set(SIGNALS))
    if unknown:
        raise ValueError(f"unknown signal weight(s) {unknown}; valid names: {', '.join(SIGNALS)}")
    bad = {k: v for k, v in override.items() if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0}
    if bad:
        raise ValueError(f"signal weights must be non-negative numbers; got {bad}")
    weights.update({k: float(v) for k, v in override.items()})
    if sum(weights.values()) <= 0:
        raise ValueError("signal weights sum to zero; give at least one signal a positive weight")
    return pd.Series(weights, dtype=float).rename_axis("signal")


def signal_frame(
    kb_files: pd.DataFrame,
    path_match: pd.Series,
    symbol_match: pd.Series,
    dependency_proximity: pd.Series,
    cochange_affinity: pd.Series,
    recency: pd.Series,
    domain_match: pd.Series,
    concept_overlap: pd.Series,
    structural_centrality: pd.Series,
    lexical_match: pd.Series,
    symbol_lexical_match: pd.Series,
) -> pd.DataFrame:
    """The signal values of every file (index file_id, one column per signal)."""
    columns = {
        "path_match": path_match,
        "symbol_match": symbol_match,
        "dependency_proximity": dependency_proximity,
        "cochange_affinity": cochange_affinity,
        "recency": recency,
        "domain_match": domain_match,
        "concept_overlap": concept_overlap,
        "structural_centrality": structural_centrality,
        "lexical_match": lexical_match,
        "symbol_lexical_match": symbol_lexical_match,
    }
    index = pd.Index(kb_files["file_id"], name="file_id")
    return pd.DataFrame({name: s.reindex(index).fillna(0.0).astype(float) for name, s in columns.items()}, index=index)


def signal_weights(configured_signal_weights: pd.Series, signal_frame: pd.DataFrame) -> pd.Series:
    """Effective weight per signal: zero-for-every-file signals get 0, the rest renormalised to sum 1."""
    live = signal_frame.reindex(columns=configured_signal_weights.index).fillna(0.0).gt(0).any()
    weights = configured_signal_weights.where(live, 0.0)
    if weights.sum() <= 0:  # no signal has data: keep the configured proportions
        weights = configured_signal_weights
    return (weights / weights.sum()).rename("weight")


def signal_matrix(
    kb_files: pd.DataFrame, signal_frame: pd.DataFrame, signal_weights: pd.Series, seed_files: pd.Series
) -> pd.DataFrame:
    """Every file's signals, weighted total and seed flag (seeds' total is 1.0), sorted by total desc."""
    totals = signal_frame[list(signal_weights.index)].mul(signal_weights, axis=1).sum(axis=1).clip(0.0, 1.0)
    seed = signal_frame.index.isin(seed_files.index)
    matrix = signal_frame.copy()
    matrix.insert(0, "path", kb_files.set_index("file_id")["path"].reindex(signal_frame.index))
    matrix["total"] = totals.where(~seed, 1.0)
    matrix["seed"] = seed
    return matrix.sort_values(["total", "path"], ascending=[False, True], kind="stable")
