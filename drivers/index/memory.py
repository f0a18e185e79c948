"""What an index run holds in memory: Hamilton's task-based executor with a result cache that lets go of a node's
result once its last reader has it, and a hook that hands freed heap back to the system after each node.

The parallel parse needs the task-based executor, whose stock result cache keeps every intermediate (every file's
text, the parsed batches, each term frame) until the run ends: on a large tree most of the run's peak memory.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from hamilton import driver
from hamilton.execution import executors, graph_functions, grouping, state
from hamilton.lifecycle import api as lifecycle

from cra.drivers.common.heap import arrow_from_malloc, glibc_trim
from cra.drivers.kb.mapped import mapped_table, write_table


class ReleasingResultCache(state.DictBasedResultCache):
    """Hamilton's result cache, except that a result is dropped once the last task reading it has read it. The stock
    cache keeps every node's output until the run ends ("will likely want to add pruning"): every file's text, the
    parsed batches and each term frame all stay alive beside the KB tables, most of an index run's peak memory. A run's
    outputs are kept for its caller; with a `TableSpill`, each is moved out of the heap once no node reads it."""

    def __init__(
        self,
        cache: dict,
        readers: dict[str, int],
        kept: set[str],
        block_only: set[str],
        gathered: set[str],
        spill: TableSpill | None = None,
        outputs: frozenset[str] = frozenset(),
    ):
        super().__init__(cache)
        self.readers, self.kept = readers, kept  # readers: single-node tasks yet to read each result
        self.block_only, self.gathered = block_only, set(gathered)  # what only the parallel block reads; its collectors
        self.spill, self.outputs = spill, outputs  # what moves a run's output out of the heap once no node reads it

    def _spilled(self, key: str) -> None:
        if self.spill is not None and key in self.outputs and key in self.cache:
            self.outputs = self.outputs - {key}  # once: the caller's final read counts as one more reader
            self.cache[key] = self.spill(key, self.cache[key])

    def write(self, results, group_id=None, spawning_task_id=None):
        super().write(results, group_id, spawning_task_id)
        if group_id is None and spawning_task_id is None:
            for key in results:
                if self.readers.get(key, 0) <= 0:
                    self._spilled(key)
        if self.gathered and group_id is None and spawning_task_id is None and self.gathered.intersection(results):
            self.gathered -= set(results)
            if not self.gathered:  # every block is collected: its inputs and per-batch results are of no more use
                for key in [k for k in self.cache if ":" in k or k in self.block_only]:
                    del self.cache[key]

    def read(self, keys, group_id=None, spawning_task_id=None, optional=False):
        out = super().read(keys, group_id, spawning_task_id, optional)
        if group_id is None and spawning_task_id is None:
            for key in keys:
                if key in self.readers:
                    self.readers[key] -= 1
                    if self.readers[key] <= 0 and key not in self.kept:
                        self.cache.pop(key, None)
                    elif self.readers[key] <= 0:
                        self._spilled(key)
        return out


SPILL_MIN_ROWS = 100_000  # smaller tables are not worth a file


class TableSpill:
    """Takes a run's finished output tables out of the heap: a frame of at least SPILL_MIN_ROWS rows whose columns Arrow
    maps without a copy (numbers, categorical codes, strings in one piece) is written to an uncompressed Arrow IPC file
    in `directory` and replaced by an equal frame over the memory-mapped file (a categorical keeps its categories in
    memory), whose pages are read only where the KB writer reads them. An index run holds every KB table until it
    writes them: on OpenJDK, 0.7 GB of term, reference and edge tables beside the nodes still running."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def __call__(self, key: str, value):
        if (
            not isinstance(value, pd.DataFrame)
            or len(value) < SPILL_MIN_ROWS
            or any(dtype == object or isinstance(dtype, pd.ArrowDtype) for dtype in value.dtypes)
            or not value.index.equals(pd.RangeIndex(len(value)))
        ):  # (Python objects would be copied back; Arrow-typed
            return value  # columns are mapped already: the texts; the frame comes back with a default index)
        table = pa.Table.from_pandas(value, preserve_index=False)
        if any(column.num_chunks != 1 for column in table.columns):  # (mapped back in pieces, they would be copied)
            return value
        path = self.directory / f"{key}.arrow"
        try:
            write_table(table, path)
        except OSError:  # no room or no directory: the table stays in memory, the run goes on
            path.unlink(missing_ok=True)
            return value
        del table
        mapped = mapped_table(path)
        columns = {c: _mapped_column(mapped.column(c).chunk(0), value[c].dtype) for c in value.columns}
        frame = pd.DataFrame(columns, copy=False)
        return frame if frame.dtypes.equals(value.dtypes) else value


