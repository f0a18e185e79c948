"""Bounded deep retrieval: which run artifacts, source-of-truth files and memories go out.

The driver gathers candidate files (path, size, mtime, kind: run_artifact | sot) without reading them, reads the
text of those these nodes rank first (never more of a file than its category's byte cap), and passes the texts in
(`candidate_texts`, by candidate id; binary and undecodable files are simply absent). Each category is filled in
rank order up to its file and byte caps; the entry that would overflow the byte cap is cut with TRUNCATION_MARKER
when more than 100 bytes of room are left, and retrieval of that category stops there.
"""

from __future__ import annotations

import re
import string
from datetime import UTC, datetime

import pandas as pd
from hamilton.function_modifiers import config

from cra.dataflows.diagnostics.models import ArtifactEntry, Caps, Handoff, MemoryEntry, RetrievalCaps, SotEntry

SEED_CAPS = RetrievalCaps(
    run_artifacts=Caps(5, 10 * 1024), sot_files=Caps(3, 15 * 1024), memory_entries=Caps(5, 5 * 1024)
)
# "adaptive caps": high priority ~7 files / 15 KB of run artifacts, low ~3 files / 5 KB; (files, bytes) factors
ADAPTIVE_FACTORS = {"high": (1.4, 1.5), "medium": (1.0, 1.0), "low": (0.6, 0.5)}
RECENCY_WINDOW_S = 24 * 3600
TRUNCATION_MARKER = "\n[... truncated ...]\n"
MIN_TRUNCATED_BYTES = 100  # a cut entry needs more room than this to be worth sending
MARKER_ROOM = 25  # bytes kept free for the marker
MIN_KEYWORD_CHARS = 5  # keywords are words longer than 4 characters
SOT_DIRS = ("docs", "src", "tests")
KB_SIGNALS = (
    "lexical_match",
    "symbol_lexical_match",
    "symbol_match",
)  # the retrieval pipeline's lexical + symbol signals


@config.when(adaptive_caps=False)
def retrieval_caps__seed() -> RetrievalCaps:
    """The fixed caps: run artifacts 5 files / 10 KB, SOT files 3 / 15 KB, memory entries 5 / 5 KB."""
    return SEED_CAPS


@config.when(adaptive_caps=True)
def retrieval_caps__adaptive(retrieval_priority: str) -> RetrievalCaps:
    """The fixed caps scaled by priority ("adaptive caps"): larger when high, smaller when low."""
    files, size = ADAPTIVE_FACTORS[retrieval_priority]

    def scaled(c: Caps) -> Caps:
        return Caps(max(1, round(c.max_files * files)), int(c.max_bytes * size))

    return RetrievalCaps(*(scaled(c) for c in (SEED_CAPS.run_artifacts, SEED_CAPS.sot_files, SEED_CAPS.memory_entries)))


def retrieval_keywords(handoff: Handoff) -> frozenset[str]:
    """Words over 4 characters of the error message and root cause, lower-cased, punctuation trimmed."""
    words = f"{handoff.error_message} {handoff.root_cause}".lower().split()
    return frozenset(w for w in (w.strip(string.punctuation) for w in words) if len(w) >= MIN_KEYWORD_CHARS)


def failure_text(handoff: Handoff) -> str:
    """The failure in words (error message, root cause): what similar past failures are compared on."""
    return "\n".join(t for t in (handoff.error_message, handoff.root_cause) if t)


def retrieval_task_text(handoff: Handoff, failure_text: str) -> str:
    """The failure as a retrieval task (message, root cause, stack trace, changed files) for the KB's ranking."""
    return "\n".join(t for t in (failure_text, handoff.stack_trace, "\n".join(handoff.recent_changes)) if t)


def run_candidates(candidate_files: pd.DataFrame) -> pd.DataFrame:
    """Files of the run directory (path relative to it, size, mtime)."""
    return candidate_files[candidate_files["kind"].eq("run_artifact")]


