"""Scoped memories on disk: a JSON hierarchy, readable and editable by people.

    <root>/profile.json                       {"general":     [memory, ...]}   scope universal
    <root>/corrections.json                   {"corrections": [...]}           scope universal
    <root>/languages/<lang>.json              {"preferences": [...]}           scope language:<lang>
    <root>/projects/<p>/decisions.json        {"decisions":   [...]}           scope project:<p>
    <root>/projects/<p>/tasks/<t>.json        {"rules":       [...]}           scope project:<p>:task:<t>

A memory is {"content", "timestamp" (ISO 8601), "confidence" (0-1, default 1), "category" (default the file's
key)}. The root is `cra_home()/memory` unless a directory is given (`--memory-dir`). Every write holds the
store's lock and replaces the file atomically, so concurrent writers lose nothing and readers never see half a
file. Reading skips a malformed or unreadable file (or entry) and says which in a warning. Pure Python, no
pandas: `cra memory add` stays quick.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.common.home import cra_home
from cra.drivers.common.locks import exclusive_lock
from cra.drivers.common.output import write_text_atomic

LOCK_NAME = ".lock"
LOCK_TIMEOUT = 30.0
UNIVERSAL_FILES = (("profile.json", "general"), ("corrections.json", "corrections"))
CORRECTION_CATEGORIES = frozenset({"correction", "corrections"})
# one spelling per kind, the hierarchy's own keys (its category names); the singular a person may type, or an
# older cra stored, reads as the same category
_PLURAL = {"preference": "preferences", "correction": "corrections", "decision": "decisions", "rule": "rules"}
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+#-]{0,99}")
_SCOPE_FORMS = "universal, language:L, project:P or project:P:task:T"


@dataclass(frozen=True)
class Scope:
    """A parsed scope string: which of the four levels, and the names it carries."""

    kind: str  # universal|language|project|task
    language: str | None = None
    project: str | None = None
    task: str | None = None

    def __str__(self) -> str:
        if self.kind == "language":
            return f"language:{self.language}"
        if self.kind == "project":
            return f"project:{self.project}"
        if self.kind == "task":
            return f"project:{self.project}:task:{self.task}"
        return "universal"


@dataclass(frozen=True)
class StoreRead:
    """What reading the store gave: the valid memories (dicts with scope and source added) and what was skipped."""

    memories: list[dict]
    warnings: list[str]


def memory_root(memory_dir: Path | str | None = None) -> Path:
    """The memory hierarchy's root: the given directory, else $CRA_HOME/memory (default ~/.cra/memory)."""
    return Path(memory_dir) if memory_dir else cra_home() / "memory"


def canonical_category(category: str) -> str:
    """The one spelling of a category: the hierarchy's key (decisions, preferences, rules, corrections) for its
    singular too; any other category as given."""
    return _PLURAL.get(category.strip().lower(), category.strip())


