"""`cra index` and `cra retrieve` end to end on the fixture repository: acceptance criteria (gate N below) + errors."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cra.drivers.cli.main import main
from tests.contract import assert_json_contract
from tests.fixture_repo import make_repo

TASK = "Fix the login validation bug in handler.py: validate_login accepts short passwords for LDAP users"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = make_repo(tmp_path_factory.mktemp("cli") / "repo")
    assert main(["index", str(root)]) == 0
    return root


def _retrieve(capsys, repo, *args):
    capsys.readouterr()
    code = main(["retrieve", *args, "--repo", str(repo), "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    assert_json_contract(doc)
    return doc


def test_index_summary_names_languages_history_and_skips(tmp_path, capsys):
    root = make_repo(tmp_path / "r")
    assert main(["index", str(root)]) == 0
    out = capsys.readouterr().out
    assert "python" in out and "typescript" in out and "go" in out
    assert "5 commits" in out
    assert "binary" in out and "parse errors in 1 files" in out and "app/broken.py" in out


def test_seed_file_and_its_imports_are_in_scope(repo, capsys):
    doc = _retrieve(capsys, repo, TASK)
    scope = {row["path"]: row for row in doc["provenance"]["scope"]}
    assert scope["app/auth/handler.py"]["seed"] is True  # gate 2: the named file is a seed
    assert scope["app/auth/handler.py"]["total_score"] == 1.0
    assert scope["app/auth/handler.py"]["seed_reason"] == "file hint 'handler.py'"  # and it says so
    assert "app/auth/types.py" in scope and "app/auth/ldap.py" in scope  # gate 3: its direct imports
    assert "scripts/deploy.sh" not in scope or scope["scripts/deploy.sh"]["rank"] > scope["app/auth/types.py"]["rank"]


def test_primary_symbols_come_from_seeds_and_match_the_task(repo, capsys):
    doc = _retrieve(capsys, repo, TASK)
    primary = {(f["path"], s["name"]) for f in doc["files"] for s in f["symbols"] if s["relevance"] == "primary"}
    assert ("app/auth/handler.py", "validate_login") in primary  # gate 4
    body = next(
        s["body"]
        for f in doc["files"]
        for s in f["symbols"]
        if s["name"] == "validate_login" and f["path"].endswith("handler.py")
    )
    assert "return validate_ldap(request)" in body
    handler = next(f for f in doc["files"] if f["path"] == "app/auth/handler.py")
    assert any("legacy LDAP" in c for c in handler["rationale_comments"])


@pytest.mark.parametrize("budget", [512, 1000, 2000, 4096, 8192, 32768, 100000])
def test_budget_is_never_exceeded(repo, capsys, budget):
    doc = _retrieve(capsys, repo, TASK, "--budget", str(budget))  # gate 5 (contract asserts token_count <= budget)
    assert doc["budget"] == budget


def test_works_without_history(tmp_path, capsys):
    root = make_repo(tmp_path / "plain", git=False)  # gate 6: no git history, no LLM metadata
    assert main(["index", str(root)]) == 0
    out = capsys.readouterr()
    assert "history: none read" in out.out and "no git history (not a git repository)" in out.err
    doc = _retrieve(capsys, root, TASK)
    assert doc["files"][0]["path"] == "app/auth/handler.py"


def test_markdown_and_prompt_formats_and_output_file(repo, capsys, tmp_path):
    out = tmp_path / "ctx.md"
    assert main(["retrieve", TASK, "--repo", str(repo), "--output", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("## Task") and "app/auth/handler.py" in text and "def validate_login" in text
    template = tmp_path / "t.txt"
    template.write_text("TASK<<{task}>>\nCODE<<{context}>>\nTYPES<<{types}>>\nTESTS<<{tests}>>")
    capsys.readouterr()
    assert main(["retrieve", TASK, "--repo", str(repo), "--format", "prompt", "--template", str(template)]) == 0
    prompt = capsys.readouterr().out
    assert prompt.startswith("TASK<<") and "CODE<<" in prompt and "validate_login" in prompt


def test_task_from_stdin_and_file(repo, capsys, tmp_path, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(TASK))
    doc = _retrieve(capsys, repo, "-")
    assert doc["task"]["raw_description"] == TASK
    task_file = tmp_path / "issue.md"
    task_file.write_text(TASK)
    doc = _retrieve(capsys, repo, "--task-file", str(task_file))
    assert "validate_login" in doc["task"]["symbol_hints"]


def test_verbose_prints_signal_tier_and_budget_tables(repo, capsys):
    assert main(["retrieve", TASK, "--repo", str(repo), "-v"]) == 0
    err = capsys.readouterr().err
    assert "lexical_match" in err and "app/auth/handler.py" in err
    assert "symbols per tier" in err and "budget:" in err
    assert "named by the task (seeds): app/auth/handler.py (file hint 'handler.py')" in err


def test_weights_file_overrides_defaults(repo, capsys, tmp_path):
    weights = tmp_path / "w.toml"
    weights.write_text("[weights]\nlexical_match = 0.0\nrecency = 0.0\n")
    doc = _retrieve(capsys, repo, TASK, "--weights", str(weights))
    assert doc["provenance"]["weights"]["lexical_match"] == 0.0
    assert abs(sum(doc["provenance"]["weights"].values()) - 1.0) < 1e-6


@pytest.mark.parametrize(
    "args, message",
    [
        (["index", "/no/such/dir"], "does not exist"),
        (["retrieve", "x", "--repo", "/no/such/dir"], "--repo /no/such/dir does not exist"),
        (["retrieve", "x", "--task-file", "/no/such/file"], "Cannot read task file"),
    ],
)
def test_user_errors_exit_2_with_one_line(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_index_a_file_and_bad_weights(repo, capsys, tmp_path):
    assert main(["index", str(repo / "README.md")]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("lexical_match = [oops")
    assert main(["retrieve", TASK, "--repo", str(repo), "--weights", str(bad)]) == 2
    assert "not valid TOML" in capsys.readouterr().err
    bad.write_text("no_such_signal = 1.0\n")
    assert main(["retrieve", TASK, "--repo", str(repo), "--weights", str(bad)]) == 2
    assert "no_such_signal" in capsys.readouterr().err


def test_failed_output_write_keeps_existing_file(repo, capsys, tmp_path):
    target = tmp_path / "keep.md"
    target.write_text("precious")
    assert main(["retrieve", "", "--repo", str(repo), "--output", str(target)]) == 2
    assert target.read_text() == "precious"


def test_console_script_exit_code(tmp_path):
    cra = Path(sys.executable).with_name("cra")
    proc = subprocess.run([str(cra), "retrieve", "anything", "--repo", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "cra index" in proc.stderr and "Traceback" not in proc.stderr


def test_the_installed_command_flushes_what_it_printed_and_exits_without_the_interpreters_teardown(
    tmp_path, monkeypatch, capsys
):
    """Python's shutdown frees a loaded KB object by object (0.15-0.2 s of a one-file re-index): `cra` exits at once."""
    import importlib.metadata
    import os

    from cra.drivers.cli import main as cli

    (entry,) = importlib.metadata.entry_points(group="console_scripts", name="cra")
    assert entry.value == "cra.drivers.cli.main:command"
    exits = []
    monkeypatch.setattr(os, "_exit", exits.append)
    cli.command(["retrieve", "anything", "--repo", str(tmp_path)])
    assert exits == [2] and "cra index" in capsys.readouterr().err

    class ReaderGone:  # `cra ... | head` after head has exited
        def write(self, text):
            return len(text)

        def flush(self):
            raise BrokenPipeError

    monkeypatch.setattr(sys, "stdout", ReaderGone())
    cli.command(["retrieve", "anything", "--repo", str(tmp_path)])
    assert exits == [2, 2]  # the same exit, no traceback


