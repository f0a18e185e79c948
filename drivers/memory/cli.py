"""`cra memory add|list|query|import`: keep and query scoped memories. Imports stay light until run."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.common.home import home_default

SCOPES = "universal | language:L | project:P | project:P:task:T"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommands and options of `cra memory`."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--memory-dir", help=f"memory hierarchy root (default {home_default('memory')})")
    sub = parser.add_subparsers(dest="memory_command", required=True)

    p = sub.add_parser("add", parents=[common], help="store a memory")
    p.add_argument("text", help="what to remember")
    p.add_argument("--scope", default="universal", help=f"{SCOPES} (default universal)")
    p.add_argument(
        "--category",
        help="e.g. preferences, corrections, decisions, rules (default: the kind its scope keeps; "
        "a singular is stored as the plural)",
    )
    p.add_argument("--confidence", default="1.0", help="0-1 (default 1.0)")

    p = sub.add_parser("list", parents=[common], help="list every stored memory")
    p.add_argument("--json", action="store_true", help="print a JSON list")

    p = sub.add_parser("query", parents=[common], help="the memories that apply to a context, best first, with reasons")
    p.add_argument("--project", help="project name")
    p.add_argument("--language", help="language name, e.g. python, go")
    p.add_argument("--task", help="task name within --project")
    p.add_argument("--text", help="task text: memories about it rank higher (BM25)")
    p.add_argument("--budget", help="token budget (cl100k) for the returned memories")
    p.add_argument("--category", help="only this category")
    p.add_argument("--min-confidence", default="0", help="only memories at least this confident (default 0)")
    p.add_argument("--limit", default="50", help="at most this many memories (default 50)")
    p.add_argument("--json", action="store_true", help="print the RetrievalResult as JSON")

    p = sub.add_parser("import", parents=[common], help="validate a memory hierarchy and merge it into the store")
    p.add_argument("source", help="root of the hierarchy to import")


def _number(value: str, flag: str, example: str, kind=float, low: float = 0.0, high: float | None = None):
    """The option's value as a number in [low, high]; a one-line CraError otherwise."""
    try:
        number = kind(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number < low or (high is not None and number > high):
        bounds = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
        what = "an integer" if kind is int else "a number"
        raise CraError(f"{flag} {value!r} is not {what} {bounds}. Example: {flag} {example}.")
    return number


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def _add(args, root: Path) -> int:
    from cra.drivers.memory.store import add_memory

    confidence = _number(args.confidence, "--confidence", "0.8", high=1.0)
    path, new = add_memory(root, args.text, args.scope, args.category, confidence, datetime.now(UTC))
    print(f"{'added to' if new else 'refreshed in'} {path}")
    return 0


def _list(args, root: Path) -> int:
    from cra.drivers.memory.store import read_memories

    read = read_memories(root)
    _warn(read.warnings)
    if args.json:
        print(json.dumps(read.memories, indent=2, ensure_ascii=False))
    elif not read.memories:
        print(f"no memories in {root}")
    for m in read.memories if not args.json else ():
        print(
            f"{m['scope']}\t{m['category']}\t{m['confidence']:.2f}\t{m['timestamp']}\t{' '.join(m['content'].split())}"
        )
    return 0


def _query(args, root: Path) -> int:
    from cra.dataflows.memory.models import MemoryQuery
    from cra.drivers.memory.memories import query_memories
    from cra.drivers.memory.store import canonical_category

    query = MemoryQuery(
        category=canonical_category(args.category) if args.category else None,
        max_results=_number(args.limit, "--limit", "20", int, 1),
        min_confidence=_number(args.min_confidence, "--min-confidence", "0.8", high=1.0),
    )
    budget = None if args.budget is None else _number(args.budget, "--budget", "1500", int)
    result, warnings = query_memories(
        root,
        query,
        project=args.project,
        language=args.language,
        task=args.task,
        task_text=args.text,
        budget=budget,
        now=datetime.now(UTC),
    )
    _warn(warnings)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return 0
    for m in result.memories:
        print(f"{m.relevance_score:.3f}  [{m.scope}] {' '.join(m.content.split())}  ({m.reason})")
    print(f"{result.total_returned} of {result.total_found} applicable memories, {result.token_estimate} tokens")
    return 0


def _import(args, root: Path) -> int:
    from cra.drivers.memory.store import import_hierarchy

    report = import_hierarchy(Path(args.source), root)
    print(
        f"imported {report['added']} memories ({report['updated']} already there: kept the newer copy) into {root}; "
        f"rejected {len(report['rejected'])}"
    )
    for line in report["rejected"]:
        print(f"  {line}")
    return 0


def run(args) -> int:
    """Run one `cra memory` subcommand."""
    from cra.drivers.memory.store import memory_root

    root = memory_root(args.memory_dir)
    commands = {"add": _add, "list": _list, "query": _query, "import": _import}
    return commands[args.memory_command](args, root)
