"""Hybrid recall: fuse the vector candidates (within the distance threshold) with the FTS5 BM25 candidates.

Inputs, indexed by finding_id: `thresholded_findings` (the k-nearest findings whose original cosine `distance` is
within the threshold) and `lexical_candidates` (the best findings by BM25 on the query's terms, `bm25` > 0, higher is
better). Either may be empty: with no embedding provider the lexical side answers alone. The result holds every
candidate once with its `distance` (NaN when the vector side did not vouch for it: a BM25-only hit), `bm25` (NaN when
no query term matched), both ranks, and `fused_distance` (0 = the query's best candidate), on which the language
re-rank then works. Default: weighted reciprocal rank fusion (k = 60, the vector side's votes x 0.7), which ignores
the two sides' incomparable score scales; `fusion="score"` shrinks the cosine distance by BM25 relative to the
query's best. Both were measured on the mined findings set (`python -m cra.drivers.research.findings_recall`; README): weighted
RRF is the default because it is the one that matches BM25 alone on text-only queries.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hamilton.function_modifiers import config

RRF_K = 60  # the constant of Cormack et al. (2009): damps the weight of the very first ranks
VECTOR_WEIGHT = (
    0.7  # the static model is the weaker ranker on the findings set (both query kinds): its votes count less
)
LEXICAL_WEIGHT = 0.9  # how far the best BM25 match shrinks a distance (score fusion; measured 0.5, 0.7, 0.9)


def _candidates(thresholded_findings: pd.DataFrame, lexical_candidates: pd.DataFrame) -> pd.DataFrame:
    """Every candidate once, with its descriptive fields, distance, bm25 and 1-based rank on each side (ties share
    the best rank; NaN on a side that did not find it)."""
    vector, lexical = thresholded_findings, lexical_candidates
    frame = pd.concat([vector, lexical[~lexical.index.isin(vector.index)]]) if len(lexical) else vector.copy()
    frame["distance"] = pd.to_numeric(frame.get("distance", np.nan), errors="coerce").astype(float)
    frame["bm25"] = (
        pd.to_numeric(lexical.get("bm25", pd.Series(dtype=float)), errors="coerce").reindex(frame.index).astype(float)
    )
    frame["vector_rank"] = frame["distance"].rank(method="min")
    frame["lexical_rank"] = frame["bm25"].rank(method="min", ascending=False)
    return frame


def _ordered(candidates: pd.DataFrame, fused_distance: pd.Series) -> pd.DataFrame:
    """Best first: fused distance, then the closer vector distance, the higher BM25, the older finding (its id)."""
    fused = fused_distance.to_numpy(dtype=float)
    missing_last = lambda values: np.nan_to_num(values, nan=np.inf)  # noqa: E731
    order = np.lexsort(
        (
            candidates.index.to_numpy(),
            missing_last(-candidates["bm25"].to_numpy()),
            missing_last(candidates["distance"].to_numpy()),
            fused,
        )
    )
    return candidates.iloc[order].assign(fused_distance=fused[order])


@config.when_not(fusion="score")
def fused_findings__rrf(
    thresholded_findings: pd.DataFrame,
    lexical_candidates: pd.DataFrame,
    rrf_k: int = RRF_K,
    vector_weight: float = VECTOR_WEIGHT,
) -> pd.DataFrame:
    """Vector and BM25 candidates fused by weighted reciprocal rank (vector_weight / (k + vector rank) + 1 / (k +
    BM25 rank), a side that did not find it adds 0), as a distance from the query's best: 1 - score / best score.
    So the best candidate is 0 and neighbours a few ranks apart are within the language re-rank's factor 1.35."""
    c = _candidates(thresholded_findings, lexical_candidates)
    score = (vector_weight / (rrf_k + c["vector_rank"])).fillna(0.0) + (1.0 / (rrf_k + c["lexical_rank"])).fillna(0.0)
    best = score.max()
    return _ordered(c, 1.0 - score / best if best > 0 else score)


@config.when(fusion="score")
def fused_findings__score(
    thresholded_findings: pd.DataFrame, lexical_candidates: pd.DataFrame, lexical_weight: float = LEXICAL_WEIGHT
) -> pd.DataFrame:
    """Vector and BM25 candidates fused by a calibrated score in distance units: the cosine distance (1 for a
    BM25-only hit: the embedding does not vouch for it) shrunk by lexical evidence, x (1 - w x BM25 / the query's
    best BM25). A vector hit no query term matches keeps its distance, so the re-rank's mildness carries over."""
    c = _candidates(thresholded_findings, lexical_candidates)
    best = c["bm25"].max()
    lexical = (c["bm25"] / best).fillna(0.0) if best > 0 else pd.Series(0.0, index=c.index)
    return _ordered(c, c["distance"].fillna(1.0) * (1.0 - lexical_weight * lexical))
