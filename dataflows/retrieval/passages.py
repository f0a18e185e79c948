"""The texts a code-reading reranker reads (issue 57): a task, a file as its path and best-matching chunks, a symbol
as its own chunk. Training pairs (`cra.drivers.research.reader_pairs`) and requests render them with these same functions, so
the model reads at request time what it was trained on.

A file's chunks are its symbols' spans (the index's parse; a span over CHUNK_LINES lines is cut into windows of
CHUNK_LINES) and windows over the lines no symbol covers. Chunks are scored by the task's terms they hold, each
weighted by its rarity among the file's chunks (an idf within the file), and the best are kept, best first,
until PASSAGE_CHARS: what a reader needs to judge the file against the task, in a few hundred tokens.
"""

from __future__ import annotations

import math
import re

from cra.dataflows.text import terms

CHUNK_LINES = 40  # the longest chunk, in lines
PASSAGE_CHARS = 1200  # about 300-400 WordPiece tokens of code: the model truncates to its length
TASK_CHARS = 1000
GAP = "\n...\n"
_SPACES = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")


def compact(text: str) -> str:
    """Text with runs of spaces and blank lines collapsed: whitespace costs a reader tokens and says nothing."""
    return _BLANK_LINES.sub("\n", _SPACES.sub(" ", text)).strip()


def task_passage(task: str) -> str:
    """The task as the model reads it: compacted, its first TASK_CHARS characters."""
    return compact(task)[:TASK_CHARS]


def line_chunks(n_lines: int, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(first, last) 1-based line ranges covering a file of n_lines: each span (cut into CHUNK_LINES windows when
    longer), then windows over the lines no span covers; sorted, duplicates dropped."""
    covered = [False] * (n_lines + 2)
    out: set[tuple[int, int]] = set()
    for first, last in spans:
        first, last = max(1, first), min(n_lines, last)
        if first > last:
            continue
        for start in range(first, last + 1, CHUNK_LINES):
            out.add((start, min(last, start + CHUNK_LINES - 1)))
        for n in range(first, last + 1):
            covered[n] = True
    n = 1
    while n <= n_lines:
        if covered[n]:
            n += 1
            continue
        start = n
        while n <= n_lines and not covered[n] and n - start < CHUNK_LINES:
            n += 1
        out.add((start, n - 1))
    return sorted(out)


def best_chunks(
    lines: list[str], chunks: list[tuple[int, int]], task_terms: set[str], budget: int
) -> list[tuple[int, int]]:
    """The chunks to show, best first by the rarity-weighted task terms they hold (ties and chunks holding none: in
    file order), while they fit in `budget` characters (the best one always, cut later to fit); blank chunks and
    chunks inside a kept one left out. Best first, because a reader truncates what is too long."""
    bags = [set(terms("\n".join(lines[a - 1 : b]))) & task_terms for a, b in chunks]
    df: dict[str, int] = {}
    for bag in bags:
        for t in bag:
            df[t] = df.get(t, 0) + 1
    n = len(chunks)
    score = [sum(math.log(1 + n / df[t]) for t in bag) for bag in bags]
    blank = [not any(line.strip() for line in lines[a - 1 : b]) for a, b in chunks]
    order = sorted((i for i in range(n) if not blank[i]), key=lambda i: (-score[i], chunks[i][0], -chunks[i][1]))
    kept: list[tuple[int, int]] = []
    used = 0
    for i in order:
        a, b = chunks[i]
        if any(ka <= a and b <= kb for ka, kb in kept):
            continue
        size = sum(len(line) + 1 for line in lines[a - 1 : b])
        if kept and used + size > budget:
            continue
        kept.append((a, b))
        used += size
        if used >= budget:
            break
    return kept


def file_passage(path: str, source: str, spans: list[tuple[int, int]], task: str, budget: int = PASSAGE_CHARS) -> str:
    """A file as the model reads it: its path, then its chunks that best match the task, best first (GAP between
    chunks that do not follow each other in the file), compacted, at most `budget` characters in all."""
    lines = source.splitlines()
    chunks = line_chunks(len(lines), spans)
    kept = best_chunks(lines, chunks, set(terms(task)), budget)
    parts, last = [], None
    for a, b in kept:
        if parts and last is not None and a != last + 1:
            parts.append(GAP.strip())
        parts.append("\n".join(lines[a - 1 : b]))
        last = b
    return compact(f"{path}\n" + "\n".join(parts))[:budget]


def symbol_passage(
    path: str, qualified_name: str, source: str, span: tuple[int, int], task: str, budget: int = PASSAGE_CHARS
) -> str:
    """A function or class as the model reads it: path and qualified name, its first lines (the signature), then
    the windows of its body that best match the task, at most `budget` characters in all."""
    lines = source.splitlines()
    first, last = max(1, span[0]), min(len(lines), span[1])
    head = f"{path} {qualified_name}\n"
    body = lines[first - 1 : last]
    if sum(len(line) + 1 for line in body) + len(head) <= budget:
        return compact(head + "\n".join(body))[:budget]
    windows = [(a + first - 1, b + first - 1) for a, b in line_chunks(len(body), [(1, 3), *_windows(len(body), 4)])]
    kept = best_chunks(lines, [w for w in windows if w[0] > first + 2], set(terms(task)), budget - len(head) - 200)
    parts = ["\n".join(lines[first - 1 : first + 2])]
    for a, b in kept:
        parts += [GAP.strip(), "\n".join(lines[a - 1 : b])]
    return compact(head + "\n".join(parts))[:budget]


def _windows(n_lines: int, start: int, size: int = 12) -> list[tuple[int, int]]:
    """Consecutive windows of `size` lines from line `start`: a long body's readable pieces."""
    return [(a, min(n_lines, a + size - 1)) for a in range(start, n_lines + 1, size)]
