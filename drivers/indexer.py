"""Index a repository: scan files and git history, run the index dataflow, return the KB frames + stats."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

os.environ.setdefault("HAMILTON_AUTOLOAD_EXTENSIONS", "0")

from hamilton import driver  # noqa: E402

from dataflows.index import discovery, edges, history, lexical_terms, metadata, parsing  # noqa: E402
from dataflows.index.schema import TABLES  # noqa: E402
from drivers.git_history import git_head, git_log  # noqa: E402
from drivers.sources import scan_sources  # noqa: E402

INDEX_MODULES = (discovery, parsing, edges, history, metadata, lexical_terms)
KB_OUTPUTS = [f"kb_{name}" for name in TABLES]


def index_driver() -> driver.Driver:
    """The Hamilton driver over the index dataflow modules."""
    return driver.Builder().with_modules(*INDEX_MODULES).build()


def _no_progress(done: int, total: int) -> None:
    """Progress sink when the caller wants none."""


def index_frames(
    root: Path,
    previous_kb: dict[str, pd.DataFrame] | None = None,
    history: int = 2000,
    max_file_bytes: int = 1_000_000,
    count_tokens_batch: Callable[[list[str]], list[int]] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    max_commit_files: int = 50,
) -> tuple[dict[str, pd.DataFrame], dict]:
    """KB tables by name (no `kb_` prefix) and run stats (index_stats + scan info + head + seconds) for root."""
    started = time.perf_counter()
    root = Path(root)
    if count_tokens_batch is None:
        from drivers.tokens import count_tokens_batch
    scan = scan_sources(root, max_file_bytes=max_file_bytes)
    inputs = {
        "source_files": scan.frame,
        "previous_kb": previous_kb,
        "git_log": git_log(root, history) if history > 0 else None,
        "count_tokens_batch": count_tokens_batch,
        "max_commit_files": max_commit_files,
        "on_progress": on_progress or _no_progress,
    }
    results = index_driver().execute([*KB_OUTPUTS, "index_stats"], inputs=inputs)
    tables = {name: results[f"kb_{name}"] for name in TABLES}
    stats = {
        **results["index_stats"],
        "n_ignored": scan.n_ignored,
        "oversized": list(scan.oversized),
        "unreadable": [list(u) for u in scan.unreadable],
        "head": git_head(root) if inputs["git_log"] is not None else None,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return tables, stats
