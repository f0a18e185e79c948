"""`cra evaluate`: case formats, patch-derived gold, metrics, trees from mirrors, and whole runs (local, dask)."""

from __future__ import annotations

import argparse
import json
import math
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from cra.dataflows.evaluation.cases import case_records, cases, patch_edits, patch_files
from cra.dataflows.evaluation.metrics import (
    bm25_budget_metrics,
    bm25_symbol_ranking,
    bodies_within,
    budget_metrics,
    function_metrics,
    gold_function_ranks,
    gold_functions,
    package_metrics,
    ranking_metrics,
    summary,
)
from cra.dataflows.retrieval.models import ContextPackage, FileContext, SymbolContext, TaskQuery
from cra.drivers.common.errors import CraError
from cra.drivers.evaluation import evaluate
from cra.drivers.evaluation.trees import materialize_tree, mirror_git_dir, read_at_commit, resolve_tree
from tests.fixture_repo import make_repo

# --- helpers --------------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    env_args = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    return subprocess.run(["git", *env_args, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def committed_repo(root: Path, files: dict[str, str]) -> tuple[Path, str]:
    root.mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root, git(root, "rev-parse", "HEAD").strip()


def bare_mirror(source: Path, mirror_root: Path, repo: str) -> Path:
    target = mirror_git_dir(mirror_root, repo)
    target.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(target)], check=True, capture_output=True)
    return target


MODULE_V1 = '''"""Shapes."""
import math

LIMIT = 3


class Shape:
    def area(self):
        return 0

    def name(self):
        return "shape"


def helper(x):
    y = x + 1
    return y
'''

MODULE_V2 = '''"""Shapes."""
import math

LIMIT = 4


class Shape:
    def area(self):
        return 1

    def name(self):
        return "shape"

    def perimeter(self):
        return 0


def helper(x):
    y = x + 1
    print(y)
    return y
'''


def fix_patch(tmp_path: Path) -> tuple[Path, str, str]:
    """A repo at its base commit, and a fix patch: edits in a method, a class, a function, module level, SQL."""
    repo, base = committed_repo(
        tmp_path / "shapes", {"shapes.py": MODULE_V1, "q.sql": "-- old note\nSELECT 1;\n", "gone.py": "x = 1\n"}
    )
    (repo / "shapes.py").write_text(MODULE_V2)
    (repo / "q.sql").write_text("-- new note\nSELECT 1;\n")
    (repo / "gone.py").unlink()
    (repo / "added.py").write_text("y = 2\n")
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached")
    git(repo, "reset", "-q", "--hard", base)
    return repo, base, patch


def package(files: list[tuple[str, list[tuple[str, int, bool]]]], token_count: int, budget: int) -> ContextPackage:
    """A ContextPackage from (path, [(qualified_name, tokens, has_body)])."""
    contexts = []
    for rank, (path, symbols) in enumerate(files, start=1):
        syms = tuple(
            SymbolContext(
                i,
                rank,
                qn.rsplit(".", 1)[-1],
                qn,
                "function",
                "primary",
                f"def {qn}():",
                "body" if body else None,
                None,
                1,
                2,
                tokens,
            )
            for i, (qn, tokens, body) in enumerate(symbols)
        )
        contexts.append(FileContext(rank, path, "python", rank, 1.0 / rank, "score", syms))
    return ContextPackage(TaskQuery("task", "bug_fix"), tuple(contexts), (), token_count, budget)


# --- case formats ---------------------------------------------------------------------------------


def test_seed_format_cases_take_index_or_id_as_case_id():
    text = json.dumps(
        [
            {"task": "fix login", "expected_files": ["a.py"], "expected_symbols": ["login"], "repo_path": "."},
            {"id": "billing", "task": "fix invoice", "expected_files": ["b.py"]},
        ]
    )
    frame = cases(case_records(text))
    assert list(frame.columns[:7]) == [
        "case_id",
        "task",
        "expected_files",
        "expected_symbols",
        "repo",
        "base_commit",
        "repo_path",
    ]
    assert frame["case_id"].tolist() == ["0", "billing"]
    assert frame.loc[0, "expected_symbols"] == ["login"] and frame.loc[1, "expected_symbols"] == []
    assert frame.loc[0, "repo_path"] == "." and frame.loc[1, "repo_path"] is None


