"""Review-finding recall (seed 002): query construction, language re-rank, store isolation, fail-open, the real
model, the CLI and concurrent importers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dataflows.review.languages import finding_languages, pr_languages
from dataflows.review.models import RerankConfig, RetrievalSignals
from dataflows.review.query import conventional_type, retrieval_query, retrieval_signals
from dataflows.review.rerank import rerank_by_language, thresholded_findings
from drivers.cli import main
from drivers.embeddings import StaticModelProvider
from drivers.findings_store import add_findings as store_add, nearest_findings, open_store
from drivers.review import add_findings, recall_findings


def _signals(**kw) -> RetrievalSignals:
    base = dict(pr_title="fix(db): escape user input", conventional_type="fix", pr_languages=("python",),
                file_paths=["app/db.py"], pr_body="", risk_signals=[], author_tier=None)  # fmt: skip
    base.update(kw)
    return retrieval_signals(**base)


# --- query construction ---------------------------------------------------------------------------------------


def test_query_has_every_signal_in_the_seeds_order():
    q = retrieval_query(_signals(pr_body="Body text.", risk_signals=["auth"], author_tier="first-time"))
    assert q.split("\n") == ["fix(db): escape user input", "Body text.", "[fix]", "Languages: python", "Risk: auth",
                             "Author: first-time", "app/db.py"]  # fmt: skip


def test_signals_are_capped_as_the_seed_says():
    s = _signals(pr_body="b" * 500, pr_languages=tuple("abcdefg"), risk_signals=[f"r{i}" for i in range(9)],
                 file_paths=[f"f{i}.py" for i in range(40)])  # fmt: skip
    assert len(s.pr_body) == 200 and len(s.detected_languages) == 5
    assert s.risk_signals == ("r0", "r1", "r2") and len(s.top_file_paths) == 15
    q = retrieval_query(_signals(pr_body="", risk_signals=[f"r{i}" for i in range(9)], file_paths=["a.py"]))
    assert "Risk: r0; r1; r2\n" in q and "r3" not in q


def test_query_never_exceeds_600_chars_and_spends_them_by_priority():
    long_paths = [f"src/very/deep/package/module_{i:02d}/implementation_file.py" for i in range(15)]
    q = retrieval_query(_signals(pr_body="x" * 200, risk_signals=["touches auth", "large diff"], file_paths=long_paths,
                                 author_tier="core"))  # fmt: skip
    assert len(q) <= 600
    lines = q.split("\n")
    assert lines[:6] == ["fix(db): escape user input", "x" * 200, "[fix]", "Languages: python",
                         "Risk: touches auth; large diff", "Author: core"]  # fmt: skip
    assert 0 < len(lines[6:]) < 15 and all(line in long_paths for line in lines[6:])  # whole paths, as many as fit
    title_only = retrieval_query(_signals(pr_title="t" * 900, pr_body="body"))
    assert title_only == "t" * 600  # the title is first: it takes the whole budget when it needs it
    assert retrieval_query(_signals(pr_title="short", pr_body="b" * 200), max_query_chars=50) == "short\n" + "b" * 44


def test_empty_signals_give_an_empty_query_and_no_crash():
    s = retrieval_signals("", None, (), [], None, None, None)
    assert retrieval_query(s) == ""
    assert retrieval_query(_signals(pr_title="  ", conventional_type=None, pr_languages=(), file_paths=[])) == ""


def test_conventional_type_and_pr_languages():
    assert conventional_type("feat(ui)!: new page") == "feat" and conventional_type("Fix the parser") is None
    langs = pr_languages(["a.py", "b.py", "c.go", "README.md", "conf.yaml", "x.unknownext", "d.tsx", "e.ts", "f.ts"])
    assert langs == ("typescript", "python", "go")  # most files first; docs, config and unknown files left out


def test_language_classification_covers_25_plus_extensions():
    exts = ["py", "js", "jsx", "mjs", "ts", "tsx", "go", "java", "rs", "c", "h", "cpp", "hpp", "cs", "rb", "php",
            "kt", "swift", "scala", "sh", "sql", "lua", "pl", "r", "dart", "ex", "hs", "vue"]  # fmt: skip
    langs = finding_languages(pd.DataFrame({"file_path": [f"src/x.{e}" for e in exts]}))
    assert langs.notna().all() and langs.nunique() >= 20
    assert finding_languages(pd.DataFrame({"file_path": ["docs/a.md", "x.json", "weird.zzz", ""]})).isna().all()


# --- re-rank --------------------------------------------------------------------------------------------------


def _candidates(rows: list[tuple[str, float]]) -> pd.DataFrame:
    return pd.DataFrame({"finding_text": [f"finding on {p}" for p, _ in rows], "severity": "minor", "category": "c",
                         "file_path": [p for p, _ in rows], "outcome": "accepted", "repo": "o/r",
                         "distance": [d for _, d in rows]})  # fmt: skip


def _rerank(rows, langs=("python",), threshold=1.0, config=RerankConfig()):
    c = _candidates(rows)
    kept = thresholded_findings(c, threshold)
    return rerank_by_language(kept, finding_languages(c), langs, config)


def test_same_language_is_boosted_cross_language_penalised_unknown_neutral():
    out = _rerank([("a.go", 0.20), ("b.py", 0.20), ("README.md", 0.20), ("c.zzz", 0.20)]).set_index("file_path")
    assert out.loc["b.py", "adjusted_distance"] == pytest.approx(0.20 * 0.85) and out.loc["b.py", "language_match"]
    assert out.loc["a.go", "adjusted_distance"] == pytest.approx(0.20 * 1.15) and not out.loc["a.go", "language_match"]
    assert out.loc["README.md", "adjusted_distance"] == pytest.approx(0.20)
    assert out.loc["c.zzz", "adjusted_distance"] == pytest.approx(0.20)
    assert list(out.index) == ["b.py", "README.md", "c.zzz", "a.go"]
    assert (out["distance"] == 0.20).all()  # the original distance is kept beside the adjusted one


def test_threshold_applies_to_the_original_distance():
    out = _rerank([("near.go", 0.25), ("far.py", 0.32)], threshold=0.3)
    assert list(out["file_path"]) == ["near.go"]  # far.py would be 0.272 after the boost, but 0.32 > 0.3


def test_the_seeds_distortion_pitfall_mild_factors_keep_the_closer_cross_language_finding_first():
    out = _rerank([("same.py", 0.28), ("other.go", 0.15)])
    assert list(out["file_path"]) == ["other.go", "same.py"]  # 0.15 x 1.15 = 0.1725 < 0.28 x 0.85 = 0.238
    near_tie = _rerank([("same.py", 0.20), ("other.go", 0.19)])
    assert list(near_tie["file_path"]) == ["same.py", "other.go"]  # language breaks a near-tie
    harsh = _rerank([("same.py", 0.28), ("other.go", 0.15)], config=RerankConfig(0.4, 2.0))
    assert list(harsh["file_path"]) == ["same.py", "other.go"]  # what aggressive factors would do


# --- store: isolation and sharing ----------------------------------------------------------------------------


class _Fixed:
    """A test provider: every text maps to the same direction, nudged by its length (deterministic, instant)."""

    model, dimension, distance_threshold = "test:fixed", 4, 2.0

    def generate(self, text, input_type="query"):
        return self.generate_many([text])[0] if text.strip() else None

    def generate_many(self, texts, input_type="document"):
        v = np.array([[1.0, 0.2, 0.1, len(t) % 7 / 100] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


class _Broken(_Fixed):
    def generate(self, text, input_type="query"):
        raise RuntimeError("model exploded")


def _finding(repo: str, text: str = "null check missing", path: str = "a.py") -> dict:
    return {"finding_text": text, "severity": "major", "category": "correctness", "file_path": path,
            "outcome": "accepted", "repo": repo, "created_at": "2026-01-01T00:00:00Z"}  # fmt: skip


def test_repository_isolation_and_owner_sharing(tmp_path):
    db = tmp_path / "findings.db"
    rows = [_finding(r) for r in ("acme/a", "acme/b", "other/c")]
    assert add_findings(rows, db, _Fixed()) == 3
    assert add_findings(rows, db, _Fixed()) == 0  # stored once
    repos = lambda **kw: sorted(f.repo for f in recall_findings("fix null", "", ["x.py"], db_path=db, provider=_Fixed(), **kw).findings)  # noqa: E731
    assert repos(repo="acme/a") == ["acme/a"]
    assert repos(repo="acme/a", sharing_enabled=True) == ["acme/a", "acme/b"]  # never another owner's
    assert repos(repo="other/c", sharing_enabled=True) == ["other/c"]
    assert repos(repo="nobody/x") == []
    with open_store(db) as conn:  # the store's own query, below the driver
        assert nearest_findings(conn, _Fixed().generate("q"), "test:fixed", "acme/b", 10)["repo"].tolist() == ["acme/b"]


def test_a_file_of_another_program_is_refused_and_left_alone(tmp_path):
    db = tmp_path / "other.db"
    db.write_bytes(b"not a database at all" * 100)
    before = db.read_bytes()
    assert main(["findings", "add", "x", "--repo", "o/r", "--db", str(db)]) == 2
    assert db.read_bytes() == before


# --- fail open ------------------------------------------------------------------------------------------------


def test_fail_open_no_provider_broken_provider_damaged_store(tmp_path):
    db = tmp_path / "findings.db"
    add_findings([_finding("acme/a")], db, _Fixed())
    none = recall_findings("fix null", db_path=db, repo="acme/a", no_provider=True)
    assert none.findings == () and none.query and any("no embedding provider" in w for w in none.warnings)
    broken = recall_findings("fix null", db_path=db, repo="acme/a", provider=_Broken())
    assert broken.findings == () and any("model exploded" in w for w in broken.warnings)
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"garbage" * 200)
    result = recall_findings("fix null", db_path=damaged, repo="acme/a", provider=_Fixed())
    assert result.findings == () and result.warnings and result.section == ""
    assert recall_findings("fix null", db_path=db, repo="acme/a", provider=_Fixed()).findings  # and it works when it can


# --- the real model -------------------------------------------------------------------------------------------


def test_real_model_ranks_the_relevant_finding_first(tmp_path):
    db = tmp_path / "findings.db"
    rows = [
        _finding("acme/shop", "SQL injection: the query is built by concatenating user input; use parameters", "app/db.py"),
        _finding("acme/shop", "Typo in the German translation of the checkout button label", "locale/de.po"),
        _finding("acme/shop", "Image thumbnails are regenerated on every page load; cache them", "app/images.py"),
    ]
    provider = StaticModelProvider()
    add_findings(rows, db, provider)
    result = recall_findings("Escape user-supplied values in the search SQL query", "Build the WHERE clause with bound "
                             "parameters", ["app/search.py"], repo="acme/shop", db_path=db, provider=provider,
                             distance_threshold=2.0)  # fmt: skip
    assert result.findings[0].finding_text.startswith("SQL injection")
    texts = [f.finding_text for f in result.findings]
    assert texts.index(rows[0]["finding_text"]) < texts.index(rows[1]["finding_text"])
    assert result.findings[0].distance < result.findings[-1].distance


# --- CLI ------------------------------------------------------------------------------------------------------


def test_cli_import_reports_bad_lines_by_number_and_keeps_good_ones(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CRA_HOME", str(tmp_path / "home"))
    lines = [json.dumps(_finding("acme/shop", "Nil pointer dereference when the config is missing", "cmd/main.go")),
             "{not json", json.dumps({**_finding("acme/shop"), "repo": "no-owner"}),
             json.dumps({**_finding("acme/shop"), "severity": ""}),
             json.dumps(_finding("acme/shop", "SQL injection through string concatenation", "app/db.py"))]  # fmt: skip
    source = tmp_path / "findings.jsonl"
    source.write_text("\n".join(lines) + "\n")
    assert main(["findings", "import", str(source)]) == 0
    out, err = capsys.readouterr()
    assert "imported 2 findings" in out and "rejected 3 lines" in out
    assert f"{source}:2:" in err and f"{source}:3:" in err and f"{source}:4:" in err and ":1:" not in err
    assert (tmp_path / "home" / "findings.db").exists()

    assert main(["findings", "query", "--title", "fix: use bound parameters in SQL", "--files", "app/db.py,app/x.py",
                 "--repo", "acme/shop", "--max-distance", "2", "--json"]) == 0  # fmt: skip
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"query", "findings"} and payload["query"].startswith("fix: use bound parameters in SQL")
    assert len(payload["findings"]) == 2
    assert set(payload["findings"][0]) == {"finding_text", "severity", "category", "file_path", "outcome", "repo",
                                           "distance", "adjusted_distance", "language_match"}  # fmt: skip
    assert payload["findings"][0]["finding_text"].startswith("SQL injection")
    adjusted = [f["adjusted_distance"] for f in payload["findings"]]
    assert adjusted == sorted(adjusted)

    assert main(["findings", "query", "--title", "fix: use bound parameters in SQL", "--repo", "acme/shop",
                 "--max-distance", "2"]) == 0  # fmt: skip
    assert "## Similar Prior Findings" in capsys.readouterr().out
    assert main(["findings", "query", "--title", "x", "--repo", "bad"]) == 2
    assert main(["findings", "import", str(tmp_path / "missing.jsonl")]) == 2


# --- concurrent importers -------------------------------------------------------------------------------------


def test_concurrent_importers_lose_nothing(tmp_path):
    db, procs = tmp_path / "findings.db", []
    for p in range(4):
        source = tmp_path / f"part{p}.jsonl"
        source.write_text("".join(json.dumps(_finding(f"acme/r{p % 2}", f"finding {p}-{i} about retries", f"m{i}.py")) + "\n"
                                  for i in range(40)))  # fmt: skip
        procs.append(subprocess.Popen([sys.executable, "-c", "import sys; from drivers.cli import main; "
                                       f"sys.exit(main(['findings', 'import', {str(source)!r}, '--db', {str(db)!r}]))"],
                                      cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.PIPE, text=True))  # fmt: skip
    outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0], outputs
    with open_store(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM findings").fetchone()[0] == 160
        (vectors,) = conn.execute("SELECT COUNT(*) FROM vectors_1").fetchone()
        assert vectors == 160
        assert store_add(conn, [], np.zeros((0, 4)), "unused") == []
