"""Source trees for evaluation cases: per-instance checkouts, or a base commit materialised from a git mirror.

A mirror is only read (`git archive`, `git show`); a tree is extracted into a temporary directory next to
its final place and renamed in one step, so a tree directory that exists is always complete.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.common.home import cache_root


def trees_dir() -> Path:
    """Where materialised trees live: <cache>/trees/<owner>+<name>@<commit>/."""
    return cache_root() / "trees"


def repo_key(repo: str) -> str:
    """`owner/name` -> `owner+name`, the directory name used by mirrors and the tree cache."""
    return repo.strip().strip("/").replace("/", "+")


def mirror_git_dir(mirror_root: Path, repo: str) -> Path:
    """The bare git directory of a repository in a mirror root laid out as <owner>+<name>/repo."""
    return Path(mirror_root) / repo_key(repo) / "repo"


def _git(git_dir: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=False, **kwargs)


def has_commit(git_dir: Path, commit: str) -> bool:
    """Whether the git directory holds this commit."""
    return _git(git_dir, "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0


def missing_blobs(git_dir: Path, commit: str) -> list[str]:
    """Paths at `commit` whose blobs the mirror lacks (snapshots may leave out large binary data files)."""
    listing = _git(git_dir, "ls-tree", "-r", "-z", "--full-tree", commit).stdout.decode(errors="replace")
    entries = [e.split("\t", 1) for e in listing.split("\0") if "\t" in e]
    blobs = [(meta.split()[2], path) for meta, path in entries if meta.split()[1] == "blob"]
    if not blobs:
        return []
    check = _git(git_dir, "cat-file", "--batch-check", input="".join(f"{sha}\n" for sha, _ in blobs).encode())
    answers = check.stdout.decode(errors="replace").splitlines()
    return [path for (sha, path), answer in zip(blobs, answers) if answer.endswith(" missing")]


def _extract(git_dir: Path, commit: str, into: Path, exclude: list[str]) -> str | None:
    """git archive | tar -x into `into`; the error text, or None when it worked. The commit's own .gitattributes are
    not applied (`--worktree-attributes` of a bare mirror: none): `export-ignore` would leave out what a checkout
    has, such as tests and the adapters of a monorepo."""
    pathspec = ["--", ".", *(f":(exclude,literal){p}" for p in exclude)] if exclude else []
    command = ["git", f"--git-dir={git_dir}", "archive", "--worktree-attributes", commit, *pathspec]
    archive = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    untar = subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, capture_output=True, check=False)
    archive.stdout.close()
    archive_err = archive.stderr.read().decode(errors="replace")
    archive.stderr.close()
    if archive.wait() != 0 or untar.returncode != 0:
        return (archive_err or untar.stderr.decode(errors="replace")).strip()
    return None


def materialize_tree(git_dir: Path, commit: str, repo: str, root: Path | None = None) -> Path:
    """The tree of `repo` at `commit`, extracted once from the mirror (git archive | tar -x) into the cache.

    Files whose blobs the mirror lacks are left out (listed in `<tree>.missing` beside it).
    """
    root = Path(root) if root else trees_dir()
    final = root / f"{repo_key(repo)}@{commit}"
    if final.is_dir():
        return final
    if not Path(git_dir).is_dir():
        raise CraError(f"No git mirror at {git_dir}. Fetch {repo} there, or pass --trees DIR with checkouts.")
    if not has_commit(git_dir, commit):
        raise CraError(f"The mirror {git_dir} has no commit {commit}. Update the mirror (git fetch) and retry.")
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root, prefix=f".tmp-{repo_key(repo)}-"))
    try:
        missing = missing_blobs(git_dir, commit)
        error = _extract(git_dir, commit, staging, missing)
        if error:
            raise CraError(f"Could not extract {repo}@{commit} from {git_dir}: {error}")
        if missing:
            root.joinpath(f"{final.name}.missing").write_text("".join(p + "\n" for p in missing))
        try:
            staging.rename(final)
        except OSError:  # another worker finished the same tree first: keep theirs
            if not final.is_dir():
                raise
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def indexed_tree_kb(tree: Path, git_dir: Path, commit: str) -> Path:
    """The KB directory of a tree extracted at `commit`, indexed once with its mirror's history up to that commit
    (never later: no look-ahead at the fix). A KB written without that history (an older run's, or one indexed
    without the mirror) or by other index code is indexed again: every development figure assumes the history
    signals are on, and the KB this code would write."""
    from cra.drivers.index.fingerprint import code_digest
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.kb.store import default_kb_dir, has_usable_kb, read_metadata

    kb_dir = default_kb_dir(tree)
    metadata = read_metadata(kb_dir) if has_usable_kb(kb_dir) else {}
    if not metadata.get("history_available") or metadata.get("index_code") != code_digest():
        index_repository(tree, history_from=(Path(git_dir), commit))
    return kb_dir


def read_at_commit(git_dir: Path, commit: str, path: str) -> str | None:
    """A file's text at a commit in a git directory (None when absent)."""
    done = _git(git_dir, "show", f"{commit}:{path}")
    return done.stdout.decode("utf-8", errors="replace") if done.returncode == 0 else None


def resolve_tree(
    case: dict,
    *,
    repo: Path | None = None,
    trees: Path | None = None,
    mirror: Path | None = None,
    base_dir: Path | None = None,
) -> tuple[dict, str | None]:
    """Where a case's source tree is or will come from: ({"tree": path} or {"mirror", "commit", "repo"}, reason)."""
    repo_path = case.get("repo_path")
    if repo_path:
        path = Path(repo_path)
        if not path.is_absolute():
            path = (Path(repo) if repo else Path(base_dir or Path.cwd())) / path
        return ({"tree": str(path.resolve())}, None) if path.is_dir() else ({}, f"repo_path {path} is not a directory")
    if trees is not None:
        path = Path(trees) / str(case["case_id"])
        if path.is_dir():
            return {"tree": str(path.resolve())}, None
    if mirror is not None and case.get("repo") and case.get("base_commit"):
        git_dir = mirror_git_dir(mirror, case["repo"])
        if not git_dir.is_dir():
            return {}, f"no mirror of {case['repo']} at {git_dir}"
        return {"mirror": str(git_dir), "commit": case["base_commit"], "repo": case["repo"]}, None
    if repo is not None and not case.get("repo"):
        return (
            ({"tree": str(Path(repo).resolve())}, None)
            if Path(repo).is_dir()
            else ({}, f"--repo {repo} is not a directory")
        )
    if trees is not None:
        return {}, f"no checkout at {Path(trees) / str(case['case_id'])}"
    wanted = "--mirror DIR or --trees DIR" if case.get("repo") else "--repo PATH (or a repo_path in the case)"
    return {}, f"no repository for this case: pass {wanted}"
