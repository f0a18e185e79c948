"""The review-findings store: past findings and their embeddings in one SQLite file with `sqlite-vec` (WAL mode).

Default `cra.drivers.common.home.cra_home() / "findings.db"`. This Python's `sqlite3` cannot load extensions, so the store
uses `apsw` (Another Python SQLite Wrapper): it bundles a current SQLite (3.54), loads `sqlite-vec` on every
platform it publishes wheels for (Linux, macOS, Windows; x86-64 and ARM) and is released with each SQLite. The
other option, `pysqlite3-binary`, keeps the DB-API but publishes Linux x86-64 wheels only (last release 2025-12).

Findings live in `findings`; each embedding model gets its own `vec0` table (its dimension fixed at creation) with
the owner as partition key and the repository as a metadata column, so a k-nearest query reads only the owner's
partition: repository isolation by default, owner-level sharing (every repository of the same owner, never another
owner's) when `sharing_enabled`. Beside the vectors, `findings_fts` (SQLite FTS5, contentless, rowid = finding_id)
indexes each finding's terms (`cra.dataflows.text.terms` of the embedded text: identifiers split, stemmed, stop words
dropped, so the store and the lexical index of the code speak one vocabulary) for BM25 search under the same
isolation; it is written in the same transaction as the finding. A store written before it (schema 1) gets it
filled on open, in one write transaction that re-checks the version once it holds the lock. Every write is one `BEGIN IMMEDIATE` transaction under a busy timeout, so
concurrent importers queue instead of failing or losing rows; a finding already stored (same repository, file and
text) is kept once. A file that is not a cra findings store, or one whose pages SQLite finds damaged, is refused
with a CraError and left as it was.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from cra.dataflows.text import terms
from cra.drivers.common.errors import CraError
from cra.drivers.common.home import cra_home
from cra.drivers.common.locks import exclusive_lock
from cra.drivers.common.transactions import damage_reported, sqlite_transaction, store_header

APPLICATION_ID = 0x43524146  # "CRAF": marks a cra findings store
SCHEMA_VERSION = 2  # 2: findings_fts
BUSY_TIMEOUT_MS = 30_000
FINDING_COLUMNS = ("finding_text", "severity", "category", "file_path", "outcome", "repo", "created_at")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS findings (
    finding_id INTEGER PRIMARY KEY,
    repo TEXT NOT NULL,
    owner TEXT NOT NULL,
    finding_text TEXT NOT NULL,
    severity TEXT NOT NULL,
    category TEXT NOT NULL,
    file_path TEXT NOT NULL,
    outcome TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (repo, file_path, finding_text)
);
CREATE INDEX IF NOT EXISTS findings_by_owner ON findings (owner, repo);
CREATE TABLE IF NOT EXISTS embedding_models (
    model_id INTEGER PRIMARY KEY,
    model TEXT NOT NULL UNIQUE,
    dimension INTEGER NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS findings_fts USING fts5(terms, content='', tokenize="unicode61 tokenchars '_'")
"""


def default_db_path() -> Path:
    """Where the store lives unless --db says otherwise."""
    return cra_home() / "findings.db"


def owner_of(repo: str) -> str:
    """The owner part of `owner/name` (CraError when the name has no owner)."""
    owner, slash, name = (repo or "").strip().partition("/")
    if not (owner and slash and name) or "/" in name:
        raise CraError(f"Repository {repo!r} is not OWNER/NAME. Name it like octo-org/widgets.")
    return owner


def _connect(path: Path):
    import apsw
    import sqlite_vec

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = apsw.Connection(str(path))
        conn.setbusytimeout(BUSY_TIMEOUT_MS)
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        return conn
    except (OSError, apsw.Error) as exc:
        raise CraError(
            f"Cannot open the findings store {path} ({exc}). Choose a writable location with --db."
        ) from None


