"""What each `cra serve` tool does, as plain functions over a `Workspace` (the MCP layer in drivers/serve/server.py only
registers them): user errors raise CraError, results are text or JSON-ready dicts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd

from cra.drivers.common.errors import CraError
from cra.drivers.retrieval.pinned import default_project
from cra.drivers.serve.edited import with_edited
from cra.drivers.serve.edits_section import NAME as EDITS
from cra.drivers.serve.edits_section import edits_section
from cra.drivers.serve.symbol_search import matching_symbols
from cra.drivers.serve.workspace import Workspace

DEFAULT_BUDGET = 16_000  # tokens: a package that fits under agent clients' tool-output limits (Claude Code: 25k)
FORMATS = ("markdown", "json")


@dataclass(frozen=True)
class Text:
    """A text answer, and how far the KB that gave it was behind the tree (`Workspace.answering`; None: not behind)."""

    text: str
    index: dict | None = None


def _check_task(task: str) -> str:
    if not isinstance(task, str) or not task.strip():
        raise CraError("The task is empty. Pass the issue text, failing test or stack trace as `task`.")
    return task


def get_context(
    ws: Workspace,
    task: str,
    repo: str | None = None,
    budget: int | str | None = None,
    format: str = "markdown",
    memories: bool = False,
    task_id: str | None = None,
    scope: list[str] | str | None = None,
) -> Text:
    """The context package for a task: markdown, or the JSON document of `cra retrieve --format json`; with the
    memories that apply and an escalation task's guidance on top when asked; budget "auto" is the compact package;
    `scope`: subtrees or globs the ranking keeps to (`cra retrieve --path`). Answered from a KB behind the tree
    (`cra serve --watch` while it re-indexes), the text says so on top (markdown) or under "index" (JSON), and the
    changed files as they are now open the package (`cra.drivers.serve.edits_section`)."""
    from cra.drivers.retrieval import pinned
    from cra.drivers.retrieval.retriever import retrieve

    if format not in FORMATS:
        raise CraError(f"Unknown format {format!r}; use one of {', '.join(FORMATS)}.")
    from cra.drivers.retrieval.retriever import AUTO_BUDGET_CAP

    budget = DEFAULT_BUDGET if budget is None else budget
    with ws.answering(repo) as answer:
        served, kb = answer.repo, answer.kb
        guidance = pinned.guidance_section(None, task_id) if task_id else None
        tokens = AUTO_BUDGET_CAP if budget == "auto" else budget
        notes = (
            pinned.memory_section_for(None, default_project(served.root), None, task, tokens, kb.files)
            if memories
            else None
        )
        sections = pinned.pinned_sections(guidance, notes)
        if answer.edited is not None:
            sections = _with_edits(sections, answer.edited, kb, tokens, scope)
        result = retrieve(
            kb,
            _check_task(task),
            budget=budget,
            outputs=(f"{format}_text",),
            pinned_sections=sections,
            path_scope=scope,
        )
    text, status = result.outputs[f"{format}_text"], answer.status
    if status is None:
        return Text(text)
    if any(p.name == EDITS and p.markdown for p in result.package.pinned):
        status = {**status, "note": f"{status['note']}; the changed files as they are now open the package"}
    if format == "json":
        return Text(json.dumps({**json.loads(text), "index": status}, indent=2), status)
    return Text(f"> {status['note']}\n\n{text}", status)


def _with_edits(sections, edited, kb, budget: int, scope):
    """The pinned sections (a tuple, or a function of the ranked scope) followed by the section of the changed files
    that lie in the path scope."""
    from cra.drivers.common.tokens import count_tokens

    paths = pd.Series(sorted(edited.paths), dtype=object)
    shown = frozenset(paths[_in_scope(paths, scope)]) if scope else edited.paths

    def with_edits(ranked: pd.DataFrame) -> tuple:
        fixed = sections(ranked) if callable(sections) else sections
        return (*fixed, edits_section(edited, kb, ranked, budget, count_tokens, shown))

    return with_edits


def _scope_patterns(scope) -> tuple[str, ...]:
    from cra.drivers.retrieval.retriever import checked_path_scope

    return checked_path_scope(scope)


def scoped_files(kb, scope: list[str] | str | None) -> pd.DataFrame:
    """The KB's files inside a path scope (all of them without one); CraError for a path naming no indexed file."""
    from cra.dataflows.path_globs import matches_per_pattern, matching
    from cra.drivers.retrieval.retriever import checked_path_scope, require_matches

    patterns, files = checked_path_scope(scope), kb.files
    if not patterns:
        return files
    require_matches(matches_per_pattern(files["path"], patterns), kb)
    return files[matching(files["path"], patterns)]


