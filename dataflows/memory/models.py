"""Typed results of memory retrieval: the query, each retrieved memory with its reason, the result."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class MemoryQuery:
    """Filters on top of the context: an exact scope (or its tasks), a category, how many, how confident."""

    scope: str | None = None  # e.g. "project:hydra" keeps hydra's decisions and its tasks' rules
    category: str | None = None
    max_results: int = 50
    min_confidence: float = 0.0


@dataclass(frozen=True)
class RetrievedMemory:
    """One memory with its relevance to the context (0-1) and why it matched."""

    content: str
    scope: str
    category: str
    confidence: float
    timestamp: str
    relevance_score: float
    reason: str


@dataclass(frozen=True)
class RetrievalResult:
    """The memories returned (best first), how many applied, and their tokens as rendered."""

    memories: tuple[RetrievedMemory, ...]
    total_found: int
    total_returned: int
    token_estimate: int

    def to_dict(self) -> dict:
        return {
            "memories": [asdict(m) for m in self.memories],
            "total_found": self.total_found,
            "total_returned": self.total_returned,
            "token_estimate": self.token_estimate,
        }


@dataclass(frozen=True)
class MemoryContext:
    """The memory section of a context package: markdown, the memories in it, their scope budgets, its tokens."""

    markdown: str
    memories: tuple[RetrievedMemory, ...]
    buckets: tuple[str, ...]  # universal|language|project, one per memory
    costs: tuple[int, ...]  # tokens of each memory's line
    tokens: int  # tokens of the whole markdown section (never over budget)
    budget: int
    allocations: dict = field(default_factory=dict)  # bucket -> {"allocated", "carried_in", "used"}
    total_found: int = 0

    def provenance(self) -> dict:
        """JSON-ready record of what went in and why (for a package's `provenance.memories`)."""
        memories = [{**asdict(m), "bucket": b, "tokens": c} for m, b, c in zip(self.memories, self.buckets, self.costs)]
        return {
            "budget": self.budget,
            "tokens": self.tokens,
            "total_found": self.total_found,
            "allocations": self.allocations,
            "memories": memories,
        }
