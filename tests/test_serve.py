"""`cra serve`: the installed console script as an MCP server, driven by the SDK's own client over stdio (and HTTP)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from anyio.from_thread import start_blocking_portal

pytest.importorskip("mcp")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from tests.contract import SIGNALS, assert_json_contract  # noqa: E402
from tests.fixture_repo import make_repo  # noqa: E402

CRA = str(Path(sys.executable).parent / "cra")
TASK = "fix the login password validation: short passwords should return an error"
TOOLS = {
    "get_context",
    "explain_file",
    "index",
    "search_symbols",
    "memories",
    "record_attempt",
    "escalation_report",
    "guide",
    "diagnose",
    "past_findings",
}


@asynccontextmanager
async def serving(home: Path, *args: str):
    """A Client connected to `cra serve ARGS` started as a subprocess (stdio), with CRA_HOME at home."""
    params = StdioServerParameters(command=CRA, args=["serve", *args], env={"CRA_HOME": str(home)})
    with open(os.devnull, "w") as err:
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=120) as client:
            yield client


class Session:
    """A served repository and a client to its server, called synchronously (the client lives in a portal's loop)."""

    def __init__(self, portal, client, repo: Path, home: Path):
        self.portal, self.client, self.repo, self.home = portal, client, repo, home

    def call(self, name: str, **arguments):
        return self.portal.call(lambda: self.client.call_tool(name, arguments))

    def data(self, name: str, **arguments) -> dict:
        result = self.call(name, **arguments)
        assert not result.is_error, text(result)
        return result.structured_content


@contextmanager
def session(home: Path, repo: Path, *args: str):
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(serving(home, *args)) as client:
        yield Session(portal, client, repo, home)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server over the fixture repository, shared by the tests that do not need their own."""
    root = tmp_path_factory.mktemp("serve")
    repo = make_repo(root / "demo")
    with session(root / "home", repo, "--repo", str(repo)) as s:
        yield s


def text(result) -> str:
    return result.content[0].text


def test_tools_are_listed_with_schemas_and_each_answers(served):
    from cra.drivers.memory.store import add_memory

    listed = {t.name: t for t in served.portal.call(served.client.list_tools).tools}
    assert set(listed) == TOOLS
    assert all(t.description and len(t.description) > 40 for t in listed.values())
    assert listed["get_context"].input_schema["required"] == ["task"]
    assert listed["get_context"].input_schema["properties"]["format"]["enum"] == ["markdown", "json"]

    doc = json.loads(text(served.call("get_context", task=TASK, format="json", budget=4000)))
    assert_json_contract(doc)
    assert doc["budget"] == 4000 and doc["files"][0]["path"] == "app/auth/handler.py"
    compact = json.loads(text(served.call("get_context", task=TASK, format="json", compact=True)))
    assert compact["provenance"]["auto_budget"]["bodies"] >= 1 and compact["token_count"] < doc["token_count"]
    markdown = text(served.call("get_context", task=TASK))
    assert "app/auth/handler.py" in markdown and "def validate_login" in markdown

    included = served.data("explain_file", task=TASK, path="app/auth/handler.py")
    assert included["in_package"] and included["package_rank"] == 1 and set(included["signals"]) == SIGNALS
    assert not included["seed"] and included["seed_reason"] == ""  # the task names no file
    named = served.data("explain_file", task=TASK + " in handler.py", path="app/auth/handler.py")
    assert named["seed"] and named["seed_reason"] == "file hint 'handler.py'"
    assert any(s["symbol"] == "validate_login" for s in included["symbols"]) and "included" in included["verdict"]
    ignored = served.data("explain_file", task=TASK, path="build/out.py")
    assert ignored["indexed"] is False and "ignored" in ignored["verdict"]
    far = served.data("explain_file", task=TASK, path="scripts/deploy.sh")
    assert far["indexed"] and not far["in_scope"] and far["score_rank"] > far["scope_size"]
    assert "not considered" in far["verdict"]

    found = served.data("search_symbols", query="validate_login")["symbols"]
    assert found[0]["path"] == "app/auth/handler.py" and found[0]["kind"] == "function"
    assert (
        served.data("search_symbols", query="invoice total")["symbols"][0]["qualified_name"] == "Invoice.total_amount"
    )

    summary = served.data("index")
    assert summary["parsed"] == 0 and summary["reused"] == summary["files"] > 10 and "indexed" in summary["summary"]

    add_memory(
        served.home / "memory",
        "Validate passwords with the shared policy helper",
        "project:demo",
        None,
        0.9,
        datetime.now(UTC),
    )
    remembered = served.data("memories", task=TASK)
    assert remembered["project"] == "demo"
    assert [m["content"] for m in remembered["memories"]] == ["Validate passwords with the shared policy helper"]

    for n in (1, 2):
        attempt = served.data("record_attempt", task_id="T-1", error="AssertionError: expected 401", max_retries=2)
        assert attempt["attempt_number"] == n
    assert attempt["status"] == "escalated" and attempt["report_id"] is not None
    assert "T-1" in text(served.call("escalation_report", task_id="T-1"))
    assert served.data("guide", task_id="T-1", hint="mock the LDAP client")["status"] == "queued"
    assert "mock the LDAP client" in served.data("guide", task_id="T-1")["prompt"]
    assert (served.home / "escalations.db").is_file()  # the store went to CRA_HOME


def test_bad_requests_are_tool_errors_and_the_server_keeps_answering(served, tmp_path):
    repo = served.repo
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("TOKEN = 'x'\n")
    (repo / "escape.py").symlink_to(outside / "secret.py")
    (repo / "escape_dir").symlink_to(outside)
    bad = [
        ("get_context", {}, "task"),
        ("get_context", {"task": 5}, "string"),
        ("get_context", {"task": "   "}, "task is empty"),
        ("get_context", {"task": TASK, "format": "xml"}, "format"),
        ("get_context", {"task": TASK, "budget": 10}, "256"),
        ("get_context", {"task": TASK, "repo": str(outside)}, "outside the repositories"),
        (
            "get_context",
            {"task": TASK, "repo": str(repo / ".." / ".." / outside.parent.name / "outside")},
            "outside the",
        ),
        ("get_context", {"task": TASK, "repo": str(tmp_path / "missing")}, "does not exist"),
        ("explain_file", {"task": TASK, "path": "../outside/secret.py"}, "path traversal"),
        ("explain_file", {"task": TASK, "path": "app/../../outside/secret.py"}, "path traversal"),
        ("explain_file", {"task": TASK, "path": str(outside / "secret.py")}, "outside repository"),
        ("explain_file", {"task": TASK, "path": "escape.py"}, "symlink out of"),
        ("explain_file", {"task": TASK, "path": "escape_dir/secret.py"}, "symlink out of"),
        ("search_symbols", {"query": "x", "limit": 0}, "limit"),
        ("search_symbols", {"query": ""}, "query is empty"),
        ("escalation_report", {"task_id": "nope"}, "Unknown task"),
        ("no_such_tool", {}, "no_such_tool"),
    ]
    try:
        for name, arguments, message in bad:
            result = served.call(name, **arguments)
            assert result.is_error, (name, arguments, text(result))
            assert message in text(result) and "internal error" not in text(result), (name, arguments, text(result))
            assert served.data("search_symbols", query="logout")["symbols"][0]["name"] == "logout"
    finally:
        (repo / "escape.py").unlink()
        (repo / "escape_dir").unlink()


def test_diagnose_reads_a_run_directory_inside_the_repository_and_ranks_with_the_kb(served, tmp_path):
    run = served.repo / ".autonomous_runs" / "run_1"
    run.mkdir(parents=True)
    (run / "phase_1_attempt_1.log").write_text("ERROR: validate_login rejected a valid password\nFAILED\n")
    bundle = {"error_message": "validate_login fails", "root_cause": "unknown"}
    try:
        doc = json.loads(
            text(
                served.call("diagnose", bundle=bundle, run_dir=".autonomous_runs/run_1", phase_id="phase_1", attempt=2)
            )
        )
        assert doc["escalate"] and doc["priority"] == "high" and doc["stats"]["sot_ranking"] == "kb"
        assert [t["name"] for t in doc["triggers"] if t["fired"]][-2:] == ["repeated_failures", "no_clear_root_cause"]
        assert [a["path"] for a in doc["run_artifacts"]] == ["phase_1_attempt_1.log"]
        assert doc["sot_files"][0]["path"] == "tests/test_auth.py"  # the only SOT directory of the fixture
        markdown = text(
            served.call("diagnose", bundle=None, run_dir=str(run), phase_id="phase_1", attempt=1, format="markdown")
        )
        assert markdown.startswith("# Diagnostics for phase_1") and "the handoff bundle is empty" in markdown
        for run_dir, message in (("../outside", "path traversal"), (str(tmp_path), "outside repository")):
            result = served.call("diagnose", bundle={}, run_dir=run_dir, phase_id="phase_1", attempt=1)
            assert result.is_error and message in text(result), text(result)
        result = served.call("diagnose", bundle={}, run_dir=".autonomous_runs/run_1", phase_id="../x", attempt=1)
        assert result.is_error and "Phase id" in text(result)
    finally:
        import shutil

        shutil.rmtree(served.repo / ".autonomous_runs")


def test_past_findings_recalls_from_the_store_in_cra_home(served):
    from cra.drivers.findings.review import add_findings

    add_findings(
        [
            {
                "finding_text": "SQL built by string concatenation; use bound parameters",
                "severity": "major",
                "category": "security",
                "file_path": "app/db.py",
                "outcome": "accepted",
                "repo": "acme/shop",
                "created_at": "2026-01-01T00:00:00Z",
            }
        ],
        served.home / "findings.db",
    )
    found = served.data(
        "past_findings", title="fix: escape the search SQL", files=["app/search.py"], repository="acme/shop"
    )
    assert [f["file_path"] for f in found["findings"]] == ["app/db.py"] and "Similar Prior Findings" in found["section"]
    assert served.data("past_findings", title="fix: escape the search SQL", repository="acme/other")["findings"] == []
    refused = served.call("past_findings", title="x", repository="no-owner")
    assert refused.is_error and "OWNER/NAME" in text(refused)


def test_get_context_puts_memories_and_guidance_on_top(served):
    from cra.drivers.escalation.attempts import record_attempt
    from cra.drivers.memory.store import add_memory

    add_memory(
        served.home / "memory",
        "Validate passwords with the policy module",
        "universal",
        "rule",
        1.0,
        datetime.now(UTC),
    )
    record_attempt(served.home / "escalations.db", "MCP-1", "AssertionError: short password accepted")
    page = text(
        served.call("get_context", task="validate_login accepts short passwords", memories=True, task_id="MCP-1")
    )
    assert page.index("## Previous Failure Context") < page.index("## Memories") < page.index("## Task")
    assert "policy module" in page


def test_concurrent_calls_each_get_their_own_answer(served):
    tasks = [
        TASK,
        "Invoice total_amount ignores item quantities",
        "fetchSession returns the wrong token in login.ts",
        "Serve should fail when listen cannot bind the port",
    ]

    async def ask(task: str) -> list[str]:
        doc = json.loads(
            text(await served.client.call_tool("get_context", {"task": task, "format": "json", "budget": 2000}))
        )
        assert doc["task"]["raw_description"] == task
        return [f["path"] for f in doc["files"]]

    async def together() -> dict[int, list[str]]:
        answers: dict[int, list[str]] = {}

        async def one(i: int) -> None:
            answers[i] = await ask(tasks[i % len(tasks)])

        async with anyio.create_task_group() as group:
            for i in range(12):
                group.start_soon(one, i)
        return answers

    alone = {task: served.portal.call(ask, task) for task in tasks}
    answers = served.portal.call(together)
    assert all(answers[i] == alone[tasks[i % len(tasks)]] for i in range(12))
    assert alone[tasks[1]][0] == "app/billing/invoice.py" and alone[tasks[3]][0].startswith("server/")


def test_a_file_edited_between_two_calls_shows_up_in_the_second(served):
    repo, task = served.repo, "compute the refund for a cancelled invoice"
    utils = repo / "app" / "utils.py"
    original = utils.read_text()
    before = json.loads(text(served.call("get_context", task=task, format="json")))
    assert "app/billing/refund.py" not in [f["path"] for f in before["files"]]
    assert not served.data("search_symbols", query="compute_refund")["symbols"]
    try:
        (repo / "app" / "billing" / "refund.py").write_text(
            'def compute_refund(invoice, cancelled_at):\n    """The refund of a cancelled invoice."""\n    return 0\n'
        )
        utils.write_text(original + "\n\ndef truncate_words(text: str, n: int) -> str:\n    return text\n")  # an edit
        after = json.loads(text(served.call("get_context", task=task, format="json")))
        assert after["files"][0]["path"] == "app/billing/refund.py"
        assert [s["path"] for s in served.data("search_symbols", query="truncate_words")["symbols"]] == ["app/utils.py"]
    finally:
        (repo / "app" / "billing" / "refund.py").unlink(missing_ok=True)
        utils.write_text(original)
    assert served.data("search_symbols", query="compute_refund")["symbols"] == []  # a deletion shows up too
    assert served.data("search_symbols", query="truncate_words")["symbols"] == []


def test_watch_refreshes_in_the_background(tmp_path):
    repo = make_repo(tmp_path / "demo", git=False)
    with session(tmp_path / "home", repo, "--repo", str(repo), "--watch") as s:
        assert not s.data("search_symbols", query="apply_discount")["symbols"]
        (repo / "app" / "billing" / "discount.py").write_text("def apply_discount(total, rate):\n    return total\n")
        deadline = time.monotonic() + 20
        while (
            not (found := s.data("search_symbols", query="apply_discount")["symbols"]) and time.monotonic() < deadline
        ):
            time.sleep(0.2)
        assert [f["path"] for f in found] == ["app/billing/discount.py"]


def test_allowed_roots_open_other_repositories_and_nothing_else(tmp_path):
    allowed = tmp_path / "work"
    first, second = make_repo(allowed / "first", git=False), make_repo(allowed / "second", git=False)
    (second / "app" / "tax.py").write_text("def vat_rate(country):\n    return 0.2\n")
    elsewhere = make_repo(tmp_path / "elsewhere", git=False)
    with session(tmp_path / "home", first, "--repo", str(first), "--allow-root", str(allowed)) as s:
        found = s.data("search_symbols", query="vat_rate", repo=str(second))
        assert found["repo"] == str(second.resolve()) and found["symbols"][0]["path"] == "app/tax.py"
        assert not s.data("search_symbols", query="vat_rate")["symbols"]  # the default is still the first
        refused = s.call("search_symbols", query="vat_rate", repo=str(elsewhere))
        assert refused.is_error and "--allow-root" in text(refused)
    assert not (elsewhere / ".cra").exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_http_transport_on_loopback_and_a_warning_for_other_hosts(tmp_path):
    repo = make_repo(tmp_path / "demo", git=False)
    env = {**os.environ, "CRA_HOME": str(tmp_path / "home")}
    port = _free_port()
    server = subprocess.Popen(
        [CRA, "serve", "--repo", str(repo), "--transport", "http", "--port", str(port)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    wide = subprocess.Popen(
        [CRA, "serve", "--repo", str(repo), "--transport", "http", "--host", "0.0.0.0", "--port", str(_free_port())],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )

    async def main():
        deadline = time.monotonic() + 60
        while True:
            try:
                async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                    return (await client.call_tool("search_symbols", {"query": "Invoice"})).structured_content
            except Exception:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                await anyio.sleep(0.3)

    try:
        assert anyio.run(main)["symbols"][0]["path"] == "app/billing/invoice.py"
        first_line = wide.stderr.readline()
        assert "warning" in first_line and "not loopback" in first_line
    finally:
        for process in (server, wide):
            process.terminate()
            process.wait(timeout=10)


def test_the_fingerprint_moves_with_indexed_files_and_commits_only(tmp_path):
    from cra.drivers.serve.workspace import tree_fingerprint

    repo = make_repo(tmp_path / "demo")
    first = tree_fingerprint(repo)
    assert tree_fingerprint(repo) == first
    (repo / "build" / "out.py").write_text("def generated():\n    return 2\n")  # ignored by .gitignore
    (repo / ".cra").mkdir()
    (repo / ".cra" / "CURRENT").write_text("v-1")  # the KB itself
    assert tree_fingerprint(repo) == first
    (repo / "app" / "utils.py").write_text("def slugify(text):\n    return text\n")
    edited = tree_fingerprint(repo)
    assert edited != first
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qam", "edit"], cwd=repo, check=True)
    assert tree_fingerprint(repo) != edited  # a commit moves history, which the KB also holds