def explain_file(
    ws: Workspace,
    task: str,
    path: str,
    repo: str | None = None,
    budget: int | None = None,
    scope: list[str] | str | None = None,
) -> dict:
    """Why a file is or is not in the context for a task: its rank, every signal with its weight, what the budget
    did to it, which of its symbols went in at which depth (all read from the retrieval's provenance); `scope` as
    for get_context."""
    from cra.drivers.retrieval.retriever import retrieve

    with ws.answering(repo) as answer:
        served = answer.repo
        rel = ws.relative_path(served, path)
        result = retrieve(
            answer.kb, _check_task(task), budget=DEFAULT_BUDGET if budget is None else budget, path_scope=scope
        )
        indexed = bool((answer.kb.files["path"] == rel).any())
    provenance = result.package.provenance
    out: dict = {"path": rel, "repo": str(served.root), **({"index": answer.status} if answer.status else {})}
    matrix = result.signal_matrix.sort_values(["total", "score", "path"], ascending=[False, False, True])
    row = matrix[matrix["path"] == rel]
    if row.empty and indexed:  # (only a path scope keeps an indexed file from the ranking)
        paths = ", ".join(provenance.get("path_scope", {}).get("paths", []))
        out.update(
            indexed=True,
            in_package=False,
            in_path_scope=False,
            verdict=f"{rel} is outside the path scope ({paths}), so it is never a candidate; widen the scope or "
            "name the file in the task to let it in",
        )
        return out
    if row.empty:
        on_disk = (served.root / rel).is_file()
        out.update(
            indexed=False,
            in_package=False,
            verdict=(
                f"{rel} is not in the knowledge base: "
                + (
                    "it is ignored (.gitignore), binary, generated or oversized, so it is never a candidate"
                    if on_disk
                    else "no such file in the repository"
                )
            ),
        )
        return out
    weights = provenance["weights"]
    first = row.iloc[0]
    signals = {
        name: {
            "value": round(float(first[name]), 6),
            "weight": round(float(w), 6),
            "weighted": round(float(first[name]) * float(w), 6),
        }
        for name, w in weights.items()
    }
    scope_row = next((r for r in provenance["scope"] if r["path"] == rel), None)
    in_package = [f for f in result.package.files if f.path == rel]
    budget = provenance["budget"]
    out.update(
        indexed=True,
        score_rank=int(matrix.index.get_loc(row.index[0])) + 1,
        files_ranked=len(matrix),
        score=round(float(first["score"]), 6),
        prior=round(float(first["prior"]), 6),
        total=round(float(first["total"]), 6),
        seed=bool(first["seed"]),
        seed_reason=scope_row["seed_reason"] if scope_row else "",
        signals=dict(sorted(signals.items(), key=lambda kv: -kv[1]["weighted"])),
        in_scope=scope_row is not None,
        scope_rank=scope_row["rank"] if scope_row else None,
        scope_size=len(provenance["scope"]),
        added_by=scope_row["added_by"] if scope_row else None,
        in_package=bool(in_package),
        package_rank=in_package[0].relevance_rank if in_package else None,
        symbols=[s for s in provenance.get("symbols", []) if s["path"] == rel],
        evicted=[e for e in budget.get("evicted", []) if e.get("path") == rel],
        demoted=[d for d in budget.get("demoted", []) if d.get("path") == rel],
        budget={"budget": budget.get("budget"), "before": budget.get("before"), "after": budget.get("after")},
    )
    out["verdict"] = _verdict(out)
    return out