def check_name(name: str, what: str) -> str:
    """The name, if it is safe as one path component; a CraError for '..', '/', absolute paths, ':' and the like."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise CraError(
            f"{what} name {name!r} is not allowed (it must stay inside the memory directory): "
            "use letters, digits and . _ - + # (not starting with '.'), at most 100 characters."
        )
    return name


def parse_scope(text: str) -> Scope:
    """The Scope of 'universal', 'language:L', 'project:P' or 'project:P:task:T'; a CraError otherwise."""
    parts = str(text).strip().split(":")
    if parts == ["universal"]:
        return Scope("universal")
    if len(parts) == 2 and parts[0] == "language":
        return Scope("language", language=check_name(parts[1], "Language"))
    if len(parts) == 2 and parts[0] == "project":
        return Scope("project", project=check_name(parts[1], "Project"))
    if len(parts) == 4 and parts[0] == "project" and parts[2] == "task":
        return Scope("task", project=check_name(parts[1], "Project"), task=check_name(parts[3], "Task"))
    raise CraError(f"Scope {text!r} is not one of {_SCOPE_FORMS}.")


def scope_file(root: Path, scope: Scope, category: str | None = None) -> tuple[Path, str]:
    """(file, key) where memories of this scope live; universal corrections go to corrections.json."""
    if scope.kind == "language":
        return root / "languages" / f"{scope.language}.json", "preferences"
    if scope.kind == "project":
        return root / "projects" / scope.project / "decisions.json", "decisions"
    if scope.kind == "task":
        return root / "projects" / scope.project / "tasks" / f"{scope.task}.json", "rules"
    name, key = UNIVERSAL_FILES[1] if category in CORRECTION_CATEGORIES else UNIVERSAL_FILES[0]
    return root / name, key


def _files_of(root: Path, scope: Scope) -> list[tuple[Path, str]]:
    """(file, key) of every file holding memories of this scope."""
    if scope.kind == "universal":
        return [(root / name, key) for name, key in UNIVERSAL_FILES]
    return [scope_file(root, scope)]


def hierarchy_files(
    root: Path,
    project: str | None = None,
    language: str | None = None,
    task: str | None = None,
    everything: bool = True,
) -> list[tuple[Path, str, Scope]]:
    """(file, key, scope) of the hierarchy's files that exist: all of them, or (everything=False) only those that
    apply to a context (universal, the context's language, its project's decisions, its task's rules)."""
    if not everything:
        scopes = [Scope("universal")]
        if language:
            scopes.append(Scope("language", language=check_name(language, "Language")))
        if project:
            scopes.append(Scope("project", project=check_name(project, "Project")))
            if task:
                scopes.append(Scope("task", project=project, task=check_name(task, "Task")))
        return [(path, key, scope) for scope in scopes for path, key in _files_of(root, scope) if path.is_file()]
    found = [(root / name, key, Scope("universal")) for name, key in UNIVERSAL_FILES if (root / name).is_file()]
    found += [
        (p, "preferences", Scope("language", language=p.stem))
        for p in sorted((root / "languages").glob("*.json"))
        if _NAME.fullmatch(p.stem)
    ]
    for project_dir in sorted(p for p in (root / "projects").glob("*") if p.is_dir() and _NAME.fullmatch(p.name)):
        decisions = project_dir / "decisions.json"
        if decisions.is_file():
            found.append((decisions, "decisions", Scope("project", project=project_dir.name)))
        found += [
            (p, "rules", Scope("task", project=project_dir.name, task=p.stem))
            for p in sorted((project_dir / "tasks").glob("*.json"))
            if _NAME.fullmatch(p.stem)
        ]
    return found


def stray_files(root: Path) -> list[Path]:
    """Files under root that are not part of the hierarchy (so an import can say it left them out)."""
    known = {path for path, _, _ in hierarchy_files(root)}
    return sorted(p for p in root.rglob("*") if p.is_file() and p not in known and not p.name.startswith("."))


def _read_document(path: Path, key: str) -> dict:
    """The parsed file; ValueError with the reason when it is unreadable or not a {key: [...]} object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})") from None
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"unreadable ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"not a JSON object with a {key!r} list")
    if not isinstance(data.get(key, []), list):
        raise ValueError(f"{key!r} is not a list")
    return data


def _entry_problem(item) -> str | None:
    """Why a stored entry is not a usable memory, or None when it is."""
    if not isinstance(item, dict):
        return "not an object"
    if not isinstance(item.get("content"), str) or not item["content"].strip():
        return "no content"
    if not isinstance(item.get("timestamp"), str):
        return "no timestamp"
    confidence = item.get("confidence", 1.0)
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0.0 <= confidence <= 1.0:
        return f"confidence {confidence!r} is not a number in [0, 1]"
    if "category" in item and not isinstance(item["category"], str):
        return "category is not a string"
    return None


def _read_file(path: Path, key: str, scope: Scope) -> tuple[list[dict], list[str]]:
    """(memories, problems) of one file; a whole-file problem gives no memories and one problem."""
    try:
        data = _read_document(path, key)
    except ValueError as exc:
        return [], [f"skipped {path}: {exc}"]
    memories, problems = [], []
    items = data.get(key, [])
    for number, item in enumerate(items, 1):
        problem = _entry_problem(item)
        if problem:
            problems.append(f"skipped {path} entry {number} of {len(items)}: {problem}")
            continue
        memories.append(
            {
                "content": item["content"],
                "scope": str(scope),
                "category": canonical_category(item.get("category") or key),
                "confidence": float(item.get("confidence", 1.0)),
                "timestamp": item["timestamp"],
                "source": str(path),
            }
        )
    return memories, problems


def read_memories(
    root: Path,
    project: str | None = None,
    language: str | None = None,
    task: str | None = None,
    everything: bool = True,
) -> StoreRead:
    """Every valid memory of the hierarchy (or of the files that apply to a context), with what was skipped."""
    memories, warnings = [], []
    for path, key, scope in hierarchy_files(root, project, language, task, everything):
        found, problems = _read_file(path, key, scope)
        memories += found
        warnings += problems
    return StoreRead(memories, warnings)


def _entry(content: str, category: str, confidence: float, timestamp: str) -> dict:
    return {"content": content, "timestamp": timestamp, "confidence": confidence, "category": category}


def _merge(path: Path, key: str, entries: list[dict], keep_newer: bool = False) -> tuple[int, int]:
    """Add entries to one file (an entry whose content is already there is refreshed, keeping its other fields;
    with keep_newer only by a copy at least as recent); (added, updated).

    Call with the store's lock held. A file that exists but cannot be parsed is left untouched (CraError)."""
    try:
        data = _read_document(path, key) if path.exists() else {}
    except ValueError as exc:
        raise CraError(f"Cannot add to {path}: it is {exc}. Fix or move that file, then run again.") from None
    items = list(data.get(key, []))
    position = {item.get("content"): i for i, item in enumerate(items) if isinstance(item, dict)}
    added = updated = 0
    for entry in entries:
        if entry["content"] in position:
            i = position[entry["content"]]
            if not (keep_newer and str(items[i].get("timestamp") or "") > entry["timestamp"]):
                items[i] = {**items[i], **entry}  # fields someone added by hand stay
            updated += 1  # already there (an import never replaces a newer copy with an older one)
        else:
            position[entry["content"]] = len(items)
            items.append(entry)
            added += 1
    data[key] = items
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return added, updated


def store_lock(root: Path):
    """The store's cross-process write lock (one writer at a time for the whole hierarchy)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CraError(
            f"Cannot create the memory directory {root} ({exc.strerror or exc}). Pass a writable --memory-dir."
        ) from None
    return exclusive_lock(root / LOCK_NAME, timeout=LOCK_TIMEOUT)


def add_memory(
    root: Path, content: str, scope: str, category: str | None, confidence: float, now: datetime
) -> tuple[Path, bool]:
    """Store one memory (an identical content in the same file is refreshed instead); (file, whether it was new)."""
    content = (content or "").strip()
    if not content:
        raise CraError('The memory is empty. Pass its text: cra memory add "TEXT" --scope ...')
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0.0 <= confidence <= 1.0:
        raise CraError(f"Confidence {confidence!r} is not a number between 0 and 1. Pass e.g. --confidence 0.8.")
    parsed = parse_scope(scope)
    path, key = scope_file(root, parsed, category)
    entry = _entry(content, canonical_category(category or key), float(confidence), now.isoformat(timespec="seconds"))
    with store_lock(root):
        added, _ = _merge(path, key, [entry])
    return path, bool(added)


def import_hierarchy(source: Path, root: Path) -> dict:
    """Validate another hierarchy and merge its valid memories into root; what was added and what was rejected."""
    source = Path(source)
    if not source.is_dir():
        raise CraError(
            f"{source} is not a directory. Pass the root of a memory hierarchy (with profile.json, languages/, projects/)."
        )
    if source.resolve() == root.resolve():
        raise CraError(f"{source} is the memory directory itself. Import from another directory.")
    rejected = [f"skipped {p}: not part of the memory hierarchy" for p in stray_files(source)]
    by_target: dict[tuple[Path, str], list[dict]] = {}
    for path, key, scope in hierarchy_files(source):
        found, problems = _read_file(path, key, scope)
        rejected += problems
        for m in found:  # into the same place of our hierarchy
            entry = _entry(m["content"], m["category"], m["confidence"], m["timestamp"])
            by_target.setdefault((root / path.relative_to(source), key), []).append(entry)
    added = updated = 0
    with store_lock(root):
        for (path, key), entries in by_target.items():
            a, u = _merge(path, key, entries, keep_newer=True)
            added, updated = added + a, updated + u
    return {"added": added, "updated": updated, "rejected": rejected, "files": len(by_target)}
