"""The memory store and `cra memory`: concurrent writers, malformed files, names that would escape, the CLI."""

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cra.drivers.cli.main import main
from cra.drivers.common.errors import CraError
from cra.drivers.memory.store import add_memory, read_memories

NOW = datetime(2026, 6, 1, tzinfo=UTC)
ROOT = Path(__file__).resolve().parent.parent

WRITER = """
import sys
from datetime import datetime, timezone
from pathlib import Path
from cra.drivers.memory.store import add_memory
root, worker, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(n):
    scope = "universal" if i % 2 else "project:hydra"
    add_memory(root, f"worker {worker} memory {i}", scope, None, 0.9, datetime.now(timezone.utc))
"""


def test_concurrent_processes_lose_no_memory(tmp_path):
    root = tmp_path / "memory"
    workers, per_worker = 4, 20
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(w), str(per_worker)], cwd=ROOT)
        for w in range(workers)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * workers
    read = read_memories(root)
    assert read.warnings == []
    expected = {f"worker {w} memory {i}" for w in range(workers) for i in range(per_worker)}
    assert sorted(m["content"] for m in read.memories) == sorted(expected)
    assert len(json.loads((root / "profile.json").read_text())["general"]) == workers * per_worker // 2
    assert not [p for p in root.rglob("*.tmp")]


def test_adding_the_same_content_refreshes_it(tmp_path):
    path, new = add_memory(tmp_path, "Use tabs", "language:go", None, 0.5, NOW)
    assert new and path == tmp_path / "languages" / "go.json"
    _, new = add_memory(tmp_path, "Use tabs", "language:go", None, 0.9, NOW)
    entries = json.loads(path.read_text())["preferences"]
    assert not new and len(entries) == 1 and entries[0]["confidence"] == 0.9


def test_malformed_unreadable_and_bad_entries_are_skipped_by_name(tmp_path):
    add_memory(tmp_path, "kept universal", "universal", None, 1.0, NOW)
    add_memory(tmp_path, "kept hydra", "project:hydra", None, 1.0, NOW)
    (tmp_path / "languages").mkdir()
    (tmp_path / "languages" / "go.json").write_text("{not json")
    (tmp_path / "languages" / "rust.json").write_bytes(b'{"preferences": ["\xff\xfe"]}')
    (tmp_path / "corrections.json").write_text('{"corrections": "should be a list"}')
    tasks = tmp_path / "projects" / "hydra" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "coding.json").write_text(
        json.dumps(
            {
                "rules": [
                    {"content": "kept rule", "timestamp": "2026-05-01T00:00:00"},
                    {"content": "too sure", "timestamp": "2026-05-01T00:00:00", "confidence": 3},
                    {"timestamp": "2026-05-01T00:00:00"},
                ]
            }
        )
    )
    read = read_memories(tmp_path)
    assert sorted(m["content"] for m in read.memories) == ["kept hydra", "kept rule", "kept universal"]
    text = "\n".join(read.warnings)
    assert len(read.warnings) == 5
    for name, why in (
        ("go.json", "not valid JSON"),
        ("rust.json", "not UTF-8"),
        ("corrections.json", "not a list"),
        ("coding.json entry 2 of 3", "confidence 3"),
        ("coding.json entry 3 of 3", "no content"),
    ):
        assert any(name in w and why in w for w in read.warnings), (name, text)


def test_adding_to_a_malformed_file_leaves_it_untouched(tmp_path):
    (tmp_path / "languages").mkdir()
    broken = tmp_path / "languages" / "go.json"
    broken.write_text('{"preferences": [')
    with pytest.raises(CraError, match="go.json"):
        add_memory(tmp_path, "Use tabs", "language:go", None, 1.0, NOW)
    assert broken.read_text() == '{"preferences": ['


