"""Signal combination: effective weights and the per-file signal matrix.

Two passes: every signal but the second-pass ones (`partner_affinity`) is scored first; the best files of that
first pass are the anchors the second-pass signals relate every other file to; `signal_frame` holds both.

Weights: profile (`data/weights.toml`, fitted by `cra.drivers.research.tune`; else `signal_list`'s defaults) -> task-type
adjustment -> user override -> signals that are zero for every file get 0 -> renormalised to sum 1.
A file's score is its weighted sum times its role prior (source code 1, tests and docs/data less: the
files a fix edits are source files; code under examples/, docs/, benchmarks/ or vendored directories counts as
non-source too); seeds score 1.0 (times that prior: a README named in an issue
template is kept in scope without outranking code) and are ordered among themselves by score.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hamilton.data_quality.base import DataValidator, ValidationResult
from hamilton.function_modifiers import check_output_custom, config, group, inject, source

from cra.dataflows.retrieval.learned import TreeModel, learned_order
from cra.dataflows.retrieval.models import TaskQuery
from cra.dataflows.retrieval.ranking import effective_weights, file_scores, role_prior, roles
from cra.dataflows.retrieval.signal_list import (
    DEFAULT_PRIORS,
    DEFAULT_WEIGHTS,
    FIRST_PASS_SIGNALS,
    PRIOR_SIGNALS,
    SECOND_PASS_SIGNALS,
    SIGNALS,
    TASK_TYPE_WEIGHTS,
    checked_weights,
)

ANCHORS = 3  # first-pass files a second-pass signal relates the others to
_TASK_DEPENDENT = [i for i, name in enumerate(FIRST_PASS_SIGNALS) if name not in PRIOR_SIGNALS]


@config.when(seed_task_types=True)
def seed_task_type_weights__on() -> dict[str, dict[str, float]]:
    """Seed 001's task-type adjustments (bug_fix: recency .15, centrality 0; refactor: centrality .15; test: symbol
    match .30) applied over the profile's weights even where the profile turns them off (`--seed-variants task_types`)."""
    return TASK_TYPE_WEIGHTS


def configured_signal_weights(
    task_query: TaskQuery,
    weights_override: dict | None,
    weight_profile: dict | None,
    seed_task_type_weights: dict | None = None,
) -> pd.Series:
    """Raw weight per signal: profile (or defaults), then the task type's adjustment, then the user's override."""
    profile = weight_profile or {}
    task_types = seed_task_type_weights or profile.get("task_types", TASK_TYPE_WEIGHTS)
    weights = {**DEFAULT_WEIGHTS, **profile.get("weights", {}), **task_types.get(task_query.task_type, {})}
    weights.update({k: v for k, v in checked_weights(weights_override).items() if k in SIGNALS})
    if sum(weights.values()) <= 0:
        raise ValueError("signal weights sum to zero; give at least one signal a positive weight")
    return pd.Series(weights, dtype=float).rename_axis("signal")


class SignalsInUnitRange(DataValidator):
    """Every signal value of every file lies in [0, 1] (what `signal_matrix`'s weighted sum assumes)."""

    def __init__(self, importance: str = "fail"):
        super().__init__(importance)

    def applies_to(self, datatype: type) -> bool:
        return issubclass(datatype, pd.DataFrame)

    def description(self) -> str:
        return "every signal lies in [0, 1]"

    @classmethod
    def name(cls) -> str:
        return "signals_in_unit_range"

    def validate(self, dataset: pd.DataFrame) -> ValidationResult:
        values = dataset.to_numpy(dtype=float)
        outside = ~((values >= 0.0) & (values <= 1.0))
        bad = sorted({str(c) for c in dataset.columns[outside.any(axis=0)]})
        return ValidationResult(
            passes=not bad,
            message=f"signals outside [0, 1]: {bad}" if bad else "all in [0, 1]",
            diagnostics={"signals": bad},
        )


def _frame(kb_files: pd.DataFrame, signals: dict[str, pd.Series], names: tuple[str, ...]) -> pd.DataFrame:
    """The named signals' values over every file (index file_id; missing -> 0)."""
    index = pd.Index(kb_files["file_id"], name="file_id")
    return pd.DataFrame({name: signals[name].reindex(index).fillna(0.0).astype(float) for name in names}, index=index)


@check_output_custom(SignalsInUnitRange())
@inject(signals=group(**{name: source(name) for name in FIRST_PASS_SIGNALS}))
def first_pass_frame(kb_files: pd.DataFrame, signals: dict[str, pd.Series]) -> pd.DataFrame:
    """The values of every signal that needs no anchors (index file_id, one column per first-pass signal)."""
    return _frame(kb_files, signals, FIRST_PASS_SIGNALS)


def anchor_files(
    first_pass_frame: pd.DataFrame,
    configured_signal_weights: pd.Series,
    file_prior: pd.Series,
    seed_files: pd.Series,
    in_path_scope: pd.Series | None = None,
) -> pd.Series:
    """file_id -> its first-pass total as a share of the best one, for the ANCHORS best files of the first pass
    (seeds first; weights in force over the first-pass signals) that the task ties to (a seed, or a task-dependent
    signal above 0): what second-pass signals relate files to. A task with no evidence has no anchors (with history,
    recency alone made every file a partner of the most recent ones, and nothing fell back to the central files).
    With a path scope, anchors are in-scope files: out-of-scope ones are never ranked, so nothing is related to them."""
    configured = configured_signal_weights.reindex(FIRST_PASS_SIGNALS).fillna(0.0).to_numpy()
    values = first_pass_frame[list(FIRST_PASS_SIGNALS)].to_numpy()
    prior = file_prior.reindex(first_pass_frame.index).fillna(1.0).to_numpy()
    seed = first_pass_frame.index.isin(seed_files.index)
    score, total = file_scores(values, effective_weights(configured, (values > 0).any(axis=0)), prior, seed)
    ranked = pd.DataFrame({"total": total, "score": score}, index=first_pass_frame.index)
    evidence = seed | (values[:, _TASK_DEPENDENT] > 0).any(axis=1)  # recency alone ties no file to the task
    if in_path_scope is not None:
        evidence &= in_path_scope.reindex(first_pass_frame.index).fillna(False).to_numpy(dtype=bool)
    ranked = (
        ranked[(ranked["total"] > 0) & evidence]
        .sort_values(["total", "score"], ascending=False, kind="stable")
        .head(ANCHORS)
    )
    share = ranked["total"] / ranked["total"].max() if len(ranked) else ranked["total"]
    return share.rename("share")


