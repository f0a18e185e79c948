"""The index dataflow as a Hamilton driver, and one run of it over a tree (`index_frames`): scan, DAG, KB frames.

The per-file work of changed files (`parsing.parsed_batch`) runs through Hamilton's dynamic execution:
over a process pool (one worker per core) when at least PARALLEL_MIN_FILES files changed, in-process
otherwise, so an incremental run over a handful of files pays no process start-up. `cra.drivers.index.indexer` drives a run
(lock, previous KB, stat cache, writing); this module is what it loads only when something has to be indexed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import multiprocessing
import multiprocessing.forkserver
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np
import pandas as pd
from hamilton import driver
from hamilton.execution import executors
from hamilton.lifecycle import api as lifecycle
from hamilton.node import NodeType

from cra.dataflows.index import (
    commit_terms,
    companions,
    discovery,
    edges,
    health,
    history,
    lexical_terms,
    metadata,
    parsing,
    unchanged,
)
from cra.dataflows.index.frames import canonical_ids, positions_in
from cra.dataflows.index.parsers import language_of
from cra.dataflows.index.schema import TABLES
from cra.drivers.common.conventions import load_conventions
from cra.drivers.common.errors import CraError
from cra.drivers.common.interrupts import STOP_SIGNALS, Interrupted, die_with_parent, stops_deferred
from cra.drivers.index.clusters import SLOTS_PER_WORKER, Cluster, cluster_for
from cra.drivers.index.engines import Engine
from cra.drivers.index.git_history import git_head, git_log, git_tracked
from cra.drivers.index.memory import BytesRelease, CollectingExecutor, HeapTrim, TableSpill, releasing
from cra.drivers.index.sources import SourceScan, scan_sources
from cra.drivers.kb.mapped import ContentsFile
from cra.drivers.kb.resume import PickledBatches, checkpoint_in

INDEX_MODULES = (
    discovery,
    parsing,
    edges,
    history,
    metadata,
    lexical_terms,
    commit_terms,
    health,
    companions,
    unchanged,
)
KB_OUTPUTS = [f"kb_{name}" for name in TABLES]
PARALLEL_MIN_FILES = 2 * parsing.BATCH_FILES  # below this, process start-up and pickling cost more than they save
_POLL_SECONDS = 0.02


_RECEIVED: list[int] = []  # Ctrl-C or SIGTERM during a parallel run: raised where the driver's loop polls, see below


def _raise_received() -> None:
    """Raise the stop signal received meanwhile, if any, as `Interrupted`."""
    if _RECEIVED:
        raise Interrupted(_RECEIVED[0])


class _WaitingFuture(executors.TaskFutureWrappingPythonFuture):
    """A pool future whose state query blocks briefly while it runs, and where a Ctrl-C (or SIGTERM) received
    meanwhile is raised: a KeyboardInterrupt raised inside concurrent.futures' own locking would leave a lock held
    and the pool's shutdown waiting on it for ever."""

    def get_state(self):
        concurrent.futures.wait([self.future], timeout=_POLL_SECONDS)
        _raise_received()
        return super().get_state()


class _InterruptCheck(lifecycle.NodeExecutionHook):
    """Raises a deferred Ctrl-C or SIGTERM before the next node the driver's process runs (the nodes after the
    parallel block)."""

    def run_before_node_execution(self, **kwargs) -> None:
        _raise_received()

    def run_after_node_execution(self, **kwargs) -> None:
        """Nothing to do after a node (the hook interface requires the method)."""


@contextlib.contextmanager
def _interrupts_deferred(parallel: bool):
    """While a parallel run is on (in the main thread), Ctrl-C and SIGTERM only note their signal: `_WaitingFuture`
    and `_InterruptCheck` raise it where no lock of the pool's is held."""
    if not parallel:
        yield
        return
    with stops_deferred(_RECEIVED):
        yield


