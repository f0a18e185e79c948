"""A damaged knowledge base is repaired the way the error says: `cra index` finds the damage and rebuilds,
`cra index --rebuild` forces it, and `cra serve` rebuilds by itself once and answers. Driven through the installed
`cra` (each command a fresh process, as a user runs it) and the official MCP SDK client."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixture_repo import make_repo

CRA = str(Path(sys.executable).parent / "cra")
TASK = "Fix the login validation bug in handler.py: validate_login accepts short passwords for LDAP users"


def cra(*args: str, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CRA, *args], capture_output=True, text=True, env={**os.environ, "CRA_HOME": str(home)})


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def _random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(5).randbytes(path.stat().st_size))


def _random_bytes_inside(path: Path) -> None:
    """Damage inside the data, footer and size intact: found only when a request reads it."""
    with open(path, "r+b") as fh:
        fh.seek(100)
        fh.write(random.Random(5).randbytes(300))


def _empty(path: Path) -> None:
    path.write_bytes(b"")


DAMAGES = {  # what is done to which file of the live version
    "truncated files.parquet": ("files.parquet", _truncate),
    "random bytes in edges.parquet": ("edges.parquet", _random_bytes),
    "random bytes inside edges.parquet": ("edges.parquet", _random_bytes_inside),
    "truncated contents.arrow": ("contents.arrow", _truncate),
    "empty file_terms.bm25.arrow": ("file_terms.bm25.arrow", _empty),
    "empty symbol_terms.bm25.arrow": ("symbol_terms.bm25.arrow", _empty),
}


def live(repo: Path) -> Path:
    return repo / ".cra" / (repo / ".cra" / "CURRENT").read_text().strip()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """The fixture repository with a KB, copied by each test (one index for all of them)."""
    root = tmp_path_factory.mktemp("indexed")
    repo = make_repo(root / "repo")
    done = cra("index", str(repo), home=root / "home")
    assert done.returncode == 0, done.stderr
    return repo


@pytest.fixture
def repo(indexed, tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(indexed, copy, symlinks=True)
    (copy / ".cra" / "scan-cache.json").unlink()  # (it names the original's paths: the first index of the copy
    done = cra("index", str(copy), home=tmp_path / "home")  # writes its own, with nothing to parse again)
    assert done.returncode == 0, done.stderr
    return copy


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_cra_index_rebuilds_a_damaged_kb_that_retrieve_refused(repo, tmp_path, damage):
    home = tmp_path / "home"
    name, do = DAMAGES[damage]
    do(live(repo) / name)
    refused = cra("retrieve", TASK, "--repo", str(repo), home=home)
    assert refused.returncode == 2 and not refused.stdout, refused.stderr
    assert "damaged" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"cra index {repo} --rebuild" in refused.stderr  # the way out, named
    index = cra("index", str(repo), home=home)
    assert index.returncode == 0, index.stderr
    assert "damaged" in index.stdout and "rebuilt" in index.stdout, index.stdout
    assert "nothing changed" not in index.stdout
    answered = cra("retrieve", TASK, "--repo", str(repo), home=home)
    assert answered.returncode == 0, answered.stderr
    assert "def validate_login" in answered.stdout
    again = cra("index", str(repo), home=home)  # the rebuilt KB is intact: the next run changes nothing
    assert again.returncode == 0 and "nothing changed" in again.stdout, again.stdout


def test_a_damaged_lexicon_delta_is_found_and_rebuilt(repo, tmp_path, monkeypatch):
    """A lexicon layered after an edit (`<terms>.bm25.delta.arrow` beside the linked base), emptied: refused with the
    way out, rebuilt by `cra index`, answered."""
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.kb import store

    home = tmp_path / "home"
    monkeypatch.setattr(store, "LAYER_MAX_SHARE", store.PATCH_MAX_SHARE)
    handler = repo / "app/auth/handler.py"
    handler.write_text(handler.read_text() + "\n# ledger note\n")
    index_repository(repo, repo / ".cra", history=0)
    delta = live(repo) / "file_terms.bm25.delta.arrow"
    assert delta.is_file()
    _empty(delta)
    refused = cra("retrieve", TASK, "--repo", str(repo), home=home)
    assert refused.returncode == 2 and "damaged" in refused.stderr and f"cra index {repo} --rebuild" in refused.stderr
    index = cra("index", str(repo), home=home)
    assert index.returncode == 0 and "rebuilt" in index.stdout, index.stdout
    answered = cra("retrieve", TASK, "--repo", str(repo), home=home)
    assert answered.returncode == 0 and "def validate_login" in answered.stdout, answered.stderr


def test_rebuild_parses_every_file_of_an_intact_kb_again(repo, tmp_path):
    home = tmp_path / "home"
    before = live(repo).name
    done = cra("index", str(repo), "--rebuild", home=home)
    assert done.returncode == 0, done.stderr
    assert "reused 0 unchanged" in done.stdout and "--rebuild" in done.stdout, done.stdout
    assert live(repo).name != before


def test_a_rebuild_links_nothing_from_the_damaged_version(repo, tmp_path):
    """Word tables and lexicons of an unchanged tree are linked from the live version on a re-index: not from a
    damaged one (the damage would be carried into the new version)."""
    damaged = live(repo) / "words.symbol_names.arrow"
    _truncate(damaged)
    done = cra("index", str(repo), home=tmp_path / "home")
    assert done.returncode == 0 and "damaged" in done.stdout, done.stdout
    assert all(path.stat().st_nlink == 1 for path in live(repo).iterdir())


# --- cra serve, driven by the MCP SDK's client ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "damage", ["truncated files.parquet", "random bytes inside edges.parquet", "empty symbol_terms.bm25.arrow"]
)
def test_serve_rebuilds_a_damaged_kb_once_and_answers(repo, tmp_path, damage):
    pytest.importorskip("mcp")
    from tests.test_serve import session, text

    home = tmp_path / "home"
    with session(home, repo, "--repo", str(repo)) as served:  # a first server records the tree it indexed
        assert "def validate_login" in text(served.call("get_context", task=TASK))
    name, do = DAMAGES[damage]
    damaged_version = live(repo).name
    do(live(repo) / name)
    with session(home, repo, "--repo", str(repo)) as served:
        first = served.call("get_context", task=TASK)
        assert not first.is_error, text(first)
        assert "def validate_login" in text(first)
        assert live(repo).name != damaged_version
        second = served.call("search_symbols", query="validate_login")
        assert not second.is_error and second.structured_content["symbols"], text(second)


def test_serve_index_tool_rebuilds_a_damaged_kb(repo, tmp_path):
    pytest.importorskip("mcp")
    from tests.test_serve import session

    home = tmp_path / "home"
    with session(home, repo, "--repo", str(repo)) as served:
        served.data("search_symbols", query="validate_login")  # the server has loaded the KB
        _truncate(live(repo) / "files.parquet")
        stats = served.data("index")
    assert "damaged" in stats["summary"] and "rebuilt" in stats["summary"], stats
    assert stats["parsed"] == stats["files"] > 0
