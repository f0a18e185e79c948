"""Where the parse of an index run goes beyond this machine: an existing Dask or Ray cluster, through Hamilton's
executors (`cra index --engine dask|ray --address ADDR`), or a local Dask cluster started for the run.

The cluster's workers run the same `parsing.parsed_batch` tasks as the local process pool and hand back the same
parsed rows; everything else of the run (scan, merge, writing the KB) stays in this process. What a worker needs:
the same cra-engine installed (its index code is compared with this process's before anything is sent), and the
run's contents file, which this process writes inside the KB directory: the KB directory must be at the same path on
every worker (a shared filesystem), which is checked too. A check that fails, or a scheduler that does not answer
within CONNECT_SECONDS, is one `CraError` before anything of the KB is touched.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hamilton.execution import executors

from cra.drivers.common.errors import CraError
from cra.drivers.index.engines import Engine

CONNECT_SECONDS = 5  # how long a scheduler (or a first worker) may take to answer before the run gives up
SLOTS_PER_WORKER = 2  # batches queued per worker: one parsing, one ready, so no worker waits on this process
WORKERLESS_SECONDS = 60  # a cluster left with no worker for this long ends the run (its tasks would wait for ever)


@dataclass
class Cluster:
    """An open connection to a cluster for one run: the executor that sends it parse tasks, its worker count, how
    to say where the parse ran, and a note for the run's summary."""

    executor: executors.TaskExecutor
    workers: int
    where: str  # "2 Dask workers at tcp://10.0.0.5:8786"
    note: str | None = None


def worker_view(contents_dir: str) -> dict:
    """What a worker sees (run on each worker before the parse): its index code's digest, and whether the run's
    contents directory is there (the shared-filesystem assumption)."""
    from cra.drivers.index.fingerprint import code_digest

    return {"code": code_digest(), "contents": os.path.isdir(contents_dir)}


def _checked(views: dict, contents_dir: str, where: str) -> None:
    """A CraError where some worker runs other index code or cannot see the run's contents directory."""
    from cra.drivers.index.fingerprint import code_digest

    other_code = sorted(w for w, v in views.items() if v.get("code") != code_digest())
    if other_code:
        raise CraError(
            f"{len(other_code)} of the {where} run other cra index code than this process ({other_code[0]}, ...): "
            "install the same cra-engine version on every worker (and restart them)."
        )
    blind = sorted(w for w, v in views.items() if not v.get("contents"))
    if blind:
        raise CraError(
            f"{len(blind)} of the {where} cannot see {contents_dir} ({blind[0]}, ...): workers read the files this "
            "run writes inside the KB directory, so the KB directory (--kb) must be on a filesystem every worker "
            "mounts at the same path."
        )


