"""Mapped copies of a KB version's Parquet tables (`cra.drivers.kb.parquet_copies`): `load_kb` makes them once,
later loads map them instead of decoding Parquet, and they are never trusted when stale or damaged."""

from __future__ import annotations

import os

import pandas as pd
import pyarrow.parquet as pq
import pytest

from cra.dataflows.index.schema import REQUEST_TABLES
from cra.drivers.index.indexer import index_repository
from cra.drivers.kb import store
from cra.drivers.kb.parquet_copies import SUFFIX, current_copy
from cra.drivers.kb.store import live_version, load_kb, read_tables
from cra.drivers.retrieval.retriever import retrieve
from tests.fixture_repo import make_repo
from tests.kb_compare import compare_kbs
from tests.test_incremental_kb import RUN_STATS

TASK = "LoginHandler.validate_login rejects a valid password"


@pytest.fixture()
def indexed(tmp_path):
    root = make_repo(tmp_path / "repo")
    index_repository(root, history=20)
    store._LOADED.clear()
    yield root / ".cra"
    store._LOADED.clear()


def loaded_anew(kb_dir):
    store._LOADED.clear()
    return load_kb(kb_dir)


def copies_of(version) -> set[str]:
    return {p.name.removesuffix(SUFFIX) for p in version.glob(f"*{SUFFIX}")}


def answer(kb) -> str:
    return retrieve(kb, TASK, outputs=("json_text",)).outputs["json_text"]


def assert_same_tables(tables: dict, kb_dir) -> None:
    decoded = read_tables(kb_dir, REQUEST_TABLES, arrow_lists=True)  # (from Parquet, as before the copies)
    for name, frame in decoded.items():
        pd.testing.assert_frame_equal(tables[name], frame, check_exact=True)
        assert list(tables[name].dtypes) == list(frame.dtypes)


def test_later_loads_map_the_copies_and_read_the_same_tables(indexed, monkeypatch):
    parquet = sorted(p.stem for p in live_version(indexed).glob("*.parquet") if p.stem in REQUEST_TABLES)
    assert "edges" in parquet and "files" in parquet
    expected = answer(loaded_anew(indexed))
    copies = sorted(p.name.removesuffix(SUFFIX) for p in live_version(indexed).glob(f"*{SUFFIX}"))
    assert copies == parquet  # made by the first load
    monkeypatch.setattr(pq, "ParquetFile", lambda *a, **k: pytest.fail("Parquet decoded again"))
    kb = loaded_anew(indexed)
    assert answer(kb) == expected
    monkeypatch.undo()
    assert_same_tables(kb.tables, indexed)


def test_stale_or_damaged_copies_are_not_used(indexed):
    expected = answer(loaded_anew(indexed))
    version = live_version(indexed)
    (version / f"edges{SUFFIX}").write_bytes(b"not arrow")
    files = version / "files.parquet"
    stat = files.stat()
    copy_before = (version / f"files{SUFFIX}").stat().st_mtime_ns
    os.utime(files, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # (a Parquet file other than the copied)
    kb = loaded_anew(indexed)
    assert answer(kb) == expected
    assert_same_tables(kb.tables, indexed)
    assert (version / f"files{SUFFIX}").stat().st_mtime_ns != copy_before  # copied again from the file as it is
    assert_same_tables(loaded_anew(indexed).tables, indexed)  # (and the damaged one made again, read back equal)


def test_a_reindex_carries_the_copies_of_the_tables_it_carries(indexed):
    """The next version hard-links an unchanged table's Parquet file and so its copy, still valid (the same inode),
    and writes the copy of a table it writes again: the first load after a one-file edit copies nothing."""
    loaded_anew(indexed)  # the copies of this version
    before = live_version(indexed)
    inodes = {
        name: ((before / f"{name}.parquet").stat().st_ino, (before / f"{name}{SUFFIX}").stat().st_ino)
        for name in REQUEST_TABLES
        if (before / f"{name}.parquet").is_file()
    }
    source = indexed.parent / "app" / "auth" / "ldap.py"
    source.write_text(source.read_text() + "\n# a comment\n")
    index_repository(indexed.parent, history=20)
    after = live_version(indexed)
    carried = [name for name, (parquet, _) in inodes.items() if (after / f"{name}.parquet").stat().st_ino == parquet]
    assert "edges" in carried and "files" not in carried  # (a comment: edges as they were, the file's row not)
    for name in carried:
        assert (after / f"{name}{SUFFIX}").stat().st_ino == inodes[name][1]
    assert current_copy(after, "files") is not None  # (written with the new files table)
    kb = loaded_anew(indexed)
    assert_same_tables(kb.tables, indexed)
    assert answer(kb) == answer(loaded_anew(indexed))


@pytest.mark.parametrize("copy", ["current", "damaged", "stale"])
def test_a_reindex_reads_the_previous_tables_from_their_current_copies_and_writes_the_fresh_kb(
    indexed, tmp_path, monkeypatch, copy
):
    """A re-index reads the previous version's Parquet tables from their mapped copies (no decoding), never from a
    damaged or stale copy; it copies those that have none (imports: no load copies it) and writes the copy of
    each table it writes (files), so the next re-index decodes nothing; either way its KB is a fresh one."""
    loaded_anew(indexed)  # (the copies of this version)
    version = live_version(indexed)
    if copy == "damaged":
        (version / f"edges{SUFFIX}").write_bytes(b"not arrow")
    elif copy == "stale":  # (a Parquet file other than the one copied)
        edges = version / "edges.parquet"
        os.utime(edges, ns=(edges.stat().st_atime_ns, edges.stat().st_mtime_ns + 1_000_000_000))
    assert not (version / f"imports{SUFFIX}").exists()
    decode, decoded = pq.ParquetFile, []
    monkeypatch.setattr(
        pq, "ParquetFile", lambda path, *a, **k: decoded.append(os.path.basename(path)) or decode(path, *a, **k)
    )
    source = indexed.parent / "app" / "auth" / "ldap.py"
    for n in range(2):
        decoded.clear()
        source.write_text(source.read_text() + f"\ndef added_{n}(value):\n    return value\n")
        index_repository(indexed.parent, history=20)
        assert ("edges.parquet" in decoded) == (n == 0 and copy != "current")
        assert "files.parquet" not in decoded and ("imports.parquet" in decoded) == (n == 0)
        assert {"files", "edges", "imports"} <= copies_of(live_version(indexed))
    assert_same_tables(loaded_anew(indexed).tables, indexed)  # (the copies the re-index wrote, read back equal)
    monkeypatch.undo()
    fresh = tmp_path / "fresh"
    index_repository(indexed.parent, kb_dir=fresh, history=20)
    compared, differences = compare_kbs(indexed, fresh, ignore=RUN_STATS)
    assert "edges.parquet" in compared and not differences