def test_shared_eval_format_reads_the_real_dev_file():
    dev = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev.jsonl"  # shared/ lies beside the checkout
    if not dev.is_file():
        pytest.skip(f"the shared development cases are not beside this checkout ({dev})")
    text = dev.read_text()
    frame = cases(case_records(text, "dev.jsonl"))
    first = frame.iloc[0]
    assert first["case_id"] == "sqlfluff__sqlfluff-1625"
    assert first["repo"] == "sqlfluff/sqlfluff" and first["base_commit"].startswith("14e1a23a")
    assert first["expected_files"] == ["src/sqlfluff/rules/L031.py"]
    assert first["expected_symbols"] == ["src/sqlfluff/rules/L031.py::Rule_L031._lint_aliases_in_join"]
    assert first["task"].startswith("TSQL - L031 incorrectly triggers")
    assert (frame["format"] == "shared").all()


def test_swebench_patch_gives_modified_files_only(tmp_path):
    _, _, patch = fix_patch(tmp_path)
    assert patch_files(patch) == ["q.sql", "shapes.py"]  # added.py (new) and gone.py (deleted) are not gold
    sql = next(e for e in patch_edits(patch) if e.path == "q.sql")
    assert sql.removed == (1,)  # the removed "-- old note" line is content, not a "--- file" header


def test_swebench_patch_symbols_are_the_defs_around_each_edit(tmp_path):
    repo, base, patch = fix_patch(tmp_path)
    record = {
        "instance_id": "o__shapes-1",
        "repo": "o/shapes",
        "base_commit": base,
        "problem_statement": "area is wrong",
        "patch": patch,
    }
    frame = cases(case_records(json.dumps(record)))
    assert frame.loc[0, "expected_files"] == ["q.sql", "shapes.py"]
    assert frame.loc[0, "expected_symbols"] is None  # needs the pre-fix tree
    symbols = evaluate.expected_symbols_from_patch(repo, frame.loc[0, "patch"])
    assert set(symbols) == {
        "shapes.py::<module>",
        "shapes.py::Shape.area",
        "shapes.py::Shape",
        "shapes.py::helper",
        "q.sql::<module>",
    }


# --- bad case files -------------------------------------------------------------------------------


def test_missing_case_file_is_a_user_error(tmp_path):
    with pytest.raises(CraError, match=r"does not exist.*--cases"):
        evaluate.load_cases(tmp_path / "nope.jsonl")


def test_malformed_jsonl_names_the_line(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"task": "a", "expected_files": []}\n{"task": "b", "expected_files": [}\n')
    with pytest.raises(CraError, match=r"cases.jsonl: malformed JSON at line 2, column 34"):
        evaluate.load_cases(path)


def test_malformed_json_list_names_the_line(tmp_path):
    path = tmp_path / "cases.json"
    path.write_text('[\n  {"task": "a",\n   "expected_files": ["x"]\n  },,\n]\n')
    with pytest.raises(CraError, match=r"malformed JSON at line 4"):
        evaluate.load_cases(path)


def test_unknown_format_lists_the_fields_each_format_needs(tmp_path):
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([{"question": "why", "answer": "because"}]))
    with pytest.raises(CraError) as err:
        evaluate.load_cases(path)
    message = str(err.value)
    assert "case #1" in message and "['answer', 'question']" in message
    assert "seed: task, expected_files" in message and "patch" in message and "gold_files" in message


# --- metrics --------------------------------------------------------------------------------------


def test_ranking_metrics_on_a_hand_made_ranking():
    m = ranking_metrics(["a", "b", "c", "d"], ["b", "d", "z"])
    assert (
        m["file_recall@1"] == 0
        and m["file_recall@3"] == pytest.approx(1 / 3)
        and m["file_recall@5"] == pytest.approx(2 / 3)
    )
    assert (
        m["file_precision@3"] == pytest.approx(1 / 3) and m["file_precision@5"] == 0.5 and m["file_precision@10"] == 0.5
    )
    assert m["file_acc@10"] == 0.0 and m["mrr"] == 0.5
    hit = ranking_metrics(["x", "a"], ["a", "x"], prefix="bm25_")
    assert hit["bm25_file_acc@1"] == 0.0 and hit["bm25_file_acc@3"] == 1.0 and hit["bm25_mrr"] == 1.0