class _DaskExecutor(executors.TaskExecutor):
    """Hamilton's `h_dask.DaskExecutor` (tasks through the Dask futures API), except that at most `slots` tasks are
    on the cluster at once (a scheduler holds the rest of the queue here, where Ctrl-C reaches it), tasks are not
    keyed by a hash of their inputs (`pure=False`: a task holds frames and callables, costly to tokenize), and
    `idle` lets the driver's loop wait for a task to finish instead of polling non-stop; after each wait it calls
    `after_wait` (the driver raises a deferred Ctrl-C there) and ends the run once the cluster has had no worker for
    WORKERLESS_SECONDS."""

    def __init__(self, client, slots: int, poll_seconds: float, where: str):
        self.client, self.slots, self.poll_seconds, self.where = client, slots, poll_seconds, where
        self.active: list = []
        self.after_wait: Callable[[], None] = lambda: None
        self.asked, self.workerless_since = time.monotonic(), None

    def init(self) -> None:
        """Nothing to start: the cluster is opened and closed by `cluster_for`."""

    def finalize(self) -> None:
        """Nothing to stop here (see `init`)."""

    def submit_task(self, task) -> executors.TaskFuture:
        future = self.client.submit(executors.base_execute_task, task, pure=False)
        self.active.append(future)
        return executors.TaskFutureWrappingPythonFuture(future)

    def can_submit_task(self) -> bool:
        self.active = [f for f in self.active if not f.done()]
        if len(self.active) < self.slots:
            return True
        self.idle()  # (the loop offers the same task again next)
        return False

    def idle(self) -> None:
        """Wait up to poll_seconds for one of the running tasks to finish (returns at once when none runs)."""
        from distributed import wait

        running = [f for f in self.active if not f.done()]
        if running:
            with contextlib.suppress(TimeoutError):
                wait(running, timeout=self.poll_seconds, return_when="FIRST_COMPLETED")
            self._check_workers()
        self.after_wait()

    def _check_workers(self) -> None:
        """A CraError once the cluster has had no worker for WORKERLESS_SECONDS (asked about once a second)."""
        now = time.monotonic()
        if now - self.asked < 1:
            return
        self.asked = now
        if self.client.scheduler_info()["workers"]:
            self.workerless_since = None
        elif self.workerless_since is None:
            self.workerless_since = now
        elif now - self.workerless_since > WORKERLESS_SECONDS:
            raise CraError(
                f"The {self.where} all left: no worker for {WORKERLESS_SECONDS} s while batches were waiting to "
                "be parsed. Restart the workers (`dask worker ADDRESS`) and run `cra index` again (it resumes); the "
                "knowledge base was left as it was."
            )


@contextlib.contextmanager
def cluster_for(engine: Engine, contents_dir: str, poll_seconds: float) -> Iterator[Cluster]:
    """The engine's cluster, open for one run and closed after it (a local one stopped); contents_dir: the run's
    contents directory, which every worker must see."""
    opened = {"dask": _dask_cluster, "ray": _ray_cluster}[engine.name]
    with opened(engine, contents_dir, poll_seconds) as cluster:
        yield cluster


def _quiet_logs() -> Callable[[], None]:
    """Keep the cluster's own log lines (connection retries, worker start-up) off the user's terminal for the run;
    returns what restores them. What goes wrong reaches the user as one CraError line."""
    import logging

    loggers = [logging.getLogger(name) for name in ("distributed", "ray")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)

    def restore() -> None:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)

    return restore


@contextlib.contextmanager
def _dask_cluster(engine: Engine, contents_dir: str, poll_seconds: float) -> Iterator[Cluster]:
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise CraError(
            f"--engine dask needs Dask's distributed scheduler ({exc}): pip install 'cra-engine[dask]'."
        ) from exc
    restore = _quiet_logs()
    local, note = None, None
    try:
        if engine.address is None:
            n = engine.workers or os.cpu_count() or 1
            with _ctrl_c_ignored():  # (its worker processes inherit that: Ctrl-C stops the run, not them)
                local = LocalCluster(
                    n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
                )
            client = Client(local)
            note = f"started a local Dask cluster of {n} workers for this run (--address uses an existing one)"
        else:
            try:
                client = Client(engine.address, timeout=f"{CONNECT_SECONDS}s")
            except (OSError, TimeoutError, ValueError, TypeError) as exc:
                raise CraError(
                    f"No Dask scheduler answered at {engine.address} within {CONNECT_SECONDS} s "
                    f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'}). Start one "
                    "(`dask scheduler`, then `dask worker ADDRESS` on each machine) or fix --address "
                    "(tcp://HOST:8786); the knowledge base was left as it was."
                ) from exc
        try:
            with _dask_ready(client, engine, contents_dir) as where:
                workers = len(client.scheduler_info()["workers"])
                executor = _DaskExecutor(client, SLOTS_PER_WORKER * workers, poll_seconds, where)
                yield Cluster(executor, workers, where, note)
        finally:
            client.close()
    finally:
        if local is not None:
            local.close()
        restore()