def _worker_started() -> None:
    """In a new worker: end with the driver's process, however that ends (`die_with_parent`: a `kill -9` of `cra
    index` left its workers, fork server and resource tracker running, 650 MB, re-parented to init); ignore Ctrl-C
    and SIGTERM (the terminal, `timeout` or a scheduler send them to every process of the group; the driver stops
    the run, and a worker finishes, and saves, see `parsing.parsed_batch`, the batch it is on instead of printing a
    traceback); and keep the garbage collector off the imported modules' objects and out of the parse's way: a parse
    allocates millions of short-lived objects, and collecting every 700 of them while scanning the 70,000 objects the
    imports left took 8% of a worker's time on Java (the frozen objects are what a fork of the driver used to share)."""
    die_with_parent()
    for stop in STOP_SIGNALS:
        signal.signal(stop, signal.SIG_IGN)
    gc.freeze()
    gc.set_threshold(100_000, 50, 1000)


WORKER_TASKS = 4  # batches a worker parses before a fresh one takes over: a worker's heap only grows (OpenJDK subtree,
#                  8,400 files: workers' peak 1,150 MB without recycling, 690 MB at 4-5 batches, in the same time)
WORKER_MODULES = [
    "cra.drivers.index.dag",
    "cra.drivers.common.tokens",
]  # what every worker imports: loaded once, before it forks them


def _worker_context() -> multiprocessing.context.BaseContext:
    """Where parse workers come from: a fork server (spawn where there is none), never a fork of the driver."""
    return multiprocessing.get_context(
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    )


def _start_worker_imports() -> None:
    """Starts the fork server and its imports now, while the driver scans and decodes the tree, so that workers
    fork from it ready to parse instead of each importing pandas, Hamilton and the parsers (about 1 s on Django)."""
    context = _worker_context()
    if context.get_start_method() == "forkserver":
        context.set_forkserver_preload(WORKER_MODULES)
        multiprocessing.forkserver.ensure_running()


def _stop_worker_imports() -> None:
    """Ends the fork server (its imports hold ~150 MB) once the parse is over; the next parallel run starts another.
    (`_stop` is the standard library's own, private, way to do it; without it the server ends with the process.)"""
    if _worker_context().get_start_method() == "forkserver":
        getattr(multiprocessing.forkserver._forkserver, "_stop", lambda: None)()


class _ProcessExecutor(executors.MultiProcessingExecutor):
    """Hamilton's process-pool executor, except that its workers come from a fork server instead of being forked from
    the driver, and that the driver's loop waits on running tasks instead of polling them non-stop (hamilton 1.90
    busy-polls, which takes a whole core away from the workers). A worker forked from the driver starts with its
    heap (every file's text) and keeps every page of it either side writes to; at the end of OpenJDK's parse two
    forked workers took 1.8 GB (PSS), fresh ones that are also replaced every WORKER_TASKS batches 0.55 GB."""

    def create_pool(self) -> concurrent.futures.ProcessPoolExecutor:
        return concurrent.futures.ProcessPoolExecutor(
            self.max_tasks, mp_context=_worker_context(), initializer=_worker_started, max_tasks_per_child=WORKER_TASKS
        )

    def submit_task(self, task):
        future = self.pool.submit(executors.base_execute_task, task)
        self.active_futures.append(future)
        return _WaitingFuture(future)


class _WorkersDone(lifecycle.NodeExecutionHook):
    """Ends the worker processes when the parsed batches are collected (no task goes to them after that), instead of
    when the run ends: each holds hundreds of MB that the nodes after the parse could use."""

    def __init__(self, executor: _ProcessExecutor):
        self.executor = executor

    def __getstate__(self) -> dict:
        """The copy that travels with each task to a worker carries no pool (it could not be pickled)."""
        return {"executor": None}

    def run_before_node_execution(self, *, node_name: str, **kwargs) -> None:
        if node_name == "parsed_rows" and self.executor is not None and self.executor.pool is not None:
            self.executor.pool.shutdown(wait=True)
            _stop_worker_imports()

    def run_after_node_execution(self, **kwargs) -> None:
        """Nothing to do after a node (the hook interface requires the method)."""


