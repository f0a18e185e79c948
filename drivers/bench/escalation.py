"""`make bench-escalation`: the escalation store with 10,000 tasks / 100,000 attempts; medians of recording an
attempt and rendering a report, in-process and as a cold `cra` process. Not part of the tests."""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from cra.drivers.escalation import attempts as escalation
from cra.drivers.escalation import store

TASKS, ATTEMPTS_PER_TASK, ESCALATED, REAL_REPORTS = 10_000, 10, 1_000, 50
NOW = "2026-11-01T00:00:00+00:00"
CRA = Path(sys.executable).with_name("cra")
TEMPLATES = [
    "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='{host}', port=443): Max retries exceeded",
    "ConnectionRefusedError: [Errno 111] Connection refused ({host}:{port})",
    "urllib3.exceptions.ReadTimeoutError: HTTPConnectionPool(host='{host}', port={port}): Read timed out.",
    "HTTP/1.1 503 Service Unavailable from {host}",
    "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://{host}/v1/{word}",
    'psycopg2.OperationalError: FATAL: password authentication failed for user "{word}"',
    "ValueError: invalid literal for int() with base 10: '{word}'",
    "pydantic.ValidationError: 1 validation error for {word}: field required",
    "OSError: [Errno 28] No space left on device: '/tmp/{word}'",
    "HTTP/1.1 429 Too Many Requests ({host})",
    "AttributeError: 'NoneType' object has no attribute '{word}'",
    "KeyError: '{word}'",
    "IndexError: list index out of range in {word}",
    "the {word} step failed",
]
WORDS = ["user_id", "invoice", "payload", "session", "config", "order", "token", "report", "cache", "schema"]


def _median(fn, n: int) -> float:
    times = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fill(db: Path, seed: int = 7) -> dict:
    """10,000 tasks with 10 attempts each (1,000 escalated with reports), bulk-inserted in one transaction."""
    rng = random.Random(seed)
    categories = dict(zip(TEMPLATES, escalation.categorise(TEMPLATES)))
    tasks, attempts = [], []
    for t in range(TASKS):
        task_id, status = f"task-{t:05d}", "escalated" if t < ESCALATED else "failed"
        tasks.append((task_id, f"Task {t}", status, ATTEMPTS_PER_TASK if status == "escalated" else 3, 10, NOW, NOW))
        base = rng.choice(TEMPLATES)
        for a in range(1, ATTEMPTS_PER_TASK + 1):
            template = base if rng.random() < 0.7 else rng.choice(TEMPLATES)
            message = template.format(
                host=f"api{rng.randrange(50)}.example.com", port=rng.randrange(1024, 9999), word=rng.choice(WORDS)
            )
            attempts.append((task_id, a, NOW, message, "engineer", categories[template], None))
    start = time.perf_counter()
    with store.open_store(db) as conn:
        store.bulk_load(
            conn,
            tasks=pd.DataFrame(
                tasks, columns=["task_id", "title", "status", "retry_count", "max_retries", "created_at", "updated_at"]
            ),
            attempts=pd.DataFrame(attempts, columns=list(store.ATTEMPT_COLUMNS)),
        )
        with store.transaction(conn):  # a few real reports, through the escalation path ...
            for t in range(REAL_REPORTS):
                escalation.escalate_task(conn, f"task-{t:05d}", f"Task {t}", {}, NOW)
        real = pd.read_sql_query("SELECT * FROM reports", conn)
        copies = []  # ... copied onto the other escalated tasks (same shape, their own task id)
        for t in range(REAL_REPORTS, ESCALATED):
            row = real.iloc[t % REAL_REPORTS]
            report = json.loads(row["report"]) | {"task_id": f"task-{t:05d}"}
            copies.append(
                (
                    f"task-{t:05d}",
                    NOW,
                    row["error_category"],
                    row["failure_pattern"],
                    row["messages"],
                    json.dumps(report),
                )
            )
        store.bulk_load(
            conn,
            reports=pd.DataFrame(
                copies, columns=["task_id", "created_at", "error_category", "failure_pattern", "messages", "report"]
            ),
        )
    return {"fill_s": time.perf_counter() - start, "rows": len(attempts)}


def _cli(*argv: str) -> None:
    subprocess.run([str(CRA), *argv], check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cra-escalation-bench-") as tmp:
        db = Path(tmp) / "escalations.db"
        filled = fill(db)
        print(
            f"store: {TASKS:,} tasks, {filled['rows']:,} attempts, {ESCALATED:,} reports; filled in {filled['fill_s']:.1f} s "
            f"({db.stat().st_size / 1e6:.0f} MB)"
        )
        escalation.record_attempt(db, "warm-up", "boom")  # build the DAG and compile the rules once
        rows = [
            (
                "record one attempt (in-process, median of 25)",
                _median(lambda i: escalation.record_attempt(db, f"task-{ESCALATED + i:05d}", f"KeyError: 'k{i}'"), 25),
            ),
            (
                "record an attempt that escalates (in-process, median of 5)",
                _median(
                    lambda i: escalation.record_attempt(
                        db,
                        f"task-{ESCALATED + 100 + i:05d}",
                        "Connection refused (api1.example.com:443)",
                        max_retries=4,
                    ),
                    5,
                ),
            ),
            (
                "render one report, markdown (in-process, median of 25)",
                _median(lambda i: escalation.report_text(db, f"task-{i * 7:05d}"), 25),
            ),
            (
                "render one report, JSON (in-process, median of 25)",
                _median(lambda i: escalation.report_text(db, f"task-{i * 7:05d}", "json"), 25),
            ),
            (
                "list failing tasks, 10,000 tasks (in-process, median of 5)",
                _median(lambda i: escalation.failing_tasks(db), 5),
            ),
            (
                "cra attempt (cold CLI, median of 5)",
                _median(
                    lambda i: _cli(
                        "attempt", f"task-{ESCALATED + 200 + i:05d}", "--error", "KeyError: 'x'", "--db", str(db)
                    ),
                    5,
                ),
            ),
            (
                "cra report (cold CLI, median of 5)",
                _median(lambda i: _cli("report", f"task-{i:05d}", "--db", str(db)), 5),
            ),
            ("cra retry --all (cold CLI, median of 5)", _median(lambda i: _cli("retry", "--all", "--db", str(db)), 5)),
        ]
        width = max(len(name) for name, _ in rows)
        for name, seconds in rows:
            print(f"{name.ljust(width)}  {seconds * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
