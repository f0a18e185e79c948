"""What each signal costs: its index-time nodes, its lexicon load and its request-time nodes.

    python -m cra.drivers.bench.timing --repo PATH [--task TEXT ...]

Times every Hamilton node of an index run and of requests with a lifecycle hook, then sums the nodes that
exist for a signal. The repository must already have a KB (`cra index PATH`); the index run here is extra
and writes nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pandas as pd
from hamilton.lifecycle import NodeExecutionHook

from cra.dataflows.retrieval.signal_list import SIGNAL_LIST


class NodeTimer(NodeExecutionHook):
    """Wall seconds per node name, summed over every run it watches."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._started: dict[str, float] = {}

    def run_before_node_execution(self, *, node_name: str, **kwargs) -> None:
        self._started[node_name] = time.perf_counter()

    def run_after_node_execution(self, *, node_name: str, **kwargs) -> None:
        elapsed = time.perf_counter() - self._started.pop(node_name, time.perf_counter())
        self.seconds[node_name] = self.seconds.get(node_name, 0.0) + elapsed


def index_node_seconds(repo: Path) -> dict[str, float]:
    """Seconds per index node of a full, single-process index run of repo (git history included)."""
    from cra.drivers.index.indexer import index_frames

    timer = NodeTimer()
    index_frames(Path(repo), workers=1, adapters=(timer,))
    return timer.seconds


def lexicon_load_seconds(kb_dir: Path) -> dict[str, float]:
    """Seconds to make each BM25 lexicon usable on a freshly loaded KB (first-request cost)."""
    from cra.drivers.kb.store import REQUEST_TABLES, KnowledgeBase, read_metadata, read_tables

    kb = KnowledgeBase(kb_dir, read_metadata(kb_dir), read_tables(kb_dir, REQUEST_TABLES))  # not the shared cache
    out = {}
    for name in ("file_lexicon", "symbol_lexicon", "commit_lexicon"):
        started = time.perf_counter()
        getattr(kb, name)
        out[name] = time.perf_counter() - started
    return out


def request_node_seconds(kb_dir: Path, tasks: list[str], repeats: int = 3) -> pd.DataFrame:
    """Seconds per retrieval node (rows) for each warm request (columns), so medians can be taken."""
    from cra.drivers.kb.store import load_kb
    from cra.drivers.retrieval.retriever import retrieve

    kb = load_kb(kb_dir)
    retrieve(kb, tasks[0])  # warm the KB's lazy tables
    runs = {}
    for r in range(repeats):
        for i, task in enumerate(tasks):
            timer = NodeTimer()
            retrieve(kb, task, adapters=(timer,))
            runs[(r, i)] = timer.seconds
    return pd.DataFrame(runs).fillna(0.0)


def signal_costs(repo: Path, kb_dir: Path, tasks: list[str], repeats: int = 3) -> pd.DataFrame:
    """Per signal: index seconds, lexicon load seconds and median request milliseconds of its own nodes."""
    index = index_node_seconds(repo)
    load = lexicon_load_seconds(kb_dir)
    request = request_node_seconds(kb_dir, tasks, repeats)
    rows = {}
    for signal in SIGNAL_LIST:  # the nodes (and lexicon) that exist only for this signal
        per_run = request.reindex([*signal.helper_nodes, signal.name]).fillna(0.0).sum()
        rows[signal.name] = {
            "index_s": round(sum(index.get(n, 0.0) for n in signal.index_nodes), 3),
            "lexicon_load_s": round(load.get(signal.lexicon, 0.0), 3) if signal.lexicon else 0.0,
            "request_ms_p50": round(1000 * statistics.median(per_run), 1),
        }
    rows["(whole request)"] = {
        "index_s": round(sum(index.values()), 3),
        "lexicon_load_s": round(sum(load.values()), 3),
        "request_ms_p50": round(1000 * statistics.median(request.sum()), 1),
    }
    return pd.DataFrame(rows).T.rename_axis("signal")


def main(argv: list[str] | None = None) -> int:
    from cra.drivers.kb.store import default_kb_dir, has_usable_kb

    parser = argparse.ArgumentParser(prog="python -m cra.drivers.bench.timing", description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, type=Path)
    parser.add_argument("--kb", type=Path, help="KB directory (default: the repository's)")
    parser.add_argument("--task", action="append", help="task text (repeatable; default: three generic tasks)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    kb_dir = args.kb or default_kb_dir(args.repo)
    if not has_usable_kb(kb_dir):
        print(f"error: no usable KB at {kb_dir}; run `cra index {args.repo}` first", file=sys.stderr)
        return 2
    tasks = args.task or [
        "Fix the crash when the config file is missing",
        "Add a timeout option to the cache backend",
        "Parsing an empty query raises a TypeError",
    ]
    print(signal_costs(args.repo, kb_dir, tasks, args.repeats).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
