"""`cra evaluate`: retrieval quality over a case file, pipeline beside BM25 baselines (over files, over symbols).

Per case: the file ranking and the package at --budget (file metrics), the symbol ranking (function metrics), and
one package per --budgets entry (the budget curve: gold bodies against package tokens).

Plan: read and normalise the cases, resolve each case's tree (checkout, --repo, or a mirror's base
commit), index the distinct trees (fan-out), evaluate the cases (fan-out), print the aggregate, and write
summary.json + cases.parquet. Both fan-outs are the Hamilton DAG of `cra.dataflows.evaluation.batch`, run on
the chosen engine; the side-effecting work per item is `index_tree` / `evaluate_case` below (module-level,
so Dask and process pools can pickle them).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import sys
import time
from functools import partial
from pathlib import Path

import pandas as pd

from cra.drivers.common.errors import CraError
from cra.drivers.common.output import write_bytes_atomic

DEFAULT_BUDGET = 32_768
DEFAULT_BUDGETS = "4096,8192,32768,auto"
ENGINES = ("local", "dask", "ray")
TABLE_METRICS = ("file_acc@1", "file_acc@3", "file_acc@5", "file_acc@10", "file_recall@10", "file_precision@10", "mrr")
FUNCTION_TABLE_METRICS = (
    "function_hit@1",
    "function_hit@5",
    "function_hit@10",
    "function_acc@1",
    "function_acc@5",
    "function_acc@10",
    "function_mrr",
)
# the per-budget block: pipeline package metrics, then the BM25 bodies-within-budget baseline
BUDGET_TABLE_METRICS = (
    "gold_body",
    "bm25_gold_body",
    "gold_body_any",
    "gold_named",
    "token_efficiency",
    "package_tokens",
    "bm25_package_tokens",
)
BUDGET_TABLE_HEADS = (
    "gold_body",
    "bm25_gold_body",
    "gold_body_any",
    "gold_named",
    "token_eff",
    "pkg_tokens",
    "bm25_tokens",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `cra evaluate`."""
    parser.add_argument(
        "--cases",
        required=True,
        help="case file: JSON list or JSONL; each case a task with its expected files (task, expected_files), or a SWE-bench-style instance (instance_id, repo, base_commit, problem_statement, patch or gold_files)",
    )
    parser.add_argument(
        "--repo", help="repository for cases without repo_path/repo (relative repo_path resolves against it)"
    )
    parser.add_argument("--engine", choices=ENGINES, default="local", help="where cases run (default local processes)")
    parser.add_argument(
        "--out", help="directory for summary.json and cases.parquet (created with its parents if missing)"
    )
    parser.add_argument(
        "--budget", type=int, default=DEFAULT_BUDGET, help=f"token budget per case (default {DEFAULT_BUDGET})"
    )
    parser.add_argument(
        "--budgets",
        default=DEFAULT_BUDGETS,
        help=f"budgets of the per-budget metrics, comma-separated tokens or auto (default {DEFAULT_BUDGETS})",
    )
    parser.add_argument("--trees", help="per-instance checkouts: DIR/<instance_id>/")
    parser.add_argument("--mirror", help="git mirrors laid out as DIR/<owner>+<name>/repo; base commits are extracted")
    parser.add_argument("--address", help="Dask scheduler address (default: a LocalCluster)")
    parser.add_argument("--limit", type=int, help="evaluate only the first N cases")
    parser.add_argument("--workers", type=int, help="parallel workers (default: CPUs, at most one per item)")
    parser.add_argument(
        "--seed-variants",
        default="",
        help="comma-separated behaviours of the original retrieval specification to use instead of ours: "
        "task_types, budget_split, floor, eviction, primaries, or all (README: every deviation from the specifications)",
    )
    parser.add_argument(
        "--reader", metavar="DIR", help="a code-reader model directory to re-order with (as cra retrieve)"
    )


# --- cases ---------------------------------------------------------------------------------------


def load_cases(path: Path) -> pd.DataFrame:
    """The normalised cases frame of a case file, or a CraError naming what is wrong with it."""
    from cra.dataflows.evaluation.cases import CaseFormatError, case_records, cases

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows editors) is not JSON
    except FileNotFoundError:
        raise CraError(f"Case file {path} does not exist. Pass --cases FILE (e.g. data/eval/self.jsonl).") from None
    except UnicodeDecodeError as exc:
        raise CraError(
            f"Case file {path} is not UTF-8 text (at byte offset {exc.start}). Save it as UTF-8 JSON or JSONL."
        ) from None
    except OSError as exc:
        raise CraError(f"Cannot read case file {path} ({exc.strerror or exc}). Check the path.") from None
    try:
        return cases(case_records(text, str(path)))
    except CaseFormatError as exc:
        raise CraError(f"Bad case file: {exc}") from None


