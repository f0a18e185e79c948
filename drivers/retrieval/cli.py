"""`cra retrieve`: build the context package for a task (a command of `cra.drivers.cli.main`'s table). Imports stay
light until run: the retrieval dataflow loads only when a package is built."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.common.home import home_default
from cra.drivers.common.output import write_text_atomic


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `cra retrieve`."""
    parser.add_argument("task", nargs="?", help="task description, or - to read it from stdin")
    parser.add_argument("--task-file", help="read the task description from this file")
    parser.add_argument("--repo", default=".", help="repository root (default .)")
    parser.add_argument("--kb", help="KB directory (default REPO/.cra)")
    parser.add_argument(
        "--refresh",
        action=argparse.BooleanOptionalAction,
        help="re-index changed files first (default: only when the KB is older than a tree of at most "
        "2,000 files; larger ones get a warning)",
    )
    parser.add_argument(
        "--budget",
        type=_budget,
        default=32_768,
        help="token budget (default 32768), or auto: only the bodies scoring near the best (at most 8192)",
    )
    parser.add_argument(
        "--path",
        action="append",
        metavar="SUBTREE",
        help="rank only files under this folder or glob, relative to the repository root (repeatable; e.g. "
        "--path services/api --path 'libs/**/auth'); files the task names by path are kept",
    )
    parser.add_argument("--scope-size", type=int, default=75, help="files kept by score before expansion (default 75)")
    parser.add_argument("--format", choices=("markdown", "prompt", "json"), default="markdown")
    parser.add_argument("--template", help="prompt template file with {task} {context} {types} {tests}")
    parser.add_argument("--weights", help="TOML file of signal weights overriding the defaults")
    parser.add_argument(
        "--output",
        "-o",
        help="write the package to this file instead of stdout (missing folders are created; an existing file is replaced whole)",
    )
    parser.add_argument("--llm-assist", action="store_true", help="ask a local Ollama model when the task is too vague")
    parser.add_argument("--model", default="qwen2.5-coder:7b", help="Ollama model for --llm-assist")
    parser.add_argument(
        "--memories",
        action="store_true",
        help="put the stored memories that apply (preferences, corrections, project decisions, task rules) at the top",
    )
    parser.add_argument("--project", help="memory project (default: the repository's directory name)")
    parser.add_argument("--language", help="memory language (default: that of the top-ranked files)")
    parser.add_argument("--memory-dir", help=f"memory hierarchy root (default {home_default('memory')})")
    parser.add_argument("--task-id", help="escalation task: put its human guidance and failure context at the top")
    parser.add_argument("--db", help=f"escalation store for --task-id (default {home_default('escalations.db')})")
    parser.add_argument(
        "--reader",
        metavar="DIR",
        help="a code-reader model directory (research: `python -m cra.drivers.research.reader_model --export`) that "
        "reads the best files and functions against the task and re-orders them; none ships yet",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print signal, tier and budget tables to stderr")


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


def run(args) -> int:
    """Build the package for the task and write it to stdout or --output; warnings go to stderr."""
    from cra.drivers.index.freshness import fresh_kb, indexed_root
    from cra.drivers.kb.location import repo_dir
    from cra.drivers.kb.store import default_kb_dir
    from cra.drivers.retrieval.reader_files import read_reader
    from cra.drivers.retrieval.report import verbose_report
    from cra.drivers.retrieval.retriever import load_weights, retrieve

    task = _read_task(args)
    reader = read_reader(args.reader) if args.reader else None  # a bad directory is refused before any work
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
        path_scope=repo_relative(args.path, repo),
        reader=reader,
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


def repo_relative(paths: list[str] | None, repo: Path) -> list[str]:
    """--path values relative to the repository root: an absolute path inside it is made relative (one outside is
    left for the scope check to name)."""
    root, out = repo.resolve(), []
    for path in paths or ():
        inside = Path(path).is_absolute() and Path(path).resolve().is_relative_to(root)
        out.append(Path(path).resolve().relative_to(root).as_posix() if inside else path)
    return out


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
