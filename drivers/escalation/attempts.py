"""Runs the guided-escalation dataflow (dataflows/escalation) against the escalation store.

Record an attempt (categorise it, escalate with a report at the retry limit), list failing tasks, read a report,
store guidance and re-queue, and build the prompt sections a retried task starts with.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import pandas as pd
from hamilton import driver

from cra.dataflows.escalation import analysis, categories, prompt, report, similarity
from cra.dataflows.escalation.models import EscalationReport
from cra.drivers.common.errors import CraError
from cra.drivers.common.home import cra_home
from cra.drivers.common.shipped import shipped_path
from cra.drivers.escalation import store

MODULES = (categories, analysis, similarity, report, prompt)
USER_CATEGORY_FILE = "error_categories.toml"  # under cra_home(), read when present
DEFAULT_MAX_RETRIES = 3
PAST_FAILURE_LIMIT = 500  # similar past failures are looked for among this many latest reports of the category
FAILING = ("failed", "escalated")
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/#-]{0,199}")


@dataclass(frozen=True)
class AttemptOutcome:
    """What recording one attempt did to its task."""

    task_id: str
    attempt_number: int
    error_type: str
    status: str
    retry_count: int
    max_retries: int
    report_id: int | None  # set when this attempt escalated the task


@lru_cache(maxsize=1)
def escalation_driver() -> driver.Driver:
    """The escalation DAG (categories, analysis, similarity, report, prompt), built once per process."""
    return driver.Builder().with_modules(*MODULES).build()


@lru_cache(maxsize=1)
def _default_table() -> dict:
    with open(shipped_path("error_categories.toml"), "rb") as handle:
        return tomllib.load(handle)


def load_category_table(path: Path | None = None) -> dict:
    """A user's category table (shape of data/error_categories.toml), checked; default $CRA_HOME/error_categories.toml
    when it exists, else none."""
    if path is None:
        path = cra_home() / USER_CATEGORY_FILE
        if not path.is_file():
            return {}
    try:
        with open(path, "rb") as handle:
            table = tomllib.load(handle)
    except OSError as exc:
        raise CraError(f"Cannot read category table {path} ({exc.strerror or exc}). Check the path.") from None
    except tomllib.TOMLDecodeError as exc:
        raise CraError(f"Category table {path} is not valid TOML ({exc}). Fix it or leave it out.") from None
    allowed = {*categories.KINDS, *categories.TEXT_KEYS}
    for name, spec in table.get("categories", {}).items():
        unknown = set(spec) - allowed if isinstance(spec, dict) else {"(not a table)"}
        if unknown:
            raise CraError(
                f"Category table {path}: [categories.{name}] has unknown keys {sorted(unknown)}; "
                f"allowed: {', '.join(sorted(allowed))}."
            )
        for pattern in spec.get("patterns", ()):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise CraError(
                    f"Category table {path}: pattern {pattern!r} of {name} is not a regular expression "
                    f"({exc}). Fix or escape it."
                ) from None
    unknown_patterns = set(table.get("patterns", {})) - set(analysis.PATTERNS)
    if unknown_patterns:
        raise CraError(
            f"Category table {path}: unknown failure patterns {sorted(unknown_patterns)}; "
            f"known: {', '.join(analysis.PATTERNS)}."
        )
    return table


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@lru_cache(maxsize=8)
def _matcher(user_table_json: str):
    dr, table = escalation_driver(), json.loads(user_table_json)
    inputs = {"default_category_table": _default_table(), "user_category_table": table}
    return dr.execute(["category_matcher"], inputs=inputs)["category_matcher"]


def _execute(outputs: list[str], attempts: pd.DataFrame, user_table: dict, **inputs) -> dict:
    """Run the DAG for these outputs; the compiled category rules are built once per process and table."""
    matcher = _matcher(json.dumps(user_table, sort_keys=True))
    inputs = {
        "attempts": attempts,
        "default_category_table": _default_table(),
        "user_category_table": user_table,
        **inputs,
    }
    return escalation_driver().execute(outputs, inputs=inputs, overrides={"category_matcher": matcher})


def _task(conn, task_id: str) -> dict:
    task = store.get_task(conn, task_id)
    if task is None:
        raise CraError(f"Unknown task {task_id!r}. `cra retry --all` lists failed and escalated tasks.")
    return task


def categorise(messages: list[str], user_table: dict | None = None) -> list[str]:
    """The error category of each message (data/error_categories.toml, a user's table's rules first)."""
    attempts = pd.DataFrame(
        {"task_id": "", "attempt_number": range(len(messages)), "error_message": messages, "error_type": None}
    )
    out = _execute(["attempt_categories"], attempts, user_table or {})
    return out["attempt_categories"].tolist()


def record_attempt(
    db_path: Path | None,
    task_id: str,
    error: str,
    agent: str = "agent",
    title: str | None = None,
    max_retries: int | None = None,
    context: str | None = None,
    user_table: dict | None = None,
    now: str | None = None,
) -> AttemptOutcome:
    """Record a failed attempt (a new id creates the task); at the retry limit, escalate with a stored report."""
    if not _TASK_ID.fullmatch(task_id or ""):
        raise CraError(f"Bad task id {task_id!r}: use letters, digits and . _ : / # - (up to 200 characters).")
    if not error or not error.strip():
        raise CraError("Empty error message. Pass what went wrong with --error TEXT.")
    if max_retries is not None and max_retries < 1:
        raise CraError(f"--max-retries must be at least 1 (got {max_retries}).")
    user_table = {} if user_table is None else user_table
    now = now or _now()
    new = {"task_id": task_id, "timestamp": now, "error_message": error, "agent_id": agent, "context_snapshot": context}
    error_type = categorise([error], user_table)[0]
    with store.open_store(db_path) as conn, store.transaction(conn):
        task = store.get_task(conn, task_id)
        if task is None:
            store.create_task(conn, task_id, title or "", max_retries or DEFAULT_MAX_RETRIES, now)
            task = store.get_task(conn, task_id)
        elif task["status"] in ("escalated", "done"):
            raise CraError(
                f"Task {task_id} is {task['status']}"
                + (
                    f"; give guidance first: cra guide {task_id} --hint TEXT"
                    if task["status"] == "escalated"
                    else "; record attempts only for unfinished tasks"
                )
            )
        limit = max_retries or task["max_retries"]
        number = store.add_attempt(conn, {**new, "error_type": error_type})
        retries = task["retry_count"] + 1
        status = "escalated" if retries >= limit else "failed"
        fields = {"title": title} if title else {}
        store.update_task(conn, task_id, now, status=status, retry_count=retries, max_retries=limit, **fields)
        report_id = (
            escalate_task(conn, task_id, title or task["title"], user_table, now) if status == "escalated" else None
        )
    return AttemptOutcome(task_id, number, error_type, status, retries, limit, report_id)


def escalate_task(conn, task_id: str, title: str, user_table: dict, now: str) -> int:
    """Inside a write transaction: analyse the task's attempts, look for similar past failures, store the report."""
    attempts = store.task_attempts(conn, task_id)
    inputs = {"task_id": task_id, "task_title": title}
    category = _execute(["dominant_categories"], attempts, user_table, **inputs)["dominant_categories"][task_id]
    past = store.past_failures(conn, category, PAST_FAILURE_LIMIT)
    out = _execute(["escalation_report", "task_messages"], attempts, user_table, past_failures=past, **inputs)
    rep: EscalationReport = out["escalation_report"]
    return store.add_report(
        conn,
        task_id,
        now,
        rep.error_category,
        rep.failure_pattern,
        out["task_messages"],
        json.dumps(rep.to_dict(), ensure_ascii=False),
    )


