"""The vocabulary-bridge screen: a bridge needs fixes in several repositories, a case is scored without its
own repository, and the screen runs end to end on an indexed tree."""

from __future__ import annotations

import json

import pandas as pd

from cra.drivers.index.indexer import index_repository
from cra.drivers.research import bridge_screen
from tests.fixture_repo import make_repo


def _records(repos: list[str], text: str, gold: str, n: int = 3) -> list[dict]:
    return [
        {
            "instance_id": f"{r}-{text[:6]}-{i}",
            "repo": r,
            "problem_statement": text,
            "gold_files": [gold],
            "gold_functions": [],
        }
        for r in repos
        for i in range(n)
    ]


def _training() -> list[dict]:
    """Fixes in three repositories where "signin" tasks touch login code, and others that do not."""
    return [
        *_records(["a/one", "b/two", "c/three"], "Signin fails for remote users", "src/login.py"),
        *_records(["d/four", "e/five", "f/six", "g/seven"], "Timeout while waiting on the clock", "src/clock.py"),
    ]


def test_a_bridge_needs_fixes_in_several_repositories_and_leaves_out_the_task_s_own_words():
    counts = bridge_screen.pair_counts(_training())
    table = bridge_screen.bridge_table(counts)
    assert "login" in table["signin"] and "clock" not in table["signin"]
    assert "fail" not in table["signin"]  # a word of the task itself is not a bridge
    assert "signin" not in bridge_screen.bridge_table(counts, without="a/one")  # two repositories are not enough


def test_reordering_counts_gold_files_outside_the_top_ten_as_misses():
    files = pd.concat(
        [
            bridge_screen.case_pairs(
                "c1", "r", ["a.py", "b.py"], {"b.py"}, {"a.py": set(), "b.py": {"login"}}, {"login": 1.0}
            ),
            bridge_screen.case_pairs(
                "c2", "r", ["a.py", "b.py"], {"b.py", "z.py"}, {"a.py": set(), "b.py": {"login"}}, {"login": 1.0}
            ),
        ]
    )
    table = bridge_screen.reordered_accuracy(files).set_index("weight")
    assert table.loc[0.0, "acc@1"] == 0.0 and table.loc[1.5, "acc@1"] == 0.5  # c2's z.py is not among its files
    compared = bridge_screen.comparisons(files)
    assert compared.loc["bridge", "win"] == 2 and compared.loc["bridge", "loss"] == 0


def test_the_screen_runs_on_an_evaluated_tree(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo")
    index_repository(repo, history=0)
    train, cases, results = tmp_path / "train.jsonl", tmp_path / "cases.jsonl", tmp_path / "results"
    train.write_text("".join(json.dumps(r) + "\n" for r in _training()))
    cases.write_text(
        json.dumps(
            {
                "instance_id": "dev-1",
                "repo": "x/app",
                "problem_statement": "Signin is broken",
                "gold_files": ["app/auth/handler.py"],
            }
        )
        + "\n"
    )
    results.mkdir()
    pd.DataFrame(
        [
            {
                "case_id": "dev-1",
                "repo": "x/app",
                "tree": str(repo),
                "status": "ok",
                "scope_top10": ["app/billing/invoice.py", "app/auth/handler.py"],
                "expected_files": ["app/auth/handler.py"],
            }
        ]
    ).to_parquet(results / "cases.parquet")
    assert (
        bridge_screen.main(
            ["--train", str(train), "--cases", str(cases), "--results", str(results), "--out", str(tmp_path / "out")]
        )
        == 0
    )
    files = pd.read_parquet(tmp_path / "out" / "files.parquet").set_index("path")
    assert (
        files.loc["app/auth/handler.py", "bridge"] > 0 == files.loc["app/billing/invoice.py", "bridge"]
    )  # validate_login
    reordered = pd.read_parquet(tmp_path / "out" / "reordered.parquet").set_index("weight")
    assert reordered.loc[0.0, "acc@1"] == 0.0 and reordered.loc[1.5, "acc@1"] == 1.0
    assert "bridge" in capsys.readouterr().out


def test_a_missing_case_file_is_one_error_line_and_exit_2(tmp_path, capsys):
    from cra.drivers.common.errors import exit_code

    argv = [
        "--train",
        str(tmp_path / "none.jsonl"),
        "--cases",
        str(tmp_path / "none.jsonl"),
        "--results",
        str(tmp_path),
    ]
    assert exit_code(bridge_screen.main, argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Cannot read case file") and "Traceback" not in err and len(err.splitlines()) == 1
