"""`python -m cra.drivers.research.snapshot`: the before/after comparison of retrieval output that guards refactors."""

from __future__ import annotations

import filecmp
import json
import subprocess

from cra.drivers.research.snapshot import main
from tests.fixture_repo import make_repo


def _mirror_and_cases(tmp_path):
    """A fixture repository cloned bare into a mirror root, and a shared-format case file on its HEAD."""
    repo = make_repo(tmp_path / "src")
    mirror = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(mirror / "acme+app" / "repo")], check=True)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    cases = tmp_path / "cases.jsonl"
    tasks = {
        "login-1": "validate_login returns no token for LDAP users",
        "billing-2": "Invoice currency formatting is wrong",
    }
    cases.write_text(
        "".join(
            json.dumps(
                {
                    "instance_id": cid,
                    "repo": "acme/app",
                    "base_commit": head,
                    "problem_statement": t,
                    "gold_files": ["app/auth/handler.py"],
                }
            )
            + "\n"
            for cid, t in tasks.items()
        )
    )
    return mirror, cases


def _run(cases, mirror, out, cache, capsys):
    assert main(["--cases", str(cases), "--mirror", str(mirror), "--out", str(out), "--cache", str(cache)]) == 0
    return capsys.readouterr()


def test_two_runs_on_one_cached_kb_write_identical_outputs_and_index_once(tmp_path, capsys):
    mirror, cases = _mirror_and_cases(tmp_path)
    cache = tmp_path / "cache"
    first = _run(cases, mirror, tmp_path / "before", cache, capsys)
    second = _run(cases, mirror, tmp_path / "after", cache, capsys)

    assert first.err.count("[index]") == 1  # both cases share one base commit: one tree, one KB
    assert "[index]" not in second.err  # the second run reads the very same KB files
    names = sorted(p.name for p in (tmp_path / "before" / "login-1").iterdir())
    assert names == [
        "package-32768.json",
        "package-32768.md",
        "package-4096.json",
        "package-4096.md",
        "prompt-32768.txt",
        "prompt-4096.txt",
        "signal_matrix.csv",
        "verbose-32768.txt",
        "verbose-4096.txt",
    ]
    package = json.loads((tmp_path / "before" / "login-1" / "package-4096.json").read_text())
    assert package["token_count"] <= 4096 and "app/auth/handler.py" in [f["path"] for f in package["files"]]
    comparison = filecmp.dircmp(tmp_path / "before", tmp_path / "after")
    assert comparison.subdirs.keys() == {"login-1", "billing-2"}
    assert not comparison.diff_files and all(not d.diff_files and not d.left_only for d in comparison.subdirs.values())


def test_a_different_retrieval_shows_as_a_differing_file(tmp_path, capsys):
    mirror, cases = _mirror_and_cases(tmp_path)
    cache = tmp_path / "cache"
    _run(cases, mirror, tmp_path / "before", cache, capsys)
    record = json.loads(cases.read_text().splitlines()[0])
    cases.write_text(json.dumps({**record, "problem_statement": "logout leaves the token valid"}) + "\n")
    _run(cases, mirror, tmp_path / "after", cache, capsys)

    left, right = (tmp_path / d / "login-1" / "package-32768.json" for d in ("before", "after"))
    assert left.read_bytes() != right.read_bytes()


def test_a_case_without_a_mirror_is_skipped_and_named(tmp_path, capsys):
    _, cases = _mirror_and_cases(tmp_path)
    empty = tmp_path / "no-mirrors"
    empty.mkdir()
    out = _run(cases, empty, tmp_path / "out", tmp_path / "cache", capsys).out

    assert "0 cases written" in out and "skipped login-1: no mirror of acme/app" in out