def test_a_template_without_its_placeholders_is_refused(repo, tmp_path, capsys):
    template = tmp_path / "t.txt"
    template.write_text("Fix this: {task")
    assert main(["retrieve", TASK, "--repo", str(repo), "--format", "prompt", "--template", str(template)]) == 2
    assert "lacks {task} or {context}" in capsys.readouterr().err


def test_the_installed_index_command_does_not_sweep_the_heap_before_it_exits(tmp_path, monkeypatch):
    """The index run pauses Python's collector; the installed command, which exits right after, does not switch it
    on again (the first collection would sweep every object the run left: 45 ms of a one-file re-index of Django).
    The Python API does: a caller's collector is left as it was."""
    import gc
    import os

    from cra.drivers.cli import main as cli
    from cra.drivers.index import indexer

    repo = make_repo(tmp_path / "repo")
    indexer.index_repository(repo)
    (repo / "extra.py").write_text("def extra():\n    return 1\n")
    finished, collections = [], []
    run = indexer.index_repository

    def indexing(*args, **kwargs):
        stats = run(*args, **kwargs)
        finished.append(True)
        return stats

    def collected(phase, info):
        if phase == "start" and finished:
            collections.append(info["generation"])

    monkeypatch.setattr(indexer, "index_repository", indexing)
    monkeypatch.setattr(os, "_exit", lambda code: None)
    gc.callbacks.append(collected)
    try:
        cli.command(["index", str(repo)])
        assert finished and collections == [] and not gc.isenabled()
    finally:
        gc.callbacks.remove(collected)
        gc.enable()
    indexer.index_repository(repo)
    assert gc.isenabled()


