"""Whether an index looks right for its tree: what a user should know before trusting retrieval from it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.dataflows.index.frames import ids_in
from cra.dataflows.index.parsers import PARSED_LANGUAGES, language_of

MIN_MISSING = 20  # tracked source files of one language missing from the index before it is worth a warning
MIN_SHARE = 0.5  # ... and when fewer than this share of them made it in
UNREAD_LINES = 150  # a source file this long ...
UNREAD_SHARE = 0.1  # ... whose symbols span less than this share of its lines: the parser missed how it is written


def tracked_sources(tracked_paths: list[str] | None) -> pd.Series | None:
    """Tracked files per parsed language (git ls-files of the work tree); None outside a git work tree."""
    if tracked_paths is None:
        return None
    languages = pd.Series([language_of(p) for p in tracked_paths], dtype=object)
    return languages[languages.isin(PARSED_LANGUAGES)].value_counts()


def unread_sources(kb_files: pd.DataFrame, kb_symbols: pd.DataFrame, kb_imports: pd.DataFrame) -> pd.Series:
    """Paths of the large source files of a parsed language, parsed without error and not tests, that define no
    symbol or whose symbols span under UNREAD_SHARE of their lines: a sign the parser missed the style they are
    written in (`res.redirect = function ...` before it was read), so retrieval sees their text but not their code.
    Integer work over the symbols' columns (pandas' isin, set_index and groupby over OpenJDK's 745,000 symbols as
    read from the KB took 0.45 s of a one-file re-index)."""
    files = kb_files[
        kb_files["language"].isin(PARSED_LANGUAGES).to_numpy(dtype=bool)
        & ~kb_files["is_test"].to_numpy(dtype=bool)
        & kb_files["parse_error"].isna().to_numpy()
        & (kb_files["n_lines"].to_numpy(np.int64) >= UNREAD_LINES)
    ]
    ids = np.sort(files["file_id"].to_numpy(np.int64))
    mine = np.flatnonzero(ids_in(kb_symbols["file_id"], ids))
    owner, symbol_ids, starts, ends = (
        kb_symbols[c].to_numpy(np.int64)[mine] for c in ("file_id", "symbol_id", "start_line", "end_line")
    )
    parents = kb_symbols["parent_id"].astype("float64").to_numpy()[mine]
    child = np.flatnonzero(~np.isnan(parents))  # (a parent is in its child's file: among these rows)
    order = np.argsort(symbol_ids, kind="stable")
    at = order[np.minimum(np.searchsorted(symbol_ids[order], parents[child]), len(order) - 1)] if len(child) else child
    child, at = child[symbol_ids[at] == parents[child]], at[symbol_ids[at] == parents[child]]
    inside = np.zeros(len(mine), dtype=bool)
    inside[child] = (starts[child] >= starts[at]) & (ends[child] <= ends[at])
    # symbols not within their parent's lines: top level, Go methods, JS prototype methods
    covered = np.bincount(np.searchsorted(ids, owner[~inside]), (ends - starts + 1)[~inside], minlength=len(ids))
    imports = kb_imports.iloc[np.flatnonzero(ids_in(kb_imports["file_id"], ids))][["file_id", "line"]]
    imports = imports.drop_duplicates()  # a module root of `mod`s and re-exports is read
    covered += np.bincount(np.searchsorted(ids, imports["file_id"].to_numpy(np.int64)), minlength=len(ids))
    covered = pd.Series(covered, index=ids).reindex(files["file_id"].to_numpy()).to_numpy()
    return files.loc[covered < UNREAD_SHARE * files["n_lines"].to_numpy(), "path"].astype(object).reset_index(drop=True)


def index_warnings(
    kb_files: pd.DataFrame,
    tracked_sources: pd.Series | None,
    git_log: str | None,
    history_limit: int,
) -> list[str]:
    """Signs that the index does not reflect the tree (empty, no source, tracked sources left out, no history): each
    request repeats them, since they weaken every answer."""
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


def parser_warnings(unread_sources: pd.Series) -> list[str]:
    """Source the parser did not read, said once by `cra index` (not by each request: the user cannot act on it there,
    and a file of re-exports or generated tables is often the cause)."""
    if not len(unread_sources):
        return []
    examples = ", ".join(unread_sources.head(3))
    files = "source file" if len(unread_sources) == 1 else "source files"
    return [
        f"{len(unread_sources)} {files} of {UNREAD_LINES}+ lines define (almost) no symbol, e.g. {examples}: "
        "the parser may not read the style they are written in; retrieval finds them by their text only"
    ]
