"""Per-language conventions as data: helpers over the tables of `data/conventions/*.toml`.

Not a Hamilton module: pure functions the index nodes, the retrieval's symbol table (and the case miner) call
with the `language_conventions` input, a dict language -> table loaded by the driver
(`cra.drivers.common.conventions.load_conventions`). A table has `tests.names` / `tests.dirs` (what a test file is; in either
section `dir_patterns` match directory names by regex, C#'s `Foo.Tests/` projects, and `paths` whole paths:
Python's `test/` is a test directory at the top of a repository, a library inside a package, `django/test/`),
`tests.attributes` (what makes a function a test wherever it is: Rust `#[test]`, JUnit `@Test`), `tests.subjects`
((pattern, replacement) pairs: the source a test exercises), `non_source.names` / `non_source.dirs` (vendored,
generated, build output) and `imports.manifests`.
"""

from __future__ import annotations

import re
from functools import lru_cache


def _table(conventions: dict | None, language: str | None) -> dict:
    return (conventions or {}).get(language or "", {}) or {}


@lru_cache(maxsize=256)
def _any_of(patterns: tuple[str, ...]) -> re.Pattern | None:
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def _matches(path: str, section: dict) -> bool:
    parts = path.split("/")
    if set(section.get("dirs", ())) & set(parts[:-1]):
        return True
    paths = _any_of(tuple(section.get("paths", ())))
    if paths and paths.search(path):
        return True
    dir_patterns = _any_of(tuple(section.get("dir_patterns", ())))
    if dir_patterns and any(dir_patterns.search(part) for part in parts[:-1]):
        return True
    names = _any_of(tuple(section.get("names", ())))
    return bool(names and names.search(parts[-1]))


def is_test_path(path: str, language: str | None, conventions: dict | None) -> bool:
    """Whether the language's table says this path is a test (by file name or by a test directory on its path)."""
    return _matches(path, _table(conventions, language).get("tests", {}))


def is_non_source_path(path: str, language: str | None, conventions: dict | None) -> bool:
    """Whether the language's table says this path is vendored, generated or build output."""
    return _matches(path, _table(conventions, language).get("non_source", {}))


def test_attribute_pattern(language: str | None, conventions: dict | None) -> re.Pattern | None:
    """The language's test attributes as one regex over an attribute's text (None: the language has none)."""
    return _any_of(tuple(_table(conventions, language).get("tests", {}).get("attributes", ())))


@lru_cache(maxsize=64)
def _compiled_rules(rules: tuple[tuple[str, str], ...]) -> tuple[tuple[re.Pattern, str], ...]:
    return tuple((re.compile(pattern), replacement) for pattern, replacement in rules)


def subject_rules(language: str | None, conventions: dict | None) -> tuple[tuple[re.Pattern, str], ...]:
    """The language's test -> subject rewrites (pattern, replacement), compiled once."""
    return _compiled_rules(tuple(map(tuple, _table(conventions, language).get("tests", {}).get("subjects", ()))))


def test_subjects(path: str, rules: tuple[tuple[re.Pattern, str], ...]) -> list[str]:
    """Candidate paths of the source file a test exercises by its language's `subject_rules`, most specific first
    (none when no rule matches)."""
    out = [pattern.sub(replacement, path) for pattern, replacement in rules if pattern.search(path)]
    return [p for p in dict.fromkeys(out) if p != path]  # (a search, then a sub where it matches: half subn's time)


def manifest_names(conventions: dict | None) -> frozenset[str]:
    """File names that carry module-resolution facts in any language's table (go.mod, package.json, ...)."""
    return frozenset(m for table in (conventions or {}).values() for m in table.get("imports", {}).get("manifests", ()))
