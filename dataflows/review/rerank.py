"""Around fusion: keep vector hits within the distance threshold, re-rank the fused findings by language, render.

Input `vector_candidates`: the store's nearest findings (columns finding_text, severity, category, file_path,
outcome, repo, distance = cosine distance of the finding's embedding to the query's). The threshold applies to the
original distance, before fusion: a vector hit beyond it loses its vector vote (it stays only
if BM25 found it too). `cra.dataflows.review.fusion` then joins the BM25 candidates; the language re-rank multiplies the
fused distance, so it only reorders what fusion kept. The multipliers are mild (0.85 / 1.15): language breaks
near-ties but never lifts a far same-language finding over a close cross-language one (a reorder needs the fused
distances within a factor 1.15 / 0.85 = 1.35 of each other); unknown languages stay 1.0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.dataflows.review.models import FindingsRecall, RecalledFinding, RerankConfig

DEFAULT_MAX_CONTEXT_CHARS = 2_000
SECTION_HEADING = "## Similar Prior Findings (Learning Context)"
SECTION_INTRO = (
    "These findings from earlier reviews resemble this change. Use them as context; judge every issue "
    "in this diff on its own merits."
)
FIELDS = ("finding_text", "severity", "category", "file_path", "outcome", "repo")


def thresholded_findings(vector_candidates: pd.DataFrame, distance_threshold: float) -> pd.DataFrame:
    """The vector candidates whose original distance is within the threshold (before fusion
    and any re-rank)."""
    distance = pd.to_numeric(vector_candidates.get("distance", pd.Series(dtype=float)), errors="coerce")
    return vector_candidates[distance.le(distance_threshold).to_numpy()]


def rerank_by_language(
    fused_findings: pd.DataFrame,
    finding_languages: pd.Series,
    pr_languages: tuple[str, ...],
    rerank_config: RerankConfig = RerankConfig(),
) -> pd.DataFrame:
    """The fused findings with `language_match` and `adjusted_distance` (fused distance x boost, x penalty, or x 1
    when the finding's language is unknown), sorted by adjusted then fused distance (fusion's order breaks ties)."""
    language = finding_languages.reindex(fused_findings.index)
    known = language.notna().to_numpy()
    match = known & language.isin(set(pr_languages)).to_numpy()
    factor = np.where(
        match, rerank_config.same_language_boost, np.where(known, rerank_config.cross_language_penalty, 1.0)
    )
    fused = fused_findings["fused_distance"].to_numpy(dtype=float)
    if (
        rerank_config.basis == "original"
    ):  # seed 002's re-rank, measured as `review-seed` by cra.drivers.research.findings_recall
        original = pd.to_numeric(
            fused_findings.get("distance", pd.Series(np.nan, index=fused_findings.index)), errors="coerce"
        ).to_numpy(dtype=float)
        lexical_only = np.isnan(original)
        out = fused_findings.assign(
            language_match=match,
            adjusted_distance=np.where(lexical_only, fused, original) * factor,
            _lexical_only=lexical_only,
        )
        out = out.sort_values(["_lexical_only", "adjusted_distance", "fused_distance"], kind="stable")
        return out.drop(columns="_lexical_only")
    out = fused_findings.assign(language_match=match, adjusted_distance=fused * factor)
    return out.sort_values(["adjusted_distance", "fused_distance"], kind="stable")


def recalled_findings(rerank_by_language: pd.DataFrame, top_k: int = 5) -> tuple[RecalledFinding, ...]:
    """The best `top_k` re-ranked findings as typed records, best first (distance / bm25 None where that side did
    not find the finding)."""
    frame = rerank_by_language.head(max(0, int(top_k)))
    text = frame.reindex(columns=list(FIELDS)).fillna("").astype(str).itertuples(index=False, name=None)
    optional = lambda column: [None if pd.isna(v) else float(v) for v in frame[column]]  # noqa: E731
    numbers = zip(
        optional("distance"), optional("bm25"), frame["adjusted_distance"].astype(float), frame["language_match"]
    )
    return tuple(
        RecalledFinding(*fields, distance=d, bm25=b, adjusted_distance=a, language_match=bool(m))
        for fields, (d, b, a, m) in zip(text, numbers)
    )


def findings_section(
    recalled_findings: tuple[RecalledFinding, ...], max_context_chars: int = DEFAULT_MAX_CONTEXT_CHARS
) -> str:
    """The prompt section of prior findings, whole lines within the
    character budget; empty when there is nothing to show."""
    lines, used = [], len(SECTION_HEADING) + len(SECTION_INTRO) + 4
    for f in recalled_findings:
        where = f" `{f.file_path}`" if f.file_path else ""
        text = " ".join(f.finding_text.split())
        line = f"- [{f.severity}/{f.category}]{where}: {text} (outcome: {f.outcome}; {f.repo})"
        if used + len(line) + 1 > max_context_chars:
            break
        lines.append(line)
        used += len(line) + 1
    return f"{SECTION_HEADING}\n\n{SECTION_INTRO}\n\n" + "\n".join(lines) + "\n" if lines else ""


def findings_recall(
    retrieval_query: str, recalled_findings: tuple[RecalledFinding, ...], findings_section: str
) -> FindingsRecall:
    """The recall's result: query, findings best first, prompt section."""
    return FindingsRecall(query=retrieval_query, findings=recalled_findings, section=findings_section)