def sot_candidates(candidate_files: pd.DataFrame) -> pd.DataFrame:
    """Files under the repository's docs/, src/ and tests/ (path relative to the repository, size, mtime)."""
    return candidate_files[candidate_files["kind"].eq("sot")]


def run_artifact_order(run_candidates: pd.DataFrame, now: datetime) -> pd.DataFrame:
    """Run artifacts best first: those modified in the 24 hours before `now` first, newest first; then the rest,
    newest first (a file dated after `now` is not in the window)."""
    age = now.timestamp() - run_candidates["mtime"].astype(float)
    ranked = run_candidates.assign(in_window=age.ge(0) & age.le(RECENCY_WINDOW_S))
    return ranked.sort_values(["in_window", "mtime", "path"], ascending=[False, False, True], kind="stable")


def sot_keyword_counts(
    sot_candidates: pd.DataFrame, candidate_texts: pd.Series, retrieval_keywords: frozenset[str]
) -> pd.Series:
    """Per SOT candidate, its keyword relevance: occurrences of every keyword in its (read part of the) content."""
    texts = candidate_texts.reindex(sot_candidates.index).fillna("").astype(str).str.lower()
    score = pd.Series(0, index=sot_candidates.index, dtype="int64")
    for keyword in sorted(retrieval_keywords):
        score += texts.str.count(re.escape(keyword)).astype("int64")
    return score


@config.when(sot_ranking="keywords")
def sot_relevance__keywords(sot_keyword_counts: pd.Series) -> pd.Series:
    """Per SOT candidate, the seed's keyword counts (no usable KB)."""
    return sot_keyword_counts


@config.when(sot_ranking="keywords")
def sot_ranking_used__keywords() -> str:
    """What ranked the SOT files: the seed's keyword counts."""
    return "keywords"


def sot_kb_scores(sot_candidates: pd.DataFrame, kb_ranking: pd.DataFrame) -> pd.Series:
    """Per SOT candidate, the retrieval pipeline's lexical and symbol signals for the failure (sum of KB_SIGNALS;
    kb_ranking is its signal matrix); files the KB does not hold score 0."""
    per_path = kb_ranking.set_index("path")[list(KB_SIGNALS)].sum(axis=1)
    per_path = per_path[~per_path.index.duplicated()]
    return sot_candidates["path"].map(per_path).fillna(0.0).astype(float).round(4)


@config.when(sot_ranking="kb")
def sot_ranking_used__kb(
    sot_candidates: pd.DataFrame, sot_kb_scores: pd.Series, sot_keyword_counts: pd.Series, retrieval_caps: RetrievalCaps
) -> str:
    """What ranks the SOT files: the KB's signals, unless they score nothing, or the files they would send include
    one without a keyword match while a file with matches is left out (a small documentation-only repository scored
    0 everywhere and lost a document with five matches); then the seed's keyword counts, saying why."""
    if not (sot_kb_scores > 0).any():
        return "keywords (the KB scored no file)" if (sot_keyword_counts > 0).any() else "kb"
    order = (
        sot_candidates.assign(kb=sot_kb_scores)
        .sort_values(["kb", "mtime", "path"], ascending=[False, False, True], kind="stable")
        .index
    )
    picks, rest = order[: retrieval_caps.sot_files.max_files], order[retrieval_caps.sot_files.max_files :]
    if (sot_keyword_counts[picks] == 0).any() and (sot_keyword_counts[rest] > 0).any():
        return "keywords (the KB ranked a file without keyword matches above one with them)"
    return "kb"


@config.when(sot_ranking="kb")
def sot_relevance__kb(sot_kb_scores: pd.Series, sot_keyword_counts: pd.Series, sot_ranking_used: str) -> pd.Series:
    """Per SOT candidate, the KB's score, or the seed's keyword counts where `sot_ranking_used` fell back to them."""
    return sot_kb_scores if sot_ranking_used == "kb" else sot_keyword_counts


