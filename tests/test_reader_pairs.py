"""Training pairs of the code-reading reranker (issue 57): the texts it reads, and pairs built from collected
signals of a generated mined case (no torch needed)."""

from __future__ import annotations

import json
import subprocess

import pandas as pd

from cra.dataflows.retrieval.passages import GAP, file_passage, line_chunks, symbol_passage
from cra.drivers.common.errors import exit_code
from cra.drivers.research import mined_signals, reader_pairs
from tests.fixture_repo import make_repo


def _source(n_functions: int, special: int) -> str:
    """A file of many small functions; one of them (`special`) parses retry headers."""
    parts = []
    for i in range(n_functions):
        body = "    return parse_retry_after(headers)" if i == special else f"    return value_{i} + {i}"
        parts.append(f"def helper_{i}(value_{i}, headers):\n    '''Step {i} of the pipeline.'''\n{body}\n")
    return "\n".join(parts)


def test_a_file_reads_as_its_path_and_the_chunks_that_match_the_task():
    source = _source(60, special=41)
    spans = [(1 + 4 * i, 3 + 4 * i) for i in range(60)]
    task = "Retry-After header is ignored: parse_retry_after returns None for HTTP dates"
    text = file_passage("net/client.py", source, spans, task, budget=300)
    assert text.startswith("net/client.py\n")
    # the matching function first (a reader truncates), from the file's middle
    assert text.splitlines()[1].startswith("def helper_41(") and "parse_retry_after" in text
    assert len(text) <= 300 and GAP.strip() in text
    whole = file_passage("net/client.py", source, spans, task, budget=100_000)
    assert all(f"def helper_{i}(" in whole for i in range(60))  # all of it when it fits
    assert whole.index("helper_41(") < whole.index("helper_0(") < whole.index("helper_59(")


def test_chunks_cover_every_line_and_cut_long_spans():
    chunks = line_chunks(100, [(10, 95)])
    covered = {n for a, b in chunks for n in range(a, b + 1)}
    assert covered == set(range(1, 101))
    assert max(b - a + 1 for a, b in chunks) <= 40


def test_a_long_symbol_reads_as_its_signature_and_the_body_windows_that_match():
    lines = ["def handle(request):"] + [f"    step_{i}(request)" for i in range(200)]
    lines[150] = "    refresh_token_expiry(request)"
    text = symbol_passage("app/h.py", "handle", "\n".join(lines), (1, 201), "token expiry is not refreshed", budget=400)
    assert text.startswith("app/h.py handle\ndef handle(request):")
    assert "refresh_token_expiry" in text and len(text) <= 400


def _git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_pairs_of_a_mined_case_hold_its_gold_and_the_first_stages_best(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CRA_CACHE", str(tmp_path / "cache"))
    repo = make_repo(tmp_path / "repo")
    mirror = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(mirror / "ex+app" / "repo")], check=True)
    shas = _git(repo, "log", "--format=%H", "--reverse").split()
    case = {
        "instance_id": "ex__app-2",
        "repo": "ex/app",
        "base_commit": shas[1],
        "created_at": "2024-01-02",
        "problem_statement": "Fix LDAP login fallback: validate_ldap accepts users without a name (#3)",
        "gold_files": ["app/auth/ldap.py"],
        "gold_functions": ["app/auth/ldap.py::validate_ldap"],
        "language": "python",
    }
    case_file = tmp_path / "cases.jsonl"
    case_file.write_text(json.dumps(case) + "\n")
    signals = tmp_path / "signals"
    assert mined_signals.main(["--cases", str(case_file), "--mirror", str(mirror), "--out", str(signals)]) == 0
    out = tmp_path / "pairs"
    args = [
        "--cases",
        str(case_file),
        "--signals",
        str(signals),
        "--mirror",
        str(mirror),
        "--out",
        str(out),
        "--top",
        "5",
    ]
    assert reader_pairs.main(args) == 0
    pairs = reader_pairs.read_pairs(out)
    assert (
        set(pairs["case_id"]) == {"ex__app-2"}
        and set(pairs["repo"]) == {"ex/app"}
        and set(pairs["language"]) == {"python"}
    )
    assert set(pairs["set"]) == {"signals"}
    files = pairs[pairs["kind"] == "file"]
    gold = files[files["gold"]]
    assert gold["key"].tolist() == ["app/auth/ldap.py"] and (files["n_gold"] == 1).all()
    assert gold["passage"].iloc[0].startswith("app/auth/ldap.py\n") and "def validate_ldap" in gold["passage"].iloc[0]
    assert 1 <= gold["rank"].iloc[0] <= 5 and (files["n_gold_top"] == 1).all()  # the first stage brings it in
    negatives = files[~files["gold"]]
    assert len(negatives) >= 3 and negatives["rank"].between(1, 5).all()  # hard negatives: its other best files
    assert sorted(files["rank"].tolist()) == list(range(1, len(files) + 1))
    assert (files["query"].str.startswith("Fix LDAP login fallback")).all()
    symbols = pairs[pairs["kind"] == "symbol"]
    gold_symbol = symbols[symbols["gold"]]
    assert gold_symbol["key"].tolist() == ["app/auth/ldap.py::validate_ldap"]
    assert gold_symbol["passage"].iloc[0].startswith("app/auth/ldap.py validate_ldap\n")
    assert "Check credentials against the LDAP directory" in gold_symbol["passage"].iloc[0]
    assert (~symbols["gold"]).sum() >= 1 and symbols.loc[~symbols["gold"], "rank"].between(1, 5).all()

    written = sorted(p.stat().st_mtime_ns for p in out.glob("*/*.parquet"))
    assert reader_pairs.main(args) == 0  # a rerun writes nothing again
    assert sorted(p.stat().st_mtime_ns for p in out.glob("*/*.parquet")) == written
    assert "0 parts written" in capsys.readouterr().out

    assert exit_code(reader_pairs.main, [*args[:2], "--signals", str(tmp_path / "none"), *args[4:]]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: No signal rows under")
    assert isinstance(pairs, pd.DataFrame)