def test_ranking_metrics_without_gold_are_nan():
    assert math.isnan(ranking_metrics(["a"], [])["mrr"])


def hand_package() -> ContextPackage:
    return package(
        [
            ("a.py", [("Foo.bar", 30, True), ("Foo.baz", 20, True)]),
            ("b.py", [("helper", 50, False)]),
            ("c.py", [("Big", 100, True)]),
        ],
        token_count=400,
        budget=1000,
    )


def test_package_metrics_with_qualified_symbols():
    expected_symbols = ["a.py::Foo.bar", "c.py::Big.inner", "d.py::gone", "b.py::<module>"]
    m = package_metrics(hand_package(), ["a.py", "d.py"], expected_symbols)
    assert m["package_file_recall"] == 0.5 and m["package_file_precision"] == pytest.approx(1 / 3)
    assert m["symbol_recall"] == 0.75  # Big.inner rides in Big's body; <module> counts by file
    assert m["symbol_precision"] == 0.5  # Foo.bar and Big of four package symbols
    assert m["token_efficiency"] == pytest.approx(130 / 400)
    assert m["budget_utilization"] == 0.4


def test_package_metrics_without_symbols_count_expected_file_tokens():
    m = package_metrics(hand_package(), ["a.py", "d.py"], None)
    assert m["token_efficiency"] == pytest.approx(50 / 400)
    assert math.isnan(m["symbol_recall"]) and math.isnan(m["symbol_precision"])


def test_package_metrics_match_bare_seed_symbol_names():
    m = package_metrics(hand_package(), ["a.py"], ["bar", "nothing"])
    assert m["symbol_recall"] == 0.5 and m["symbol_precision"] == 0.25


def test_summary_averages_evaluated_cases_only():
    rows = pd.DataFrame(
        [
            {"case_id": "1", "status": "ok", "file_acc@1": 1.0, "mrr": 1.0, "bm25_mrr": 0.5, "latency_s": 0.2},
            {"case_id": "2", "status": "ok", "file_acc@1": 0.0, "mrr": 0.5, "bm25_mrr": 0.5, "latency_s": 0.4},
            {"case_id": "3", "status": "skipped", "file_acc@1": None, "mrr": None, "bm25_mrr": None, "latency_s": None},
        ]
    )
    s = summary(rows, n_skipped=1)
    assert (s["n_cases"], s["n_skipped"]) == (2, 1)
    assert s["file_acc@1"] == 0.5 and s["mrr"] == 0.75 and s["bm25_mrr"] == 0.5
    assert s["latency_p50_s"] == pytest.approx(0.3)


# --- function metrics ---------------------------------------------------------------------------------


def ranking(rows: list[tuple[str, str]]) -> pd.DataFrame:
    """A symbol ranking, best first, from (path, qualified_name)."""
    return pd.DataFrame(rows, columns=["path", "qualified_name"]).assign(rank=lambda f: range(1, len(f) + 1))


RANKED = ranking(
    [
        ("a.py", "helper"),
        ("b.py", "Parser"),
        ("a.py", "Shape.area"),
        ("b.py", "Parser.feed"),
        ("c.py", "run"),
        ("a.py", "Shape"),
        ("c.py", "Runner"),
    ]
)


def test_a_gold_function_ranked_third_is_a_hit_at_5_not_at_1():
    m = function_metrics(gold_function_ranks(RANKED, ["a.py::Shape.area"]))
    assert m["function_hit@1"] == 0.0 and m["function_hit@5"] == 1.0 and m["function_hit@10"] == 1.0
    assert m["function_acc@1"] == 0.0 and m["function_acc@5"] == 1.0
    assert m["function_mrr"] == pytest.approx(1 / 3)


