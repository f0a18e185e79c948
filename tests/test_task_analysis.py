"""Task analysis: hints, errors, keywords, task type, concepts, trace frames, and the LLM-assist variant."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hamilton import driver

from cra.dataflows.lexical import Bm25Index
from cra.dataflows.retrieval import issue_templates, task_analysis, word_tables
from tests.retrieval_dag import EMPTY_LEXICON, run_node


def heuristic_task_query(text: str, files: pd.DataFrame, lexicon: Bm25Index = EMPTY_LEXICON):
    """The heuristic task query of `text` against these KB files (and their terms), as the retrieval DAG computes it."""
    return run_node(
        "heuristic_task_query", task_text=text, kb_files=files, issue_template_lines=frozenset(), file_lexicon=lexicon
    )


def kb_files(paths: list[str], concepts: list[list[str]] | None = None) -> pd.DataFrame:
    """The files-table columns task analysis reads (path, is_test, concepts)."""
    return pd.DataFrame(
        {
            "file_id": range(len(paths)),
            "path": paths,
            "is_test": [p.startswith("tests/") for p in paths],
            "concepts": concepts or [[] for _ in paths],
        }
    )


NO_CONTENTS = pd.DataFrame({"file_id": pd.Series([], dtype="int64"), "text": pd.Series([], dtype=object)})
FILES = kb_files(
    ["pvlib/irradiance.py", "pvlib/tools.py", "src/auth/handler.py", "tests/test_irradiance.py"],
    [["irradiance", "perez"], ["tools"], ["authentication", "login"], []],
)

TRACEBACK = """get_total_irradiance fails when dni_extra is missing

```python
out = pvlib.irradiance.get_total_irradiance(30, 180, model='perez')
```

