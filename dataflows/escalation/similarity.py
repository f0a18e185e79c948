"""Similar past failures: earlier escalated tasks of the same category whose error messages are
lexically close to this task's (BM25 of `cra.dataflows.lexical`), listed with the guidance they were given."""

from __future__ import annotations

import pandas as pd

from cra.dataflows.escalation.models import SimilarFailure
from cra.dataflows.lexical import Bm25Index
from cra.dataflows.text import term_counts

SIMILAR_LIMIT = 3  # at most this many in a report
MIN_SIMILARITY = 0.3  # BM25 score relative to the best a past task could reach (see similar_past_failures)


def task_messages(task_id: str, attempts: pd.DataFrame) -> str:
    """All error messages of this task, oldest first: what its failures are compared on."""
    return "\n".join(attempts.loc[attempts["task_id"].eq(task_id), "error_message"].astype(str))


def similar_past_failures(
    task_id: str, task_messages: str, dominant_categories: pd.Series, past_failures: pd.DataFrame
) -> tuple[SimilarFailure, ...]:
    """Up to SIMILAR_LIMIT earlier escalated tasks of this task's category with close messages, closest first.

    past_failures: one row per earlier escalated task (task_id, title, error_category, failure_pattern,
    error_message, messages, status, resolution).
    """
    category = dominant_categories.get(task_id)
    past = past_failures[past_failures["error_category"].eq(category) & past_failures["task_id"].ne(task_id)]
    if past.empty or not task_messages.strip():
        return ()
    docs = pd.concat([past[["task_id", "messages"]], pd.DataFrame({"task_id": [task_id], "messages": [task_messages]})])
    terms = pd.DataFrame(
        [
            (doc, term, tf)
            for doc, text in zip(docs["task_id"], docs["messages"])
            for term, tf in term_counts(text).items()
        ],
        columns=["task_id", "term", "tf"],
    )
    index = Bm25Index.from_terms(terms, "task_id")
    query = [term for term, tf in term_counts(task_messages).items() for _ in range(tf)]
    scores = index.scores(query)
    # the best a past task can do: match every term of ours that any past task has (our unique words, such as
    # host names and ids, cannot make two failures alike, so they do not count against closeness)
    shared = [term for term in query if index.document_frequency(term) > 1]
    best = index.scores(shared).get(task_id, 0.0)
    if best <= 0:
        return ()
    similarity = (scores.reindex(past["task_id"]).fillna(0.0) / best).clip(upper=1.0).to_numpy()
    ranked = past.assign(similarity=similarity)
    ranked = ranked[ranked["similarity"] >= MIN_SIMILARITY].sort_values("similarity", ascending=False, kind="stable")
    return tuple(
        SimilarFailure(
            task_id=row.task_id,
            title=row.title,
            error_category=row.error_category,
            failure_pattern=row.failure_pattern,
            error_message=row.error_message,
            similarity=round(float(row.similarity), 3),
            status=row.status,
            resolution=None if pd.isna(row.resolution) else row.resolution,
        )
        for row in ranked.head(SIMILAR_LIMIT).itertuples(index=False)
    )
