"""`cra retrieve --memories --task-id ID`: the human guidance and failure context of a retried task and the
scoped memories open the package, are never evicted, and fit inside its budget with the code."""

from __future__ import annotations

import json

import pytest

from cra.drivers.cli.main import main
from tests.contract import assert_json_contract
from tests.fixture_repo import make_repo

TASK = "Fix the login validation bug: validate_login accepts short passwords for LDAP users"
HINT = "The bug is in validate_login's LDAP branch; leave ldap.py alone"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("pinned")
    repo = make_repo(base / "repo")
    assert main(["index", str(repo)]) == 0
    memory, db = str(base / "memory"), str(base / "escalations.db")
    for text, scope in (
        ("Validate LDAP passwords with the policy module, never inline length checks", "language:python"),
        ("Go services log with zap, never fmt.Println", "language:go"),
        ("Login handlers return AuthResult instead of raising", "project:repo"),
    ):
        assert main(["memory", "add", text, "--scope", scope, "--memory-dir", memory]) == 0
    for _ in range(3):
        assert main(["attempt", "T1", "--error", "AssertionError: short password accepted", "--db", db]) == 0
    assert main(["guide", "T1", "--hint", HINT, "--db", db]) == 0
    return repo, memory, db


def _retrieve(capsys, setup, *extra, budget=4000, fmt="json"):
    repo, memory, db = setup
    capsys.readouterr()
    code = main(
        [
            "retrieve",
            TASK,
            "--repo",
            str(repo),
            "--budget",
            str(budget),
            "--format",
            fmt,
            "--memories",
            "--memory-dir",
            memory,
            "--task-id",
            "T1",
            "--db",
            db,
            *extra,
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_guidance_then_memories_open_the_package(setup, capsys):
    text = _retrieve(capsys, setup, fmt="markdown")
    guidance, memories, task = (
        text.index(h) for h in ("## CRITICAL: Human Guidance Provided", "## Memories", "## Task")
    )
    assert guidance == 0 and guidance < memories < task
    assert HINT in text and "## Previous Failure Context" in text
    assert "policy module" in text and "AuthResult instead of raising" in text  # the repository's project: its name
    assert "zap" not in text  # the top files are Python: Go's rules stay out


def test_json_carries_the_sections_and_their_provenance(setup, capsys):
    doc = json.loads(_retrieve(capsys, setup))
    assert_json_contract(doc)
    assert [p["name"] for p in doc["pinned"]] == ["guidance", "memories"]
    prov = doc["provenance"]
    assert prov["guidance"]["task_id"] == "T1" and prov["guidance"]["guidance"][0]["hint"] == HINT
    assert prov["memories"]["language"] == "python" and {m["scope"] for m in prov["memories"]["memories"]} == {
        "language:python",
        "project:repo",
    }
    assert prov["budget"]["pinned"] > 0


@pytest.mark.parametrize("budget", [400, 700, 1200, 4000])
def test_the_sections_are_never_evicted_and_the_package_fits(setup, capsys, budget):
    doc = json.loads(_retrieve(capsys, setup, budget=budget))
    assert doc["token_count"] <= budget == doc["budget"]
    assert [p["name"] for p in doc["pinned"]][0] == "guidance"


def test_a_damaged_memory_file_is_named_even_when_no_memory_applies(setup, capsys, tmp_path):
    repo, _, _ = setup
    memory = tmp_path / "memory"
    (memory / "languages").mkdir(parents=True)
    (memory / "languages" / "python.json").write_text("{broken")
    assert (
        main(["retrieve", TASK, "--repo", str(repo), "--format", "json", "--memories", "--memory-dir", str(memory)])
        == 0
    )
    out = capsys.readouterr()
    assert "python.json" in out.err and json.loads(out.out)["provenance"]["memories"]["memories"] == []


def test_an_unknown_task_id_is_one_line(setup, capsys):
    repo, _, db = setup
    assert main(["retrieve", TASK, "--repo", str(repo), "--task-id", "nope", "--db", db]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err


def test_without_the_flags_the_package_has_no_pinned_sections(setup, capsys):
    repo, _, _ = setup
    capsys.readouterr()
    assert main(["retrieve", TASK, "--repo", str(repo), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "pinned" not in doc and "memories" not in doc["provenance"] and "guidance" not in doc["provenance"]
