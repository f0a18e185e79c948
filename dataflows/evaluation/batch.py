"""Batch evaluation as one Hamilton DAG: fan out over cases (and over the trees to index), collect results.

The per-item work (materialise a tree, index it, retrieve, score) has side effects, so it arrives as an
input callable (`evaluate_case`, `index_tree`) from the driver; this module only shapes the fan-out, and
runs unchanged on Hamilton's local, multiprocessing, Dask or Ray executors.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from hamilton.htypes import Collect, Parallelizable


def tree_job(tree_jobs: list[dict]) -> Parallelizable[dict]:
    """One repository tree to index (deduplicated by the driver), as a parallel branch."""
    yield from tree_jobs


def indexed_tree(tree_job: dict, index_tree: Callable) -> dict:
    """The outcome of indexing one tree (stats or the reason it failed)."""
    return index_tree(tree_job)


def indexed_trees(indexed_tree: Collect[dict]) -> pd.DataFrame:
    """One row per tree indexed: the join point before cases are evaluated against those trees."""
    return pd.DataFrame(list(indexed_tree))


def case_record(case_jobs: list[dict]) -> Parallelizable[dict]:
    """One evaluation case (a row of the cases frame plus its resolved tree), as a parallel branch."""
    yield from case_jobs


def case_result(case_record: dict, evaluate_case: Callable) -> dict:
    """The metrics of one case (or its skip reason)."""
    return evaluate_case(case_record)


def case_results(case_result: Collect[dict]) -> pd.DataFrame:
    """One row per case, first column case_id, in case order."""
    frame = pd.DataFrame(list(case_result))
    if frame.empty:
        return pd.DataFrame({"case_id": pd.Series(dtype=str)})
    order = frame.pop("case_order") if "case_order" in frame else pd.Series(range(len(frame)))
    frame = frame.iloc[order.argsort(kind="stable").to_numpy()].reset_index(drop=True)
    return frame[["case_id", *[c for c in frame.columns if c != "case_id"]]]