def _mapped_column(array: pa.Array, dtype):
    """A column over a mapped Arrow array, of the dtype it was written from (numbers without nulls, codes and strings
    are not copied)."""
    if isinstance(dtype, pd.CategoricalDtype):
        return pd.Categorical.from_codes(array.indices.to_numpy(zero_copy_only=False), dtype=dtype, validate=False)
    if isinstance(dtype, np.dtype):
        return array.to_numpy(zero_copy_only=False)
    return pd.array(array, dtype=dtype)


class ReleasingGraphExecutor(driver.TaskBasedGraphExecutor):
    """Hamilton's task-based executor (its `execute`, step for step) with `ReleasingResultCache`. A result read by
    a parallel block, its expander or its collector is never dropped (they read per batch)."""

    def __init__(
        self,
        execution_manager,
        grouping_strategy,
        adapter,
        spill: TableSpill | None = None,
        idle: Callable[[], None] | None = None,
    ):
        super().__init__(execution_manager, grouping_strategy, adapter)
        self.spill, self.idle = spill, idle

    def execute(self, fg, final_vars: list[str], overrides: dict, inputs: dict, run_id: str) -> dict:
        inputs = graph_functions.combine_config_and_inputs(fg.config, inputs)
        transform, user_defined = fg.get_upstream_nodes(final_vars, runtime_inputs=inputs, runtime_overrides=overrides)
        grouped = self.grouping_strategy.group_nodes(list(set(transform).union(user_defined)))
        tasks = grouping.create_task_plan(grouped, final_vars, overrides, self.adapter)
        readers, kept, in_blocks, gathered = {}, set(final_vars), set(), set()
        for task in tasks:
            required, optional = task.get_input_vars()
            read = [k for k in required if k not in task.overrides] + list(optional)
            if task.purpose == grouping.NodeGroupPurpose.EXECUTE_SINGLE:
                for key in read:
                    readers[key] = readers.get(key, 0) + 1
            else:
                in_blocks.update(read)
            if task.purpose.is_gatherer():
                gathered.update(task.outputs_to_compute)
        block_only = in_blocks - set(readers) - kept
        cache = ReleasingResultCache(
            {**overrides, **inputs}, readers, kept | in_blocks, block_only, gathered, self.spill, frozenset(final_vars)
        )
        if self.adapter.does_hook("post_task_group", is_async=False):
            self.adapter.call_all_lifecycle_hooks_sync(
                "post_task_group", run_id=run_id, task_ids=[t.base_id for t in tasks]
            )
        run_state = (
            state.ExecutionState(tasks, cache, run_id) if self.idle is None else _IdleWaiting(tasks, cache, run_id)
        )
        if self.idle is not None:
            run_state.idle = self.idle
        executors.run_graph_to_completion(run_state, self.execution_manager)
        return cache.read(final_vars)


class _IdleWaiting(state.ExecutionState):
    """Hamilton's execution state, except that when no task is ready to run (all wait on tasks in flight) it calls
    `idle` (set after construction), which waits for a task to finish: Hamilton's loop otherwise asks every future
    for its state non-stop, a whole core of the driver's machine while a cluster parses."""

    idle: Callable[[], None]

    def release_next_task(self):
        task = super().release_next_task()
        if task is None:
            self.idle()
        return task


