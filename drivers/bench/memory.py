"""Memory query latency (target: < 100 ms for 50 memories in 10 files): `python -m cra.drivers.bench.memory`.

Two synthetic stores in a temporary directory: 50 memories in 10 files, and 10,000 memories that all apply to
the queried context (universal, go, project hydra, its task coding). Measured in-process (store read + Hamilton
DAG + token counting; median of repeats after one warm-up) and as a cold `cra memory query` process (median of 5),
each as wall time and CPU time: on a shared machine the CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cra.dataflows.memory.models import MemoryQuery
from cra.drivers.common.output import write_text_atomic
from cra.drivers.memory.memories import memory_context_for, query_memories

NOW = datetime(2026, 6, 1, tzinfo=UTC)
CONTEXT = {"project": "hydra", "language": "go", "task": "coding"}
TASK_TEXT = "the scheduler retries failed jobs without backoff; make the retry policy configurable"
WORDS = (
    "scheduler retry backoff queue postgres lint test fixture goroutine errgroup context cancel timeout "
    "logging error wrap review commit branch deploy config yaml schema migration index cache http client "
    "server handler middleware token budget import module package vendor docs changelog release"
).split()
SMALL = {
    "profile.json": 5,
    "corrections.json": 5,
    "languages/go.json": 5,
    "languages/python.json": 5,
    "languages/rust.json": 5,
    "projects/hydra/decisions.json": 5,
    "projects/hydra/tasks/coding.json": 5,
    "projects/hydra/tasks/review.json": 5,
    "projects/atlas/decisions.json": 5,
    "projects/atlas/tasks/coding.json": 5,
}
LARGE = {
    "profile.json": 2500,
    "corrections.json": 1500,
    "languages/go.json": 3000,
    "projects/hydra/decisions.json": 2000,
    "projects/hydra/tasks/coding.json": 1000,
}
KEYS = {
    "profile.json": "general",
    "corrections.json": "corrections",
    "languages": "preferences",
    "decisions.json": "decisions",
    "tasks": "rules",
}


def _key(rel: str) -> str:
    parts = rel.split("/")
    return KEYS.get(parts[-1]) or KEYS[parts[-2]]


def write_store(root: Path, layout: dict[str, int], seed: int = 0) -> int:
    """A synthetic hierarchy: per file, that many memories of 8-30 words, up to a year old; the count written."""
    rng = random.Random(seed)
    for rel, n in layout.items():
        entries = [
            {
                "content": " ".join(rng.choices(WORDS, k=rng.randint(8, 30))).capitalize() + ".",
                "timestamp": (NOW - timedelta(days=rng.uniform(0, 365))).isoformat(timespec="seconds"),
                "confidence": round(rng.uniform(0.3, 1.0), 2),
            }
            for _ in range(n)
        ]
        write_text_atomic(root / rel, json.dumps({_key(rel): entries}))
    return sum(layout.values())


def _median_ms(fn, repeats: int) -> tuple[float, float]:
    """Median (wall, CPU) milliseconds of fn() in this process, after a warm-up (encoding, driver build)."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall) * 1000, statistics.median(cpu) * 1000


def _cold_cli_ms(root: Path, repeats: int = 5) -> tuple[float, float]:
    """Median (wall, CPU) milliseconds of a fresh `cra memory query` process (CPU: the child's user + system)."""
    cra = Path(sys.executable).with_name("cra")
    argv = [
        str(cra),
        "memory",
        "query",
        "--memory-dir",
        str(root),
        "--project",
        "hydra",
        "--language",
        "go",
        "--task",
        "coding",
        "--text",
        TASK_TEXT,
        "--budget",
        "1500",
        "--json",
    ]
    wall, cpu = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(wall) * 1000, statistics.median(cpu) * 1000


def measure(root: Path, repeats: int) -> dict:
    """Median milliseconds of a query with and without task text, of the memory section, and of a cold CLI call."""

    def query(text):
        return lambda: query_memories(root, MemoryQuery(), task_text=text, budget=1500, now=NOW, **CONTEXT)

    return {
        "query": _median_ms(query(None), repeats),
        "query + task text": _median_ms(query(TASK_TEXT), repeats),
        "memory_context_for": _median_ms(
            lambda: memory_context_for(root, "hydra", "go", TASK_TEXT, 1500, NOW), repeats
        ),
        "cold CLI query": _cold_cli_ms(root),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cra.drivers.bench.memory", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21, help="in-process repeats per measurement (default 21)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cra-memory-bench-") as tmp:
        rows = []
        for name, layout in (("50 memories / 10 files", SMALL), ("10,000 memories / 5 files", LARGE)):
            root = Path(tmp) / name.split()[0].replace(",", "")
            write_store(root, layout)
            rows.append((name, measure(root, args.repeats if layout is SMALL else max(3, args.repeats // 3))))
    columns = list(rows[0][1])
    print(
        "memory query latency, median ms as wall (CPU) (target: < 100 ms for 50 memories in 10 files);"
        f" load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    print(f"{'store':<28}" + "".join(f"{c:>24}" for c in columns))
    for name, figures in rows:
        print(f"{name:<28}" + "".join(f"{f'{figures[c][0]:.1f} ({figures[c][1]:.1f})':>24}" for c in columns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