def _verdict(e: dict) -> str:
    """One sentence an agent can act on."""
    top = [name for name, s in e["signals"].items() if s["weighted"] > 0][:3]
    why = f"strongest signals: {', '.join(top)}" if top else "no signal matched it"
    if e["in_package"]:
        cut = f"; the budget evicted {len(e['evicted'])} of its items" if e["evicted"] else ""
        demoted = f" and demoted {len(e['demoted'])}" if e["demoted"] else ""
        return f"included at package rank {e['package_rank']} (scope rank {e['scope_rank']}, added by {e['added_by']}; {why}){cut}{demoted}."
    if e["in_scope"] and e["evicted"]:
        return (
            f"in scope at rank {e['scope_rank']} of {e['scope_size']} ({why}) but left out: the token budget "
            f"evicted its {len(e['evicted'])} items for higher-ranked files."
        )
    if e["in_scope"]:
        return (
            f"in scope at rank {e['scope_rank']} of {e['scope_size']} ({why}) but no precision tier selected "
            "any of its content (no definitions, or none that the task reaches)."
        )
    return (
        f"ranked {e['score_rank']} of {e['files_ranked']} by score ({why}); the scope keeps {e['scope_size']} "
        "files (top scores, seeds, import and co-change neighbours), so it was not considered."
    )


def index(ws: Workspace, repo: str | None = None) -> dict:
    """Re-index a repository incrementally; the summary `cra index` prints, and its warnings."""
    from cra.drivers.index.cli import index_summary

    served, stats = ws.index(repo)
    return {
        "repo": str(served.root),
        "summary": index_summary(stats),
        "warnings": list(stats.get("warnings", [])),
        "files": stats.get("n_files", 0),
        "parsed": stats.get("n_parsed", 0),
        "reused": stats.get("n_reused", 0),
    }


def search_symbols(
    ws: Workspace, query: str, repo: str | None = None, limit: int = 20, scope: list[str] | str | None = None
) -> dict:
    """Definitions whose name matches a query, best match first: exact name, qualified name, prefix, substring;
    a query of several words matches symbols whose qualified name and path contain every word; `scope`: only
    those of files under these subtrees or globs."""
    if not isinstance(query, str) or not query.strip():
        raise CraError("The query is empty. Pass a symbol name or part of one, e.g. `validate_login`.")
    if limit < 1:
        raise CraError(f"limit must be at least 1 (got {limit}).")
    with ws.answering(repo, tables_only=True) as answer:
        served, kb = answer.repo, answer.kb
        try:
            files = scoped_files(kb, scope)
        except CraError:  # (a scope of files the KB has not indexed yet is one of the changed files')
            edited = pd.Series(sorted(answer.edited.paths) if answer.edited is not None else [], dtype=object)
            if not _in_scope(edited, scope).any():
                raise
            files = kb.files.iloc[:0]
    found = matching_symbols(kb, query, files["file_id"] if len(files) < len(kb.files) else None)
    status = answer.status
    if answer.edited is not None:  # the changed files' own symbols instead of the KB's (`cra.drivers.serve.edited`)
        found = with_edited(found, answer.edited, query, lambda paths: _in_scope(paths, scope))
        status = {**status, "note": f"{status['note']}; the changed files' symbols are read from the files"}
    rows = found.head(limit)
    columns = ["name", "qualified_name", "kind", "path", "start_line", "end_line", "signature"]
    return {
        "repo": str(served.root),
        "query": query,
        **({"scope": list(_scope_patterns(scope)), "files_in_scope": int(len(files))} if scope else {}),
        "total_matches": int(len(found)),
        "symbols": [
            {c: (None if pd.isna(v) else v.item() if hasattr(v, "item") else v) for c, v in zip(columns, r)}
            for r in rows[columns].itertuples(index=False)
        ],
        **({"index": status} if status else {}),
    }


def _in_scope(paths: pd.Series, scope: list[str] | str | None):
    """Which of these paths lie in a path scope (all without one)."""
    from cra.dataflows.path_globs import matching
    from cra.drivers.retrieval.retriever import checked_path_scope

    return matching(paths, checked_path_scope(scope))