# --- per-item work (runs inside executors) --------------------------------------------------------


def _tree_key(location: dict) -> str:
    return location.get("tree") or f"{location['mirror']}@{location['commit']}"


def index_tree(job: dict) -> dict:
    """Materialise one tree if it comes from a mirror, and make sure it has a KB (reused when present)."""
    from cra.drivers.evaluation.trees import indexed_tree_kb, materialize_tree
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.kb.store import default_kb_dir, read_metadata

    started = time.perf_counter()
    try:
        if "mirror" in job:
            tree = materialize_tree(
                Path(job["mirror"]), job["commit"], job["repo"], Path(job["cache"]) if job.get("cache") else None
            )
            indexed_tree_kb(tree, Path(job["mirror"]), job["commit"])  # an extracted base commit never changes
        else:
            tree = Path(job["tree"])
            index_repository(tree)  # incremental: unchanged files are reused
        history = bool(read_metadata(default_kb_dir(tree)).get("history_available"))
        done = {"key": job["key"], "tree": str(tree), "status": "ok", "reason": None, "history": history}
    except Exception as exc:  # one broken tree skips its cases, not the run
        done = {
            "key": job["key"],
            "tree": None,
            "status": "failed",
            "reason": f"indexing failed: {exc}",
            "history": False,
        }
    done["seconds"] = time.perf_counter() - started
    note = "" if done["history"] or done["tree"] is None else " (no git history)"
    place = f" {job['tree_order'] + 1}/{job['fanout_size']}" if "tree_order" in job else ""
    print(
        f"[tree{place}] {job['key']}: {done['status']} {done['reason'] or ''}{note} ({done['seconds']:.1f}s"
        f"{_time_left(job, job.get('tree_order', 0))})",
        file=sys.stderr,
        flush=True,
    )
    return done


