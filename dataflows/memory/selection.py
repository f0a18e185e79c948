"""Which memories go out: those that apply to the context, best first, inside a token budget.

Two outputs: `retrieval_result` (the plain / budget-aware query: one budget over the ranked memories) and
`memory_context` (the memory section: 700 universal / 500 language / 300 project tokens of 1,500, scaled to the
budget, what one scope leaves unused passed on to the next). Tokens are those of each memory's rendered line,
counted by the `count_tokens` input (cl100k); a line ends in a newline and the next starts with "-", so the
section costs exactly the heading plus its lines, and both outputs re-check that they stay inside the budget.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from cra.dataflows.memory.models import MemoryContext, MemoryQuery, RetrievalResult, RetrievedMemory

BUCKETS = {"universal": 700, "language": 500, "project": 300}  # the memory section's split of its 1,500 tokens
SECTION_HEADING = "## Memories\n\n"
BUCKET_OF_KIND = {"universal": "universal", "language": "language", "project": "project", "task": "project"}


def in_context(scope_parts: pd.DataFrame, project: str | None, language: str | None, task: str | None) -> pd.Series:
    """True per memory that applies here: universal ones, the context's language, its project's decisions, and
    its task's rules (a task's rules apply only to that task; other languages and projects never)."""
    kind = scope_parts["kind"]
    same_project = scope_parts["project"].eq(project) if project else False
    language_ok = scope_parts["language"].eq(language) if language else False
    task_ok = scope_parts["task"].eq(task) if task else False
    applies = kind.eq("universal") | (kind.eq("language") & language_ok) | (kind.eq("project") & same_project)
    return (applies | (kind.eq("task") & same_project & task_ok)).astype(bool)


def matching_memories(
    memories: pd.DataFrame,
    in_context: pd.Series,
    scope_parts: pd.DataFrame,
    relevance_score: pd.Series,
    relevance_reason: pd.Series,
    memory_age_days: pd.Series,
    memory_query: MemoryQuery,
) -> pd.DataFrame:
    """Memories that apply and pass the query's scope, category and confidence filters, best first (ties: newer,
    then text), with relevance_score, reason and budget bucket columns."""
    keep = in_context & memories["confidence"].astype(float).ge(memory_query.min_confidence)
    if memory_query.scope:
        keep &= memories["scope"].eq(memory_query.scope) | memories["scope"].str.startswith(memory_query.scope + ":")
    if memory_query.category:
        keep &= memories["category"].eq(memory_query.category)
    frame = memories.assign(
        relevance_score=relevance_score,
        reason=relevance_reason,
        age=memory_age_days,
        bucket=scope_parts["kind"].map(BUCKET_OF_KIND),
        kind=scope_parts["kind"],
        language=scope_parts["language"],
        project=scope_parts["project"],
        task=scope_parts["task"],
    )[keep]
    return frame.sort_values(["relevance_score", "age"], ascending=[False, True], kind="stable", na_position="last")


def ranked_memories(matching_memories: pd.DataFrame, memory_query: MemoryQuery) -> pd.DataFrame:
    """The best `max_results` matching memories, best first."""
    return matching_memories.head(max(0, memory_query.max_results))


def memory_lines(ranked_memories: pd.DataFrame) -> pd.Series:
    """Per ranked memory, its markdown bullet: "- [scope tag] content" on one line (tag: language, project or
    project/task; none for universal), ending in a newline."""
    r = ranked_memories
    tag = np.select(
        [r["kind"].eq("language"), r["kind"].eq("project"), r["kind"].eq("task")],
        [
            "[" + r["language"].fillna("") + "] ",
            "[" + r["project"].fillna("") + "] ",
            "[" + r["project"].fillna("") + "/" + r["task"].fillna("") + "] ",
        ],
        "",
    )
    flat = r["content"].astype(str).str.split().str.join(" ")
    return ("- " + pd.Series(tag, index=r.index, dtype=object) + flat + "\n").astype(object)


def memory_tokens(memory_lines: pd.Series, count_tokens: Callable) -> pd.Series:
    """Per ranked memory, the cl100k tokens of its line (what it costs in a budget)."""
    return memory_lines.map(count_tokens).astype(int)


def _fit(costs: np.ndarray, budget: int) -> np.ndarray:
    """Greedy fill in rank order: keep each item that still fits (a long one does not block shorter ones after)."""
    keep, used = np.zeros(len(costs), dtype=bool), 0
    for i, cost in enumerate(costs):
        if used + cost <= budget:
            keep[i], used = True, used + int(cost)
    return keep


def _retrieved(frame: pd.DataFrame) -> tuple[RetrievedMemory, ...]:
    return tuple(
        RetrievedMemory(
            r.content,
            r.scope,
            r.category,
            float(r.confidence),
            r.timestamp,
            round(float(r.relevance_score), 4),
            r.reason,
        )
        for r in frame.itertuples(index=False)
    )


def budgeted_memories(ranked_memories: pd.DataFrame, memory_tokens: pd.Series, budget: int | None) -> pd.DataFrame:
    """The ranked memories whose lines fit the budget together, best first (all of them without a budget)."""
    if budget is None:
        return ranked_memories
    return ranked_memories[_fit(memory_tokens.to_numpy(), budget)]


def retrieval_result(
    budgeted_memories: pd.DataFrame, memory_tokens: pd.Series, matching_memories: pd.DataFrame
) -> RetrievalResult:
    """The query's result: returned memories with score and reason, how many matched, their tokens."""
    return RetrievalResult(
        _retrieved(budgeted_memories),
        len(matching_memories),
        len(budgeted_memories),
        int(memory_tokens.reindex(budgeted_memories.index).sum()),
    )


