"""How relevant each memory is to the current context (weighted factors, one node per factor).

Inputs: `memories` (one row per memory: content, scope, category, confidence, timestamp), the context (`project`,
`language`, `task`, `task_text`) and `now`. Every factor is a 0-1 Series over the memories' index;
`relevance_factors` joins them so a notebook can look at every column, `relevance_score` weighs them.

Weights: scope 0.5, recency 0.2, confidence 0.2, task 0.1. When a task text is given, those four keep
80% of the weight and `lexical_relevance` (BM25 of the task text against each memory, 0-1) takes 20%. A full
lexical match is then worth 0.2, more than the whole recency range (0.16 x 0.8): within a scope, the memory about
the task comes first; across scopes it can lift a universal memory about the task (0.8 x 0.4) over an unrelated
decision of the project (0.9 x 0.4), while the task's own rules (1.0 x 0.4 + task match) stay on top.
"""

from __future__ import annotations

from datetime import datetime
from itertools import chain

import numpy as np
import pandas as pd

from cra.dataflows.lexical import Bm25Index
from cra.dataflows.text import terms

# A scope table could give the context's language 1.0, above its project (0.9), yet the expected order and the priority
# list rank task > project > language > universal ("language 0.8-1.0"): 0.85 keeps both.
OWN_LANGUAGE = 0.85
SEED_WEIGHTS = {"scope_match": 0.5, "recency": 0.2, "confidence": 0.2, "task_match": 0.1}
LEXICAL_SHARE = 0.2  # of the whole score, when a task text is given
AGE_STEPS = (7, 30, 90, 180)  # days: recency 1.0 below 7, 0.8 below 30, 0.6 below 90, 0.4 below 180, else 0.2
AGE_VALUES = (1.0, 0.8, 0.6, 0.4)
OLD_AGE = 0.2
UNKNOWN_AGE = 0.5
NO_TASK, OTHER_TASK = 0.5, 0.3  # task_match when the context names no task / another task
ABOUT_THE_TASK = 0.5  # lexical_relevance from which the reason says "about the task"


def scope_parts(memories: pd.DataFrame) -> pd.DataFrame:
    """Per memory: kind (universal|language|project|task|other), language, project and task, parsed from its scope
    (each distinct scope parsed once: a store has a handful of scopes and thousands of memories)."""
    codes, scopes = pd.factorize(memories["scope"].astype(str))
    p = pd.Series(scopes, dtype=object).str.split(":", n=3, expand=True).reindex(columns=range(4))
    is_project = p[0].eq("project") & p[1].notna()
    is_task = is_project & p[2].eq("task") & p[3].notna()
    kind = np.select(
        [p[0].eq("universal"), p[0].eq("language") & p[1].notna(), is_task, is_project],
        ["universal", "language", "task", "project"],
        "other",
    )
    distinct = pd.DataFrame(
        {
            "kind": kind,
            "language": p[1].where(p[0].eq("language")),
            "project": p[1].where(is_project),
            "task": p[3].where(is_task),
        }
    ).astype(object)
    return distinct.iloc[codes].set_axis(memories.index)


def _same(column: pd.Series, value: str | None) -> pd.Series:
    """Per memory: whether the column equals the context's value (never, when the context has none)."""
    return column.eq(value) if value else pd.Series(False, index=column.index)


def scope_match(scope_parts: pd.DataFrame, project: str | None, language: str | None, task: str | None) -> pd.Series:
    """0-1 per memory: how closely its scope fits the context (own task 1.0, own project 0.9,
    own language 0.85, universal 0.8, same project's other task 0.7, other language 0.3, other project 0.2)."""
    kind, same_project = scope_parts["kind"], _same(scope_parts["project"], project)
    values = np.select(
        [
            kind.eq("universal"),
            kind.eq("language") & _same(scope_parts["language"], language),
            kind.eq("language"),
            kind.isin(["project", "task"]) & ~same_project,
            kind.eq("project"),
            kind.eq("task") & _same(scope_parts["task"], task),
            kind.eq("task"),
        ],
        [0.8, OWN_LANGUAGE, 0.3, 0.2, 0.9, 1.0, 0.7],
        0.5,
    )
    return pd.Series(values, index=scope_parts.index, dtype=float)


def memory_age_days(memories: pd.DataFrame, now: datetime) -> pd.Series:
    """Days from each memory's timestamp to `now` (NaN when it does not parse; naive times are taken as UTC)."""
    stamps = pd.to_datetime(memories["timestamp"], errors="coerce", utc=True, format="ISO8601")
    moment = pd.Timestamp(now)
    moment = moment.tz_localize("UTC") if moment.tzinfo is None else moment.tz_convert("UTC")
    return ((moment - stamps).dt.total_seconds() / 86_400.0).astype(float)


def recency(memory_age_days: pd.Series) -> pd.Series:
    """0-1 per memory: a decay by whole days of age (1.0 under a week ... 0.2 from half a year; 0.5 unknown)."""
    days = np.floor(memory_age_days.to_numpy(dtype=float))
    with np.errstate(invalid="ignore"):
        values = np.select([days < step for step in AGE_STEPS], AGE_VALUES, OLD_AGE)
    return pd.Series(np.where(np.isnan(days), UNKNOWN_AGE, values), index=memory_age_days.index)


def confidence(memories: pd.DataFrame) -> pd.Series:
    """0-1 per memory: how sure whoever stored it was (1.0 when not said)."""
    return pd.to_numeric(memories["confidence"], errors="coerce").fillna(1.0).clip(0.0, 1.0).astype(float)


