"""Whether an index looks right for its tree: what a user should know before trusting retrieval from it."""

from __future__ import annotations

import pandas as pd

from dataflows.index.parsers import PARSED_LANGUAGES, language_of

MIN_MISSING = 20  # tracked source files of one language missing from the index before it is worth a warning
MIN_SHARE = 0.5  # ... and when fewer than this share of them made it in


def tracked_sources(tracked_paths: list[str] | None) -> pd.Series | None:
    """Tracked files per parsed language (git ls-files of the work tree); None outside a git work tree."""
    if tracked_paths is None:
        return None
    languages = pd.Series([language_of(p) for p in tracked_paths], dtype=object)
    return languages[languages.isin(PARSED_LANGUAGES)].value_counts()


def index_warnings(
    kb_files: pd.DataFrame, tracked_sources: pd.Series | None, git_log: str | None, history_limit: int
) -> list[str]:
    """Signs that the index does not reflect the tree (empty, no source, tracked sources left out, no history)."""
    warnings = []
    indexed = kb_files["language"].value_counts()
    if kb_files.empty:
        warnings.append("nothing was indexed: is PATH the repository root, and do .gitignore rules exclude everything?")
    elif not indexed.index.isin(PARSED_LANGUAGES).any():
        found = ", ".join(f"{lang} {n}" for lang, n in indexed.head(3).items())
        warnings.append(f"no source files of a parsed language were indexed (only {found}); code ranking will be poor")
    if tracked_sources is not None:
        for language, tracked in tracked_sources.items():
            kept = int(indexed.get(language, 0))
            if tracked - kept >= MIN_MISSING and kept < MIN_SHARE * tracked:
                warnings.append(
                    f"{tracked - kept} of {tracked} {language} files tracked by git are not in the index "
                    "(left out by .gitignore, size or generated-file rules); check the repository's .gitignore"
                )
    if git_log is None:
        why = "--history 0" if history_limit <= 0 else "not a git repository"
        warnings.append(f"no git history ({why}): the recency, co-change and history signals are off")
    return warnings