def memory_allocations(memory_budget: int, count_tokens: Callable) -> pd.Series:
    """Tokens per bucket: 700/500/300 of 1,500, scaled to what the budget leaves after the heading."""
    usable = max(0, memory_budget - count_tokens(SECTION_HEADING))
    shares = pd.Series(BUCKETS, dtype=float)
    allocations = (shares * usable // shares.sum()).astype(int)
    allocations.iloc[0] += usable - allocations.sum()  # rounding remainder to the first bucket
    return allocations


def _section(lines: pd.Series) -> str:
    return SECTION_HEADING + "".join(lines) if len(lines) else ""


def memory_selection(
    ranked_memories: pd.DataFrame,
    memory_lines: pd.Series,
    memory_tokens: pd.Series,
    memory_allocations: pd.Series,
    memory_budget: int,
    count_tokens: Callable,
) -> pd.DataFrame:
    """Ranked memories chosen bucket by bucket (universal, language, project), each within its allocation plus
    what the buckets before it left unused; trimmed from the worst if the whole section measured over budget."""
    keep = pd.Series(False, index=ranked_memories.index)
    carry = 0
    for bucket, allocated in memory_allocations.items():
        rows = ranked_memories.index[ranked_memories["bucket"].eq(bucket)]
        fits = _fit(memory_tokens.reindex(rows).to_numpy(), int(allocated) + carry)
        keep[rows[fits]] = True
        carry += int(allocated) - int(memory_tokens.reindex(rows[fits]).sum())
    chosen = list(ranked_memories.index[keep])
    while chosen and count_tokens(_section(memory_lines.reindex(chosen))) > memory_budget:
        chosen.pop()
    return ranked_memories.loc[chosen]


def memory_budget_use(
    memory_selection: pd.DataFrame, memory_tokens: pd.Series, memory_allocations: pd.Series
) -> pd.DataFrame:
    """Per bucket: tokens allocated, carried in from the buckets before, and used."""
    used = memory_tokens.reindex(memory_selection.index).groupby(memory_selection["bucket"]).sum()
    used = used.reindex(memory_allocations.index, fill_value=0).astype(int)
    carried = (memory_allocations - used).cumsum().shift(1, fill_value=0).astype(int)
    return pd.DataFrame({"allocated": memory_allocations.astype(int), "carried_in": carried, "used": used})


def memory_context(
    memory_selection: pd.DataFrame,
    memory_lines: pd.Series,
    memory_tokens: pd.Series,
    memory_budget_use: pd.DataFrame,
    matching_memories: pd.DataFrame,
    memory_budget: int,
    count_tokens: Callable,
) -> MemoryContext:
    """The memory section for a context package: markdown, the memories in it, per-bucket use and total tokens."""
    markdown = _section(memory_lines.reindex(memory_selection.index))
    return MemoryContext(
        markdown=markdown,
        memories=_retrieved(memory_selection),
        buckets=tuple(memory_selection["bucket"]),
        costs=tuple(int(c) for c in memory_tokens.reindex(memory_selection.index)),
        tokens=count_tokens(markdown) if markdown else 0,
        budget=memory_budget,
        allocations={b: {k: int(v) for k, v in row.items()} for b, row in memory_budget_use.iterrows()},
        total_found=len(matching_memories),
    )
