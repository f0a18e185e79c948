"""The scope, retrieval's first stage: seed files, top-N by total score, 1-hop import and co-change expansion."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.dataflows.distinct import distinct_difference
from cra.dataflows.retrieval.hints import path_matches
from cra.dataflows.retrieval.import_graph import ImportGraph
from cra.dataflows.retrieval.models import TaskQuery
from cra.dataflows.retrieval.signal_list import PRIOR_SIGNALS, SIGNALS
from cra.dataflows.retrieval.signals import MAX_FILES_PER_FILE_HINT
from cra.dataflows.retrieval.symbol_table import rows_of_ids

MIN_COCHANGE = 3  # co-change partners of a seed join the scope from this many shared commits
FALLBACK_SIZE = 10  # files scoped when nothing matches: the most imported ones
SCOPE_COLUMNS = ["path", "rank", "total_score", "seed", "seed_reason", "added_by", "is_test", *SIGNALS]


def _matching(signal_matrix: pd.DataFrame) -> pd.Series:
    """Per file: a positive total and some task-dependent signal above zero (not only recency/centrality)."""
    some = np.zeros(len(signal_matrix), dtype=bool)
    for signal in (s for s in SIGNALS if s not in PRIOR_SIGNALS):
        some |= signal_matrix[signal].to_numpy() > 0
    return pd.Series((signal_matrix["total"].to_numpy() > 0) & some, index=signal_matrix.index)


def _nothing_matched(signal_matrix: pd.DataFrame, matching: pd.Series | None = None) -> bool:
    """True when there is no seed and no file matches the task (matching: `_matching(signal_matrix)`, if known)."""
    matching = _matching(signal_matrix) if matching is None else matching
    return not signal_matrix["seed"].any() and not matching.any()


def _scored(signal_matrix: pd.DataFrame, scope_size: int, matching: pd.Series | None = None) -> pd.Index:
    """Non-seed matching files, best total first, filling the scope up to scope_size together with the seeds."""
    matching = _matching(signal_matrix) if matching is None else matching
    seed = signal_matrix["seed"].to_numpy(dtype=bool)
    room = max(scope_size - int(seed.sum()), 0)
    return signal_matrix.index[np.flatnonzero(~seed & matching.to_numpy(dtype=bool))[:room]]


def _dependency_neighbours(seeds: pd.Index, kb_import_graph: ImportGraph, kb_files: pd.DataFrame) -> pd.Index:
    """Non-test files importing or imported by a seed (1 hop), ascending."""
    g = kb_import_graph
    if not len(g) or seeds.empty:
        return pd.Index([], dtype="int64")
    seed_ids = seeds.to_numpy()
    neighbours = np.concatenate([g.dst[g.rows_from(seed_ids)], g.src[g.rows_into(seed_ids)]])
    tests = kb_files["file_id"].to_numpy()[kb_files["is_test"].fillna(False).astype(bool).to_numpy()]
    return pd.Index(distinct_difference(neighbours, tests))


def _cochange_partners(seeds: pd.Index, kb_cochange: pd.DataFrame) -> pd.Index:
    """Files sharing at least MIN_COCHANGE commits with a seed."""
    if kb_cochange.empty or seeds.empty:
        return pd.Index([], dtype="int64")
    strong = kb_cochange[kb_cochange["count"] >= MIN_COCHANGE]
    partners = pd.concat(
        [strong.loc[strong["file_a"].isin(seeds), "file_b"], strong.loc[strong["file_b"].isin(seeds), "file_a"]]
    )
    return pd.Index(partners.unique())


def _most_central(signal_matrix: pd.DataFrame) -> pd.Index:
    """The FALLBACK_SIZE most imported files (ties by path)."""
    order = signal_matrix.sort_values(["structural_centrality", "path"], ascending=[False, True], kind="stable")
    return order.index[:FALLBACK_SIZE]


def ranked_candidates(signal_matrix: pd.DataFrame, scope_size: int) -> pd.Series:
    """file_id -> how it entered the scope before expansion: "seed", or "score" for the best matching files up to
    scope_size (nothing matched: the most imported files, as "score")."""
    seeds = signal_matrix.index[signal_matrix["seed"].to_numpy(dtype=bool)]
    matching = _matching(signal_matrix)
    if _nothing_matched(signal_matrix, matching):
        return pd.Series("score", index=_most_central(signal_matrix))
    return pd.concat(
        [pd.Series("seed", index=seeds), pd.Series("score", index=_scored(signal_matrix, scope_size, matching))]
    )


def dependency_expansion(signal_matrix: pd.DataFrame, kb_import_graph: ImportGraph, kb_files: pd.DataFrame) -> pd.Index:
    """Non-test files one import away from a seed (either direction), ascending; none when nothing matched."""
    if _nothing_matched(signal_matrix):
        return pd.Index([], dtype="int64")
    return _dependency_neighbours(
        signal_matrix.index[signal_matrix["seed"].to_numpy(dtype=bool)], kb_import_graph, kb_files
    )


def cochange_expansion(signal_matrix: pd.DataFrame, kb_cochange: pd.DataFrame) -> pd.Index:
    """Files sharing at least MIN_COCHANGE commits with a seed; none when nothing matched."""
    if _nothing_matched(signal_matrix):
        return pd.Index([], dtype="int64")
    return _cochange_partners(signal_matrix.index[signal_matrix["seed"].to_numpy(dtype=bool)], kb_cochange)


def scope(
    signal_matrix: pd.DataFrame,
    kb_files: pd.DataFrame,
    ranked_candidates: pd.Series,
    dependency_expansion: pd.Index,
    cochange_expansion: pd.Index,
    seed_files: pd.Series,
) -> pd.DataFrame:
    """The ranked files retrieval works on: the candidates, then the seeds' import and co-change neighbours; a seed
    says why it is one (`seed_reason`: "file hint 'x.py'", "symbol hint 'tools.cosd'", ...)."""
    labelled = [
        ranked_candidates,
        pd.Series("deps", index=dependency_expansion),
        pd.Series("cochange", index=cochange_expansion),
    ]
    added_by = pd.concat([s for s in labelled if len(s)] or [pd.Series(dtype=object)])
    added_by = added_by[~added_by.index.duplicated(keep="first") & added_by.index.isin(signal_matrix.index)]
    rows = signal_matrix.loc[added_by.index].assign(added_by=added_by.to_numpy())
    rows = rows.rename(columns={"total": "total_score"})
    at = rows_of_ids(kb_files["file_id"], rows.index)
    is_test = (
        kb_files["is_test"].take(np.maximum(at, 0)).fillna(False).astype(bool).to_numpy() if len(kb_files) else False
    )
    rows["is_test"] = np.where(at >= 0, is_test, False)  # (the scoped files' flags only)
    reasons = seed_files.reindex(rows.index).fillna("").astype(str).to_numpy()
    rows["seed_reason"] = np.where(rows["seed"].to_numpy(dtype=bool), reasons, "")
    rows = rows.sort_values(
        ["total_score", "seed", "score", "path"], ascending=[False, False, False, True], kind="stable"
    )
    rows["rank"] = range(1, len(rows) + 1)
    rows.index.name = "file_id"
    return rows[[*SCOPE_COLUMNS, *(["reader"] if "reader" in rows else [])]]  # (the code reader's score)


def scope_warnings(
    signal_matrix: pd.DataFrame,
    kb_files: pd.DataFrame,
    task_query: TaskQuery,
    task_analysis_warnings: list[str],
    kb_warnings: list[str],
    path_scope_warnings: list[str] | None = None,
) -> list[str]:
    """What the user should know about this scope: the index's own warnings (e.g. sources left out, no history),
    LLM fallback, what the path scope left out, unmatched or ambiguous file hints, no matches."""
    warnings = [*kb_warnings, *task_analysis_warnings, *(path_scope_warnings or [])]
    unmatched, broad = [], []
    for hint in task_query.file_hints:
        count = int(path_matches(kb_files["path"], hint).sum()) if not kb_files.empty else 0
        if count == 0:
            unmatched.append(hint)
        elif count > MAX_FILES_PER_FILE_HINT:
            broad.append((hint, count))
    if len(unmatched) == 1:
        warnings.append(f"file hint '{unmatched[0]}' matches no indexed file")
    elif unmatched:
        warnings.append(f"{len(unmatched)} file hints match no indexed file: {_listed(unmatched)}")
    if len(broad) == 1:
        warnings.append(f"file hint '{broad[0][0]}' matches {broad[0][1]} files; none used as seeds")
    elif broad:
        warnings.append(
            f"{len(broad)} file hints match more than {MAX_FILES_PER_FILE_HINT} files each; none used as "
            f"seeds: {_listed([f'{hint} ({count})' for hint, count in broad])}"
        )
    if kb_files.empty:
        warnings.append("the knowledge base has no files; nothing to scope")
    elif _nothing_matched(signal_matrix):
        where = " in the path scope" if path_scope_warnings else ""
        warnings.append(
            f"no file{where} matched the task; scope falls back to the {FALLBACK_SIZE} most imported files{where}"
        )
    return warnings


def _listed(items: list[str], shown: int = 5) -> str:
    """The first few items quoted, then how many more: one warning line however many there are."""
    head = ", ".join(f"'{item}'" for item in items[:shown])
    return head + (f" and {len(items) - shown} more" if len(items) > shown else "")
