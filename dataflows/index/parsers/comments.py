"""Which comments carry rationale (the *why* an agent must not lose), as opposed to narrating the code."""

from __future__ import annotations

import re

_RATIONALE = re.compile(
    r"\b(?:work-?arounds?|because|must|never|always|hack(?:s|y|ed)?|legacy|compat(?:ibility|ible)?"
    r"|important|warning|why|otherwise|deprecated|until|caution|careful|beware|intentional(?:ly)?"
    r"|do\s+not|don'?t|doesn'?t\s+work|to\s+avoid|so\s+that|in\s+order\s+to|required\s+by|needed\s+(?:for|by|because)"
    r"|note\s*:|nb\s*:|see\s+(?:https?://|issue|bug|pr\b))",
    re.I,
)
# tracker keys like JIRA-12 / PROJ-345 (upper case only; encodings and hashes are not tickets)
_TICKET = re.compile(r"\b(?!(?:UTF|ISO|SHA|CP|UCS|AES|MD|HTTP|TLS|SSL|PEP)-)[A-Z][A-Z0-9]+-\d+\b")
_ISSUE_REF = re.compile(
    r"(?:(?<![\w&])#\d{2,}\b|\bGH-\d+\b|https?://\S+/(?:issues|pull|bugs?|tickets?)/\S*"
    r"|\b(?:bug|issue|ticket|pr)\s*#?\d+\b|\bbpo-\d+\b|\bCVE-\d{4}-\d+\b)",
    re.I,
)
# a TODO/FIXME/XXX followed by at least three words of explanation
_TASK_WITH_REASON = re.compile(r"\b(?:TODO|FIXME|XXX|HACK)\b\W*(?:\([^)]*\)\W*)?(?:\w+\W+){2,}\w+", re.I)


def is_rationale(text: str) -> bool:
    """True when a comment explains why (workaround, constraint, warning, issue reference), not what."""
    return bool(
        _RATIONALE.search(text) or _ISSUE_REF.search(text) or _TICKET.search(text) or _TASK_WITH_REASON.search(text)
    )
