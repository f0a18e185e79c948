"""The retrieval bundle (what deep retrieval found, plus `escalate` and `triggers`), rendered as JSON and markdown."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from cra.dataflows.diagnostics.models import ArtifactEntry, MemoryEntry, RetrievalBundle, SotEntry, TriggerResult


def retrieval_bundle(
    phase_id: str,
    now: datetime,
    retrieval_priority: str,
    escalate: bool,
    triggers: tuple[TriggerResult, ...],
    retrieval_wanted: bool,
    run_artifacts: tuple[ArtifactEntry, ...],
    sot_files: tuple[SotEntry, ...],
    memory_entries: tuple[MemoryEntry, ...],
    sot_ranking_used: str,
) -> RetrievalBundle:
    """What deep retrieval hands on: priority, the triggers' verdicts and (when escalating or forced) the evidence."""
    stamp = (now if now.tzinfo else now.replace(tzinfo=UTC)).astimezone(UTC)
    if not retrieval_wanted:
        run_artifacts, sot_files, memory_entries = (), (), ()
    return RetrievalBundle(
        phase_id,
        stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        retrieval_priority,
        escalate,
        triggers,
        run_artifacts,
        sot_files,
        memory_entries,
        sot_ranking_used,
    )


def bundle_json(retrieval_bundle: RetrievalBundle) -> str:
    """The bundle as JSON (UTF-8 text kept as is)."""
    return json.dumps(retrieval_bundle.to_dict(), indent=2, ensure_ascii=False) + "\n"


def _fenced(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text.rstrip(chr(10))}\n{fence}\n"


def bundle_markdown(retrieval_bundle: RetrievalBundle) -> str:
    """The bundle for a person or a prompt: verdict, triggers, then each retrieved entry fenced."""
    b = retrieval_bundle
    d = b.to_dict()
    s = d["stats"]
    lines = [
        f"# Diagnostics for {b.phase_id}",
        "",
        f"{'Escalate' if b.escalate else 'No escalation needed'}: priority {b.priority} ({b.timestamp}).",
        "",
        "## Triggers",
        "",
    ]
    lines += [f"- [{'x' if t.fired else ' '}] {t.name}: {t.reason}" for t in b.triggers]
    lines += ["", f"## Run artifacts ({s['run_artifacts_count']} files, {s['run_artifacts_size']} bytes)", ""]
    for e in b.run_artifacts:
        lines += [f"### {e.path} (modified {e.modified}, {e.size} bytes)", "", _fenced(e.content)]
    lines += [
        f"## Source of truth ({s['sot_files_count']} files, {s['sot_files_size']} bytes, ranked by {b.sot_ranking})",
        "",
    ]
    for e in b.sot_files:
        lines += [f"### {e.path} (relevance {e.relevance_score}, {e.size} bytes)", "", _fenced(e.content)]
    lines += [f"## Memory ({s['memory_entries_count']} entries, {s['memory_entries_size']} bytes)", ""]
    for e in b.memory_entries:
        where = e.scope if e.source == "memory" else f"past failure {e.phase_id}"
        lines += [f"- [{where}] " + " ".join(e.content.split())]
    return "\n".join(lines).rstrip("\n") + "\n"
