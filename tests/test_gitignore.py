"""The repository scan honours ignore rules exactly as git does: each case is checked against git itself.

Every case builds a small work tree with `git init`, then compares the paths `scan_sources` keeps with
`git ls-files -co --exclude-standard` in that tree (git's own answer). The same files without `.git` must
give the same answer from their .gitignore files alone.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cra.drivers.cli.main import main
from cra.drivers.index.sources import scan_sources
from cra.drivers.kb.store import read_tables

GO_ZERO_GITIGNORE = """\
# Ignore all
*

# Unignore all with extensions
!*.*
!**/Dockerfile
!**/Makefile

# Unignore all dirs
!*/
!api

# ignore
**/.idea
**/.vscode
**/logs
**/coverage.txt

# vim auto backup file
*~
!OWNERS
"""


@dataclass(frozen=True)
class Case:
    files: tuple[str, ...]  # work-tree files (each holds its own path as content)
    ignores: dict[str, str]  # path of an ignore file -> its text (.gitignore anywhere, .git/info/exclude)
    tracked: tuple[str, ...] = field(default=())  # files force-added to git's index (ignore rules spare them)


CASES = {
    "go-zero: ignore all, re-include names with a dot and every directory": Case(
        files=(
            "go.mod",
            "LICENSE",
            "core/logx/logs.go",
            "core/logx/readme",
            "rest/handler/auth.go",
            "rest/httpx/deep/er/x.go",
            "tools/bin/goctl",
        ),
        ignores={".gitignore": "*\n!*.*\n!*/\n"},
    ),
    "go-zero's own .gitignore": Case(
        files=(
            "go.mod",
            "OWNERS",
            "Makefile",
            "core/Makefile",
            "tools/goctl/Dockerfile",
            "tools/goctl/goctl",
            "api/x.go",
            "core/logs/a.go",
            "core/.idea/w.xml",
            "core/x.go~",
            "core/x.go",
            "core/coverage.txt",
        ),
        ignores={".gitignore": GO_ZERO_GITIGNORE},
    ),
    "a later negation wins, an earlier one does not": Case(
        files=("a.log", "important.log", "keep.log", "x.py"),
        ignores={".gitignore": "!important.log\n*.log\n!keep.log\n"},
    ),
    "nested .gitignore files override their parents": Case(
        files=(
            "a.log",
            "pkg/keep.log",
            "pkg/drop.log",
            "pkg/deep/keep.log",
            "pkg/deep/other.log",
            "pkg/deep/x.tmp",
            "other/keep.log",
        ),
        ignores={
            ".gitignore": "*.log\n!*.tmp\n",
            "pkg/.gitignore": "!keep.log\n",
            "pkg/deep/.gitignore": "keep.log\n*.tmp\n",
        },
    ),
    "a file under an excluded directory cannot be re-included": Case(
        files=("build/keep.py", "build/drop.py", "dist/keep.py", "dist/drop.py", "dist/sub/keep.py", "src/a.py"),
        ignores={".gitignore": "build/\n!build/keep.py\ndist/*\n!dist/keep.py\n!keep.py\n"},
    ),
    "a nested .gitignore cannot re-include inside an excluded directory": Case(
        files=("vendor/lib/a.py", "vendor/lib/.gitignore", "src/a.py"),
        ignores={".gitignore": "vendor/\n", "vendor/lib/.gitignore": "!*\n"},
    ),
    "anchored patterns: leading and middle slashes": Case(
        files=("top.txt", "sub/top.txt", "doc/a.txt", "doc/sub/b.txt", "a/b", "x/a/b", "name.txt", "deep/er/name.txt"),
        ignores={".gitignore": "/top.txt\ndoc/*.txt\na/b\nname.txt\n", "sub/.gitignore": "/nothing\n"},
    ),
    "anchored patterns are relative to their own .gitignore": Case(
        files=("pkg/gen/a.py", "pkg/sub/gen/b.py", "gen/c.py", "pkg/x/y.py", "x/y.py"),
        ignores={"pkg/.gitignore": "/gen/\nx/y.py\n"},
    ),
    "double stars: **/ , /** and /**/": Case(
        files=(
            "cache",
            "a/cache/x.py",
            "a/b/cache",
            "logs/a.txt",
            "logs/keep.txt",
            "logs/deep/k.txt",
            "m/z.txt",
            "m/n/o/z.txt",
            "mz.txt",
            "foo/bar/f",
            "foox/y/bar/f",
            "xay/q",
            "x/y/q",
        ),
        ignores={".gitignore": "**/cache\nlogs/**\n!logs/keep.txt\nm/**/z.txt\nfoo**/bar\nx**y\n"},
    ),
    "a lone ** matches everything; re-including needs the directories back": Case(
        files=("a.py", "d/b.py", "d/e/c.py"),
        ignores={".gitignore": "**\n!*.py\n!*/\n"},
    ),
    "trailing spaces are trimmed unless escaped": Case(
        files=("trail.txt", "sp ", "sp", "tab\t", "tab"),
        ignores={".gitignore": "trail.txt   \nsp\\ \ntab\t\n"},
    ),
    "escaped # and ! are literal; # starts a comment": Case(
        files=("#hash.txt", "!bang.txt", "#comment.txt", "bang.txt", "hash.txt", "*star", "plain"),
        ignores={".gitignore": "\\#hash.txt\n\\!bang.txt\n#comment.txt\n\\*star\n"},
    ),
    "directory-only patterns do not match files": Case(
        files=("out/a.py", "src/out", "src/data/x.csv", "data", "lib/data/y.csv"),
        ignores={".gitignore": "out/\ndata/\n!lib/data/\n"},
    ),
    "every directory ignored, one re-included by name": Case(
        files=("src/a.py", "docs/b.md", "x/src/c.py", "top.py"),
        ignores={".gitignore": "*/\n!src/\n"},
    ),
    ".git/info/exclude is lowest precedence": Case(
        files=("a.tmp", "keep.tmp", "secret/s.py", "sub/keep.tmp", "sub/b.tmp", "x.py"),
        ignores={
            ".git/info/exclude": "*.tmp\nsecret/\nx.py\n",
            ".gitignore": "!keep.tmp\n",
            "sub/.gitignore": "!b.tmp\n",
        },
    ),
    "character classes, ? and byte-wise names": Case(
        files=("a.c", "d.c", "file1.py", "file10.py", "xx.md", "9x.md", "2024.csv", "cafe", "café", "]b", "-c", "q.h"),
        ignores={
            ".gitignore": "[abc].c\nfile?.py\n[!0-9]x.md\n[[:digit:]]*.csv\ncaf?\n[]]b\n[a-]c\n[[:nope:]]\n[q.h\n"
        },
    ),
    "CRLF line ends and a byte-order mark": Case(
        files=("bom.txt", "cr.txt", "kept.txt"),
        ignores={".gitignore": "\ufeffbom.txt\r\ncr.txt\r\n"},
    ),
    "tracked files stay whatever the rules say": Case(
        files=("build/gen.py", "build/other.py", "LICENSE", "a.py"),
        ignores={".gitignore": "build/\nLICENSE\n"},
        tracked=("build/gen.py", "LICENSE"),
    ),
}


def _git_env(home: Path) -> dict[str, str]:
    """git isolated from this machine's user and system configuration (no global excludes file)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    home.mkdir(exist_ok=True)
    return {**env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "GIT_CONFIG_NOSYSTEM": "1"}


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, check=True, env=_git_env(repo.parent / "home")
    )


