"""`cra index`: index a repository into its knowledge base (a command of `cra.drivers.cli.main`'s table).
Imports stay light until run."""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
from pathlib import Path

from cra.drivers.common.errors import CraError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `cra index`."""
    parser.add_argument("path", help="repository root")
    parser.add_argument("--kb", help="KB directory (default PATH/.cra)")
    parser.add_argument("--history", type=int, default=2000, help="commits of git history to read (default 2000)")
    parser.add_argument("--max-file-bytes", type=int, default=1_000_000, help="skip larger files (default 1 MB)")
    parser.add_argument(
        "--workers", type=int, help="processes for parsing (default: one per core when 600+ files changed)"
    )
    parser.add_argument(
        "--engine",
        choices=["local", "dask", "ray"],
        default="local",
        help="where files are parsed: this machine (default), a Dask or a Ray cluster (see --address)",
    )
    parser.add_argument(
        "--address",
        help="the cluster's scheduler, e.g. tcp://HOST:8786 for Dask (default: a local cluster started for the run)",
    )
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="parse every file again and write a fresh knowledge base (a damaged one is rebuilt without it)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show progress also where stderr is not a terminal (on one, it is shown anyway)",
    )


def run(args) -> int:
    """Index (or re-index) the repository; print what the KB holds and what was left out."""
    if args.exiting:  # an index run pauses the collector; switched on again, it would first sweep every object
        gc.disable()  # the run left (45 ms after a one-file re-index of Django), just before the process exits
    os.environ.setdefault(
        "ARROW_DEFAULT_MEMORY_POOL", "system"
    )  # before Arrow loads: see index_memory._arrow_from_malloc
    from cra.drivers.common.interrupts import Interrupted, exit_code_of, terminate_as_interrupt
    from cra.drivers.common.progress import Progress, progress_shown
    from cra.drivers.index.engines import engine_of
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.kb.location import default_kb_dir
    from cra.drivers.kb.resume import resumable_batches

    if args.workers is not None and args.workers < 1:
        raise CraError(f"--workers must be at least 1 (got {args.workers}).")
    engine = engine_of(args.engine, args.address, args.workers)
    progress = (
        Progress("parsing", unit="files", enabled=True, stage_label="indexing")
        if progress_shown(args.verbose)
        else None
    )

    def waiting() -> None:
        print("cra: another `cra index` is writing this knowledge base; waiting for it to finish", file=sys.stderr)

    try:
        with terminate_as_interrupt():  # SIGTERM (timeout, CI, schedulers) stops the run as Ctrl-C does
            stats = index_repository(
                Path(args.path),
                Path(args.kb) if args.kb else None,
                history=args.history,
                max_file_bytes=args.max_file_bytes,
                workers=args.workers,
                on_wait=waiting,
                on_progress=progress,
                rebuild=args.rebuild,
                engine=engine if engine.remote else None,
            )
    except KeyboardInterrupt as exc:
        if progress:
            progress.close()
        kept = resumable_batches(Path(args.kb) if args.kb else default_kb_dir(Path(args.path)))
        resume = f"; {kept} parsed batches are kept: run `cra index` again to resume" if kept else ""
        by = f" by {exc.args[0]}" if isinstance(exc, Interrupted) and exc.signum != signal.SIGINT else ""
        print(f"cra: interrupted{by}; the knowledge base was left as it was{resume}", file=sys.stderr)
        return exit_code_of(exc)
    finally:
        if progress:
            progress.close()
    print(index_summary(stats))
    for warning in [*stats.get("warnings", []), *stats.get("parser_warnings", [])]:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def index_summary(stats: dict) -> str:
    """The end-of-run summary of `cra index`: what is in the KB and what was left out."""
    langs = ", ".join(
        f"{lang} {n}" for lang, n in sorted(stats.get("files_by_language", {}).items(), key=lambda kv: -kv[1])
    )
    skipped = stats.get("skipped", {})
    skip_parts = [f"{len(v)} {k}" for k, v in skipped.items() if v]
    if stats.get("oversized"):
        skip_parts.append(f"{len(stats['oversized'])} oversized")
    if stats.get("unreadable"):
        skip_parts.append(f"{len(stats['unreadable'])} unreadable")
    lines = [
        f"indexed {stats.get('n_files', 0)} files ({langs or 'none'}) into {stats.get('kb_dir')}",
        f"  parsed {stats.get('n_parsed', 0)}"
        + (
            f" on {stats['parsed_on']}"
            if stats.get("parsed_on")
            else (f" in {stats['workers']} processes" if stats.get("workers", 1) > 1 else "")
        )
        + f", reused {stats.get('n_reused', 0)} unchanged; "
        f"{stats.get('n_symbols', 0)} symbols, {stats.get('n_edges', 0)} import edges, "
        f"{stats.get('n_symbol_edges', 0)} symbol edges",
        "  history: "
        + (f"{stats.get('n_commits', 0)} commits" if stats.get("history_available") else "none read (see the warning)"),
        f"  skipped: {', '.join(skip_parts) if skip_parts else 'nothing'}; {stats.get('n_ignored', 0)} ignored "
        "(.gitignore rules, caches, vendored installs)",
    ]
    carried = [name.replace("_", " ") for name in stats.get("carried", []) if name != "symbol_ids"]
    if carried:  # (`cra.dataflows.index.unchanged`)
        lines.append(f"  not rebuilt, the edit left them as they were: {', '.join(carried)}")
    if stats.get("n_config_excluded"):
        examples = ", ".join(stats.get("config_excluded_examples", []))
        lines.append(f"  left out by .cra.toml (include/exclude): {stats['n_config_excluded']} files, e.g. {examples}")
    errors = stats.get("parse_errors") or []
    if errors:
        first = "; ".join(f"{p}: {e}" for p, e in errors[:3])
        lines.append(
            f"  parse errors in {len(errors)} files (indexed with what parsed; Python ones without symbols): {first}"
        )
    for note in stats.get("notes", []):
        lines.append(f"  note: {note}")
    if not stats.get("tokens_exact", True):
        from cra.drivers.common.tokens import FALLBACK_NOTE

        lines.append(f"  note: {FALLBACK_NOTE}")
    lines.append(f"  {stats.get('seconds', 0):.2f} s")
    return "\n".join(lines)
