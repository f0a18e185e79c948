"""A tree extracted from a mirror is indexed with the mirror's history up to that commit, never later."""

import subprocess

import pandas as pd

from cra.drivers.index.indexer import index_repository
from cra.drivers.kb.store import load_kb
from tests.fixture_repo import HISTORY, make_repo


def test_history_from_another_git_dir_stops_at_the_given_commit(tmp_path):
    repo = make_repo(tmp_path / "repo")
    base = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD~1"], capture_output=True, text=True, check=True
    ).stdout.strip()
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
    pair = cochange[
        (cochange[["file_a", "file_b"]].isin([files["app/auth/handler.py"], files["app/auth/ldap.py"]])).all(axis=1)
    ]
    assert pair["count"].tolist() == [4]


def test_without_history_the_per_file_frames_are_typed_as_with_one():
    """Outside git (or --history 0) file_history and kb_cochange skip their merges and grouping: what they give is
    typed as what the grouping gives with a history, so that kb_files and the KB tables come out the same."""
    from cra.dataflows.index import history

    log = history.RECORD_SEP.join(["", history.FIELD_SEP.join(["abc", "100", "me", "fix", "a.py\nb.py"])])
    indexed = pd.DataFrame({"path": ["a.py", "b.py"], "file_id": [0, 1]})
    with_log = history.kb_commits(log), history.kb_commit_files(log)
    without = history.kb_commits(None), history.kb_commit_files(None)
    assert len(with_log[1]) == 2 and without[1].empty
    some, none = history.file_history(*with_log), history.file_history(*without)
    assert none.empty and none.dtypes.equals(some.dtypes) and none.index.name == some.index.name == "path"
    some, none = history.kb_cochange(*with_log, indexed), history.kb_cochange(*without, indexed)
    assert (
        len(some) == 1 and none.empty and none.dtypes.equals(some.dtypes) and list(none.columns) == list(some.columns)
    )
