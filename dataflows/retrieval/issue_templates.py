"""The repository's issue templates, and the task without their lines.

An issue filed through a template repeats its headings and checklists ("Bug Report", "Current Behavior", "I have
looked at the documentation") whatever the bug: words of the form, not of the task, that match files named for
them (a `bug_report.rs`, an `_examples/` directory). The templates are indexed files (`.github/ISSUE_TEMPLATE/*.md`,
GitHub issue forms' `label:`s, `.gitlab/issue_templates/`), so a request reads them from the KB and drops the
task's lines that are a template line, and the template's prompt from a line the reporter answered; code blocks are
kept whole.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from cra.dataflows.index.mapped import values_at

_TEMPLATE_PATH = re.compile(r"(?:^|/)issue_templates?(?:/[^/]+)?\.(?:md|markdown|ya?ml)$", re.IGNORECASE)
_FORM_LABEL = re.compile(r"""^\s*(?:-\s*)?label\s*:\s*(?P<q>["']?)(.*?)(?P=q)\s*$""")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_CHECKBOX = re.compile(r"\[[xX✓✔√]\]")
_WORD = re.compile(r"\w+")
MIN_PREFIX_WORDS = 2  # a template line a reporter answered on the same line ("Shell: bash") goes if this long


def _cleaned(line: str) -> str:
    return _CHECKBOX.sub(" ", _COMMENT.sub(" ", line))


def _line_key(line: str) -> tuple[str, ...]:
    """A line as compared with template lines: its words in lower case (markers, emphasis, a ticked box and
    spacing are how the reporter or the renderer wrote it, not what the line says)."""
    return tuple(word.lower() for word in _WORD.findall(_cleaned(line)))


def _template_keys(path: str, text: str) -> set[tuple[str, ...]]:
    """The lines an issue filed with this template repeats: a markdown template's lines, an issue form's labels;
    and each line's prompt, the text before its colon, which a reporter keeps while replacing what follows
    ("- Shell version: [the output of `bash --version`]")."""
    text = _COMMENT.sub(" ", text)
    if path.lower().endswith((".yml", ".yaml")):
        lines = [m.group(2) for m in map(_FORM_LABEL.match, text.splitlines()) if m]
    else:
        lines = text.splitlines()
    prompts = [line.split(":", 1)[0] for line in lines if ":" in line]
    return {key for key in map(_line_key, lines + prompts) if key}


def issue_template_lines(kb_files: pd.DataFrame, kb_contents: pd.DataFrame) -> frozenset[tuple[str, ...]]:
    """The compared form (`_line_key`) of every line of the repository's issue templates."""
    if kb_files.empty or kb_contents.empty:
        return frozenset()
    paths = kb_files["path"].astype(str)
    templates = kb_files[paths.str.contains("issue_template", case=False, regex=False).to_numpy()]
    templates = templates[templates["path"].astype(str).str.contains(_TEMPLATE_PATH).to_numpy()]
    if templates.empty:
        return frozenset()
    rows = np.flatnonzero(np.isin(kb_contents["file_id"].to_numpy(), templates["file_id"].to_numpy()))
    path_of = templates.set_index("file_id")["path"]
    keys: set[tuple[str, ...]] = set()
    for file_id, text in zip(kb_contents["file_id"].to_numpy()[rows].tolist(), values_at(kb_contents["text"], rows)):
        keys |= _template_keys(str(path_of.get(file_id, "")), text or "")
    return frozenset(keys)


def _answer(line: str, template_lines: frozenset[tuple[str, ...]], longest: int) -> str | None:
    """What the reporter wrote on a line beyond its template text: None for a template line, the words after the
    longest template line it starts with (of MIN_PREFIX_WORDS+ words), else the line itself."""
    key = _line_key(line)
    if key in template_lines:
        return None
    for n in range(min(len(key) - 1, longest), MIN_PREFIX_WORDS - 1, -1):
        if key[:n] in template_lines:
            cleaned = _cleaned(line)
            return cleaned[list(_WORD.finditer(cleaned))[n].start() :]
    return line


def analysed_text(task_text: str, issue_template_lines: frozenset[tuple[str, ...]]) -> str:
    """The task without the text of its issue template (its lines, and the prompts of lines the reporter
    answered; fenced code kept whole): what task analysis reads; the package still shows the task as written."""
    if not issue_template_lines:
        return task_text
    longest = max(map(len, issue_template_lines))
    kept, fenced = [], False
    for line in task_text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            line = _answer(line, issue_template_lines, longest)
            if line is None:
                continue
        kept.append(line)
    return "\n".join(kept)
