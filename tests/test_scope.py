"""Signal weights (task type, override, redistribution), the signal matrix, and the stage-1 scope."""

from __future__ import annotations

import pandas as pd
import pytest
from hamilton import driver

from cra.dataflows.index.schema import TABLES
from cra.dataflows.lexical import Bm25Index
from cra.dataflows.retrieval import (
    combination,
    issue_templates,
    path_scope,
    reranking,
    scope,
    signals,
    task_analysis,
    word_tables,
)
from cra.dataflows.retrieval.combination import DEFAULT_WEIGHTS, SIGNALS
from cra.dataflows.retrieval.models import TaskQuery
from cra.dataflows.text import term_counts
from tests.retrieval_dag import run_node


def kb_files(*paths: str) -> pd.DataFrame:
    """A files table with every schema column; test files are those under tests/."""
    n = len(paths)
    frame = pd.DataFrame({column: [None] * n for column in TABLES["files"]})
    frame["file_id"] = range(n)
    frame["path"] = list(paths)
    frame["is_test"] = [p.startswith("tests/") for p in paths]
    frame["module"] = [p.rsplit(".", 1)[0].replace("/", ".") for p in paths]
    frame["domain"] = ""
    frame["concepts"] = [[] for _ in paths]
    return frame


def kb_edges(*pairs: tuple[int, int]) -> pd.DataFrame:
    """An edges table from (src, dst) import pairs."""
    return pd.DataFrame(
        {"src_file_id": [a for a, _ in pairs], "dst_file_id": [b for _, b in pairs], "kind": ["import"] * len(pairs)},
        columns=list(TABLES["edges"]),
    )


def kb_cochange(*rows: tuple[int, int, int]) -> pd.DataFrame:
    """A cochange table from (file_a, file_b, count) rows."""
    return pd.DataFrame(list(rows), columns=list(TABLES["cochange"]))


def matrix(totals: dict[int, float], seeds: tuple[int, ...] = (), paths: list[str] | None = None) -> pd.DataFrame:
    """A signal matrix with the given totals carried by lexical_match (a task signal) and seed flags."""
    ids = list(totals)
    frame = pd.DataFrame(0.0, index=pd.Index(ids, name="file_id"), columns=list(SIGNALS))
    frame["lexical_match"] = [totals[i] for i in ids]
    frame.insert(0, "path", paths or [f"f{i}.py" for i in ids])
    frame["score"] = [totals[i] for i in ids]
    frame["total"] = [1.0 if i in seeds else totals[i] for i in ids]
    frame["seed"] = [i in seeds for i in ids]
    return frame.sort_values("total", ascending=False, kind="stable")


def scope_of(signal_matrix: pd.DataFrame, **values) -> pd.DataFrame:
    """The scope node on a matrix whose seeds were each named by a file hint."""
    seeds = signal_matrix.index[signal_matrix["seed"].to_numpy(dtype=bool)]
    named = pd.Series([f"file hint 'f{i}.py'" for i in seeds], index=seeds, dtype=object)
    return run_node("scope", signal_matrix=signal_matrix, seed_files=named, **values)


def weights(task_type: str = "feature", override: dict | None = None, live: tuple[str, ...] = SIGNALS) -> pd.Series:
    """Effective weights for a task type and override when only the `live` signals have data."""
    configured = combination.configured_signal_weights(TaskQuery("", task_type), override, None)
    frame = pd.DataFrame({s: [1.0 if s in live else 0.0] for s in SIGNALS})
    return combination.signal_weights(configured, frame)


def test_default_weights_are_normalised_to_one():
    w = weights()
    assert w.sum() == pytest.approx(1.0)
    assert w["lexical_match"] / w["symbol_match"] == pytest.approx(0.30 / 0.25)
    assert set(w.index) == set(DEFAULT_WEIGHTS)


