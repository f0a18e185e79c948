"""`cra` command line: index and retrieve here, the other commands in their own modules (MODULE_COMMANDS).
User errors print one line and exit 2; a bug in cra prints one line and exits 1."""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import logging
import os
import signal
import sys
import traceback
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.common.home import home_default
from cra.drivers.common.output import write_text_atomic


def _index(args) -> int:
    if args.exiting:  # an index run pauses the collector; switched on again, it would first sweep every object
        gc.disable()  # the run left (45 ms after a one-file re-index of Django), just before the process exits
    os.environ.setdefault(
        "ARROW_DEFAULT_MEMORY_POOL", "system"
    )  # before Arrow loads: see index_memory._arrow_from_malloc
    from cra.drivers.common.interrupts import Interrupted, exit_code_of, terminate_as_interrupt
    from cra.drivers.common.progress import Progress, progress_shown
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.kb.location import default_kb_dir
    from cra.drivers.kb.resume import resumable_batches

    if args.workers is not None and args.workers < 1:
        raise CraError(f"--workers must be at least 1 (got {args.workers}).")
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
    for warning in stats.get("warnings", []):
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
        + (f" in {stats['workers']} processes" if stats.get("workers", 1) > 1 else "")
        + f", reused {stats.get('n_reused', 0)} unchanged; "
        f"{stats.get('n_symbols', 0)} symbols, {stats.get('n_edges', 0)} import edges, "
        f"{stats.get('n_symbol_edges', 0)} symbol edges",
        "  history: "
        + (f"{stats.get('n_commits', 0)} commits" if stats.get("history_available") else "none read (see the warning)"),
        f"  skipped: {', '.join(skip_parts) if skip_parts else 'nothing'}; {stats.get('n_ignored', 0)} ignored "
        "(.gitignore rules, caches, vendored installs)",
    ]
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


def _read_task(args) -> str:
    """The task text (argument, --task-file or stdin) as UTF-8, undecodable bytes replaced: pasted text is often unclean."""
    if args.task_file:
        source = f"task file {args.task_file}"
        try:
            data = Path(args.task_file).read_bytes()
        except OSError as exc:
            raise CraError(f"Cannot read task file {args.task_file} ({exc.strerror}). Check the path.") from None
    elif args.task == "-" or args.task is None and not sys.stdin.isatty():
        source = "standard input"
        stdin = getattr(sys.stdin, "buffer", None)  # bytes when it is a real stream; a text stand-in otherwise
        data = stdin.read() if stdin is not None else sys.stdin.read().encode("utf-8", "surrogatepass")
    elif args.task is None:
        raise CraError(
            'No task given. Pass it as an argument (cra retrieve "fix ..."), with --task-file F, or `-` for stdin.'
        )
    else:  # argv bytes that are not UTF-8 arrive as lone surrogates
        source, data = "task argument", args.task.encode("utf-8", "surrogatepass")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        print(f"warning: {source} is not valid UTF-8; undecodable bytes were replaced", file=sys.stderr)
        return data.decode("utf-8", errors="replace")


