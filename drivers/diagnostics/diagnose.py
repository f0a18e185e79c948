"""Runs the diagnostics dataflow: escalation triggers on a handoff bundle, then bounded deep
retrieval from the run directory, the repository's docs/, src/ and tests/, and memory.

Read-only and bounded. The run directory and the repository are walked with `os.scandir` (stat only); symlinks are
never followed, `.git/`, `.autonomous_runs/` and `*.db` files are never entered or read, and only regular files are
opened (O_NOFOLLOW, inside the root). A file is read only as far as its category's byte cap (10 KB of a run artifact,
from its start; the newest 64 KB of an earlier attempt's log for trigger 3), and only the
files the ranking reaches are read; binary and undecodable files are skipped. Nothing is written anywhere.

`should_escalate` and `get_retrieval_priority` keep the names existing harnesses call them by; `diagnose` gives
the whole retrieval bundle. SOT files are ranked by the retrieval pipeline's lexical and symbol signals when the
repository has a usable KB (`.cra/`, or `kb_dir`), else by keyword counts (also when the KB scores nothing, or
sends a file without keyword matches while one with them is left out); the bundle's `stats.sot_ranking` says which.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
from hamilton import driver

from cra.dataflows.diagnostics import bundle, retrieval, triggers
from cra.dataflows.diagnostics.models import RetrievalBundle, RetrievalCaps
from cra.drivers.common.errors import CraError

ATTEMPT_LOG_LIMIT = 10  # seed: up to 10 log reads for trigger analysis (the latest earlier attempts)
ATTEMPT_LOG_SCAN_BYTES = 64 * 1024  # newest part of an attempt log scanned for failure markers
KEYWORD_SCAN_FILES = 5_000  # without a KB, the newest this many SOT files are read (each up to the SOT byte cap)
READS_PER_CATEGORY = 50  # binary / unreadable files skipped before a category stops looking
MEMORY_CANDIDATES = 20  # scoped memories ranked before the 5-entry cap
KB_BUDGET = 4_096  # the retrieval request behind the KB ranking only needs its signal matrix
PROTECTED_DIRS = frozenset({".git", ".autonomous_runs"})
SKIPPED_DIRS = frozenset({".cra", "__pycache__"})  # not protected, just never evidence
PROTECTED_SUFFIXES = (".db", ".db-wal", ".db-shm", ".db-journal")
FIRST_PASS = (
    "handoff",
    "triggers",
    "retrieval_priority",
    "escalate",
    "retrieval_wanted",
    "retrieval_caps",
    "failure_text",
    "retrieval_task_text",
    "retrieval_keywords",
)
_CANDIDATE_COLUMNS = ("path", "kind", "size", "mtime")
_MEMORY_COLUMNS = (
    "source",
    "content",
    "relevance_score",
    "scope",
    "category",
    "phase_id",
    "error_pattern",
    "resolution",
    "similarity_score",
)


@dataclass(frozen=True)
class Diagnosis:
    """One diagnosis: the retrieval bundle, the requested renderings, and what was skipped along the way."""

    bundle: RetrievalBundle
    outputs: dict
    warnings: tuple[str, ...]


@lru_cache(maxsize=4)
def diagnostics_driver(sot_ranking: str = "keywords", adaptive_caps: bool = False) -> driver.Driver:
    """The diagnostics DAG (triggers, retrieval, bundle) for one SOT ranking (kb | keywords) and caps mode."""
    return (
        driver.Builder()
        .with_modules(triggers, retrieval, bundle)
        .with_config({"sot_ranking": sot_ranking, "adaptive_caps": adaptive_caps})
        .build()
    )


def check_phase_id(phase_id: str) -> str:
    """The phase id, if it names attempt logs inside the run directory (one path component, no '..')."""
    if (
        not isinstance(phase_id, str)
        or not phase_id.strip()
        or phase_id in (".", "..")
        or "\x00" in phase_id
        or "/" in phase_id
        or "\\" in phase_id
        or len(phase_id) > 200
    ):
        raise CraError(
            f"Phase id {phase_id!r} is not allowed: it names <phase_id>_attempt_<n>.log inside the run "
            "directory, so use one name without '/', '\\' or '..', e.g. phase_001."
        )
    return phase_id


def _root(path: Path | str, what: str, flag: str) -> Path:
    path = Path(path)
    if not path.exists():
        raise CraError(f"{what} {path} does not exist. Pass an existing directory with {flag}.")
    if not path.is_dir():
        raise CraError(f"{what} {path} is a file, not a directory. Pass a directory with {flag}.")
    return path.resolve()


def _walk(root: Path, start: Path) -> list[tuple[str, int, float]]:
    """(path relative to root, size, mtime) of the regular files under start: symlinks are not followed, protected
    and skipped directories not entered, *.db files left out. Stat only."""
    if start.is_symlink() or not start.is_dir():
        return []
    prefix, found, stack = len(str(root)) + 1, [], [str(start)]
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    if entry.is_symlink():
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in PROTECTED_DIRS and entry.name not in SKIPPED_DIRS:
                            stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False) and not entry.name.endswith(PROTECTED_SUFFIXES):
                        st = entry.stat(follow_symlinks=False)
                        found.append((entry.path[prefix:], st.st_size, st.st_mtime))
                except OSError:
                    continue
    return found


def _decode(data: bytes, cut_start: bool, cut_end: bool) -> str | None:
    """UTF-8 text of a read chunk; None for binary (NUL bytes) or undecodable content. A character split by the
    cut at either end is dropped, not held against the file."""
    if b"\x00" in data:
        return None
    if cut_start:
        skip = 0
        while skip < 3 and skip < len(data) and data[skip] & 0xC0 == 0x80:
            skip += 1
        data = data[skip:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if cut_end and exc.start >= len(data) - 3 and exc.end == len(data):
            return data[: exc.start].decode("utf-8", "strict")
        return None


def read_text(root: Path, rel: str, limit: int, from_end: bool = False) -> str | None:
    """At most `limit` bytes of a regular file under root (its start, or its end), as text; None when the path
    leaves root ('..', a symlink on the way), is not a regular file, cannot be read, or is binary / not UTF-8."""
    if Path(rel).is_absolute() or ".." in Path(rel).parts:
        return None
    path = root / rel
    try:
        if not path.parent.resolve().is_relative_to(root):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        start = max(0, st.st_size - limit) if from_end else 0
        want, chunks = min(limit, st.st_size - start), []
        while want > 0:
            chunk = os.pread(fd, want, start + sum(map(len, chunks)))
            if not chunk:
                break
            chunks.append(chunk)
            want -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return _decode(data, cut_start=start > 0, cut_end=start + len(data) < st.st_size)


def _attempt_logs(run_root: Path | None, phase_id: str | None, attempt: int, warnings: list[str]) -> pd.DataFrame:
    """The newest part of each earlier attempt's log (<phase_id>_attempt_<n>.log, the latest ATTEMPT_LOG_LIMIT)."""
    rows = []
    if run_root is not None and phase_id:
        for n in range(max(1, attempt - ATTEMPT_LOG_LIMIT), attempt):
            name = f"{phase_id}_attempt_{n}.log"
            if (run_root / name).is_symlink():
                warnings.append(f"refused {name}: a symlink (attempt logs are read only inside the run directory)")
                continue
            text = read_text(run_root, name, ATTEMPT_LOG_SCAN_BYTES, from_end=True)
            if text is not None:
                rows.append((n, name, text))
    return pd.DataFrame(rows, columns=["attempt", "path", "text"]).astype(
        {"attempt": "int64", "path": object, "text": object}
    )


