"""`cra findings add|import|query`: keep past review findings and recall the ones like a pull request."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.common.home import home_default
from cra.drivers.findings.fields import DEFAULTS, SEVERITIES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommands and options of `cra findings`."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", help=f"findings store (default {home_default('findings.db')})")
    sub = parser.add_subparsers(dest="findings_command", required=True)

    p = sub.add_parser("add", parents=[common], help="store one finding")
    p.add_argument("text", help="what the finding says")
    p.add_argument("--repo", required=True, help="repository as OWNER/NAME")
    p.add_argument("--file", dest="file_path", help="the file it is about (default: none in particular)")
    p.add_argument("--severity", help=f"one of {', '.join(SEVERITIES)} (default {DEFAULTS['severity']})")
    p.add_argument("--category", help=f"e.g. correctness, security, performance (default {DEFAULTS['category']})")
    p.add_argument("--outcome", help=f"what became of it, e.g. accepted, dismissed (default {DEFAULTS['outcome']})")
    p.add_argument("--created-at", help="ISO 8601 time (default now)")

    p = sub.add_parser("import", parents=[common], help="store findings from a JSONL file (one finding a line)")
    p.add_argument(
        "file",
        help="JSONL: finding_text and repo (OWNER/NAME); severity, category, file_path, outcome and "
        "created_at optional, defaulted as by `cra findings add`",
    )

    p = sub.add_parser("query", parents=[common], help="the past findings most like a pull request, best first")
    p.add_argument("--title", required=True, help="pull request title")
    p.add_argument("--body", default="", help="pull request description")
    p.add_argument("--files", default="", help="changed files, comma-separated")
    p.add_argument("--repo", help="OWNER/NAME: only this repository's findings (default: the whole store)")
    p.add_argument("--share-owner", action="store_true", help="with --repo: every repository of the same owner")
    p.add_argument("--risk", action="append", default=[], help="a diff risk signal (repeatable; 3 used)")
    p.add_argument("--author-tier", help="first-time | regular | core")
    p.add_argument("--top-k", default="5", help="findings to retrieve (default 5)")
    p.add_argument("--max-distance", help="cosine distance threshold (default: the model's, 0.4 for the static model)")
    p.add_argument("--json", action="store_true", help='print {"query": ..., "findings": [...]}')


def _number(value: str, flag: str, kind=float, low: float = 0.0):
    try:
        number = kind(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number < low:
        raise CraError(f"{flag} {value!r} is not a number of at least {low:g}. Example: {flag} {kind(5)}.")
    return number


def _add(args) -> int:
    from cra.drivers.findings.review import add_findings, validate_finding

    raw = {
        "finding_text": args.text,
        "severity": args.severity,
        "category": args.category,
        "file_path": args.file_path,
        "outcome": args.outcome,
        "repo": args.repo,
        "created_at": args.created_at,
    }
    try:
        finding = validate_finding({k: v for k, v in raw.items() if v is not None}, datetime.now(UTC))
    except ValueError as exc:
        raise CraError(f"Cannot add the finding: {str(exc).rstrip('.')}.") from None
    added = add_findings([finding], args.db)
    print("added 1 finding" if added else "already stored (same repository, file and text)")
    return 0


def _import(args) -> int:
    from cra.drivers.findings.review import add_findings, validate_finding

    path = Path(args.file)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CraError(f"Cannot read {path} ({exc}). Pass a UTF-8 JSONL file of findings.") from None
    now, good, bad = datetime.now(UTC), [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            good.append(validate_finding(json.loads(line), now))
        except (ValueError, json.JSONDecodeError) as exc:
            bad.append(f"{path}:{number}: {exc}")
    added = add_findings(good, args.db) if good else 0
    print(f"imported {added} findings ({len(good) - added} already stored); rejected {len(bad)} lines")
    for line in bad:
        print(f"  {line}", file=sys.stderr)
    if bad and not good:
        raise CraError(
            f"No line of {path} is a finding. Each line is a JSON object with finding_text and repo "
            f"(OWNER/NAME), and optionally severity (one of {', '.join(SEVERITIES)}), category, file_path, "
            "outcome, created_at."
        )
    return 0


def _query(args) -> int:
    from cra.drivers.findings.review import recall_findings

    result = recall_findings(
        args.title,
        args.body,
        [f.strip() for f in args.files.split(",") if f.strip()],
        risk_signals=args.risk,
        author_tier=args.author_tier,
        repo=args.repo,
        sharing_enabled=args.share_owner,
        db_path=args.db,
        top_k=_number(args.top_k, "--top-k", int, 1),
        distance_threshold=None if args.max_distance is None else _number(args.max_distance, "--max-distance"),
    )
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(result.section or "No similar prior findings.")
    return 0


def run(args) -> int:
    """Run one `cra findings` subcommand."""
    return {"add": _add, "import": _import, "query": _query}[args.findings_command](args)
