"""A store whose pages SQLite finds damaged part-way (pages in the middle of a real store overwritten, the header
intact) is the user's problem, not a bug in cra: exit 2, one line naming the file, saying it was left untouched and
how to recover; and the file is byte for byte what it was."""

import hashlib
import json
import random
import sqlite3
from contextlib import closing
from pathlib import Path

import apsw
import pandas as pd

from cra.drivers.cli.main import main
from cra.drivers.escalation.store import bulk_load, open_store

N_ROWS = 400


def _run(capsys, *argv) -> tuple[int, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _leaf_pages(db: Path, name: str) -> list[tuple[int, int]]:
    """(page number, rows on it) of every leaf page of a table or index, in key order (rowid order for a table)."""
    with closing(apsw.Connection(str(db))) as conn:
        return conn.execute(
            "SELECT pageno, ncell FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY path", (name,)
        ).fetchall()


def _overwrite(db: Path, pages: list[int]) -> None:
    """Random bytes over whole pages (never page 1, so the header stays intact)."""
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the main file
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(db.read_bytes())
    noise = random.Random(54)
    for page in pages:
        assert page > 1
        data[(page - 1) * size : page * size] = noise.randbytes(size)
    db.write_bytes(bytes(data))


def _damage_middle_leaf(db: Path, table: str) -> range:
    """Overwrite the middle leaf page of a rowid table; the rowids (1-based insertion order) it held."""
    leaves = _leaf_pages(db, table)
    middle = len(leaves) // 2
    first = sum(n for _, n in leaves[:middle]) + 1
    _overwrite(db, [leaves[middle][0]])
    return range(first, first + leaves[middle][1])


def _refused_untouched(capsys, db: Path, *argv) -> None:
    before = _digest(db)
    code, err = _run(capsys, *argv, "--db", db)
    assert code == 2, err
    assert err.count("\n") == 1 and "bug in cra" not in err
    assert str(db) in err and "damaged" in err and "left it untouched" in err
    assert "Restore it from a backup" in err and "move it aside" in err
    assert _digest(db) == before


def _escalation_store(tmp_path: Path, capsys) -> Path:
    """A store of N_ROWS escalated tasks, each with an attempt and a report (one made by `cra attempt`, copied)."""
    db = tmp_path / "escalations.db"
    code, _ = _run(
        capsys, "attempt", "seed", "--error", "AssertionError: expected 3, got 4", "--max-retries", "1", "--db", db
    )
    assert code == 0
    with open_store(db) as conn:
        report = conn.execute("SELECT * FROM reports").fetchone()
        attempt = conn.execute("SELECT * FROM attempts").fetchone()
        conn.execute("DELETE FROM reports")  # so report_id i is task-i's
        ids = [f"task-{i:04d}" for i in range(1, N_ROWS + 1)]
        now = "2026-11-01T00:00:00+00:00"
        bulk_load(
            conn,
            tasks=pd.DataFrame(
                {
                    "task_id": ids,
                    "title": [f"Sync users, part {i}" for i in range(N_ROWS)],
                    "status": "escalated",
                    "retry_count": 1,
                    "max_retries": 1,
                    "created_at": now,
                    "updated_at": now,
                }
            ),
            attempts=pd.DataFrame(
                {
                    "task_id": ids,
                    "attempt_number": 1,
                    "timestamp": now,
                    "error_message": attempt[3],
                    "agent_id": "agent",
                    "error_type": attempt[5],
                    "context_snapshot": None,
                }
            ),
            reports=pd.DataFrame(
                {
                    "task_id": ids,
                    "created_at": now,
                    "error_category": report[3],
                    "failure_pattern": report[4],
                    "messages": report[5],
                    "report": [report[6].replace('"seed"', json.dumps(t)) for t in ids],
                }
            ),
        )
    return db


def test_escalation_commands_refuse_a_store_with_damaged_pages(tmp_path, capsys):
    db = _escalation_store(tmp_path, capsys)
    code, _ = _run(capsys, "report", "task-0200", "--db", db)
    assert code == 0  # sound before the damage

    held = _damage_middle_leaf(db, "reports")  # report i is task-i's (the seed task's was deleted first)
    assert len(held) > 1
    _refused_untouched(capsys, db, "report", f"task-{held[len(held) // 2]:04d}")

    (tmp_path / "second").mkdir()
    db = _escalation_store(tmp_path / "second", capsys)
    held = _damage_middle_leaf(db, "tasks")  # rowid 1 is the seed task: task-i has rowid i + 1
    task = f"task-{held[len(held) // 2] - 1:04d}"
    _refused_untouched(capsys, db, "retry", "--all")
    _refused_untouched(capsys, db, "attempt", task, "--error", "boom")
    _refused_untouched(capsys, db, "guide", task, "--hint", "look at the fixture")


def test_findings_commands_refuse_a_store_with_damaged_pages(tmp_path, capsys):
    db = tmp_path / "findings.db"
    source = tmp_path / "findings.jsonl"
    rows = [
        {
            "finding_text": f"Check the return value of parse_{i} before using it",
            "severity": "major",
            "category": "correctness",
            "file_path": f"src/module_{i % 40}.py",
            "outcome": "accepted",
            "repo": "acme/shop",
        }
        for i in range(N_ROWS)
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, err = _run(capsys, "findings", "import", source, "--db", db)
    assert code == 0, err

    leaves = _leaf_pages(db, "sqlite_autoindex_findings_1")  # the (repo, file, text) index every insert looks up
    assert len(leaves) > 2
    _overwrite(db, [page for page, _ in leaves])
    _refused_untouched(
        capsys, db, "findings", "add", rows[7]["finding_text"], "--repo", "acme/shop", "--file", rows[7]["file_path"]
    )
    _refused_untouched(capsys, db, "findings", "import", source)
