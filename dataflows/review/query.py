"""The retrieval query: one text built from the pull request's signals, capped at 600 characters.

Parts appear in a fixed order (title, body excerpt, [type], Languages, Risk, Author, file paths, one per line)
but the budget goes to them in priority order: title > body excerpt > languages > risk signals > conventional type >
author tier > file paths. The first five are the original priority; the two short tags come before the paths,
which fill what is left path by path. A part that does not fit is cut (title, body) or dropped (lists keep whole
items, tags are whole or absent), so the query never exceeds the cap and one embedding call serves the review.
"""

from __future__ import annotations

import re

from cra.dataflows.review.models import RetrievalSignals

MAX_QUERY_CHARS = 600
BODY_EXCERPT_CHARS = 200
MAX_LANGUAGES = 5
MAX_RISK_SIGNALS = 3
MAX_FILE_PATHS = 15
CONVENTIONAL_TYPES = ("feat", "fix", "docs", "style", "refactor", "perf", "test", "build", "ci", "chore", "revert")
_CONVENTIONAL = re.compile(rf"^\s*({'|'.join(CONVENTIONAL_TYPES)})(\([^)]*\))?!?:", re.IGNORECASE)
# (position in the query, prefix, items, separator, cut to fit) in budget priority order
_TITLE, _BODY, _TYPE, _LANGUAGES, _RISK, _AUTHOR, _PATHS = range(7)
_PRIORITY = (_TITLE, _BODY, _LANGUAGES, _RISK, _TYPE, _AUTHOR, _PATHS)


def conventional_type(pr_title: str) -> str | None:
    """The conventional-commit type of the title ("fix(parser): ..." -> "fix"), None when it has none."""
    match = _CONVENTIONAL.match(pr_title or "")
    return match.group(1).lower() if match else None


def retrieval_signals(
    pr_title: str,
    conventional_type: str | None,
    pr_languages: tuple[str, ...],
    file_paths: list[str],
    pr_body: str = "",
    risk_signals: list[str] | None = None,
    author_tier: str | None = None,
) -> RetrievalSignals:
    """The pull request's signals, each cut to its cap (body 200 chars, 5 languages, 3 risks, 15 paths)."""
    clean = lambda items: tuple(str(i).strip() for i in items or () if str(i).strip())  # noqa: E731
    return RetrievalSignals(
        pr_title=" ".join((pr_title or "").split()),
        pr_body=(pr_body or "")[:BODY_EXCERPT_CHARS].strip(),
        conventional_type=conventional_type,
        detected_languages=clean(pr_languages)[:MAX_LANGUAGES],
        risk_signals=clean(risk_signals)[:MAX_RISK_SIGNALS],
        author_tier=(author_tier or "").strip() or None,
        top_file_paths=clean(file_paths)[:MAX_FILE_PATHS],
    )


def retrieval_query(retrieval_signals: RetrievalSignals, max_query_chars: int = MAX_QUERY_CHARS) -> str:
    """The one text embedded for the review: the signals one per line, never longer than `max_query_chars`."""
    s = retrieval_signals
    parts = {
        _TITLE: ("", (s.pr_title,), "", True),
        _BODY: ("", (s.pr_body,), "", True),
        _TYPE: ("", (f"[{s.conventional_type}]",) if s.conventional_type else (), "", False),
        _LANGUAGES: ("Languages: ", s.detected_languages, ", ", False),
        _RISK: ("Risk: ", s.risk_signals, "; ", False),
        _AUTHOR: ("Author: ", (s.author_tier,) if s.author_tier else (), "", False),
        _PATHS: ("", s.top_file_paths, "\n", False),
    }
    chosen: dict[int, str] = {}
    left = max(0, int(max_query_chars))
    for position in _PRIORITY:
        prefix, items, sep, cut = parts[position]
        items = [i for i in items if i]
        room = left - (1 if chosen else 0) - len(prefix)  # a newline joins it to the parts already chosen
        if not items or room <= 0:
            continue
        text = ""
        for item in items:
            candidate = f"{text}{sep if text else ''}{item}"
            if len(candidate) <= room:
                text = candidate
            elif cut and not text:
                text = item[:room].rstrip()
            else:
                break
        if text:
            chosen[position] = prefix + text
            left -= len(chosen[position]) + (1 if len(chosen) > 1 else 0)
    return "\n".join(chosen[p] for p in sorted(chosen))
