"""Writing results without ever leaving a half-written file where the user's file was."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from drivers.errors import CraError


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file beside `path`, then rename over it: readers see the old or the new file, never half."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise CraError(f"Cannot write {path} ({exc.strerror or exc}). Choose a writable location.") from None


def write_text_atomic(path: Path, text: str) -> None:
    """Text flavour of write_bytes_atomic (UTF-8)."""
    write_bytes_atomic(path, text.encode("utf-8"))