def expected_symbols_from_patch(tree: Path, patch: str) -> list[str]:
    """Gold symbols of a fix patch: the def/class around each edit, parsed from the pre-fix files in `tree`."""
    from cra.dataflows.evaluation.cases import patch_edits, patch_symbols
    from cra.dataflows.index.parsers import language_of, parse_source
    from cra.dataflows.index.parsers.models import ParsedFile

    found: list[str] = []
    for edit in patch_edits(patch):
        try:
            source = (tree / edit.path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        language = language_of(edit.path)
        parsed = parse_source(language, source) if language else None
        found += patch_symbols(edit, parsed or ParsedFile(), source)
    return found


def parse_budgets(text: str) -> tuple[int | str, ...]:
    """The --budgets list: token counts and/or `auto`, in the order given, duplicates dropped."""
    from cra.drivers.retrieval.retriever import MIN_BUDGET

    budgets: list[int | str] = []
    for item in (part.strip().lower() for part in str(text).split(",")):
        if item != "auto" and not item.isdigit():
            raise CraError(
                f"--budgets {text}: {item or 'an empty entry'!r} is not a token count or auto. Write e.g. --budgets {DEFAULT_BUDGETS}."
            )
        if item != "auto" and int(item) < MIN_BUDGET:
            raise CraError(
                f"--budgets {text}: {item} is too small to hold a task and any code; use at least {MIN_BUDGET}."
            )
        budgets.append(item if item == "auto" else int(item))
    return tuple(dict.fromkeys(budgets))


def _bm25_ranking(kb, task: str) -> list[str]:
    from cra.dataflows.text import terms

    scores = kb.file_lexicon.scores(terms(task))
    paths = kb.files.set_index("file_id")["path"]
    ranked = pd.DataFrame({"score": scores}).join(paths, how="inner")
    ranked = ranked.rename_axis("file_id").reset_index().sort_values(["score", "file_id"], ascending=[False, True])
    return ranked["path"].tolist()


def _stamp(jobs: list[dict], order_key: str) -> None:
    """Give each job of a fan-out its place and the fan-out's start, for the time left its line shows."""
    started = time.time()
    for order, job in enumerate(jobs):
        job.setdefault(order_key, order)
        job.update(fanout_started=started, fanout_size=len(jobs))


def _time_left(job: dict, order: int) -> str:
    """`, ~3 min left` on a terminal (`cra.drivers.common.progress`): the fan-out's pace so far over the items after this one
    (items finish about in order, a few at a time); nothing in a log."""
    from cra.drivers.common.progress import duration_text, progress_shown

    if "fanout_started" not in job or not progress_shown():
        return ""
    done, total = order + 1, job["fanout_size"]
    left = (time.time() - job["fanout_started"]) / done * (total - done)
    return f", ~{duration_text(left)} left" if done < total else ""


def _progress_line(job: dict, row: dict) -> str:
    head = f"[{job['case_order'] + 1}/{job['n_cases']}] {row['case_id']}"
    if row["status"] != "ok":
        return f"{head}: {row['status']} ({row['reason']}){_time_left(job, job['case_order'])}"
    return (
        f"{head}: acc@10 {row['file_acc@10']:.0f}  mrr {row['mrr']:.2f}  bm25 mrr {row['bm25_mrr']:.2f}  "
        f"fn mrr {_fmt(row['function_mrr'])}  pkg recall {row['package_file_recall']:.2f}  {row['latency_s']:.2f}s"
        + _time_left(job, job["case_order"])
    )


def evaluate_case(
    job: dict,
    budget: int = DEFAULT_BUDGET,
    budgets: tuple[int | str, ...] = (),
    seed_variants: tuple[str, ...] = (),
    reader: str | None = None,
) -> dict:
    """Retrieve for one case against its tree's KB and score the ranking, the package and the BM25 baseline."""
    row = {
        "case_id": job["case_id"],
        "case_order": job["case_order"],
        "repo": job.get("repo"),
        "tree": job.get("tree"),
        "status": "skipped",
        "reason": job.get("reason"),
    }
    if job.get("tree") is not None and row["reason"] is None:
        try:
            row.update(_evaluate(job, Path(job["tree"]), budget, budgets, seed_variants, reader))
            row["status"] = "ok"
        except Exception as exc:  # a case that breaks is reported, the run goes on
            row.update(status="error", reason=f"{type(exc).__name__}: {exc}")
    print(_progress_line(job, row), file=sys.stderr, flush=True)
    return row


def _evaluate(
    job: dict,
    tree: Path,
    budget: int,
    budgets: tuple[int | str, ...],
    seed_variants: tuple[str, ...] = (),
    reader: str | None = None,
) -> dict:
    from cra.dataflows.evaluation.metrics import (
        expected_file_signals,
        function_metrics,
        gold_function_ranks,
        gold_functions,
        package_metrics,
        ranking_metrics,
    )
    from cra.drivers.kb.store import default_kb_dir, load_kb
    from cra.drivers.retrieval.reader_files import read_reader
    from cra.drivers.retrieval.retriever import retrieve

    expected_files = list(job["expected_files"])
    expected_symbols = job.get("expected_symbols")
    if expected_symbols is None and job.get("patch"):
        expected_symbols = expected_symbols_from_patch(tree, job["patch"])
    expected_symbols = None if expected_symbols is None else list(expected_symbols)
    kb = load_kb(default_kb_dir(tree))
    model = read_reader(reader) if reader else None
    result = retrieve(
        kb, job["task"], budget=budget, outputs=("symbol_ranking",), seed_variants=seed_variants, reader=model
    )
    scope_paths = result.scope.sort_values("rank")["path"].tolist()
    bm25_paths = _bm25_ranking(kb, job["task"])
    gold = gold_functions(expected_symbols)
    ranks = gold_function_ranks(result.outputs["symbol_ranking"], gold)
    bm25_symbols = _bm25_symbol_ranking(kb, job["task"])
    bm25_ranks = gold_function_ranks(bm25_symbols, gold)
    return {
        "n_expected_files": len(expected_files),
        "n_expected_symbols": None if expected_symbols is None else len(expected_symbols),
        **ranking_metrics(scope_paths, expected_files),
        **package_metrics(result.package, expected_files, expected_symbols),
        **ranking_metrics(bm25_paths, expected_files, prefix="bm25_"),
        **function_metrics(ranks),
        **function_metrics(bm25_ranks, prefix="bm25_"),
        **_budget_curve(
            kb,
            job["task"],
            expected_symbols,
            budgets,
            {budget: result.package},
            bm25_symbols,
            expected_files,
            seed_variants,
            model,
        ),
        "latency_s": result.seconds,
        "token_count": result.package.token_count,
        "budget": result.package.budget,
        "expected_files": expected_files,
        "expected_symbols": expected_symbols,
        "gold_function_ranks": ranks,
        "bm25_gold_function_ranks": bm25_ranks,
        "missing_files": [p for p in expected_files if p not in set(scope_paths)],
        "scope_top10": scope_paths[:10],
        "bm25_top10": bm25_paths[:10],
        "package_files": [f.path for f in result.package.files],
        "expected_signals": expected_file_signals(expected_files, result.signal_matrix, result.scope, bm25_paths),
    }


def _bm25_symbol_ranking(kb, task: str) -> pd.DataFrame:
    from cra.dataflows.evaluation.metrics import bm25_symbol_ranking
    from cra.dataflows.text import terms

    return bm25_symbol_ranking(kb.tables["symbols"], kb.files, kb.symbol_lexicon.scores(terms(task)))


def _budget_curve(
    kb,
    task: str,
    expected_symbols: list[str] | None,
    budgets: tuple[int | str, ...],
    packages: dict,
    bm25_symbols: pd.DataFrame,
    expected_files: list[str] | None = None,
    seed_variants: tuple[str, ...] = (),
    reader=None,
) -> dict:
    """Per budget: the pipeline's package metrics (one request per budget not already retrieved) and BM25's bodies
    within the same budget (for auto: within the tokens the auto package took)."""
    from cra.dataflows.evaluation.metrics import bm25_budget_metrics, budget_metrics
    from cra.drivers.retrieval.retriever import retrieve

    out: dict = {}
    for b in budgets:
        package = packages.get(b) or retrieve(kb, task, budget=b, seed_variants=seed_variants, reader=reader).package
        out |= budget_metrics(package, expected_symbols, str(b), expected_files)
        out |= bm25_budget_metrics(bm25_symbols, expected_symbols, package.token_count if b == "auto" else b, str(b))
    return out


# --- engines ----------------------------------------------------------------------------------------


def _workers(args, n_items: int) -> int:
    return max(1, min(args.workers or os.cpu_count() or 1, n_items))


def evaluation_driver(remote=None):
    """The Hamilton driver over the batch evaluation DAG (`cra.dataflows.evaluation.batch`, its only module); remote is
    the executor of its parallel branches (default: in-process)."""
    from hamilton import driver
    from hamilton.execution import executors

    from cra.dataflows.evaluation import batch

    return (
        driver.Builder()
        .with_modules(batch)
        .enable_dynamic_execution(allow_experimental_mode=True)
        .with_local_executor(executors.SynchronousLocalTaskExecutor())
        .with_remote_executor(remote or executors.SynchronousLocalTaskExecutor())
        .build()
    )


class _Engine:
    """A Hamilton driver over the batch module on one engine; close() releases the cluster it started."""

    def __init__(self, args, n_items: int):
        from hamilton.execution import executors

        self._closers = []
        workers = _workers(args, n_items)
        if args.engine == "local":
            remote = (
                executors.SynchronousLocalTaskExecutor()
                if workers == 1
                else executors.MultiProcessingExecutor(max_tasks=workers)
            )
        elif args.engine == "dask":
            remote = self._dask(args, workers)
        else:
            remote = self._ray(workers)
        self.driver = evaluation_driver(remote)

    def _dask(self, args, workers: int):
        try:
            from dask.distributed import Client, LocalCluster
            from hamilton.plugins.h_dask import DaskExecutor
        except ImportError:
            raise CraError("--engine dask needs dask.distributed: pip install 'dask[distributed]'.") from None
        if args.address:
            try:
                client = Client(args.address, timeout="10s")
            except OSError as exc:
                raise CraError(f"Cannot reach the Dask scheduler at {args.address} ({exc}). Check --address.") from None
        else:
            cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=workers > 1, dashboard_address=None
            )
            self._closers.append(cluster.close)
            client = Client(cluster)
        self._closers.insert(0, client.close)
        return DaskExecutor(client=client)

    def _ray(self, workers: int):
        try:
            import ray  # noqa: F401
            from hamilton.plugins.h_ray import RayTaskExecutor
        except ImportError:
            raise CraError(
                "--engine ray needs Ray, which is not installed: pip install 'ray[default]', or use --engine local|dask."
            ) from None
        return RayTaskExecutor(num_cpus=workers)

    def run(self, output: str, inputs: dict) -> pd.DataFrame:
        return self.driver.execute([output], inputs=inputs)[output]

    def close(self) -> None:
        for close in self._closers:
            close()


