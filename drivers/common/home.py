"""Where cra keeps things: durable user data under $CRA_HOME (default ~/.cra), caches under $CRA_CACHE."""

from __future__ import annotations

import os
from pathlib import Path


def cra_home() -> Path:
    """Root of durable user data (memories, escalation tasks, review findings): $CRA_HOME, else ~/.cra."""
    return Path(os.environ.get("CRA_HOME") or Path.home() / ".cra")


def cache_root() -> Path:
    """Root of cra's caches (deleting it only costs time): $CRA_CACHE, else ~/.cache/cra."""
    return Path(os.environ.get("CRA_CACHE") or Path.home() / ".cache" / "cra")


def home_default(name: str) -> str:
    """A --help text's default for `name` under $CRA_HOME: the real path now (so a set CRA_HOME shows), then its rule."""
    return f"{cra_home() / name}, i.e. $CRA_HOME/{name}"