def _first_pass(
    handoff_bundle: Any,
    phase_id: str | None,
    attempt: int,
    run_root: Path | None,
    now: datetime | None,
    force: bool,
    adaptive_caps: bool,
    warnings: list[str],
) -> tuple[dict, dict]:
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise CraError(
            f"Attempt {attempt!r} is not a positive whole number. Pass the attempt being diagnosed, e.g. --attempt 2."
        )
    if phase_id is not None:
        check_phase_id(phase_id)
    inputs = {
        "handoff_bundle": handoff_bundle,
        "phase_id": phase_id or "",
        "attempt": attempt,
        "force": force,
        "attempt_logs": _attempt_logs(run_root, phase_id, attempt, warnings),
    }
    if now is not None:
        inputs["now"] = now
    return diagnostics_driver("keywords", adaptive_caps).execute(list(FIRST_PASS), inputs=inputs), inputs


def should_escalate(handoff_bundle: Any, phase_id: str, attempt: int = 1, run_dir: Path | str | None = None) -> bool:
    """Whether the handoff bundle is too thin to act on (any of the four triggers fires; trigger 3 reads the
    earlier attempts' logs in run_dir)."""
    run_root = _root(run_dir, "Run directory", "--run-dir") if run_dir is not None else None
    return bool(_first_pass(handoff_bundle, phase_id, attempt, run_root, None, False, False, [])[0]["escalate"])


