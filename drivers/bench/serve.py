"""Benchmark of `cra serve` on Django's sdist: warm `get_context` latency over MCP (stdio), as an agent sees it.

    python -m cra.drivers.bench.serve [--calls 20] [--kb DIR]

Starts the installed `cra serve` as a subprocess and drives it with the SDK's client: the first call (which
indexes when the KB is missing), then p50/p95 of warm calls over the benchmark tasks, without and with --watch
(without, every call stat-walks the tree first), what one edit costs the next call (stat walk, incremental
re-index, KB reload), and the stat walk on its own. The KB lives outside the source tree (default
$CRA_CACHE/bench/django-serve-kb) so other benchmarks' KBs are left alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import anyio

from cra.drivers.bench.speed import CACHE, DJANGO, TASKS, django_source


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _session(repo: Path, kb: Path, calls: int, watch: bool, touched: Path | None) -> dict:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    args = ["serve", "--repo", str(repo), "--kb", str(kb), *(["--watch"] if watch else [])]
    params = StdioServerParameters(command=str(Path(sys.executable).with_name("cra")), args=args)
    out: dict = {}

    async def call(task: str) -> float:
        t0 = time.perf_counter()
        result = await client.call_tool("get_context", {"task": task})
        if result.is_error:
            raise RuntimeError(result.content[0].text)
        return time.perf_counter() - t0

    t0 = time.perf_counter()
    with open(os.devnull, "w") as err:
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=1800) as client:
            out["connect_s"] = time.perf_counter() - t0
            out["first_s"] = await call(TASKS[0])
            await call(TASKS[1])  # the first request of each kind loads lexicons and contents
            out["warm_s"] = [await call(TASKS[i % len(TASKS)]) for i in range(calls)]
            if touched is not None:
                original = touched.read_text()
                try:
                    touched.write_text(original + "\n# serve bench touch\n")
                    if watch:
                        await anyio.sleep(2.0)  # let the watcher re-index in the background first
                    out["after_edit_s"] = await call(TASKS[0])
                finally:
                    touched.write_text(original)  # the cached source stays as downloaded
                if watch:
                    await anyio.sleep(2.0)  # the watcher sees the restore; the call below waits for its re-index
                await call(TASKS[0])  # so the KB left behind matches the tree (else the next start re-indexes)
    return out


def main(argv: list[str] | None = None) -> None:
    from cra.drivers.serve.workspace import tree_fingerprint

    parser = argparse.ArgumentParser(prog="python -m cra.drivers.bench.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20, help="warm calls per server (default 20)")
    parser.add_argument("--kb", help="KB directory (default $CRA_CACHE/bench/django-serve-kb)")
    args = parser.parse_args(argv)
    repo = django_source()
    kb = Path(args.kb) if args.kb else CACHE / "django-serve-kb"
    touched = repo / "django" / "utils" / "text.py"
    print(f"benchmark repository: {repo} ({DJANGO} sdist), KB {kb}; {args.calls} warm calls over {len(TASKS)} tasks")
    had_kb = (kb / "CURRENT").is_file()
    plain = anyio.run(_session, repo, kb, args.calls, False, touched)
    watched = anyio.run(_session, repo, kb, args.calls, True, touched)
    walks, cpu = [], []
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        tree_fingerprint(repo)
        walks.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    ms = lambda s: f"{1000 * s:.0f}"  # noqa: E731
    rows = [
        ("server start to connected (s)", f"{plain['connect_s']:.2f}"),
        (
            "first get_context after connecting" + ("" if had_kb else ", Django indexed since start") + " (s)",
            f"{plain['first_s']:.2f}",
        ),
        (
            "warm get_context p50 / p95 (ms), stat walk per call",
            f"{ms(statistics.median(plain['warm_s']))} / {ms(_percentile(plain['warm_s'], 0.95))}",
        ),
        (
            "warm get_context p50 / p95 (ms), --watch",
            f"{ms(statistics.median(watched['warm_s']))} / {ms(_percentile(watched['warm_s'], 0.95))}",
        ),
        (
            "stat walk of the tree alone, median of 5: wall / CPU (ms)",
            f"{ms(statistics.median(walks))} / {ms(statistics.median(cpu))}",
        ),
        ("first call after editing 1 file: walk + incremental re-index + reload (s)", f"{plain['after_edit_s']:.2f}"),
        (
            "same with --watch, 2 s after the edit (the last KB answers if the re-index still runs) (s)",
            f"{watched['after_edit_s']:.2f}",
        ),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
