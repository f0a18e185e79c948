"""Re-indexing (issue 19): a re-index after files are touched, added or deleted builds exactly the KB a fresh index
of the same tree builds, and a re-index of an unchanged tree writes nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from drivers.cli import main
from drivers.indexer import index_repository
from drivers.stat_cache import CACHE_FILE
from tests.fixture_repo import make_repo
from tests.kb_compare import compare_kbs

RUN_STATS = {"n_parsed", "n_reused", "workers", "notes"}  # what the run did, not what the KB holds


def _assert_same_as_fresh(repo: Path, kb: Path, fresh: Path) -> None:
    index_repository(repo, fresh)
    compared, differences = compare_kbs(kb, fresh, ignore=RUN_STATS)
    assert "files.parquet" in compared and "file_terms.bm25.parquet" in compared
    assert differences == []


def _all_files(kb: Path) -> dict[str, tuple[int, int]]:
    """Every file of a KB directory (but the lock) with its inode and mtime: what a run that writes nothing leaves."""
    return {p.relative_to(kb).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in kb.rglob("*") if p.is_file() and p.name != ".index.lock"}  # fmt: skip


def _import_edges(kb: Path) -> set[tuple[str, str]]:
    from drivers.kb import read_tables

    tables = read_tables(kb, ["files", "edges"])
    path = tables["files"].set_index("file_id")["path"]
    edges = tables["edges"][tables["edges"]["kind"] == "import"]
    return set(zip(path.reindex(edges["src_file_id"]), path.reindex(edges["dst_file_id"])))


def test_reindex_after_touching_adding_and_deleting_files_equals_a_fresh_index(tmp_path):
    repo = make_repo(tmp_path / "repo")
    (repo / "packages/ui/src").mkdir(parents=True)  # a workspace package: imports of it resolve through its manifest
    (repo / "packages/ui/package.json").write_text('{"name": "@demo/ui", "main": "src/index.ts"}\n')
    (repo / "packages/ui/src/index.ts").write_text("export function button(label: string) { return label; }\n")
    (repo / "web.ts").write_text('import { button } from "@demo/ui";\n\nexport function page() { return button("x"); }\n')
    kb = tmp_path / "kb"
    index_repository(repo, kb)
    assert ("web.ts", "packages/ui/src/index.ts") in _import_edges(kb)
    steps = [
        lambda: (repo / "app/auth/ldap.py").write_text((repo / "app/auth/ldap.py").read_text() + "\n# touched\n"),
        lambda: (repo / "app/auth/aaa_first.py").write_text("from app.auth.types import LoginRequest\n\n\ndef first(r: LoginRequest):\n    return r\n"),
        lambda: (repo / "app/auth/ldap.py").unlink(),
        lambda: (repo / "zzz_last.py").write_text("import app.auth.aaa_first\n\n\nclass Last:\n    def go(self):\n        return 1\n"),
        lambda: (repo / "blob.bin").write_bytes(b"\x00\x01binary"),
    ]
    for number, step in enumerate(steps):
        step()
        stats = index_repository(repo, kb)
        assert not stats.get("unchanged"), f"step {number} was missed"
        _assert_same_as_fresh(repo, kb, tmp_path / f"fresh{number}")
        assert ("web.ts", "packages/ui/src/index.ts") in _import_edges(kb)  # the unchanged manifest still counts


def test_a_file_rewritten_with_its_old_stat_is_still_seen_when_racy(tmp_path):
    """A file edited right after the index read it, keeping size and mtime, is re-hashed rather than trusted."""
    repo = make_repo(tmp_path / "repo")
    kb = tmp_path / "kb"
    index_repository(repo, kb)
    target = repo / "app/auth/ldap.py"
    before = target.stat()
    target.write_text(target.read_text().replace("LDAP", "ldap"))  # same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # same mtime (same inode: written in place)
    assert index_repository(repo, kb).get("unchanged") is None
    _assert_same_as_fresh(repo, kb, tmp_path / "fresh")


def test_reindex_of_an_unchanged_tree_writes_nothing(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo")
    kb = tmp_path / "kb"
    index_repository(repo, kb)
    old = os.stat(repo / "README.md").st_mtime_ns - 10**10  # old enough that its stat is trusted
    for path in repo.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            os.utime(path, ns=(old, old))
    index_repository(repo, kb)  # rewrites the KB once more (stats changed), recording trusted stats
    before = _all_files(kb)
    assert main(["index", str(repo), "--kb", str(kb)]) == 0
    out = capsys.readouterr().out
    assert "nothing changed" in out and "indexed" in out
    assert _all_files(kb) == before
    # a touch that keeps the content re-hashes the file and refreshes only the stat cache
    os.utime(repo / "README.md")
    assert index_repository(repo, kb)["unchanged"]
    after = _all_files(kb)
    assert {k: v for k, v in after.items() if k != CACHE_FILE} == {k: v for k, v in before.items() if k != CACHE_FILE}
    # a real change is not missed
    (repo / "README.md").write_text("# Demo app\n\nNow with invoices.\n")
    assert index_repository(repo, kb).get("unchanged") is None


def test_changed_options_or_history_are_not_mistaken_for_no_change(tmp_path):
    repo = make_repo(tmp_path / "repo")
    kb = tmp_path / "kb"
    index_repository(repo, kb)
    assert index_repository(repo, kb, history=0).get("unchanged") is None
    assert index_repository(repo, kb, history=0).get("unchanged")
    assert index_repository(repo, kb, max_file_bytes=10).get("unchanged") is None
    assert index_repository(repo, kb, max_file_bytes=10).get("unchanged")
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "empty"], check=True, capture_output=True)
    assert index_repository(repo, kb, max_file_bytes=10).get("unchanged") is None  # a new HEAD: new history
    (repo / "app" / "__pycache__").mkdir()  # never indexed, but counted as ignored: the run's statistics change
    assert index_repository(repo, kb, max_file_bytes=10).get("unchanged") is None