def test_verbose_symbol_table_keeps_the_end_of_long_names():
    """A C# or Java name starts with its namespace: the -v table must still show the method, not cut it off."""
    from cra.drivers.retrieval.report import SYMBOL_WIDTH, symbol_table

    ranking = pd.DataFrame(
        {
            "rank": [1, 2],
            "path": ["src/CsvHelper/Configuration/MemberMapData.cs", "a.py"],
            "qualified_name": ["CsvHelper.Configuration.MemberMapData.UseDefaultOnConversionFailure", "f"],
            "lexical": [1.0, 0.5],
            "score": [0.9, 0.4],
        }
    )
    table = symbol_table(ranking, {"lexical": 1.0})
    assert "/MemberMapData.cs::MemberMapData.UseDefaultOnConversionFailure" in table  # the namespace is the path's
    assert "…" in table and "a.py::f" in table
    assert max(len(word) for word in table.split()) <= SYMBOL_WIDTH


def test_every_command_comes_from_one_table_and_help_imports_none_of_them():
    """`cra`'s commands are registered one way (COMMANDS: module, help); `cra --help` lists them all without importing
    a command's module, and naming a command imports its module alone."""
    from cra.drivers.cli.main import COMMANDS, build_parser

    listed = next(a for a in build_parser([])._actions if isinstance(a, argparse._SubParsersAction))
    assert list(listed.choices) == list(COMMANDS)
    modules = sorted({target.partition(":")[0] for target, _ in COMMANDS.values()})
    probe = (
        "import sys, contextlib, io; from cra.drivers.cli.main import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()): main(sys.argv[2:])\n"
        "print(sorted(m for m in sys.modules if m in sys.argv[1].split(',')))"
    )

    def imported(*argv: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", probe, ",".join(modules), *argv], capture_output=True, text=True, check=True
        )
        return eval(done.stdout.strip().splitlines()[-1])

    assert imported("--help") == []
    assert imported("report", "--help") == ["cra.drivers.escalation.cli"]
    assert imported("retrieve", "--help") == ["cra.drivers.retrieval.cli"]


def test_version_is_looked_up_only_when_asked(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out == f"cra {version('cra-engine')}\n"
    probe = "import sys; from cra.drivers.cli.main import build_parser; build_parser(['retrieve', 'x']); "
    probe += "print('importlib.metadata' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"  # (its import cost every command 27 ms)
