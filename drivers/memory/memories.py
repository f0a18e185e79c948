"""Runs the memory dataflow: reads the store for a context, builds the Hamilton driver, executes a query.

`query_memories` answers `cra memory query`; `memory_context_for` gives the retrieval driver its memory section
and provenance. The store is read only for the files that apply to the context.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from pathlib import Path

import pandas as pd
from hamilton import driver

from cra.dataflows.memory import relevance, selection
from cra.dataflows.memory.models import MemoryContext, MemoryQuery, RetrievalResult
from cra.drivers.common.errors import CraError
from cra.drivers.common.tokens import count_tokens
from cra.drivers.memory.store import StoreRead, memory_root, read_memories

COLUMNS = ("content", "scope", "category", "confidence", "timestamp", "source")
DEFAULT_MEMORY_BUDGET = 1_500
CONTEXT_MAX_RESULTS = 1_000  # the budget-aware query ranks this many before filling the budget


@lru_cache(maxsize=1)
def memory_driver() -> driver.Driver:
    """The memory DAG (relevance + selection), built once per process."""
    return driver.Builder().with_modules(relevance, selection).build()


def memories_frame(read: StoreRead) -> pd.DataFrame:
    """One row per memory (index memory_id), the columns the dataflow reads."""
    frame = pd.DataFrame.from_records(read.memories, columns=list(COLUMNS))
    frame.index.name = "memory_id"
    return frame.astype({"confidence": float})


def _run(outputs: list[str], memory_dir, project, language, task, task_text, now, **inputs) -> tuple[dict, list[str]]:
    if task and not project:
        raise CraError("A task belongs to a project: pass --project P with --task T.")
    read = read_memories(memory_root(memory_dir), project, language, task, everything=False)
    context = {
        "memories": memories_frame(read),
        "project": project or None,
        "language": language or None,
        "task": task or None,
        "task_text": task_text or None,
        "now": now,
        "count_tokens": count_tokens,
    }
    return memory_driver().execute(outputs, inputs={**context, **inputs}), read.warnings


def query_memories(
    memory_dir: Path | str | None,
    query: MemoryQuery,
    *,
    project: str | None = None,
    language: str | None = None,
    task: str | None = None,
    task_text: str | None = None,
    budget: int | None = None,
    now: datetime,
) -> tuple[RetrievalResult, list[str]]:
    """The memories that apply to the context, best first, within the budget if one is given; and the warnings
    of files or entries skipped while reading."""
    if budget is not None and budget < 0:
        raise CraError(f"Budget {budget} is negative. Pass a number of tokens, e.g. --budget 1500.")
    out, warnings = _run(
        ["retrieval_result"], memory_dir, project, language, task, task_text, now, memory_query=query, budget=budget
    )
    return out["retrieval_result"], warnings


def memory_section(
    memory_dir: Path | str | None,
    project: str | None,
    language: str | None,
    task_text: str | None,
    budget: int,
    now: datetime,
    task: str | None = None,
) -> tuple[MemoryContext, list[str]]:
    """The memory section (700/500/300 split of the budget, leftovers passed on) and the read warnings."""
    if budget < 0:
        raise CraError(f"Memory budget {budget} is negative. Give it a number of tokens, e.g. 1500.")
    out, warnings = _run(
        ["memory_context"],
        memory_dir,
        project,
        language,
        task,
        task_text,
        now,
        memory_query=MemoryQuery(max_results=CONTEXT_MAX_RESULTS),
        memory_budget=budget,
    )
    return out["memory_context"], warnings


def memory_context_for(
    memory_dir: Path | str | None,
    project: str | None,
    language: str | None,
    task_text: str | None,
    budget: int,
    now: datetime,
    task: str | None = None,
) -> tuple[str, dict]:
    """(markdown section, provenance dict) for a context package: what the retrieval driver adds under its own
    allocation (the default section is DEFAULT_MEMORY_BUDGET = 1,500 tokens, split 700/500/300). The markdown is
    empty when no memory applies; provenance names the directory, the split's use and any warnings."""
    root = memory_root(memory_dir)
    section, warnings = memory_section(root, project, language, task_text, budget, now, task)
    return section.markdown, {"memory_dir": str(root), **section.provenance(), "warnings": warnings}
