"""The scheduled job driver: re-index on a moved HEAD, metric history, floors, structured logs."""

import json

import pandas as pd

from cra.drivers.evaluation.nightly import main
from tests.fixture_repo import commit_git, make_repo

CASES = [
    {
        "task": "Fix validate_login in handler.py: short passwords pass",
        "expected_files": ["app/auth/handler.py"],
        "expected_symbols": ["validate_login"],
        "repo_path": ".",
    },
    {
        "task": "Invoice.total_amount ignores discounts",
        "expected_files": ["app/billing/invoice.py"],
        "expected_symbols": ["Invoice.total_amount"],
        "repo_path": ".",
    },
]


def _events(err: str) -> list[dict]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


def _setup(tmp_path, floor):
    repo = make_repo(tmp_path / "repo")
    (repo / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    config = tmp_path / "jobs.toml"
    config.write_text(
        f'history = "hist/history.parquet"\n[[repos]]\nname = "demo"\npath = "repo"\n'
        f'cases = "repo/cases.jsonl"\nfloors = {{ "file_acc@5" = {floor} }}\n'
    )
    return repo, config


def test_nightly_reindexes_only_when_head_moves_and_appends_history(tmp_path, capsys):
    repo, config = _setup(tmp_path, 0.5)
    assert main(["--config", str(config)]) == 0
    first = _events(capsys.readouterr().err)
    assert [e["event"] for e in first][:2] == ["reindexed", "evaluated"]
    assert main(["--config", str(config)]) == 0
    assert _events(capsys.readouterr().err)[0]["event"] == "index_unchanged"
    (repo / "app" / "utils.py").write_text("def slugify(text):\n    return text\n")
    commit_git(repo, "commit", "-qam", "Simplify slugify", when=9)
    assert main(["--config", str(config)]) == 0
    assert _events(capsys.readouterr().err)[0]["event"] == "reindexed"
    history = pd.read_parquet(tmp_path / "hist" / "history.parquet")
    assert len(history) == 3 and list(history["reindexed"]) == [True, False, True]
    assert history["commit"].iloc[0] != history["commit"].iloc[2]
    assert history["file_acc@5"].between(0.5, 1.0).all()


def test_nightly_fails_when_a_metric_falls_below_its_floor(tmp_path, capsys):
    _, config = _setup(tmp_path, 1.01)
    assert main(["--config", str(config)]) == 1
    events = _events(capsys.readouterr().err)
    breach = next(e for e in events if e["event"] == "below_floor")
    assert breach["metric"] == "file_acc@5" and breach["floor"] == 1.01


def test_nightly_bad_config_is_exit_2(tmp_path, capsys):
    config = tmp_path / "jobs.toml"
    config.write_text("[[repos]]\nname = 'x'\n")
    assert main(["--config", str(config)]) == 2
    assert "lacks path, cases" in capsys.readouterr().err