def sot_order(sot_candidates: pd.DataFrame, sot_relevance: pd.Series) -> pd.DataFrame:
    """SOT candidates best first: by relevance, ties broken by modification time (newest first), then path."""
    ranked = sot_candidates.assign(relevance=sot_relevance)
    return ranked.sort_values(["relevance", "mtime", "path"], ascending=[False, False, True], kind="stable")


def _fill(ranked: pd.DataFrame, caps: Caps) -> list[tuple[object, str, int]]:
    """(row, content, bytes) of the ranked rows (columns text, size) that fit the caps, in order; the one that
    would overflow the byte cap is cut with the marker when more than MIN_TRUNCATED_BYTES are left, then stop."""
    out, used = [], 0
    for row in ranked.itertuples():
        if len(out) >= caps.max_files:
            break
        data = row.text.encode("utf-8")
        if used + max(int(row.size), len(data)) > caps.max_bytes:
            remaining = caps.max_bytes - used
            if remaining > MIN_TRUNCATED_BYTES:
                content = data[: remaining - MARKER_ROOM].decode("utf-8", "ignore") + TRUNCATION_MARKER
                out.append((row, content, len(content.encode("utf-8"))))
            break
        out.append((row, row.text, len(data)))
        used += len(data)
    return out


def _with_texts(order: pd.DataFrame, candidate_texts: pd.Series) -> pd.DataFrame:
    """The ranked candidates that have a text (read, not binary), in rank order."""
    texts = candidate_texts.reindex(order.index)
    return order.assign(text=texts)[texts.notna().to_numpy()]


def _iso(mtime: float) -> str:
    return datetime.fromtimestamp(float(mtime), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_artifacts(
    run_artifact_order: pd.DataFrame, candidate_texts: pd.Series, retrieval_caps: RetrievalCaps
) -> tuple[ArtifactEntry, ...]:
    """The run artifacts retrieved, in rank order, within 5 files / 10 KB (or the adaptive caps)."""
    kept = _fill(_with_texts(run_artifact_order, candidate_texts), retrieval_caps.run_artifacts)
    return tuple(ArtifactEntry(row.path, content, n, _iso(row.mtime)) for row, content, n in kept)


def sot_files(
    sot_order: pd.DataFrame, candidate_texts: pd.Series, retrieval_caps: RetrievalCaps
) -> tuple[SotEntry, ...]:
    """The SOT files retrieved, most relevant first, within 3 files / 15 KB (or the adaptive caps)."""
    kept = _fill(_with_texts(sot_order, candidate_texts), retrieval_caps.sot_files)
    score = int if sot_order["relevance"].dtype.kind in "iu" else float
    return tuple(SotEntry(row.path, content, n, score(row.relevance)) for row, content, n in kept)


def memory_entries(memory_candidates: pd.DataFrame, retrieval_caps: RetrievalCaps) -> tuple[MemoryEntry, ...]:
    """Scoped memories and similar past failures (with their resolutions), most relevant first (ties: past failures,
    then as given), within 5 entries / 5 KB (or the adaptive caps).

    memory_candidates: source, content, relevance_score, and per source scope, category / phase_id, error_pattern,
    resolution, similarity_score."""
    ranked = memory_candidates.assign(
        text=memory_candidates["content"].astype(str),
        size=memory_candidates["content"].astype(str).str.encode("utf-8").str.len(),
        past=memory_candidates["source"].eq("past_failure"),
    ).sort_values(["relevance_score", "past"], ascending=False, kind="stable")
    fields = [f for f in MemoryEntry.__dataclass_fields__ if f not in ("source", "content", "size", "relevance_score")]

    def extra(row) -> dict:
        values = {f: getattr(row, f, None) for f in fields}
        return {f: (None if v is None or (isinstance(v, float) and pd.isna(v)) else v) for f, v in values.items()}

    return tuple(
        MemoryEntry(row.source, content, n, round(float(row.relevance_score), 4), **extra(row))
        for row, content, n in _fill(ranked, retrieval_caps.memory_entries)
    )
