"""`cra attempt | retry --all | report | guide` end to end, clear errors, concurrent writers, damaged stores."""

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cra.drivers.cli.main import main
from cra.drivers.escalation.attempts import guidance_context_for

ERRORS = ["Connection refused: API endpoint not reachable", "Connection timeout after 30s", "Network unreachable"]


def _run(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_guidance_round_trip(tmp_path, capsys):
    db = str(tmp_path / "e.db")
    for i, error in enumerate(ERRORS, 1):
        code, out, _ = _run(
            capsys, "attempt", "task-1", "--error", error, "--agent", "engineer", "--title", "Sync users", "--db", db
        )
        assert code == 0 and f"recorded attempt {i} of task task-1 (network); retry {i} of 3" in out
        assert ("escalated" in out) == (i == 3)
    assert db in out and "cra report task-1" in out  # where the report is

    code, out, _ = _run(capsys, "retry", "--all", "--db", db)
    assert code == 0
    row = next(line.split() for line in out.splitlines() if line.startswith("task-1"))
    assert row[:6] == ["task-1", "escalated", "network", "consistent", "3", "3/3"]

    code, report, _ = _run(capsys, "report", "task-1", "--db", db)
    assert code == 0 and "**Failure Pattern**: consistent" in report and "## Attempt History (3 attempts)" in report

    code, out, _ = _run(
        capsys, "guide", "task-1", "--hint", "Use VPN endpoint: https://vpn.internal.api.com", "--db", db
    )
    assert code == 0
    assert "## Root Cause Analysis" in out  # the guide command shows the report it answers
    assert "re-queued (retry count 0 of 3)" in out

    code, out, _ = _run(capsys, "report", "task-1", "--format", "json", "--db", db)
    doc = json.loads(out)
    assert doc["status"] == "queued" and doc["human_guidance"] == "Use VPN endpoint: https://vpn.internal.api.com"
    assert len(doc["attempt_history"]) == 3

    code, out, _ = _run(capsys, "retry", "--all", "--db", db)
    assert "task-1" not in out and "no failed or escalated tasks" in out

    text, prov = guidance_context_for(Path(db), "task-1")
    assert "## CRITICAL: Human Guidance Provided" in text and "https://vpn.internal.api.com" in text
    assert prov["status"] == "queued"

    # the retry count was reset: the next failure is retry 1 again, history keeps counting
    code, out, _ = _run(capsys, "attempt", "task-1", "--error", "Network unreachable", "--db", db)
    assert code == 0 and "recorded attempt 4 of task task-1 (network); retry 1 of 3" in out


@pytest.mark.parametrize(
    "argv, names",
    [
        (["report", "nope"], "nope"),
        (["guide", "nope", "--hint", "x"], "nope"),
        (["attempt", "nope", "--done"], "nope"),
        (["guide", "t", "--hint", "   "], "hint"),
        (["attempt", "t2", "--error", ""], "--error"),
        (["attempt", "t2", "--error", "x", "--max-retries", "0"], "--max-retries"),
        (["attempt", "bad id", "--error", "x"], "bad id"),
        (["attempt", "t", "--error", "again"], "cra guide t"),  # escalated: guidance first
        (["attempt", "t2"], "--error"),
        (["report", "fresh"], "not escalated yet"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(tmp_path, capsys, argv, names):
    db = str(tmp_path / "e.db")
    assert main(["attempt", "t", "--error", "boom", "--max-retries", "1", "--db", db]) == 0
    assert main(["attempt", "fresh", "--error", "boom", "--db", db]) == 0
    code, out, err = _run(capsys, *argv, "--db", db)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("cra: error: ") and names in err


def test_a_repeated_guide_is_refused_until_the_next_attempt(tmp_path, capsys):
    db = str(tmp_path / "e.db")
    assert main(["attempt", "t", "--error", "boom", "--max-retries", "1", "--db", db]) == 0
    assert main(["guide", "t", "--hint", "try X", "--db", db]) == 0
    code, _, err = _run(capsys, "guide", "t", "--hint", "try Y", "--db", db)
    assert code == 2 and err.count("\n") == 1 and "already re-queued with guidance" in err
    assert main(["attempt", "t", "--error", "boom again", "--db", db]) == 0
    assert main(["guide", "t", "--hint", "try Y", "--db", db]) == 0  # a new failure may be guided again
    text, prov = guidance_context_for(Path(db), "t")
    assert [g["hint"] for g in prov["guidance"]] == ["try X", "try Y"] and text.index("try X") < text.index("try Y")


WRITER = """
import sys
from pathlib import Path
from cra.drivers.escalation.attempts import record_attempt
db, worker, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(n):
    record_attempt(db, f"own-{worker}", f"Connection refused ({worker}/{i})", agent=worker, max_retries=10_000)
    record_attempt(db, "shared", f"KeyError: '{worker}-{i}'", agent=worker, max_retries=10_000)
"""


def test_concurrent_processes_lose_no_attempt(tmp_path):
    db = tmp_path / "e.db"  # not created yet: the writers race to create it too
    workers, n = 4, 10
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(db), f"w{w}", str(n)], env=env, stderr=subprocess.PIPE)
        for w in range(workers)
    ]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 2 * workers * n
        numbers = [
            r[0] for r in conn.execute("SELECT attempt_number FROM attempts WHERE task_id = 'shared' ORDER BY 1")
        ]
        assert numbers == list(range(1, workers * n + 1))
        assert conn.execute("SELECT retry_count FROM tasks WHERE task_id = 'shared'").fetchone()[0] == workers * n


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _refused(capsys, db: Path, expected: str):
    before = _digest(db)
    for argv in (
        ["attempt", "t", "--error", "boom"],
        ["retry", "--all"],
        ["report", "t"],
        ["guide", "t", "--hint", "h"],
    ):
        code, out, err = _run(capsys, *argv, "--db", str(db))
        assert code == 2 and err.count("\n") == 1 and expected in err and str(db) in err, err
    with pytest.raises(Exception, match=expected):
        guidance_context_for(db, "t")
    assert _digest(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]  # no -wal, -shm or lock file beside it


def test_random_bytes_are_refused_and_left_untouched(tmp_path, capsys):
    db = tmp_path / "escalations.db"
    db.write_bytes(os.urandom(8192))
    _refused(capsys, db, "not an SQLite database")


def test_another_programs_sqlite_database_is_refused_and_left_untouched(tmp_path, capsys):
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)")
        conn.execute("INSERT INTO users (email) VALUES ('a@example.com')")
    conn.close()
    _refused(capsys, db, "another program")