@pytest.mark.parametrize(
    "scope",
    [
        "project:..",
        "project:../outside",
        "project:/etc",
        "project:p:task:../../x",
        "language:../../x",
        "project:.hidden",
        "project:a/b",
        "project:",
        "projects:x",
        "project:p:task:",
    ],
)
def test_names_that_would_escape_are_refused(tmp_path, scope):
    root = tmp_path / "store" / "memory"
    with pytest.raises(CraError) as err:
        add_memory(root, "x", scope, None, 1.0, NOW)
    assert "\n" not in str(err.value)
    assert not any(p.is_file() and p.name != ".lock" for p in tmp_path.rglob("*"))


def test_query_refuses_escaping_context_names(tmp_path):
    from cra.dataflows.memory.models import MemoryQuery
    from cra.drivers.memory.memories import query_memories

    for context in ({"project": "../x"}, {"language": "../../etc/passwd"}, {"project": "p", "task": "../t"}):
        with pytest.raises(CraError, match="not allowed"):
            query_memories(tmp_path, MemoryQuery(), now=NOW, **context)


# --- the CLI ------------------------------------------------------------------------------------------------


def _cra(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_add_list_query(tmp_path, capsys):
    d = ["--memory-dir", str(tmp_path)]
    assert _cra(capsys, "memory", "add", "Keep functions short", *d)[0] == 0
    assert _cra(capsys, "memory", "add", "Never force push", "--category", "correction", *d)[0] == 0
    assert _cra(capsys, "memory", "add", "Use errgroup", "--scope", "language:go", "--confidence", "0.7", *d)[0] == 0
    code, out, _ = _cra(capsys, "memory", "add", "Queue lives in Postgres", "--scope", "project:hydra", *d)
    assert code == 0 and str(tmp_path / "projects" / "hydra" / "decisions.json") in out
    assert _cra(capsys, "memory", "add", "Lint first", "--scope", "project:hydra:task:coding", *d)[0] == 0
    assert json.loads((tmp_path / "corrections.json").read_text())["corrections"][0]["content"] == "Never force push"

    code, out, _ = _cra(capsys, "memory", "list", "--json", *d)
    listed = json.loads(out)
    assert code == 0 and len(listed) == 5
    assert {m["scope"] for m in listed} == {"universal", "language:go", "project:hydra", "project:hydra:task:coding"}
    code, out, _ = _cra(capsys, "memory", "list", *d)
    assert len(out.splitlines()) == 5 and "language:go\t" in out

    code, out, _ = _cra(
        capsys,
        "memory",
        "query",
        "--project",
        "hydra",
        "--task",
        "coding",
        "--language",
        "go",
        "--text",
        "postgres queue",
        "--json",
        *d,
    )
    result = json.loads(out)
    assert code == 0 and result["total_found"] == result["total_returned"] == 5
    assert set(result["memories"][0]) == {
        "content",
        "scope",
        "category",
        "confidence",
        "timestamp",
        "relevance_score",
        "reason",
    }
    assert result["memories"][0]["content"] in ("Lint first", "Queue lives in Postgres")
    assert result["token_estimate"] > 0

    code, out, _ = _cra(capsys, "memory", "query", "--budget", "6", "--json", *d)
    result = json.loads(out)
    assert code == 0 and result["token_estimate"] <= 6 and result["total_returned"] < result["total_found"] == 2
    code, out, _ = _cra(capsys, "memory", "query", "--language", "go", *d)
    assert code == 0 and "[language:go] Use errgroup" in out and "3 of 3" in out.splitlines()[-1]


def test_cli_import_merges_and_reports_rejections(tmp_path, capsys):
    source, target = tmp_path / "old", tmp_path / "new"
    (source / "languages").mkdir(parents=True)
    (source / "profile.json").write_text(
        json.dumps(
            {
                "general": [
                    {"content": "Be brief", "timestamp": "2026-01-01T00:00:00", "confidence": 0.9},
                    {"content": "", "timestamp": "2026-01-01T00:00:00"},
                ]
            }
        )
    )
    (source / "languages" / "go.json").write_text("[broken")
    (source / "projects" / "hydra" / "tasks").mkdir(parents=True)
    (source / "projects" / "hydra" / "tasks" / "coding.json").write_text(
        json.dumps({"rules": [{"content": "Lint first", "timestamp": "2026-01-01T00:00:00"}]})
    )
    (source / "notes.txt").write_text("not a memory file")
    add_memory(target, "Be brief", "universal", None, 0.5, NOW)  # already there, newer: kept, not duplicated

    code, out, _ = _cra(capsys, "memory", "import", str(source), "--memory-dir", str(target))
    assert code == 0
    assert out.splitlines()[0].startswith("imported 1 memories (1 already there") and "rejected 3" in out
    assert "go.json: not valid JSON" in out and "profile.json entry 2 of 2: no content" in out and "notes.txt" in out
    read = read_memories(target)
    assert sorted((m["scope"], m["content"]) for m in read.memories) == [
        ("project:hydra:task:coding", "Lint first"),
        ("universal", "Be brief"),
    ]
    assert json.loads((target / "profile.json").read_text())["general"][0]["confidence"] == 0.5  # the newer copy


@pytest.mark.parametrize(
    "argv, words",
    [
        (["memory", "add", "x", "--scope", "project:../up"], "not allowed"),
        (["memory", "add", "x", "--scope", "team:a"], "not one of"),
        (["memory", "add", "x", "--confidence", "high"], "--confidence"),
        (["memory", "add", "   "], "empty"),
        (["memory", "query", "--budget", "-5"], "--budget"),
        (["memory", "query", "--limit", "0"], "--limit"),
        (["memory", "query", "--task", "coding"], "--project"),
        (["memory", "query", "--project", "a/b"], "not allowed"),
        (["memory", "import", "/nonexistent/dir"], "not a directory"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, words):
    code, out, err = _cra(capsys, *argv, "--memory-dir", str(tmp_path / "m"))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("cra: error:") and words in err
    assert not (tmp_path / "m" / "projects").exists()


def test_cli_list_warns_about_malformed_files_and_still_lists(tmp_path, capsys):
    add_memory(tmp_path, "kept", "universal", None, 1.0, NOW)
    (tmp_path / "corrections.json").write_text("{")
    code, out, err = _cra(capsys, "memory", "list", "--memory-dir", str(tmp_path))
    assert code == 0 and "kept" in out
    assert err.startswith("warning: skipped ") and "corrections.json" in err


def test_cli_unwritable_memory_dir_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    code, _, err = _cra(capsys, "memory", "add", "x", "--memory-dir", str(blocker / "memory"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--memory-dir" in err
    assert blocker.read_text() == "not a directory"


def test_refreshing_a_memory_keeps_hand_added_fields_and_import_keeps_the_newer_copy(tmp_path):
    import json
    from datetime import datetime

    from cra.drivers.memory.store import add_memory, import_hierarchy

    root, old = tmp_path / "mem", tmp_path / "old"
    path, _ = add_memory(
        root, "Wrap errors with %w", "language:go", "preference", 1.0, datetime(2026, 5, 1, tzinfo=UTC)
    )
    doc = json.loads(path.read_text())
    key = next(iter(doc))
    doc[key][0]["source"] = "PR 12"  # edited by hand
    path.write_text(json.dumps(doc))
    add_memory(root, "Wrap errors with %w", "language:go", "preference", 0.9, datetime(2026, 6, 1, tzinfo=UTC))
    entry = json.loads(path.read_text())[key][0]
    assert entry["source"] == "PR 12" and entry["confidence"] == 0.9
    add_memory(old, "Wrap errors with %w", "language:go", "preference", 0.1, datetime(2020, 1, 1, tzinfo=UTC))
    import_hierarchy(old, root)
    entry = json.loads(path.read_text())[key][0]
    assert entry["confidence"] == 0.9 and entry["timestamp"].startswith("2026-06")  # the older copy did not win
