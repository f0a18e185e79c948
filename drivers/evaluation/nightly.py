"""Scheduled job: re-index configured repositories whose HEAD moved, evaluate their cases, keep a metric history.

    python -m cra.drivers.evaluation.nightly --config jobs.toml

jobs.toml:
    history = "out/nightly/history.parquet"      # appended to, one row per repository per run
    [[repos]]
    name = "cra"
    path = "."                                    # relative paths are relative to the config file
    cases = "data/eval/self.jsonl"
    budget = 32768                                # optional
    floors = { "file_acc@5" = 0.8, "mrr" = 0.7 }  # optional: exit 1 when a metric falls below

Logs are one JSON object per line on stderr (event, repo, and what happened). Exit codes: 0 all good,
1 a metric fell below its floor (or a repository could not be evaluated), 2 a bad configuration.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from cra.drivers.common.errors import CraError
from cra.drivers.common.output import write_bytes_atomic


def log(event: str, **fields) -> None:
    """One structured log line: what happened, to which repository, with numbers."""
    record = {"ts": datetime.now(UTC).isoformat(timespec="seconds"), "event": event, **fields}
    print(json.dumps(record, default=str), file=sys.stderr, flush=True)


def load_config(path: Path) -> dict:
    """The job configuration with paths resolved, or a CraError naming what is wrong."""
    try:
        config = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise CraError(
            f"Job config {path} does not exist. Pass --config FILE (see `python -m cra.drivers.evaluation.nightly --help`)."
        ) from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CraError(f"Job config {path} is not valid TOML ({exc}). Fix it and retry.") from None
    base = Path(path).resolve().parent
    repos = config.get("repos")
    if not isinstance(repos, list) or not repos:
        raise CraError(f"Job config {path} has no [[repos]] entries. Add one with name, path and cases.")
    for entry in repos:
        missing = [k for k in ("name", "path", "cases") if k not in entry]
        if missing:
            raise CraError(f"Job config {path}: a [[repos]] entry lacks {', '.join(missing)}.")
        entry["path"] = (base / entry["path"]).resolve()
        entry["cases"] = (base / entry["cases"]).resolve()
    config["history"] = (base / config.get("history", "out/nightly/history.parquet")).resolve()
    return config


def refresh_index(entry: dict) -> dict:
    """Re-index the repository when its HEAD moved since the KB was built (or there is no KB)."""
    from cra.drivers.index.git_history import git_head
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.kb.store import default_kb_dir, read_metadata

    head = git_head(entry["path"])
    try:
        indexed_head = read_metadata(default_kb_dir(entry["path"])).get("head")
    except CraError:
        indexed_head = None
    if indexed_head is not None and indexed_head == head:
        log("index_unchanged", repo=entry["name"], head=head)
        return {"head": head, "reindexed": False}
    stats = index_repository(entry["path"])
    log(
        "reindexed",
        repo=entry["name"],
        head=head,
        previous_head=indexed_head,
        files=stats.get("n_files"),
        parsed=stats.get("n_parsed"),
        seconds=stats.get("seconds"),
    )
    return {"head": head, "reindexed": True}


def evaluate_repo(entry: dict) -> dict:
    """The aggregate metrics of the repository's case file (same code path as `cra evaluate`)."""
    from cra.drivers.evaluation import evaluate

    parser = argparse.ArgumentParser()
    evaluate.add_arguments(parser)
    args = parser.parse_args(
        [
            "--cases",
            str(entry["cases"]),
            "--repo",
            str(entry["path"]),
            "--budget",
            str(entry.get("budget", 32768)),
            "--workers",
            "1",
        ]
    )
    summary, _ = evaluate.evaluate_cases(evaluate.load_cases(entry["cases"]), args)
    return summary


def append_history(path: Path, rows: list[dict]) -> pd.DataFrame:
    """Append this run's rows to the Parquet history (rewritten atomically: old rows never lost)."""
    new = pd.DataFrame(rows)
    history = pd.concat([pd.read_parquet(path), new], ignore_index=True) if path.exists() else new
    buffer = io.BytesIO()
    history.to_parquet(buffer, index=False)
    write_bytes_atomic(path, buffer.getvalue())
    return history


def breaches(summary: dict, floors: dict) -> dict[str, tuple[float, float]]:
    """Metrics below their configured floor: name -> (value, floor); a missing metric counts as a breach."""
    out = {}
    for name, floor in floors.items():
        value = summary.get(name)
        if value is None or value != value or value < floor:
            out[name] = (value, floor)
    return out


def run(config: dict) -> int:
    rows, failed = [], False
    for entry in config["repos"]:
        started = time.perf_counter()
        try:
            index = refresh_index(entry)
            summary = evaluate_repo(entry)
        except CraError as exc:
            log("repo_failed", repo=entry["name"], error=str(exc))
            failed = True
            continue
        metrics = {k: v for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        rows.append(
            {
                "timestamp": datetime.now(UTC),
                "repo": entry["name"],
                "commit": index["head"],
                "reindexed": index["reindexed"],
                **metrics,
            }
        )
        below = breaches(summary, entry.get("floors", {}))
        log(
            "evaluated",
            repo=entry["name"],
            commit=index["head"],
            cases=summary.get("n_cases"),
            **{k: metrics.get(k) for k in ("file_acc@5", "mrr", "package_file_recall")},
            seconds=round(time.perf_counter() - started, 2),
        )
        for name, (value, floor) in below.items():
            log("below_floor", repo=entry["name"], metric=name, value=value, floor=floor)
        failed |= bool(below) or not summary.get("n_cases")
    if rows:
        history = append_history(config["history"], rows)
        log("history_written", path=str(config["history"]), rows=len(history))
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.evaluation.nightly", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--config", required=True, help="jobs TOML file")
    args = parser.parse_args(argv)
    try:
        return run(load_config(Path(args.config)))
    except CraError as exc:
        log("config_error", error=str(exc))
        print(f"cra nightly: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
