"""The package's markdown, shared by rendering and the budget (helpers, not Hamilton nodes).

`package_markdown` is what `render.markdown_text` prints and what the budget stage measures, so the token count
the budget enforces is the token count of exactly this text. `ordered_files` / `edges_between` fix the order of
files, symbols and dependency edges in it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from cra.dataflows.retrieval.models import TIER_ORDER, FileContext, SymbolContext

_HASH_COMMENT = frozenset(
    {"python", "ruby", "shell", "bash", "toml", "yaml", "perl", "r", "elixir", "text", "markdown"}
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def shown_path(path: str) -> str:
    """A file path as it can stand in one line of markdown: control characters (a newline or tab in a file name)
    written as their escapes, so a name cannot end a heading or a list item early."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), path)


def code_span(path: str) -> str:
    """A path as inline code: `shown_path` between backtick runs longer than any inside it."""
    text = shown_path(path)
    ticks = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def package_markdown(
    task_text: str,
    files: Iterable[FileContext],
    edges: Iterable[tuple[str, str]],
    companions: Iterable = (),
    pinned: Iterable = (),
) -> str:
    """The whole markdown document; empty sections are left out so they cost no tokens (companions: CompanionNotes;
    pinned: PinnedSections, first)."""
    parts = sections(tuple(files), tuple(edges))
    parts["companions"] = "\n\n".join(_companion_note(c) for c in companions)
    top = pinned_markdown(pinned)
    document = [top.rstrip("\n")] if top else []
    document.append(f"## Task\n{task_text}")
    for title, key in (
        ("Primary Context", "context"),
        ("Type Context", "types"),
        ("Test Expectations", "tests"),
        ("Dependency Map", "dependency_map"),
        ("Companion Files", "companions"),
    ):
        if parts[key]:
            document.append(f"## {title}\n{parts[key]}")
    return "\n\n".join(document) + "\n"


def pinned_markdown(pinned: Iterable) -> str:
    """The pinned sections (PinnedSections) as they open the package, blank-line separated; '' without any."""
    blocks = [p.markdown.strip("\n") for p in pinned if p.markdown.strip()]
    return "\n\n".join(blocks) + "\n" if blocks else ""


def sections(files: tuple[FileContext, ...], edges: tuple[tuple[str, str], ...]) -> dict[str, str]:
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
            context.append(f"### {shown_path(f.path)} (rank #{f.relevance_rank})" + notes)
    return {
        "context": "\n\n".join(context),
        "types": "\n\n".join(types),
        "tests": "\n\n".join(b for b in tests if b),
        "dependency_map": "\n".join(f"{shown_path(src)} → {shown_path(dst)}" for src, dst in edges),
    }


def symbol_text(symbol: SymbolContext, language: str) -> str:
    """One symbol as it appears in a code block: its source lines, or signature under a one-line doc summary."""
    return shown_text(symbol.body, symbol.docstring, symbol.signature, language)


def shown_text(body: str | None, docstring: str | None, signature: str, language: str) -> str:
    """`symbol_text` of a symbol not built yet (what its token count is measured on)."""
    if body is not None:
        return body.rstrip()
    summary = _summary(docstring)
    head = f"{_comment_marker(language)} {summary}\n" if summary else ""
    return head + signature.rstrip()


