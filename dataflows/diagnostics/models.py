"""Typed results of diagnostics: the normalised handoff bundle, one trigger's verdict, the caps, the
entries of each retrieval category and the retrieval bundle with its JSON shape."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Handoff:
    """The handoff bundle's fields as text, whatever types the harness wrote (None and junk become empty)."""

    error_message: str
    stack_trace: str
    root_cause: str
    recent_changes: tuple[str, ...]
    empty: bool  # no bundle, or a bundle without keys


@dataclass(frozen=True)
class TriggerResult:
    """One escalation trigger: whether it fired and why (in words a person can check against the bundle)."""

    name: str
    fired: bool
    reason: str


@dataclass(frozen=True)
class Caps:
    """One category's limits: at most this many entries and this many bytes of content in all."""

    max_files: int
    max_bytes: int


@dataclass(frozen=True)
class RetrievalCaps:
    """The limits of the three categories."""

    run_artifacts: Caps
    sot_files: Caps
    memory_entries: Caps


@dataclass(frozen=True)
class ArtifactEntry:
    """A run-local file (path relative to the run directory), its content as retrieved, its bytes, its mtime."""

    path: str
    content: str
    size: int
    modified: str  # ISO 8601, UTC, "Z"


@dataclass(frozen=True)
class SotEntry:
    """A source-of-truth file (path relative to the repository), its content, its bytes, how relevant it ranked."""

    path: str
    content: str
    size: int
    relevance_score: float  # keyword matches (an integer), or the KB's lexical + symbol signals


@dataclass(frozen=True)
class MemoryEntry:
    """A scoped memory or a similar past failure with its resolution; fields that do not apply are None."""

    source: str  # memory | past_failure
    content: str
    size: int
    relevance_score: float
    scope: str | None = None
    category: str | None = None
    phase_id: str | None = None  # past failure: its task id
    error_pattern: str | None = None
    resolution: str | None = None
    similarity_score: float | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class RetrievalBundle:
    """Deep retrieval's answer: the retrieval bundle plus whether to escalate and every trigger's verdict."""

    phase_id: str
    timestamp: str
    priority: str  # high | medium | low
    escalate: bool
    triggers: tuple[TriggerResult, ...]
    run_artifacts: tuple[ArtifactEntry, ...]
    sot_files: tuple[SotEntry, ...]
    memory_entries: tuple[MemoryEntry, ...]
    sot_ranking: str  # kb | keywords | keywords (why the KB's ranking was not used)

    def to_dict(self) -> dict:
        """The bundle as JSON (entries and stats), with escalate, triggers and stats.sot_ranking added."""

        def size(entries) -> int:
            return sum(e.size for e in entries)

        return {
            "phase_id": self.phase_id,
            "timestamp": self.timestamp,
            "priority": self.priority,
            "escalate": self.escalate,
            "triggers": [asdict(t) for t in self.triggers],
            "run_artifacts": [asdict(e) for e in self.run_artifacts],
            "sot_files": [asdict(e) for e in self.sot_files],
            "memory_entries": [e.to_dict() for e in self.memory_entries],
            "stats": {
                "run_artifacts_count": len(self.run_artifacts),
                "run_artifacts_size": size(self.run_artifacts),
                "sot_files_count": len(self.sot_files),
                "sot_files_size": size(self.sot_files),
                "memory_entries_count": len(self.memory_entries),
                "memory_entries_size": size(self.memory_entries),
                "sot_ranking": self.sot_ranking,
            },
        }