def get_retrieval_priority(
    handoff_bundle: Any, phase_id: str | None = None, attempt: int = 1, run_dir: Path | str | None = None
) -> str:
    """high (two or more triggers fired), medium (one) or low (none)."""
    run_root = _root(run_dir, "Run directory", "--run-dir") if run_dir is not None else None
    return _first_pass(handoff_bundle, phase_id, attempt, run_root, None, False, False, [])[0]["retrieval_priority"]


def _candidates(run_root: Path, repo_root: Path) -> pd.DataFrame:
    run = [(p, "run_artifact", s, m) for p, s, m in _walk(run_root, run_root)]
    sot = [(p, "sot", s, m) for d in retrieval.SOT_DIRS for p, s, m in _walk(repo_root, repo_root / d)]
    frame = pd.DataFrame(run + sot, columns=list(_CANDIDATE_COLUMNS))
    return frame.astype({"path": object, "kind": object, "size": "int64", "mtime": "float64"})


def _kb_ranking(kb_dir: Path, task_text: str, warnings: list[str]) -> pd.DataFrame | None:
    """The retrieval pipeline's signal matrix for the failure (path + KB_SIGNALS), None without a usable KB."""
    from cra.drivers.kb.store import has_usable_kb, load_kb

    if not task_text.strip() or not has_usable_kb(kb_dir):
        return None
    from cra.drivers.retrieval.retriever import retrieve

    try:
        matrix = retrieve(load_kb(kb_dir), task_text, budget=KB_BUDGET).signal_matrix
    except CraError as exc:
        warnings.append(f"SOT files ranked by keywords: the knowledge base at {kb_dir} could not rank them ({exc})")
        return None
    return matrix[["path", *retrieval.KB_SIGNALS]].reset_index(drop=True)


def _read_ranked(root: Path, order: pd.DataFrame, limit: int, wanted: int, texts: dict) -> None:
    """Read the ranked candidates' texts (at most `limit` bytes each) until `wanted` of them are text."""
    got = 0
    head = order.head(wanted + READS_PER_CATEGORY)
    for cid, path in zip(head.index, head["path"]):
        text = texts[cid] if cid in texts else read_text(root, path, limit)
        if text is not None:
            texts[cid] = text
            got += 1
            if got >= wanted:
                return


def _scoped_memories(memory_dir, project, language, text, now, warnings) -> list[dict]:
    """The scoped memories that apply (universal, the language's, the project's), most relevant to the failure first."""
    from cra.dataflows.memory.models import MemoryQuery
    from cra.drivers.memory.memories import query_memories

    result, found_warnings = query_memories(
        memory_dir,
        MemoryQuery(max_results=MEMORY_CANDIDATES),
        project=project or None,
        language=language or None,
        task_text=text or None,
        now=now,
    )
    warnings += found_warnings
    return [
        {
            "source": "memory",
            "content": m.content,
            "relevance_score": m.relevance_score,
            "scope": m.scope,
            "category": m.category,
        }
        for m in result.memories
    ]


@lru_cache(maxsize=1)
def _similarity_driver() -> driver.Driver:
    from cra.dataflows.escalation import similarity

    return driver.Builder().with_modules(similarity).build()


def _past_failures(db: Path | str | None, phase_id: str, text: str, warnings: list[str]) -> list[dict]:
    """Similar past failures in the escalation store and the guidance that resolved them; none when the store
    does not exist yet (it is not created) or cannot be read (a warning)."""
    from cra.drivers.escalation import attempts as escalation
    from cra.drivers.escalation import store

    path = Path(db) if db else store.default_db_path()
    if not text.strip() or not path.is_file() or path.stat().st_size == 0:
        return []
    try:
        category = escalation.categorise([text], escalation.load_category_table())[0]
        with store.open_store(path) as conn, store.transaction(conn, write=False):
            past = store.past_failures(conn, category, escalation.PAST_FAILURE_LIMIT)
    except CraError as exc:
        warnings.append(f"no past failures: {exc}")
        return []
    task_id = phase_id or "(diagnosis)"
    inputs = {
        "task_id": task_id,
        "attempts": pd.DataFrame({"task_id": [task_id], "error_message": [text]}),
        "dominant_categories": pd.Series({task_id: category}),
        "past_failures": past,
    }
    similar = _similarity_driver().execute(["similar_past_failures"], inputs=inputs)["similar_past_failures"]
    return [
        {
            "source": "past_failure",
            "phase_id": s.task_id,
            "error_pattern": s.error_message,
            "resolution": s.resolution,
            "similarity_score": s.similarity,
            "relevance_score": s.similarity,
            "content": f"Past failure {s.task_id} ({s.status}): {s.error_message}\n"
            f"Resolution: {s.resolution or 'no guidance yet'}",
        }
        for s in similar
    ]