def task_match(scope_parts: pd.DataFrame, task: str | None) -> pd.Series:
    """0-1 per memory: 1.0 for a rule of the context's task, 0.3 otherwise, 0.5 for all when no task is given."""
    if not task:
        return pd.Series(NO_TASK, index=scope_parts.index)
    return pd.Series(np.where(scope_parts["task"].eq(task), 1.0, OTHER_TASK), index=scope_parts.index)


def task_text_terms(task_text: str | None) -> list[str]:
    """Index terms of the task text (empty without one): the query of `lexical_relevance`."""
    return terms(task_text or "")


def _postings(contents: pd.Series) -> pd.DataFrame:
    """(memory, term, tf) of each text's `terms`. terms() never joins across whitespace, so each distinct
    whitespace token is analysed once and the counts are made with arrays (10,000 memories: ~0.1 s, not ~0.5 s)."""
    split = [str(text).split() for text in contents]
    per_text = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
    tokens = np.fromiter(chain.from_iterable(split), dtype=object, count=int(per_text.sum()))
    token_codes, distinct = pd.factorize(tokens)
    token_terms = [terms(token) for token in distinct]
    n_terms = np.fromiter(map(len, token_terms), dtype=np.int64, count=len(token_terms))
    flat = np.fromiter(chain.from_iterable(token_terms), dtype=object, count=int(n_terms.sum()))
    term_codes, vocab = pd.factorize(flat)
    if not len(vocab):
        return pd.DataFrame({"memory": [], "term": [], "tf": []})
    lens = n_terms[token_codes]  # terms of each token occurrence, laid out one after another
    first = np.repeat((np.cumsum(n_terms) - n_terms)[token_codes], lens)
    within = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
    text_of = np.repeat(np.repeat(np.arange(len(split)), per_text), lens)
    keys, tf = np.unique(text_of * len(vocab) + term_codes[first + within], return_counts=True)
    return pd.DataFrame(
        {
            "memory": contents.index.to_numpy()[keys // len(vocab)],
            "term": np.asarray(vocab, dtype=object)[keys % len(vocab)],
            "tf": tf,
        }
    )


def lexical_relevance(memories: pd.DataFrame, task_text_terms: list[str]) -> pd.Series:
    """0-1 per memory: BM25 of the task text against its content, divided by the best memory's (0 without text)."""
    zeros = pd.Series(0.0, index=memories.index)
    if not task_text_terms or memories.empty:
        return zeros
    postings = _postings(memories["content"])
    if postings.empty:
        return zeros
    scores = Bm25Index.from_terms(postings, "memory").scores(task_text_terms).reindex(memories.index, fill_value=0.0)
    best = scores.max()
    return scores / best if best > 0 else zeros


def relevance_factors(
    scope_match: pd.Series,
    recency: pd.Series,
    confidence: pd.Series,
    task_match: pd.Series,
    lexical_relevance: pd.Series,
) -> pd.DataFrame:
    """One row per memory, one column per factor: what `relevance_score` weighs, in one place to look at."""
    return pd.DataFrame(
        {
            "scope_match": scope_match,
            "recency": recency,
            "confidence": confidence,
            "task_match": task_match,
            "lexical_relevance": lexical_relevance,
        }
    )


def relevance_weights(task_text_terms: list[str]) -> pd.Series:
    """Weight per factor: 0.5/0.2/0.2/0.1; with a task text those take 80% and lexical_relevance 20%."""
    weights = pd.Series({**SEED_WEIGHTS, "lexical_relevance": 0.0})
    if task_text_terms:
        weights = weights * (1.0 - LEXICAL_SHARE)
        weights["lexical_relevance"] = LEXICAL_SHARE
    return weights


def relevance_score(relevance_factors: pd.DataFrame, relevance_weights: pd.Series) -> pd.Series:
    """0-1 per memory: the weighted sum of its factors."""
    return (relevance_factors[relevance_weights.index] * relevance_weights).sum(axis=1).clip(0.0, 1.0)


def relevance_reason(
    scope_parts: pd.DataFrame,
    memory_age_days: pd.Series,
    confidence: pd.Series,
    lexical_relevance: pd.Series,
    project: str | None,
    language: str | None,
    task: str | None,
) -> pd.Series:
    """Per memory, why it matched (universal / lang:L / project / task:T, recent / old,
    high-conf; plus "about the task" for a strong lexical match; "default" when nothing stands out)."""
    kind, same_project = scope_parts["kind"], _same(scope_parts["project"], project)
    scope = np.select(
        [
            kind.eq("universal"),
            kind.eq("language") & _same(scope_parts["language"], language),
            kind.eq("task") & same_project & _same(scope_parts["task"], task),
            kind.isin(["project", "task"]) & same_project,
        ],
        [1, 2, 3, 4],
        0,
    )
    days = np.floor(memory_age_days.to_numpy(dtype=float))
    with np.errstate(invalid="ignore"):
        age = np.select([days < AGE_STEPS[0], days > AGE_STEPS[2]], [1, 2], 0)
    sure = (confidence.to_numpy() >= 0.8).astype(int)
    about = (lexical_relevance.to_numpy() >= ABOUT_THE_TASK).astype(int)
    names = (
        ("", "universal", f"lang:{language}", f"task:{task}", "project"),
        ("", "recent", "old"),
        ("", "high-conf"),
        ("", "about the task"),
    )
    keys = ((scope * 3 + age) * 2 + sure) * 2 + about  # a handful of distinct reasons: join each once
    distinct, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    labels = [
        ", ".join(n[c[i]] for n, c in zip(names, (scope, age, sure, about)) if n[c[i]]) or "default" for i in first
    ]
    return pd.Series(np.asarray(labels, dtype=object)[inverse.ravel()], index=scope_parts.index, dtype=object)
