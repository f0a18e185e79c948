"""Companion files: a changelog most fix commits change is learned from the repository's history at index
time and shown in the package as a note with its latest entries, not ranked as code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cra.drivers.cli.main import main

ENV = {
    "GIT_AUTHOR_NAME": "a",
    "GIT_AUTHOR_EMAIL": "a@x",
    "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@x",
    "PATH": "/usr/bin:/bin",
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=ENV)


def _history(root: Path, with_changelog: bool) -> Path:
    root.mkdir()
    (root / "parser.go").write_text(
        "package p\n\n// Parse reads a config line.\nfunc Parse(line string) int { return 0 }\n"
    )
    (root / "render.go").write_text(
        'package p\n\n// Render writes a config line.\nfunc Render(v int) string { return "" }\n'
    )
    (root / "CHANGELOG.md").write_text("# Changelog\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "initial import")
    entries = []
    for i in range(10):
        target = root / ("parser.go" if i % 2 else "render.go")
        target.write_text(target.read_text() + f"\n// fix {i}\n")
        if with_changelog:
            entries.insert(0, f"## 1.0.{i}\n\n- fixed crash number {i} (#{i + 1})\n")
            (root / "CHANGELOG.md").write_text("# Changelog\n\n" + "\n".join(entries))
        _git(root, "commit", "-qam", f"Fix crash number {i} (#{i + 1})")
    return root


def _package(capsys, repo: Path) -> dict:
    assert main(["index", str(repo)]) == 0
    capsys.readouterr()
    assert main(["retrieve", "parser crashes on an empty config line", "--repo", str(repo), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_changelog_that_fixes_change_is_a_note_with_its_latest_entry(tmp_path, capsys):
    doc = _package(capsys, _history(tmp_path / "repo", with_changelog=True))
    assert [c["path"] for c in doc["companions"]] == ["CHANGELOG.md"]
    companion = doc["companions"][0]
    assert "fixed crash number 9" in companion["latest"] and "number 0" not in companion["latest"]
    assert "fix commits" in companion["note"]
    assert "CHANGELOG.md" not in [f["path"] for f in doc["files"]][:1]  # shown as a note, not the top-ranked file
    assert doc["token_count"] <= doc["budget"]
    assert main(["retrieve", "parser crashes on an empty config line", "--repo", str(tmp_path / "repo")]) == 0
    markdown = capsys.readouterr().out
    assert "## Companion Files" in markdown and "fixed crash number 9" in markdown


def test_no_companion_when_fixes_leave_the_changelog_alone(tmp_path, capsys):
    doc = _package(capsys, _history(tmp_path / "repo", with_changelog=False))
    assert doc["companions"] == []


def test_a_note_two_fixes_happened_to_change_is_no_companion(tmp_path, capsys):
    """A guide that 2 of the 8 fix commits touched is a quarter of them, but not a habit of the project."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "parser.go").write_text(
        "package p\n\n// Parse reads a config line.\nfunc Parse(line string) int { return 0 }\n"
    )
    (repo / "MIGRATION.md").write_text("# Migration\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "initial import")
    for i in range(8):
        (repo / "parser.go").write_text((repo / "parser.go").read_text() + f"\n// fix {i}\n")
        if i in (3, 6):
            (repo / "MIGRATION.md").write_text((repo / "MIGRATION.md").read_text() + f"\n- step {i}\n")
        _git(repo, "commit", "-qam", f"Fix bug {i} (#{i + 1})")
    assert _package(capsys, repo)["companions"] == []
