"""`cra index` stopped from outside while its worker processes parse: `kill -9` leaves no process of its group behind
(workers, fork server, resource tracker), and SIGTERM (timeout, CI cancellations, job schedulers) stops it as Ctrl-C
does: the same message, the parsed batches kept for the next run, exit 143.

Through the installed console script on a generated repository large enough for the process pool
(`cra.drivers.index.dag.PARALLEL_MIN_FILES` changed files)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
CRA = Path(sys.executable).with_name("cra")
N_FILES = 1200


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """A Python project of N_FILES modules in 40 packages, each with five functions and a class."""
    from cra.drivers.index.dag import PARALLEL_MIN_FILES

    assert N_FILES >= 2 * PARALLEL_MIN_FILES  # parsed in worker processes, with batches left when one is done
    root = tmp_path_factory.mktemp("generated")
    for i in range(N_FILES):
        package = root / f"pkg{i % 40}"
        package.mkdir(exist_ok=True)
        (package / "__init__.py").touch()
        body = [f'"""Module {i}."""', f"from pkg{(i + 1) % 40} import mod{(i + 1) % N_FILES}", ""]
        for j in range(5):
            body += [f"def compute_{i}_{j}(value):", f"    return value * {j}", ""]
        body += [f"class Widget{i}:", "    def render(self):", f"        return compute_{i}_0(1)", ""]
        (package / f"mod{i}.py").write_text("\n".join(body))
    return root


def _group(pgid: int) -> list[int]:
    """Live processes of a process group (zombies, which hold nothing and wait for init to reap them, left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()  # state ppid pgrp ...
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _parsing(generated: Path, kb: Path) -> subprocess.Popen:
    """`cra index` in a session of its own, returned once its workers have parsed and saved a batch."""
    if not CRA.is_file():
        pytest.fail(f"console script {CRA} is missing: install the project (make setup) first")
    argv = [str(CRA), "index", str(generated), "--kb", str(kb), "--workers", "2", "--history", "0", "-v"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    proc.seen = b""
    while not re.search(rb"parsing: [1-9]\d{2,}/", proc.seen) and proc.poll() is None:
        proc.seen += proc.stderr.read(1)
    assert proc.poll() is None, proc.seen.decode()
    assert len(_group(proc.pid)) >= 4, "expected the driver, its fork server and two workers"
    return proc


def _left_after(pgid: int, seconds: float = 2.0) -> list[int]:
    """The group's processes still alive `seconds` after its leader ended (empty as soon as none is)."""
    deadline = time.monotonic() + seconds
    while (alive := _group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in alive:  # (a failed run's orphans do not outlive the test)
        os.kill(pid, signal.SIGKILL)
    return alive


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process groups from /proc")
def test_kill_9_of_cra_index_leaves_no_worker_running(generated, tmp_path):
    proc = _parsing(generated, tmp_path / "kb")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert _left_after(proc.pid) == []
    assert not (tmp_path / "kb" / "CURRENT").exists()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process groups from /proc")
def test_sigterm_stops_cra_index_as_ctrl_c_does_and_the_next_run_resumes(generated, tmp_path):
    kb = tmp_path / "kb"
    proc = _parsing(generated, kb)
    os.kill(proc.pid, signal.SIGTERM)  # `kill PID`, as timeout, CI runners and job schedulers send it
    _, err = proc.communicate(timeout=120)
    err, left = (proc.seen + err).decode(), _left_after(proc.pid)  # (first: no orphan outlives a failed assertion)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "cra: interrupted by SIGTERM" in err and "run `cra index` again to resume" in err
    assert left == []
    assert not (kb / "CURRENT").exists()

    done = subprocess.run(
        [str(CRA), "index", str(generated), "--kb", str(kb), "--history", "0", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    resumed = int(done.stdout.split("resumed: ")[1].split()[0])
    assert 300 <= resumed < N_FILES + 40, done.stdout
    assert f"indexed {N_FILES + 40} files" in done.stdout


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_the_token_counting_helper_dies_with_its_process_even_while_it_is_busy():
    """The helper `cra index` forks to load cl100k (`tokens.preload`) ends with the index run however that ends: a
    `kill -9` early in a run found it still loading 2.5 s later. Stopped here (SIGSTOP) once it answers, it can only end by the
    kernel's parent-death signal, not by reading the end of its pipe."""
    probe = (
        "import os, signal, time; from cra.drivers.common import tokens; tokens.preload();"
        "tokens.count_tokens('def f(): pass');"  # (answered: the helper is past its set-up)
        "os.kill(tokens._helper.pid, signal.SIGSTOP); print(tokens._helper.pid, flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", probe], stdout=subprocess.PIPE, text=True)
    helper = int(parent.stdout.readline())
    parent.kill()
    parent.wait(timeout=10)
    deadline = time.monotonic() + 2.0
    while (alive := _running(helper)) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive:
        os.kill(helper, signal.SIGKILL)
    assert not alive


def _running(pid: int) -> bool:
    """Whether the process exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False
