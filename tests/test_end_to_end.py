"""The installed `cra` console script as a user runs it, on code of real size: a generated 2,200-file repository
parsed in worker processes (with and without -v), and Django's sdist from the package registry (cached).

These walk the paths the API-level tests never did: the CLI's progress callback crossing into Hamilton's process
executor crashed every index of 600+ files."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contract import assert_json_contract

pytestmark = pytest.mark.slow
CRA = Path(sys.executable).with_name("cra")  # the console script installed beside this interpreter
N_FILES = 2200


def cra(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """Run the installed console script; never a traceback, whatever the outcome."""
    if not CRA.is_file():
        pytest.fail(f"console script {CRA} is missing: install the project (make setup) before running these tests")
    done = subprocess.run([str(CRA), *args], capture_output=True, text=True, timeout=600, **kwargs)
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """A Python project of N_FILES modules in 40 packages; every module defines five functions and a class."""
    root = tmp_path_factory.mktemp("generated")
    for i in range(N_FILES):
        package = root / f"pkg{i % 40}"
        package.mkdir(exist_ok=True)
        (package / "__init__.py").touch()
        nxt = (i + 1) % N_FILES
        body = [f'"""Module {i}: widgets of kind {i}."""', f"from pkg{nxt % 40} import mod{nxt}", ""]
        for j in range(5):
            body += [f"def compute_{i}_{j}(value):", f'    """Scale value by {j}."""', f"    return value * {j}", ""]
        body += [f"class Widget{i}:", "    def render(self):", f"        return compute_{i}_0(mod{nxt})", ""]
        (package / f"mod{i}.py").write_text("\n".join(body))
    return root


def _indexed(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_index_in_worker_processes_without_progress(generated, tmp_path):
    out = _indexed(cra("index", str(generated), "--kb", str(tmp_path / "kb"), "--workers", "2", "--history", "0"))
    assert f"parsed {N_FILES + 40} in 2 processes" in out


def test_index_in_worker_processes_with_progress(generated, tmp_path):
    done = cra("index", str(generated), "--kb", str(tmp_path / "kb"), "--workers", "2", "--history", "0", "-v")
    assert f"parsed {N_FILES + 40} in 2 processes" in _indexed(done)
    assert f"parsing: {N_FILES + 40}/{N_FILES + 40} files" in done.stderr  # progress reached the end


def test_default_index_uses_every_core_and_the_kb_answers(generated, tmp_path):
    kb = tmp_path / "kb"
    out = _indexed(cra("index", str(generated), "--kb", str(kb), "--history", "0"))
    if (os.cpu_count() or 1) > 1:
        assert "processes" in out  # 2,240 changed files: the parallel path, as on any multi-core machine
    done = cra(
        "retrieve",
        "compute_1234_3 scales by the wrong factor",
        "--repo",
        str(generated),
        "--kb",
        str(kb),
        "--format",
        "json",
        "--budget",
        "4096",
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert_json_contract(doc)
    assert doc["provenance"]["scope"][0]["path"] == "pkg34/mod1234.py"


@pytest.fixture(scope="module")
def django(tmp_path_factory) -> tuple[Path, Path]:
    """Django's sdist (downloaded from the package registry once, cached in $CRA_CACHE) indexed by the console
    script into a KB outside the cached tree."""
    from cra.drivers.bench.speed import django_source

    repo = django_source()
    kb = tmp_path_factory.mktemp("django") / "kb"
    done = cra("index", str(repo), "--kb", str(kb))
    out = _indexed(done)
    assert "python 2" in out  # ~2,800 Python files, in worker processes on a multi-core machine
    assert "not a git repository" in done.stderr  # the sdist has no history, and the user is told what that costs
    return repo, kb


def _ranked(repo: Path, kb: Path, task: str) -> list[str]:
    done = cra("retrieve", task, "--repo", str(repo), "--kb", str(kb), "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert_json_contract(doc)
    assert doc["files"], "the package is empty"
    return [row["path"] for row in doc["provenance"]["scope"]]


def test_django_bug_report_ranks_the_file_to_fix(django):
    ranked = _ranked(
        *django,
        "slugify() does not strip leading and trailing dashes and underscores when "
        "allow_unicode=True is passed; the result keeps a leading dash",
    )
    assert "django/utils/text.py" in ranked[:3]


def test_django_stack_trace_seeds_its_frames(django):
    trace = (
        'Traceback (most recent call last):\n  File "django/core/handlers/base.py", line 197, in _get_response\n'
        '  File "django/template/response.py", line 114, in render\nTemplateDoesNotExist: registration/login.html'
    )
    ranked = _ranked(*django, trace)
    assert {"django/core/handlers/base.py", "django/template/response.py"} <= set(ranked[:5])


def test_an_interrupted_index_resumes_instead_of_starting_over(generated, tmp_path):
    """Ctrl-C mid-way keeps the batches already parsed; the next run parses only the rest and builds the same KB."""
    from tests.kb_compare import compare_kbs

    kb, fresh = tmp_path / "kb", tmp_path / "fresh"
    argv = [str(CRA), "index", str(generated), "--kb", str(kb), "--workers", "2", "--history", "0", "-v"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    seen = b""
    while not re.search(rb"parsing: [1-9]\d{2,}/", seen) and proc.poll() is None:  # a batch of 300 parsed and saved
        seen += proc.stderr.read(1)
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C in a terminal: to the driver and its worker processes
    out, err = proc.communicate(timeout=120)
    err = (seen + err).decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "run `cra index` again to resume" in err
    assert not (kb / "CURRENT").exists()  # nothing was written: the KB is still absent

    done = _indexed(cra("index", str(generated), "--kb", str(kb), "--history", "0"))
    resumed = int(done.split("resumed: ")[1].split()[0])
    assert 300 <= resumed < N_FILES + 40, done
    assert not (kb / ".resume").exists()  # emptied once the KB is written
    _indexed(cra("index", str(generated), "--kb", str(fresh), "--history", "0"))
    compared, differences = compare_kbs(
        kb, fresh, ignore={"n_parsed", "n_reused", "n_resumed", "workers", "notes", "carried"}
    )
    assert "symbols.arrow" in compared and differences == []
