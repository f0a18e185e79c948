"""Companion files: non-source files a repository's fixes change alongside the code (CHANGELOG.md,
History.md, release-notes/...), learned from its own history at index time.

A request shows them with a one-line note and their latest entries instead of ranking them against code.
"""

from __future__ import annotations

import posixpath
import re

import pandas as pd

from cra.dataflows.index.frames import conform, in_set
from cra.dataflows.index.parsers import language_of

FIX_MESSAGE = re.compile(r"\b(?:fix(?:es|ed)?|bug|crash|regression|broken|wrong|incorrect|error)\b|#\d+", re.IGNORECASE)
PROSE_LANGUAGES = frozenset({"markdown", "text", "rst", "asciidoc"})
MIN_FIX_COMMITS = 8  # fewer fix commits in the history than this: nothing to learn from
MIN_SHARE = 0.2  # a file (or directory of notes) changed by at least this share of fix commits is a companion
MIN_CHANGES = 3  # and by at least this many of them (2 of the 8 fixes since a new migration guide is not a habit)
MAX_COMPANIONS = 3
ENTRY_LINES = 12  # the latest entries: the head of a changelog (newest first), at most this many lines
ENTRY_CHARS = 1200  # and at most this many characters (one long bullet can be a paragraph)
_VERSION_LINE = re.compile(r"^v?\d+\.\d+[\w.\-]*(\s|$)")


def _prose(path: str) -> bool:
    """Non-source, human-written notes: prose by extension, or an extension-less upper-case name (CHANGES, NEWS)."""
    language = language_of(path)
    name = posixpath.basename(path)
    return language in PROSE_LANGUAGES or (language is None and "." not in name and name.isupper())


def _level(line: str) -> int:
    """Markdown heading level of a line (0: not a heading; a version line such as "1.2.0 (2024-01-01)" is level 2)."""
    if line.startswith("#"):
        return len(line) - len(line.lstrip("#"))
    return 2 if _VERSION_LINE.match(line) else 0


def _latest_entries(text: str) -> str:
    """The newest section of a changelog (after a title): its heading and lines up to the next section of the same
    or a higher level, at most ENTRY_LINES non-blank lines."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    heads = [(i, _level(line)) for i, line in enumerate(lines) if _level(line)]
    if len(heads) > 1 and heads[0][1] == 1:
        heads = heads[1:]  # "# Changelog": the title, not an entry
    if not heads:
        return "\n".join([line for line in lines if line.strip()][:ENTRY_LINES])
    start, level = heads[0]
    end = next((i for i, lv in heads[1:] if lv <= level), len(lines))
    return "\n".join([line for line in lines[start:end] if line.strip()][:ENTRY_LINES])[:ENTRY_CHARS]


def _text_of(path: str, decoded_files: pd.DataFrame, indexed_files: pd.DataFrame, kb_contents: pd.DataFrame) -> str:
    """A file's text: decoded by this run, or, for an unchanged indexed file (not decoded again), from the contents."""
    text = decoded_files.loc[decoded_files["path"] == path, "text"]
    if len(text) and pd.notna(text.iloc[0]):
        return text.iloc[0]
    file_id = indexed_files.loc[indexed_files["path"] == path, "file_id"]
    text = kb_contents.loc[kb_contents["file_id"].isin(file_id), "text"]
    return str(text.iloc[0]) if len(text) else ""


def kb_companions(
    kb_commits: pd.DataFrame,
    kb_commit_files: pd.DataFrame,
    decoded_files: pd.DataFrame,
    kb_contents: pd.DataFrame,
    indexed_files: pd.DataFrame,
) -> pd.DataFrame:
    """Companion files or note directories with the share of fix commits (message says fix/bug/#123, touching code)
    that changed them, and their latest entries (a directory of per-fix notes: its newest file names)."""
    empty = conform(pd.DataFrame(columns=["path", "share", "n_fix_commits", "latest"]), "companions")
    fixes = kb_commits.loc[kb_commits["message"].astype(str).str.contains(FIX_MESSAGE), "commit"]
    touched = kb_commit_files[in_set(kb_commit_files["commit"], fixes)]
    paths = touched["path"].astype(object)
    distinct = paths.unique()
    is_code = {p: language_of(p) is not None and language_of(p) not in PROSE_LANGUAGES for p in distinct}
    code = paths.map(is_code)  # (a path per distinct path, not per commit that touched it)
    fixes = pd.Index(touched.loc[code.to_numpy(dtype=bool), "commit"].unique())
    if len(fixes) < MIN_FIX_COMMITS:
        return empty
    times = kb_commits.set_index("commit")["time"]
    prose = {p: _prose(p) for p in distinct}
    notes = touched[in_set(touched["commit"], fixes) & paths.map(prose).to_numpy(dtype=bool)]
    notes = notes.assign(
        directory=notes["path"].map(lambda p: posixpath.dirname(p) + "/"), time=notes["commit"].map(times)
    )
    by_dir = notes.groupby("directory").agg(n=("commit", "nunique"), files=("path", "nunique"), since=("time", "min"))
    # a directory whose notes are mostly new files (one per fix) counts as one companion
    by_dir = by_dir[(by_dir["files"] >= by_dir["n"] * 0.8) & (by_dir.index != "/")]
    units = pd.concat(
        [notes.groupby("path").agg(n=("commit", "nunique"), since=("time", "min")), by_dir[["n", "since"]]]
    )
    fix_times = times.reindex(fixes).to_numpy()
    # the share over the fixes since the file first appears in the history (a renamed changelog starts afresh)
    units["of"] = [(fix_times >= since).sum() for since in units["since"]]
    paths = decoded_files["path"].tolist()
    present = set(paths) | {posixpath.dirname(p) + "/" for p in paths}  # renamed or removed since: not a companion now
    units = units.assign(share=units["n"] / units["of"].clip(lower=1))
    keep = (units["of"] >= MIN_FIX_COMMITS) & (units["n"] >= MIN_CHANGES) & (units["share"] >= MIN_SHARE)
    keep &= units.index.isin(present)
    units = units[keep].sort_values("share", ascending=False, kind="stable").head(MAX_COMPANIONS)
    if units.empty:
        return empty
    newest = notes.sort_values("time", ascending=False)
    latest = []
    for unit in units.index:
        if unit.endswith("/"):
            latest.append("\n".join(newest.loc[newest["directory"] == unit, "path"].drop_duplicates().head(5)))
        else:
            latest.append(_latest_entries(_text_of(unit, decoded_files, indexed_files, kb_contents)))
    frame = pd.DataFrame(
        {
            "path": units.index,
            "share": units["share"].to_numpy(),
            "n_fix_commits": units["n"].to_numpy(),
            "latest": latest,
        }
    )
    return conform(frame, "companions")
