"""Runs review-finding recall: the query dataflow, one embedding call, the store's k-nearest and FTS5
BM25 candidates, their fusion, the language re-rank.

`recall_findings` is what a review calls: it never fails the review. No embedding provider or an embedding error
leave BM25 to answer alone, with a warning saying so; an unreadable store gives no findings and a warning (fail
open). `add_findings` validates, embeds and stores findings (`cra findings add|import`); there a missing provider is
an error, since a finding is stored with its vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from pathlib import Path

import pandas as pd
from hamilton import driver

from cra.dataflows.review import fusion, languages, query, rerank
from cra.dataflows.review.models import FindingsRecall, RerankConfig
from cra.drivers.common.errors import CraError
from cra.drivers.findings.embeddings import EmbeddingProvider, default_provider
from cra.drivers.findings.fields import DEFAULTS, SEVERITIES
from cra.drivers.findings.store import (
    FINDING_COLUMNS,
    default_db_path,
    document_text,
    lexical_findings,
    nearest_findings,
    open_store,
    owner_of,
)
from cra.drivers.findings.store import (
    add_findings as store_findings,
)

DEFAULT_TOP_K = 5
CANDIDATE_DEPTH = 20  # candidates from each side before fusion (at least top_k)
FUSIONS = ("rrf", "score")
BM25_ALONE = "review findings come from BM25 keyword search alone (no semantic match)"
REQUIRED = ("finding_text", "repo")
EMBED_BATCH = 1_000


@lru_cache(maxsize=len(FUSIONS))
def review_driver(fusion_method: str = "rrf") -> driver.Driver:
    """The review-recall DAG (languages, query, fusion, re-rank) with one fusion variant, built once per process."""
    return (
        driver.Builder().with_modules(languages, query, fusion, rerank).with_config({"fusion": fusion_method}).build()
    )


def _provider(provider: EmbeddingProvider | None) -> tuple[EmbeddingProvider | None, list[str]]:
    return (provider, []) if provider is not None else default_provider()


def recall_findings(
    pr_title: str,
    pr_body: str = "",
    file_paths: Sequence[str] = (),
    *,
    risk_signals: Sequence[str] = (),
    author_tier: str | None = None,
    repo: str | None = None,
    sharing_enabled: bool = False,
    top_k: int = DEFAULT_TOP_K,
    distance_threshold: float | None = None,
    rerank_config: RerankConfig = RerankConfig(),
    db_path: Path | str | None = None,
    provider: EmbeddingProvider | None = None,
    no_provider: bool = False,
    fusion_method: str = "rrf",
) -> FindingsRecall:
    """The past findings most like this pull request, best first: vector and BM25 candidates fused (`fusion_method`
    rrf | score), re-ranked by language. `no_provider` simulates a missing model (BM25 alone answers)."""
    if repo:
        owner_of(repo)  # a malformed name is the caller's mistake, not a retrieval failure
    inputs = {
        "pr_title": pr_title,
        "pr_body": pr_body or "",
        "file_paths": list(file_paths),
        "risk_signals": list(risk_signals),
        "author_tier": author_tier,
    }
    dr = review_driver(fusion_method)
    head = dr.execute(["retrieval_query", "pr_languages"], inputs=inputs)
    text = head["retrieval_query"]
    provider, warnings = (None, ["no embedding provider"]) if no_provider else _provider(provider)
    vector, warnings = None, [f"{w}; {BM25_ALONE}" for w in warnings]
    path = Path(db_path) if db_path else default_db_path()
    if not text or not path.exists():
        return FindingsRecall(query=text, findings=(), warnings=tuple(warnings))
    depth = max(int(top_k), CANDIDATE_DEPTH)
    try:
        if provider is not None:
            vector = provider.generate(text, input_type="query")  # the one embedding call of this review
    except Exception as exc:  # noqa: BLE001 - the lexical side still answers
        warnings.append(f"embedding failed ({_reason(exc)}); {BM25_ALONE}")
    try:
        with open_store(path) as conn:
            lexical = lexical_findings(conn, text, repo, depth, sharing_enabled)
            nearest = (
                _NO_VECTOR_HITS
                if vector is None
                else nearest_findings(conn, vector, provider.model, repo, depth, sharing_enabled)
            )
    except Exception as exc:  # noqa: BLE001 - fail open: the review goes on without findings
        return FindingsRecall(query=text, findings=(), warnings=(*warnings, f"review findings skipped: {_reason(exc)}"))
    threshold = float(
        distance_threshold if distance_threshold is not None else getattr(provider, "distance_threshold", 0.0)
    )
    out = dr.execute(
        ["findings_recall"],
        inputs={
            **inputs,
            "vector_candidates": nearest,
            "lexical_candidates": lexical,
            "distance_threshold": threshold,
            "rerank_config": rerank_config,
            "top_k": int(top_k),
        },
        overrides=head,
    )
    result = out["findings_recall"]
    return FindingsRecall(
        query=result.query, findings=result.findings, section=result.section, warnings=tuple(warnings)
    )


_NO_VECTOR_HITS = pd.DataFrame({"distance": pd.Series(dtype=float)})


def _reason(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def validate_finding(raw: object, now: datetime) -> dict:
    """A finding with every column as a clean string: finding_text and repo given, the others defaulted as `cra
    findings add` defaults them (DEFAULTS; created_at `now`), severity one of SEVERITIES; ValueError naming the problem."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object, got {type(raw).__name__}")
    raw = {**DEFAULTS, **{k: v for k, v in raw.items() if v is not None}}
    missing = [k for k in (*REQUIRED, *DEFAULTS) if not isinstance(raw.get(k), str) or not raw[k].strip()]
    if missing:
        raise ValueError(f"missing or empty text field(s): {', '.join(missing)}")
    finding = {k: raw[k].strip() for k in (*REQUIRED, *DEFAULTS)}
    finding["severity"] = finding["severity"].lower()
    if finding["severity"] not in SEVERITIES:
        raise ValueError(f"severity {raw['severity']!r} is not one of {', '.join(SEVERITIES)}")
    try:
        owner_of(finding["repo"])
    except CraError as exc:
        raise ValueError(str(exc)) from None
    created = raw.get("created_at")
    if created is None:
        finding["created_at"] = now.isoformat(timespec="seconds")
    elif not isinstance(created, str) or pd.isna(pd.to_datetime(created, errors="coerce", utc=True, format="ISO8601")):
        raise ValueError(f"created_at {created!r} is not an ISO 8601 time such as 2026-01-31T12:00:00Z")
    else:
        finding["created_at"] = created
    return {k: finding[k] for k in FINDING_COLUMNS}


def add_findings(
    findings: Sequence[dict], db_path: Path | str | None = None, provider: EmbeddingProvider | None = None
) -> int:
    """Embed and store validated findings (transactions of EMBED_BATCH); returns how many were new."""
    provider, warnings = _provider(provider)
    if provider is None:
        raise CraError(
            f"Cannot store findings: {warnings[0]}. Reinstall cra (`pip install --force-reinstall cra-engine`, or `make setup` in a checkout) to restore the model."
        )
    added = 0
    with open_store(db_path) as conn:
        for start in range(0, len(findings), EMBED_BATCH):
            batch = list(findings[start : start + EMBED_BATCH])
            vectors = provider.generate_many([document_text(f) for f in batch], input_type="document")
            added += len(store_findings(conn, batch, vectors, provider.model))
    return added
