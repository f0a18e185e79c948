"""Pinned sections: what goes at the top of a package whatever the code ranking says (human guidance and failure
context of a retried task, the agent's memories). They are never evicted: the code gets the budget they leave."""

from __future__ import annotations

from collections.abc import Callable

from cra.dataflows.retrieval.markdown import pinned_markdown

BOUNDARY_TOKENS = 2  # a pinned block and the package after it are counted apart: room for tokens merging at the seam


def pinned_tokens(count_tokens: Callable, pinned_sections: tuple = ()) -> int:
    """Tokens the pinned sections take at the top of the package (0 without any)."""
    text = pinned_markdown(pinned_sections)
    return count_tokens(text) + BOUNDARY_TOKENS if text else 0


def code_budget(budget: int, pinned_tokens: int) -> int:
    """The budget left for the task and the code once the pinned sections are in (never below zero)."""
    return max(0, int(budget) - int(pinned_tokens))