def _write(root: Path, files, ignores: dict[str, str]) -> None:
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel + "\n")
    for rel, text in ignores.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode("utf-8"))


def _build(tmp_path: Path, case: Case) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _write(repo, case.files, case.ignores)
    if case.tracked:
        _git(repo, "add", "-f", "--", *case.tracked)
    return repo


def git_listing(repo: Path) -> set[str]:
    """git's own answer: tracked files plus untracked files that are not ignored."""
    out = _git(repo, "-c", "core.quotePath=false", "ls-files", "-co", "--exclude-standard", "-z").stdout
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def scanned(root: Path) -> set[str]:
    return set(scan_sources(root).frame["path"])


@pytest.mark.parametrize("name", list(CASES))
def test_scan_agrees_with_git(tmp_path, name):
    repo = _build(tmp_path, CASES[name])
    expected = git_listing(repo)
    assert expected, "the case should keep something"
    assert scanned(repo) == expected


def test_tree_without_git_honours_its_gitignore_files(tmp_path):
    """The same files copied without .git (an sdist, an extracted archive) give git's answer from .gitignore alone."""
    for i, (name, case) in enumerate(CASES.items()):
        if case.tracked or any(rel.startswith(".git/") for rel in case.ignores):
            continue
        (tmp_path / f"case{i}").mkdir()
        repo = _build(tmp_path / f"case{i}", case)
        plain = tmp_path / f"case{i}" / "plain"
        shutil.copytree(repo, plain, ignore=shutil.ignore_patterns(".git"))
        assert not (plain / ".git").exists()
        assert scanned(plain) == git_listing(repo), name