def test_function_accuracy_needs_every_gold_function_in_the_top_k():
    ranks = gold_function_ranks(RANKED, ["a.py::helper", "c.py::Runner", "c.py::nowhere"])
    assert ranks == [1, 7, None]
    m = function_metrics(ranks, prefix="bm25_")
    assert m["bm25_function_hit@1"] == 1.0 and m["bm25_function_mrr"] == 1.0
    assert m["bm25_function_acc@10"] == 0.0  # c.py::nowhere is never ranked
    assert function_metrics(gold_function_ranks(RANKED, ["a.py::helper", "c.py::Runner"]))["function_acc@5"] == 0.0


def test_a_gold_method_counts_at_its_class_rank_only_when_it_is_not_ranked_itself():
    assert gold_function_ranks(RANKED, ["a.py::Shape.name"]) == [6]  # not ranked: Shape (6th) carries it
    assert gold_function_ranks(RANKED, ["b.py::Parser.feed"]) == [4]  # ranked itself: its own rank, not Parser's 2nd
    assert gold_function_ranks(RANKED, ["c.py::Parser.feed"]) == [None]  # the class of another file does not count


def test_module_level_gold_is_ignored_and_a_case_without_gold_functions_is_nan():
    assert gold_functions(["a.py::<module>", "a.py::helper", "validate"]) == ["a.py::helper", "validate"]
    m = function_metrics(gold_function_ranks(RANKED, []))
    assert all(math.isnan(v) for v in m.values())
    rows = pd.DataFrame(
        [
            {
                "case_id": "1",
                "status": "ok",
                "latency_s": 0.1,
                **budget_metrics(hand_package(), ["a.py::<module>"], "8192"),
            }
        ]
    )
    assert math.isnan(rows.loc[0, "gold_body@8192"]) and rows.loc[0, "package_tokens@8192"] == 400
    with_module = budget_metrics(hand_package(), ["b.py::<module>", "a.py::Foo.bar"], "4096")
    assert with_module["gold_body@4096"] == 1.0 and with_module["gold_named@4096"] == 1.0


def test_budget_metrics_count_bodies_own_or_enclosing_and_names_at_any_depth():
    # Foo.bar: own body in; Big.inner: inside Big's body; helper: signature only; d.py::gone: absent
    m = budget_metrics(hand_package(), ["a.py::Foo.bar", "c.py::Big.inner", "b.py::helper", "d.py::gone"], "auto")
    assert m["gold_body@auto"] == 0.5
    assert m["gold_named@auto"] == 0.75
    assert m["gold_body_any@auto"] == 1.0
    assert m["token_efficiency@auto"] == pytest.approx((30 + 100 + 50) / 400)
    assert m["package_tokens@auto"] == 400
    none_in = budget_metrics(hand_package(), ["b.py::helper", "d.py::gone"], "4096")
    assert none_in["gold_body_any@4096"] == 0.0 and none_in["gold_named@4096"] == 0.5


def test_bm25_symbols_are_source_definitions_that_share_a_term_with_the_task():
    files = pd.DataFrame({"file_id": [1, 2], "path": ["src/a.py", "tests/test_a.py"], "is_test": [False, True]})
    symbols = pd.DataFrame(
        {
            "symbol_id": [10, 11, 12, 13, 14, 15],
            "file_id": [1, 1, 1, 1, 2, 1],
            "qualified_name": ["parse", "Reader", "Reader.read", "LIMIT", "test_parse", "unrelated"],
            "kind": ["function", "class", "method", "constant", "function", "function"],
            "body_tokens": [40, 300, 120, 5, 30, 60],
        }
    )
    scores = pd.Series({10: 1.5, 11: 2.0, 12: 3.0, 13: 9.0, 14: 9.0, 15: 0.0})
    ranked = bm25_symbol_ranking(symbols, files, scores)
    assert ranked["qualified_name"].tolist() == ["Reader.read", "Reader", "parse"]  # no constant, test, or zero score
    assert ranked["rank"].tolist() == [1, 2, 3]
    assert gold_function_ranks(ranked, ["src/a.py::parse"]) == [3]


