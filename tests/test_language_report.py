"""The per-language evaluation table: Acc@k per language, and Acc@5 apart for one-file and multi-file fixes."""

import json

import pandas as pd
import pytest

from cra.drivers.common.errors import CraError
from cra.drivers.research.language_report import case_languages, language_table, main


def results(rows):
    """A cases.parquet frame from (case_id, n_expected_files, acc@5) rows; the other metrics follow acc@5."""
    frame = pd.DataFrame(rows, columns=["case_id", "n_expected_files", "file_acc@5"]).assign(status="ok")
    for k in ("file_acc@1", "file_acc@10", "bm25_file_acc@1", "bm25_file_acc@5", "bm25_file_acc@10"):
        frame[k] = frame["file_acc@5"]
    return frame


def test_acc5_is_split_by_one_file_and_multi_file_fixes():
    languages = pd.Series({"a": "rust", "b": "rust", "c": "rust", "d": "go"}, name="language")
    table = language_table(results([("a", 1, 1.0), ("b", 2, 0.0), ("c", 3, 1.0), ("d", 1, 0.0)]), languages)
    rust = table.loc["rust"]
    assert rust["n"] == 3 and rust["multi"] == pytest.approx(2 / 3)
    assert rust["acc@5 one-file"] == 1.0 and rust["acc@5 multi-file"] == 0.5
    assert pd.isna(table.loc["go", "acc@5 multi-file"]) and table.loc["all", "acc@5"] == 0.5


def test_language_comes_from_the_record_else_from_gold_files(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        json.dumps({"instance_id": "x", "language": "java", "gold_files": ["a.py"]})
        + "\n"
        + json.dumps({"instance_id": "y", "gold_files": ["src/lib.rs", "src/main.rs"]})
        + "\n"
    )
    assert case_languages(cases).to_dict() == {"x": "java", "y": "rust"}


def test_a_run_without_results_is_one_clear_error(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text("")
    with pytest.raises(CraError, match="cra evaluate --out"):
        main(["--cases", str(cases), str(tmp_path / "missing")])


def test_out_writes_the_tables_as_parquet_and_a_chart(tmp_path, capsys):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"instance_id": i, "language": lang}) + "\n"
            for i, lang in (("a", "rust"), ("b", "rust"), ("c", "go"))
        )
    )
    for run, hits in (("before", (0.0, 1.0, 1.0)), ("after", (1.0, 1.0, 1.0))):
        (tmp_path / run).mkdir()
        results([("a", 2, hits[0]), ("b", 1, hits[1]), ("c", 1, hits[2])]).to_parquet(tmp_path / run / "cases.parquet")
    runs = [str(tmp_path / "before"), str(tmp_path / "after")]
    assert main(["--cases", str(cases), *runs, "--out", str(tmp_path / "report")]) == 0
    rows = pd.read_parquet(tmp_path / "report" / "languages.parquet")
    rust = rows[rows["language"] == "rust"].set_index("run")["acc@5"]
    assert rust.to_dict() == {runs[0]: 0.5, runs[1]: 1.0}
    assert (tmp_path / "report" / "languages.png").stat().st_size > 0
    assert "3 cases evaluated by every run" in capsys.readouterr().out


def test_a_missing_case_file_is_one_clear_error(tmp_path):
    with pytest.raises(CraError, match="No case file at"):
        main(["--cases", str(tmp_path / "none.jsonl"), str(tmp_path)])
