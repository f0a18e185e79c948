"""Seed fidelity (issue 55): bare method names in seed-format cases, the no-match fallback with history, seed 001's
gates in `cra evaluate`, and the seed variants selectable by one flag."""

from __future__ import annotations

import argparse
import json
from datetime import UTC

import pytest

from cra.drivers.cli.main import main
from cra.drivers.evaluation import evaluate
from tests.fixture_repo import make_repo


def run_evaluate(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    evaluate.add_arguments(parser)
    return evaluate.run(parser.parse_args(argv))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = make_repo(tmp_path_factory.mktemp("fidelity") / "repo")
    assert main(["index", str(root)]) == 0
    return root


def _evaluate_cases(tmp_path, monkeypatch, repo, records, *extra):
    monkeypatch.setenv("CRA_CACHE", str(tmp_path / "cache"))
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    code = run_evaluate(["--cases", str(cases_file), "--repo", str(repo), "--out", str(out), "--workers", "1", *extra])
    assert code == 0
    import pandas as pd

    return json.loads((out / "summary.json").read_text()), pd.read_parquet(out / "cases.parquet").set_index("case_id")


INVOICE_TASK = "Invoice total_amount should round the invoice total to cents"


def test_a_bare_method_name_scores_like_its_qualified_form_when_its_class_is_shown_whole(tmp_path, monkeypatch, repo):
    """`total_amount` sits inside `Invoice`, which the budget shows whole: the bare seed-format name is found, its body
    counts, and token efficiency counts the method's own tokens (not the whole class) in both forms."""
    records = [
        {
            "id": "bare",
            "task": INVOICE_TASK,
            "expected_files": ["app/billing/invoice.py"],
            "expected_symbols": ["total_amount"],
        },
        {
            "id": "qualified",
            "task": INVOICE_TASK,
            "expected_files": ["app/billing/invoice.py"],
            "expected_symbols": ["app/billing/invoice.py::Invoice.total_amount"],
        },
    ]
    _, rows = _evaluate_cases(tmp_path, monkeypatch, repo, records, "--budgets", "4096", "--budget", "4096")
    widened = [w for w in json.loads(json.dumps(_widened(repo)))]
    assert any(w["symbol"] == "Invoice" and "Invoice.total_amount" in w["members"] for w in widened)
    bare, qualified = rows.loc["bare"], rows.loc["qualified"]
    assert bare["symbol_recall"] == qualified["symbol_recall"] == 1.0
    assert bare["function_mrr"] == qualified["function_mrr"] > 0  # the bare name is found in the symbol ranking too
    assert list(bare["gold_function_ranks"]) == list(qualified["gold_function_ranks"])
    assert bare["gold_body@4096"] == qualified["gold_body@4096"] == 1.0
    assert bare["token_efficiency"] == pytest.approx(qualified["token_efficiency"])
    assert bare["token_efficiency@4096"] == pytest.approx(qualified["token_efficiency@4096"])
    assert 0 < bare["token_efficiency"] < _class_share(repo)  # the method's tokens, less than the class's


def _package(repo, budget="4096"):
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["retrieve", INVOICE_TASK, "--repo", str(repo), "--format", "json", "--budget", budget]) == 0
    return json.loads(buffer.getvalue())


def _widened(repo):
    return _package(repo)["provenance"]["budget"]["widened"]


def _class_share(repo):
    doc = _package(repo)
    invoice = next(s for f in doc["files"] for s in f["symbols"] if s["qualified_name"] == "Invoice")
    return invoice["tokens"] / doc["token_count"]


