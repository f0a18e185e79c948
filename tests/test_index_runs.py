"""How `cra index` behaves around the run itself: one writer per KB, worker failures as one line, and the warnings
that say when an index does not reflect its tree."""

from __future__ import annotations

import gc
import pickle
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hamilton.lifecycle import api

from cra.drivers.cli.main import main
from cra.drivers.common.errors import CraError
from cra.drivers.common.locks import exclusive_lock
from cra.drivers.index.indexer import ParseProgress, index_frames, index_lock_path, index_repository
from cra.drivers.index.sources import scan_sources
from cra.drivers.kb.store import load_kb
from tests.fixture_repo import make_repo

CRA = Path(sys.executable).with_name("cra")


def test_a_second_index_waits_for_the_first_and_both_leave_a_working_kb(tmp_path):
    repo = make_repo(tmp_path / "repo")
    assert main(["index", str(repo)]) == 0
    with exclusive_lock(index_lock_path(repo / ".cra")):  # another index run is writing
        second = subprocess.Popen(
            [str(CRA), "index", str(repo)], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        line = second.stderr.readline()
        assert "waiting" in line and second.poll() is None  # it says so and waits instead of racing the writer
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert "Traceback" not in err and "indexed" in out
    assert not load_kb(repo / ".cra").tables["files"].empty


def test_concurrent_index_runs_of_one_repository_all_succeed(tmp_path):
    repo = make_repo(tmp_path / "repo")
    runs = [
        subprocess.Popen([str(CRA), "index", str(repo)], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    for run in runs:
        out, err = run.communicate(timeout=180)
        assert run.returncode == 0 and "Traceback" not in err, err
    assert sorted(p.name for p in (repo / ".cra").iterdir() if p.name.startswith(("v-", ".tmp-"))).__len__() == 1


class _HoldsAStream:
    """A lifecycle adapter that cannot be pickled, as the CLI's progress printer once was."""

    def __init__(self):
        self.stream = sys.stderr


def test_progress_callback_never_travels_to_worker_processes():
    lock = threading.Lock()
    calls = []
    hook = ParseProgress(lambda done, total: (lock, calls.append((done, total))))
    copy = pickle.loads(pickle.dumps(hook))  # what a worker receives: inert, and picklable despite the lock
    copy.run_after_task_return(result={"changed_files": [1, 2]}, success=True)
    hook.run_after_task_return(result={"changed_files": [1, 2]}, success=True)
    assert calls == [(0, 2)]


def test_a_failing_worker_run_is_one_line_naming_the_cause(tmp_path):

    class Unpicklable(api.TaskReturnHook, _HoldsAStream):
        def run_after_task_return(self, **kwargs):
            """Does nothing: the hook is here only because its stream cannot travel to a worker process."""

    repo = make_repo(tmp_path / "repo")
    with pytest.raises(CraError) as err:
        index_frames(repo, history=0, workers=2, adapters=(Unpicklable(),))
    message = str(err.value)
    assert "\n" not in message and "pickle" in message and "--workers 1" in message


@pytest.mark.parametrize("entry", ["index_frames", "index_repository"])
def test_a_script_indexing_without_a_main_guard_is_told_what_to_add(tmp_path, entry):
    """Workers start from a fork server and import the script that started them: an unguarded script's worker dies
    trying to index again, and the error says what to add (the driver's own entry points are guarded). Through
    index_repository the worker's run would wait for ever on the lock its parent holds: it fails at once instead."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        f"import sys\nfrom pathlib import Path\nfrom cra.drivers.index.indexer import {entry}\n"
        f"{entry}(Path(sys.argv[1]), history=0, workers=2)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script), str(make_repo(tmp_path / "repo"))],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parents[1],
    )
    assert done.returncode != 0
    assert (
        'if __name__ == "__main__":' in done.stderr.splitlines()[-1] and "--workers 1" in done.stderr.splitlines()[-1]
    )
    guarded = script.read_text().replace(f"{entry}(Path", f'if __name__ == "__main__":\n    {entry}(Path')
    script.write_text(guarded)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "repo")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parents[1],
    )
    assert done.returncode == 0, done.stderr


class _Releases(api.NodeExecutionHook):
    """Keeps a weak reference to some nodes' results and, when the run's last node starts, notes which of them are
    still alive somewhere (the driver's result cache, if nowhere else)."""

    def __init__(self, watched: tuple[str, ...]):
        self.watched, self.refs, self.alive = watched, {}, None

    def __getstate__(self):
        return {"watched": self.watched, "refs": {}, "alive": None}  # (weak references do not travel to workers)

    def run_before_node_execution(self, *, node_name, **kwargs):
        if node_name == "index_stats":
            gc.collect()  # (pandas objects can sit in reference cycles: only what is still referenced counts)
            self.alive = sorted(name for name, ref in self.refs.items() if ref() is not None)

    def run_after_node_execution(self, *, node_name, result=None, **kwargs):
        if node_name in self.watched:
            self.refs[node_name] = weakref.ref(result)


@pytest.mark.parametrize("workers", [1, 2])
def test_an_index_run_lets_go_of_intermediate_results_once_read(tmp_path, workers):
    repo = make_repo(tmp_path / "repo")
    watched = ("decoded_files", "file_facts", "new_symbol_rows", "kb_symbols")
    hook = _Releases(watched)
    tables, _ = index_frames(repo, history=0, workers=workers, adapters=(hook,))
    assert set(hook.refs) == set(watched)
    assert hook.alive == ["kb_symbols"]  # a KB table is the run's output; the file texts and parses are gone
    assert not tables["symbols"].empty and not tables["files"].empty


@pytest.mark.parametrize("workers", [1, 2])
def test_an_index_run_lets_go_of_the_files_bytes_once_decoded(tmp_path, workers):
    repo = make_repo(tmp_path / "repo")
    scan = scan_sources(repo)
    assert scan.frame["data"].notna().all()
    tables, _ = index_frames(repo, history=0, workers=workers, scan=scan)
    assert scan.frame["data"].isna().all()  # the caller's scan: its bytes went once decoded_files had read them
    assert set(tables["contents"]["file_id"]) == set(tables["files"]["file_id"]) and len(tables["files"]) > 3


def test_workers_must_be_positive(tmp_path, capsys):
    assert main(["index", str(make_repo(tmp_path / "repo")), "--workers", "0"]) == 2
    assert "--workers must be at least 1" in capsys.readouterr().err


def test_index_warns_when_tracked_sources_are_left_out(tmp_path, capsys):
    repo = tmp_path / "repo"
    (repo / "svc").mkdir(parents=True)
    for i in range(25):
        (repo / "svc" / f"handler{i}.go").write_text(
            "package svc\n\n" + f"func Handle{i}() int {{ return {i} }}\n" * 60
        )
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "go"], check=True
    )
    assert main(["index", str(repo), "--max-file-bytes", "1000"]) == 0
    err = capsys.readouterr().err
    assert "25 of 25 go files tracked by git are not in the index" in err
    assert "nothing was indexed" in err


def test_index_of_a_tree_without_history_says_which_signals_are_off(tmp_path, capsys):
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "app.py").write_text("def main():\n    return 1\n")
    assert main(["index", str(tmp_path / "tree")]) == 0
    err = capsys.readouterr().err
    assert "no git history (not a git repository)" in err and "co-change" in err


def test_retrieve_repeats_the_index_warnings_and_says_when_the_package_is_empty(tmp_path, capsys):
    import json

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "big.py").write_text("def f():\n    return 1\n" * 200)
    assert main(["index", str(tree), "--max-file-bytes", "100"]) == 0
    capsys.readouterr()
    assert main(["retrieve", "fix f in big.py", "--repo", str(tree), "--format", "json"]) == 0
    out = capsys.readouterr()
    warnings = json.loads(out.out)["provenance"]["warnings"]
    assert any("nothing was indexed" in w for w in warnings) and any("no git history" in w for w in warnings)
    assert any("the package holds no file" in w for w in warnings)
    assert "warning: nothing was indexed" in out.err and "warning: the package holds no file" in out.err


