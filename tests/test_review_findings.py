"""Review-finding recall: query construction, fusion of vector and BM25 candidates, language re-rank,
store isolation (vectors and FTS5), the FTS migration, BM25 alone without a model, fail-open, the real model, the CLI
and concurrent importers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.review.fusion import fused_findings__rrf, fused_findings__score
from cra.dataflows.review.languages import finding_languages, pr_languages
from cra.dataflows.review.models import RerankConfig, RetrievalSignals
from cra.dataflows.review.query import conventional_type, retrieval_query, retrieval_signals
from cra.dataflows.review.rerank import rerank_by_language, thresholded_findings
from cra.drivers.cli.main import main
from cra.drivers.findings.embeddings import StaticModelProvider
from cra.drivers.findings.review import add_findings, recall_findings
from cra.drivers.findings.store import add_findings as store_add
from cra.drivers.findings.store import lexical_findings, nearest_findings, open_store


def _signals(**kw) -> RetrievalSignals:
    base = dict(
        pr_title="fix(db): escape user input",
        conventional_type="fix",
        pr_languages=("python",),
        file_paths=["app/db.py"],
        pr_body="",
        risk_signals=[],
        author_tier=None,
    )
    base.update(kw)
    return retrieval_signals(**base)


# --- query construction ---------------------------------------------------------------------------------------


def test_query_has_every_signal_in_the_seeds_order():
    q = retrieval_query(_signals(pr_body="Body text.", risk_signals=["auth"], author_tier="first-time"))
    assert q.split("\n") == [
        "fix(db): escape user input",
        "Body text.",
        "[fix]",
        "Languages: python",
        "Risk: auth",
        "Author: first-time",
        "app/db.py",
    ]


def test_signals_are_capped_as_the_seed_says():
    s = _signals(
        pr_body="b" * 500,
        pr_languages=tuple("abcdefg"),
        risk_signals=[f"r{i}" for i in range(9)],
        file_paths=[f"f{i}.py" for i in range(40)],
    )
    assert len(s.pr_body) == 200 and len(s.detected_languages) == 5
    assert s.risk_signals == ("r0", "r1", "r2") and len(s.top_file_paths) == 15
    q = retrieval_query(_signals(pr_body="", risk_signals=[f"r{i}" for i in range(9)], file_paths=["a.py"]))
    assert "Risk: r0; r1; r2\n" in q and "r3" not in q


def test_query_never_exceeds_600_chars_and_spends_them_by_priority():
    long_paths = [f"src/very/deep/package/module_{i:02d}/implementation_file.py" for i in range(15)]
    q = retrieval_query(
        _signals(
            pr_body="x" * 200, risk_signals=["touches auth", "large diff"], file_paths=long_paths, author_tier="core"
        )
    )
    assert len(q) <= 600
    lines = q.split("\n")
    assert lines[:6] == [
        "fix(db): escape user input",
        "x" * 200,
        "[fix]",
        "Languages: python",
        "Risk: touches auth; large diff",
        "Author: core",
    ]
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
    exts = [
        "py",
        "js",
        "jsx",
        "mjs",
        "ts",
        "tsx",
        "go",
        "java",
        "rs",
        "c",
        "h",
        "cpp",
        "hpp",
        "cs",
        "rb",
        "php",
        "kt",
        "swift",
        "scala",
        "sh",
        "sql",
        "lua",
        "pl",
        "r",
        "dart",
        "ex",
        "hs",
        "vue",
    ]
    langs = finding_languages(pd.DataFrame({"file_path": [f"src/x.{e}" for e in exts]}))
    assert langs.notna().all() and langs.nunique() >= 20
    assert finding_languages(pd.DataFrame({"file_path": ["docs/a.md", "x.json", "weird.zzz", ""]})).isna().all()


# --- re-rank --------------------------------------------------------------------------------------------------


def _candidates(rows: list[tuple[str, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "finding_text": [f"finding on {p}" for p, _ in rows],
            "severity": "minor",
            "category": "c",
            "file_path": [p for p, _ in rows],
            "outcome": "accepted",
            "repo": "o/r",
            "distance": [d for _, d in rows],
        }
    )


def _rerank(rows, langs=("python",), threshold=1.0, config=RerankConfig()):
    """Threshold, then the re-rank of fused findings whose fused distance is given (here: the distance itself)."""
    c = _candidates(rows)
    kept = thresholded_findings(c, threshold)
    return rerank_by_language(kept.assign(fused_distance=kept["distance"]), finding_languages(c), langs, config)


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


def test_after_rank_fusion_language_only_reorders_neighbouring_ranks():
    vector = _candidates(
        [("best.go", 0.10), ("second.py", 0.12)]
        + [(f"n{i}.go", 0.2 + i / 100) for i in range(8)]
        + [("tenth.py", 0.35)]
    )
    fused = fused_findings__rrf(vector, _lexical([]))
    out = rerank_by_language(fused, finding_languages(fused), ("python",))
    assert list(out["file_path"][:2]) == ["best.go", "second.py"]  # the best candidate keeps its place
    assert list(out["file_path"]).index("tenth.py") < 10  # a same-language finding climbs a few ranks, not to the top
    assert list(out["file_path"]).index("tenth.py") > 5


# --- fusion ---------------------------------------------------------------------------------------------------


def _lexical(rows: list[tuple[str, float]], start: int = 100) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "finding_text": [f"finding on {p}" for p, _ in rows],
            "file_path": [p for p, _ in rows],
            "repo": "o/r",
            "bm25": [b for _, b in rows],
        },
        index=pd.RangeIndex(start, start + len(rows), name="finding_id"),
    )


def test_fusion_ranks_a_finding_both_sides_found_above_those_one_side_found():
    vector = _candidates([("v1.py", 0.10), ("both.py", 0.20), ("v3.py", 0.30)])
    lexical = _lexical([("l1.py", 9.0), ("l2.py", 5.0)])
    lexical = pd.concat([lexical, vector.loc[[1]].drop(columns="distance").assign(bm25=4.0)])  # both.py: 2nd / 3rd
    out = fused_findings__rrf(vector, lexical)
    assert list(out["file_path"]) == ["both.py", "l1.py", "l2.py", "v1.py", "v3.py"]  # a vector vote weighs 0.7
    assert out["fused_distance"].iloc[0] == 0 and out["fused_distance"].is_monotonic_increasing
    first = out.set_index("file_path")
    assert first.loc["both.py", ["vector_rank", "lexical_rank"]].tolist() == [2, 3]
    assert np.isnan(first.loc["l1.py", "distance"]) and np.isnan(first.loc["v1.py", "bm25"])  # one side only
    even = fused_findings__rrf(vector, lexical, vector_weight=1.0).set_index("file_path")  # unweighted: 1st = 1st
    assert even.loc["v1.py", "fused_distance"] == even.loc["l1.py", "fused_distance"]


def test_fusion_ties_share_a_rank_and_break_by_distance_bm25_then_id():
    vector = _candidates([("a.py", 0.2), ("b.py", 0.2), ("c.py", 0.3)])
    out = fused_findings__rrf(vector, _lexical([]))
    assert out["vector_rank"].tolist() == [1, 1, 3] and list(out["file_path"]) == ["a.py", "b.py", "c.py"]
    assert out["fused_distance"].iloc[0] == out["fused_distance"].iloc[1]
    lexical = _lexical([("x.py", 3.0), ("y.py", 3.0)])
    assert list(fused_findings__rrf(_candidates([]), lexical)["file_path"]) == ["x.py", "y.py"]  # same bm25: by id
    swapped = lexical.iloc[::-1]
    assert list(fused_findings__rrf(_candidates([]), swapped)["file_path"]) == ["x.py", "y.py"]  # not input order


def test_fusion_with_one_side_empty_keeps_that_sides_order():
    vector = _candidates([("far.py", 0.3), ("near.py", 0.1), ("mid.py", 0.2)])
    only_vector = fused_findings__rrf(vector, _lexical([]))
    assert list(only_vector["file_path"]) == ["near.py", "mid.py", "far.py"] and only_vector["bm25"].isna().all()
    only_lexical = fused_findings__rrf(_candidates([]), _lexical([("low.py", 1.0), ("high.py", 7.0)]))
    assert list(only_lexical["file_path"]) == ["high.py", "low.py"] and only_lexical["distance"].isna().all()
    assert fused_findings__rrf(_candidates([]), _lexical([])).empty
    score = fused_findings__score(vector, _lexical([]))  # the score variant keeps distances when BM25 found nothing
    assert score["fused_distance"].tolist() == pytest.approx([0.1, 0.2, 0.3])


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
    return {
        "finding_text": text,
        "severity": "major",
        "category": "correctness",
        "file_path": path,
        "outcome": "accepted",
        "repo": repo,
        "created_at": "2026-01-01T00:00:00Z",
    }


def test_repository_isolation_and_owner_sharing(tmp_path):
    db = tmp_path / "findings.db"
    rows = [_finding(r) for r in ("acme/a", "acme/b", "other/c")]
    assert add_findings(rows, db, _Fixed()) == 3
    assert add_findings(rows, db, _Fixed()) == 0  # stored once
    repos = lambda **kw: sorted(
        f.repo for f in recall_findings("fix null", "", ["x.py"], db_path=db, provider=_Fixed(), **kw).findings
    )  # noqa: E731
    assert repos(repo="acme/a") == ["acme/a"]
    assert repos(repo="acme/a", sharing_enabled=True) == ["acme/a", "acme/b"]  # never another owner's
    assert repos(repo="other/c", sharing_enabled=True) == ["other/c"]
    assert repos(repo="nobody/x") == []
    with open_store(db) as conn:  # the store's own query, below the driver
        assert nearest_findings(conn, _Fixed().generate("q"), "test:fixed", "acme/b", 10)["repo"].tolist() == ["acme/b"]


def test_bm25_search_keeps_the_same_isolation(tmp_path):
    db = tmp_path / "findings.db"
    add_findings(
        [_finding(r, f"Retry loop never backs off in {r}") for r in ("acme/a", "acme/b", "other/c")]
        + [_finding("acme/a", "Typo in the changelog", "CHANGES.md")],
        db,
        _Fixed(),
    )
    with open_store(db) as conn:
        search = lambda repo, share=False: sorted(  # noqa: E731
            lexical_findings(conn, "the retry loop should back off", repo, 10, share)["repo"]
        )
        assert search("acme/a") == ["acme/a"]  # the changelog typo matches no query term
        assert search("acme/a", True) == ["acme/a", "acme/b"]
        assert search("other/c", True) == ["other/c"] and search("nobody/x", True) == []
        assert search(None) == ["acme/a", "acme/b", "other/c"]  # no repository: the whole store
        assert lexical_findings(conn, "the and of", "acme/a", 10).empty  # stop words only: no terms, no hits
    bm25_only = lambda **kw: sorted(
        f.repo
        for f in recall_findings(  # noqa: E731
            "retry backoff", db_path=db, no_provider=True, **kw
        ).findings
    )
    assert bm25_only(repo="acme/b") == ["acme/b"] and bm25_only(repo="acme/b", sharing_enabled=True) == [
        "acme/a",
        "acme/b",
    ]


def test_a_store_written_before_fts_gets_it_filled_on_open(tmp_path):
    db = tmp_path / "findings.db"
    add_findings(
        [
            _finding("acme/a", "Cursor is never closed on the error path", "app/db.py"),
            _finding("acme/a", "Cache key ignores the tenant", "app/cache.py"),
        ],
        db,
        _Fixed(),
    )
    with open_store(db) as conn:  # turn it into a schema-1 store: no FTS table, user_version 1
        conn.execute("DROP TABLE findings_fts; PRAGMA user_version = 1")
    for _ in range(2):  # the first open migrates, the second finds it done (nothing indexed twice)
        with open_store(db) as conn:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
            assert conn.execute("SELECT COUNT(*) FROM findings_fts").fetchone()[0] == 2
            hits = lexical_findings(conn, "close the cursor on error", "acme/a", 5)
            assert hits["file_path"].tolist() == ["app/db.py"]
    add_findings([_finding("acme/a", "Cursor leaks in the report job", "app/report.py")], db, _Fixed())
    with open_store(db) as conn:
        assert set(lexical_findings(conn, "cursor", "acme/a", 5)["file_path"]) == {"app/db.py", "app/report.py"}


def test_a_file_of_another_program_is_refused_and_left_alone(tmp_path):
    db = tmp_path / "other.db"
    db.write_bytes(b"not a database at all" * 100)
    before = db.read_bytes()
    assert main(["findings", "add", "x", "--repo", "o/r", "--db", str(db)]) == 2
    assert db.read_bytes() == before


# --- fail open ------------------------------------------------------------------------------------------------


def test_without_a_model_bm25_answers_alone_and_says_so(tmp_path):
    db = tmp_path / "findings.db"
    add_findings([_finding("acme/a"), _finding("acme/a", "Unbounded retry loop", "b.py")], db, _Fixed())
    none = recall_findings("fix null check", db_path=db, repo="acme/a", no_provider=True)
    assert [f.finding_text for f in none.findings] == ["null check missing"]  # the retry finding shares no term
    assert none.findings[0].distance is None and none.findings[0].bm25 > 0
    assert any("no embedding provider" in w and "BM25" in w for w in none.warnings)
    broken = recall_findings("fix null check", db_path=db, repo="acme/a", provider=_Broken())
    assert [f.finding_text for f in broken.findings] == ["null check missing"]
    assert any("model exploded" in w and "BM25" in w for w in broken.warnings)
    assert recall_findings("zzz qqq", db_path=db, repo="acme/a", no_provider=True).findings == ()


def test_fail_open_damaged_store(tmp_path):
    db = tmp_path / "findings.db"
    add_findings([_finding("acme/a")], db, _Fixed())
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"garbage" * 200)
    result = recall_findings("fix null", db_path=damaged, repo="acme/a", provider=_Fixed())
    assert result.findings == () and result.warnings and result.section == ""
    assert recall_findings(
        "fix null", db_path=db, repo="acme/a", provider=_Fixed()
    ).findings  # and it works when it can


# --- the real model -------------------------------------------------------------------------------------------


def test_real_model_ranks_the_relevant_finding_first(tmp_path):
    db = tmp_path / "findings.db"
    rows = [
        _finding(
            "acme/shop", "SQL injection: the query is built by concatenating user input; use parameters", "app/db.py"
        ),
        _finding("acme/shop", "Typo in the German translation of the checkout button label", "locale/de.po"),
        _finding("acme/shop", "Image thumbnails are regenerated on every page load; cache them", "app/images.py"),
    ]
    provider = StaticModelProvider()
    add_findings(rows, db, provider)
    result = recall_findings(
        "Escape user-supplied values in the search SQL query",
        "Build the WHERE clause with bound parameters",
        ["app/search.py"],
        repo="acme/shop",
        db_path=db,
        provider=provider,
        distance_threshold=2.0,
    )
    assert result.findings[0].finding_text.startswith("SQL injection")
    texts = [f.finding_text for f in result.findings]
    assert texts.index(rows[0]["finding_text"]) < texts.index(rows[1]["finding_text"])
    assert result.findings[0].distance < result.findings[-1].distance


# --- CLI ------------------------------------------------------------------------------------------------------


def test_cli_import_reports_bad_lines_by_number_and_keeps_good_ones(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CRA_HOME", str(tmp_path / "home"))
    lines = [
        json.dumps(_finding("acme/shop", "Nil pointer dereference when the config is missing", "cmd/main.go")),
        "{not json",
        json.dumps({**_finding("acme/shop"), "repo": "no-owner"}),
        json.dumps({**_finding("acme/shop"), "severity": ""}),
        json.dumps(_finding("acme/shop", "SQL injection through string concatenation", "app/db.py")),
    ]
    source = tmp_path / "findings.jsonl"
    source.write_text("\n".join(lines) + "\n")
    assert main(["findings", "import", str(source)]) == 0
    out, err = capsys.readouterr()
    assert "imported 2 findings" in out and "rejected 3 lines" in out
    assert f"{source}:2:" in err and f"{source}:3:" in err and f"{source}:4:" in err and ":1:" not in err
    assert (tmp_path / "home" / "findings.db").exists()

    assert (
        main(
            [
                "findings",
                "query",
                "--title",
                "fix: use bound parameters in SQL",
                "--files",
                "app/db.py,app/x.py",
                "--repo",
                "acme/shop",
                "--max-distance",
                "2",
                "--json",
            ]
        )
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"query", "findings"} and payload["query"].startswith("fix: use bound parameters in SQL")
    assert len(payload["findings"]) == 2
    assert set(payload["findings"][0]) == {
        "finding_text",
        "severity",
        "category",
        "file_path",
        "outcome",
        "repo",
        "distance",
        "bm25",
        "adjusted_distance",
        "language_match",
    }
    assert payload["findings"][0]["finding_text"].startswith("SQL injection")
    adjusted = [f["adjusted_distance"] for f in payload["findings"]]
    assert adjusted == sorted(adjusted)

    assert (
        main(
            [
                "findings",
                "query",
                "--title",
                "fix: use bound parameters in SQL",
                "--repo",
                "acme/shop",
                "--max-distance",
                "2",
            ]
        )
        == 0
    )
    assert "## Similar Prior Findings" in capsys.readouterr().out
    assert main(["findings", "query", "--title", "x", "--repo", "bad"]) == 2
    assert main(["findings", "import", str(tmp_path / "missing.jsonl")]) == 2

    monkeypatch.setattr(
        "cra.drivers.findings.review.default_provider", lambda: (None, ["no embedding provider (model missing)"])
    )
    assert main(["findings", "query", "--title", "fix: SQL injection", "--repo", "acme/shop", "--json"]) == 0
    out, err = capsys.readouterr()
    [only] = json.loads(out)["findings"]  # BM25 alone: the one finding that shares a term, without a distance
    assert only["finding_text"].startswith("SQL injection") and only["distance"] is None and only["bm25"] > 0
    assert "warning: no embedding provider (model missing); review findings come from BM25" in err


# --- concurrent importers -------------------------------------------------------------------------------------


def test_concurrent_importers_lose_nothing(tmp_path):
    db, procs = tmp_path / "findings.db", []
    for p in range(4):
        source = tmp_path / f"part{p}.jsonl"
        source.write_text(
            "".join(
                json.dumps(_finding(f"acme/r{p % 2}", f"finding {p}-{i} about retries", f"m{i}.py")) + "\n"
                for i in range(40)
            )
        )
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import sys; from cra.drivers.cli.main import main; "
                    f"sys.exit(main(['findings', 'import', {str(source)!r}, '--db', {str(db)!r}]))",
                ],
                cwd=Path(__file__).resolve().parent.parent,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0], outputs
    with open_store(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM findings").fetchone()[0] == 160
        (vectors,) = conn.execute("SELECT COUNT(*) FROM vectors_1").fetchone()
        assert vectors == 160
        assert store_add(conn, [], np.zeros((0, 4)), "unused") == []


def test_an_import_file_with_no_finding_is_an_error(tmp_path, capsys):
    from cra.drivers.cli.main import main

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x", "repository": "a/b"}\nnot json\n')
    assert main(["findings", "import", str(bad), "--db", str(tmp_path / "f.db")]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:1:" in err and "bad.jsonl:2:" in err and "No line of" in err
