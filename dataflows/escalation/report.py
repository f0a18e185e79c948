"""The escalation report of one task, and its renderings: markdown (root cause, attempts, interventions) and JSON."""

from __future__ import annotations

import json

import pandas as pd

from cra.dataflows.escalation.models import EscalationReport, RetryAttempt


def escalation_report(
    task_id: str,
    task_title: str,
    attempts: pd.DataFrame,
    attempt_categories: pd.Series,
    failure_patterns: pd.Series,
    dominant_categories: pd.Series,
    root_cause_hypotheses: pd.Series,
    suggested_interventions: pd.Series,
    similar_past_failures: tuple,
) -> EscalationReport:
    """Structured diagnosis of the task: full attempt history, pattern, hypothesis, interventions, similar failures."""
    mine = attempts.assign(error_type=attempt_categories)[attempts["task_id"].eq(task_id)].sort_values("attempt_number")
    history = tuple(
        RetryAttempt(
            attempt_number=int(row.attempt_number),
            timestamp=str(row.timestamp),
            error_message=str(row.error_message),
            agent_id=str(row.agent_id),
            error_type=str(row.error_type),
            context_snapshot=None if pd.isna(row.context_snapshot) else str(row.context_snapshot),
        )
        for row in mine.itertuples(index=False)
    )
    return EscalationReport(
        task_id=task_id,
        original_title=task_title,
        total_attempts=len(history),
        attempt_history=history,
        root_cause_hypothesis=root_cause_hypotheses[task_id],
        suggested_interventions=tuple(suggested_interventions[task_id]),
        failure_pattern=failure_patterns[task_id],
        error_category=dominant_categories[task_id],
        similar_failures=similar_past_failures,
    )


def _when(timestamp: str) -> str:
    return timestamp[:19].replace("T", " ")


def _indented(text: str) -> str:
    return text.strip().replace("\n", "\n    ")


def report_markdown(escalation_report: EscalationReport) -> str:
    """The report as markdown (title line; similar failures and guidance only when present)."""
    r = escalation_report
    n = r.total_attempts
    lines = [
        f"# Escalation Report: {r.task_id}" + (f" ({r.original_title})" if r.original_title else ""),
        "",
        "## Root Cause Analysis",
        f"**Failure Pattern**: {r.failure_pattern}",
        f"**Hypothesis**: {r.root_cause_hypothesis}",
        "",
        f"## Attempt History ({n} attempt{'s' if n != 1 else ''})",
    ]
    for a in r.attempt_history:
        lines += [
            f"- **Attempt {a.attempt_number}** ({_when(a.timestamp)})",
            f"  Agent: {a.agent_id}, Type: {a.error_type}",
            f"  Error: {_indented(a.error_message)}",
            "",
        ]
    if not r.attempt_history:
        lines.append("")
    lines += [
        "## Suggested Interventions",
        *(f"{i}. {step}" for i, step in enumerate(r.suggested_interventions, 1)),
        "",
    ]
    if r.similar_failures:
        lines.append("## Similar Past Failures")
        for s in r.similar_failures:
            verb = "resolved by" if s.status == "done" else "guided with"
            outcome = f'{verb}: "{_indented(s.resolution)}"' if s.resolution else "not guided yet"
            lines.append(
                f"- **{s.task_id}** ({s.error_category}, {s.failure_pattern}, now {s.status}, "
                f'similarity {s.similarity:.2f}): seen before: "{_indented(s.error_message)}"; {outcome}'
            )
        lines.append("")
    if r.human_guidance:
        lines += ["## Human Guidance", r.human_guidance.strip(), ""]
    lines += [
        "## Next Steps",
        f'Use `cra guide {r.task_id} --hint "<your guidance>"` to inject guidance and retry.',
        "",
    ]
    return "\n".join(lines)


def report_json(escalation_report: EscalationReport, task_status: str) -> str:
    """The report as JSON: every field of EscalationReport (full attempt_history, human_guidance) plus the task's status."""
    return json.dumps({**escalation_report.to_dict(), "status": task_status}, indent=2, ensure_ascii=False) + "\n"