def _memory_candidates(memory_dir, db, project, language, phase_id, text, now, warnings) -> pd.DataFrame:
    rows = _past_failures(db, phase_id, text, warnings) + _scoped_memories(
        memory_dir, project, language, text, now, warnings
    )
    frame = pd.DataFrame(rows, columns=list(_MEMORY_COLUMNS))
    return frame.astype({"source": object, "content": object, "relevance_score": "float64"})


def diagnose(
    handoff_bundle: Any,
    run_dir: Path | str,
    repo: Path | str,
    phase_id: str,
    attempt: int,
    *,
    now: datetime,
    force: bool = False,
    adaptive_caps: bool = False,
    memory_dir: Path | str | None = None,
    db: Path | str | None = None,
    kb_dir: Path | str | None = None,
    project: str | None = None,
    language: str | None = None,
    outputs: tuple[str, ...] = (),
) -> Diagnosis:
    """Triggers, priority and (when escalating, or forced) the bounded retrieval bundle for one failed attempt.

    outputs: extra nodes to render (bundle_json, bundle_markdown). Memory defaults to cra_home()'s memory
    directory and escalation store (missing or empty: no memory entries); project defaults to the repository's
    directory name when that is a valid project name."""
    from cra.drivers.kb.store import default_kb_dir, has_usable_kb

    run_root, repo_root = _root(run_dir, "Run directory", "--run-dir"), _root(repo, "Repository", "--repo")
    warnings: list[str] = []
    first, inputs = _first_pass(handoff_bundle, phase_id, attempt, run_root, now, force, adaptive_caps, warnings)
    caps: RetrievalCaps = first["retrieval_caps"]
    kb_path = Path(kb_dir) if kb_dir else default_kb_dir(repo_root)
    texts: dict = {}
    candidates = pd.DataFrame(columns=list(_CANDIDATE_COLUMNS)).astype({"size": "int64", "mtime": "float64"})
    memories = pd.DataFrame(columns=list(_MEMORY_COLUMNS)).astype({"relevance_score": "float64"})
    ranking = None
    if first["retrieval_wanted"]:
        candidates = _candidates(run_root, repo_root)
        ranking = _kb_ranking(kb_path, first["retrieval_task_text"], warnings)
        # keyword counts (the KB ranking's check too) need the capped text of every SOT candidate
        sot = candidates[candidates["kind"].eq("sot")].sort_values("mtime", ascending=False).head(KEYWORD_SCAN_FILES)
        for cid, path in zip(sot.index, sot["path"]):
            text = read_text(repo_root, path, caps.sot_files.max_bytes)
            if text is not None:
                texts[cid] = text
        if project is None:
            from cra.drivers.memory.store import check_name

            try:
                project = check_name(repo_root.name, "Project")
            except CraError:
                project = ""
        memories = _memory_candidates(memory_dir, db, project, language, phase_id, first["failure_text"], now, warnings)
    mode = "kb" if ranking is not None or (not first["retrieval_wanted"] and has_usable_kb(kb_path)) else "keywords"
    dr = diagnostics_driver(mode, adaptive_caps)
    inputs = {
        **inputs,
        "candidate_files": candidates,
        "candidate_texts": pd.Series(texts, dtype=object),
        "memory_candidates": memories,
    }
    if mode == "kb":
        inputs["kb_ranking"] = ranking if ranking is not None else pd.DataFrame(columns=["path", *retrieval.KB_SIGNALS])
    orders = dr.execute(["run_artifact_order", "sot_order"], inputs=inputs, overrides=first)
    _read_ranked(
        run_root, orders["run_artifact_order"], caps.run_artifacts.max_bytes, caps.run_artifacts.max_files, texts
    )
    _read_ranked(repo_root, orders["sot_order"], caps.sot_files.max_bytes, caps.sot_files.max_files, texts)
    inputs["candidate_texts"] = pd.Series(texts, dtype=object)
    out = dr.execute(["retrieval_bundle", *outputs], inputs=inputs, overrides={**first, **orders})
    return Diagnosis(out["retrieval_bundle"], out, tuple(warnings))