# --- run ----------------------------------------------------------------------------------------------


def _plan(frame: pd.DataFrame, args) -> tuple[list[dict], list[dict]]:
    """Case jobs (each with its tree location or skip reason) and the distinct trees to index."""
    from cra.drivers.evaluation.trees import resolve_tree

    repo = Path(args.repo) if args.repo else None
    trees = Path(args.trees) if args.trees else None
    mirror = Path(args.mirror) if args.mirror else None
    case_jobs, tree_jobs = [], {}
    for order, case in enumerate(frame.to_dict("records")):
        location, reason = resolve_tree(case, repo=repo, trees=trees, mirror=mirror)
        job = {**case, "case_order": order, "n_cases": len(frame), "reason": reason, "tree": None}
        if location:
            job["tree_key"] = _tree_key(location)
            tree_jobs.setdefault(job["tree_key"], {**location, "key": job["tree_key"]})
        case_jobs.append(job)
    return case_jobs, list(tree_jobs.values())


def _attach_trees(case_jobs: list[dict], indexed: pd.DataFrame) -> None:
    by_key = indexed.set_index("key").to_dict("index") if len(indexed) else {}
    for job in case_jobs:
        done = by_key.get(job.get("tree_key"))
        if done is None:
            continue
        if done["status"] == "ok":
            job["tree"] = done["tree"]
        else:
            job["reason"] = done["reason"]


