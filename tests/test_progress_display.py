"""Long commands show progress where a person watches (stderr a terminal: parsed files, rate, time left, and what
the run is doing between), and nothing where stderr is a file or a pipe (CI logs, scripts). Through the installed
`cra` under a pseudo-terminal and without one."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

CRA = Path(sys.executable).with_name("cra")
pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="needs a pseudo-terminal")


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    for i in range(40):
        (root / f"mod{i}.py").write_text(f"def compute_{i}(value):\n    return value * {i}\n")
    return root


def _under_terminal(argv: list[str], env: dict) -> tuple[int, str]:
    """Exit status and everything printed by argv run with a pseudo-terminal as its stdin, stdout and stderr."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child
        os.execve(argv[0], argv, env)
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child has gone: the terminal is closed
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def _env(tmp_path: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CRA_PROGRESS"}
    return {**env, "CRA_HOME": str(tmp_path / "home"), **extra}


def test_cra_index_shows_progress_on_a_terminal(repo, tmp_path):
    code, out = _under_terminal(
        [str(CRA), "index", str(repo), "--kb", str(tmp_path / "kb"), "--history", "0"], _env(tmp_path)
    )
    assert code == 0, out
    assert "parsing: 40/40 files" in out  # the parse, counted
    assert "indexing: writing the knowledge base" in out  # and what comes after it
    assert "indexed 40 files" in out


def test_cra_index_is_quiet_without_a_terminal(repo, tmp_path):
    done = subprocess.run(
        [str(CRA), "index", str(repo), "--kb", str(tmp_path / "kb"), "--history", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert "indexed 40 files" in done.stdout
    assert "parsing:" not in done.stderr and "indexing:" not in done.stderr and "\r" not in done.stderr


def test_progress_can_be_turned_off_on_a_terminal_and_on_in_a_log(repo, tmp_path):
    code, out = _under_terminal(
        [str(CRA), "index", str(repo), "--kb", str(tmp_path / "kb"), "--history", "0"], _env(tmp_path, CRA_PROGRESS="0")
    )
    assert code == 0 and "parsing:" not in out, out
    done = subprocess.run(
        [str(CRA), "index", str(repo), "--kb", str(tmp_path / "kb2"), "--history", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(tmp_path, CRA_PROGRESS="1"),
    )
    assert "parsing: 40/40 files" in done.stderr and "\r" not in done.stderr  # a log: whole lines


@pytest.mark.parametrize("shown", ["1", "0"], ids=["terminal", "log"])
def test_cra_evaluate_lines_say_the_time_left_only_where_progress_is_shown(tmp_path, monkeypatch, capsys, shown):
    from tests.test_evaluation import run_fixture

    monkeypatch.setenv("CRA_PROGRESS", shown)  # (as a terminal on stderr does; a pseudo-terminal needs no fixture)
    run_fixture(tmp_path, monkeypatch, "local")
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[1/4] login")]
    assert len(lines) == 1  # one line per case, as before
    assert ("left" in lines[0]) == (shown == "1")
