"""Escalation triggers: is the agent's handoff bundle (its failure report) too thin to act on, and how urgently?

Four triggers, each a node returning (fired, reason): an empty or minimal bundle, an error message without
actionable context, repeated failures in earlier attempts' logs, no clear root cause. Priority is high when two or
more fire, medium for one, low for none; escalation is wanted when any fires (or when forced).
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from cra.dataflows.diagnostics.models import Handoff, TriggerResult

MIN_ERROR_CHARS = 20  # trigger 1: a shorter error message is minimal
MIN_ACTIONABLE_CHARS = 30  # trigger 2: a shorter one is too terse to act on
MIN_ROOT_CAUSE_CHARS = 20  # trigger 4: a shorter root cause is not a diagnosis
GENERIC_PHRASES = ("unknown error", "internal error", "something went wrong")
UNCLEAR_PHRASES = ("unknown", "unclear", "investigate", "not sure")
FAILURE_MARKERS = ("ERROR:", "FAILED", "Exception:", "Traceback:")  # matched as written (case matters)
# a file path, a file or dotted module name, or a line number: what makes an error message actionable
_LOCATOR = re.compile(r"[/\\]\w|\b\w[\w-]*\.[A-Za-z_]\w*|\bline\s+\d+|:\d+\b", re.IGNORECASE)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return "\n".join(_text(v) for v in value)
    return str(value)


def handoff(handoff_bundle: Any) -> Handoff:
    """The bundle's fields as text: None, a non-object or fields of the wrong type never stop the triggers."""
    bundle = handoff_bundle if isinstance(handoff_bundle, dict) else {}
    changes = bundle.get("recent_changes")
    if isinstance(changes, list | tuple):
        changes = tuple(_text(c) for c in changes if _text(c).strip())
    else:
        changes = (_text(changes),) if _text(changes).strip() else ()
    return Handoff(
        error_message=_text(bundle.get("error_message")).strip(),
        stack_trace=_text(bundle.get("stack_trace")).strip(),
        root_cause=_text(bundle.get("root_cause")).strip(),
        recent_changes=changes,
        empty=not bundle,
    )


def empty_bundle_trigger(handoff: Handoff) -> tuple[bool, str]:
    """Trigger 1: the bundle is empty, or all its critical fields are (error < 20 chars, no trace, no changes)."""
    if handoff.empty:
        return True, "the handoff bundle is empty"
    n = len(handoff.error_message)
    if n >= MIN_ERROR_CHARS or handoff.stack_trace or handoff.recent_changes:
        found = [
            what
            for what, present in (
                (f"an error message of {n} characters", n >= MIN_ERROR_CHARS),
                ("a stack trace", bool(handoff.stack_trace)),
                (f"{len(handoff.recent_changes)} recent changes", bool(handoff.recent_changes)),
            )
            if present
        ]
        return False, "the bundle has " + ", ".join(found)
    return True, (
        f"the error message has {n} characters (under {MIN_ERROR_CHARS}), and there is no stack trace "
        "and no recent change"
    )


def actionable_context_trigger(handoff: Handoff) -> tuple[bool, str]:
    """Trigger 2: the error message is generic or terse and names no file path, line number or module."""
    message = handoff.error_message
    if not message:
        return True, "there is no error message"
    generic = [p for p in GENERIC_PHRASES if p in message.lower()]
    short = len(message) < MIN_ACTIONABLE_CHARS
    locator = _LOCATOR.search(message)
    if (generic or short) and not locator:
        why = (
            f"the generic phrase {generic[0]!r}"
            if generic
            else f"only {len(message)} characters (under {MIN_ACTIONABLE_CHARS})"
        )
        return True, f"the error message has {why} and names no file path, line number or module"
    if locator:
        return False, f"the error message names {locator.group(0).strip()!r}"
    return False, f"the error message has {len(message)} characters and no generic phrase"


def repeated_failures_trigger(attempt: int, attempt_logs: pd.DataFrame) -> tuple[bool, str]:
    """Trigger 3: attempt 2 or later, and an earlier attempt's log (<phase_id>_attempt_<n>.log) has failure markers.

    attempt_logs: one row per attempt log the driver read (attempt, path, text: its newest part)."""
    if attempt < 2:
        return False, f"attempt {attempt} is the first"
    earlier = attempt_logs[attempt_logs["attempt"].lt(attempt)]
    if earlier.empty:
        return False, f"attempt {attempt}, but no earlier attempt log is in the run directory"
    found = {marker: earlier["text"].str.contains(marker, regex=False) for marker in FAILURE_MARKERS}
    hits = pd.DataFrame(found, index=earlier.index)
    failing = earlier[hits.any(axis=1)]
    if failing.empty:
        return False, f"the {len(earlier)} earlier attempt logs have no failure marker ({', '.join(FAILURE_MARKERS)})"
    listed = "; ".join(
        f"{row.path} ({', '.join(m for m in FAILURE_MARKERS if hits.at[i, m])})"
        for i, row in zip(failing.index, failing.itertuples())
    )
    return True, f"attempt {attempt} after failures: {listed}"


def root_cause_trigger(handoff: Handoff) -> tuple[bool, str]:
    """Trigger 4: the root cause is missing, unclear ('unknown', 'investigate', ...) or under 20 characters."""
    cause = handoff.root_cause
    if not cause:
        return True, "there is no root cause"
    unclear = [p for p in UNCLEAR_PHRASES if p in cause.lower()]
    if unclear:
        return True, f"the root cause says {unclear[0]!r}"
    if len(cause) < MIN_ROOT_CAUSE_CHARS:
        return True, f"the root cause has {len(cause)} characters (under {MIN_ROOT_CAUSE_CHARS})"
    return False, f"the root cause is specific ({len(cause)} characters)"


def triggers(
    empty_bundle_trigger: tuple[bool, str],
    actionable_context_trigger: tuple[bool, str],
    repeated_failures_trigger: tuple[bool, str],
    root_cause_trigger: tuple[bool, str],
) -> tuple[TriggerResult, ...]:
    """The four triggers' verdicts, trigger 1 to 4."""
    named = (
        ("empty_bundle", empty_bundle_trigger),
        ("lacks_actionable_context", actionable_context_trigger),
        ("repeated_failures", repeated_failures_trigger),
        ("no_clear_root_cause", root_cause_trigger),
    )
    return tuple(TriggerResult(name, bool(fired), reason) for name, (fired, reason) in named)


def fired_triggers(triggers: tuple[TriggerResult, ...]) -> int:
    """How many triggers fired: what the priority is read from."""
    return sum(t.fired for t in triggers)


def retrieval_priority(fired_triggers: int) -> str:
    """high for two or more fired triggers, medium for one, low for none."""
    return "high" if fired_triggers >= 2 else "medium" if fired_triggers == 1 else "low"


def escalate(fired_triggers: int) -> bool:
    """Whether the handoff bundle's evidence is too thin: any trigger fired."""
    return fired_triggers > 0


def retrieval_wanted(escalate: bool, force: bool) -> bool:
    """Whether to retrieve at all: on escalation, or when the caller forces it."""
    return escalate or force
