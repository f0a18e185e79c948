"""`cra diagnose`: escalation triggers on a handoff bundle, then bounded deep retrieval.

Prints the retrieval bundle (JSON, entries and stats plus `escalate` and `triggers`; or markdown). Exit 0 whenever
the inputs are usable, escalating or not; 2 with one line when they are not (no such bundle file or directory,
bundle not JSON or not an object, bad phase id or attempt). A null or empty bundle is an empty bundle (a warning).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.common.home import home_default

FORMATS = ("json", "markdown")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """`cra diagnose` options."""
    p.add_argument(
        "--bundle",
        required=True,
        help="JSON file of what the failed attempt reported (error_message, stack_trace, root_cause, recent_changes, ...), or - for stdin",
    )
    p.add_argument("--run-dir", required=True, help="the run's directory (artifacts, <phase-id>_attempt_<n>.log)")
    p.add_argument(
        "--repo", default=".", help="repository root: docs/, src/, tests/ are the source of truth (default .)"
    )
    p.add_argument("--phase-id", required=True, help="phase being diagnosed, e.g. phase_001")
    p.add_argument("--attempt", required=True, help="its attempt number (1 for the first)")
    p.add_argument("--force", action="store_true", help="retrieve even when no trigger fires")
    p.add_argument("--format", choices=FORMATS, default="json", help="json (default) or markdown")
    p.add_argument(
        "--adaptive-caps", action="store_true", help="scale the caps by priority (larger when high, smaller when low)"
    )
    p.add_argument("--kb", help="KB directory to rank SOT files with (default REPO/.cra; none: keyword counts)")
    p.add_argument("--memory-dir", help=f"memory hierarchy root (default {home_default('memory')})")
    p.add_argument(
        "--db", help=f"escalation store for similar past failures (default {home_default('escalations.db')})"
    )
    p.add_argument("--project", help="memory project (default the repository's directory name)")
    p.add_argument("--language", help="memory language, e.g. python")


def read_bundle(source: str) -> tuple[object, list[str]]:
    """The handoff bundle from a file or stdin (`-`): a dict, or None when it is null or empty; and warnings."""
    name = "standard input" if source == "-" else f"handoff bundle {source}"
    if source == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        data = stdin.read() if stdin is not None else sys.stdin.read().encode("utf-8")
    else:
        try:
            data = Path(source).read_bytes()
        except IsADirectoryError:
            raise CraError(f"Handoff bundle {source} is a directory. Pass the JSON file the harness wrote.") from None
        except OSError as exc:
            raise CraError(
                f"Cannot read handoff bundle {source} ({exc.strerror or exc}). Pass the JSON file the "
                "harness wrote, or - to read it from stdin."
            ) from None
    warnings = []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        warnings.append(f"{name} is not valid UTF-8; undecodable bytes were replaced")
    if not text.strip():
        return None, warnings + [f"{name} is empty; diagnosed as an empty bundle"]
    try:
        bundle = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CraError(
            f"The {name} is not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg}). Fix it, or "
            "pass {} for an empty bundle."
        ) from None
    if bundle is None:
        return None, warnings + [f"{name} is null; diagnosed as an empty bundle"]
    if not isinstance(bundle, dict):
        raise CraError(
            f"The {name} is a JSON {type(bundle).__name__}, not an object with error_message, "
            "stack_trace, root_cause and recent_changes. Pass the bundle object."
        )
    return bundle, warnings


def run(args) -> int:
    """Diagnose one attempt and print the bundle."""
    from cra.drivers.diagnostics.diagnose import diagnose

    try:
        attempt = int(args.attempt)
    except ValueError:
        raise CraError(
            f"--attempt {args.attempt!r} is not a whole number. Pass the attempt being diagnosed, e.g. --attempt 2."
        ) from None
    bundle, warnings = read_bundle(args.bundle)
    node = f"bundle_{args.format}"
    result = diagnose(
        bundle,
        args.run_dir,
        args.repo,
        args.phase_id,
        attempt,
        now=datetime.now(UTC),
        force=args.force,
        adaptive_caps=args.adaptive_caps,
        memory_dir=args.memory_dir,
        db=args.db,
        kb_dir=args.kb,
        project=args.project,
        language=args.language,
        outputs=(node,),
    )
    for warning in warnings + list(result.warnings):
        print(f"warning: {warning}", file=sys.stderr)
    sys.stdout.write(result.outputs[node])
    return 0
