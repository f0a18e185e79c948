"""Seed 004's prompt sections for a retried task: the human guidance, then what failed before and why."""

from __future__ import annotations

import pandas as pd


def human_guidance_section(guidance_hints: tuple) -> str:
    """'CRITICAL: Human Guidance Provided' with every hint given so far, oldest first; '' when there is none."""
    if not guidance_hints:
        return ""
    hints = "\n\n".join(hint.strip() for hint in guidance_hints)
    return (
        "## CRITICAL: Human Guidance Provided\n\n"
        "A human expert has reviewed this task and provided the following guidance:\n\n"
        f"{hints}\n\nPlease carefully consider this guidance when approaching the task.\n"
    )


def failure_context_section(task_id: str, root_cause_hypotheses: pd.Series, suggested_interventions: pd.Series) -> str:
    """'Previous Failure Context': the hypothesis and interventions of the task's failures; '' when it has none."""
    if task_id not in root_cause_hypotheses.index:
        return ""
    steps = "\n".join(f"{i}. {step}" for i, step in enumerate(suggested_interventions[task_id], 1))
    return f"## Previous Failure Context\n\n{root_cause_hypotheses[task_id]}\n\nSuggested interventions:\n{steps}\n"


def guidance_prompt(human_guidance_section: str, failure_context_section: str) -> str:
    """Both sections, guidance first, as they go at the top of the task's next prompt ('' when neither applies)."""
    return "\n".join(part for part in (human_guidance_section, failure_context_section) if part)