@contextlib.contextmanager
def _ctrl_c_ignored() -> Iterator[None]:
    """While the block runs (in the main thread), SIGINT is ignored, and so it is in the processes started meanwhile
    (Python keeps an inherited SIG_IGN): a terminal's Ctrl-C goes to every process of the group, and the workers of a
    local cluster would die of it mid-batch, leaving their tasks waiting for workers, while this process stops the run
    and closes the cluster itself."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _dask_ready(client, engine: Engine, contents_dir: str) -> Iterator[str]:
    """Waits for a first worker, checks every worker (`worker_view`), yields where the parse runs."""
    try:
        client.wait_for_workers(1, timeout=CONNECT_SECONDS)
    except TimeoutError as exc:
        raise CraError(
            f"The Dask scheduler at {engine.address} has no workers (none joined within {CONNECT_SECONDS} s): start "
            "`dask worker ADDRESS` on each machine; the knowledge base was left as it was."
        ) from exc
    workers = len(client.scheduler_info()["workers"])
    where = f"{workers} Dask workers" + (f" at {engine.address}" if engine.address else "")
    try:
        views = client.run(worker_view, contents_dir)
    except Exception as exc:  # a worker that cannot unpickle the probe has no cra installed
        raise CraError(
            f"The {where} could not run cra's code ({type(exc).__name__}: {exc}): install the same cra-engine "
            "version on every worker (and restart them)."
        ) from exc
    _checked(views, contents_dir, where)
    yield where


@contextlib.contextmanager
def _ray_cluster(engine: Engine, contents_dir: str, poll_seconds: float) -> Iterator[Cluster]:
    try:
        import ray
        from hamilton.plugins.h_ray import RayTaskExecutor
    except ImportError as exc:
        raise CraError(f"--engine ray needs Ray ({exc}): pip install 'cra-engine[ray]'.") from exc
    restore = _quiet_logs()
    started = time.perf_counter()
    try:
        options = {"address": engine.address} if engine.address else {"num_cpus": engine.workers or os.cpu_count()}
        try:
            ray.init(**options, log_to_driver=False)
        except (ConnectionError, OSError, TimeoutError, ValueError, RuntimeError) as exc:
            raise CraError(
                f"Could not reach the Ray cluster at {engine.address or 'a local Ray instance'} "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'}, after "
                f"{time.perf_counter() - started:.0f} s): start one (`ray start --head`) or fix --address; the "
                "knowledge base was left as it was."
            ) from exc
        try:
            workers = max(int(ray.cluster_resources().get("CPU", 1)), 1)
            where = f"{workers} Ray CPUs" + (f" at {engine.address}" if engine.address else "")
            nodes = [n for n in ray.nodes() if n.get("Alive")]
            probes = [
                ray.remote(worker_view)
                .options(scheduling_strategy=_on_node(n["NodeID"]))
                .remote(contents_dir)  # one per node
                for n in nodes
            ]
            _checked(dict(zip([n["NodeManagerAddress"] for n in nodes], ray.get(probes))), contents_dir, where)
            note = None if engine.address else f"started a local Ray instance of {workers} CPUs for this run"
            yield Cluster(_ray_executor(RayTaskExecutor, poll_seconds), workers, where, note)
        finally:
            ray.shutdown()
    finally:
        restore()


def _ray_executor(stock: type, poll_seconds: float) -> executors.TaskExecutor:
    """Hamilton's `RayTaskExecutor` (Ray already started by `_ray_cluster`) with the same `idle` wait as the Dask one:
    its futures are Python's, waited on with `concurrent.futures.wait`."""
    import concurrent.futures

    class RayExecutor(stock):
        active: list = []
        after_wait: Callable[[], None] = staticmethod(lambda: None)

        def submit_task(self, task) -> executors.TaskFuture:
            future = super().submit_task(task)
            self.active = [*(f for f in self.active if not f.done()), future.future]
            return future

        def idle(self) -> None:
            running = [f for f in self.active if not f.done()]
            if running:
                concurrent.futures.wait(running, timeout=poll_seconds, return_when="FIRST_COMPLETED")
            self.after_wait()

    return RayExecutor(skip_init=True)


def _on_node(node_id: str):
    """A Ray scheduling strategy that runs a task on one node (to probe each)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
