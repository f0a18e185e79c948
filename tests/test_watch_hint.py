"""`cra serve --watch` hands the paths its watcher saw change to the index run (`cra.drivers.serve.tree_walk`,
`index_repository(hint=...)`): the tree is not walked and only those paths are stat'ed, and the KB written is the
one a fresh `cra index` of the tree writes."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from cra.drivers.index import sources
from cra.drivers.index.indexer import index_repository
from cra.drivers.kb import stat_cache
from cra.drivers.serve.tree_walk import change_hint, git_index_stat, remembered, walk_after
from tests.fixture_repo import make_repo
from tests.kb_compare import compare_kbs

WHAT_A_RUN_DID = {"n_parsed", "n_reused", "workers", "notes", "n_resumed", "carried"}


def same_as_fresh(repo: Path, kb: Path, tmp_path: Path) -> list[str]:
    """The differences between kb and a fresh `cra index` of repo (none: the same KB)."""
    fresh = tmp_path / f"fresh-{time.monotonic_ns()}"
    index_repository(repo, fresh, history=0)
    return compare_kbs(kb, fresh, ignore=WHAT_A_RUN_DID)[1]


def edit(repo: Path, rel: str, text: str) -> None:
    """Write a file with an mtime clear of the stat cache's racy window (as an edit made a while later would)."""
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    old = time.time_ns() - 10 * stat_cache.RACY_NS
    os.utime(path, ns=(old, old))


def test_a_hinted_run_walks_nothing_stats_only_the_changed_paths_and_writes_what_cra_index_writes(
    tmp_path, monkeypatch
):
    repo, kb = make_repo(tmp_path / "demo"), tmp_path / "kb"
    index_repository(repo, kb, history=0)
    for path in repo.rglob("*"):  # (every file older than the racy window, as in a tree edited now and then)
        if path.is_file() and ".git" not in path.parts:
            os.utime(path, ns=(time.time_ns() - 10 * stat_cache.RACY_NS,) * 2)
    before = change_hint(repo, kb, None, None, git_index_stat(repo))
    assert before.changed is None  # no memory of a walk: the tree is walked, every file stat'ed
    index_repository(repo, kb, history=0, hint=before)
    memory = remembered(repo, kb, before, git_index_stat(repo), None)

    edit(repo, "app/auth/ldap.py", (repo / "app/auth/ldap.py").read_text() + "\n\ndef ldap_timeout():\n    return 5\n")
    edit(repo, "app/billing/tax.py", "def vat_rate(country):\n    return 0.2\n")  # added
    (repo / "app/utils.py").rename(repo / "app/text_utils.py")  # renamed
    (repo / "README.md").unlink()  # deleted
    changed = ["app/auth/ldap.py", "app/billing/tax.py", "app/utils.py", "app/text_utils.py", "README.md"]
    hint = change_hint(repo, kb, memory, changed, git_index_stat(repo))
    assert hint.changed == frozenset(changed)

    stated: list[str] = []
    real_stats = stat_cache.file_stats

    def file_stats(root, paths):
        paths = list(paths)
        stated.extend(paths)
        return real_stats(root, paths)

    def no_walk(root):
        raise AssertionError("the tree was walked")

    monkeypatch.setattr(sources, "source_paths", no_walk)
    monkeypatch.setattr(stat_cache, "file_stats", file_stats)
    stats = index_repository(repo, kb, history=0, hint=hint)
    monkeypatch.undo()
    assert sorted(stated) == sorted(set(changed) - {"app/utils.py", "README.md"})  # not the other 20 files
    assert stats["n_parsed"] >= 2 and "app/utils.py" not in hint.walk.paths and "README.md" not in hint.walk.paths
    assert same_as_fresh(repo, kb, tmp_path) == []


def test_changes_the_walk_cannot_follow_exactly_make_it_walk_the_tree(tmp_path):
    repo = make_repo(tmp_path / "demo", git=False)
    last = sources.source_paths(repo)
    (repo / "app" / "new_pkg").mkdir()
    (repo / "app" / "new_pkg" / "mod.py").write_text("x = 1\n")
    assert walk_after(repo, repo / ".cra", last, ["app/new_pkg"]) is None  # a directory: its files
    (repo / "notes.pyc").write_bytes(b"\0")  # noise: the walk counts it among the ignored
    assert walk_after(repo, repo / ".cra", last, ["notes.pyc"]) is None
    (repo / ".gitignore").write_text("secret.env\n")  # build/ is not ignored any more
    assert walk_after(repo, repo / ".cra", last, [".gitignore"]) is None
    assert walk_after(repo, repo / ".cra", last, [".git/HEAD"]) is None
    os.symlink(repo / "app" / "utils.py", repo / "app" / "link.py")
    assert walk_after(repo, repo / ".cra", last, ["app/link.py"]) is None

    (repo / "app" / ".tmp-edit.swp").write_text("")  # an editor's temporary file, come and gone
    (repo / "app" / ".tmp-edit.swp").unlink()
    assert walk_after(repo, repo / ".cra", last, ["app/.tmp-edit.swp"]) == last  # (nothing to follow)
    (repo / "app" / "billing" / "tax.py").write_text("y = 2\n")
    followed = walk_after(repo, repo / ".cra", last, ["app/billing/tax.py"])
    assert set(followed.paths) == set(last.paths) | {"app/billing/tax.py"}
    assert (followed.n_ignored, followed.tracked) == (last.n_ignored, last.tracked)


