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