class IndexFailed(CraError):
    """The index dataflow failed (a node raised, or a worker process died); nothing was written."""

    def __init__(self, cause: BaseException, workers: int, cluster: str | None = None):
        where = f"with {workers} worker processes" if workers > 1 else "in one process"
        retry = " Retry with --workers 1 to index in one process." if workers > 1 else ""
        if cluster is not None:  # parsed on a cluster (`cra.drivers.index.engines`)
            where, retry = f"parsing on {cluster}", " Retry with --engine local to parse on this machine."
        if isinstance(cause, BrokenProcessPool):  # a worker died: say what kills one
            retry = (
                " A worker dies when memory runs out, or when a Python script indexes without"
                ' `if __name__ == "__main__":` (each worker imports the script that started it).' + retry
            )
        super().__init__(
            f"Indexing failed {where}: {type(cause).__name__}: {str(cause).splitlines()[0].rstrip('.') if str(cause) else '(no message)'}. "
            f"The previous knowledge base, if any, is unchanged.{retry} Set CRA_DEBUG=1 to see the traceback."
        )


class ParseProgress(lifecycle.TaskReturnHook, lifecycle.NodeExecutionHook):
    """Calls on_progress(done, total) as batches of parsed files come back (in the driver's process, so it works
    with the process pool too): (0, total) once the changed files are known, then after every batch; and, where
    on_progress has a `stage` method (`cra.drivers.common.progress.Progress`), stage(node name) before each node the driver's
    process runs, so the minutes before and after the parse are not silent."""

    def __init__(self, on_progress: Callable[[int, int], None]):
        self.on_progress, self.done, self.total = on_progress, 0, 0

    def __getstate__(self) -> dict:
        """The copy that travels with each task to a worker process stays inert: the callback (which may hold a
        stream or a lock) is never pickled, and task-return hooks only run in the driver's process anyway."""
        return {**self.__dict__, "on_progress": None}

    def run_after_task_return(self, *, result, success: bool, **future_kwargs) -> None:
        if self.on_progress is None or not success or not isinstance(result, dict):
            return
        if "changed_files" in result:
            self.total = len(result["changed_files"])
            self.on_progress(0, self.total)
        if "parsed_batch" in result:
            self.done += len(result["parsed_batch"].errors)
            self.on_progress(self.done, self.total)

    def run_before_node_execution(self, *, node_name: str, **kwargs) -> None:
        stage = getattr(self.on_progress, "stage", None)
        if stage is not None and node_name not in ("parse_batches", "parsed_batch"):  # (those: the count above)
            stage(node_name.removeprefix("kb_").replace("_", " "))

    def run_after_node_execution(self, **kwargs) -> None:
        """Nothing to do after a node (the hook interface requires the method)."""


def index_driver(
    workers: int = 1,
    on_progress: Callable[[int, int], None] | None = None,
    adapters: tuple = (),
    large: bool = False,
    spill_dir: Path | None = None,
    cluster: Cluster | None = None,
) -> driver.Driver:
    """The Hamilton driver over the index dataflow modules; workers > 1 runs per-file batches in processes;
    on_progress(done, total) is called as batches of files are parsed; adapters are extra lifecycle hooks;
    large: many files change, so memory is collected and the heap trimmed after each task and node (see
    `CollectingExecutor`, `HeapTrim`); spill_dir: where finished output tables are moved out of the heap to, as
    memory-mapped files (see `TableSpill`); cluster: an open Dask or Ray cluster that parses the batches instead
    (`cra.drivers.index.engines`; workers is then ignored)."""
    trim = HeapTrim() if large else None
    local = CollectingExecutor(trim.trim) if trim is not None else executors.SynchronousLocalTaskExecutor()
    if cluster is not None:
        remote, workers = cluster.executor, 1
    else:
        remote = _ProcessExecutor(max_tasks=workers) if workers > 1 else local
    builder = (
        driver.Builder()
        .with_modules(*INDEX_MODULES)
        .enable_dynamic_execution(allow_experimental_mode=True)
        .with_local_executor(local)
        .with_remote_executor(remote)
    )
    hooks = [
        *adapters,
        *([ParseProgress(on_progress)] if on_progress is not None else []),
        *([_WorkersDone(remote)] if workers > 1 else []),
        *([trim] if trim is not None else []),
    ]
    idle = None if cluster is None else _idle_on(cluster)
    spill = TableSpill(spill_dir) if spill_dir is not None else None
    return releasing(builder.with_adapters(*hooks).build(), spill, idle)


