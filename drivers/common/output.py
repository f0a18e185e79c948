"""Writing results without ever leaving a half-written file where the user's file was."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from cra.drivers.common.errors import CraError

_UMASK = os.umask(0o022)  # read once, at import (single-threaded): os.umask can only be read by setting it
os.umask(_UMASK)


def _mode_for(path: Path) -> int:
    """The permissions of the file being replaced, or of a new file under the process's umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_UMASK


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file beside `path`, then rename over it: readers see the old or the new file, never half."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, _mode_for(path))  # mkstemp makes 0600; the result gets the mode a plain write would give
        os.replace(tmp, path)
    except OSError as exc:
        raise CraError(f"Cannot write {path} ({exc.strerror or exc}). Choose a writable location.") from None


def write_text_atomic(path: Path, text: str) -> None:
    """Text flavour of write_bytes_atomic (UTF-8)."""
    write_bytes_atomic(path, text.encode("utf-8"))
