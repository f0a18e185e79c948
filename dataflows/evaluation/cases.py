"""Evaluation cases: three case-file formats normalised into one frame, and gold symbols from a fix patch.

Formats (detected per record):
  seed      {task, expected_files, expected_symbols, repo_path?, id?}            (hand-written cases)
  shared    {instance_id, repo, base_commit, problem_statement, gold_files, gold_functions}
  swebench  {instance_id, repo, base_commit, problem_statement, patch}           (raw SWE-bench)
Pure: the caller reads the file and, for swebench records, the pre-fix sources the patch touches.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pandas as pd

from cra.dataflows.index.parsers.models import ParsedFile

CASE_COLUMNS = ("case_id", "task", "expected_files", "expected_symbols", "repo", "base_commit", "repo_path")
FORMAT_FIELDS = {
    "seed": ("task", "expected_files"),
    "shared": ("instance_id", "repo", "base_commit", "problem_statement", "gold_files"),
    "swebench": ("instance_id", "repo", "base_commit", "problem_statement", "patch"),
}
MODULE_SYMBOL = "<module>"
_NOT_DEFINITIONS = ("constant",)  # gold symbols are the def/class around an edit; constants are module level


class CaseFormatError(ValueError):
    """A case file that cannot be read as cases; the message names the place and what was expected."""


def _expected_fields_text() -> str:
    return "; ".join(f"{name}: {', '.join(fields)}" for name, fields in FORMAT_FIELDS.items())


_LAYOUTS = "one JSON case object, a JSON list of them, or one object per line (JSONL)"
_WHITESPACE = re.compile(r"[ \t\r\n]*")  # what JSON allows between values


def _json_values(case_text: str, source: str) -> list:
    """Every JSON value in the text, in order: one object or list in any layout, or JSONL (blank lines allowed)."""
    decoder, values, position = json.JSONDecoder(), [], 0
    while (position := _WHITESPACE.match(case_text, position).end()) < len(case_text):
        try:
            value, position = decoder.raw_decode(case_text, position)
        except json.JSONDecodeError as exc:
            raise CaseFormatError(
                f"{source}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}. Write {_LAYOUTS}."
            ) from None
        except (ValueError, RecursionError) as exc:  # e.g. an integer of 5,000 digits, lists nested 100,000 deep
            raise CaseFormatError(
                f"{source}: unreadable JSON ({exc or type(exc).__name__}). Write {_LAYOUTS}."
            ) from None
        values.append(value)
    if not values:
        raise CaseFormatError(f"{source} is empty: write {_LAYOUTS}.")
    return values


def case_format(record: dict) -> str | None:
    """Which of the three case formats a record is in (None when none fits)."""
    if not isinstance(record, dict):
        return None
    for name in ("swebench", "shared", "seed"):
        if all(f in record for f in FORMAT_FIELDS[name]):
            return name
    return None


def case_records(case_text: str, case_source: str = "case file") -> list[dict]:
    """The records of a case file (JSON in any layout, or JSONL), each checked to be in a known format."""
    values = _json_values(case_text, case_source)
    records = values[0] if len(values) == 1 and isinstance(values[0], list) else values
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise CaseFormatError(
                f"{case_source}: case #{i + 1} is a JSON {_json_type(record)}, not an object. Write {_LAYOUTS}."
            )
        if case_format(record) is None:
            raise CaseFormatError(
                f"{case_source}: case #{i + 1} is in no known format (fields found: {sorted(record)}). "
                f"Each case needs the fields of one format — {_expected_fields_text()}."
            )
        if wrong := _wrong_field(record):
            raise CaseFormatError(f"{case_source}: case #{i + 1}: {wrong}. Fix that field.")
    return records


def _is_strings(value) -> bool:
    return isinstance(value, str) or isinstance(value, list) and all(isinstance(v, str) for v in value)


_FIELD_KINDS = {  # field: (what it must be, test); a field its format does not require may also be null
    **dict.fromkeys(
        ("task", "problem_statement", "repo", "base_commit", "patch", "repo_path"),
        ("a string", lambda v: isinstance(v, str)),
    ),
    **dict.fromkeys(("id", "instance_id"), ("a string or a number", lambda v: isinstance(v, (str, int, float)))),
    **dict.fromkeys(
        ("expected_files", "expected_symbols", "gold_files", "gold_functions"), ("a list of strings", _is_strings)
    ),
}


def _wrong_field(record: dict) -> str | None:
    required = FORMAT_FIELDS[case_format(record)]
    for field, (kind, fits) in _FIELD_KINDS.items():
        if field not in record or record[field] is None and field not in required:
            continue
        if not fits(record[field]):
            return f"field {field!r} must be {kind}, not {_json_type(record[field])}"
    return None


def _json_type(value) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _str_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def _seed_case(record: dict, index: int) -> dict:
    return {
        "case_id": str(record.get("id", index)),
        "task": record["task"],
        "expected_files": _str_list(record.get("expected_files")),
        "expected_symbols": _str_list(record.get("expected_symbols")),
        "repo": record.get("repo"),
        "base_commit": record.get("base_commit"),
        "repo_path": record.get("repo_path"),
        "format": "seed",
        "patch": None,
    }


def _shared_case(record: dict, index: int) -> dict:
    functions = record.get("gold_functions")
    return {
        "case_id": str(record["instance_id"]),
        "task": record["problem_statement"],
        "expected_files": _str_list(record["gold_files"]),
        "expected_symbols": None if functions is None else _str_list(functions),
        "repo": record["repo"],
        "base_commit": record["base_commit"],
        "repo_path": record.get("repo_path"),
        "format": "shared",
        "patch": None,
    }


def _swebench_case(record: dict, index: int) -> dict:
    return {
        "case_id": str(record["instance_id"]),
        "task": record["problem_statement"],
        "expected_files": patch_files(record["patch"]),
        "expected_symbols": None,  # needs the pre-fix sources: see `patch_symbols`
        "repo": record["repo"],
        "base_commit": record["base_commit"],
        "repo_path": record.get("repo_path"),
        "format": "swebench",
        "patch": record["patch"],
    }


_NORMALISERS = {"seed": _seed_case, "shared": _shared_case, "swebench": _swebench_case}


def cases(case_records: list[dict]) -> pd.DataFrame:
    """One row per case in the common columns (plus `format`, and `patch` for raw SWE-bench records)."""
    rows = [_NORMALISERS[case_format(r)](r, i) for i, r in enumerate(case_records)]
    frame = pd.DataFrame(rows, columns=[*CASE_COLUMNS, "format", "patch"], dtype=object)
    duplicated = frame["case_id"][frame["case_id"].duplicated()]
    if len(duplicated):
        raise CaseFormatError(
            f"case ids must be unique; repeated: {sorted(set(duplicated))}. Give each case its own id."
        )
    return frame


# --- patches -------------------------------------------------------------------------------------

_DIFF_OLD = re.compile(r"^--- (?:a/)?(.+?)\s*$")
_DIFF_NEW = re.compile(r"^\+\+\+ (?:b/)?(.+?)\s*$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class FileEdit:
    """What a patch does to one pre-existing file, in old-file line numbers."""

    path: str
    removed: tuple[int, ...] = ()  # old lines the patch deletes or rewrites
    inserted: tuple[tuple[int, int], ...] = ()  # (old line the insertion comes before, indent of inserted code)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def patch_edits(patch: str) -> list[FileEdit]:
    """Per pre-existing file of a unified diff, its removed old lines and insertion points (new files skipped)."""
    edits: list[FileEdit] = []
    old_path = path = None
    removed: list[int] = []
    inserted: list[tuple[int, int]] = []
    pending: list[str] = []  # consecutive added lines, flushed as one insertion point
    replacing = False  # added lines right after removed ones rewrite them: located by the removed lines
    old_line = old_left = new_left = 0  # hunk bodies are read by count: "--- x" inside one is a removed "-- x"

    def flush_insertion():
        if pending and not replacing:
            texts = [t for t in pending if t.strip()]
            inserted.append((old_line, min((_indent(t) for t in texts), default=0)))
        pending.clear()

    def close_file():
        flush_insertion()
        if path is not None and old_path is not None:
            edits.append(FileEdit(path, tuple(removed), tuple(inserted)))

    for line in patch.splitlines():
        if old_left > 0 or new_left > 0:
            if line.startswith("+"):
                pending.append(line[1:])
                new_left -= 1
            elif line.startswith("-"):
                flush_insertion()
                replacing = True
                removed.append(old_line)
                old_line, old_left = old_line + 1, old_left - 1
            elif line.startswith("\\"):  # "\ No newline at end of file"
                continue
            else:
                flush_insertion()
                replacing = False
                old_line, old_left, new_left = old_line + 1, old_left - 1, new_left - 1
            if old_left <= 0 and new_left <= 0:
                flush_insertion()
        elif line.startswith("--- ") and (m := _DIFF_OLD.match(line)):
            close_file()
            old_path = None if m.group(1) == "/dev/null" else m.group(1)
            path, removed, inserted = None, [], []
        elif line.startswith("+++ ") and (m := _DIFF_NEW.match(line)):
            path = None if m.group(1) == "/dev/null" else m.group(1)
        elif m := _HUNK.match(line):
            old_left, new_left, replacing = int(m.group(2) or 1), int(m.group(4) or 1), False
            old_line = int(m.group(1)) + (1 if old_left == 0 else 0)
    close_file()
    return edits


def patch_files(patch: str) -> list[str]:
    """The files a unified diff modifies, in patch order (created and deleted files excluded: /dev/null)."""
    return list(dict.fromkeys(e.path for e in patch_edits(patch)))


def _innermost(spans: pd.DataFrame, line: int) -> pd.DataFrame:
    inside = spans[(spans["start_line"] <= line) & (spans["end_line"] >= line)]
    return inside.sort_values("start_line", ascending=False)


def patch_symbols(edit: FileEdit, parsed: ParsedFile, source: str) -> list[str]:
    """`path::Qualified.name` of the def/class around each edit of one file (`path::<module>` at module level).

    A removed line belongs to the innermost def/class containing it; an insertion belongs to the innermost
    def/class around it (judged from the nearest code line above and the line below) whose header is
    indented less than the inserted code: a new method belongs to its class, appended body lines to their def.
    """
    lines = source.splitlines()
    spans = pd.DataFrame(
        [(s.qualified_name, s.start_line, s.end_line) for s in parsed.symbols if s.kind not in _NOT_DEFINITIONS],
        columns=["qualified_name", "start_line", "end_line"],
    )
    header_indent = spans["start_line"].map(lambda n: _indent(lines[n - 1]) if 0 < n <= len(lines) else 0)
    spans = spans.assign(indent=header_indent)

    def is_blank(n: int) -> bool:
        return not (0 < n <= len(lines)) or not lines[n - 1].strip()

    found: list[str] = []
    code_lines = [n for n in edit.removed if not is_blank(n)] or list(edit.removed)
    for n in code_lines:
        inner = _innermost(spans, n)
        found.append(inner["qualified_name"].iloc[0] if len(inner) else MODULE_SYMBOL)
    for before, indent in edit.inserted:
        above = before - 1
        while above > 0 and is_blank(above):
            above -= 1
        around = pd.concat([_innermost(spans, above), _innermost(spans, before)]).drop_duplicates()
        around = around[around["indent"] < indent].sort_values("start_line", ascending=False)
        found.append(around["qualified_name"].iloc[0] if len(around) else MODULE_SYMBOL)
    return [f"{edit.path}::{name}" for name in dict.fromkeys(found)]