def _schema_version(conn, path: Path) -> int | None:
    """The store's schema version, None when it is current; CraError for a file that is another program's or a newer
    cra's database."""
    import apsw

    try:
        app_id, version, tables = store_header(conn)
    except apsw.Error as exc:
        raise CraError(
            f"{path} is not a readable SQLite database ({exc}); it was left untouched. "
            "Move it away or pass another path with --db."
        ) from None
    if app_id == APPLICATION_ID and version == SCHEMA_VERSION:
        return None
    if app_id == APPLICATION_ID and version > SCHEMA_VERSION:
        raise CraError(f"{path} was written by a newer cra (findings schema {version}). Upgrade cra or pass --db.")
    if app_id != APPLICATION_ID and tables:
        raise CraError(
            f"{path} is an SQLite database of another program (tables: {', '.join(tables)}); it "
            "was left untouched. Pass another path with --db."
        )
    return version


def _ensure_schema(conn, path: Path) -> None:
    """Create the tables on first use, or migrate them, one opener at a time (a file lock: SQLite does not wait
    for a busy database when switching it to WAL); refuse another program's or a newer cra's database."""
    if _schema_version(conn, path) is None:
        return
    with exclusive_lock(path.with_name(path.name + ".lock"), timeout=BUSY_TIMEOUT_MS / 1000):
        version = _schema_version(conn, path)  # another opener may have done it while we waited
        if version is None:
            return
        if version == 0:
            conn.execute("PRAGMA journal_mode = WAL")
        with transaction(conn):
            conn.execute(_SCHEMA)
            if version == 1:  # findings stored before findings_fts existed: index them now
                rows = conn.execute("SELECT finding_id, finding_text, file_path FROM findings").fetchall()
                conn.executemany(
                    "INSERT INTO findings_fts (rowid, terms) VALUES (?, ?)",
                    [(i, lexical_terms(document_text({"finding_text": t, "file_path": p}))) for i, t, p in rows],
                )
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextmanager
def open_store(db_path: Path | str | None = None) -> Iterator:
    """An apsw connection to the store with sqlite-vec loaded (tables created on first use), closed after the block."""
    path = Path(db_path) if db_path else default_db_path()
    if path.is_dir():
        raise CraError(f"{path} is a directory, not a findings store. Pass a file path with --db.")
    import apsw

    conn = _connect(path)
    try:
        with damage_reported(
            conn, path, "findings store", lambda exc: isinstance(exc, apsw.CorruptError | apsw.NotADBError)
        ):
            _ensure_schema(conn, path)
            yield conn
    finally:
        conn.close()


def transaction(conn):
    """One write transaction: BEGIN IMMEDIATE takes the write lock up front (waiting up to the busy timeout)."""
    import apsw

    return sqlite_transaction(
        conn, apsw.BusyError, f"The findings store is busy after {BUSY_TIMEOUT_MS / 1000:g} s. Try again."
    )


def _vector_table(conn, model: str, dimension: int | None) -> str | None:
    """The vec0 table of a model (created when `dimension` is given and it does not exist yet; call in a write)."""
    row = conn.execute("SELECT model_id, dimension FROM embedding_models WHERE model = ?", (model,)).fetchone()
    if row is None and dimension is None:
        return None
    if row is None:
        conn.execute("INSERT INTO embedding_models (model, dimension) VALUES (?, ?)", (model, int(dimension)))
        row = (conn.last_insert_rowid(), int(dimension))
        conn.execute(
            f"CREATE VIRTUAL TABLE vectors_{row[0]} USING vec0(finding_id INTEGER PRIMARY KEY, "
            f"owner TEXT PARTITION KEY, repo TEXT, embedding float[{row[1]}] distance_metric=cosine)"
        )
    if dimension is not None and row[1] != dimension:
        raise CraError(
            f"The store's vectors of {model} have {row[1]} dimensions, this model gives {dimension}. "
            "Use the model the store was filled with, or another --db."
        )
    return f"vectors_{row[0]}"


