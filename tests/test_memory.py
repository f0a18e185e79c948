"""Scoped memory retrieval: ten scenarios (one test each), the lexical factor, the budget and the memory section."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cra.dataflows.memory.models import MemoryQuery
from cra.drivers.common.tokens import count_tokens
from cra.drivers.memory.memories import memory_context_for, memory_driver, query_memories

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def _ago(days: float) -> str:
    return (NOW - timedelta(days=days)).isoformat()


def _write(root: Path, rel: str, key: str, *items) -> None:
    """A hierarchy file as a person would write it: items are (content, days old, confidence)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [{"content": c, "timestamp": _ago(d), "confidence": conf} for c, d, conf in items]
    path.write_text(json.dumps({key: entries}))


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "memory"
    _write(root, "profile.json", "general", ("Answer in short sentences", 2, 0.9), ("Explain trade-offs", 40, 0.6))
    _write(root, "corrections.json", "corrections", ("Never run git push --force", 1, 1.0))
    _write(root, "languages/go.json", "preferences", ("Use errgroup for goroutine fan-out", 3, 0.9))
    _write(root, "languages/python.json", "preferences", ("Prefer pytest fixtures", 3, 0.9))
    _write(root, "projects/hydra/decisions.json", "decisions", ("Hydra keeps its queue in Postgres", 5, 0.8))
    _write(root, "projects/hydra/tasks/coding.json", "rules", ("Run make lint before committing", 1, 1.0))
    _write(root, "projects/hydra/tasks/review.json", "rules", ("Ask for a second reviewer", 1, 1.0))
    _write(root, "projects/atlas/decisions.json", "decisions", ("Atlas is frozen until July", 1, 1.0))
    return root


def _query(root, query=MemoryQuery(), **context):
    result, warnings = query_memories(root, query, now=NOW, **context)
    return result, warnings


def _contents(result):
    return [m.content for m in result.memories]


UNIVERSAL = {"Answer in short sentences", "Explain trade-offs", "Never run git push --force"}


def test_scenario_1_universal_only_sorted_by_relevance(store):
    result, _ = _query(store)
    assert set(_contents(result)) == UNIVERSAL
    scores = [m.relevance_score for m in result.memories]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    assert _contents(result)[-1] == "Explain trade-offs"  # older and less confident
    assert result.total_found == result.total_returned == 3


def test_scenario_2_language_adds_its_own_file_only(store):
    result, _ = _query(store, language="go")
    assert set(_contents(result)) == UNIVERSAL | {"Use errgroup for goroutine fan-out"}
    go = next(m for m in result.memories if m.scope == "language:go")
    assert "lang:go" in go.reason


def test_scenario_3_project_adds_its_decisions_not_its_tasks_or_other_projects(store):
    result, _ = _query(store, project="hydra", language="go")
    assert set(_contents(result)) == UNIVERSAL | {
        "Use errgroup for goroutine fan-out",
        "Hydra keeps its queue in Postgres",
    }


def test_scenario_4_task_adds_that_tasks_rules(store):
    result, _ = _query(store, project="hydra", task="coding", language="go")
    assert set(_contents(result)) == UNIVERSAL | {
        "Use errgroup for goroutine fan-out",
        "Hydra keeps its queue in Postgres",
        "Run make lint before committing",
    }
    assert result.memories[0].content == "Run make lint before committing"
    assert "task:coding" in result.memories[0].reason


def test_scenario_5_budget_enforcement(tmp_path):
    root = tmp_path / "memory"
    texts = [f"memory {i} " + " ".join(f"alpha{i}x{j}" for j in range(49)) for i in range(10)]
    _write(root, "profile.json", "general", *[(t, i, 1.0) for i, t in enumerate(texts)])
    lines = [count_tokens(f"- {t}\n") for t in texts]
    assert all(167 <= n <= 249 for n in lines)  # about 200 tokens each: two fit in 500, three do not
    result, _ = _query(root, budget=500)
    assert result.total_returned == 2
    assert result.token_estimate <= 500
    assert result.token_estimate == sum(count_tokens(f"- {m.content}\n") for m in result.memories)
    assert _contents(result) == texts[: result.total_returned]  # the freshest first
    assert result.total_found == 10


def test_scenario_6_relevance_order_follows_scope_specificity(tmp_path):
    root = tmp_path / "memory"
    _write(root, "profile.json", "general", ("universal rule", 10, 0.9))
    _write(root, "languages/go.json", "preferences", ("go rule", 10, 0.9))
    _write(root, "languages/python.json", "preferences", ("python rule", 10, 0.9))
    _write(root, "projects/hydra/decisions.json", "decisions", ("hydra decision", 10, 0.9))
    _write(root, "projects/hydra/tasks/coding.json", "rules", ("coding rule", 10, 0.9))
    result, _ = _query(root, project="hydra", task="coding", language="go")
    assert _contents(result) == ["coding rule", "hydra decision", "go rule", "universal rule"]
    assert len({m.relevance_score for m in result.memories}) == 4