def test_task_type_adjustments_follow_the_seed():
    total = sum(DEFAULT_WEIGHTS.values())
    bug = weights("bug_fix")
    assert bug["structural_centrality"] == 0.0
    assert bug["recency"] == pytest.approx(0.15 / (total + 0.10 - 0.05))
    assert weights("refactor")["structural_centrality"] == pytest.approx(0.15 / (total + 0.10))
    assert weights("test")["symbol_match"] == pytest.approx(0.30 / (total + 0.05))


def test_override_replaces_named_weights_and_rejects_unknown_names():
    w = weights(override={"lexical_match": 0.0, "path_match": 1.0})
    assert w["lexical_match"] == 0.0
    assert w["path_match"] == pytest.approx(1.0 / (sum(DEFAULT_WEIGHTS.values()) - 0.30 - 0.20 + 1.0))
    with pytest.raises(ValueError, match="valid names: path_match"):
        weights(override={"bm25": 0.5})


def test_all_zero_signals_lose_their_weight_to_the_others():
    w = weights(live=("path_match", "symbol_match"))
    assert w["path_match"] == pytest.approx(0.20 / 0.45) and w["symbol_match"] == pytest.approx(0.25 / 0.45)
    assert w.drop(["path_match", "symbol_match"]).eq(0).all()


def test_summed_matrix_gives_seeds_a_total_of_one_and_sorts_by_total():
    files = kb_files("a.py", "b.py", "c.py")
    frame = pd.DataFrame({s: [0.2, 0.9, 0.0] for s in SIGNALS}, index=pd.Index([0, 1, 2], name="file_id"))
    w = pd.Series(1 / len(SIGNALS), index=list(SIGNALS))
    prior = pd.Series(1.0, index=[0, 1, 2])
    m = combination.summed_matrix(
        files, frame, w, pd.Series({2: "file hint 'c.py'"}), prior, combination.file_roles(files)
    )
    assert list(m.index) == [2, 1, 0]
    assert m.loc[2, "total"] == 1.0 and m.loc[1, "total"] == pytest.approx(0.9) and bool(m.loc[2, "seed"])
    assert list(m.columns) == ["path", *SIGNALS, "prior", "score", "total", "seed"]


def test_role_priors_demote_tests_and_docs_and_order_seeds_by_score():
    files = kb_files("src/a.py", "tests/test_a.py", "README.md", "src/b.py")
    files["is_test"] = [False, True, False, False]
    files["language"] = ["python", "python", "markdown", "python"]
    priors = combination.file_priors({"test_file_prior": 0.5}, {"priors": {"non_source_prior": 0.25}})
    prior = combination.file_prior(combination.file_roles(files), priors)
    assert prior.tolist() == [1.0, 0.5, 0.25, 1.0]
    frame = pd.DataFrame({s: [0.4, 0.6, 0.9, 0.7] for s in SIGNALS}, index=pd.Index([0, 1, 2, 3], name="file_id"))
    w = pd.Series(1 / len(SIGNALS), index=list(SIGNALS))
    m = combination.summed_matrix(
        files, frame, w, pd.Series({0: "hint", 3: "hint"}), prior, combination.file_roles(files)
    )
    assert list(m.index) == [3, 0, 1, 2]  # seeds first (better-scoring seed first), then tests 0.3 > docs 0.225
    assert m.loc[1, "score"] == pytest.approx(0.3) and m.loc[2, "score"] == pytest.approx(0.225)


def test_weight_profile_replaces_defaults_and_task_type_adjustments():
    profile = {"weights": {"lexical_match": 1.0, "path_match": 0.0}, "task_types": {}}
    configured = combination.configured_signal_weights(TaskQuery("", "bug_fix"), None, profile)
    assert configured["lexical_match"] == 1.0 and configured["path_match"] == 0.0
    assert configured["recency"] == DEFAULT_WEIGHTS["recency"]  # no bug_fix boost: the profile has none


