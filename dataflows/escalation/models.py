"""Typed results of guided escalation: one attempt, a similar past failure, the escalation report."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class RetryAttempt:
    """One failed attempt at a task, as the harness recorded it."""

    attempt_number: int
    timestamp: str  # ISO 8601, UTC
    error_message: str
    agent_id: str
    error_type: str  # network|authentication|validation|resource|logic|unknown, or a user category
    context_snapshot: str | None = None


@dataclass(frozen=True)
class SimilarFailure:
    """An earlier escalated task whose errors look like this one's, and the guidance it was given."""

    task_id: str
    title: str
    error_category: str
    failure_pattern: str
    error_message: str  # its most recent error
    similarity: float  # BM25 score relative to the new task's own messages, 0-1
    status: str  # its status now (done = the guidance resolved it)
    resolution: str | None  # its latest human guidance, None when nobody guided it yet


@dataclass(frozen=True)
class EscalationReport:
    """What a person needs to guide a task that failed too often: history, hypothesis, interventions."""

    task_id: str
    original_title: str
    total_attempts: int
    attempt_history: tuple[RetryAttempt, ...]
    root_cause_hypothesis: str
    suggested_interventions: tuple[str, ...]
    failure_pattern: str  # single_failure|consistent|intermittent_network|varied
    error_category: str  # the most frequent category (ties: the latest)
    similar_failures: tuple[SimilarFailure, ...] = ()
    human_guidance: str | None = None

    def to_dict(self) -> dict:
        """JSON-ready form: tuples as lists, attempts and similar failures as objects."""
        d = asdict(self)
        d["attempt_history"] = [dict(a) for a in d["attempt_history"]]
        d["suggested_interventions"] = list(self.suggested_interventions)
        d["similar_failures"] = [dict(s) for s in d["similar_failures"]]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> EscalationReport:
        """Inverse of to_dict (a stored report read back)."""
        return cls(
            **{
                **d,
                "attempt_history": tuple(RetryAttempt(**a) for a in d["attempt_history"]),
                "suggested_interventions": tuple(d["suggested_interventions"]),
                "similar_failures": tuple(SimilarFailure(**s) for s in d.get("similar_failures", ())),
            }
        )
