"""Where a KB lives and which version is live: the part of the KB store that needs no pandas (see `cra.drivers.kb.store`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from cra.drivers.common.errors import CraError

KB_DIRNAME = ".cra"
CURRENT = "CURRENT"  # names the live version directory


def default_kb_dir(repo: Path) -> Path:
    """Where a repository's KB lives unless --kb says otherwise."""
    return Path(repo) / KB_DIRNAME


def live_version(kb_dir: Path) -> Path | None:
    pointer = kb_dir / CURRENT
    if not pointer.is_file():
        return None
    version = kb_dir / pointer.read_text().strip()
    return version if version.is_dir() else None


def check_writable(kb_dir: Path) -> None:
    try:
        kb_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=kb_dir, prefix=".probe-"):
            pass
    except OSError as exc:
        raise CraError(
            f"KB directory {kb_dir} is not writable ({exc.strerror or exc}). "
            "Fix its permissions or choose another with --kb DIR."
        ) from None


def repo_dir(repo: Path, flag: str = "--repo") -> Path:
    """The repository root given on the command line; a CraError when it does not exist or is not a directory
    (so the user is not told to index a path that is not there)."""
    repo = Path(repo)
    if not repo.exists():
        raise CraError(f"{flag} {repo} does not exist. Pass the repository's root directory.")
    if not repo.is_dir():
        raise CraError(f"{flag} {repo} is a file, not a directory. Pass the repository's root directory.")
    return repo