def _freed_before_last_node(local_executor) -> bool:
    """Whether a node's result, whose only reader has run, is gone when a later node starts (collector off)."""
    from hamilton import ad_hoc_utils, driver
    from hamilton.execution import executors

    from cra.drivers.index.memory import releasing

    def texts() -> pd.DataFrame:
        return pd.DataFrame({"text": ["x" * 100] * 10})

    def n_texts(texts: pd.DataFrame) -> int:
        return len(texts)

    def report(n_texts: int) -> int:
        return n_texts

    held = {}

    class Watch(api.NodeExecutionHook):
        def run_before_node_execution(self, *, node_name, **kwargs):
            if node_name == "report":
                held["alive"] = held["texts"]() is not None

        def run_after_node_execution(self, *, node_name, result=None, **kwargs):
            if node_name == "texts":
                held["texts"] = weakref.ref(result)

    module = ad_hoc_utils.create_temporary_module(texts, n_texts, report)
    dag = releasing(
        driver.Builder()
        .with_modules(module)
        .enable_dynamic_execution(allow_experimental_mode=True)
        .with_local_executor(local_executor)
        .with_remote_executor(executors.SynchronousLocalTaskExecutor())
        .with_adapters(Watch())
        .build()
    )
    gc.disable()
    try:
        assert dag.execute(["report"])["report"] == 10
    finally:
        gc.enable()
    return not held["alive"]


