"""Signal combination (seed 001, step 3): effective weights and the per-file signal matrix.

Weights: profile (`data/weights.toml`, fitted by `drivers.tune`; else the seed's defaults) -> task-type
adjustment -> user override -> signals that are zero for every file get 0 -> renormalised to sum 1.
A file's score is its weighted sum times its role prior (source code 1, tests and docs/data less: the
files a fix edits are source files; code under examples/, docs/, benchmarks/ or vendored directories counts as
non-source too); seeds score 1.0 (times that prior: a README named in an issue
template is kept in scope without outranking code) and are ordered among themselves by score.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dataflows.retrieval.models import TaskQuery

# seed 001's eight defaults plus the BM25 signals (contents, symbol chunks, past commits, title); normalised after adjustment
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
    "history_match": 0.10,
    "title_match": 0.20,
}
# seed 001's task-type adjustments: named weights replaced before normalisation
TASK_TYPE_WEIGHTS: dict[str, dict[str, float]] = {
    "bug_fix": {"recency": 0.15, "structural_centrality": 0.0},
    "refactor": {"structural_centrality": 0.15},
    "test": {"symbol_match": 0.30},
}
SIGNALS: tuple[str, ...] = tuple(DEFAULT_WEIGHTS)
# multipliers by file role; 1.0 would make them neutral
DEFAULT_PRIORS: dict[str, float] = {"test_file_prior": 0.5, "non_source_prior": 0.3}
KNOBS: tuple[str, ...] = SIGNALS + tuple(DEFAULT_PRIORS)
# languages whose files are prose, configuration or data rather than code
NON_SOURCE_LANGUAGES = frozenset(
    {"markdown", "rst", "text", "asciidoc", "toml", "yaml", "json", "ini", "properties", "dotenv", "xml", "sql"}
)
# directories of code that ships beside the project rather than being it: a fix rarely edits them (none of the
# 172 gold files of the development cases is under one), yet their words match issues (bundled copies, examples)
PERIPHERAL_DIRS = (
    r"(?:^|/)(?:examples?|samples?|demos?|benchmarks?|bench|docs?|vendor|vendored|third_party|thirdparty|3rdparty|"
    r"external|bundled|node_modules)/"
)


def _checked_override(weights_override: dict | None) -> dict:
    override = dict(weights_override or {})
    unknown = sorted(set(override) - set(KNOBS))
    if unknown:
        raise ValueError(f"unknown signal weight(s) {unknown}; valid names: {', '.join(KNOBS)}")
    return override


def configured_signal_weights(task_query: TaskQuery, weights_override: dict | None, weight_profile: dict | None) -> pd.Series:
    """Raw weight per signal: profile (or defaults), then the task type's adjustment, then the user's override."""
    profile = weight_profile or {}
    task_types = profile.get("task_types", TASK_TYPE_WEIGHTS)
    weights = {**DEFAULT_WEIGHTS, **profile.get("weights", {}), **task_types.get(task_query.task_type, {})}
    override = {k: v for k, v in _checked_override(weights_override).items() if k in SIGNALS}
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
    history_match: pd.Series,
    title_match: pd.Series,
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
        "history_match": history_match,
        "title_match": title_match,
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


def file_priors(weights_override: dict | None, weight_profile: dict | None) -> pd.Series:
    """Role multipliers in force: profile (or defaults), then the user's override."""
    override = {k: v for k, v in _checked_override(weights_override).items() if k in DEFAULT_PRIORS}
    priors = {**DEFAULT_PRIORS, **(weight_profile or {}).get("priors", {}), **override}
    return pd.Series(priors, dtype=float).clip(0.0, 1.0)


def file_prior(kb_files: pd.DataFrame, file_priors: pd.Series) -> pd.Series:
    """Per-file multiplier by role: 1 for source code, the test prior for tests, the non-source prior for prose/data
    and peripheral code."""
    is_test = kb_files["is_test"].fillna(False).astype(bool).to_numpy()
    non_source = _non_source(kb_files)
    values = np.where(is_test, file_priors["test_file_prior"], np.where(non_source, file_priors["non_source_prior"], 1.0))
    return pd.Series(values, index=pd.Index(kb_files["file_id"], name="file_id"), dtype=float)


def signal_matrix(
    kb_files: pd.DataFrame,
    signal_frame: pd.DataFrame,
    signal_weights: pd.Series,
    seed_files: pd.Series,
    file_prior: pd.Series,
) -> pd.DataFrame:
    """Every file's signals, role prior, score (weighted sum x prior) and total (seeds: 1.0 x prior), best first."""
    weighted = signal_frame[list(signal_weights.index)].mul(signal_weights, axis=1).sum(axis=1).clip(0.0, 1.0)
    seed = signal_frame.index.isin(seed_files.index)
    matrix = signal_frame.copy()
    matrix.insert(0, "path", kb_files.set_index("file_id")["path"].reindex(signal_frame.index))
    matrix["prior"] = file_prior.reindex(signal_frame.index).fillna(1.0)
    matrix["score"] = weighted * matrix["prior"]
    matrix["total"] = matrix["score"].where(~seed, matrix["prior"])  # a seed scores 1.0 times its role prior
    matrix["seed"] = seed
    return matrix.sort_values(["total", "score", "path"], ascending=[False, False, True], kind="stable")


def _non_source(kb_files: pd.DataFrame) -> np.ndarray:
    """Prose/config/data files, and any file under a peripheral directory (examples, docs, vendored code)."""
    peripheral = kb_files["path"].astype(str).str.contains(PERIPHERAL_DIRS, case=False, regex=True).to_numpy(dtype=bool)
    return kb_files["language"].isin(NON_SOURCE_LANGUAGES).to_numpy() | peripheral
