"""One SQLite transaction, whichever binding holds the connection (sqlite3 for escalations, apsw for findings)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from drivers.errors import CraError


@contextmanager
def sqlite_transaction(conn, busy: type[BaseException] | tuple, busy_message: str, write: bool = True) -> Iterator:
    """BEGIN IMMEDIATE (the write lock up front, waiting up to the connection's busy timeout) or a read snapshot;
    committed on success, rolled back on any error. A lock still held by another process after the timeout (the
    binding raises `busy`) becomes a CraError with busy_message."""
    try:
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    except busy as exc:
        raise CraError(busy_message.format(exc=exc)) from None
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


_HEADER = ("SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version), "
           "(SELECT group_concat(name, char(0)) FROM (SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name))")


def store_header(conn) -> tuple[int, int, list[str]]:
    """(application_id, user_version, table names) read by one statement, so one snapshot: read one by one, another
    process's first-use migration could commit in between and its tables look like another program's."""
    app_id, version, tables = conn.execute(_HEADER).fetchone()
    return app_id, version, tables.split("\0") if tables else []
