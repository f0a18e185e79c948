"""The changed files a watched repository's KB does not hold yet, read from the files themselves (`cra serve
--watch`): `search_symbols` finds what an agent just wrote as soon as the watcher reports it, a fraction of a second
after the edit, instead of after the background re-index (OpenJDK: 3-5 s), and `get_context` shows the files as they
are now above the last good KB's package (`cra.drivers.serve.edits_section`). The parse is the index's own, so these
are the rows the re-index will write.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

MAX_EDITED_FILES = 50  # more changed files than this (a branch switch): no overlay, the re-index catches up
MAX_FILE_BYTES = 1_000_000  # larger files are not indexed (`cra index`'s default --max-file-bytes)
SEARCH_ORDER = ["tier", "name_length", "path", "start_line"]  # `symbol_search.matching_symbols`' order


@dataclass
class EditedFiles:
    """Changed files as a small KB of their own for `symbol_search.matching_symbols`: `files` (file_id, path: ids
    below zero, none a KB's) and `tables["symbols"]`. `paths`: every changed path, deleted ones too: the served
    KB's symbols of these are out of date. `texts`: the text of each changed path the index would read (of any
    language), as it is now; `gone`: the changed paths that are no file now (deleted, renamed away)."""

    paths: frozenset[str]
    files: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    texts: dict[str, str]
    gone: frozenset[str]


def edited_files(root: Path, paths: list[str]) -> EditedFiles | None:
    """These changed files (relative paths) as they are on disk now, their symbols parsed as the index parses them:
    files gone, unreadable, not text, too large or generated have no text, those of no parsed language no symbols.
    None for more than MAX_EDITED_FILES paths."""
    from cra.dataflows.index.discovery import is_generated
    from cra.dataflows.index.parsers import PARSED_LANGUAGES, language_of
    from cra.dataflows.index.parsing import parsed_symbols
    from cra.drivers.common.tokens import count_line_tokens, count_tokens

    if len(paths) > MAX_EDITED_FILES:
        return None
    rows, texts, gone = [], {}, set()
    for path in sorted(paths):
        full = Path(root) / path
        try:
            if not full.is_file():
                gone.add(path)
                continue
            if full.stat().st_size > MAX_FILE_BYTES:
                continue
            data = full.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if b"\0" in data or is_generated(path, text):
            continue
        texts[path] = text
        if (language := language_of(path)) in PARSED_LANGUAGES:
            rows.append((-1 - len(rows), path, language, text))
    files = pd.DataFrame(rows, columns=["file_id", "path", "language", "text"])
    return EditedFiles(
        frozenset(paths),
        files[["file_id", "path"]],
        {"symbols": parsed_symbols(files, count_tokens, count_line_tokens)},
        texts,
        frozenset(gone),
    )


def with_edited(found: pd.DataFrame, edited: EditedFiles, query: str, in_scope) -> pd.DataFrame:
    """The KB's matches of a query (`matching_symbols`, in its order) with those of the changed files put in their
    place: the KB's rows of a changed file dropped, the file's own matches (in_scope: their paths filter) merged."""
    from cra.drivers.serve.symbol_search import matching_symbols

    mine = matching_symbols(edited, query)
    mine = mine[in_scope(mine["path"])] if len(mine) else mine
    kept = found[~found["path"].isin(edited.paths).to_numpy(dtype=bool)]
    return pd.concat([kept, mine]).sort_values(SEARCH_ORDER, kind="stable") if len(mine) else kept
