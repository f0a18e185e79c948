"""`cra index --engine dask`: the parse runs on a Dask cluster (here a local one of two worker processes) and the KB
it writes equals a local run's; a scheduler that does not answer is one clear error and the KB is left as it was."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import pytest

from cra.drivers.cli.main import main
from tests.fixture_repo import make_repo
from tests.kb_compare import compare_kbs

distributed = pytest.importorskip("distributed")

TASKS = [
    "Fix the login validation bug in handler.py: validate_login accepts short passwords for LDAP users",
    "Invoice total_amount is wrong when an item has no price",
    "The Go server should fail when the port is already taken",
]
RUN_FIELDS = {"workers", "parsed_on", "notes"}  # what says where and how a run parsed, not what it indexed


@pytest.fixture(scope="module")
def cluster():
    """A Dask cluster of two worker processes, as a user would run one (`dask scheduler` + `dask worker`)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as running:
        yield running


def _executed(address: str) -> dict[str, int]:
    """Tasks each worker of the cluster has run so far."""
    with distributed.Client(address) as client:
        return client.run(lambda dask_worker: dask_worker.state.executed_count)


def _retrieved(capsys, repo: Path, kb: Path, task: str) -> dict:
    capsys.readouterr()
    assert main(["retrieve", task, "--repo", str(repo), "--kb", str(kb), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_dask_cluster_index_equals_a_local_one(cluster, tmp_path, capsys):
    repo = make_repo(tmp_path / "repo")
    local_kb, dask_kb = tmp_path / "kb-local", tmp_path / "kb-dask"
    assert main(["index", str(repo), "--kb", str(local_kb)]) == 0
    before = sum(_executed(cluster.scheduler_address).values())
    capsys.readouterr()
    assert (
        main(["index", str(repo), "--kb", str(dask_kb), "--engine", "dask", "--address", cluster.scheduler_address])
        == 0
    )
    out = capsys.readouterr().out
    assert f"on 2 Dask workers at {cluster.scheduler_address}" in out, out
    assert sum(_executed(cluster.scheduler_address).values()) - before >= 2  # the batches ran on the cluster
    compared, differences = compare_kbs(local_kb, dask_kb, ignore=RUN_FIELDS)
    assert {"files.parquet", "symbols.arrow", "edges.parquet", "file_terms.bm25.arrow"} <= set(compared)
    assert differences == []
    for task in TASKS:
        local, remote = (_retrieved(capsys, repo, kb, task) for kb in (local_kb, dask_kb))
        assert local["files"] and remote == local


def test_a_dask_scheduler_that_does_not_answer_is_one_error_and_the_kb_stays(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo")
    kb = tmp_path / "kb"
    assert main(["index", str(repo), "--kb", str(kb)]) == 0
    live = (kb / "CURRENT").read_text()
    (repo / "app" / "utils.py").write_text("def added():\n    return 2\n")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    capsys.readouterr()
    started = time.perf_counter()
    assert main(["index", str(repo), "--kb", str(kb), "--engine", "dask", "--address", address]) == 2
    assert time.perf_counter() - started < 20
    err = capsys.readouterr().err
    assert f"No Dask scheduler answered at {address}" in err and "left as it was" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert (kb / "CURRENT").read_text() == live and (kb / live.strip()).is_dir()
    assert not list(kb.glob(".tmp-*"))  # the run's contents file went with it


def test_ctrl_c_stops_a_run_on_a_local_dask_cluster(tmp_path):
    """Ctrl-C in a terminal (SIGINT to the whole process group) while batches still wait for a free worker: the run
    stops with 130, keeps what it parsed for the next run, and no process of the cluster it started is left."""
    repo = tmp_path / "repo"
    for i in range(3000):  # ten batches of 300 on two workers: most of them still queued when Ctrl-C comes
        package = repo / f"pkg{i % 30}"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"mod{i}.py").write_text(f"def compute_{i}(value):\n    return value * {i}\n")
    kb = tmp_path / "kb"
    argv = [str(Path(sys.executable).with_name("cra")), "index", str(repo), "--kb", str(kb), "--history", "0"]
    argv += ["--engine", "dask", "--workers", "2", "-v"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    seen = b""
    while not re.search(rb"parsing: [1-9]\d*/", seen) and proc.poll() is None:  # a first batch came back
        seen += proc.stderr.read(1)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("cra index --engine dask did not stop within 60 s of Ctrl-C")
    err = (seen + err).decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "run `cra index` again to resume" in err
    assert not (kb / "CURRENT").exists()
    time.sleep(2)
    left = subprocess.run(["ps", "-o", "pid=", "-g", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert left == [], f"processes of the run still alive: {left}"


def test_ray_without_ray_installed_names_the_extra(tmp_path, capsys):
    if find_spec("ray") is not None:
        pytest.skip("ray is installed here")
    repo = make_repo(tmp_path / "repo", git=False)
    assert main(["index", str(repo), "--kb", str(tmp_path / "kb"), "--engine", "ray"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'cra-engine[ray]'" in err
    assert not (tmp_path / "kb").exists() or not (tmp_path / "kb" / "CURRENT").exists()


def test_workers_with_an_existing_cluster_is_refused(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", git=False)
    argv = ["index", str(repo), "--engine", "dask", "--address", "tcp://127.0.0.1:8786", "--workers", "2"]
    assert main(argv) == 2
    assert "--workers sizes a cluster started for the run" in capsys.readouterr().err
