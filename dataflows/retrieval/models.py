"""Typed results of the retrieval pipeline: the task query and the context package."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

TIERS = ("primary", "supporting", "type_context", "outline")  # the tiers a package carries, most relevant first
# every tier precision assigns, in the one order precision, assembly, render and the -v report use
TIER_ORDER = {tier: i for i, tier in enumerate((*TIERS, "excluded"))}


@dataclass(frozen=True)
class TaskQuery:
    """The task, parsed into what retrieval can match against the KB."""

    raw_description: str
    task_type: str  # bug_fix|feature|refactor|test|investigation
    keywords: tuple[str, ...] = ()
    file_hints: tuple[str, ...] = ()
    symbol_hints: tuple[str, ...] = ()
    error_patterns: tuple[str, ...] = ()
    concepts: tuple[str, ...] = ()
    # in-repository stack-trace frames (path as written, function name), strongest evidence there is
    trace_frames: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("trace_frames")
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


@dataclass(frozen=True, eq=False)
class ScopedSymbols:
    """The symbols of the scoped files (KB symbol-table rows, in KB order) with their file's rank, seed and test
    flags, and the symbol edges between them: what precision classifies into tiers."""

    rows: np.ndarray  # row of each scoped symbol in the SymbolTable
    local: np.ndarray  # per KB row: its position among the scoped symbols, -1 when not scoped
    at: np.ndarray  # per scoped symbol: its file's row in scope
    symbol_id: np.ndarray
    file_id: np.ndarray
    rank: np.ndarray
    seed: np.ndarray
    is_test: np.ndarray
    kind: np.ndarray
    name: np.ndarray
    qualified_name: np.ndarray
    edge_src: np.ndarray  # symbol edges with both ends scoped (positions), in KB edge order
    edge_dst: np.ndarray
    type_edge: np.ndarray  # the edge names a type (annotation or base)
    edge_at: np.ndarray  # their positions in the SymbolTable's edges


@dataclass(frozen=True)
class SymbolContext:
    symbol_id: int
    file_id: int
    name: str
    qualified_name: str
    kind: str
    relevance: str  # primary|supporting|type_context|outline
    signature: str
    body: str | None  # full source lines; None once demoted to signature-only
    docstring: str | None
    start_line: int
    end_line: int
    tokens: int  # tokens this symbol costs in the package as it stands
    reason: str = ""  # why it was included (provenance)
    rank: int | None = None  # its place in the symbol ranking, for a ranked primary
    score: float | None = None  # ... and its score: the budget cuts the lowest first
    whole_body: str | None = None  # a class holding primaries: its full source, shown instead when room is left
    members: tuple[SymbolContext, ...] = ()  # once shown whole: the symbols it replaced (their lines are in its body)


@dataclass(frozen=True)
class FileContext:
    file_id: int
    path: str
    language: str
    relevance_rank: int
    score: float
    added_by: str  # seed|score|deps|cochange
    symbols: tuple[SymbolContext, ...] = ()
    rationale_comments: tuple[str, ...] = ()
    test_assertions: tuple[str, ...] | None = None  # only for test files
    seed_reason: str = ""  # a seed: what named it (a file hint, a trace frame, a symbol hint, its type)


@dataclass(frozen=True, eq=False)
class BudgetCuts:
    """Where the budget's cut-to-fit loop left every budget item, the task text that fits, the real package size."""

    state: np.ndarray  # per budget item: 0 full, 1 body demoted to its signature, 2 evicted
    cut_at: np.ndarray  # per budget item: the step that cut it (-1: never cut, or brought back whole)
    task_text: str  # whole, or cut (marked) when it alone would break the budget
    task_truncated: bool
    tokens: int  # of the package's real markdown after the cuts
    widened: tuple[int, ...] = ()  # symbol_ids of the classes shown whole (their members inside), in order


@dataclass(frozen=True)
class BudgetPlan:
    """What survived the budget (files as they will be rendered) and the report explaining the cuts."""

    files: list[FileContext]
    task_text: str
    report: dict


@dataclass(frozen=True)
class CompanionNote:
    """A non-source file most of the repository's fixes also change (a changelog): a note and its latest entries."""

    path: str
    note: str
    latest: str


@dataclass(frozen=True)
class PinnedSection:
    """A markdown section the package carries at its top whatever the ranking says (guidance, memories): never
    evicted, counted inside the budget; `provenance` goes into the package's provenance under `name`."""

    name: str
    markdown: str
    provenance: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ContextPackage:
    task_query: TaskQuery
    files: tuple[FileContext, ...]
    dependency_edges: tuple[tuple[str, str], ...]
    token_count: int
    budget: int
    provenance: dict = field(default_factory=dict)
    companions: tuple[CompanionNote, ...] = ()
    pinned: tuple[PinnedSection, ...] = ()

    def to_json_dict(self) -> dict:
        """The JSON contract of `cra retrieve --format json` (names are a public interface; seed 001's names
        `task_query`, `file_id` and `symbol_id` stand beside ours)."""
        task = self.task_query.to_dict()
        return {
            "task": task,
            "task_query": task,
            "files": [
                {
                    "file_id": f.file_id,
                    "path": f.path,
                    "language": f.language,
                    "relevance_rank": f.relevance_rank,
                    "score": f.score,
                    "added_by": f.added_by,
                    "seed_reason": f.seed_reason,
                    "symbols": [
                        {
                            "symbol_id": s.symbol_id,
                            "file_id": s.file_id,
                            "name": s.name,
                            "qualified_name": s.qualified_name,
                            "kind": s.kind,
                            "relevance": s.relevance,
                            "signature": s.signature,
                            "body": s.body,
                            "docstring": s.docstring,
                            "start_line": s.start_line,
                            "end_line": s.end_line,
                            "tokens": s.tokens,
                        }
                        for s in f.symbols
                    ],
                    "rationale_comments": list(f.rationale_comments),
                    "test_assertions": None if f.test_assertions is None else list(f.test_assertions),
                }
                for f in self.files
            ],
            "dependency_edges": [list(e) for e in self.dependency_edges],
            "companions": [{"path": c.path, "note": c.note, "latest": c.latest} for c in self.companions],
            **({"pinned": [{"name": p.name, "markdown": p.markdown} for p in self.pinned]} if self.pinned else {}),
            "token_count": self.token_count,
            "budget": self.budget,
            "provenance": self.provenance,
        }
