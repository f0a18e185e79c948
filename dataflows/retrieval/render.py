"""Rendering of the context package (seed 001 step 6): markdown, model prompt and JSON views of one package.

The package is data; these nodes only format it. `_markdown` is also what the budget stage measures, so the
token count it enforces is the token count of exactly this text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from dataflows.retrieval.models import ContextPackage, FileContext, SymbolContext

DEFAULT_PROMPT_TEMPLATE = """You are a coding agent working in an existing repository. Complete the task below using the context \
selected for it: the code that matters, the types it uses and the tests that pin its behaviour.

# Task
{task}

# Relevant code
{context}

# Type definitions
{types}

# Test expectations
{tests}

Make the smallest change that completes the task, keep the expectations above passing, and say which files you changed.
"""

_PLACEHOLDER = re.compile(r"\{(task|context|types|tests)\}")
_HASH_COMMENT = frozenset({"python", "ruby", "shell", "bash", "toml", "yaml", "perl", "r", "elixir", "text", "markdown"})
_TIER_ORDER = {"primary": 0, "supporting": 1, "type_context": 2, "outline": 3}
_NONE = "(none)"


def markdown_text(context_package: ContextPackage) -> str:
    """The package as the seed's markdown (Task, Primary Context, Type Context, Test Expectations, Dependency Map)."""
    return _markdown(context_package.task_query.raw_description, context_package.files, context_package.dependency_edges)


def prompt_text(context_package: ContextPackage, prompt_template: str) -> str:
    """The package poured into the model prompt template ({task}, {context}, {types}, {tests} placeholders)."""
    parts = _parts(context_package.files, context_package.dependency_edges)
    values = {
        "task": context_package.task_query.raw_description,
        "context": "\n\n".join(p for p in (parts["context"], parts["dependency_map"]) if p) or _NONE,
        "types": parts["types"] or _NONE,
        "tests": parts["tests"] or _NONE,
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], prompt_template)


def json_text(context_package: ContextPackage) -> str:
    """The package in the JSON contract of `cra retrieve --format json` (ContextPackage.to_json_dict)."""
    return json.dumps(context_package.to_json_dict(), indent=2, default=_plain)


def _plain(value):
    """JSON fallback for numpy scalars and other non-JSON values that reach provenance."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def _markdown(task_text: str, files: Iterable[FileContext], edges: Iterable[tuple[str, str]]) -> str:
    """The whole markdown document; empty sections are left out so they cost no tokens."""
    parts = _parts(tuple(files), tuple(edges))
    sections = [f"## Task\n{task_text}"]
    for title, key in (
        ("Primary Context", "context"),
        ("Type Context", "types"),
        ("Test Expectations", "tests"),
        ("Dependency Map", "dependency_map"),
    ):
        if parts[key]:
            sections.append(f"## {title}\n{parts[key]}")
    return "\n\n".join(sections) + "\n"


def _parts(files: tuple[FileContext, ...], edges: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Section bodies: code of non-test files, their type context, test files, and the dependency map lines."""
    depends: dict[str, list[str]] = {}
    for src, dst in edges:
        depends.setdefault(src, []).append(dst)
    context, types, tests = [], [], []
    for f in files:
        if f.test_assertions is not None:
            tests.append(_test_block(f))
            continue
        main = [s for s in f.symbols if s.relevance != "type_context"]
        kinds = [s for s in f.symbols if s.relevance == "type_context"]
        notes = _file_notes(f, depends.get(f.path, ()))
        if main:
            context.append(_code_block(f, main, "") + notes)
        if kinds:
            types.append(_code_block(f, kinds, ", type context") + ("" if main else notes))
        if not main and not kinds and notes:
            context.append(f"### {f.path} (rank #{f.relevance_rank})" + notes)
    return {
        "context": "\n\n".join(context),
        "types": "\n\n".join(types),
        "tests": "\n\n".join(b for b in tests if b),
        "dependency_map": "\n".join(f"{src} → {dst}" for src, dst in edges),
    }


def _symbol_text(symbol: SymbolContext, language: str) -> str:
    """One symbol as it appears in a code block: its source lines, or signature under a one-line doc summary."""
    if symbol.body is not None:
        return symbol.body.rstrip()
    summary = _summary(symbol.docstring)
    head = f"{_comment_marker(language)} {summary}\n" if summary else ""
    return head + symbol.signature.rstrip()


def _summary(docstring: str | None) -> str:
    """First non-empty line of a docstring ('' when none)."""
    for line in (docstring or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _comment_marker(language: str) -> str:
    """Line-comment marker of a language, for doc summaries above signatures."""
    return "#" if language in _HASH_COMMENT else "//"


def _fence(text: str) -> str:
    """A code fence longer than any backtick run inside the text, so embedded fences cannot close it."""
    runs = [len(r) for r in re.findall(r"`{3,}", text)]
    return "`" * max(3, max(runs, default=0) + 1)


def _code_block(f: FileContext, symbols: list[SymbolContext], suffix: str) -> str:
    """A file heading and one fenced code block with the given symbols in package order."""
    code = "\n\n".join(_symbol_text(s, f.language) for s in symbols)
    fence = _fence(code)
    return f"### {f.path} (rank #{f.relevance_rank}{suffix})\n{fence}{f.language}\n{code}\n{fence}"


def _file_notes(f: FileContext, depends_on: Iterable[str]) -> str:
    """'Depends on' line and the rationale comments not already visible inside a rendered body."""
    notes = ""
    targets = list(depends_on)
    if targets:
        notes += "\n**Depends on**: " + ", ".join(f"`{t}`" for t in targets)
    bodies = "\n".join(s.body for s in f.symbols if s.body)
    why = [c for c in f.rationale_comments if c not in bodies]
    if why:
        notes += "\n**Why**:\n" + "\n".join(f"- {c}" for c in why)
    return notes


def _test_block(f: FileContext) -> str:
    """A test file: its matching tests as code, then the assertions of tests whose body is not shown."""
    shown = {s.name for s in f.symbols if s.body is not None}
    block = _code_block(f, list(f.symbols), "") if f.symbols else f"### {f.path} (rank #{f.relevance_rank})"
    bullets = [_assertion_bullet(a) for a in f.test_assertions or () if a.partition(": ")[0] not in shown]
    return block + ("\n" + "\n".join(bullets) if bullets else "")


def _assertion_bullet(assertion: str) -> str:
    """'test_name: assert x' -> '- `test_name`: asserts `assert x`' as in the seed's Test Expectations."""
    name, _, line = assertion.partition(": ")
    return f"- `{name}`: asserts `{line}`"