def test_bm25_bodies_fill_the_budget_in_rank_order_and_nested_symbols_ride_free():
    ranked = pd.DataFrame(
        {
            "path": ["a.py", "a.py", "a.py", "b.py"],
            "qualified_name": ["Reader", "Reader.read", "parse", "big"],
            "body_tokens": [300, 120, 40, 1000],
            "rank": [1, 2, 3, 4],
        }
    )
    taken = bodies_within(ranked, 400)
    assert taken["qualified_name"].tolist() == ["Reader", "Reader.read", "parse"]  # read is inside Reader: free
    assert taken["tokens"].sum() == 340
    assert bodies_within(ranked, 299).empty  # the first body does not fit: nothing is taken
    m = bm25_budget_metrics(ranked, ["a.py::Reader.read", "b.py::big", "a.py::<module>"], 400, "400")
    assert m["bm25_gold_body@400"] == 0.5 and m["bm25_package_tokens@400"] == 340


def test_budgets_option_parses_token_counts_and_auto():
    assert evaluate.parse_budgets(" 4096, auto,8192,4096") == (4096, "auto", 8192)
    assert evaluate.parse_budgets(evaluate.DEFAULT_BUDGETS) == (4096, 8192, 32768, "auto")
    with pytest.raises(CraError, match=r"'lots' is not a token count or auto"):
        evaluate.parse_budgets("4096,lots")
    with pytest.raises(CraError, match=r"100 is too small"):
        evaluate.parse_budgets("100")


# --- trees ----------------------------------------------------------------------------------------


def test_mirror_tree_is_the_base_commit_and_the_mirror_is_untouched(tmp_path, monkeypatch):
    source, base = committed_repo(tmp_path / "src", {"pkg/mod.py": "A = 1\n"})
    (source / "pkg" / "mod.py").write_text("A = 2\n")
    git(source, "commit", "-q", "-am", "later")
    mirror = bare_mirror(source, tmp_path / "mirrors", "owner/proj")
    before = sorted(p.relative_to(mirror) for p in mirror.rglob("*"))
    monkeypatch.setenv("CRA_CACHE", str(tmp_path / "cache"))
    tree = materialize_tree(mirror, base, "owner/proj")
    assert tree == tmp_path / "cache" / "trees" / f"owner+proj@{base}"
    assert (tree / "pkg" / "mod.py").read_text() == "A = 1\n"
    assert materialize_tree(mirror, base, "owner/proj") == tree  # reused
    assert [p.name for p in tree.parent.iterdir()] == [tree.name]  # no temp debris left
    assert sorted(p.relative_to(mirror) for p in mirror.rglob("*")) == before
    assert read_at_commit(mirror, base, "pkg/mod.py") == "A = 1\n"
    with pytest.raises(CraError, match="has no commit"):
        materialize_tree(mirror, "0" * 40, "owner/proj")


def test_blobs_missing_from_a_mirror_are_left_out_of_the_tree(tmp_path):
    source, base = committed_repo(tmp_path / "src", {"code.py": "A = 1\n", "data/big.bin": "x" * 100})
    mirror = bare_mirror(source, tmp_path / "mirrors", "owner/proj")
    blob = git(source, "rev-parse", f"{base}:data/big.bin").strip()
    (mirror / "objects" / blob[:2] / blob[2:]).unlink()  # as in snapshots that drop large data files
    tree = materialize_tree(mirror, base, "owner/proj", root=tmp_path / "trees")
    assert (tree / "code.py").read_text() == "A = 1\n"
    assert not (tree / "data" / "big.bin").exists()
    assert (tree.parent / f"{tree.name}.missing").read_text() == "data/big.bin\n"


def test_a_tree_holds_what_export_ignore_leaves_out_of_release_archives(tmp_path):
    """A checkout has the directories a project keeps out of its release archives (`export-ignore`: tests, the
    adapters a monorepo publishes as packages of their own); the evaluation tree must too."""
    files = {
        "src/Core.php": "<?php\n",
        "src/Ftp/FtpAdapter.php": "<?php\n",
        "tests/CoreTest.php": "<?php\n",
        ".gitattributes": "/src/Ftp export-ignore\n/tests export-ignore\n",
    }
    source, base = committed_repo(tmp_path / "src", files)
    tree = materialize_tree(
        bare_mirror(source, tmp_path / "mirrors", "owner/proj"), base, "owner/proj", root=tmp_path / "trees"
    )
    assert (tree / "src" / "Ftp" / "FtpAdapter.php").is_file() and (tree / "tests" / "CoreTest.php").is_file()