class CollectingExecutor(executors.SynchronousLocalTaskExecutor):
    """Hamilton's in-process task executor, followed by a pass of the cyclic garbage collector after each task.
    Hamilton runs a task's nodes in a recursive closure (`execute_subdag.<locals>.dfs_traverse`) that refers to itself
    and to the task's inputs: a reference cycle, so an input whose last reader has run (every file's text, a parsed
    batch) stays alive until the collector next makes a full pass, which it seldom does (on OpenJDK the decoded
    texts, 500 MB, outlived the whole parse). Only large runs use this executor (a pass over a loaded KB's objects
    cost a run over a few changed files 1.6 -> 3.7 s).

    What survives a pass is frozen (`gc.freeze`), so the next pass scans only what the run made since: a full pass
    over everything the run holds took 39 ms a task, 2.9 s of Django's 12 s full index. A task's cycle is collected
    by the pass after it, before anything is frozen; what it held is freed by its count of references, frozen or
    not. The objects are thawed when the run ends (`finalize`)."""

    def __init__(self, trim: Callable[[], None] | None = None):
        self.trim = trim

    def submit_task(self, task) -> executors.TaskFuture:
        def run():
            try:
                return executors.base_execute_task(task)
            finally:  # the task's frames are gone: its cycle is garbage now
                gc.collect()
                gc.freeze()
                if self.trim is not None:
                    self.trim()

        return executors.TaskFutureWrappingFunction(run)

    def finalize(self) -> None:
        """The run is over: the objects frozen after its tasks are the collector's again."""
        gc.unfreeze()


class HeapTrim(lifecycle.NodeExecutionHook):
    """Hands the heap's free pages back to the system after each node (glibc's malloc_trim; elsewhere nothing).

    Freed intermediates (a million term strings, every file's text) otherwise stay in the process's heap, and the
    arrays the next nodes and the KB writer allocate come on top of them. Large blocks are also kept out of the
    heap (a fixed mmap threshold): freed, they go straight back. On a 20,000-file tree this took the peak of
    writing the KB from 1.5 to 1.3 GB. Only a run over many files uses it: then every large array comes fresh from
    the system, page by page, where glibc would reuse its heap, and a re-index of one Django file took 0.16 s longer."""

    def __init__(self):
        self.trim = glibc_trim()
        if self.trim is not None:
            arrow_from_malloc()

    def __getstate__(self) -> dict:
        return {"trim": None}  # (a ctypes function does not pickle; workers do not trim)

    def run_before_node_execution(self, **kwargs) -> None:
        """Nothing to do before a node (the hook interface requires the method)."""

    def run_after_node_execution(self, **kwargs) -> None:
        if self.trim is not None:
            self.trim()


class BytesRelease(lifecycle.NodeExecutionHook):
    """Empties the scanned files' bytes (the `data` column of the run's `source_files` input) once `decoded_files`,
    their one reader, has decoded them. An input stays referenced by the caller and by Hamilton until the run ends,
    so the bytes of every file read would otherwise sit beside their texts and the KB tables the whole run: 78 MB
    of a 20,000-file tree. The frame is the caller's scan: afterwards its files read as "not read" (data None)."""

    def __init__(self, source_files):
        self.source_files = source_files

    def __getstate__(self) -> dict:
        return {"source_files": None}  # (the copy a worker gets has nothing to release)

    def run_before_node_execution(self, **kwargs) -> None:
        """Nothing to do before a node (the hook interface requires the method)."""

    def run_after_node_execution(self, *, node_name: str, **kwargs) -> None:
        if node_name == "decoded_files" and self.source_files is not None:
            self.source_files["data"] = None
            self.source_files = None


def releasing(
    built: driver.Driver, spill: TableSpill | None = None, idle: Callable[[], None] | None = None
) -> driver.Driver:
    """The driver with its task-based executor replaced by `ReleasingGraphExecutor` (same tasks, same order); spill:
    what takes the run's outputs out of the heap once no node reads them (`TableSpill`); idle: what the driver's loop
    calls when no task is ready to run (waits for one in flight; see `_IdleWaiting`)."""
    stock = built.graph_executor
    built.graph_executor = ReleasingGraphExecutor(
        stock.execution_manager, stock.grouping_strategy, stock.adapter, spill, idle
    )
    return built
