"""The escalation report against the reference layout, as JSON, with similar past failures; the prompt sections."""

import json

from cra.drivers.escalation import store
from cra.drivers.escalation.attempts import guidance_context_for, mark_done, record_attempt, report_text
from cra.drivers.escalation.attempts import guide as give_guidance

# the reference example of the report's layout, verbatim (its command is `agent`, ours `cra`)
SEED_REPORT = """\
## Root Cause Analysis
**Failure Pattern**: consistent
**Hypothesis**: Consistent network errors across all attempts suggest...

## Attempt History (3 attempts)
- **Attempt 1** (2026-02-14 14:30:00)
  Agent: engineer, Type: network
  Error: Connection refused: API endpoint not reachable

- **Attempt 2** (2026-02-14 14:31:00)
  Agent: engineer, Type: network
  Error: Connection timeout after 30s

- **Attempt 3** (2026-02-14 14:32:00)
  Agent: engineer, Type: network
  Error: Network unreachable

## Suggested Interventions
1. Check network connectivity and firewall rules
2. Verify API endpoints are accessible
3. Review rate limiting and retry backoff settings
4. Consider increasing timeout values

## Next Steps
Use `agent guide task-12345 --hint "<your guidance>"` to inject guidance and retry.
"""
SEED_ATTEMPTS = [
    ("2026-02-14T14:30:00+00:00", "Connection refused: API endpoint not reachable"),
    ("2026-02-14T14:31:00+00:00", "Connection timeout after 30s"),
    ("2026-02-14T14:32:00+00:00", "Network unreachable"),
]


def _record(db, task_id, attempts, max_retries=3, title="Sync the user directory"):
    for now, error in attempts:
        outcome = record_attempt(db, task_id, error, agent="engineer", title=title, max_retries=max_retries, now=now)
    return outcome


def test_report_follows_the_seed_layout_line_by_line(tmp_path):
    db = tmp_path / "e.db"
    outcome = _record(db, "task-12345", SEED_ATTEMPTS)
    assert outcome.status == "escalated" and outcome.report_id is not None
    ours = report_text(db, "task-12345").splitlines()
    assert ours[0] == "# Escalation Report: task-12345 (Sync the user directory)" and ours[1] == ""
    seed = SEED_REPORT.replace("`agent guide", "`cra guide").splitlines()
    assert len(ours) - 2 == len(seed)
    for mine, theirs in zip(ours[2:], seed):
        if theirs.endswith("..."):  # the reference example elides the hypothesis after its opening words
            assert mine.startswith(theirs[:-3]) and len(mine) > len(theirs)
        else:
            assert mine == theirs
    headings = [line for line in ours if line.startswith("## ")]
    assert headings == [
        "## Root Cause Analysis",
        "## Attempt History (3 attempts)",
        "## Suggested Interventions",
        "## Next Steps",
    ]


def test_json_report_carries_full_history_guidance_and_status(tmp_path):
    db = tmp_path / "e.db"
    _record(db, "t", SEED_ATTEMPTS)
    doc = json.loads(report_text(db, "t", "json"))
    assert doc["status"] == "escalated" and doc["human_guidance"] is None
    assert doc["total_attempts"] == 3 and doc["failure_pattern"] == "consistent" and doc["error_category"] == "network"
    assert [a["error_message"] for a in doc["attempt_history"]] == [e for _, e in SEED_ATTEMPTS]
    assert set(doc["attempt_history"][0]) == {
        "attempt_number",
        "timestamp",
        "error_message",
        "agent_id",
        "error_type",
        "context_snapshot",
    }
    give_guidance(db, "t", "Use the backup endpoint")
    doc = json.loads(report_text(db, "t", "json"))
    assert doc["status"] == "queued" and doc["human_guidance"] == "Use the backup endpoint"