def _summary(docstring: str | None) -> str:
    """First non-empty line of a docstring ('' when none)."""
    for line in (docstring or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _comment_marker(language: str) -> str:
    """Line-comment marker of a language, for doc summaries above signatures."""
    return "#" if language in _HASH_COMMENT else "//"


def _companion_note(companion) -> str:
    """One companion file: its path and note, then its latest entries in a fence."""
    if not companion.latest:
        return f"- {code_span(companion.path)}: {companion.note}"
    ticks = fence(companion.latest)
    return f"- {code_span(companion.path)}: {companion.note}\n{ticks}\n{companion.latest}\n{ticks}"


def fence(text: str) -> str:
    """A code fence longer than any backtick run inside the text, so embedded fences cannot close it."""
    if "```" not in text:
        return "```"
    runs = [len(r) for r in re.findall(r"`{3,}", text)]
    return "`" * max(3, max(runs, default=0) + 1)


def _code_block(f: FileContext, symbols: list[SymbolContext], suffix: str) -> str:
    """A file heading and one fenced code block with the given symbols in package order, each run of members under
    a comment naming their owner (`# in QuerySet`): a method's own lines do not say whose it is (unless its
    signature names the owner, as a Go receiver does)."""
    texts, owner, previous = [], "", ""
    for s in symbols:
        text, here = symbol_text(s, f.language), s.qualified_name.rpartition(".")[0]
        if here and here not in (owner, previous) and here.rpartition(".")[2] not in s.signature:
            text = f"{_comment_marker(f.language)} in {here}\n{text}"
        texts.append(text)
        owner, previous = here, s.qualified_name
    code = "\n\n".join(texts)
    ticks = fence(code)
    return f"### {shown_path(f.path)} (rank #{f.relevance_rank}{suffix})\n{ticks}{f.language}\n{code}\n{ticks}"


def _file_notes(f: FileContext, depends_on: Iterable[str]) -> str:
    """'Depends on' line and the rationale comments not already visible inside a rendered body."""
    notes = ""
    targets = list(depends_on)
    if targets:
        notes += "\n**Depends on**: " + ", ".join(code_span(t) for t in targets)
    bodies = "\n".join(s.body for s in f.symbols if s.body)
    why = [c for c in f.rationale_comments if c not in bodies]
    if why:
        notes += "\n**Why**:\n" + "\n".join(f"- {c}" for c in why)
    return notes


def _test_block(f: FileContext) -> str:
    """A test file: its matching tests as code, then the assertions of tests whose body is not shown."""
    shown = {s.name for s in f.symbols if s.body is not None}
    block = _code_block(f, list(f.symbols), "") if f.symbols else f"### {shown_path(f.path)} (rank #{f.relevance_rank})"
    bullets = [assertion_bullet(a) for a in f.test_assertions or () if a.partition(": ")[0] not in shown]
    return block + ("\n" + "\n".join(bullets) if bullets else "")


def assertion_bullet(assertion: str) -> str:
    """'test_name: assert x' -> '- `test_name`: asserts `assert x`' as in the Test Expectations section."""
    name, _, line = assertion.partition(": ")
    return f"- `{name}`: asserts `{line}`"


def ordered_files(files: Iterable[FileContext]) -> tuple[FileContext, ...]:
    """Files by rank, symbols primary -> supporting -> type_context then line, each symbol once (in its own file)."""
    files = sorted(files, key=lambda f: (f.relevance_rank, f.path))
    home = {s.symbol_id for f in files for s in f.symbols if s.file_id == f.file_id}
    seen: set[int] = set()
    out = []
    for f in files:
        keep = []
        for s in sorted(
            f.symbols, key=lambda s: (TIER_ORDER.get(s.relevance, len(TIER_ORDER)), s.start_line, s.symbol_id)
        ):
            if s.symbol_id in seen or (s.file_id != f.file_id and s.symbol_id in home):
                continue
            seen.add(s.symbol_id)
            keep.append(s)
        if keep or f.test_assertions:
            out.append(dataclasses.replace(f, symbols=tuple(keep)))
    return tuple(out)


def edges_between(files: tuple[FileContext, ...], kb_edges: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """Import edges whose both ends are among `files`, as path pairs, self-loops and duplicates dropped."""
    ids = np.fromiter((f.file_id for f in files), dtype=np.int64, count=len(files))
    src, dst = kb_edges["src_file_id"].to_numpy(dtype=np.int64), kb_edges["dst_file_id"].to_numpy(dtype=np.int64)
    keep = np.flatnonzero(np.isin(src, ids) & np.isin(dst, ids) & (src != dst))
    if not len(keep):
        return ()
    rank = {file_id: i for i, file_id in enumerate(ids.tolist())}
    path = {f.file_id: f.path for f in files}
    pairs = dict.fromkeys(zip(src[keep].tolist(), dst[keep].tolist()))  # distinct, first occurrence kept
    ordered = sorted(pairs, key=lambda e: (rank[e[0]], rank[e[1]]))
    return tuple((path[s], path[d]) for s, d in ordered)
