"""Insert and query latency of the review-findings store with 10,000 findings (`make bench-findings`).

    python -m cra.drivers.bench.findings [--findings 10000] [--queries 100] [--data out/findings]

Findings are generated from defect templates x files x 20 repositories of 4 owners (or, with --data, cycled from a
mined `findings.jsonl`), embedded by the shipped static model and stored in a temporary database. Prints: model load
time, embeddings/s, store insert time (embedding excluded), whole-import rate, and per-query latency (median / p95)
of the store's k-nearest alone and its FTS5 BM25 search alone (wall and CPU time: on a busy machine the CPU time is
the stable figure), and of the whole `recall_findings` (query dataflow, one embedding, both searches, fusion,
re-rank).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DEFECTS = (
    "null pointer dereference when {x} is missing",
    "SQL injection: {x} is concatenated into the query",
    "race condition: {x} is shared between threads without a lock",
    "off-by-one in the loop over {x}",
    "resource leak: {x} is never closed on the error path",
    "{x} is recomputed on every request; cache it",
    "unchecked error returned by {x}",
    "timezone-naive comparison of {x}",
    "integer overflow in {x} arithmetic",
    "missing input validation for {x}",
)
THINGS = (
    "the config file",
    "the user id",
    "the session token",
    "the request body",
    "the page cursor",
    "the cache key",
    "the retry counter",
    "the socket",
    "the parsed header",
    "the upload path",
    "the feature flag",
    "the tenant",
)
FILES = (
    "app/db.py",
    "api/handlers.go",
    "web/src/cart.ts",
    "core/Parser.java",
    "lib/cache.rb",
    "src/net.rs",
    "svc/auth.cs",
    "docs/setup.md",
    "tools/run.sh",
    "kernel/io.c",
)


def synthetic_findings(n: int) -> list[dict]:
    """n distinct findings over 20 repositories of 4 owners."""
    combos = itertools.cycle(itertools.product(DEFECTS, THINGS, FILES))
    return [
        {
            "finding_text": d.format(x=x) + f" (case {i})",
            "severity": ("major", "minor")[i % 2],
            "category": "correctness",
            "file_path": f,
            "outcome": "accepted",
            "repo": f"owner{i % 4}/repo{i % 20}",
            "created_at": "2026-01-01T00:00:00Z",
        }
        for i, (d, x, f) in zip(range(n), combos)
    ]


def _ms(samples: list[float]) -> str:
    return f"median {np.median(samples) * 1000:.1f} ms, p95 {np.percentile(samples, 95) * 1000:.1f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cra.drivers.bench.findings", description=__doc__.split("\n\n")[0])
    parser.add_argument("--findings", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--data", help="a mined findings directory (findings.jsonl) to cycle instead of templates")
    args = parser.parse_args(argv)

    from cra.drivers.findings.embeddings import StaticModelProvider
    from cra.drivers.findings.review import CANDIDATE_DEPTH, recall_findings
    from cra.drivers.findings.store import (
        add_findings,
        document_text,
        findings_count,
        lexical_findings,
        nearest_findings,
        open_store,
    )

    if args.data:
        mined = [json.loads(line) for line in (Path(args.data) / "findings.jsonl").read_text().splitlines() if line]
        findings = [
            {**f, "finding_text": f"{f['finding_text']} (copy {i // len(mined)})"}
            for i, f in zip(range(args.findings), itertools.cycle(mined))
        ]
    else:
        findings = synthetic_findings(args.findings)
    start = time.perf_counter()
    provider = StaticModelProvider()
    load = time.perf_counter() - start
    start = time.perf_counter()
    vectors = provider.generate_many([document_text(f) for f in findings])
    embed = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "findings.db"
        with open_store(db) as conn:
            start, cpu = time.perf_counter(), time.process_time()
            for i in range(0, len(findings), 1_000):
                add_findings(conn, findings[i : i + 1_000], vectors[i : i + 1_000], provider.model)
            insert, insert_cpu = time.perf_counter() - start, time.process_time() - cpu
            count = findings_count(conn)
            titles = [
                f"fix {d.format(x=x)}" for d, x in itertools.islice(itertools.product(DEFECTS, THINGS), args.queries)
            ]
            query_vectors = provider.generate_many(titles)
            repos = [f"owner{i % 4}/repo{i % 20}" for i in range(len(titles))]
            knn, knn_cpu, fts, fts_cpu = [], [], [], []
            for title, vector, repo in zip(titles, query_vectors, repos):
                t, c = time.perf_counter(), time.process_time()
                nearest_findings(conn, vector, provider.model, repo, CANDIDATE_DEPTH, sharing_enabled=True)
                knn.append(time.perf_counter() - t)
                knn_cpu.append(time.process_time() - c)
                t, c = time.perf_counter(), time.process_time()
                lexical_findings(conn, title, repo, CANDIDATE_DEPTH, sharing_enabled=True)
                fts.append(time.perf_counter() - t)
                fts_cpu.append(time.process_time() - c)
        whole = []
        for title, repo in zip(titles, repos):
            t = time.perf_counter()
            recall_findings(title, "", ["app/db.py"], repo=repo, sharing_enabled=True, db_path=db, provider=provider)
            whole.append(time.perf_counter() - t)
    print(f"static model: load {load:.2f} s, {len(findings) / embed:,.0f} embeddings/s ({provider.dimension} dims)")
    print(
        f"insert {count:,} findings (embedding excluded, 1,000 per transaction): {insert:.2f} s, "
        f"{count / insert:,.0f} findings/s (CPU {insert_cpu:.2f} s); whole import incl. embedding {count / (insert + embed):,.0f} findings/s"
    )
    print(f"k-nearest (k={CANDIDATE_DEPTH}, owner partition) over {count:,}: {_ms(knn)} (CPU {_ms(knn_cpu)})")
    print(f"FTS5 BM25 (top {CANDIDATE_DEPTH}, owner's repositories) over {count:,}: {_ms(fts)} (CPU {_ms(fts_cpu)})")
    print(f"recall_findings (query dataflow + 1 embedding + both searches + fusion + re-rank): {_ms(whole)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
