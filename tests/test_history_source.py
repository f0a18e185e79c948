"""A tree extracted from a mirror is indexed with the mirror's history up to that commit, never later."""

import subprocess

from drivers.indexer import index_repository
from drivers.kb import load_kb
from tests.fixture_repo import HISTORY, make_repo


def test_history_from_another_git_dir_stops_at_the_given_commit(tmp_path):
    repo = make_repo(tmp_path / "repo")
    base = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD~1"], capture_output=True, text=True, check=True).stdout.strip()
    tree = tmp_path / "tree"
    tree.mkdir()
    subprocess.run(f"git -C {repo} archive {base} | tar -x -C {tree}", shell=True, check=True)
    stats = index_repository(tree, history_from=(repo / ".git", base))
    assert stats["history_available"] and stats["n_commits"] == len(HISTORY)  # initial + 3 of 4 later commits
    kb = load_kb(tree / ".cra")
    assert "Invoice currency formatting" not in set(kb.tables["commits"]["message"].str.strip())
    assert kb.metadata["head"] == base
    cochange = kb.tables["cochange"]
    files = kb.files.set_index("path")["file_id"]
    pair = cochange[(cochange[["file_a", "file_b"]].isin([files["app/auth/handler.py"], files["app/auth/ldap.py"]])).all(axis=1)]
    assert pair["count"].tolist() == [4]
