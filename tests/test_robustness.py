"""Property tests: whatever task text a user pastes and whatever case file they pass, `cra` exits 0 or 2, keeps its
JSON contract and never crashes (in-process: an exception escaping `main`, or one `main` reports as internal, fails)."""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import string
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from cra.drivers.cli.main import main
from tests.contract import assert_json_contract
from tests.fixture_repo import FILES, make_repo

PROPERTY = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = make_repo(tmp_path_factory.mktemp("robust") / "repo")
    assert main(["index", str(root)]) == 0
    return root


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("inputs")


def run_cli(argv: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    """`main(argv)` with its own stdin/stdout/stderr: (exit code, stdout, stderr); an escaping exception fails the test."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    except BaseException:
        pytest.fail(f"uncaught exception escaping cra main for {argv[:3]}:\n{traceback.format_exc()}")
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue()


def one_line_error(err: str) -> bool:
    errors = [line for line in err.splitlines() if line.startswith("cra: error: ")]
    return len(errors) == 1 and err.rstrip("\n").endswith(errors[0])


def check_retrieve(code: int, out: str, err: str) -> None:
    assert code in (0, 2), (code, err[-2000:])  # 1 would be main's "internal error": a crash it caught
    assert all(line.startswith(("warning: ", "cra: error: ")) for line in err.splitlines()), err[-2000:]
    if code == 0:
        assert_json_contract(json.loads(out))
    else:
        assert one_line_error(err) and not out, err[-2000:]


# --- task texts ------------------------------------------------------------------------------------

FIXTURE_PATHS = [p for p in FILES if p.endswith((".py", ".ts", ".go"))]


@st.composite
def python_tracebacks(draw) -> str:
    """A Python stack trace through fixture files, library files and made-up ones."""
    name = st.text(st.sampled_from(string.ascii_letters + "_"), min_size=1, max_size=12)
    frames = draw(
        st.lists(
            st.tuples(
                st.sampled_from(
                    FIXTURE_PATHS + ["/usr/lib/python3.11/json/decoder.py", "<frozen importlib._bootstrap>", "<string>"]
                ),
                st.integers(0, 10**9),
                name,
                st.text(max_size=40),
            ),
            min_size=1,
            max_size=6,
        )
    )
    lines = ["Traceback (most recent call last):"]
    for path, line, function, code in frames:
        lines += [f'  File "{path}", line {line}, in {function}', f"    {code}"]
    lines.append(f"{draw(name)}Error: {draw(st.text(max_size=60))}")
    return "\n".join(lines)


FRAGMENTS = st.one_of(
    st.text(),  # any unicode: control characters and NUL included
    st.text(st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp"])),  # control, format and space characters only
    st.text(st.sampled_from(string.punctuation), min_size=1),
    st.text(st.sampled_from(" \t\n\r\x0b\x0c\x85\u00a0\u2028\u2029\u3000"), min_size=1),
    st.text(st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF) | st.sampled_from("\u200d\ufe0f"), min_size=1),
    st.text(
        st.characters(min_codepoint=0x0590, max_codepoint=0x06FF) | st.sampled_from("\u200f\u202b\u202e\u2067"),
        min_size=1,
    ),
    st.text(st.characters(categories=["Cs"]), min_size=1),  # lone surrogates: how argv bytes that are not UTF-8 arrive
    python_tracebacks(),
    st.sampled_from(
        ["validate_login", "app/auth/handler.py", "LoginForm", "Invoice.total_amount", "def", "import", "-"]
    ),
)
TASK_TEXTS = st.lists(FRAGMENTS, min_size=1, max_size=4).map(" ".join)


def retrieve_argv(repo: Path, *task: str) -> list[str]:
    return ["retrieve", "--repo", str(repo), "--format", "json", *task]


def deliver(task: str, how: str, scratch: Path) -> tuple[list[str], bytes]:
    """The task as an argument (after `--`, so a leading dash stays text), a task file, or stdin."""
    if how == "argument":
        return ["--", task], b""
    if how == "file":
        (scratch / "task.txt").write_bytes(task.encode("utf-8", "surrogatepass"))
        return ["--task-file", str(scratch / "task.txt")], b""
    return ["-"], task.encode("utf-8", "surrogatepass")


@PROPERTY
@given(task=TASK_TEXTS, how=st.sampled_from(["argument", "file", "stdin"]))
def test_any_task_text_gives_a_package_or_one_line_error(repo, scratch, task, how):
    extra, stdin = deliver(task, how, scratch)
    code, out, err = run_cli(retrieve_argv(repo, *extra), stdin)
    event(f"exit {code}")
    check_retrieve(code, out, err)


@PROPERTY
@given(data=st.binary(max_size=2000), how=st.sampled_from(["file", "stdin"]))
def test_any_bytes_as_task_are_read_with_replacement(repo, scratch, data, how):
    if how == "file":
        (scratch / "task.bin").write_bytes(data)
        code, out, err = run_cli(retrieve_argv(repo, "--task-file", str(scratch / "task.bin")))
    else:
        code, out, err = run_cli(retrieve_argv(repo, "-"), data)
    event(f"exit {code}")
    check_retrieve(code, out, err)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        assert err.count("is not valid UTF-8; undecodable bytes were replaced") == 1, err


def test_latin1_task_file_is_read_with_one_warning(repo, scratch):
    task_file = scratch / "issue-latin1.txt"
    task_file.write_bytes("Fix validate_login: caf\u00e9 users with \u00fc in their name fail".encode("latin-1"))
    code, out, err = run_cli(retrieve_argv(repo, "--task-file", str(task_file)))
    check_retrieve(code, out, err)
    assert err.count(f"warning: task file {task_file} is not valid UTF-8; undecodable bytes were replaced") == 1
    doc = json.loads(out)
    assert "caf\ufffd users" in doc["task"]["raw_description"]
    assert "validate_login" in doc["task"]["symbol_hints"]
    clean = scratch / "issue-utf8.txt"
    clean.write_text("Fix validate_login: caf\u00e9 users", encoding="utf-8")
    code, out, err = run_cli(retrieve_argv(repo, "--task-file", str(clean)))
    assert code == 0 and "UTF-8" not in err and "caf\u00e9" in json.loads(out)["task"]["raw_description"]


@settings(max_examples=2, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(unit=TASK_TEXTS.filter(bool), size=st.integers(1_000_000, 2_000_000))
@example(unit="a.", size=1_000_000)  # one megabyte-long path-like word: a backtracking pattern went quadratic on it
@example(unit="at app/auth/handler.go:12 ", size=1_000_000)  # a frame repeated: each one looked up again
@example(unit='  File "app/auth/handler.py", line 3, in f\n', size=1_000_000)
def test_megabytes_of_task_text(repo, scratch, unit, size):
    task = (unit * (size // len(unit) + 1))[:size]
    extra, stdin = deliver(task, "stdin", scratch)
    check_retrieve(*run_cli(retrieve_argv(repo, *extra), stdin))


def test_console_script_with_a_megabyte_of_random_bytes_on_stdin(repo):
    cra = Path(sys.executable).with_name("cra")
    data = random.Random(11).randbytes(1_000_000)
    proc = subprocess.run([str(cra), *retrieve_argv(repo, "-")], input=data, capture_output=True, timeout=120)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    check_retrieve(proc.returncode, out, err)
    assert "warning: standard input is not valid UTF-8; undecodable bytes were replaced" in err


# --- case files ------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
PATCH = """--- a/app/billing/invoice.py
+++ b/app/billing/invoice.py
@@ -8,2 +8,2 @@ class Invoice:
     def total_amount(self) -> float:
-        return sum(price for _, price in self.items)
+        return round(sum(price for _, price in self.items), 2)
"""
VALID_CASES = [
    {
        "id": "login",
        "task": "fix validate_login for LDAP users",
        "expected_files": ["app/auth/handler.py"],
        "expected_symbols": ["validate_login"],
    },
    {
        "instance_id": "demo__app-1",
        "repo": "demo/app",
        "base_commit": "0" * 40,
        "problem_statement": "Invoice total",
        "gold_files": ["app/billing/invoice.py"],
        "gold_functions": ["app/billing/invoice.py::Invoice.total_amount"],
    },
    {
        "instance_id": "demo__app-2",
        "repo": "demo/app",
        "base_commit": "0" * 40,
        "problem_statement": "round invoices",
        "patch": PATCH,
    },
]
OPTIONAL_FIELDS = ["id", "repo_path", "expected_symbols", "gold_functions", "repo", "base_commit"]


@st.composite
def damaged_cases(draw) -> dict:
    """A valid case with some fields dropped and some replaced by any JSON value."""
    case = dict(draw(st.sampled_from(VALID_CASES)))
    for field in draw(st.sets(st.sampled_from(sorted(case)), max_size=1)):
        del case[field]
    case.update(
        draw(st.dictionaries(st.sampled_from(sorted(case) + OPTIONAL_FIELDS), JSON_VALUES, min_size=1, max_size=2))
    )
    return case


def layouts(records: list) -> st.SearchStrategy[str]:
    return st.sampled_from(
        [
            json.dumps(records, indent=2),
            "\n".join(json.dumps(r) for r in records),
            "\n".join(json.dumps(r, indent=4) for r in records),
        ]
    )


ODD_SEED_CASES = st.fixed_dictionaries(  # well-formed cases with odd contents: they reach retrieval and scoring
    {"task": TASK_TEXTS, "expected_files": st.lists(st.sampled_from(FIXTURE_PATHS) | st.text(max_size=30), max_size=3)},
    optional={
        "id": st.text(max_size=3) | st.integers(0, 3) | st.floats(),
        "expected_symbols": st.none() | st.lists(st.text(max_size=20), max_size=3),
        "repo_path": st.none() | st.sampled_from([".", "", "/no/such/dir"]),
    },
)
CASE_FILES = st.one_of(
    st.binary(max_size=300),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    st.lists(st.sampled_from(VALID_CASES) | damaged_cases() | JSON_VALUES, min_size=1, max_size=3)
    .flatmap(layouts)
    .map(str.encode),
    st.lists(damaged_cases(), min_size=1, max_size=2).flatmap(layouts).map(str.encode),
    st.lists(ODD_SEED_CASES, min_size=1, max_size=3)
    .flatmap(layouts)
    .map(lambda text: text.encode("utf-8", "surrogatepass")),
)
CASE_ERROR = re.compile(r"^\[\d+/\d+\] .*?: error \((\w+):", re.MULTILINE)


@settings(PROPERTY, max_examples=40)  # a case file that parses costs an incremental index and a retrieval per case
@given(content=CASE_FILES)
@example(content=b'{"task": "fix login", "expected_files": 5}')  # wrong types once crashed the normaliser
@example(content=b'{"task": ["fix", "login"], "expected_files": ["app/auth/handler.py"], "id": {"a": 1}}')
@example(content=b"[" * 100_000)  # nesting deeper than the JSON decoder's recursion
@example(
    content=b'[{"task": "x", "expected_files": [], "id": ' + b"1" * 5000 + b"}]"
)  # int beyond Python's digit limit
@example(content=b"\xff\xfe{\x00")
def test_any_case_file_gives_a_summary_or_one_line_error(repo, scratch, content):
    cases = scratch / "cases.json"
    cases.write_bytes(content)
    code, out, err = run_cli(
        ["evaluate", "--cases", str(cases), "--repo", str(repo), "--workers", "1", "--budget", "4000"]
    )
    event(f"exit {code}")
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]  # main turns a crash into exit 1
    assert code in (0, 1, 2), (code, err[-2000:])
    if code == 2:
        assert one_line_error(err) and not out, err[-2000:]
    else:  # 1 is `cra evaluate`'s "no case could be evaluated" (every case skipped), with the summary printed
        assert re.search(r"^\d+ cases evaluated, \d+ skipped$", out, re.MULTILINE), out
        assert code == 0 or out.startswith("0 cases evaluated"), out
    # a case that fails inside the pipeline is reported and the run goes on; only user errors may fail a case
    assert set(CASE_ERROR.findall(err)) <= {"CraError"}, err[-2000:]