def _retrieve(args) -> int:
    from cra.drivers.index.freshness import fresh_kb, indexed_root
    from cra.drivers.kb.location import repo_dir
    from cra.drivers.kb.store import default_kb_dir
    from cra.drivers.retrieval.report import verbose_report
    from cra.drivers.retrieval.retriever import load_weights, retrieve

    task = _read_task(args)
    repo = repo_dir(Path(args.repo))
    kb_dir = Path(args.kb) if args.kb else default_kb_dir(repo)
    tree = repo if args.kb is None or args.repo != "." else indexed_root(kb_dir) or repo  # (--kb alone: its tree)
    kb = fresh_kb(tree, kb_dir, args.refresh, lambda message: print(f"warning: {message}", file=sys.stderr))
    template = None
    if args.template:
        try:
            template = Path(args.template).read_text()
        except OSError as exc:
            raise CraError(f"Cannot read template {args.template} ({exc.strerror}). Check the path.") from None
        if "{task}" not in template or "{context}" not in template:
            raise CraError(
                f"Template {args.template} lacks {{task}} or {{context}}: the task or the code would be "
                "dropped. Put both placeholders in it ({types} and {tests} are optional)."
            )
    llm_client = None
    if args.llm_assist:
        from cra.drivers.common.llm import ollama_client

        llm_client = ollama_client(args.model)
    result = retrieve(
        kb,
        task,
        budget=args.budget,
        scope_size=args.scope_size,
        weights=load_weights(Path(args.weights)) if args.weights else None,
        llm_assist=args.llm_assist,
        llm_client=llm_client,
        prompt_template=template,
        outputs=(f"{args.format}_text", "symbol_tiers", "budget_report", "symbol_ranking", "symbol_weights"),
        pinned_sections=_pinned(args, repo, kb, task),
    )
    if args.verbose:
        print(verbose_report(result), file=sys.stderr)
    provenance = result.package.provenance
    for warning in dict.fromkeys(
        [*provenance.get("warnings", []), *provenance.get("memories", {}).get("warnings", [])]
    ):
        print(f"warning: {warning}", file=sys.stderr)
    text = result.outputs[f"{args.format}_text"]
    if args.output:
        write_text_atomic(Path(args.output), text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _budget(text: str) -> int | str:
    """A --budget value: a token count, or 'auto'."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a token count; pass a number such as 8192, or auto"
        ) from None


def _pinned(args, repo: Path, kb, task: str):
    """The sections `--task-id` (guidance, failure context) and `--memories` put at the top of the package."""
    from cra.drivers.retrieval import pinned

    guidance = pinned.guidance_section(Path(args.db) if args.db else None, args.task_id) if args.task_id else None
    memories = None
    if args.memories:
        project = args.project or pinned.default_project(repo)
        memories = pinned.memory_section_for(
            Path(args.memory_dir) if args.memory_dir else None,
            project,
            args.language,
            task,
            _budget_tokens(args.budget),
            kb.files,
        )
    return pinned.pinned_sections(guidance, memories)


def _budget_tokens(budget: int | str) -> int:
    from cra.drivers.retrieval.retriever import AUTO_BUDGET_CAP

    return AUTO_BUDGET_CAP if budget == "auto" else int(budget)


def _enrich(args) -> int:
    from cra.drivers.index.enrich import enrich
    from cra.drivers.kb.location import repo_dir

    result = enrich(
        repo_dir(Path(args.path), "Repository"),
        Path(args.kb) if args.kb else None,
        args.model,
        args.limit,
        args.host,
        args.verbose,
    )
    print(
        f"enriched {result['labelled']} files with {result['model']} ({result['rejected']} answers rejected as malformed)"
    )
    return 0


# commands that live in their own modules (each with add_arguments(parser) and run(args)): name -> (module, help)
MODULE_COMMANDS = {
    "evaluate": ("cra.drivers.evaluation.evaluate", "measure retrieval quality over a case file"),
    "memory": ("cra.drivers.memory.cli", "keep and query scoped memories (preferences, corrections, decisions, rules)"),
    "serve": ("cra.drivers.serve.server", "serve warm knowledge bases to coding agents over MCP (stdio or HTTP)"),
    "dag": ("cra.drivers.cli.dag", "draw the index, retrieval and evaluation DAGs as SVG (needs Graphviz)"),
    "findings": ("cra.drivers.findings.cli", "keep past review findings and recall the ones like a pull request"),
    "diagnose": (
        "cra.drivers.diagnostics.cli",
        "after a failed attempt: decide whether its error report is too thin, then gather logs, docs and memories",
    ),
}


def _version() -> str:
    """The installed distribution's version (`cra --version`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cra-engine")
    except PackageNotFoundError:
        return "(not installed: run from a source tree)"


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The `cra` parser; of the MODULE_COMMANDS, only the one named in argv is imported and given its options."""
    chosen = next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), None)
    parser = argparse.ArgumentParser(prog="cra", description="Context engine for coding agents.")
    parser.add_argument("--version", action="version", version=f"cra {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="index a repository into its knowledge base")
    p.add_argument("path", help="repository root")
    p.add_argument("--kb", help="KB directory (default PATH/.cra)")
    p.add_argument("--history", type=int, default=2000, help="commits of git history to read (default 2000)")
    p.add_argument("--max-file-bytes", type=int, default=1_000_000, help="skip larger files (default 1 MB)")
    p.add_argument("--workers", type=int, help="processes for parsing (default: one per core when 600+ files changed)")
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="parse every file again and write a fresh knowledge base (a damaged one is rebuilt without it)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show progress also where stderr is not a terminal (on one, it is shown anyway)",
    )
    p.set_defaults(run=_index)

    p = sub.add_parser("retrieve", help="build the context package for a task")
    p.add_argument("task", nargs="?", help="task description, or - to read it from stdin")
    p.add_argument("--task-file", help="read the task description from this file")
    p.add_argument("--repo", default=".", help="repository root (default .)")
    p.add_argument("--kb", help="KB directory (default REPO/.cra)")
    p.add_argument(
        "--refresh",
        action=argparse.BooleanOptionalAction,
        help="re-index changed files first (default: only when the KB is older than a tree of at most "
        "2,000 files; larger ones get a warning)",
    )
    p.add_argument(
        "--budget",
        type=_budget,
        default=32_768,
        help="token budget (default 32768), or auto: only the bodies scoring near the best (at most 8192)",
    )
    p.add_argument("--scope-size", type=int, default=75, help="files kept by score before expansion (default 75)")
    p.add_argument("--format", choices=("markdown", "prompt", "json"), default="markdown")
    p.add_argument("--template", help="prompt template file with {task} {context} {types} {tests}")
    p.add_argument("--weights", help="TOML file of signal weights overriding the defaults")
    p.add_argument(
        "--output",
        "-o",
        help="write the package to this file instead of stdout (missing folders are created; an existing file is replaced whole)",
    )
    p.add_argument("--llm-assist", action="store_true", help="ask a local Ollama model when the task is too vague")
    p.add_argument("--model", default="qwen2.5-coder:7b", help="Ollama model for --llm-assist")
    p.add_argument(
        "--memories",
        action="store_true",
        help="put the stored memories that apply (preferences, corrections, project decisions, task rules) at the top",
    )
    p.add_argument("--project", help="memory project (default: the repository's directory name)")
    p.add_argument("--language", help="memory language (default: that of the top-ranked files)")
    p.add_argument("--memory-dir", help=f"memory hierarchy root (default {home_default('memory')})")
    p.add_argument("--task-id", help="escalation task: put its human guidance and failure context at the top")
    p.add_argument("--db", help=f"escalation store for --task-id (default {home_default('escalations.db')})")
    p.add_argument("-v", "--verbose", action="store_true", help="print signal, tier and budget tables to stderr")
    p.set_defaults(run=_retrieve)

    p = sub.add_parser("enrich", help="label files' domain and concepts with a local Ollama model (optional)")
    p.add_argument("path", nargs="?", default=".", help="repository root (default .)")
    p.add_argument("--model", required=True, help="Ollama model name, e.g. qwen2.5-coder:7b")
    p.add_argument("--kb", help="KB directory (default PATH/.cra)")
    p.add_argument("--limit", type=int, help="label at most N files")
    p.add_argument("--host", help="Ollama address (default OLLAMA_HOST or 127.0.0.1:11434)")
    p.add_argument("-v", "--verbose", action="store_true", help="show progress")
    p.set_defaults(run=_enrich)

    for name, (module_name, help_text) in MODULE_COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        if name == chosen:  # only the command that runs pays for its imports
            command = importlib.import_module(module_name)
            command.add_arguments(p)
            p.set_defaults(run=command.run)

    from cra.drivers.escalation import cli as escalation_cli

    escalation_cli.add_commands(sub)
    return parser


def main(argv: list[str] | None = None, exiting: bool = False) -> int:
    """Run one command; exiting: the process ends as soon as this returns (the installed `cra`)."""
    args = build_parser(argv).parse_args(argv)
    args.exiting = exiting
    logging.getLogger("hamilton").addHandler(logging.NullHandler())  # failures reach the user as one CraError line
    try:
        return args.run(args)
    except CraError as exc:
        if os.environ.get("CRA_DEBUG"):
            traceback.print_exc()
        print(f"cra: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug in cra, not the user's doing: one line, the traceback on request
        if os.environ.get("CRA_DEBUG"):
            traceback.print_exc()
        message = " ".join(str(exc).split())[:300] or "(no message)"
        print(
            f"cra: internal error: {type(exc).__name__}: {message}. This is a bug in cra; "
            "run again with CRA_DEBUG=1 and report the traceback it prints.",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print("cra: interrupted; nothing was changed", file=sys.stderr)
        return 130


def command(argv: list[str] | None = None) -> None:
    """The installed `cra`: main(), its output flushed, then an immediate exit. Python's own shutdown frees every
    object one at a time: after a one-file re-index of Django the loaded KB's took 0.15-0.2 s of a 1.9 s command.
    Whatever a command writes is closed (and renamed into place) before main returns, so nothing is lost."""
    code = main(argv, exiting=True)
    with contextlib.suppress(BrokenPipeError):  # `cra ... | head`: the reader has gone, nothing is left to say
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(int(code or 0))


if __name__ == "__main__":
    command()
