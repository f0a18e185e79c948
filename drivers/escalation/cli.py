"""`cra attempt`, `cra retry --all`, `cra report`, `cra guide`: the guided-escalation commands (four entries of
`cra.drivers.cli.main`'s command table, one object each). Imports stay light until run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from cra.drivers.common.errors import CraError
from cra.drivers.common.home import home_default


def _db(args) -> Path | None:
    return Path(args.db) if args.db else None


def _attempt(args) -> int:
    from cra.drivers.escalation import attempts as escalation

    if args.done:
        if args.error is not None:
            raise CraError("Pass either --error TEXT (the attempt failed) or --done (it succeeded), not both.")
        escalation.mark_done(_db(args), args.task_id)
        print(f"task {args.task_id} done")
        return 0
    if args.error is None:
        raise CraError(f"Say what went wrong: cra attempt {args.task_id} --error TEXT (or --done when it succeeded).")
    context = None
    if args.context_file:
        try:
            context = Path(args.context_file).read_text(errors="replace")
        except OSError as exc:
            raise CraError(
                f"Cannot read context file {args.context_file} ({exc.strerror or exc}). Check the path."
            ) from None
    table = escalation.load_category_table(Path(args.categories) if args.categories else None)
    outcome = escalation.record_attempt(
        _db(args),
        args.task_id,
        args.error,
        agent=args.agent,
        title=args.title,
        max_retries=args.max_retries,
        context=context,
        user_table=table,
    )
    print(
        f"recorded attempt {outcome.attempt_number} of task {outcome.task_id} ({outcome.error_type}); "
        f"retry {outcome.retry_count} of {outcome.max_retries}"
    )
    if outcome.report_id is not None:
        from cra.drivers.escalation.store import default_db_path

        where = args.db or default_db_path()
        print(
            f"task {outcome.task_id} escalated: report {outcome.report_id} is in {where}; "
            f"read it with `cra report {outcome.task_id}`" + (f" --db {args.db}" if args.db else "")
        )
    return 0


def _retry(args) -> int:
    from cra.drivers.escalation import attempts as escalation

    tasks = escalation.failing_tasks(_db(args))
    if tasks.empty:
        print("no failed or escalated tasks")
        return 0
    header = ("TASK", "STATUS", "CATEGORY", "PATTERN", "ATTEMPTS", "RETRIES", "TITLE")
    rows = [header] + [
        (
            t.task_id,
            t.status,
            t.error_category,
            t.failure_pattern,
            str(t.attempts),
            f"{t.retry_count}/{t.max_retries}",
            t.title,
        )
        for t in tasks.itertuples(index=False)
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])
    print(f"{len(tasks)} tasks; guide one with `cra guide TASK --hint TEXT`")
    return 0


def _report(args) -> int:
    from cra.drivers.escalation import attempts as escalation

    text = escalation.report_text(_db(args), args.task_id, args.format)
    print(text, end="" if text.endswith("\n") else "\n")
    return 0


def _guide(args) -> int:
    from cra.drivers.escalation import attempts as escalation

    shown, task = escalation.guide(_db(args), args.task_id, args.hint)
    if shown:
        print(shown)
    print(
        f"guidance stored; task {task['task_id']} re-queued (retry count {task['retry_count']} of {task['max_retries']})"
    )
    return 0


def _db_argument(parser) -> None:
    parser.add_argument("--db", help=f"escalation store (default {home_default('escalations.db')})")


def _attempt_arguments(p) -> None:
    p.add_argument("task_id", help="task id (a new id creates the task)")
    p.add_argument("--error", help="what went wrong (the full error message)")
    p.add_argument("--done", action="store_true", help="the task succeeded: mark it done instead")
    p.add_argument("--agent", default="agent", help="which agent made the attempt (default agent)")
    p.add_argument("--title", help="task title (set on creation, or changed)")
    p.add_argument("--max-retries", type=int, help="escalate after this many failed attempts (default 3)")
    p.add_argument("--context-file", help="file with the context at the time of failure (stored with the attempt)")
    p.add_argument(
        "--categories", help=f"TOML of extra error-category rules (default {home_default('error_categories.toml')})"
    )
    _db_argument(p)


def _retry_arguments(p) -> None:
    p.add_argument("--all", action="store_true", required=True, help="every failed and escalated task")
    _db_argument(p)


def _report_arguments(p) -> None:
    p.add_argument("task_id")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")
    _db_argument(p)


def _guide_arguments(p) -> None:
    p.add_argument("task_id")
    p.add_argument("--hint", required=True, help="the guidance, put at the top of the task's next prompt")
    _db_argument(p)


# the four commands, each as `cra.drivers.cli.main`'s table wants one (its options, what it runs)
attempt = SimpleNamespace(add_arguments=_attempt_arguments, run=_attempt)
retry = SimpleNamespace(add_arguments=_retry_arguments, run=_retry)
report = SimpleNamespace(add_arguments=_report_arguments, run=_report)
guide = SimpleNamespace(add_arguments=_guide_arguments, run=_guide)
