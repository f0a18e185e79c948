"""Error category of every attempt, table-driven (data/error_categories.toml plus an optional user table).

Each rule of the table becomes one regular expression; the first rule in precedence order that matches a message
names its category. Attempts keep the category they were recorded with, so only new messages are matched.
"""

from __future__ import annotations

import errno
import re
from http import HTTPStatus

import pandas as pd

KINDS = ("grpc", "http", "errno", "exceptions", "patterns")  # precedence: specific codes, then class names, then text
TEXT_KEYS = ("cause", "interventions")
UNKNOWN = "unknown"
_ERRNO_NUMBER = re.compile(r"\[Errno (-?\d+)\]")


def _http_regex(code: int) -> str:
    try:
        phrase = re.escape(HTTPStatus(code).phrase).replace(r"\ ", r"\s+")
    except ValueError:
        phrase = r"(?!)"
    before = r"(?:\bHTTP(?:/\d(?:\.\d)?)?(?:\s+Error)?|\bstatus(?:[ _]?code)?|\b(?:error|code|response))\s*[:=]?\s*\[?"
    return rf"(?i:{before}{code}(?!\d)|\b{code}\s*:?\s*(?:(?:Client|Server)\s+Error|{phrase}))"


def _grpc_regex(name: str) -> str:
    camel = "".join(part.capitalize() for part in name.split("_"))
    return rf"(?<![\w]){name}(?![\w])|\bcode\s*=\s*{camel}(?![\w])"


_REGEX = {
    "exceptions": lambda name: rf"(?<![\w]){re.escape(name)}(?![\w])",
    "errno": lambda name: rf"(?<![\w]){re.escape(name)}(?![\w])",
    "grpc": _grpc_regex,
    "http": lambda code: _http_regex(int(code)),
    "patterns": lambda pattern: rf"(?i:(?<![A-Za-z0-9])(?:{pattern}))",
}


def _rules_of(table: dict, source: int) -> list[dict]:
    rows = []
    for category, spec in table.get("categories", {}).items():
        for kind in KINDS:
            for position, rule in enumerate(spec.get(kind, ())):
                rows.append(
                    {
                        "category": category,
                        "kind": kind,
                        "rule": str(rule),
                        "regex": _REGEX[kind](rule),
                        "source": source,
                        "kind_rank": KINDS.index(kind),
                        "position": position,
                        "length": len(str(rule)) if kind == "patterns" else 0,
                    }
                )
    return rows


def category_rules(default_category_table: dict, user_category_table: dict) -> pd.DataFrame:
    """Every matching rule in precedence order (user before default, then KINDS, then longest pattern first)."""
    rows = _rules_of(user_category_table, 0) + _rules_of(default_category_table, 1)
    frame = pd.DataFrame(
        rows, columns=["category", "kind", "rule", "regex", "source", "kind_rank", "position", "length"]
    )
    frame = frame.sort_values(
        ["source", "kind_rank", "length", "position"], ascending=[True, True, False, True], kind="stable"
    )
    return frame[["category", "kind", "rule", "regex"]].reset_index(drop=True)


def category_matcher(category_rules: pd.DataFrame) -> tuple[tuple[re.Pattern, str], ...]:
    """The rules compiled, in precedence order, each with its category: the first that matches a message wins."""
    return tuple(zip(map(re.compile, category_rules["regex"]), category_rules["category"]))


def category_texts(default_category_table: dict, user_category_table: dict) -> dict[str, dict]:
    """Category -> {cause, interventions}: the user's texts replace the default ones they name."""
    texts = {}
    for table in (default_category_table, user_category_table):
        for category, spec in table.get("categories", {}).items():
            merged = dict(texts.get(category, {}))
            merged.update({key: spec[key] for key in TEXT_KEYS if key in spec})
            texts[category] = merged
    return texts


def pattern_texts(default_category_table: dict, user_category_table: dict) -> dict[str, dict]:
    """Failure pattern -> {hypothesis, interventions} templates, the user's replacing the default ones."""
    return {**default_category_table.get("patterns", {}), **user_category_table.get("patterns", {})}


def _first_category(message: str, matcher: tuple[tuple[re.Pattern, str], ...]) -> str:
    message = _ERRNO_NUMBER.sub(lambda m: f"[Errno {m[1]} {errno.errorcode.get(int(m[1]), '')}]", message)
    return next((category for regex, category in matcher if regex.search(message)), UNKNOWN)


def attempt_categories(attempts: pd.DataFrame, category_matcher: tuple[tuple[re.Pattern, str], ...]) -> pd.Series:
    """Category of every attempt: the one it was recorded with, else the first matching rule's (or 'unknown')."""
    recorded = (
        attempts["error_type"] if "error_type" in attempts else pd.Series(None, index=attempts.index, dtype=object)
    )
    result = recorded.astype(object).copy()
    missing = result.isna()
    if missing.any():
        messages = attempts.loc[missing, "error_message"].fillna("").astype(str)
        result.loc[missing] = [_first_category(message, category_matcher) for message in messages]
    return result.rename("error_type")