def test_scenario_7_recency_orders_the_same_scope(tmp_path):
    root = tmp_path / "memory"
    _write(
        root, "profile.json", "general", ("half a year old", 180, 0.9), ("a month old", 30, 0.9), ("yesterday", 1, 0.9)
    )
    result, _ = _query(root)
    assert _contents(result) == ["yesterday", "a month old", "half a year old"]
    scores = [m.relevance_score for m in result.memories]
    assert scores[0] > scores[1] > scores[2]
    assert "recent" in result.memories[0].reason and "old" in result.memories[2].reason


def test_scenario_8_confidence_filter(tmp_path):
    root = tmp_path / "memory"
    _write(root, "profile.json", "general", ("unsure", 1, 0.5), ("fairly sure", 1, 0.7), ("sure", 1, 0.9))
    result, _ = _query(root, MemoryQuery(min_confidence=0.8))
    assert _contents(result) == ["sure"]
    assert result.total_found == 1


def test_scenario_9_empty_storage(tmp_path):
    for root in (tmp_path / "missing", tmp_path):
        result, warnings = _query(root, project="nonexistent", language="go")
        assert result.memories == () and result.total_found == 0 and result.token_estimate == 0
        assert warnings == []


def test_scenario_10_malformed_json_is_skipped_and_named(store):
    (store / "languages" / "go.json").write_text('{"preferences": [{"content": "cut')
    result, warnings = _query(store, project="hydra", language="go")
    assert set(_contents(result)) == UNIVERSAL | {"Hydra keeps its queue in Postgres"}
    assert (
        len(warnings) == 1 and str(store / "languages" / "go.json") in warnings[0] and "not valid JSON" in warnings[0]
    )


def test_task_text_ranks_the_memory_about_it_first(tmp_path):
    root = tmp_path / "memory"
    _write(
        root,
        "projects/hydra/decisions.json",
        "decisions",
        ("The scheduler retries failed jobs three times with backoff", 3, 0.9),
        ("The billing export writes CSV files nightly", 3, 0.9),
    )
    plain, _ = _query(root, project="hydra")
    assert plain.memories[0].relevance_score == plain.memories[1].relevance_score
    for text, first in (
        ("make the scheduler retry backoff configurable", "The scheduler"),
        ("billing export misses the CSV header", "The billing"),
    ):
        result, _ = _query(root, project="hydra", task_text=text)
        assert result.memories[0].content.startswith(first)
        assert result.memories[0].relevance_score > result.memories[1].relevance_score
        assert "about the task" in result.memories[0].reason and "about the task" not in result.memories[1].reason


def test_every_factor_is_a_node_in_zero_one(store):
    frame = pd.DataFrame(
        [
            {"content": "a", "scope": "universal", "category": "general", "confidence": 0.9, "timestamp": _ago(1)},
            {"content": "b", "scope": "language:python", "category": "p", "confidence": 0.2, "timestamp": "not a time"},
            {
                "content": "c",
                "scope": "project:atlas:task:x",
                "category": "r",
                "confidence": 1.0,
                "timestamp": _ago(400),
            },
        ]
    )
    out = memory_driver().execute(
        ["relevance_factors", "relevance_score"],
        inputs={
            "memories": frame,
            "project": "hydra",
            "language": "go",
            "task": "coding",
            "task_text": "a",
            "now": NOW,
        },
    )
    factors = out["relevance_factors"]
    assert list(factors.columns) == ["scope_match", "recency", "confidence", "task_match", "lexical_relevance"]
    assert ((factors >= 0) & (factors <= 1)).all().all()
    assert factors["scope_match"].tolist() == [0.8, 0.3, 0.2]  # universal, another language, another project
    assert factors["recency"].tolist() == [1.0, 0.5, 0.2]  # fresh, unknown, over half a year
    # "a" has no index terms, so the four base weights alone: .5 x .8 + .2 x 1 + .2 x .9 + .1 x .3 (not this task)
    assert out["relevance_score"][0] == pytest.approx(0.81)


def test_query_scope_and_category_filters(store):
    result, _ = _query(store, MemoryQuery(scope="project:hydra"), project="hydra", task="coding")
    assert set(_contents(result)) == {"Hydra keeps its queue in Postgres", "Run make lint before committing"}
    result, _ = _query(store, MemoryQuery(category="corrections"), project="hydra")
    assert _contents(result) == ["Never run git push --force"]