def test_scope_keeps_seeds_first_then_top_n_by_score():
    files = kb_files(*[f"f{i}.py" for i in range(6)])
    m = matrix({0: 0.1, 1: 0.9, 2: 0.5, 3: 0.3, 4: 0.0, 5: 0.2}, seeds=(0,))
    s = scope_of(m, kb_files=files, kb_edges=kb_edges(), kb_cochange=kb_cochange(), scope_size=3)
    assert list(s.index) == [0, 1, 2]
    assert list(s["added_by"]) == ["seed", "score", "score"] and list(s["rank"]) == [1, 2, 3]
    assert list(s["seed_reason"]) == ["file hint 'f0.py'", "", ""]  # a seed says what named it
    assert s.loc[0, "total_score"] == 1.0


def test_scope_never_scores_files_without_a_task_signal():
    files = kb_files("a.py", "b.py")
    m = matrix({0: 0.4, 1: 0.0})
    m.loc[1, ["recency", "total"]] = [1.0, 0.05]  # recent, but nothing in it matches the task
    assert list(scope_of(m, kb_files=files, kb_edges=kb_edges(), kb_cochange=kb_cochange(), scope_size=10).index) == [0]


def test_scope_adds_import_neighbours_of_seeds_but_not_test_files():
    files = kb_files("src/seed.py", "src/dep.py", "src/user.py", "tests/test_seed.py", "src/far.py")
    edges = kb_edges((0, 1), (2, 0), (3, 0), (1, 4))
    s = scope_of(
        matrix({i: 0.0 for i in range(5)}, seeds=(0,)),
        kb_files=files,
        kb_edges=edges,
        kb_cochange=kb_cochange(),
        scope_size=1,
    )
    assert s["added_by"].to_dict() == {0: "seed", 1: "deps", 2: "deps"}


def test_scope_keeps_a_test_file_that_scores_on_its_own():
    files = kb_files("src/seed.py", "tests/test_seed.py")
    s = scope_of(
        matrix({0: 0.0, 1: 0.4}, seeds=(0,)),
        kb_files=files,
        kb_edges=kb_edges((1, 0)),
        kb_cochange=kb_cochange(),
        scope_size=5,
    )
    assert s.loc[1, "added_by"] == "score" and bool(s.loc[1, "is_test"])


def test_scope_adds_strong_cochange_partners_of_seeds():
    files = kb_files("seed.py", "often.py", "rarely.py", "other.py")
    cochange = kb_cochange((0, 1, 3), (0, 2, 2), (2, 3, 9))
    s = scope_of(
        matrix({i: 0.0 for i in range(4)}, seeds=(0,)),
        kb_files=files,
        kb_edges=kb_edges(),
        kb_cochange=cochange,
        scope_size=1,
    )
    assert s["added_by"].to_dict() == {0: "seed", 1: "cochange"}


def test_scope_falls_back_to_the_most_central_files_with_a_warning():
    paths = [f"m{i:02d}.py" for i in range(12)]
    files = kb_files(*paths)
    m = matrix({i: 0.0 for i in range(12)})
    m["structural_centrality"] = [i / 11 for i in m.index]
    s = scope_of(m, kb_files=files, kb_edges=kb_edges(), kb_cochange=kb_cochange(), scope_size=75)
    assert sorted(s.index) == list(range(2, 12))
    warnings = scope.scope_warnings(m, files, TaskQuery("speed", "investigation"), [], [])
    assert any("falls back" in w for w in warnings)
    assert scope.scope_warnings(matrix({0: 0.5}), kb_files("a.py"), TaskQuery("x", "feature"), [], []) == []


def test_scope_warnings_name_unmatched_file_hints_and_carry_index_and_analysis_warnings():
    files = kb_files("a.py")
    q = TaskQuery("fix b.py", "bug_fix", file_hints=("b.py",))
    warnings = scope.scope_warnings(
        matrix({0: 0.5}), files, q, ["LLM assist failed"], ["12 of 40 go files tracked ..."]
    )
    assert warnings == [
        "12 of 40 go files tracked ...",
        "LLM assist failed",
        "file hint 'b.py' matches no indexed file",
    ]


