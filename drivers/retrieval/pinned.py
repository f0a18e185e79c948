"""What a package carries at its top beside the code, as `PinnedSection`s for `retriever.retrieve`: the human
guidance and failure context of a retried task and the agent's scoped memories."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from cra.dataflows.retrieval.models import PinnedSection

MEMORY_BUDGET = 1_500  # the memory section (700 universal / 500 language / 300 project) ...
MEMORY_SHARE = 8  # ... but never more than an eighth of the package: the code stays the point of it
TOP_FILES = 10  # the files whose language is the task's when none is given


def default_project(repo_root: Path) -> str | None:
    """A repository's directory name as its memory project, when it is a valid one (else only universal and
    language memories apply)."""
    from cra.drivers.common.errors import CraError
    from cra.drivers.memory.store import check_name

    try:
        return check_name(Path(repo_root).resolve().name, "Project")
    except CraError:
        return None


def guidance_section(db: Path | None, task_id: str) -> PinnedSection | None:
    """'CRITICAL: Human Guidance Provided' and 'Previous Failure Context' of an escalation task; None when it has
    neither (an unknown task id is a CraError from the store)."""
    from cra.drivers.escalation.attempts import guidance_context_for

    markdown, provenance = guidance_context_for(db, task_id)
    return PinnedSection("guidance", markdown, provenance) if markdown else None


def task_language(scope: pd.DataFrame, kb_files: pd.DataFrame) -> str | None:
    """The parsed language most of the top-ranked files are written in (None when none is)."""
    from cra.dataflows.index.parsers import (
        PARSED_LANGUAGES,  # only when memories are asked for: a request loads no parser
    )

    top = scope.nsmallest(TOP_FILES, "rank").index
    languages = kb_files.set_index("file_id")["language"].reindex(top)
    languages = languages[languages.isin(PARSED_LANGUAGES)]
    return str(languages.mode().iloc[0]) if not languages.empty else None


def memory_section_for(
    memory_dir: Path | None,
    project: str | None,
    language: str | None,
    task_text: str,
    budget: int,
    kb_files: pd.DataFrame,
    now: datetime | None = None,
) -> Callable[[pd.DataFrame], PinnedSection | None]:
    """A function of the ranked scope giving the memory section (its language that of the top files unless given),
    within min(MEMORY_BUDGET, budget / MEMORY_SHARE) tokens (empty markdown when no memory applies)."""
    from cra.drivers.memory.memories import memory_context_for

    def section(scope: pd.DataFrame) -> PinnedSection:
        chosen = language or task_language(scope, kb_files)
        markdown, provenance = memory_context_for(
            memory_dir,
            project,
            chosen,
            task_text,
            min(MEMORY_BUDGET, budget // MEMORY_SHARE),
            now or datetime.now(UTC),
        )
        provenance = {**provenance, "language": chosen, "project": project}
        return PinnedSection("memories", markdown, provenance)  # even empty: its provenance says why (and warns)

    return section


def pinned_sections(guidance: PinnedSection | None, memories: Callable | None):
    """Guidance first, then memories, for `retrieve(pinned_sections=...)`: a tuple, or a function of the scope when
    the memories need the ranking."""
    fixed = tuple(s for s in (guidance,) if s is not None)
    if memories is None:
        return fixed
    return lambda scope: (*fixed, *(s for s in (memories(scope),) if s is not None))
