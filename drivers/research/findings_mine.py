"""Mine a review-findings set from the fix commits of public git mirrors (for recall measurement and the benchmark).

    python -m cra.drivers.research.findings_mine --mirror ../.mirror --out out/findings

A fix commit (subject or body says fix/bug/crash/error/..., at most MAX_FILES files) stands for a review finding:
its subject and first body paragraph describe the defect, its first source file (tests aside) is the finding's file,
the category and severity come from keywords. Only subjects, bodies (trailers such as Signed-off-by and e-mail
addresses dropped), paths and dates are read; no code. Writes, per run:

- `findings.jsonl`: the findings of every repository's earlier 85% of fix commits (by commit date), one JSON
  object a line in the `cra findings import` format;
- `queries.jsonl`: the held-back later 15%, each with the pull-request signals a reviewer would have (title, body,
  touched files) and `relevant`: the keys (repo, file_path, finding_text) of the stored findings on a file the
  query's commit touches. Only queries with at least one relevant finding are kept.

Nothing mined is committed to the repository: this script regenerates it from the mirrors.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from cra.dataflows.review.languages import pr_languages
from cra.drivers.common.errors import CraError
from cra.drivers.common.output import write_text_atomic

MAX_FILES = 6
HOLD_OUT = 0.15
FIX_WORDS = re.compile(
    r"\b(fix|fixes|fixed|fixing|bug|bugfix|crash|crashes|error|errors|incorrect|wrong|regression|"
    r"broken|fails?|failing|typo)\b",
    re.IGNORECASE,
)
TRAILER = re.compile(r"^\s*([\w-]+-by|co-authored-by|signed-off-by|reviewed-by|change-id|closes|fixes)\s*:", re.I)
EMAIL = re.compile(r"\S+@\S+")
CATEGORIES = (  # first match wins
    ("security", r"secur|inject|xss|csrf|auth|permission|sanitiz|escape|vulnerab|cve"),
    ("performance", r"perf|slow|speed|memory|leak|cache|optimi|quadratic|timeout"),
    ("concurrency", r"race|deadlock|concurren|thread|goroutine|lock|async|mutex"),
    ("error-handling", r"exception|raise|error|crash|panic|traceback|nil|none|null|handle"),
    ("compatibility", r"deprecat|compat|version|python ?3|upgrade|pin|numpy|pandas"),
    ("documentation", r"doc|typo|readme|comment|spelling"),
    ("testing", r"\btest|flaky|ci\b"),
    ("style", r"lint|format|style|whitespace|indent"),
)
MAJOR = re.compile(r"crash|panic|secur|inject|data loss|corrupt|regression|leak|deadlock|race", re.IGNORECASE)


def _clean_body(body: str) -> str:
    """First paragraph of a commit body without trailers, e-mail addresses or markdown noise, at most 300 chars."""
    lines = [line for line in body.strip().splitlines() if not TRAILER.match(line)]
    paragraph = "\n".join(lines).strip().split("\n\n", 1)[0]
    return " ".join(EMAIL.sub("", paragraph).replace("*", " ").split())[:300]


def _category(text: str) -> str:
    return next((name for name, pattern in CATEGORIES if re.search(pattern, text, re.IGNORECASE)), "correctness")


def _is_test(path: str) -> bool:
    return bool(re.search(r"(^|/)(tests?|testing)/|(^|/)test_|_test\.\w+$|conftest\.py$", path))


def fix_commits(git_dir: Path) -> list[dict]:
    """Fix commits of a repository, oldest first: date, subject, cleaned body, touched paths, primary source file."""
    out = subprocess.run(
        [
            "git",
            "--git-dir",
            str(git_dir),
            "log",
            "--no-merges",
            "--no-renames",
            "--reverse",
            "--name-only",
            "--format=%x1e%H%x1f%cI%x1f%s%x1f%b%x1f",
        ],
        capture_output=True,
        text=True,
        errors="replace",
        check=True,
    ).stdout
    commits = []
    for record in out.split("\x1e")[1:]:
        sha, date, subject, body, stats = (record.split("\x1f") + [""] * 5)[:5]
        subject = " ".join(subject.split())
        if not FIX_WORDS.search(subject) or subject.lower().startswith(("merge", "revert", "bump", "release")):
            continue
        files = [p for p in stats.strip().splitlines() if p.strip()]
        sources = [p for p in files if pr_languages([p]) and not _is_test(p)]  # source code, not tests
        if not sources or len(files) > MAX_FILES:
            continue
        primary = sources[0]  # mirrors may lack blobs (partial clones): names only, no line counts
        commits.append(
            {
                "sha": sha,
                "date": date,
                "subject": subject,
                "body": _clean_body(body),
                "files": files,
                "primary": primary,
            }
        )
    return commits


def _finding(commit: dict, repo: str) -> dict:
    text = commit["subject"] + (f". {commit['body']}" if commit["body"] else "")
    return {
        "finding_text": text,
        "severity": "major" if MAJOR.search(text) else "minor",
        "category": _category(text),
        "file_path": commit["primary"],
        "outcome": "accepted",
        "repo": repo,
        "created_at": commit["date"],
    }


def mine(mirror: Path) -> tuple[list[dict], list[dict]]:
    """(stored findings, held-back queries with their relevant findings' keys) over every mirror under `mirror`."""
    findings, queries = [], []
    for git_dir in sorted(mirror.glob("*+*/repo")):
        repo = git_dir.parent.name.replace("+", "/", 1)
        commits = sorted(fix_commits(git_dir), key=lambda c: c["date"])
        cut = int(len(commits) * (1 - HOLD_OUT))
        stored = [_finding(c, repo) for c in commits[:cut]]
        by_file = defaultdict(list)
        for f in stored:
            by_file[f["file_path"]].append([f["repo"], f["file_path"], f["finding_text"]])
        findings += stored
        for c in commits[cut:]:
            relevant = [key for path in dict.fromkeys(c["files"]) for key in by_file.get(path, ())]
            if relevant:
                queries.append(
                    {
                        "repo": repo,
                        "title": c["subject"],
                        "body": c["body"],
                        "files": c["files"],
                        "created_at": c["date"],
                        "relevant": relevant,
                    }
                )
    return findings, queries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.findings_mine", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--mirror", default="../.mirror", help="directory of OWNER+NAME/repo git mirrors")
    parser.add_argument("--out", default="out/findings", help="where findings.jsonl and queries.jsonl go")
    args = parser.parse_args(argv)
    mirror, out = Path(args.mirror), Path(args.out)
    if not any(mirror.glob("*+*/repo")):
        raise SystemExit(f"no OWNER+NAME/repo mirrors under {mirror}; pass --mirror DIR")
    try:
        findings, queries = mine(mirror)
        for name, rows in (("findings.jsonl", findings), ("queries.jsonl", queries)):
            write_text_atomic(out / name, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    except CraError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{len(findings)} findings, {len(queries)} held-back queries with a relevant finding -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
