"""File ids in chunks (issue 58): a file added or deleted moves the ids of its chunk only, so a re-index keeps the
other files' rows (and their symbols') where they were, and its KB is still a fresh index's."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np
import pytest

from cra.dataflows.index import frames
from cra.dataflows.index.frames import (
    FILE_CHUNK_EVERY,
    FILE_WINDOW,
    block_symbol_ids,
    path_block_ids,
)
from cra.drivers.index.indexer import index_repository
from cra.drivers.kb.mapped import mapped_table, table_pieces
from cra.drivers.kb.store import live_version, read_tables
from tests.kb_compare import compare_kbs
from tests.test_incremental_kb import RUN_STATS, WORDS, _answers, _module, _symbol_ids


def _starts_chunk(path: str) -> bool:
    return zlib.crc32(path.encode()) % FILE_CHUNK_EVERY == 0


def _chunks(paths: list[str]) -> list[list[str]]:
    """The paths (in order) as their chunks."""
    out: list[list[str]] = []
    for i, path in enumerate(paths):
        if i == 0 or _starts_chunk(path):
            out.append([])
        out[-1].append(path)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_path_block_ids_move_only_the_chunk_of_a_path_added_or_removed(seed):
    rng = random.Random(seed)
    paths = sorted({f"{rng.choice('abcdef')}/{rng.randrange(10**6)}.py" for _ in range(rng.randint(50, 400))})
    ids = path_block_ids(paths)
    assert (np.diff(ids) > 0).all() and ids[0] == 0  # ascending with the paths: retrieval's order stays the paths'
    firsts = [chunk[0] for chunk in _chunks(paths)]
    assert all(ids[paths.index(p)] % FILE_WINDOW == 0 for p in firsts)  # a chunk starts a window
    for _ in range(10):
        change = sorted(paths)
        if rng.random() < 0.5:
            added = next(p for p in (f"c/{rng.randrange(10**6)}x.py" for _ in range(1000)) if p not in paths)
            change = sorted([*paths, added])
            touched = added
        else:
            touched = rng.choice(paths[1:])
            change.remove(touched)
        new = dict(zip(change, path_block_ids(change).tolist()))
        old = dict(zip(paths, ids.tolist()))
        own = next(c for c in _chunks(sorted({*paths, touched})) if touched in c)
        moved = {p for p in change if p in old and old[p] != new[p]}
        sizes = [len(c) for c in _chunks(paths)]
        if not _starts_chunk(touched) and max(sizes) < FILE_WINDOW:  # (a chunk start splits or joins chunks)
            assert moved <= set(own), touched


def test_a_window_holds_its_files_symbol_blocks_so_another_window_keeps_its_symbol_ids():
    among = np.array([0, 1, 2, 64, 65, 128])
    files = np.repeat(among, [3, 0, 9, 1, 0, 2])
    ids = block_symbol_ids(files, among)
    assert (np.diff(ids) > 0).all()
    grown = np.repeat(among, [3, 0, 20, 1, 0, 2])  # the third file outgrows its block, within its window's region
    assert (block_symbol_ids(grown, among)[-3:] == ids[-3:]).all()
    added = np.array([0, 1, 2, 3, 64, 65, 128])  # a file added to the first window
    assert (block_symbol_ids(np.repeat(added, [3, 0, 9, 4, 1, 0, 2]), added)[-3:] == ids[-3:]).all()


def _big_repo(root: Path, n: int = 120) -> Path:
    """A tree of n Python modules over a few packages (several chunks of files), some of more symbols than a block of
    MIN_SYMBOL_BLOCK ids (a file moved within its chunk then moves into ids that another file had)."""
    rng = random.Random(58)
    made: list[str] = []
    for k in range(n):
        name = f"app/{rng.choice(['billing', 'auth', 'reports'])}/{rng.choice(WORDS)}_{k}.py"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("\n".join(_module(rng, made[-5:]) for _ in range(rng.choice([1, 4]))))
        made.append(name)
    return root


def _ids(kb: Path) -> dict[str, int]:
    files = read_tables(kb, ["files"])["files"]
    return dict(zip(files["path"], files["file_id"].tolist()))


@pytest.mark.parametrize("change", ["add", "delete"])
def test_a_file_added_or_deleted_moves_only_its_chunks_ids_and_writes_the_tables_in_pieces(
    tmp_path, capsys, change, monkeypatch
):
    """The ids outside the chunk stay (and the symbol ids outside its window: regions made large enough here that
    none grows or shrinks past a power of two); the tables are written as the live segments and one new one; the KB
    and its answers are a fresh index's."""
    monkeypatch.setattr(frames, "MIN_SYMBOL_REGION", 1 << 14)
    repo = _big_repo(tmp_path / "repo")
    kb = tmp_path / "kb"
    index_repository(repo, kb, history=0)
    before, symbols_before = _ids(kb), _symbol_ids(kb)
    inodes = {f.stat().st_ino for f in live_version(kb).iterdir()}
    paths = sorted(before)
    if change == "add":
        touched = next(
            p for k in range(1000) if not _starts_chunk(p := f"app/billing/ledger_new_{k}.py") and p not in before
        )
        (repo / touched).write_text("def ledger_new(total):\n    return total + 1\n")
    else:
        touched = next(p for p in paths[len(paths) // 2 :] if not _starts_chunk(p))
        (repo / touched).unlink()
    index_repository(repo, kb, history=0)
    after = _ids(kb)
    chunk = next(c for c in _chunks(sorted({*paths, touched})) if touched in c)
    kept = {p: i for p, i in before.items() if p not in chunk}
    assert len(kept) > len(before) / 2 and {p: after[p] for p in kept} == kept
    window = {after.get(p, before.get(p)) // FILE_WINDOW for p in chunk}
    outside = {k: i for k, i in symbols_before.items() if before[k[0]] // FILE_WINDOW not in window}
    assert outside and {k: _symbol_ids(kb)[k] for k in outside} == outside
    version = live_version(kb)
    for name in (
        "contents",
        "file_terms",
        "concept_terms",
        "symbols",
        "symbol_terms",
    ):  # the chunk's rows in a new segment, the rest linked
        pieces = table_pieces(version, name)
        assert pieces is not None, name
        written = {s for s, *_ in pieces if (version / s).stat().st_ino not in inodes}
        rows = sum(stop - start for _, start, stop in pieces)
        assert len(written) <= 1 and sum(mapped_table(version / s).num_rows for s in written) < rows / 2, name
    fresh = tmp_path / "fresh"
    index_repository(repo, fresh, history=0)
    assert _answers(repo, kb, capsys) == _answers(repo, fresh, capsys)
    compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
    assert {"files.parquet", "symbols.arrow"} <= set(compared) and differences == []
