"""Which programming languages a pull request touches and which language each stored finding is about.

Languages come from file paths through the indexer's table (`cra.dataflows.index.parsers.language_of`, 80+ extensions
and file names). Documentation and configuration formats (markdown, JSON, YAML, ...) and unknown paths classify as
None: findings on such files (a JSON config in a Go change) stay neutral in the re-rank, neither boosted nor penalised.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from cra.dataflows.index.parsers import language_of

MAX_PR_LANGUAGES = 5
NEUTRAL_FORMATS = frozenset(
    {
        "markdown",
        "rst",
        "text",
        "asciidoc",
        "toml",
        "yaml",
        "json",
        "ini",
        "properties",
        "dotenv",
        "xml",
    }
)
SAME_LANGUAGE = {"tsx": "typescript"}  # a .tsx finding is a TypeScript finding


def _language(path: str | None) -> str | None:
    """Programming language of a path; None for prose, configuration and unknown files."""
    language = language_of(path) if isinstance(path, str) and path else None
    return None if language is None or language in NEUTRAL_FORMATS else SAME_LANGUAGE.get(language, language)


def pr_languages(file_paths: list[str]) -> tuple[str, ...]:
    """Languages of the changed files, most files first (ties by first appearance), at most five for the query."""
    counts = Counter(filter(None, map(_language, file_paths or ())))
    return tuple(language for language, _ in counts.most_common(MAX_PR_LANGUAGES))


def finding_languages(fused_findings: pd.DataFrame) -> pd.Series:
    """Language of each retrieved finding's file (None = neutral), indexed like the fused findings."""
    paths = fused_findings["file_path"] if "file_path" in fused_findings else pd.Series(index=fused_findings.index)
    return paths.map(_language).astype(object)