def add_findings(conn, findings: Sequence[dict], vectors: np.ndarray, model: str) -> list[int]:
    """Store findings (FINDING_COLUMNS) with their embeddings by `model` in one transaction; returns the ids of the
    new ones (a finding already stored is skipped)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if len(findings) != len(vectors):
        raise ValueError(f"{len(findings)} findings but {len(vectors)} vectors")
    added: list[int] = []
    with transaction(conn):
        table = _vector_table(conn, model, vectors.shape[1]) if len(findings) else None
        for finding, vector in zip(findings, vectors):
            owner = owner_of(finding["repo"])
            row = conn.execute(
                f"INSERT INTO findings (owner, {', '.join(FINDING_COLUMNS)}) VALUES (?{', ?' * len(FINDING_COLUMNS)}) "
                "ON CONFLICT DO NOTHING RETURNING finding_id",
                (owner, *(finding[c] for c in FINDING_COLUMNS)),
            ).fetchone()
            if row is None:
                continue
            conn.execute(
                f"INSERT INTO {table} (finding_id, owner, repo, embedding) VALUES (?, ?, ?, ?)",
                (row[0], owner, finding["repo"], vector.tobytes()),
            )
            conn.execute(
                "INSERT INTO findings_fts (rowid, terms) VALUES (?, ?)", (row[0], lexical_terms(document_text(finding)))
            )
            added.append(row[0])
    return added


def nearest_findings(
    conn, query_vector: np.ndarray, model: str, repo: str | None, top_k: int, sharing_enabled: bool = False
) -> pd.DataFrame:
    """The top_k findings nearest the query (cosine distance), scoped by repository: the
    repository's own; with `sharing_enabled`, every repository of its owner; with no repository, the whole store."""
    columns = ["finding_id", *FINDING_COLUMNS, "distance"]
    table = _vector_table(conn, model, None)
    if table is None or top_k <= 0:
        return pd.DataFrame(columns=columns).set_index("finding_id")
    where, params = _scope("v", repo, sharing_enabled)
    rows = conn.execute(
        f"SELECT f.finding_id, {', '.join('f.' + c for c in FINDING_COLUMNS)}, v.distance FROM {table} v "
        f"JOIN findings f USING (finding_id) WHERE v.embedding MATCH ? AND k = ?{where} ORDER BY v.distance",
        (np.asarray(query_vector, dtype=np.float32).tobytes(), int(top_k), *params),
    ).fetchall()
    return pd.DataFrame(rows, columns=columns).set_index("finding_id")


def lexical_findings(
    conn, query_text: str, repo: str | None, top_k: int, sharing_enabled: bool = False
) -> pd.DataFrame:
    """The top_k findings by FTS5 BM25 on the query's terms (any term may match; `bm25` > 0, higher is better),
    scoped as `nearest_findings` scopes them."""
    columns = ["finding_id", *FINDING_COLUMNS, "bm25"]
    words = dict.fromkeys(lexical_terms(query_text).split())
    if not words or top_k <= 0:
        return pd.DataFrame(columns=columns).set_index("finding_id")
    where, params = _scope("f", repo, sharing_enabled)
    rows = conn.execute(
        f"SELECT f.finding_id, {', '.join('f.' + c for c in FINDING_COLUMNS)}, -bm25(findings_fts) FROM findings_fts "
        f"JOIN findings f ON f.finding_id = findings_fts.rowid WHERE findings_fts MATCH ?{where} "
        "ORDER BY bm25(findings_fts) LIMIT ?",
        (" OR ".join(f'"{w}"' for w in words), *params, int(top_k)),
    ).fetchall()
    return pd.DataFrame(rows, columns=columns).set_index("finding_id")


def _scope(alias: str, repo: str | None, sharing_enabled: bool) -> tuple[str, list]:
    """The isolation clause of a search: the repository's own findings, its owner's with sharing, all without repo."""
    if not repo:
        return "", []
    where, params = f" AND {alias}.owner = ?", [owner_of(repo)]
    return (where, params) if sharing_enabled else (where + f" AND {alias}.repo = ?", params + [repo])


def lexical_terms(text: str) -> str:
    """The FTS5 text of a finding or query: its index terms (`cra.dataflows.text.terms`), space-separated."""
    return " ".join(terms(text))


def findings_count(conn) -> int:
    """How many findings the store holds."""
    return conn.execute("SELECT COUNT(*) FROM findings").fetchone()[0]


def document_text(finding: dict) -> str:
    """The text embedded for a stored finding: what it says, then the file it is about."""
    return f"{finding['finding_text']}\n{finding.get('file_path') or ''}".strip()