def mark_done(db_path: Path | None, task_id: str) -> None:
    """The task succeeded: status done (its history stays for similar-failure lookups)."""
    with store.open_store(db_path) as conn, store.transaction(conn):
        _task(conn, task_id)
        store.update_task(conn, task_id, _now(), status="done")


def failing_tasks(db_path: Path | None) -> pd.DataFrame:
    """Failed and escalated tasks with their category, failure pattern and attempt count (for `cra retry --all`)."""
    with store.open_store(db_path) as conn, store.transaction(conn, write=False):
        tasks = store.tasks_in(conn, FAILING)
        attempts = store.task_attempts(conn, statuses=FAILING, columns=("task_id", "attempt_number", "error_type"))
    if tasks.empty:
        return tasks.assign(error_category=[], failure_pattern=[], attempts=[])
    out = _execute(["dominant_categories", "failure_patterns", "attempt_totals"], attempts, {})
    return tasks.assign(
        error_category=tasks["task_id"].map(out["dominant_categories"]).fillna(categories.UNKNOWN),
        failure_pattern=tasks["task_id"].map(out["failure_patterns"]).fillna("-"),
        attempts=tasks["task_id"].map(out["attempt_totals"]).fillna(0).astype(int),
    )


def _stored_report(conn, task_id: str) -> tuple[EscalationReport, dict] | None:
    row = store.latest_report(conn, task_id)
    if row is None:
        return None
    hints = [g["hint"] for g in store.guidance_history(conn, task_id) if g["report_id"] == row["report_id"]]
    rep = EscalationReport.from_dict(json.loads(row["report"]))
    return replace(rep, human_guidance=hints[-1] if hints else None), row