def _fmt(value, spec: str = ".3f") -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:{spec}}"


def summary_table(summary: dict) -> str:
    """The printed aggregate: ranking metrics, pipeline beside BM25, then package metrics and latency."""
    lines = [
        f"{summary['n_cases']} cases evaluated, {summary['n_skipped']} skipped",
        f"{'metric':<22}{'pipeline':>10}{'bm25':>10}",
    ]
    for name in TABLE_METRICS:
        lines.append(f"{name:<22}{_fmt(summary.get(name)):>10}{_fmt(summary.get('bm25_' + name)):>10}")
    for name in (
        "package_file_recall",
        "package_file_precision",
        "symbol_recall",
        "symbol_precision",
        "token_efficiency",
        "budget_utilization",
        "latency_p50_s",
    ):
        lines.append(f"{name:<22}{_fmt(summary.get(name)):>10}")
    lines.append(f"{'function (symbols)':<22}{'pipeline':>10}{'bm25':>10}")
    for name in FUNCTION_TABLE_METRICS:
        lines.append(f"{name:<22}{_fmt(summary.get(name)):>10}{_fmt(summary.get('bm25_' + name)):>10}")
    if summary.get("budgets"):
        lines.append(f"{'budget':<10}" + "".join(f"{head:>15}" for head in BUDGET_TABLE_HEADS))
        for b in summary["budgets"]:
            cells = [
                _fmt(summary.get(f"{name}@{b}"), ".0f" if name.endswith("tokens") else ".3f")
                for name in BUDGET_TABLE_METRICS
            ]
            lines.append(f"{b!s:<10}" + "".join(f"{cell:>15}" for cell in cells))
    if summary.get("seed_gates"):
        lines.append("seed 001 gates (package means): file recall > .8, file precision > .5, token efficiency > .6")
        for b, gates in summary["seed_gates"].items():
            cells = [f"{_GATE_HEADS[m]} {_fmt(g['value'])} {_verdict(g['met'])}" for m, g in gates.items()]
            lines.append(f"{b!s:<10}" + "   ".join(cells))
    return "\n".join(lines)


_GATE_HEADS = {"package_file_recall": "recall", "package_file_precision": "precision", "token_efficiency": "token_eff"}


def _verdict(met: bool | None) -> str:
    return "not measured" if met is None else ("met" if met else "MISSED")


def _write_outputs(out: Path, summary: dict, results: pd.DataFrame) -> None:
    buffer = io.BytesIO()
    results.to_parquet(buffer, index=False)
    write_bytes_atomic(out / "cases.parquet", buffer.getvalue())
    write_bytes_atomic(out / "summary.json", (json.dumps(summary, indent=2, default=str) + "\n").encode())