def test_memory_context_for_splits_the_budget_and_passes_leftovers_on(tmp_path):
    root = tmp_path / "memory"
    words = lambda tag, i: f"{tag} rule {i}: " + " ".join(f"{tag}{i}w{j}" for j in range(30))  # noqa: E731
    _write(root, "languages/go.json", "preferences", *[(words("go", i), 1, 0.9) for i in range(40)])
    _write(root, "projects/hydra/decisions.json", "decisions", *[(words("hy", i), 1, 0.9) for i in range(40)])
    markdown, provenance = memory_context_for(root, "hydra", "go", "go rule", 1500, NOW)
    assert markdown.startswith("## Memories\n\n- ")
    assert count_tokens(markdown) == provenance["tokens"] <= 1500
    use = provenance["allocations"]
    assert [use[b]["allocated"] for b in ("universal", "language", "project")] == pytest.approx([700, 500, 300], abs=3)
    assert use["universal"]["used"] == 0 and use["language"]["carried_in"] == use["universal"]["allocated"]
    assert use["language"]["used"] > 500  # the unused universal share went to languages
    assert (
        use["project"]["carried_in"]
        == use["universal"]["allocated"] + use["language"]["allocated"] - use["language"]["used"]
    )
    assert use["project"]["used"] <= use["project"]["allocated"] + use["project"]["carried_in"]
    buckets = [m["bucket"] for m in provenance["memories"]]
    assert set(buckets) == {"language", "project"} and len(buckets) == markdown.count("\n- ")
    assert all(
        f"- [go] {m['content']}" in markdown or f"- [hydra] {m['content']}" in markdown for m in provenance["memories"]
    )
    assert provenance["memory_dir"] == str(root) and provenance["warnings"] == []


def test_memory_context_for_small_budget_and_empty_store(tmp_path, store):
    markdown, provenance = memory_context_for(tmp_path / "none", "hydra", "go", None, 1500, NOW)
    assert markdown == "" and provenance["tokens"] == 0 and provenance["memories"] == []
    markdown, provenance = memory_context_for(store, "hydra", "go", None, 3, NOW)
    assert markdown == "" and provenance["tokens"] == 0
    markdown, provenance = memory_context_for(store, "hydra", "go", None, 20, NOW)
    assert 0 < count_tokens(markdown) <= 20 and len(provenance["memories"]) >= 1


SCOPES = ["universal", "language:go", "project:hydra", "project:hydra:task:coding"]


@settings(max_examples=60, deadline=None)
@given(
    items=st.lists(st.tuples(st.sampled_from(SCOPES), st.text(min_size=1, max_size=400)), max_size=30),
    budget=st.integers(0, 600),
)
def test_budget_is_never_exceeded(items, budget):
    frame = pd.DataFrame({"content": [c for _, c in items], "scope": [s for s, _ in items]}, dtype=object)
    frame = frame.assign(category="c", confidence=0.9, timestamp=_ago(3))
    out = memory_driver().execute(
        ["retrieval_result", "memory_context", "memory_tokens", "budgeted_memories"],
        inputs={
            "memories": frame,
            "project": "hydra",
            "language": "go",
            "task": "coding",
            "task_text": "fix the go code",
            "now": NOW,
            "memory_query": MemoryQuery(max_results=1000),
            "budget": budget,
            "memory_budget": budget,
            "count_tokens": count_tokens,
        },
    )
    result, section = out["retrieval_result"], out["memory_context"]
    assert result.total_found == len(items)
    assert result.token_estimate <= budget
    assert count_tokens(section.markdown) == section.tokens <= budget
    # greedy fill: a memory left out would not have fitted into what the returned ones leave
    left_out = out["memory_tokens"].drop(out["budgeted_memories"].index)
    assert (left_out > budget - result.token_estimate).all()


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(st.text(alphabet=st.sampled_from(list("ab_Cd eF1\n.-")), max_size=40), min_size=1, max_size=8),
    query=st.sampled_from(["ab", "cd ef", "ab_cd", "f1 ab"]),
)
def test_lexical_relevance_is_bm25_of_the_texts_terms(texts, query):
    from collections import Counter

    from cra.dataflows.lexical import Bm25Index
    from cra.dataflows.memory.relevance import lexical_relevance
    from cra.dataflows.text import terms

    memories = pd.DataFrame({"content": texts}, index=pd.RangeIndex(len(texts)) * 10 + 3)
    rows = [(i, t, n) for i, text in zip(memories.index, texts) for t, n in Counter(terms(text)).items()]
    expected = pd.Series(0.0, index=memories.index)
    if rows and terms(query):
        scores = Bm25Index.from_terms(pd.DataFrame(rows, columns=["memory", "term", "tf"]), "memory").scores(
            terms(query)
        )
        scores = scores.reindex(memories.index, fill_value=0.0)
        expected = scores / scores.max() if scores.max() > 0 else expected
    pd.testing.assert_series_equal(lexical_relevance(memories, terms(query)), expected, check_names=False)
