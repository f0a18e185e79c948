"""One SQLite transaction, whichever binding holds the connection (sqlite3 for escalations, apsw for findings), and
damage found while using a store reported as the user's problem, not a bug in cra."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from cra.drivers.common.errors import CraError


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
        with suppress(
            Exception
        ):  # SQLite may have ended the transaction itself (a damaged page): the cause is what counts
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


_HEADER = (
    "SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version), "
    "(SELECT group_concat(name, char(0)) FROM (SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name))"
)


def store_header(conn) -> tuple[int, int, list[str]]:
    """(application_id, user_version, table names) read by one statement, so one snapshot: read one by one, another
    process's first-use migration could commit in between and its tables look like another program's."""
    app_id, version, tables = conn.execute(_HEADER).fetchone()
    return app_id, version, tables.split("\0") if tables else []


SQLITE_CORRUPT, SQLITE_NOTADB = 11, 26  # primary result codes of a damaged file


def passes_quick_check(conn) -> bool:
    """Whether SQLite's own `PRAGMA quick_check` finds the file sound (it reads every page, so call it only once
    something has already failed)."""
    try:
        return [tuple(row) for row in conn.execute("PRAGMA quick_check").fetchall()] == [("ok",)]
    except Exception:  # noqa: BLE001 - a check that cannot even read the file has found damage
        return False


def damaged_store(path: Path, what: str, reason: object) -> CraError:
    """The one-line error for a store SQLite finds damaged: the file, that it was left as it was, how to recover."""
    reason = " ".join(str(reason).split())[:200] or "damaged pages"
    return CraError(
        f"The {what} {path} is damaged ({reason}); cra left it untouched. Restore it from a backup, or "
        "move it aside (cra then starts a new, empty store there) or pass another path with --db."
    )


@contextmanager
def damage_reported(conn, path: Path, what: str, is_damage: Callable[[BaseException], bool]) -> Iterator:
    """Run a block on an open store: an error SQLite reports as damage (`is_damage`), or any other failure of the
    block while `PRAGMA quick_check` finds the file unsound, becomes `damaged_store`; anything else passes on."""
    try:
        yield conn
    except CraError:
        raise
    except Exception as exc:
        if is_damage(exc) or not passes_quick_check(conn):
            raise damaged_store(path, what, exc) from None
        raise
