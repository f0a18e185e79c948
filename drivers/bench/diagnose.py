"""`python -m cra.drivers.bench.diagnose` (`make bench-diagnose`): a cold `cra diagnose` on a big run directory.

The run directory is generated in a temporary directory: 4,990 logs of 4 KiB (spread over the last 72 hours) and
10 logs grown to 200 MiB each with `truncate` (sparse: real text at both ends, a hole between, so ~2 GB of logs
cost ~21 MB of disk), plus earlier attempt logs of the diagnosed phase. The repository is Django's sdist
(`cra.drivers.bench.speed.django_source`), ranked through a KB indexed outside its tree (reused when one is there). Each
figure is a fresh `cra diagnose` process (wall time, and its own peak RSS from wait4), median of 5.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cra.drivers.bench.speed import CACHE, django_source

SMALL_LOGS, SMALL_BYTES = 4_990, 4 * 1024
BIG_LOGS, BIG_BYTES = 10, 200 * 2**20
RUNS = 5
PHASE = "phase_bench"
KB_DIRS = ("django-diagnose-kb", "django-serve-kb", "django-kb")  # reused in this order when usable
BUNDLE = {
    "error_message": "TemplateDoesNotExist: registration/login.html",
    "stack_trace": 'Traceback (most recent call last):\n  File "django/core/handlers/base.py", line 197, in _get_response\n'
    '  File "django/template/response.py", line 114, in render\nTemplateDoesNotExist: registration/login.html',
    "root_cause": "Unknown",
}


def _kb(repo: Path) -> Path:
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.kb.store import has_usable_kb

    for name in KB_DIRS:
        if has_usable_kb(CACHE / name):
            return CACHE / name
    print(f"indexing {repo} into {CACHE / KB_DIRS[0]} (once, ~40 s)", file=sys.stderr)
    index_repository(repo, CACHE / KB_DIRS[0], history=0)
    return CACHE / KB_DIRS[0]


def _stamp(path: Path, when: datetime) -> None:
    os.utime(path, (when.timestamp(), when.timestamp()))


def make_run_dir(root: Path, now: datetime) -> int:
    """The generated run directory; returns its apparent size in bytes."""
    line = "2026-06-01 12:00:00 INFO worker handled request /accounts/login/ in 12 ms status=200 user=anonymous\n"
    small = (line * (SMALL_BYTES // len(line) + 1))[:SMALL_BYTES].encode()
    (root / "logs").mkdir(parents=True)
    for i in range(SMALL_LOGS):
        path = root / "logs" / f"step_{i:04d}.log"
        path.write_bytes(small)
        _stamp(path, now - timedelta(hours=1 + 71 * i / SMALL_LOGS))
    head = (line * 200).encode()
    tail = (
        "DEBUG retrying template lookup\n" * 2500 + "ERROR: TemplateDoesNotExist: registration/login.html\n"
    ).encode()
    (root / "workers").mkdir()
    for k in range(BIG_LOGS):
        path = root / "workers" / f"worker_{k}.log"
        with open(path, "wb") as handle:
            handle.write(head)
            handle.truncate(BIG_BYTES)
            handle.seek(BIG_BYTES - len(tail))
            handle.write(tail)
        _stamp(path, now - timedelta(minutes=5 + k))
    for n in (1, 2):
        path = root / f"{PHASE}_attempt_{n}.log"
        path.write_text(f"attempt {n}\nERROR: TemplateDoesNotExist: registration/login.html\nFAILED\n")
        _stamp(path, now - timedelta(minutes=30 * n))
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _cold(argv: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB, stdout) of one fresh process."""
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
        out.seek(0)
        return wall, usage.ru_maxrss / 1024, out.read().decode()


def main() -> None:
    repo = django_source()
    kb = _kb(repo)
    cra = str(Path(sys.executable).with_name("cra"))
    with tempfile.TemporaryDirectory(prefix="cra-diagnose-bench-") as tmp:
        tmp = Path(tmp)
        run = tmp / "run"
        t0 = time.perf_counter()
        apparent = make_run_dir(run, datetime.now(UTC))
        made = time.perf_counter() - t0
        files = sum(1 for p in run.rglob("*") if p.is_file())
        bundle = tmp / "handoff.json"
        bundle.write_text(json.dumps(BUNDLE))
        base = [
            cra,
            "diagnose",
            "--bundle",
            str(bundle),
            "--run-dir",
            str(run),
            "--repo",
            str(repo),
            "--phase-id",
            PHASE,
            "--attempt",
            "3",
            "--memory-dir",
            str(tmp / "memory"),
            "--db",
            str(tmp / "none.db"),
        ]
        print(
            f"run directory: {files} files, {apparent / 2**30:.2f} GiB of logs (10 sparse, grown with truncate), "
            f"made in {made:.1f} s; repository: {repo} with KB {kb}"
        )
        rows = []
        for label, argv in (
            ("KB ranking (--kb)", [*base, "--kb", str(kb)]),
            ("keyword ranking (no KB)", base),
            ("--help (interpreter + cra imports only)", [cra, "--help"]),
        ):
            runs = [_cold(argv) for _ in range(RUNS)]
            stats = json.loads(runs[-1][2])["stats"] if "diagnose" in argv else {}
            rows.append((label, statistics.median(r[0] for r in runs), max(r[1] for r in runs), stats))
    print(f"cold `cra diagnose`, median of {RUNS} processes (aim: < 1 s, < 300 MB)")
    for label, wall, rss, stats in rows:
        detail = (
            (
                f"  [{stats['run_artifacts_count']} artifacts / {stats['run_artifacts_size']} B, {stats['sot_files_count']} "
                f"SOT / {stats['sot_files_size']} B, ranked by {stats['sot_ranking']}]"
            )
            if stats
            else ""
        )
        print(f"  {label:<42} wall {wall:5.2f} s   peak RSS {rss:4.0f} MB{detail}")


if __name__ == "__main__":
    main()
