"""Rendering of the context package: markdown, model prompt and JSON views of one package.

The package is data; these nodes only format it (with `markdown.package_markdown`, which the budget stage also
measures, so the token count it enforces is the token count of exactly this text).
"""

from __future__ import annotations

import json
import re

from cra.dataflows.retrieval.markdown import package_markdown, pinned_markdown, sections
from cra.dataflows.retrieval.models import ContextPackage

DEFAULT_PROMPT_TEMPLATE = """You are a coding agent working in an existing repository. Complete the task below using the context \
selected for it: the code that matters, the types it uses and the tests that pin its behaviour.

# Task
{task}

# Relevant code
{context}

# Type definitions
{types}

# Test expectations
{tests}

Make the smallest change that completes the task, keep the expectations above passing, and say which files you changed.
"""

_PLACEHOLDER = re.compile(r"\{(task|context|types|tests)\}")
_NONE = "(none)"


def markdown_text(context_package: ContextPackage) -> str:
    """The package as markdown (Task, Primary Context, Type Context, Test Expectations, Dependency Map)."""
    package = context_package
    return package_markdown(
        package.task_query.raw_description, package.files, package.dependency_edges, package.companions, package.pinned
    )


def prompt_text(context_package: ContextPackage, prompt_template: str) -> str:
    """The package poured into the model prompt template ({task}, {context}, {types}, {tests} placeholders)."""
    parts = sections(context_package.files, context_package.dependency_edges)
    values = {
        "task": context_package.task_query.raw_description,
        "context": "\n\n".join(p for p in (parts["context"], parts["dependency_map"]) if p) or _NONE,
        "types": parts["types"] or _NONE,
        "tests": parts["tests"] or _NONE,
    }
    prompt = _PLACEHOLDER.sub(lambda m: values[m.group(1)], prompt_template)
    top = pinned_markdown(context_package.pinned)  # guidance and memories open the prompt as they open the package
    return f"{top}\n{prompt}" if top else prompt


def json_text(context_package: ContextPackage) -> str:
    """The package in the JSON contract of `cra retrieve --format json` (ContextPackage.to_json_dict)."""
    return json.dumps(context_package.to_json_dict(), indent=2, default=_plain)


def _plain(value):
    """JSON fallback for numpy scalars and other non-JSON values that reach provenance."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