def report_text(db_path: Path | None, task_id: str, fmt: str = "markdown") -> str:
    """The task's latest escalation report as markdown or JSON (JSON adds the task's status)."""
    with store.open_store(db_path) as conn, store.transaction(conn, write=False):
        task = _task(conn, task_id)
        stored = _stored_report(conn, task_id)
    if stored is None:
        raise CraError(
            f"Task {task_id} has not escalated yet ({task['retry_count']} of {task['max_retries']} "
            "attempts); its report is written when it reaches the retry limit."
        )
    return render_report(stored[0], task["status"], fmt)


def render_report(rep: EscalationReport, status: str, fmt: str = "markdown") -> str:
    """A report rendered by the dataflow's report_markdown / report_json nodes."""
    node = {"markdown": "report_markdown", "json": "report_json"}[fmt]
    return escalation_driver().execute([node], overrides={"escalation_report": rep}, inputs={"task_status": status})[
        node
    ]


def guide(db_path: Path | None, task_id: str, hint: str) -> tuple[str | None, dict]:
    """Store a hint for a failed or escalated task, reset its retry count and re-queue it.

    Returns (the report the person was answering, as markdown, or None; the task as it is now).
    """
    if not hint or not hint.strip():
        raise CraError("Empty hint. Say what the agent should do differently with --hint TEXT.")
    now = _now()
    with store.open_store(db_path) as conn, store.transaction(conn):
        task = _task(conn, task_id)
        if task["status"] == "queued" and store.guidance_history(conn, task_id):
            raise CraError(
                f"Task {task_id} is already re-queued with guidance; record its next attempt (cra attempt) "
                "before guiding it again."
            )
        if task["status"] not in FAILING:
            raise CraError(f"Task {task_id} is {task['status']}; only failed or escalated tasks take guidance.")
        stored = _stored_report(conn, task_id)
        store.add_guidance(conn, task_id, stored[1]["report_id"] if stored else None, hint.strip(), now)
        store.update_task(conn, task_id, now, status="queued", retry_count=0)
        task = store.get_task(conn, task_id)
    shown = render_report(stored[0], task["status"]) if stored else None
    return shown, task


def guidance_context_for(db_path: Path | None, task_id: str, user_table: dict | None = None) -> tuple[str, dict]:
    """The prompt sections for the task's next attempt ("CRITICAL: Human Guidance Provided", "Previous Failure
    Context"), '' when it has neither guidance nor failures, and their provenance (what they were built from)."""
    with store.open_store(db_path) as conn, store.transaction(conn, write=False):
        task = _task(conn, task_id)
        guidance = store.guidance_history(conn, task_id)
        attempts = store.task_attempts(conn, task_id)
        last_report = store.latest_report(conn, task_id)
    hints = tuple(g["hint"] for g in guidance)
    table = load_category_table() if user_table is None else user_table
    out = _execute(
        ["guidance_prompt", "failure_patterns", "dominant_categories"],
        attempts,
        table,
        task_id=task_id,
        guidance_hints=hints,
    )
    text = out["guidance_prompt"]
    provenance = {
        "task_id": task_id,
        "status": task["status"],
        "sections": [
            name for name, present in (("human_guidance", hints), ("failure_context", len(attempts))) if present
        ],
        "guidance": [{"hint": g["hint"], "given_at": g["given_at"]} for g in guidance],
        "attempts": len(attempts),
        "failure_pattern": out["failure_patterns"].get(task_id),
        "error_category": out["dominant_categories"].get(task_id),
        "report_id": last_report["report_id"] if last_report else None,
    }
    if text:
        from cra.drivers.common.tokens import count_tokens

        provenance["tokens"] = count_tokens(text)
    return text, provenance