def test_the_watch_worker_follows_the_changed_paths_and_walks_again_when_it_cannot(tmp_path):
    from cra.drivers.serve.index_worker import IndexWorker

    repo, kb = make_repo(tmp_path / "demo", git=False), tmp_path / "kb"
    worker = IndexWorker()
    try:
        assert worker.index(repo, kb, 0, None)["walked"]  # first run: walked
        (repo / "app" / "tax.py").write_text("def vat_rate(country):\n    return 0.2\n")
        stats = worker.index(repo, kb, 0, ["app/tax.py"])
        assert not stats["walked"] and stats["n_parsed"] == 1
        assert same_as_fresh(repo, kb, tmp_path) == []
        (repo / "app" / "tax.py").unlink()
        (repo / "app" / "cache.pyc").write_bytes(b"\0")  # the watcher drops it, and asks for a walk (None)
        stats = worker.index(repo, kb, 0, None)
        assert stats["walked"] and stats["n_files"] == stats["n_reused"]
        assert same_as_fresh(repo, kb, tmp_path) == []  # (the walk's count of ignored files is right)
        (repo / ".gitignore").write_text("secret.env\n")  # build/ is read now
        stats = worker.index(repo, kb, 0, [".gitignore"])
        assert stats["walked"] and "generated" in (repo / "build" / "out.py").read_text()
        assert same_as_fresh(repo, kb, tmp_path) == []
    finally:
        worker.close()


@pytest.mark.parametrize("path, verdict", [("app/x.pyc", "counted"), ("build/x.py", ""), ("app/x.py", "read")])
def test_the_change_filter_says_which_dropped_changes_move_the_walks_count(tmp_path, path, verdict):
    from cra.drivers.serve.watch import ChangeFilter

    repo = make_repo(tmp_path / "demo", git=False)
    (repo / path).write_text("")
    assert ChangeFilter(repo, repo / ".cra").verdict(str(repo / path)) == verdict


def test_a_search_reads_a_reindexed_kb_while_it_is_prepared_and_other_tools_answer_from_the_last_one(
    tmp_path, monkeypatch
):
    from cra.drivers.serve import tools, workspace

    repo = make_repo(tmp_path / "demo", git=False)
    ws = workspace.Workspace([repo], kb_dir=tmp_path / "kb", history=0, watched=True)
    real_prepared = workspace.prepared

    def slow_prepared(kb):  # (the background's preparing, made slow)
        if threading.current_thread().name.startswith("cra-reindex"):
            time.sleep(4.0)
        return real_prepared(kb)

    try:
        assert tools.search_symbols(ws, "vat_rate")["symbols"] == []  # (KB built, loaded and prepared)
        monkeypatch.setattr(workspace, "prepared", slow_prepared)
        (repo / "app" / "tax.py").write_text("def vat_rate(country):\n    return 0.2\n")
        ws.changed(ws.repository(), {"app/tax.py"})
        deadline = time.monotonic() + 60
        found = tools.search_symbols(ws, "vat_rate")  # (at once: read from the file, `cra.drivers.serve.edited`)
        assert found["symbols"][0]["path"] == "app/tax.py" and "read from the files" in found["index"]["note"]
        while "index" in (found := tools.search_symbols(ws, "vat_rate")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert found["symbols"][0]["path"] == "app/tax.py" and "index" not in found  # all it answers from is in
        assert ws.repository().watch.loaded is not None  # ... while the run still prepares that KB
        started = time.monotonic()
        text = tools.get_context(ws, "apply a discount rate to an invoice total")
        assert time.monotonic() - started < 2.0  # answered now, from the last prepared KB, and says so
        assert text.index["state"] == "re-indexing" and text.index["changed_files"] == 1
        while ws.repository().watch.runs < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tools.get_context(ws, "apply a discount rate to an invoice total").index is None
        assert ws.repository().watch.loaded is None and "_request_overrides" in vars(ws.repository().kb)
    finally:
        ws.stop.set()
        ws.worker.close()