def test_a_task_with_no_evidence_falls_back_to_central_files_with_a_warning_in_a_git_repository(repo, capsys):
    """With history, recency used to anchor the second pass on the newest files and every file 'matched'."""
    capsys.readouterr()
    assert main(["retrieve", "qwxzy plorbnik vuzzfrat", "--repo", str(repo), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any("falls back" in w for w in doc["provenance"]["warnings"])
    assert {row["added_by"] for row in doc["provenance"]["scope"]} == {"score"}
    assert len(doc["provenance"]["scope"]) == min(10, len(doc["provenance"]["scope"])) >= 3
    assert all(row["signals"]["partner_affinity"] == 0 for row in doc["provenance"]["scope"])


def test_sot_falls_back_to_keyword_counts_when_the_kb_scores_nothing(tmp_path, monkeypatch):
    """Seed 000 with a KB on a small documentation-only repository: every KB score was 0 and the document with five
    keyword matches was left out for newer ones; now the seed's counts rank them and `stats.sot_ranking` says so."""
    import os
    import time
    from datetime import datetime

    from cra.drivers.diagnostics.diagnose import diagnose
    from cra.drivers.index.indexer import index_repository

    monkeypatch.setenv("CRA_HOME", str(tmp_path / "home"))
    run, repo = tmp_path / "run", tmp_path / "repo"
    run.mkdir()
    docs = {
        "docs/deployment.md": "Rolling out: the lag alarm fires when replication falls behind.\n"
        "Replication lag above the threshold pages on-call; check replication slots, "
        "replication workers and replication networks.\n"
    }
    docs |= {f"docs/page{i}.md": f"Page {i} of the handbook: office hours and holidays.\n" for i in range(4)}
    now = time.time()
    for age, (rel, text) in enumerate(docs.items()):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
        stamp = now - 3600 * (10 - age)  # the matching document is the oldest
        os.utime(repo / rel, (stamp, stamp))
    index_repository(repo, history=0)
    bundle = {"error_message": "replica overloaded", "root_cause": "Unknown"}  # no indexed word: KB scores 0
    d = diagnose(bundle, run, repo, "phase_001", 1, now=datetime.now(UTC), force=True).bundle.to_dict()
    assert d["sot_files"][0]["path"] == "docs/deployment.md"
    assert d["sot_files"][0]["relevance_score"] == 5  # 'replica' inside 'replication' five times
    assert d["stats"]["sot_ranking"].startswith("keywords (")


def test_evaluate_reports_seed_001_gates_per_budget_auto_included(tmp_path, monkeypatch, repo, capsys):
    records = [
        {
            "id": "invoice",
            "task": INVOICE_TASK,
            "expected_files": ["app/billing/invoice.py"],
            "expected_symbols": ["app/billing/invoice.py::Invoice.total_amount"],
        },
        {
            "id": "login",
            "task": "fix the login validation bug when the LDAP source is used in validate_login",
            "expected_files": ["app/auth/handler.py", "app/auth/ldap.py"],
            "expected_symbols": ["validate_login"],
        },
    ]
    summary_doc, rows = _evaluate_cases(tmp_path, monkeypatch, repo, records, "--budgets", "4096,auto")
    printed = capsys.readouterr().out
    gates = summary_doc["seed_gates"]
    assert list(gates) == ["4096", "auto"]
    for label, row in gates.items():
        assert set(row) == {"package_file_recall", "package_file_precision", "token_efficiency"}
        for metric, gate in row.items():
            mean = rows[f"{metric}@{label}"].mean()
            assert gate["value"] == pytest.approx(mean) and gate["met"] == (mean > gate["threshold"])
    assert [g["threshold"] for g in gates["auto"].values()] == [0.8, 0.5, 0.6]
    assert "seed 001 gates" in printed
    line = next(x for x in printed.splitlines() if x.startswith("auto") and "recall" in x)
    assert ("MISSED" in line) == (not all(g["met"] for g in gates["auto"].values()))


def test_json_carries_the_seeds_names_beside_ours(repo, capsys):
    capsys.readouterr()
    assert main(["retrieve", INVOICE_TASK, "--repo", str(repo), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["task_query"] == doc["task"] and doc["task_query"]["raw_description"] == INVOICE_TASK
    files = {f["path"]: f for f in doc["files"]}
    invoice = files["app/billing/invoice.py"]
    assert isinstance(invoice["file_id"], int)
    assert all(s["file_id"] == invoice["file_id"] and isinstance(s["symbol_id"], int) for s in invoice["symbols"])
    assert len({s["symbol_id"] for f in doc["files"] for s in f["symbols"]}) == sum(
        len(f["symbols"]) for f in doc["files"]
    )


def test_each_seed_variant_is_one_switch_and_an_unknown_one_is_refused(repo, tmp_path, capsys):
    from cra.drivers.kb.store import load_kb
    from cra.drivers.retrieval.retriever import retrieve

    kb = load_kb(repo / ".cra")
    task = "Fix the login validation bug in handler.py: validate_login accepts short passwords for LDAP users"
    ours = retrieve(kb, task, budget=2000).package.provenance["budget"]["allocation"]
    seed = retrieve(kb, task, budget=2000, seed_variants=("budget_split",)).package.provenance["budget"]["allocation"]
    assert ours["primary"] / ours["supporting"] == pytest.approx(7.5, rel=0.02)
    assert seed["primary"] / seed["supporting"] == pytest.approx(4.0, rel=0.02)  # 60 / 15
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text(json.dumps({"task": task, "expected_files": ["app/auth/handler.py"]}) + "\n")
    capsys.readouterr()
    code = main(
        ["evaluate", "--cases", str(cases_file), "--repo", str(repo), "--seed-variants", "budget_split,nonsense"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "nonsense" in err and "budget_split" in err and "Traceback" not in err
