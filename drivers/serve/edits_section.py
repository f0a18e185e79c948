"""The "Edited since the index" section of a `get_context` answered while `cra serve --watch` re-indexes: each
changed file as a unified diff from the text the served KB holds to the file as it is now (a new file whole, a
deleted one named), pinned on top of the package.

Why: the ranking and the code below the section are the last good KB's, and a re-index of an edit takes seconds on
a large repository (OpenJDK: 3-5 s). An agent that asks right after an edit sees its edit at once, with the lines as
they are now and the function each change is in, and is told which of the package's files it sees from before.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

import numpy as np
import pandas as pd

from cra.dataflows.index.mapped import file_texts
from cra.dataflows.retrieval.markdown import code_span, fence
from cra.dataflows.retrieval.models import PinnedSection
from cra.drivers.serve.edited import EditedFiles

NAME = "edits"  # the pinned section's name (its provenance's key in the package)
EDITS_BUDGET = 3_000  # tokens at most for the section ...
EDITS_SHARE = 4  # ... and never more than a quarter of the package: the ranked code stays the point of it
CONTEXT_LINES = 3  # unchanged lines around each change, as git shows them
MIN_DIFF_LINES = 6  # a diff cut shorter than this (its two file lines, a hunk header, three lines) is not shown
RESERVE = 40  # tokens kept for the closing line that names the files not shown
MAX_DIFFED_LINES = 2_000  # changed lines beyond which a file's changes are shown as one hunk (`_diff`)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def edits_section(
    edited: EditedFiles,
    kb,
    scope: pd.DataFrame,
    budget: int,
    count_tokens: Callable[[str], int],
    paths: frozenset[str] | None = None,
) -> PinnedSection:
    """The section for these changed files (paths: those of them to show, all by default; ordered: those the
    ranking put in scope first, by rank, then by path), within min(EDITS_BUDGET, budget / EDITS_SHARE) tokens: a
    diff that does not fit is cut (the section says how many lines it left out), a file that does not fit at all
    is named at the end. Empty markdown when no changed file differs from the KB's text."""
    limit = min(EDITS_BUDGET, int(budget) // EDITS_SHARE)
    paths = edited.paths if paths is None else paths
    indexed = kb.files.set_index("path")["file_id"]
    ids = indexed.reindex(sorted(paths)).dropna().astype(np.int64)
    before = file_texts(kb.contents, ids.to_numpy())
    ranks = scope.set_index("path")["rank"] if len(scope) else pd.Series(dtype="int64")
    order = sorted(paths, key=lambda p: (0, int(ranks[p])) if p in ranks.index else (1, p))
    head = (
        "## Edited since the index\n"
        "These files changed after the knowledge base this package comes from was built (it is being re-indexed): "
        "diffs from the text it holds to the files as they are now. Their code further down is from before."
    )
    blocks, left_out, shown = [], [], []
    used = count_tokens(head) + 2
    for path in order:
        old = before.get(int(ids[path])) if path in ids.index else None
        rank = int(ranks[path]) if path in ranks.index else None
        block, change = _file_block(path, old, edited, rank)
        if block is None:
            continue
        cost, room = count_tokens(block) + 2, limit - used - RESERVE
        if cost > room:
            block = _cut(block, room - 2, count_tokens)
            if block is None:
                left_out.append(path)
                continue
            cost = count_tokens(block) + 2
        blocks.append(block)
        shown.append({"path": path, "change": change, "rank": rank})
        used += cost
    if left_out:
        blocks.append(_not_shown(left_out, limit, limit - used, count_tokens))
    provenance = {"files": shown, "not_shown": left_out, "limit": limit}
    return PinnedSection(NAME, "\n\n".join([head, *blocks]) if shown or left_out else "", provenance)


def _file_block(path: str, old: str | None, edited: EditedFiles, rank: int | None) -> tuple[str | None, str]:
    """A changed file's heading and diff (None when it reads as the KB holds it, or the KB has no text of it and
    there is none to show), and what happened to it: modified, added, deleted or unreadable (binary, too large, not
    UTF-8 now)."""
    ranked = f" (ranked #{rank}: any code of it below is from before the edit)" if rank is not None else ""
    now = edited.texts.get(path)
    if now is None:
        if old is None:
            return None, "unreadable"
        if path in edited.gone:
            return f"### {code_span(path)}: deleted{ranked}", "deleted"
        return f"### {code_span(path)}: changed, not shown (binary, too large or not UTF-8 now){ranked}", "unreadable"
    if old == now:
        return None, "unchanged"
    change = "added" if old is None else "modified"
    before_name = f"{path} (indexed)" if old is not None else "/dev/null"
    lines = _diff([] if old is None else old.splitlines(), now.splitlines(), before_name, f"{path} (now)")
    diff = "\n".join(_with_enclosing(lines, _symbols_of(edited, path)))
    ticks = fence(diff)
    heading = f"### {code_span(path)}: {'new file' if old is None else 'edited'}{ranked}"
    return f"{heading}\n{ticks}diff\n{diff}\n{ticks}", change


def _diff(a: list[str], b: list[str], a_name: str, b_name: str) -> list[str]:
    """The unified diff of two texts' lines (difflib's, CONTEXT_LINES around each change); when more than
    MAX_DIFFED_LINES lie between their common first and last lines, one hunk from the first changed line to the last
    instead (difflib's matching grows with the square of the changed lines: 4.7 s for half of 10,000 lines)."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    if max(len(a), len(b)) - head - tail <= MAX_DIFFED_LINES:
        return list(difflib.unified_diff(a, b, a_name, b_name, n=CONTEXT_LINES, lineterm=""))
    lo, a_hi, b_hi = max(0, head - CONTEXT_LINES), len(a) - tail, len(b) - tail
    a_end, b_end = min(len(a), a_hi + CONTEXT_LINES), min(len(b), b_hi + CONTEXT_LINES)
    return [
        f"--- {a_name}",
        f"+++ {b_name}",
        f"@@ -{lo + (a_end > lo)},{a_end - lo} +{lo + (b_end > lo)},{b_end - lo} @@",  # (an empty side: line 0)
        *(" " + line for line in a[lo:head]),
        *("-" + line for line in a[head:a_hi]),
        *("+" + line for line in b[head:b_hi]),
        *(" " + line for line in b[b_hi:b_end]),
    ]


def _symbols_of(edited: EditedFiles, path: str) -> pd.DataFrame:
    """The changed file's symbols as parsed now (start_line, end_line, qualified_name)."""
    file_ids = edited.files.loc[edited.files["path"] == path, "file_id"]
    symbols = edited.tables["symbols"]
    return symbols[symbols["file_id"].isin(file_ids)]


def _with_enclosing(lines: list[str], symbols: pd.DataFrame) -> list[str]:
    """The diff's lines with each hunk header naming the innermost symbol around its first change (as
    `git diff -p` names the function), else the first symbol that starts among its new lines (code added between
    or after symbols), found in the file's symbols as parsed now."""
    out = []
    for i, line in enumerate(lines):
        match = _HUNK.match(line)
        if match and len(symbols):
            at, end = int(match.group(1)), int(match.group(1)) + int(match.group(2) or 1)
            for later in lines[i + 1 :]:
                if later[:1] in "+-" or later.startswith("@@"):
                    break
                at += 1
            starts, ends = symbols["start_line"], symbols["end_line"]
            inside = symbols[(starts <= at) & (ends >= at)].sort_values("start_line").tail(1)  # (the innermost)
            if not len(inside):
                inside = symbols[(starts >= at) & (starts < end)].sort_values("start_line").head(1)
            if len(inside):
                line = f"{line} {inside['qualified_name'].iloc[0]}"
        out.append(line)
    return out


def _not_shown(paths: list[str], limit: int, room: int, count_tokens: Callable[[str], int]) -> str:
    """The closing line naming the changed files the section had no room for, as many as fit in room tokens."""
    line = f"Also changed, not shown (over this section's {limit} tokens):"
    for i, path in enumerate(paths):
        more = f" and {len(paths) - i} more files: read them." if i else f" {len(paths)} files: read them."
        longer = f"{line}{',' if i else ''} {code_span(path)}"
        if count_tokens(longer) + count_tokens(more) > room:
            return line + more
        line = longer
    return line + "."


def _cut(block: str, room: int, count_tokens: Callable[[str], int]) -> str | None:
    """The block's first lines that fit in room tokens, with a line saying how many were left out and the closing
    fence (the most lines that fit: found by halving); None when fewer than MIN_DIFF_LINES of the diff fit."""
    lines = block.split("\n")
    heading, opening, body, ticks = lines[0], lines[1], lines[2:-1], lines[-1]

    def cut(n: int) -> str:
        note = f"... {len(body) - n} more lines of this diff not shown: read the file"
        return "\n".join([heading, opening, *body[:n], note, ticks])

    lo, hi = 0, len(body)  # cut(lo) fits (or lo is 0), cut(hi + 1) does not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if count_tokens(cut(mid)) <= room else (lo, mid - 1)
    return cut(lo) if lo >= MIN_DIFF_LINES else None