def test_excluded_directories_are_pruned_and_counted(tmp_path):
    repo = _build(tmp_path, CASES["a file under an excluded directory cannot be re-included"])
    scan = scan_sources(repo)
    # build/ is pruned whole (one entry); dist/drop.py and dist/sub/ are left out one by one
    assert scan.n_ignored == 3
    assert "build/keep.py" not in set(scan.frame["path"]) and "dist/keep.py" in set(scan.frame["path"])


def test_cli_indexes_every_go_file_of_a_go_zero_shaped_repository(tmp_path, capsys):
    repo = tmp_path / "gozero"
    repo.mkdir()
    go_files = [
        "core/logx/logs.go",
        "core/logx/logs_test.go",
        "rest/server.go",
        "rest/httpx/router.go",
        "zrpc/internal/auth/auth.go",
        "tools/goctl/goctl.go",
    ]
    _write(repo, [*go_files, "go.mod", "LICENSE", "tools/goctl/goctl"], {".gitignore": "*\n!*.*\n!*/\n"})
    for rel in go_files:
        (repo / rel).write_text(f"package {Path(rel).parent.name}\n\nfunc F{len(rel)}() int {{ return {len(rel)} }}\n")
    _git(repo, "init", "-q")
    capsys.readouterr()
    assert main(["index", str(repo), "--history", "0"]) == 0
    out = capsys.readouterr().out
    paths = set(read_tables(repo / ".cra", ["files"])["files"]["path"])
    assert set(go_files) <= paths
    assert "LICENSE" not in paths and "tools/goctl/goctl" not in paths
    assert f"go {len(go_files)}" in out


NAMES = ("a", "b", "ab", "a.b", "x.go", ".h", "a b", "[a]", "a*", "é", "a-b")
ATOMS = (
    "a",
    "b",
    "*",
    "**",
    "?",
    "/",
    ".",
    "[ab]",
    "[!a]",
    "[a-c]",
    "\\*",
    "go",
    "!",
    " ",
    "\\ ",
    "[[:alpha:]]",
    "é",
    "[]]",
    "\\",
)


def _random_case(rng: random.Random) -> Case:
    """A small random tree with random ignore files built from the characters git's matcher treats specially."""
    dirs, files = [""], []
    for _ in range(rng.randint(4, 20)):
        rel = "/".join(filter(None, (rng.choice(dirs), rng.choice(NAMES))))
        if rel in dirs or rel in files or any(f == rel or rel.startswith(f + "/") for f in files):
            continue
        (dirs if rng.random() < 0.35 and rel.count("/") < 3 else files).append(rel)
    files += [f"{d}/f" for d in dirs[1:]]

    def patterns(n: int) -> str:
        lines = []
        for _ in range(n):
            line = "".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 5)))
            lines.append(
                ("!" if rng.random() < 0.3 else "")
                + ("/" if rng.random() < 0.15 else "")
                + line
                + ("/" if rng.random() < 0.2 else "")
            )
        return "\n".join(lines) + "\n"

    ignores = {
        "/".join(filter(None, (d, ".gitignore"))): patterns(rng.randint(1, 6))
        for d in rng.sample(dirs, min(len(dirs), 3))
    }
    if rng.random() < 0.3:
        ignores[".git/info/exclude"] = patterns(2)
    return Case(files=tuple(files), ignores=ignores)


def test_random_ignore_files_agree_with_git(tmp_path):
    """Seeded random patterns (stars, classes, escapes, negations, anchors) over random trees: git's answer every time."""
    for seed in range(40):
        case = _random_case(random.Random(seed))
        (tmp_path / str(seed)).mkdir()
        repo = _build(tmp_path / str(seed), case)
        assert scanned(repo) == git_listing(repo), (seed, case.ignores)
