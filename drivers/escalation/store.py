"""The escalation store: tasks, attempts, escalation reports and human guidance in one SQLite file (WAL mode).

Default `cra.drivers.common.home.cra_home() / "escalations.db"`. The file is marked as ours (PRAGMA application_id) and carries
its schema version (PRAGMA user_version); opening an older store migrates it, one step per version, under a file
lock. Every write is one `BEGIN IMMEDIATE` transaction with a busy timeout, so concurrent processes queue instead of
losing writes. A file that is not SQLite, is damaged, belongs to another program or to a newer cra is refused with
a CraError and left exactly as it was; so is one whose damage shows only when a command reads the damaged pages.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pandas as pd

from cra.drivers.common.errors import CraError
from cra.drivers.common.home import cra_home
from cra.drivers.common.locks import exclusive_lock
from cra.drivers.common.transactions import (
    SQLITE_CORRUPT,
    SQLITE_NOTADB,
    damage_reported,
    sqlite_transaction,
    store_header,
)

APPLICATION_ID = 0x43524145  # "CRAE": marks a cra escalation store
BUSY_TIMEOUT_S = 30.0
STATUSES = ("queued", "running", "failed", "escalated", "done")
_MAGIC = b"SQLite format 3\x00"

# MIGRATIONS[v] takes a store from schema version v to v + 1 (statements separated by ";"); the last index + 1 is
# the current version. Append a step to change the schema; never edit a released one.
MIGRATIONS = (
    f"""
    CREATE TABLE tasks (
        task_id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL CHECK (status IN {STATUSES}),
        retry_count INTEGER NOT NULL DEFAULT 0,
        max_retries INTEGER NOT NULL CHECK (max_retries >= 1),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX tasks_by_status ON tasks (status);
    CREATE TABLE attempts (
        task_id TEXT NOT NULL REFERENCES tasks (task_id),
        attempt_number INTEGER NOT NULL,
        timestamp TEXT NOT NULL,
        error_message TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        error_type TEXT NOT NULL,
        context_snapshot TEXT,
        PRIMARY KEY (task_id, attempt_number)
    );
    CREATE TABLE reports (
        report_id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL REFERENCES tasks (task_id),
        created_at TEXT NOT NULL,
        error_category TEXT NOT NULL,
        failure_pattern TEXT NOT NULL,
        messages TEXT NOT NULL,
        report TEXT NOT NULL
    );
    CREATE INDEX reports_by_task ON reports (task_id, report_id);
    CREATE INDEX reports_by_category ON reports (error_category, report_id);
    CREATE TABLE guidance (
        guidance_id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL REFERENCES tasks (task_id),
        report_id INTEGER REFERENCES reports (report_id),
        given_at TEXT NOT NULL,
        hint TEXT NOT NULL
    );
    CREATE INDEX guidance_by_task ON guidance (task_id, guidance_id)
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
ATTEMPT_COLUMNS = (
    "task_id",
    "attempt_number",
    "timestamp",
    "error_message",
    "agent_id",
    "error_type",
    "context_snapshot",
)


def default_db_path() -> Path:
    """Where the store lives unless --db says otherwise."""
    return cra_home() / "escalations.db"


def _check_header(path: Path) -> None:
    if path.is_dir():
        raise CraError(f"{path} is a directory, not an escalation store. Pass a file path with --db.")
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb") as handle:
        if handle.read(len(_MAGIC)) != _MAGIC:
            raise CraError(
                f"{path} is not an SQLite database (damaged, or another kind of file); it was left "
                "untouched. Move it away or pass another path with --db."
            )


def _schema_version(conn: sqlite3.Connection, path: Path) -> int:
    """The store's schema version (0 = empty new file), reading only; CraError for anything that is not ours."""
    try:
        app_id, version, tables = store_header(conn)
    except sqlite3.DatabaseError as exc:
        raise CraError(
            f"{path} is a damaged SQLite database ({exc}); it was left untouched. Restore it from a "
            "backup, or move it away and pass another path with --db."
        ) from None
    if app_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise CraError(
                f"{path} was written by a newer cra (store schema {version}, this cra reads up to "
                f"{SCHEMA_VERSION}). Upgrade cra, or pass another path with --db."
            )
        return version
    if app_id == 0 and not tables:
        return 0
    raise CraError(
        f"{path} is an SQLite database of another program (tables: {', '.join(tables) or 'none'}), "
        "not a cra escalation store; it was left untouched. Pass another path with --db."
    )


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    with exclusive_lock(path.with_name(path.name + ".lock"), timeout=BUSY_TIMEOUT_S):
        version = _schema_version(conn, path)  # another process may have migrated while we waited
        if version == SCHEMA_VERSION:
            return
        if version == 0:
            conn.execute("PRAGMA journal_mode = WAL")
        with transaction(conn):
            for step in MIGRATIONS[version:]:
                for statement in filter(str.strip, step.split(";")):
                    conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextmanager
def open_store(db_path: Path | None = None) -> Iterator[sqlite3.Connection]:
    """A connection to the store (created, or migrated to SCHEMA_VERSION, on first use), closed after the block."""
    path = Path(db_path) if db_path else default_db_path()
    _check_header(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise CraError(
            f"Cannot open the escalation store {path} ({exc}). Choose a writable location with --db."
        ) from None
    with closing(conn), damage_reported(conn, path, "escalation store", _is_damage):
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if _schema_version(conn, path) != SCHEMA_VERSION:
            _migrate(conn, path)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")  # WAL: a commit survives any process crash; no fsync per commit
        yield conn


def _is_damage(exc: BaseException) -> bool:
    """Whether sqlite3 failed because the file is damaged (SQLITE_CORRUPT or SQLITE_NOTADB, any extended code)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.DatabaseError) and code is not None and code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB)
    )


def transaction(conn: sqlite3.Connection, write: bool = True):
    """One transaction: IMMEDIATE (takes the write lock up front, waiting up to the busy timeout) or a read snapshot."""
    return sqlite_transaction(
        conn,
        sqlite3.OperationalError,
        f"The escalation store is busy ({{exc}}) after {BUSY_TIMEOUT_S:g} s. Try again.",
        write,
    )


def _rows(conn: sqlite3.Connection, sql: str, params=()) -> list[dict]:
    cursor = conn.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def get_task(conn: sqlite3.Connection, task_id: str) -> dict | None:
    """The task row as a dict, None when there is no such task."""
    rows = _rows(conn, "SELECT * FROM tasks WHERE task_id = ?", (task_id,))
    return rows[0] if rows else None


def create_task(conn: sqlite3.Connection, task_id: str, title: str, max_retries: int, now: str) -> None:
    """A new task, queued with no retries yet."""
    conn.execute(
        "INSERT INTO tasks (task_id, title, status, retry_count, max_retries, created_at, updated_at) "
        "VALUES (?, ?, 'queued', 0, ?, ?, ?)",
        (task_id, title, max_retries, now, now),
    )


def update_task(conn: sqlite3.Connection, task_id: str, now: str, **fields) -> None:
    """Set some of title, status, retry_count, max_retries."""
    assert set(fields) <= {"title", "status", "retry_count", "max_retries"}, fields
    assignments = ", ".join(f"{name} = ?" for name in fields)
    conn.execute(f"UPDATE tasks SET {assignments}, updated_at = ? WHERE task_id = ?", (*fields.values(), now, task_id))


def add_attempt(conn: sqlite3.Connection, attempt: dict) -> int:
    """Append an attempt (all ATTEMPT_COLUMNS but attempt_number) as the task's next one; returns its number."""
    (number,) = conn.execute(
        "SELECT COALESCE(MAX(attempt_number), 0) + 1 FROM attempts WHERE task_id = ?", (attempt["task_id"],)
    ).fetchone()
    row = {**attempt, "attempt_number": number}
    conn.execute(
        f"INSERT INTO attempts ({', '.join(ATTEMPT_COLUMNS)}) VALUES ({', '.join('?' * len(ATTEMPT_COLUMNS))})",
        [row[c] for c in ATTEMPT_COLUMNS],
    )
    return number


def task_attempts(
    conn: sqlite3.Connection,
    task_id: str | None = None,
    statuses: tuple[str, ...] = (),
    columns: tuple[str, ...] = ATTEMPT_COLUMNS,
) -> pd.DataFrame:
    """Attempts (these columns) of one task, or of every task in the given statuses, in recording order."""
    if task_id is not None:
        where, params = "WHERE task_id = ?", (task_id,)
    else:
        where = f"WHERE task_id IN (SELECT task_id FROM tasks WHERE status IN ({', '.join('?' * len(statuses))}))"
        params = statuses
    cursor = conn.execute(f"SELECT {', '.join(columns)} FROM attempts {where} ORDER BY task_id, attempt_number", params)
    return pd.DataFrame(cursor.fetchall(), columns=list(columns))


def tasks_in(conn: sqlite3.Connection, statuses: tuple[str, ...]) -> pd.DataFrame:
    """Tasks in the given statuses, by id."""
    cursor = conn.execute(
        f"SELECT * FROM tasks WHERE status IN ({', '.join('?' * len(statuses))}) ORDER BY task_id", statuses
    )
    return pd.DataFrame(cursor.fetchall(), columns=[d[0] for d in cursor.description])


def add_report(
    conn: sqlite3.Connection,
    task_id: str,
    now: str,
    error_category: str,
    failure_pattern: str,
    messages: str,
    report_json: str,
) -> int:
    """Store an escalation report (JSON of EscalationReport); returns its id."""
    cursor = conn.execute(
        "INSERT INTO reports (task_id, created_at, error_category, failure_pattern, messages, report) VALUES (?, ?, ?, ?, ?, ?)",
        (task_id, now, error_category, failure_pattern, messages, report_json),
    )
    return cursor.lastrowid


def latest_report(conn: sqlite3.Connection, task_id: str) -> dict | None:
    """The task's most recent report row (report_id, created_at, report JSON, ...), None if it never escalated."""
    rows = _rows(conn, "SELECT * FROM reports WHERE task_id = ? ORDER BY report_id DESC LIMIT 1", (task_id,))
    return rows[0] if rows else None


def past_failures(conn: sqlite3.Connection, error_category: str, limit: int) -> pd.DataFrame:
    """The latest `limit` escalated tasks of a category: their last report's messages and pattern, their status now,
    and their latest guidance (resolution)."""
    cursor = conn.execute(
        """
        SELECT r.task_id, t.title, r.error_category, r.failure_pattern, r.messages, t.status,
               (SELECT hint FROM guidance g WHERE g.task_id = r.task_id ORDER BY guidance_id DESC LIMIT 1) AS resolution
        FROM reports r JOIN tasks t USING (task_id)
        WHERE r.error_category = ?
          AND r.report_id = (SELECT MAX(report_id) FROM reports r2 WHERE r2.task_id = r.task_id)
        ORDER BY r.report_id DESC LIMIT ?
        """,
        (error_category, limit),
    )
    frame = pd.DataFrame(cursor.fetchall(), columns=[d[0] for d in cursor.description])
    frame["error_message"] = frame["messages"].str.rsplit("\n", n=1).str[-1]
    return frame


def add_guidance(conn: sqlite3.Connection, task_id: str, report_id: int | None, hint: str, now: str) -> None:
    """Append a hint to the task's guidance history."""
    conn.execute(
        "INSERT INTO guidance (task_id, report_id, given_at, hint) VALUES (?, ?, ?, ?)", (task_id, report_id, now, hint)
    )


def guidance_history(conn: sqlite3.Connection, task_id: str) -> list[dict]:
    """Every hint given for the task (hint, given_at, report_id), oldest first."""
    return _rows(
        conn, "SELECT hint, given_at, report_id FROM guidance WHERE task_id = ? ORDER BY guidance_id", (task_id,)
    )


def bulk_load(conn: sqlite3.Connection, **frames: pd.DataFrame) -> None:
    """Insert many rows in one transaction: table name -> frame with (some of) that table's columns."""
    with transaction(conn):
        for table, frame in frames.items():
            columns = list(frame.columns)
            conn.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                frame.itertuples(index=False, name=None),
            )