def _idle_on(cluster: Cluster) -> Callable[[], None]:
    """What the driver's loop does while the cluster parses: waits for a batch to come back, then raises a Ctrl-C
    or SIGTERM received meanwhile (deferred, see `_interrupts_deferred`)."""
    cluster.executor.after_wait = _raise_received  # (also where the executor waits for a free slot)
    return cluster.executor.idle


def _cluster_batch_files(n_changed: int, workers: int) -> int:
    """Files per batch on a cluster: enough batches for every worker to have SLOTS_PER_WORKER of them, at most
    parsing.BATCH_FILES (a small tree still spreads over the workers; a large one in the local pool's batches)."""
    return max(1, min(parsing.BATCH_FILES, -(-n_changed // (SLOTS_PER_WORKER * max(workers, 1)))))


def _n_changed(source_files: pd.DataFrame, previous_kb: dict[str, pd.DataFrame] | None) -> int:
    """About how many files this run parses: files the scan read (the others the stat cache vouched for: indexed
    with this content, or left out as before) not in the previous index with the same content, of a known language
    (only picks the executor; binary or generated files read again may be over-counted)."""
    read = source_files[source_files["data"].notna().to_numpy()]
    if not previous_kb or "files" not in previous_kb or previous_kb["files"].empty:
        changed = read["path"]
    else:
        previous = previous_kb["files"]  # (the few files read looked up among the previous ones: no index of pairs)
        at = pd.Index(previous["path"]).get_indexer(read["path"])
        known = previous["hash"].to_numpy(dtype=object)[at]
        changed = read.loc[(at < 0) | (known != read["hash"].to_numpy(dtype=object)), "path"]
    return sum(language_of(p) is not None for p in changed)


def _checkpoint(resume_dir: Path) -> PickledBatches:
    """The parse checkpoint in resume_dir for this index code and token counter (`checkpoint_in`)."""
    from cra.drivers.common.tokens import tokens_are_exact
    from cra.drivers.index.fingerprint import code_digest

    return checkpoint_in(resume_dir, f"{code_digest()[:16]}-{'cl100k' if tokens_are_exact() else 'estimate'}")


def _carrying(run: driver.Driver, final: list[str], inputs: dict) -> dict:
    """run.execute(final) in two steps: up to the parse and `unchanged.unchanged_tables` first, then the rest with
    what the first computed and the previous KB's tables that this run leaves as they were given as overrides, so
    that Hamilton does not build them (nor what only they read: the import resolution, the symbol edge merges).
    Where the previous KB can give them (`cra.drivers.kb.store.PreviousTables`), the first step reads the tables it
    may carry as views of their files, and the second the ones it does not leave as views
    (`unchanged.viewed_tables`) as frames."""
    previous_kb = inputs["previous_kb"]
    viewing = hasattr(previous_kb, "views")
    if viewing:
        inputs = {**inputs, "previous_kb": previous_kb.views()}
    settled = _nodes_before(run, "unchanged_tables", inputs)
    first = run.execute([*settled, "unchanged_tables"], inputs=inputs)
    carried = first["unchanged_tables"]
    if viewing:
        inputs = {
            **inputs,
            "previous_kb": previous_kb.converted(previous_kb.deferred - unchanged.viewed_tables(carried)),
        }
    overrides = {name: first[name] for name in settled}
    previous = inputs["previous_kb"], inputs["previous_import_context"], first["indexed_files"]
    overrides.update(unchanged.carried_nodes(carried, *previous))
    results = run.execute(final, inputs=inputs, overrides=overrides)
    results["carried_tables"] = carried
    return results


def _nodes_before(run: driver.Driver, target: str, inputs: dict) -> list[str]:
    """The computed nodes target depends on, but those inside a parallel block (a batch's own: not results of the
    run), so a first execution returns every one of them to a second."""
    upstream, _ = run.graph.get_upstream_nodes([target], runtime_inputs=inputs)
    by_name = {n.name: n for n in upstream}
    inside: dict[str, bool] = {}

    def in_block(n) -> bool:  # (downstream of an expander, not through its collector)
        if n.name not in inside:
            inside[n.name] = n.node_role != NodeType.COLLECT and (
                n.node_role == NodeType.EXPAND or any(in_block(d) for d in n.dependencies if d.name in by_name)
            )
        return inside[n.name]

    return sorted(n.name for n in upstream if not n.user_defined and n.name != target and not in_block(n))


def index_frames(
    root: Path,
    previous_kb: dict[str, pd.DataFrame] | None = None,
    history: int = 2000,
    max_file_bytes: int = 1_000_000,
    count_tokens: Callable[[str], int] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    max_commit_files: int = 50,
    count_line_tokens: Callable[[str], object] | None = None,
    workers: int | None = None,
    history_from: tuple[Path, str] | None = None,
    adapters: tuple = (),
    scan: SourceScan | None = None,
    previous_skipped: dict[str, list[str]] | None = None,
    previous_import_context: str | None = None,
    resume_dir: Path | None = None,
    contents_dir: Path | None = None,
    engine: Engine | None = None,
    previous_version: Path | None = None,
    previous_file_lexicon=None,
) -> tuple[dict[str, pd.DataFrame], dict]:
    """KB tables by name (no `kb_` prefix) and run stats (index_stats + scan info + head + seconds) for root.

    workers: processes for the per-file work (default: one per core when enough files changed, else 1).
    history_from: (git_dir, rev) to read history from another git directory (a tree extracted at rev).
    adapters: extra Hamilton lifecycle hooks (e.g. `cra.drivers.bench.timing.NodeTimer`).
    scan: the tree as already read by `scan_sources` (default: read it here); its bytes go once decoded (data None).
    previous_kb: the previous KB's tables; a `cra.drivers.kb.store.PreviousTables` leaves the tables this run carries
    over (`_carrying`) as views of their files.
    previous_skipped: what the previous run left out, by reason (its index_stats["skipped"]), for files the scan did
    not read again; previous_import_context: its index_stats["import_context"] (then its import bindings are reused).
    contents_dir: an empty directory where the contents table is written, as the KB stores it, before the parse
    (`metadata.written_contents`, through `ContentsFile`); the returned contents frame is a view of that file, which the caller links into
    its KB and then removes (default: a temporary directory, removed when the run ends: the view stays readable).
    engine: a Dask or Ray cluster to parse on (`cra.drivers.index.engines`), opened once files are to be parsed
    (nothing parsed: it is not contacted) and closed before this returns; workers then sizes a local cluster only.
    previous_version: the directory of the KB version previous_kb was read from: contents_dir then links the texts
    it carries over from there instead of writing them again (`ContentsFile`).
    previous_file_lexicon: the persisted lexicon (`Bm25Index`) of previous_kb's file terms, whose document
    frequencies a re-index that scores a few files' concepts reads instead of counting 13M rows (optional).
    """
    started = time.perf_counter()
    root = Path(root)
    from cra.drivers.common import tokens

    scan = scan if scan is not None else scan_sources(root, max_file_bytes=max_file_bytes)
    n_changed = _n_changed(scan.frame, previous_kb)
    many = n_changed >= PARALLEL_MIN_FILES
    on_cluster = engine is not None and engine.remote and n_changed > 0
    if on_cluster:
        workers = 1  # (no local process pool: the cluster's workers parse)
    elif workers is None:
        workers = (os.cpu_count() or 1) if many else 1
    if workers > 1:
        _start_worker_imports()
    inputs = {
        "source_files": scan.frame,
        "previous_kb": previous_kb,
        "previous_skipped": previous_skipped,
        "previous_import_context": previous_import_context,
        "previous_file_lexicon": previous_file_lexicon if previous_kb else None,
        "git_log": git_log(root, history, history_from) if history > 0 else None,
        "count_tokens": count_tokens or tokens.count_tokens,
        "count_line_tokens": count_line_tokens or tokens.count_line_tokens,
        "max_commit_files": max_commit_files,
        "tracked_paths": None if history_from else git_tracked(root),
        "history_limit": history,
        "language_conventions": load_conventions(),
        "parse_checkpoint": _checkpoint(resume_dir) if resume_dir is not None and many else None,
    }
    temporary = contents_dir is None
    contents = ContentsFile(
        str(contents_dir) if not temporary else tempfile.mkdtemp(prefix="cra-contents-"),
        str(previous_version) if previous_version is not None and previous_kb and not temporary else None,
    )
    inputs["contents_store"] = contents
    cluster = None
    try:
        with contextlib.ExitStack() as opened:
            if on_cluster:
                if on_progress is not None and getattr(on_progress, "stage", None) is not None:
                    on_progress.stage(f"connecting to the {engine.name} cluster")
                cluster = opened.enter_context(cluster_for(engine, contents.directory, _POLL_SECONDS))
                inputs["batch_files"] = _cluster_batch_files(n_changed, cluster.workers)
            with _interrupts_deferred(workers > 1 or on_cluster):
                hooks = (*adapters, _InterruptCheck(), BytesRelease(scan.frame))
                spill_dir = Path(contents.directory) if many else None  # (removed with the contents written there)
                run = index_driver(workers, on_progress, hooks, large=many, spill_dir=spill_dir, cluster=cluster)
                final = [*KB_OUTPUTS, "index_stats", "index_warnings", "parser_warnings", "resumed_files"]
                carry = bool(previous_kb) and workers == 1 and not on_cluster and not many
                if not carry and hasattr(previous_kb, "converted"):  # (`PreviousTables`: every table read now)
                    inputs["previous_kb"] = previous_kb.converted(previous_kb.deferred)
                results = _carrying(run, final, inputs) if carry else run.execute(final, inputs=inputs)
        tables = canonical_ids({name: results[f"kb_{name}"] for name in TABLES})
        if tables["contents"] is not results["kb_contents"]:  # renumbered: the written file follows the new order
            contents.rewrite(
                tables["contents"], _previous_ids(tables["contents"], tables["files"], results["kb_files"])
            )
    except CraError:
        raise
    except Exception as exc:  # a worker died or a node failed: one line that names it, the previous KB stays live
        raise IndexFailed(exc, workers, cluster.where if cluster is not None else None) from exc
    finally:
        if workers > 1:  # (also when the run was interrupted or failed: the fork server is not left to init to reap)
            _stop_worker_imports()
        if temporary:
            shutil.rmtree(contents.directory, ignore_errors=True)
    stats = {
        **results["index_stats"],
        "n_ignored": scan.n_ignored,
        "n_config_excluded": len(scan.walk.config_excluded) if scan.walk is not None else 0,
        "config_excluded_examples": list(scan.walk.config_excluded[:3]) if scan.walk is not None else [],
        "oversized": list(scan.oversized),
        "unreadable": [list(u) for u in scan.unreadable],
        "head": (history_from[1] if history_from else git_head(root)) if inputs["git_log"] is not None else None,
        "warnings": results["index_warnings"],
        "parser_warnings": results["parser_warnings"],
        "n_resumed": int(results["resumed_files"]),
        "carried": sorted(results.get("carried_tables", ())),  # (tables left as they were: `unchanged_tables`)
        "workers": cluster.workers if cluster is not None else workers,
        "seconds": round(time.perf_counter() - started, 3),
    }
    if cluster is not None:
        stats["parsed_on"] = cluster.where
        stats["engine_notes"] = [cluster.note] if cluster.note else []
    return tables, stats


def _previous_ids(contents: pd.DataFrame, files: pd.DataFrame, before: pd.DataFrame) -> np.ndarray:
    """Each contents row's file_id before `canonical_ids` renumbered the files (files: after, before: as the
    dataflow numbered them; a file's path is its key)."""
    ids = files["file_id"].to_numpy(np.int64)
    earlier = before["file_id"].to_numpy(np.int64)[positions_in(files["path"], before["path"])]
    back = np.full(int(ids.max(initial=-1)) + 1, -1, dtype=np.int64)
    back[ids] = earlier
    return back[contents["file_id"].to_numpy(np.int64)]