def memories(
    ws: Workspace,
    task: str | None = None,
    repo: str | None = None,
    project: str | None = None,
    language: str | None = None,
    category: str | None = None,
    limit: int = 20,
    budget: int | None = None,
) -> dict:
    """Scoped memories (preferences, corrections, decisions, task rules) that apply, best first (cra.drivers.memory.memories)."""
    from cra.dataflows.memory.models import MemoryQuery
    from cra.drivers.memory.memories import query_memories

    if limit < 1:
        raise CraError(f"limit must be at least 1 (got {limit}).")
    project = project or default_project(ws.repository(repo).root)
    result, warnings = query_memories(
        None,
        MemoryQuery(category=category, max_results=limit),
        project=project,
        language=language,
        task_text=task,
        budget=budget,
        now=datetime.now(UTC),
    )
    return {"project": project, **result.to_dict(), "warnings": warnings}


def past_findings(
    title: str,
    body: str = "",
    files: list[str] | None = None,
    repository: str | None = None,
    share_owner: bool = False,
    limit: int = 5,
) -> dict:
    """Past review findings most like a pull request, best first, with the prompt section (cra.drivers.findings.review)."""
    from cra.drivers.findings.review import recall_findings

    if not isinstance(title, str) or not title.strip():
        raise CraError("The title is empty. Pass the pull request's title as `title`.")
    if limit < 1:
        raise CraError(f"limit must be at least 1 (got {limit}).")
    result = recall_findings(title, body or "", files or [], repo=repository, sharing_enabled=share_owner, top_k=limit)
    return {**result.to_dict(), "section": result.section, "warnings": list(result.warnings)}


def record_attempt(
    task_id: str, error: str, agent: str = "agent", title: str | None = None, max_retries: int | None = None
) -> dict:
    """Record a failed attempt at a task; at the retry limit the task escalates with a report (cra.drivers.escalation.attempts)."""
    from dataclasses import asdict

    from cra.drivers.escalation import attempts as escalation

    outcome = escalation.record_attempt(
        None,
        task_id,
        error,
        agent=agent,
        title=title,
        max_retries=max_retries,
        user_table=escalation.load_category_table(),
    )
    return asdict(outcome)


def escalation_report(task_id: str, format: str = "markdown") -> str:
    """A task's latest escalation report (markdown or JSON)."""
    from cra.drivers.escalation import attempts as escalation

    if format not in FORMATS:
        raise CraError(f"Unknown format {format!r}; use one of {', '.join(FORMATS)}.")
    return escalation.report_text(None, task_id, format)


def guide(task_id: str, hint: str | None = None) -> dict:
    """With a hint: store it for a failed or escalated task and re-queue it. Without: the guidance and failure
    context the task's next attempt should start with."""
    from cra.drivers.escalation import attempts as escalation

    if hint is None:
        text, provenance = escalation.guidance_context_for(None, task_id)
        return {"task_id": task_id, "prompt": text, "provenance": provenance}
    report, task = escalation.guide(None, task_id, hint)
    return {
        "task_id": task_id,
        "status": task["status"],
        "retry_count": task["retry_count"],
        "max_retries": task["max_retries"],
        "report_answered": report,
    }


def diagnose(
    ws: Workspace,
    bundle: dict | None,
    run_dir: str,
    phase_id: str,
    attempt: int,
    repo: str | None = None,
    force: bool = False,
    format: str = "json",
    adaptive_caps: bool = False,
) -> str:
    """Escalation triggers on a handoff bundle and the bounded deep-retrieval bundle (cra.drivers.diagnostics.diagnose), the run
    directory taken inside the repository (no '..', no symlink out), SOT files ranked with the warm KB."""
    from cra.drivers.diagnostics import diagnose as diagnostics

    if format not in FORMATS:
        raise CraError(f"Unknown format {format!r}; use one of {', '.join(FORMATS)}.")
    if bundle is not None and not isinstance(bundle, dict):
        raise CraError(
            "The bundle is not an object. Pass the handoff bundle (error_message, stack_trace, root_cause, "
            "recent_changes), or null."
        )
    node = f"bundle_{format}"
    with ws.fresh(repo) as (served, _):
        run_root = served.root / ws.relative_path(served, run_dir)
        result = diagnostics.diagnose(
            bundle,
            run_root,
            served.root,
            phase_id,
            attempt,
            now=datetime.now(UTC),
            force=force,
            adaptive_caps=adaptive_caps,
            kb_dir=served.kb_dir,
            outputs=(node,),
        )
    return result.outputs[node]
