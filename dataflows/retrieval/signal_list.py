"""The one list of scoring signals: each signal's name, default weight, whether it is original, and the nodes
and KB lexicon that exist only for it; the role priors and task-type adjustments; and the one validation of
user weights. Constants and a helper, not Hamilton nodes: `combination` builds its nodes from them,
`cra.drivers.retrieval.retriever` validates with them, `cra.drivers.research.tune` and `cra.drivers.bench.timing` iterate them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Signal:
    """One scoring signal: a node of `cra.dataflows.retrieval.signals` (0-1 per file) of the same name."""

    name: str
    default_weight: float  # before task-type adjustment and normalisation (the shipped profile may replace it)
    seed: bool  # one of the eight original signals (the others are the BM25 signals added since)
    helper_nodes: tuple[str, ...] = ()  # request-time nodes besides its own that exist only for it
    index_nodes: tuple[str, ...] = ()  # index-time nodes that exist only for it
    lexicon: str | None = None  # the KB lexicon it loads
    second_pass: bool = False  # computed from the first-pass ranking of the other signals (`anchor_files`)


SIGNAL_LIST: tuple[Signal, ...] = (
    Signal("path_match", 0.20, seed=True),
    Signal("symbol_match", 0.25, seed=True),
    Signal("dependency_proximity", 0.15, seed=True, index_nodes=("kb_edges",)),
    Signal("cochange_affinity", 0.10, seed=True, index_nodes=("kb_cochange",)),
    Signal("recency", 0.05, seed=True),
    Signal("domain_match", 0.10, seed=True),
    Signal("concept_overlap", 0.10, seed=True, index_nodes=("file_concepts",)),
    Signal("structural_centrality", 0.05, seed=True),
    Signal(
        "lexical_match",
        0.30,
        seed=False,
        helper_nodes=("lexical_query_terms",),
        index_nodes=("kb_file_terms",),
        lexicon="file_lexicon",
    ),
    Signal("symbol_lexical_match", 0.20, seed=False, index_nodes=("kb_symbol_terms",), lexicon="symbol_lexicon"),
    Signal("history_match", 0.10, seed=False, index_nodes=("kb_commit_terms",), lexicon="commit_lexicon"),
    Signal("title_match", 0.20, seed=False, helper_nodes=("title_query_terms",)),
    Signal(
        "partner_affinity",
        0.10,
        seed=False,
        helper_nodes=("anchor_files",),
        index_nodes=("kb_cochange", "kb_edges"),
        second_pass=True,
    ),
)
SIGNALS: tuple[str, ...] = tuple(s.name for s in SIGNAL_LIST)
SEED_SIGNALS: tuple[str, ...] = tuple(s.name for s in SIGNAL_LIST if s.seed)
FIRST_PASS_SIGNALS: tuple[str, ...] = tuple(s.name for s in SIGNAL_LIST if not s.second_pass)
SECOND_PASS_SIGNALS: tuple[str, ...] = tuple(s.name for s in SIGNAL_LIST if s.second_pass)
# task-independent priors: they order files but never make a file "match" (or anchor) the task on their own
PRIOR_SIGNALS: tuple[str, ...] = ("recency", "structural_centrality")
DEFAULT_WEIGHTS: dict[str, float] = {s.name: s.default_weight for s in SIGNAL_LIST}
# task-type adjustments: named weights replaced before normalisation
TASK_TYPE_WEIGHTS: dict[str, dict[str, float]] = {
    "bug_fix": {"recency": 0.15, "structural_centrality": 0.0},
    "refactor": {"structural_centrality": 0.15},
    "test": {"symbol_match": 0.30},
}
# multipliers by file role; 1.0 would make them neutral
DEFAULT_PRIORS: dict[str, float] = {"test_file_prior": 0.5, "non_source_prior": 0.3}
KNOBS: tuple[str, ...] = SIGNALS + tuple(DEFAULT_PRIORS)  # every name a user may weight


def checked_weights(weights: dict | None, known: tuple[str, ...] | None = KNOBS) -> dict[str, float]:
    """The weights as floats; ValueError naming the problem when a name is not in `known` (None: any name goes)
    or a value is not a non-negative number."""
    weights = dict(weights or {})
    unknown = sorted(set(weights) - set(known)) if known is not None else []
    if unknown:
        raise ValueError(f"unknown signal weight(s) {unknown}; valid names: {', '.join(known)}")
    bad = {k: v for k, v in weights.items() if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0}
    if bad:
        raise ValueError(f"signal weights must be non-negative numbers; got {bad}")
    return {k: float(v) for k, v in weights.items()}
