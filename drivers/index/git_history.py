"""Read git history with one `git log` subprocess; the index dataflow parses the text."""

from __future__ import annotations

import subprocess
from pathlib import Path

# one record per commit: RS, then hash, unix time, author, full message separated by US, then US and the
# `--name-only` file list. RS/US (0x1e/0x1f) never occur in hashes, names or sane commit messages.
RECORD_SEP = "\x1e"
FIELD_SEP = "\x1f"
LOG_FORMAT = "%x1e%H%x1f%ct%x1f%an%x1f%B%x1f"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess | None:
    """Run git in root; None when git is not installed."""
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    except (FileNotFoundError, PermissionError):
        return None


def git_log(root: Path, max_commits: int, history_from: tuple[Path, str] | None = None) -> str | None:
    """Raw `git log --name-only` text of the newest max_commits commits under root; None without git/repository.

    Paths are relative to root (`--relative`), so indexing a subdirectory of a repository works too.
    A repository without commits yields "" (history available, empty). `history_from=(git_dir, rev)` reads
    the history of `rev` in another git directory instead: a tree extracted from a mirror at that commit
    gets exactly the commits up to it (evaluation trees have no .git of their own).
    """
    if history_from is not None:
        git_dir, rev = history_from  # git runs in root: a relative git_dir is made absolute first
        done = _git(
            Path(root),
            f"--git-dir={Path(git_dir).resolve()}",
            "-c",
            "core.quotePath=false",
            "log",
            f"-n{int(max_commits)}",
            "--name-only",
            "--no-renames",
            f"--format={LOG_FORMAT}",
            rev,
            "--",
        )
        return done.stdout.decode("utf-8", errors="replace") if done is not None and done.returncode == 0 else None
    done = _git(
        Path(root),
        "-c",
        "core.quotePath=false",
        "log",
        f"-n{int(max_commits)}",
        "--name-only",
        "--no-renames",
        "--relative",
        f"--format={LOG_FORMAT}",
        "--",
        ".",
    )
    if done is None:
        return None
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", errors="replace")
        if "does not have any commits" in stderr:
            return ""
        return None
    return done.stdout.decode("utf-8", errors="replace")


def git_head(root: Path) -> str | None:
    """The commit hash checked out in root, None outside a repository (or before the first commit)."""
    done = _git(Path(root), "rev-parse", "--verify", "-q", "HEAD")
    if done is None or done.returncode != 0:
        return None
    return done.stdout.decode().strip() or None


def git_tracked(root: Path) -> list[str] | None:
    """Paths (relative to root) of the files git tracks under root; None outside a git work tree."""
    done = _git(Path(root), "-c", "core.quotePath=false", "ls-files", "-z")
    if done is None or done.returncode != 0:
        return None
    return [p for p in done.stdout.decode("utf-8", errors="replace").split("\0") if p]