def test_stage_one_dataflow_end_to_end():
    files = kb_files("src/auth/handler.py", "src/auth/types.py", "tests/test_handler.py", "README.md", "src/db.py")
    texts = [
        "def validate_login(request): ...",
        "class LoginRequest: ...",
        "def test_validate_login(): assert validate_login(x)",
        "project readme",
        "def connect(): ...",
    ]
    rows = [(i, t, c) for i, text in enumerate(texts) for t, c in term_counts(text).items()]
    symbols = pd.DataFrame(
        {
            "symbol_id": range(4),
            "file_id": [0, 1, 2, 4],
            "name": ["validate_login", "LoginRequest", "test_validate_login", "connect"],
            "qualified_name": ["validate_login", "LoginRequest", "test_validate_login", "connect"],
        }
    )
    inputs = {
        "task_text": "Fix the login validation bug in handler.py",
        "kb_files": files,
        "kb_symbols": symbols,
        "kb_edges": kb_edges((0, 1), (2, 0)),
        "kb_cochange": kb_cochange((0, 4, 3)),
        "kb_commits": pd.DataFrame(columns=list(TABLES["commits"])),
        "file_lexicon": Bm25Index.from_terms(pd.DataFrame(rows, columns=["file_id", "term", "tf"]), "file_id"),
        "symbol_lexicon": Bm25Index.from_terms(
            pd.DataFrame(
                [(i, t, c) for i, name in enumerate(symbols["name"]) for t, c in term_counts(name).items()],
                columns=["symbol_id", "term", "tf"],
            ),
            "symbol_id",
        ),
        "kb_commit_files": pd.DataFrame(columns=list(TABLES["commit_files"])),
        "commit_lexicon": Bm25Index.from_terms(pd.DataFrame(columns=["commit", "term", "tf"]), "commit"),
        "scope_size": 2,
        "weights_override": None,
        "weight_profile": None,
        "kb_warnings": [],
        "kb_contents": pd.DataFrame({"file_id": range(len(texts)), "text": texts}),
    }
    modules = (word_tables, issue_templates, task_analysis, signals, combination, path_scope, reranking, scope)
    dr = driver.Builder().with_modules(*modules).build()
    out = dr.execute(["scope", "signal_weights", "scope_warnings"], inputs=inputs)
    s = out["scope"]
    assert s["added_by"].to_dict() == {0: "seed", 2: "score", 1: "deps", 4: "cochange"}
    assert 3 not in s.index  # README matches nothing
    assert out["signal_weights"]["recency"] == 0.0 and out["signal_weights"].sum() == pytest.approx(1.0)
    assert out["scope_warnings"] == []


def test_code_under_examples_docs_or_vendored_dirs_gets_the_non_source_prior():
    paths = (
        "src/a.py",
        "examples/demo.py",
        "include/lib/fmt/bundled/os.h",
        "docs/conf.py",
        "src/vendor/x.js",
        "src/exampleness.py",
        "third_party/zlib/inflate.c",
        "_examples/simple/main.go",
        "src/_docs/x.js",
        "caffeine/src/jmh/java/cache/GetPutBenchmark.java",
    )
    files = kb_files(*paths)
    files["is_test"] = False
    files["language"] = ["python", "python", "cpp", "python", "javascript", "python", "c", "go", "javascript", "java"]
    prior = combination.file_prior(
        combination.file_roles(files), combination.file_priors(None, {"priors": {"non_source_prior": 0.25}})
    )
    assert prior.tolist() == [1.0, 0.25, 0.25, 0.25, 0.25, 1.0, 0.25, 0.25, 0.25, 0.25]