Traceback (most recent call last):
  File "/home/me/venv/lib/python3.9/site-packages/pvlib/irradiance.py", line 345, in get_total_irradiance
    poa_sky_diffuse = get_sky_diffuse(
  File "/usr/lib/python3.9/json/decoder.py", line 10, in decode
ValueError: dni_extra is required for model perez
"""

# (description, task type, fields expected to contain these values)
CASES = [
    (
        "Fix the login validation bug in src/auth/handler.py",
        "bug_fix",
        {"file_hints": ["src/auth/handler.py"], "keywords": ["login", "valid"], "concepts": ["login"]},
    ),
    (
        "The app crashes with KeyError when the config is empty",
        "bug_fix",
        {"error_patterns": ["KeyError"], "keywords": ["config"]},
    ),
    (
        TRACEBACK,
        "bug_fix",
        {
            "symbol_hints": ["get_total_irradiance", "pvlib.irradiance.get_total_irradiance", "get_sky_diffuse"],
            "error_patterns": ["ValueError: dni_extra is required for model perez"],
            "concepts": ["irradiance", "perez"],
        },
    ),
    (
        "Add support for the `timeout` option in `HttpClient.send()`",
        "feature",
        {"symbol_hints": ["timeout", "HttpClient.send"], "keywords": ["httpclient", "timeout"]},
    ),
    (
        "Implement a new exporter for parquet files in exporters/parquet.py",
        "feature",
        {"file_hints": ["exporters/parquet.py"], "keywords": ["export", "parquet"]},
    ),
    (
        "Refactor RuleL031 and clean up the alias handling",
        "refactor",
        {"symbol_hints": ["RuleL031"], "keywords": ["rulel031", "alia"]},
    ),
    (
        "Reorganize the utils module; rename parse_date to parse_iso_date",
        "refactor",
        {"symbol_hints": ["parse_date", "parse_iso_date"]},
    ),
    (
        "Write tests to improve coverage of token_budget in budget.py",
        "test",
        {"file_hints": ["budget.py"], "symbol_hints": ["token_budget"]},
    ),
    ("Missing spec for *.test.js components", "test", {"file_hints": ["*.test.js"]}),
    (
        "How does authentication work in this project?",
        "investigation",
        {"keywords": ["authent"], "concepts": ["authentication"]},
    ),
    ("Where are irradiance transposition models documented?", "investigation", {"concepts": ["irradiance"]}),
    (
        "TypeError: unsupported operand type(s) for +: 'int' and 'str' raised by utils.add_days",
        "bug_fix",
        {"error_patterns": ["TypeError"], "symbol_hints": ["utils.add_days"]},
    ),
]


@pytest.mark.parametrize(("text", "task_type", "expected"), CASES, ids=[c[0][:30] for c in CASES])
def test_heuristic_task_query_extracts_the_expected_fields(text, task_type, expected):
    q = heuristic_task_query(text, FILES)
    assert q.task_type == task_type
    for field, wanted in expected.items():
        assert set(wanted) <= set(getattr(q, field)), (field, getattr(q, field))


def test_traceback_frames_in_the_repository_only():
    q = heuristic_task_query(TRACEBACK, FILES)
    assert q.trace_frames == (
        ("/home/me/venv/lib/python3.9/site-packages/pvlib/irradiance.py", "get_total_irradiance"),
    )
    assert "decode" not in q.symbol_hints


def test_javascript_stack_frames_become_seeds_and_symbol_hints():
    files = kb_files(["src/util/url.js", "lib/main.ts"])
    text = "TypeError: x is undefined\n    at parseUrl (/home/a/app/src/util/url.js:10:5)\n    at node:internal/x:1:1"
    q = heuristic_task_query(text, files)
    assert q.trace_frames == (("/home/a/app/src/util/url.js", "parseUrl"),)
    assert "parseUrl" in q.symbol_hints and q.task_type == "bug_fix"


def test_rust_paths_and_java_member_references_are_qualified_hints():
    text = (
        "feat: add `Error::is_dns()`; build `DateTime::<Utc>::from_timestamp` like `Parser#parseInput` does "
        "(fixes #123, see C# docs)"
    )
    hints = heuristic_task_query(text, FILES).symbol_hints
    assert {"Error.is_dns", "DateTime.from_timestamp", "Parser.parseInput"} <= set(hints)
    assert not any("123" in h or h.startswith("C.") for h in hints)


def test_plain_english_words_are_not_symbol_hints():
    q = heuristic_task_query("The Parser returns wrong Results when Input contains Unicode characters", FILES)
    assert q.symbol_hints == ()
    assert "parser" in q.keywords and "unicod" in q.keywords


def test_keywords_weight_identifiers_over_prose():
    q = heuristic_task_query("the value is wrong: value value value, see `compute_total`", FILES)
    assert q.keywords[0] == "compute_total"
    assert "the" not in q.keywords and "is" not in q.keywords


def test_code_block_words_count_as_prose_and_named_identifiers_more():
    q = heuristic_task_query("`quux_alpha` breaks, zulu_beta zulu_beta\n\n```\nwombat_gamma = 1\n```\n", FILES)
    order = [q.keywords.index(k) for k in ("quux_alpha", "zulu_beta", "wombat_gamma")]
    assert order == sorted(order)  # named 3x, written twice, once in the reproduction


def test_keywords_no_indexed_file_contains_give_way():
    rows = [(0, "pars", 1), (0, "key", 2), (1, "misbehav", 1)]
    lexicon = Bm25Index.from_terms(pd.DataFrame(rows, columns=["file_id", "term", "tf"]), "file_id")
    text = 'Parsed key misbehaves\n\n```rust\nlet k = "bbbbbb".parse::<Key>();\n```\n'
    assert set(heuristic_task_query(text, FILES, lexicon).keywords) == {"pars", "key", "misbehav"}
    assert "bbbbbb" in heuristic_task_query(text, FILES).keywords  # no files indexed yet: every term kept


def test_file_hint_from_a_github_url_and_no_hint_from_a_call():
    q = heuristic_task_query("See https://github.com/o/r/blob/main/pvlib/tools.py#L10 and response.json()", FILES)
    assert q.file_hints == ("pvlib/tools.py",)


KB_INPUTS = {"kb_files": FILES, "kb_contents": NO_CONTENTS, "file_lexicon": EMPTY_LEXICON}


def run_llm_variant(text: str, client) -> dict:
    """task_query and warnings from the llm_assist=True variant of the module."""
    dr = (
        driver.Builder()
        .with_modules(word_tables, issue_templates, task_analysis)
        .with_config({"llm_assist": True})
        .build()
    )
    inputs = {"task_text": text, "llm_client": client, **KB_INPUTS}
    return dr.execute(["task_query", "task_analysis_warnings"], inputs=inputs)


def test_llm_variant_enriches_a_vague_task():
    reply = {
        "task_type": "investigation",
        "keywords": ["login"],
        "symbol_hints": ["validate_login"],
        "concepts": ["authentication"],
    }
    out = run_llm_variant("the auth thing", lambda prompt: "Sure:\n" + json.dumps(reply))
    q = out["task_query"]
    assert "validate_login" in q.symbol_hints and "login" in q.keywords and "authentication" in q.concepts
    assert out["task_analysis_warnings"] == []


def test_llm_variant_is_not_asked_when_heuristics_suffice():
    asked = []
    out = run_llm_variant("Fix validate_login in src/auth/handler.py", lambda prompt: asked.append(prompt) or "{}")
    assert asked == []
    assert out["task_query"] == heuristic_task_query("Fix validate_login in src/auth/handler.py", FILES)


@pytest.mark.parametrize("client", [None, lambda prompt: "not json at all"], ids=["no server", "bad reply"])
def test_llm_variant_falls_back_with_a_warning(client):
    out = run_llm_variant("speed", client)
    assert out["task_query"] == heuristic_task_query("speed", FILES)
    assert len(out["task_analysis_warnings"]) == 1 and "heuristic" in out["task_analysis_warnings"][0]


def test_default_variant_never_needs_an_llm_client():
    dr = driver.Builder().with_modules(word_tables, issue_templates, task_analysis).with_config({}).build()
    inputs = {"task_text": "speed", **KB_INPUTS}
    out = dr.execute(["task_query", "task_analysis_warnings"], inputs=inputs)
    assert out["task_query"].keywords == ("speed",) and out["task_analysis_warnings"] == []
