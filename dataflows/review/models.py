"""Typed values of review-finding recall: the query's signals, the re-rank factors, recalled findings."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class RetrievalSignals:
    """What is known about the pull request at hand: the signals the query is built from."""

    pr_title: str
    pr_body: str = ""
    conventional_type: str | None = None  # feat, fix, ... from the title
    detected_languages: tuple[str, ...] = ()
    risk_signals: tuple[str, ...] = ()
    author_tier: str | None = None  # first-time | regular | core
    top_file_paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class RerankConfig:
    """Distance multipliers after retrieval: below 1 boosts same-language findings, above 1 mildly demotes others."""

    same_language_boost: float = 0.85
    cross_language_penalty: float = 1.15
    # what the multipliers scale: "fused" (ours: fusion's distance, defined for every finding) or "original" (seed 002:
    # the cosine distance; findings only BM25 found have none and go after the vector hits, in fusion's order)
    basis: str = "fused"


@dataclass(frozen=True)
class RecalledFinding:
    """One past review finding: its original cosine distance (None for a BM25-only hit), its BM25 score (None when
    no query term matched), the ranking key (fused distance x language factor), and whether its language matched."""

    finding_text: str
    severity: str
    category: str
    file_path: str
    outcome: str
    repo: str
    distance: float | None
    bm25: float | None
    adjusted_distance: float
    language_match: bool


@dataclass(frozen=True)
class FindingsRecall:
    """The query sent to the embedding model, the findings (best first), the prompt section, and any warnings."""

    query: str
    findings: tuple[RecalledFinding, ...]
    section: str = ""
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"query": self.query, "findings": [asdict(f) for f in self.findings]}
