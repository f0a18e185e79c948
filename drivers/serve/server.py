"""`cra serve`: an MCP server (official `mcp` SDK) that keeps knowledge bases warm for coding agents.

Tools are the functions of `cra.drivers.serve.tools`; this module gives each its schema and agent-facing description,
turns user errors into tool errors (one bad request never stops the server), and runs the transport: stdio by
default, streamable HTTP on loopback unless --host says otherwise. `--watch` keeps KBs fresh in the background.
"""

import argparse
import ipaddress
import logging
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict  # (pydantic reads typing's only from Python 3.12)

from cra.drivers.common.errors import CraError

log = logging.getLogger("cra.serve")

INSTRUCTIONS = (
    "cra answers 'which code matters for this task?'. Call get_context with the task text (issue, failing test or "
    "stack trace) before editing: it returns the ranked files and symbols at the right depth within a token budget, "
    "re-indexing first if files changed. explain_file says why a file is or is not included; search_symbols finds "
    "definitions by name."
)


def _tool(fn, ws=None):
    """Run a tool body: a CraError becomes a tool error with its message; anything else a tool error naming the
    bug, its traceback on stderr; the server keeps serving either way. With the workspace (tools that read a KB):
    a KB found damaged while answering is rebuilt once (`Workspace.repair`), then the call is answered."""
    from mcp.server.mcpserver.exceptions import ToolError

    from cra.drivers.kb.check import KbDamaged

    def answer(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KbDamaged as exc:
            if ws is None or not ws.repair(exc):
                raise
            log.warning("%s Rebuilt it.", exc)
            return fn(*args, **kwargs)

    def run(*args, **kwargs):
        try:
            return answer(*args, **kwargs)
        except CraError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # a bug in cra, not the caller's doing
            log.error("tool %s failed:\n%s", fn.__name__, traceback.format_exc())
            raise ToolError(
                f"internal error in cra ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
                "the server is still running. Report it with the server's stderr."
            ) from None

    return run


class ContextResult(TypedDict):
    """get_context's structured result: the package's text, and, when the KB was behind the tree (a re-index under
    way with `cra serve --watch`, or one that failed), how far (`cra.drivers.serve.watch.WatchState.status`)."""

    result: str
    index: NotRequired[dict[str, Any]]


def _text_result(answer):
    """A `cra.drivers.serve.tools.Text` as the tool result: the text, and the same with its index note structured."""
    from mcp_types import CallToolResult, TextContent

    structured = {"result": answer.text, **({"index": answer.index} if answer.index else {})}
    return CallToolResult(content=[TextContent(type="text", text=answer.text)], structured_content=structured)


def build_server(ws):
    """The MCP server with cra's tools over this workspace (a `cra.drivers.serve.workspace.Workspace`)."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult
    from pydantic import Field

    from cra.drivers.serve import tools as mcp_tools

    Repo = Annotated[
        str | None,
        Field(
            description="Repository root path (or its directory name). Default: the "
            "first repository the server was started with."
        ),
    ]
    Task = Annotated[str, Field(description="The task: issue text, failing test output or stack trace, as given.")]
    Scope = Annotated[
        list[str] | None,
        Field(
            description="Monorepo scoping: only files under these folders or globs (relative to the repository root, "
            "e.g. ['services/api', 'libs/**/auth']) are ranked; files the task names by path are kept."
        ),
    ]
    server = MCPServer("cra", instructions=INSTRUCTIONS)

    @server.tool(
        description=(
            "Get the code context for a coding task: the files and symbols that matter, ranked, at the right depth "
            "(bodies, signatures, types), inside a token budget, with the reason for each. Call it first for any bug "
            "fix, feature or refactor. The repository is re-indexed automatically if files changed."
        )
    )
    def get_context(
        task: Task,
        repo: Repo = None,
        budget: Annotated[
            int | None,
            Field(
                ge=256, le=1_000_000, description=(f"Token budget of the package (default {mcp_tools.DEFAULT_BUDGET}).")
            ),
        ] = None,
        format: Annotated[
            Literal["markdown", "json"],
            Field(
                description=(
                    "markdown (for reading) or json (the `cra retrieve --format json` contract, with provenance)."
                )
            ),
        ] = "markdown",
        memories: Annotated[
            bool,
            Field(
                description=(
                    "Also put the stored memories that apply (preferences, corrections, language rules, project decisions) "
                    "at the top of the package."
                )
            ),
        ] = False,
        task_id: Annotated[
            str | None,
            Field(
                description=(
                    "Escalation task id: when it was escalated and a human gave guidance, put that guidance and the "
                    "failure context at the top of the package."
                )
            ),
        ] = None,
        scope: Scope = None,
        compact: Annotated[
            bool,
            Field(
                description=(
                    "Only the function bodies that score near the best one (a few hundred to a few thousand tokens), "
                    "instead of filling the budget; the JSON says where it stopped."
                )
            ),
        ] = False,
    ) -> Annotated[CallToolResult, ContextResult]:
        return _text_result(
            _tool(mcp_tools.get_context, ws)(
                ws, task, repo, "auto" if compact else budget, format, memories, task_id, scope
            )
        )

    @server.tool(
        description=(
            "Explain why one file is or is not in the context for a task: its rank, every ranking signal with its "
            "weight, whether the scope kept it, what the token budget evicted or demoted, which of its symbols went in "
            "at which depth. Use it when get_context left out a file you expected, or to judge a file's relevance."
        )
    )
    def explain_file(
        task: Task,
        path: Annotated[str, Field(description="File path relative to the repository root.")],
        repo: Repo = None,
        budget: Annotated[
            int | None, Field(ge=256, le=1_000_000, description="Token budget, as for get_context.")
        ] = None,
        scope: Scope = None,
    ) -> dict[str, Any]:
        return _tool(mcp_tools.explain_file, ws)(ws, task, path, repo, budget, scope)

    @server.tool(
        description=(
            "Re-index a repository now (incremental: only changed files are parsed) and return the index summary: files "
            "by language, symbols, edges, history, what was skipped. get_context re-indexes by itself when files "
            "change; call this after large changes such as a branch switch, or to see what the index holds."
        )
    )
    def index(repo: Repo = None) -> dict[str, Any]:
        return _tool(mcp_tools.index, ws)(ws, repo)

    @server.tool(
        description=(
            "Find definitions (functions, classes, methods, types) by name in the repository's index: exact names "
            "first, then qualified names, prefixes and substrings; several words match qualified name and path. Returns "
            "each symbol's file, lines and signature."
        )
    )
    def search_symbols(
        query: Annotated[str, Field(description="A symbol name or part of one, e.g. validate_login or Invoice.total.")],
        repo: Repo = None,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many symbols (default 20).")] = 20,
        scope: Scope = None,
    ) -> dict[str, Any]:
        return _tool(mcp_tools.search_symbols, ws)(ws, query, repo, limit, scope)

    @server.tool(
        description=(
            "Scoped memories that apply to this work: the user's preferences and corrections, language rules, project "
            "decisions and task rules, most relevant first. Read them before writing code so you follow what the user "
            "already said."
        )
    )
    def memories(
        task: Annotated[str | None, Field(description="The task text, to rank memories by relevance to it.")] = None,
        repo: Repo = None,
        project: Annotated[
            str | None, Field(description="Project name (default: the repository's directory name).")
        ] = None,
        language: Annotated[str | None, Field(description="Programming language, e.g. python.")] = None,
        category: Annotated[str | None, Field(description="Only this category, e.g. corrections.")] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="At most this many memories (default 20).")] = 20,
        budget: Annotated[int | None, Field(ge=0, description="Token budget for the memories returned.")] = None,
    ) -> dict[str, Any]:
        return _tool(mcp_tools.memories)(ws, task, repo, project, language, category, limit, budget)

    @server.tool(
        description=(
            "Past review findings like the pull request you are reviewing or writing: what reviewers flagged before in "
            "this repository (severity, category, file, outcome), best first, and a prompt section to put in the review. "
            "Read them before reviewing a diff so known pitfalls are checked."
        )
    )
    def past_findings(
        title: Annotated[str, Field(description="The pull request's title, e.g. 'fix: escape search input'.")],
        body: Annotated[
            str, Field(description="The pull request's description (its first 200 characters count).")
        ] = "",
        files: Annotated[list[str] | None, Field(description="Changed file paths, e.g. ['app/db.py'].")] = None,
        repository: Annotated[
            str | None, Field(description="OWNER/NAME whose findings to search (default: all).")
        ] = None,
        share_owner: Annotated[bool, Field(description="With repository: every repository of the same owner.")] = False,
        limit: Annotated[int, Field(ge=1, le=50, description="At most this many findings (default 5).")] = 5,
    ) -> dict[str, Any]:
        return _tool(mcp_tools.past_findings)(title, body, files, repository, share_owner, limit)

    @server.tool(
        description=(
            "Diagnose a failed attempt from its handoff bundle: whether the bundle is too thin to act on (empty, no "
            "actionable context, repeated failures in <phase_id>_attempt_<n>.log, no clear root cause), the priority, "
            "and bounded evidence: recent run artifacts, relevant docs/src/tests files, memories and similar past "
            "failures with their resolutions. Call it when an attempt failed and you do not know why."
        )
    )
    def diagnose(
        bundle: Annotated[
            dict[str, Any] | None,
            Field(
                description=(
                    "The handoff bundle: error_message, stack_trace, root_cause, recent_changes (any may be missing)."
                )
            ),
        ],
        run_dir: Annotated[
            str, Field(description="The run's directory, inside the repository (e.g. .autonomous_runs/run_1).")
        ],
        phase_id: Annotated[str, Field(description="The phase (its attempt logs are <phase_id>_attempt_<n>.log).")],
        attempt: Annotated[int, Field(ge=1, le=10_000, description="The attempt being diagnosed (1 for the first).")],
        repo: Repo = None,
        force: Annotated[bool, Field(description="Retrieve evidence even when no trigger fires.")] = False,
        format: Annotated[
            Literal["json", "markdown"], Field(description="json (the retrieval bundle) or markdown.")
        ] = "json",
        adaptive_caps: Annotated[bool, Field(description="Scale the caps by priority.")] = False,
    ) -> str:
        return _tool(mcp_tools.diagnose, ws)(ws, bundle, run_dir, phase_id, attempt, repo, force, format, adaptive_caps)

    _escalation_tools(server)
    return server


def _escalation_tools(server) -> None:
    """record_attempt / escalation_report / guide over the escalation store ($CRA_HOME/escalations.db)."""
    from pydantic import Field

    from cra.drivers.serve import tools as mcp_tools

    TaskId = Annotated[str, Field(description="Your id for the task, e.g. an issue number or branch name.")]

    @server.tool(
        description=(
            "Record that an attempt at a task failed, with the error. After the retry limit (default 3) the task "
            "escalates to a human with a report of the failure pattern; then stop retrying and wait for guidance."
        )
    )
    def record_attempt(
        task_id: TaskId,
        error: Annotated[str, Field(description="What went wrong: the full error message or test output.")],
        agent: Annotated[str, Field(description="Which agent made the attempt.")] = "agent",
        title: Annotated[str | None, Field(description="The task's title (set on the first attempt).")] = None,
        max_retries: Annotated[
            int | None, Field(ge=1, le=100, description="Escalate after this many failures.")
        ] = None,
    ) -> dict[str, Any]:
        return _tool(mcp_tools.record_attempt)(task_id, error, agent, title, max_retries)

    @server.tool(
        description="The escalation report of a task that reached its retry limit: error category, failure "
        "pattern, attempts, similar past failures, and any human guidance."
    )
    def escalation_report(
        task_id: TaskId,
        format: Annotated[Literal["markdown", "json"], Field(description="markdown or json.")] = "markdown",
    ) -> str:
        return _tool(mcp_tools.escalation_report)(task_id, format)

    @server.tool(
        description=(
            "Without hint: the human guidance and previous-failure context to put at the top of your next attempt at "
            "a task (empty when there is none). With hint: store a person's guidance for a failed or escalated task "
            "and re-queue it."
        )
    )
    def guide(
        task_id: TaskId,
        hint: Annotated[str | None, Field(description="Guidance to store (for people relaying advice).")] = None,
    ) -> dict[str, Any]:
        return _tool(mcp_tools.guide)(task_id, hint)


def _warm(ws) -> None:
    """At start, in the background: index (or refresh) every served repository and run one request, so an agent's
    first call finds the KB loaded and its lexicons built (it waits on the repository's lock if it comes sooner)."""
    from cra.drivers.kb.check import KbDamaged
    from cra.drivers.retrieval.retriever import retrieve

    def warm(root: Path) -> None:
        with ws.fresh(str(root)) as (_, kb):
            retrieve(kb, "warm up: load the knowledge base", budget=1024)

    for root in list(ws.repos):
        try:
            try:
                warm(root)
            except KbDamaged as exc:  # rebuilt once, as a request would
                log.warning("%s Rebuilding it.", exc)
                ws.repair(exc)
                warm(root)
        except Exception as exc:  # the first request reports it to the agent
            log.warning("warming %s failed: %s", root, exc)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def add_arguments(p: argparse.ArgumentParser) -> None:
    """`cra serve` options."""
    p.add_argument(
        "--repo",
        action="append",
        help="repository to serve (repeatable; default the current directory); the first is the default of every tool",
    )
    p.add_argument(
        "--allow-root",
        action="append",
        default=[],
        help="also serve repositories under this directory when a tool names them (repeatable)",
    )
    p.add_argument("--kb", help="KB directory of the (single) repository (default REPO/.cra)")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="stdio (default) or streamable HTTP")
    p.add_argument(
        "--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1; others warn: no authentication)"
    )
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    p.add_argument(
        "--watch",
        action="store_true",
        help="re-index in the background as files change (watchfiles); requests meanwhile answer from the last KB",
    )
    p.add_argument("--history", type=int, default=2000, help="commits of git history to index (default 2000)")


def run(args) -> int:
    """Serve until the client disconnects (stdio) or the process is interrupted (HTTP)."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        raise CraError("`cra serve` needs the MCP SDK: pip install 'cra[serve]' (or `make setup`).") from None
    from cra.drivers.serve.workspace import Workspace

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="cra serve: %(levelname)s: %(message)s")
    ws = Workspace(
        [Path(r) for r in args.repo or ["."]],
        [Path(r) for r in args.allow_root],
        Path(args.kb) if args.kb else None,
        history=args.history,
        watched=args.watch,
    )
    server = build_server(ws)
    stop = ws.stop
    threading.Thread(target=_warm, args=(ws,), name="cra-warm", daemon=True).start()
    if args.watch:
        try:
            import watchfiles  # noqa: F401
        except ImportError:
            raise CraError("--watch needs watchfiles: pip install 'cra[serve]'.") from None
        from cra.drivers.serve.watch import watch

        threading.Thread(target=watch, args=(ws, stop), name="cra-watch", daemon=True).start()
    try:
        if args.transport == "stdio":
            server.run("stdio")
            # the client closed stdin: leave now. Tearing down the interpreter (pandas, arrow, the encoder) takes
            # seconds that clients wait on before they kill us; KB writes are atomic, so a cut-off re-index is harmless
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        else:
            if not _is_loopback(args.host):
                print(
                    f"cra serve: warning: listening on {args.host}, not loopback: anyone who reaches this port can "
                    f"read {ws.served()} (no authentication).",
                    file=sys.stderr,
                )
            print(f"cra serve: MCP over HTTP at http://{args.host}:{args.port}/mcp", file=sys.stderr)
            server.run("streamable-http", host=args.host, port=args.port)
    finally:
        stop.set()
    return 0