def test_varied_failures_name_the_mix_and_add_the_pattern_intervention(tmp_path):
    db = tmp_path / "e.db"
    _record(
        db,
        "v",
        [
            ("2026-01-01T00:00:00+00:00", "KeyError: 'id'"),
            ("2026-01-01T00:01:00+00:00", "ValueError: invalid literal for int()"),
            ("2026-01-01T00:02:00+00:00", "IndexError: list index out of range"),
        ],
    )
    doc = json.loads(report_text(db, "v", "json"))
    assert doc["failure_pattern"] == "varied" and doc["error_category"] == "logic"
    assert "logic 2" in doc["root_cause_hypothesis"] and "validation 1" in doc["root_cause_hypothesis"]
    assert doc["suggested_interventions"][-1].startswith("Give the agent one concrete direction")


def test_similar_past_failures_list_earlier_tasks_and_what_resolved_them(tmp_path):
    db = tmp_path / "e.db"
    _record(
        db,
        "old-db",
        [
            (
                "2026-01-01T00:00:00+00:00",
                "psycopg2.OperationalError: could not connect to server: "
                'Connection refused. Is the server running on host "db" and accepting connections on port 5432?',
            )
        ],
        max_retries=1,
    )
    give_guidance(db, "old-db", "Start the database container first: docker compose up -d db")
    mark_done(db, "old-db")
    _record(db, "old-dns", [("2026-01-02T00:00:00+00:00", "curl: (6) Could not resolve host: pypi.org")], max_retries=1)
    _record(db, "old-auth", [("2026-01-02T00:00:00+00:00", "401 Client Error: Unauthorized")], max_retries=1)
    _record(
        db,
        "new",
        [("2026-01-03T00:00:00+00:00", "could not connect to server: Connection refused (port 5432)")],
        max_retries=1,
    )
    doc = json.loads(report_text(db, "new", "json"))
    similar = doc["similar_failures"]
    assert [s["task_id"] for s in similar] == ["old-db"]  # same category, close words; not the DNS or the auth failure
    assert similar[0]["resolution"].startswith("Start the database container") and similar[0]["status"] == "done"
    md = report_text(db, "new")
    assert "## Similar Past Failures" in md and 'resolved by: "Start the database container first' in md
    assert md.index("## Similar Past Failures") < md.index("## Next Steps")


def test_guidance_context_sections_and_provenance(tmp_path):
    db = tmp_path / "e.db"
    _record(db, "t", SEED_ATTEMPTS)
    text, prov = guidance_context_for(db, "t")
    assert text.startswith("## Previous Failure Context\n\nConsistent network errors across all attempts suggest")
    assert "Suggested interventions:\n1. Check network connectivity and firewall rules\n" in text
    assert prov["sections"] == ["failure_context"] and prov["attempts"] == 3 and prov["guidance"] == []
    give_guidance(db, "t", "Use VPN endpoint: https://vpn.internal.api.com")
    text, prov = guidance_context_for(db, "t")
    assert text.startswith(
        "## CRITICAL: Human Guidance Provided\n\nA human expert has reviewed this task and provided "
        "the following guidance:\n\nUse VPN endpoint: https://vpn.internal.api.com\n\n"
        "Please carefully consider this guidance when approaching the task.\n"
    )
    assert text.index("## CRITICAL") < text.index("## Previous Failure Context")
    assert prov["sections"] == ["human_guidance", "failure_context"] and prov["report_id"] is not None
    assert prov["guidance"][0]["hint"].startswith("Use VPN") and prov["tokens"] > 50


def test_guidance_context_is_empty_for_a_task_without_guidance_or_failures(tmp_path):
    db = tmp_path / "e.db"
    with store.open_store(db) as conn, store.transaction(conn):
        store.create_task(conn, "fresh", "New task", 3, "2026-01-01T00:00:00+00:00")
    text, prov = guidance_context_for(db, "fresh")
    assert text == "" and prov["sections"] == [] and prov["attempts"] == 0 and "tokens" not in prov