def test_case_without_any_repository_gets_a_reason(tmp_path):
    location, reason = resolve_tree({"case_id": "x", "repo": "o/missing", "base_commit": "abc"}, mirror=tmp_path)
    assert location == {} and "no mirror of o/missing" in reason


# --- whole runs -------------------------------------------------------------------------------------


def eval_fixture(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The shared fixture repo, a bare mirror of it, and a case file: 2 seed cases, 1 SWE-bench case, 1 unreachable."""
    repo = make_repo(tmp_path / "repo")
    base = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    mirror_root = tmp_path / "mirrors"
    bare_mirror(repo, mirror_root, "demo/app")
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(repo), str(work)], check=True, capture_output=True)
    git(work, "checkout", "-q", base)
    invoice = work / "app/billing/invoice.py"
    invoice.write_text(
        invoice.read_text().replace(
            "return sum(price for _, price in self.items)", "return round(sum(p for _, p in self.items), 2)"
        )
    )
    patch = git(work, "diff")
    cases_file = tmp_path / "cases.jsonl"
    records = [
        {
            "id": "login",
            "task": "fix the login validation bug when the LDAP source is used in validate_login",
            "expected_files": ["app/auth/handler.py", "app/auth/ldap.py"],
            "expected_symbols": ["validate_login", "validate_ldap"],
        },
        {
            "id": "invoice",
            "task": "Invoice total_amount should round the invoice total to cents",
            "expected_files": ["app/billing/invoice.py"],
            "expected_symbols": ["app/billing/invoice.py::Invoice.total_amount"],
        },
        {
            "instance_id": "demo__app-7",
            "repo": "demo/app",
            "base_commit": base,
            "problem_statement": "Invoice total amount is not rounded",
            "patch": patch,
        },
        {
            "instance_id": "other__lib-1",
            "repo": "other/lib",
            "base_commit": base,
            "problem_statement": "x",
            "gold_files": ["a.py"],
        },
    ]
    cases_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    return repo, mirror_root, cases_file


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    evaluate.add_arguments(parser)
    return evaluate.run(parser.parse_args(argv))


def run_fixture(tmp_path: Path, monkeypatch, engine: str) -> tuple[dict, pd.DataFrame, str]:
    repo, mirror_root, cases_file = eval_fixture(tmp_path)
    monkeypatch.setenv("CRA_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    code = run_cli(
        [
            "--cases",
            str(cases_file),
            "--repo",
            str(repo),
            "--mirror",
            str(mirror_root),
            "--out",
            str(out),
            "--engine",
            engine,
            "--workers",
            "1",
            "--budget",
            "4000",
        ]
    )
    assert code == 0
    return json.loads((out / "summary.json").read_text()), pd.read_parquet(out / "cases.parquet"), str(out)


def check_run(summary_doc: dict, frame: pd.DataFrame) -> None:
    required = {
        "n_cases",
        "n_skipped",
        "file_acc@1",
        "file_acc@3",
        "file_acc@5",
        "file_acc@10",
        "mrr",
        "package_file_recall",
        "symbol_recall",
        "symbol_precision",
        "token_efficiency",
        "budget_utilization",
        "latency_p50_s",
        "bm25_file_acc@10",
        "bm25_mrr",
    }
    assert required <= set(summary_doc)
    assert (summary_doc["n_cases"], summary_doc["n_skipped"]) == (3, 1)
    assert "no mirror of other/lib" in summary_doc["skipped"]["other__lib-1"]
    assert frame.columns[0] == "case_id"
    assert frame["case_id"].tolist() == ["login", "invoice", "demo__app-7", "other__lib-1"]
    rows = frame.set_index("case_id")
    assert rows.loc["other__lib-1", "status"] == "skipped"
    assert list(rows.loc["demo__app-7", "expected_files"]) == ["app/billing/invoice.py"]
    assert list(rows.loc["demo__app-7", "expected_symbols"]) == ["app/billing/invoice.py::Invoice.total_amount"]
    assert rows.loc["invoice", "bm25_file_acc@3"] == 1.0  # "invoice" and "total_amount" only occur in that file
    assert rows.loc["invoice", "file_acc@10"] == 1.0
    signals = list(rows.loc["login", "expected_signals"])
    assert [s["path"] for s in signals] == ["app/auth/handler.py", "app/auth/ldap.py"]
    assert all(s["indexed"] and "path_match" in s for s in signals)
    for name in ("file_acc@10", "mrr", "package_file_recall", "token_efficiency", "budget_utilization", "bm25_mrr"):
        assert 0.0 <= summary_doc[name] <= 1.0, name


def test_evaluate_end_to_end_local(tmp_path, monkeypatch, capsys):
    summary_doc, frame, out = run_fixture(tmp_path, monkeypatch, "local")
    check_run(summary_doc, frame)
    printed = capsys.readouterr()
    assert "pipeline" in printed.out and "bm25" in printed.out and "file_acc@10" in printed.out
    assert "[1/4] login" in printed.err  # one progress line per case
    check_function_and_budget_metrics(summary_doc, frame, printed.out)
    run_budget_curve_notebook(Path(out))


def test_a_relative_mirror_path_still_gives_the_trees_their_history(tmp_path, monkeypatch):
    """git reads each tree's history from inside the tree: a relative --mirror must not silently turn history off,
    and a KB an earlier run wrote without it is indexed again."""
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.kb.store import default_kb_dir, read_metadata

    _, mirror_root, cases_file = eval_fixture(tmp_path)
    monkeypatch.setenv("CRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    argv = [
        "--cases",
        str(cases_file),
        "--mirror",
        mirror_root.name,
        "--out",
        "out",
        "--workers",
        "1",
        "--budget",
        "4000",
    ]
    assert run_cli(argv) == 0
    tree = next((tmp_path / "cache").glob("trees/demo+app@*"))
    with_history = read_metadata(default_kb_dir(tree))
    assert with_history["history_available"] and with_history["stats"]["n_commits"] > 0
    index_repository(tree)  # the extracted tree has no .git: this KB has no history
    assert not read_metadata(default_kb_dir(tree))["history_available"]
    assert run_cli(argv) == 0
    assert read_metadata(default_kb_dir(tree))["stats"]["n_commits"] == with_history["stats"]["n_commits"]
    assert pd.read_parquet(tmp_path / "out" / "cases.parquet").set_index("case_id").loc["demo__app-7", "status"] == "ok"


def test_trees_without_git_history_are_named_in_a_warning(tmp_path, monkeypatch, capsys):
    import shutil

    repo, _, cases_file = eval_fixture(tmp_path)
    plain = tmp_path / "plain"
    shutil.copytree(repo, plain, ignore=shutil.ignore_patterns(".git"))
    monkeypatch.setenv("CRA_CACHE", str(tmp_path / "cache"))
    assert (
        run_cli(
            [
                "--cases",
                str(cases_file),
                "--repo",
                str(plain),
                "--limit",
                "1",
                "--workers",
                "1",
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    printed = capsys.readouterr()
    assert "warning: 1 tree(s) have no git history" in printed.out and "(no git history)" in printed.err
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["trees_without_history"] == [str(plain)]
    assert run_cli(["--cases", str(cases_file), "--repo", str(repo), "--limit", "1", "--workers", "1"]) == 0
    assert "no git history" not in capsys.readouterr().out


def check_function_and_budget_metrics(summary_doc: dict, frame: pd.DataFrame, printed: str) -> None:
    """The default --budgets give one column per metric and budget, per case and averaged; the table shows them."""
    assert summary_doc["budgets"] == [4096, 8192, 32768, "auto"]
    rows = frame.set_index("case_id")
    for b in ("4096", "8192", "32768", "auto"):
        for name in (
            "gold_body",
            "gold_body_any",
            "gold_named",
            "token_efficiency",
            "package_tokens",
            "bm25_gold_body",
            "bm25_package_tokens",
        ):
            assert f"{name}@{b}" in rows.columns and f"{name}@{b}" in summary_doc, f"{name}@{b}"
        assert rows.loc["invoice", f"gold_body@{b}"] == 1.0  # Invoice.total_amount is the task's subject
        assert 0.0 < rows.loc["invoice", f"token_efficiency@{b}"] <= 1.0
    for b in (4096, 8192, 32768):
        assert (rows[f"package_tokens@{b}"].dropna() <= b).all() and (
            rows[f"bm25_package_tokens@{b}"].dropna() <= b
        ).all()
    assert (rows["package_tokens@auto"].dropna() <= 8192).all()
    for name in (
        "function_hit@1",
        "function_hit@5",
        "function_acc@10",
        "function_mrr",
        "bm25_function_hit@5",
        "bm25_function_mrr",
    ):
        assert 0.0 <= summary_doc[name] <= 1.0, name
    assert rows.loc["invoice", "function_hit@5"] == 1.0 and rows.loc["invoice", "bm25_function_hit@5"] == 1.0
    assert list(rows.loc["demo__app-7", "gold_function_ranks"])[0] <= 5  # the patch's gold method, ranked
    assert math.isnan(rows.loc["other__lib-1", "function_mrr"])  # skipped
    lines = printed.splitlines()
    assert any(line.startswith("function_hit@5") for line in lines)
    assert any(line.split()[:1] == ["auto"] and len(line.split()) == 8 for line in lines)


def run_budget_curve_notebook(run_dir: Path) -> None:
    """notebooks/budget_curve.ipynb on a run: its parameter cell pointed at the run, it draws and saves the curve."""
    import nbformat
    from nbclient import NotebookClient

    notebooks = Path(__file__).resolve().parent.parent / "notebooks"
    nb = nbformat.read(notebooks / "budget_curve.ipynb", as_version=4)
    parameters = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    parameters.source = f"RUN = {str(run_dir)!r}"
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(notebooks)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "a chart was drawn"
    assert (run_dir / "budget_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate_end_to_end_dask_matches_local(tmp_path, monkeypatch):
    pytest.importorskip("dask.distributed", reason="dask.distributed is not installed (the `dev` extra brings it)")
    summary_doc, frame, _ = run_fixture(tmp_path / "dask", monkeypatch, "dask")
    check_run(summary_doc, frame)
    local_doc, _, _ = run_fixture(tmp_path / "local", monkeypatch, "local")
    for name in ("file_acc@10", "mrr", "package_file_recall", "symbol_recall", "bm25_mrr"):
        assert summary_doc[name] == local_doc[name], name


def test_ray_engine_without_ray_is_a_user_error(tmp_path):
    try:
        import ray  # noqa: F401

        pytest.skip("ray is installed here")
    except ImportError:
        pass
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps([{"task": "fix login", "expected_files": ["a.py"]}]))
    (tmp_path / "repo").mkdir()
    with pytest.raises(CraError, match=r"--engine ray needs Ray.*--engine local\|dask"):
        run_cli(["--cases", str(cases_file), "--repo", str(tmp_path / "repo"), "--engine", "ray"])


def test_tiny_budget_is_a_user_error(tmp_path):
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps([{"task": "fix login", "expected_files": ["a.py"]}]))
    with pytest.raises(CraError, match="--budget 10 is too small"):
        run_cli(["--cases", str(cases_file), "--budget", "10"])


def test_self_cases_parse_and_point_at_existing_files():
    frame = evaluate.load_cases(Path(__file__).parent.parent / "data" / "eval" / "self.jsonl")
    assert len(frame) >= 10
    root = Path(__file__).parent.parent
    for files in frame["expected_files"]:
        assert all((root / f).is_file() for f in files), files


def test_evaluate_end_to_end_ray_matches_local_when_ray_is_installed(tmp_path, monkeypatch):
    pytest.importorskip("ray")  # the optional `ray` extra; CI installs `dev` only
    summary_doc, frame, _ = run_fixture(tmp_path / "ray", monkeypatch, "ray")
    check_run(summary_doc, frame)
    local_doc, _, _ = run_fixture(tmp_path / "local", monkeypatch, "local")
    for name in ("file_acc@10", "mrr", "package_file_recall", "symbol_recall", "bm25_mrr"):
        assert summary_doc[name] == local_doc[name], name