def evaluate_cases(frame: pd.DataFrame, args) -> tuple[dict, pd.DataFrame]:
    """Index the cases' trees and evaluate every case on the chosen engine: (summary, one row per case)."""
    from cra.dataflows.evaluation.metrics import seed_gates
    from cra.dataflows.evaluation.metrics import summary as summarise

    budgets = parse_budgets(args.budgets)
    case_jobs, tree_jobs = _plan(frame, args)
    engine = _Engine(args, max(len(tree_jobs), len(case_jobs)))
    bare = []
    try:
        if tree_jobs:
            _stamp(tree_jobs, "tree_order")
            indexed = engine.run("indexed_trees", {"tree_jobs": tree_jobs, "index_tree": index_tree})
            _attach_trees(case_jobs, indexed)
            bare = (
                sorted(indexed.loc[(indexed["status"] == "ok") & ~indexed["history"].astype(bool), "key"])
                if len(indexed)
                else []
            )
        _stamp(case_jobs, "case_order")
        evaluate_one = partial(
            evaluate_case,
            budget=args.budget,
            budgets=budgets,
            seed_variants=_seed_variants(args),
            reader=_reader_dir(args),
        )
        results = engine.run("case_results", {"case_jobs": case_jobs, "evaluate_case": evaluate_one})
    finally:
        engine.close()
    skipped = results[results["status"] != "ok"]
    summary = summarise(results, n_skipped=len(skipped))
    summary["skipped"] = dict(zip(skipped["case_id"], skipped["reason"]))
    summary.update(
        engine=args.engine,
        budget=args.budget,
        budgets=list(budgets),
        cases_file=str(args.cases),
        trees_without_history=bare,
        seed_variants=list(_seed_variants(args)),
        reader=_reader_dir(args),
    )
    summary["seed_gates"] = seed_gates(summary, budgets)
    return summary, results


def _reader_dir(args) -> str | None:
    """The code-reader model directory of --reader, absolute (workers may run elsewhere), or None."""
    value = getattr(args, "reader", None)
    return str(Path(value).resolve()) if value else None


def _seed_variants(args) -> tuple[str, ...]:
    from cra.drivers.retrieval.retriever import checked_seed_variants

    return checked_seed_variants(getattr(args, "seed_variants", "") or "")


def run(args) -> int:
    """`cra evaluate`: 0 when at least one case was evaluated, 1 when none could be."""
    from cra.drivers.retrieval.retriever import MIN_BUDGET

    if args.budget < MIN_BUDGET:
        raise CraError(f"--budget {args.budget} is too small to hold a task and any code; use at least {MIN_BUDGET}.")
    parse_budgets(args.budgets)  # a bad list is refused before any indexing
    _seed_variants(args)  # and so is an unknown seed variant
    if _reader_dir(args):
        from cra.drivers.retrieval.reader_files import read_reader

        read_reader(_reader_dir(args))  # and a directory holding no reader model
    if args.repo and not Path(args.repo).is_dir():
        raise CraError(f"--repo {args.repo} is not a directory. Pass the repository root.")
    for flag in ("trees", "mirror"):
        value = getattr(args, flag)
        if value and not Path(value).is_dir():
            raise CraError(f"--{flag} {value} is not a directory.")
    frame = load_cases(Path(args.cases))
    if args.limit is not None:
        frame = frame.head(max(args.limit, 0))
    if frame.empty:
        raise CraError(f"No cases to evaluate in {args.cases}" + (" after --limit." if args.limit is not None else "."))
    if not (args.repo or args.trees or args.mirror) and frame["repo_path"].isna().all():
        raise CraError(
            f"No case of {args.cases} says where its repository is (repo_path), and no --repo, --mirror or "
            "--trees was given. Pass --repo PATH for cases about one repository, or --mirror DIR / --trees "
            "DIR for cases that name a repository and a base commit."
        )
    summary, results = evaluate_cases(frame, args)
    print(summary_table(summary))
    for case_id, reason in summary["skipped"].items():
        print(f"skipped {case_id}: {reason}")
    if summary["trees_without_history"]:
        bare = summary["trees_without_history"]
        print(
            f"warning: {len(bare)} tree(s) have no git history, so their recency, co-change and history signals are "
            f"off (a checkout without .git, or a mirror git cannot read): {', '.join(bare[:3])}{' ...' if len(bare) > 3 else ''}"
        )
    if args.out:
        _write_outputs(Path(args.out), summary, results)
        print(f"wrote {Path(args.out) / 'summary.json'} and {Path(args.out) / 'cases.parquet'}")
    return 0 if summary["n_cases"] else 1
