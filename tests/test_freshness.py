"""A request says when its KB is older than the tree, and re-indexes first when asked (`--refresh`) or, by default,
when the tree is small. Driven through the installed `cra`, a fresh process per command."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cra.drivers.cli.main import main
from cra.drivers.index import freshness
from tests.fixture_repo import make_repo

CRA = str(Path(sys.executable).parent / "cra")
TASK = "compute the refund for a cancelled invoice"
NEW = 'def compute_refund(invoice, cancelled_at):\n    """The refund of a cancelled invoice."""\n    return 0\n'


def cra(*args: str, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CRA, *args], capture_output=True, text=True, env={**os.environ, "CRA_HOME": str(home)})


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root = tmp_path_factory.mktemp("fresh")
    repo = make_repo(root / "repo")
    done = cra("index", str(repo), home=root / "home")
    assert done.returncode == 0, done.stderr
    return repo


@pytest.fixture
def repo(indexed, tmp_path):
    """A copy of the indexed fixture (its KB brought to the copy's paths: nothing to parse again)."""
    copy = tmp_path / "repo"
    shutil.copytree(indexed, copy, symlinks=True)
    (copy / ".cra" / "scan-cache.json").unlink()
    done = cra("index", str(copy), home=tmp_path / "home")
    assert done.returncode == 0 and "parsed 0" in done.stdout, done.stdout
    return copy


def _move_the_tree(repo: Path) -> None:
    """One file edited, one added, one removed."""
    (repo / "app" / "billing" / "refund.py").write_text(NEW)
    with open(repo / "app" / "utils.py", "a") as fh:
        fh.write("\n\ndef truncate_words(text, n):\n    return text\n")
    (repo / "scripts" / "deploy.sh").unlink()


def test_a_fresh_kb_answers_without_a_word_and_a_touched_file_is_not_a_change(repo, tmp_path):
    os.utime(repo / "app" / "utils.py")  # a new mtime, the same content
    done = cra("retrieve", TASK, "--repo", str(repo), home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert "older than the tree" not in done.stderr and "re-indexed" not in done.stderr, done.stderr


def test_no_refresh_warns_with_what_moved_and_answers_from_the_old_kb(repo, tmp_path):
    _move_the_tree(repo)
    done = cra("retrieve", TASK, "--repo", str(repo), "--no-refresh", home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert "older than the tree: 1 changed, 1 added, 1 removed since it was indexed" in done.stderr, done.stderr
    assert "--refresh" in done.stderr and "def compute_refund" not in done.stdout


@pytest.mark.parametrize("flag", [[], ["--refresh"]])
def test_a_small_tree_is_re_indexed_first_by_default_and_with_refresh(repo, tmp_path, flag):
    _move_the_tree(repo)
    done = cra("retrieve", TASK, "--repo", str(repo), *flag, home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert "re-indexed first: parsed" in done.stderr, done.stderr
    assert "def compute_refund" in done.stdout  # the answer comes from the tree as it is now
    again = cra("retrieve", TASK, "--repo", str(repo), home=tmp_path / "home")
    assert "older than the tree" not in again.stderr and "re-indexed" not in again.stderr, again.stderr


def test_a_larger_tree_is_not_re_indexed_unasked(repo, monkeypatch, capsys):
    monkeypatch.setattr(freshness, "AUTO_REFRESH_FILES", 5)  # (the fixture's 19 files stand for a large tree)
    _move_the_tree(repo)
    assert main(["retrieve", TASK, "--repo", str(repo)]) == 0
    out = capsys.readouterr()
    assert "older than the tree: 1 changed, 1 added, 1 removed" in out.err and "re-indexed" not in out.err, out.err
    assert "def compute_refund" not in out.out


def test_a_sample_of_a_large_tree_still_sees_edits(repo, monkeypatch):
    monkeypatch.setattr(freshness, "SAMPLE_FILES", 3)
    (repo / "app" / "billing" / "refund.py").write_text(NEW)
    for path in (repo / "app").rglob("*.py"):  # every file edited: whichever are sampled, they moved
        path.write_text(path.read_text() + "\n# edited\n")
    staleness = freshness.kb_staleness(repo, repo / ".cra")
    assert staleness.sampled < staleness.indexed and staleness.changed >= 1
    assert "looked at" in staleness.describe()