@check_output_custom(SignalsInUnitRange())
@inject(second=group(**{name: source(name) for name in SECOND_PASS_SIGNALS}))
def signal_frame(kb_files: pd.DataFrame, first_pass_frame: pd.DataFrame, second: dict[str, pd.Series]) -> pd.DataFrame:
    """The signal values of every file (index file_id, one column per signal of `signal_list.SIGNALS`)."""
    both = first_pass_frame.join(_frame(kb_files, second, SECOND_PASS_SIGNALS))
    return both[list(SIGNALS)]


def signal_weights(configured_signal_weights: pd.Series, signal_frame: pd.DataFrame) -> pd.Series:
    """Effective weight per signal: zero-for-every-file signals get 0, the rest renormalised to sum 1."""
    live = signal_frame.reindex(columns=configured_signal_weights.index).fillna(0.0).gt(0).any()
    weights = effective_weights(configured_signal_weights.to_numpy(), live.to_numpy())
    return pd.Series(weights, index=configured_signal_weights.index, name="weight")


def file_priors(weights_override: dict | None, weight_profile: dict | None) -> pd.Series:
    """Role multipliers in force: profile (or defaults), then the user's override."""
    override = {k: v for k, v in checked_weights(weights_override).items() if k in DEFAULT_PRIORS}
    priors = {**DEFAULT_PRIORS, **(weight_profile or {}).get("priors", {}), **override}
    return pd.Series(priors, dtype=float).clip(0.0, 1.0)


def file_roles(kb_files: pd.DataFrame) -> pd.DataFrame:
    """Per file (index file_id, in KB order): `is_test`, `non_source` (prose/data or peripheral code) and
    `path_rank`. It depends on the KB alone: a loaded KB computes it once (`KnowledgeBase.task_free_overrides`)."""
    return roles(kb_files)


def file_prior(file_roles: pd.DataFrame, file_priors: pd.Series) -> pd.Series:
    """Per-file multiplier by role: 1 for source code, the test prior for tests, the non-source prior for prose/data
    and peripheral code."""
    values = role_prior(
        file_roles["is_test"].to_numpy(),
        file_roles["non_source"].to_numpy(),
        file_priors["test_file_prior"],
        file_priors["non_source_prior"],
    )
    return pd.Series(values, index=file_roles.index, dtype=float)


def summed_matrix(
    kb_files: pd.DataFrame,
    signal_frame: pd.DataFrame,
    signal_weights: pd.Series,
    seed_files: pd.Series,
    file_prior: pd.Series,
    file_roles: pd.DataFrame,
) -> pd.DataFrame:
    """Every file's signals, role prior, score (weighted sum x prior) and total (seeds: 1.0 x prior), best first
    (ties by path)."""
    seed = signal_frame.index.isin(seed_files.index)
    matrix = signal_frame.copy(deep=False)  # (copy-on-write: the columns added below never touch signal_frame)
    matrix.insert(0, "path", _aligned(kb_files["path"], kb_files["file_id"], signal_frame.index))
    matrix["prior"] = _aligned(file_prior, file_prior.index, signal_frame.index, 1.0)
    values = signal_frame[list(signal_weights.index)].to_numpy()
    matrix["score"], matrix["total"] = file_scores(values, signal_weights.to_numpy(), matrix["prior"].to_numpy(), seed)
    matrix["seed"] = seed
    path_rank = np.asarray(_aligned(file_roles["path_rank"], file_roles.index, signal_frame.index, -1), dtype=np.int64)
    return matrix.take(np.lexsort((path_rank, -matrix["score"].to_numpy(), -matrix["total"].to_numpy())))


def _aligned(values: pd.Series, ids, index: pd.Index, fill=None):
    """`values` (one per id of `ids`) in the order of `index`, as the Series' own array type; `fill` where an id is
    missing. Signal frames keep the KB's file order, so this is mostly a comparison, not a reindex of every file."""
    if index.equals(pd.Index(ids)):
        return values.array
    return values.array.take(pd.Index(ids).get_indexer(index), allow_fill=True, fill_value=fill)


def learned_matrix(
    candidate_matrix: pd.DataFrame,
    kb_files: pd.DataFrame,
    task_query: TaskQuery,
    weights_override: dict | None,
    file_roles: pd.DataFrame,
    file_ranker: TreeModel | None = None,
) -> pd.DataFrame:
    """Every candidate file (`path_scope.candidate_matrix`: all of them without a path scope) best first: the
    weighted sum's order with its best files re-ordered by the learned ranker (`learned` column: its score), when one
    is shipped; when the user sets weights, their sum alone decides."""
    if file_ranker is None or weights_override:
        return candidate_matrix
    return learned_order(candidate_matrix, kb_files, task_query.task_type, file_ranker, file_roles)