def test_a_damaged_store_is_refused_and_left_untouched(tmp_path, capsys):
    db = tmp_path / "e.db"
    assert main(["attempt", "t", "--error", "boom", "--db", str(db)]) == 0
    with sqlite3.connect(db) as conn:  # fold the WAL in, then damage every page after the header
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    data = bytearray(db.read_bytes())
    data[100:] = os.urandom(len(data) - 100)
    db.write_bytes(bytes(data))
    for extra in db.parent.glob("e.db*"):
        if extra != db:
            extra.unlink()
    _refused(capsys, db, "damaged")


def test_a_store_from_a_newer_cra_is_refused(tmp_path, capsys):
    db = tmp_path / "e.db"
    assert main(["attempt", "t", "--error", "boom", "--db", str(db)]) == 0
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    code, _, err = _run(capsys, "report", "t", "--db", str(db))
    assert code == 2 and "newer cra" in err and err.count("\n") == 1


def test_default_store_lives_under_cra_home(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CRA_HOME", str(tmp_path / "home"))
    assert main(["attempt", "t", "--error", "boom"]) == 0
    assert (tmp_path / "home" / "escalations.db").is_file()


def test_an_empty_file_becomes_a_store(tmp_path, capsys):
    db = tmp_path / "e.db"
    db.touch()
    assert main(["attempt", "t", "--error", "boom", "--db", str(db)]) == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] >= 1
        assert conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 1
    conn.close()


FIRST_OPENER = """
import sys
from pathlib import Path
from {module} import open_store
for i in range(int(sys.argv[2])):
    with open_store(Path(sys.argv[1]) / f"s{{i}}.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] > 0  # opened, with our tables
"""


@pytest.mark.parametrize("module", ["cra.drivers.escalation.store", "cra.drivers.findings.store"])
def test_processes_racing_to_create_a_store_all_open_it(tmp_path, module):
    """Each of 4 processes opens the same 40 new stores in turn: every open succeeds whoever creates the file (the
    header was once read in three statements, and a creator's commit in between looked like another program's db)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", FIRST_OPENER.format(module=module), str(tmp_path), "40"],
            env=env,
            stderr=subprocess.PIPE,
        )
        for _ in range(4)
    ]
    errors = [p.stderr.read().decode() for p in procs if p.wait(timeout=120) != 0]
    assert errors == []
    assert len(list(tmp_path.glob("s*.db"))) == 40