def test_a_large_run_frees_each_tasks_inputs_once_read_not_when_the_collector_next_runs():
    """Hamilton runs a task's nodes in a closure that refers to itself and to the task's inputs (a reference cycle):
    an input whose last reader has run stays alive until a full collection. A large run's executor collects after
    each task; the stock one leaves it to Python (a full pass per task would double a one-file re-index)."""
    from hamilton.execution import executors

    from cra.drivers.index.memory import CollectingExecutor

    assert not _freed_before_last_node(executors.SynchronousLocalTaskExecutor())
    assert _freed_before_last_node(CollectingExecutor())
    assert gc.get_freeze_count() == 0  # (what it froze after each task is thawed when the run ends)


def test_a_finished_output_table_moves_to_a_mapped_file_once_no_node_reads_it(tmp_path):
    """A large run's outputs wait in memory for the KB writer; a table of numbers, codes and strings is written to an
    Arrow file once its last reader has run and comes back as an equal frame over the mapped file (read-only pages,
    not the heap). A table with Python objects is left as it is."""
    from hamilton import ad_hoc_utils, driver
    from hamilton.execution import executors

    from cra.drivers.index.memory import SPILL_MIN_ROWS, TableSpill, releasing

    n = SPILL_MIN_ROWS
    expected = pd.DataFrame(
        {
            "id": np.arange(n, dtype=np.int32),
            "term": pd.Categorical(np.where(np.arange(n) % 3 == 0, "alpha", "beta")),
            "kind": pd.array(np.where(np.arange(n) % 2 == 0, "call", "base"), dtype="str"),
        }
    )

    def terms() -> pd.DataFrame:
        return expected.copy()

    def n_terms(terms: pd.DataFrame) -> int:
        return len(terms)

    module = ad_hoc_utils.create_temporary_module(terms, n_terms)
    dag = releasing(
        driver.Builder()
        .with_modules(module)
        .enable_dynamic_execution(allow_experimental_mode=True)
        .with_local_executor(executors.SynchronousLocalTaskExecutor())
        .with_remote_executor(executors.SynchronousLocalTaskExecutor())
        .build(),
        TableSpill(tmp_path),
    )
    out = dag.execute(["terms", "n_terms"])
    assert out["n_terms"] == n and (tmp_path / "terms.arrow").exists()
    pd.testing.assert_frame_equal(out["terms"], expected)
    assert not out["terms"]["id"].to_numpy().flags.writeable  # the mapped file's pages, not a copy in the heap
    with_objects = expected.assign(kind=expected["kind"].astype(object))
    assert TableSpill(tmp_path)("objects", with_objects) is with_objects and not (tmp_path / "objects.arrow").exists()
    frame = expected.copy()
    assert TableSpill(tmp_path / "gone")("terms", frame) is frame  # nowhere to write: kept in memory, no error
    shifted = expected.set_axis(expected.index + 1)
    assert TableSpill(tmp_path)("shifted", shifted) is shifted  # (would come back with another index)


def test_the_heap_is_trimmed_only_in_runs_over_many_files(tmp_path, monkeypatch):
    """Trimming after every node and job keeps a large run's peak down; a re-index of a few files is faster without
    it (its large arrays then reuse the heap instead of coming fresh from the system)."""
    from cra.drivers.index import dag as index_dag
    from cra.drivers.index import memory as index_memory

    trims = []
    monkeypatch.setattr(index_memory, "glibc_trim", lambda: lambda: trims.append(1))
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setattr(index_dag, "PARALLEL_MIN_FILES", 10**6)
    index_repository(repo, tmp_path / "few")
    assert trims == []
    monkeypatch.setattr(index_dag, "PARALLEL_MIN_FILES", 1)
    index_repository(repo, tmp_path / "many", workers=1)
    assert len(trims) > 10  # after each node, and after each job of the KB write
