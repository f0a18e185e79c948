"""`cra serve --watch`: edits re-indexed in the background; requests meanwhile answer from the last good KB and say
how stale it is. Driven by the MCP SDK's client over stdio, as an agent would; the background run is made slow with
the documented test hook CRA_SERVE_REINDEX_DELAY_S so that a request lands while it is in progress."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal

pytest.importorskip("mcp")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from cra.drivers.serve.watch import ChangeFilter  # noqa: E402
from tests.fixture_repo import make_repo  # noqa: E402

CRA = str(Path(sys.executable).parent / "cra")
DELAY = 4.0  # seconds every background re-index waits before it starts (the test hook)
TASK = "apply a discount rate to an invoice total"


@asynccontextmanager
async def serving(env: dict, *args: str):
    params = StdioServerParameters(command=CRA, args=["serve", *args], env=env)
    with open(os.devnull, "w") as err:
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=120) as client:
            yield client


@contextmanager
def watching(tmp_path: Path, repo: Path, *args: str, delay: float = DELAY):
    """call(tool, **arguments) -> (result, seconds it took) against `cra serve --repo REPO --watch ARGS`."""
    env = {"CRA_HOME": str(tmp_path / "home"), "CRA_SERVE_REINDEX_DELAY_S": str(delay)}
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(serving(env, "--repo", str(repo), "--watch", *args)) as client,
    ):

        def call(name: str, **arguments):
            started = time.monotonic()
            result = portal.call(lambda: client.call_tool(name, arguments))
            assert not result.is_error, result.content[0].text
            return result, time.monotonic() - started

        call("search_symbols", query="Invoice")  # the KB is built and loaded (the first request waits for it)
        yield call


def until(ask, done, timeout: float = 20.0):
    """ask() again every 0.1 s until done(answer) or the timeout; the last answer."""
    deadline = time.monotonic() + timeout
    while not done(answer := ask()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return answer


def symbols(call, query: str):
    result, seconds = call("search_symbols", query=query)
    return result.structured_content, seconds


def test_a_request_during_a_reindex_answers_from_the_last_kb_and_says_how_stale_it_is(tmp_path):
    repo = make_repo(tmp_path / "demo", git=False)
    with watching(tmp_path, repo) as call:
        assert "index" not in symbols(call, "apply_discount")[0]  # nothing changed: no note
        (repo / "app" / "billing" / "discount.py").write_text("def apply_discount(total, rate):\n    return total\n")

        edited = time.monotonic()
        data, seconds = until(
            lambda: symbols(call, "apply_discount"),
            lambda a: a[0].get("index", {}).get("state") == "re-indexing",  # (not "pending": the run has started)
            timeout=DELAY,
        )
        assert seconds < 2.0  # answered now, not after the re-index
        assert data["index"]["state"] == "re-indexing" and data["index"]["changed_files"] == 1
        assert data["index"]["kb_age_s"] >= 0 and data["index"]["note"].startswith("index: re-indexing 1 changed file")
        assert "answered from the KB of " in data["index"]["note"]
        # the new function is found at once: read from the file itself, before the re-index has it
        assert [(s["name"], s["path"], s["start_line"]) for s in data["symbols"]] == [
            ("apply_discount", "app/billing/discount.py", 1)
        ]
        assert time.monotonic() - edited < DELAY and "read from the files" in data["index"]["note"]

        started = time.monotonic()
        result, seconds = call("get_context", task=TASK)
        text = result.content[0].text
        assert seconds < 2.0 and text.startswith("> index: re-indexing 1 changed file since ")
        assert result.structured_content["index"]["state"] == "re-indexing"
        # the new file as it is now opens the package (the ranking below is the last KB's)
        assert text.split("\n", 1)[0].endswith("; the changed files as they are now open the package")
        assert "## Edited since the index" in text and "### `app/billing/discount.py`: new file" in text
        assert "+def apply_discount(total, rate):" in text
        doc = json.loads(call("get_context", task=TASK, format="json")[0].content[0].text)
        assert doc["index"]["changed_files"] == 1 and "app/billing/discount.py" not in [f["path"] for f in doc["files"]]
        assert [p["name"] for p in doc["pinned"]] == ["edits"] and "+    return total" in doc["pinned"][0]["markdown"]
        assert doc["provenance"]["edits"]["files"] == [
            {"path": "app/billing/discount.py", "change": "added", "rank": None}
        ]

        data, _ = until(lambda: symbols(call, "apply_discount"), lambda a: "index" not in a[0])
        assert [s["path"] for s in data["symbols"]] == ["app/billing/discount.py"] and "index" not in data
        assert time.monotonic() - started < DELAY + 15
        result, _ = until(lambda: call("get_context", task=TASK), lambda a: "index" not in a[0].structured_content)
        assert "index" not in result.structured_content and not result.content[0].text.startswith("> index")
        assert "Edited since the index" not in result.content[0].text


def test_ignored_edits_do_not_count_and_a_failed_reindex_is_reported_while_the_last_kb_answers(tmp_path):
    repo = make_repo(tmp_path / "demo", git=False)
    kb = tmp_path / "kb"
    with watching(tmp_path, repo, "--kb", str(kb)) as call:
        (repo / "build" / "out.py").write_text("def generated_again():\n    return 2\n")  # build/ is .gitignore'd
        (repo / "secret.env").write_text("TOKEN=changed\n")  # so is secret.env
        (repo / "app" / "__pycache__").mkdir()
        (repo / "app" / "__pycache__" / "utils.cpython-311.pyc").write_bytes(b"\0")  # noise
        time.sleep(1.0)  # (the watcher reports a burst within 0.4 s)
        assert "index" not in symbols(call, "generated_again")[0]  # nothing to re-index

        shutil.rmtree(kb)
        kb.write_text("not a directory\n")  # the KB directory is gone bad: the background run fails
        (repo / "app" / "tax.py").write_text("def vat_rate(country):\n    return 0.2\n")
        data, seconds = until(lambda: symbols(call, "validate_login"), lambda a: "index" in a[0], timeout=DELAY)
        assert seconds < 2.0 and data["index"]["changed_files"] == 1  # the ignored edits are not among them
        data, _ = until(
            lambda: symbols(call, "validate_login"), lambda a: a[0].get("index", {}).get("state") == "failed"
        )
        assert data["index"]["state"] == "failed" and "not writable" in data["index"]["error"]
        assert "background re-index failed" in data["index"]["note"]
        assert [s["path"] for s in data["symbols"]] == ["app/auth/handler.py"]  # the last good KB still answers

        kb.unlink()  # fixed: the next edit is re-indexed
        (repo / "app" / "tax.py").write_text("def vat_rate(country):\n    return 0.25\n")
        data, _ = until(lambda: symbols(call, "vat_rate"), lambda a: a[0]["symbols"] and "index" not in a[0])
        assert [s["path"] for s in data["symbols"]] == ["app/tax.py"] and "index" not in data


def test_the_change_filter_keeps_what_the_index_reads(tmp_path):
    repo = make_repo(tmp_path / "demo")
    (repo / "app" / ".gitignore").write_text("*.gen.py\n!keep.gen.py\n")
    kb = repo / ".cra"
    kept = ChangeFilter(repo, kb, lambda: frozenset({"build/tracked.py"}))
    relevant = [
        "app/utils.py",
        "app/new_module.py",
        "app/keep.gen.py",  # re-included by a negation
        "app/gone.py",  # deleted (never existed): counts as a removal
        "build/tracked.py",  # in the KB although ignored (git tracks it)
        ".gitignore",
        "app/.gitignore",
        ".git/HEAD",
        ".git/refs/heads/main",
    ]
    ignored = [
        "build/out.py",
        "secret.env",
        "app/models.gen.py",
        "app/__pycache__/x.cpython-311.pyc",
        "node_modules/left-pad/index.js",
        ".cra/CURRENT",
        ".cra/v-1/files.parquet",
        ".git/index",
        ".git/objects/ab/cdef",
        ".git/refs/heads/main.lock",
        "app/deep/.git/config",
    ]
    assert [p for p in relevant if not kept.relevant(str(repo / p))] == []
    assert [p for p in ignored if kept.relevant(str(repo / p))] == []
    assert not kept.relevant(str(tmp_path / "elsewhere.py"))
    (repo / ".gitignore").write_text("secret.env\n")  # build/ no longer ignored: read again after the change
    assert kept.relevant(str(repo / ".gitignore")) and kept.relevant(str(repo / "build" / "out.py"))
    outside = ChangeFilter(repo, tmp_path / "kb")
    assert outside.relevant(str(repo / "app" / "utils.py")) and not outside.relevant(str(repo / ".cra" / "CURRENT"))


def test_the_index_worker_indexes_like_cra_index_and_comes_back_after_it_died(tmp_path):
    from cra.drivers.common.errors import CraError
    from cra.drivers.kb.store import load_kb
    from cra.drivers.serve.index_worker import IndexWorker

    repo = make_repo(tmp_path / "demo", git=False)
    worker = IndexWorker()
    try:
        stats = worker.index(repo, tmp_path / "kb", 0)
        assert stats["n_parsed"] == stats["n_files"] > 0
        assert "validate_login" in set(load_kb(tmp_path / "kb").tables["symbols"]["name"])
        worker._child.kill()  # a parser crashed the worker: the next run starts a new one
        worker._child.wait()
        (repo / "app" / "tax.py").write_text("def vat_rate(country):\n    return 0.2\n")
        assert worker.index(repo, tmp_path / "kb", 0)["n_parsed"] == 1
        assert "vat_rate" in set(load_kb(tmp_path / "kb").tables["symbols"]["name"])
        (tmp_path / "file").write_text("")
        with pytest.raises(CraError, match="not writable"):
            worker.index(repo, tmp_path / "file", 0)
    finally:
        worker.close()


def test_a_search_during_a_reindex_reads_the_changed_files_symbols_from_the_files(tmp_path):
    """An edited file's symbols as they are now, a deleted file's gone, the others' from the KB; a scope applies to
    them too; once the re-index is in, the KB answers alone."""
    repo = make_repo(tmp_path / "demo", git=False)
    with watching(tmp_path, repo) as call:
        before = symbols(call, "validate")[0]["symbols"]
        assert {"app/auth/handler.py", "app/auth/ldap.py"} <= {s["path"] for s in before}
        ldap = repo / "app" / "auth" / "ldap.py"
        ldap.write_text("\n\n" + ldap.read_text().replace("def validate_ldap(", "def validate_directory("))
        (repo / "app" / "auth" / "handler.py").unlink()
        (repo / "app" / "auth" / "sso.py").write_text("def validate_sso(ticket):\n    return bool(ticket)\n")

        data, _ = until(
            lambda: symbols(call, "validate"),
            lambda a: "sso" in str(a[0]["symbols"]) and a[0].get("index", {}).get("state") == "re-indexing",
            DELAY,
        )
        found = {(s["name"], s["path"]) for s in data["symbols"]}
        assert ("validate_sso", "app/auth/sso.py") in found and ("validate_directory", "app/auth/ldap.py") in found
        assert (
            not {p for _, p in found} & {"app/auth/handler.py"} and ("validate_ldap", "app/auth/ldap.py") not in found
        )
        assert data["index"]["state"] == "re-indexing"
        moved = next(s for s in data["symbols"] if s["name"] == "validate_directory")
        assert moved["start_line"] == next(s for s in before if s["path"] == "app/auth/ldap.py")["start_line"] + 2
        scoped = call("search_symbols", query="validate", scope=["app/auth/sso.py"])[0].structured_content
        assert [s["path"] for s in scoped["symbols"]] == ["app/auth/sso.py"]  # (a file the KB does not have yet)
        scoped = call("search_symbols", query="validate", scope=["app/auth"])[0].structured_content
        assert {s["path"] for s in scoped["symbols"]} == {"app/auth/sso.py", "app/auth/ldap.py"}

        data, _ = until(lambda: symbols(call, "validate"), lambda a: "index" not in a[0])
        assert {(s["name"], s["path"]) for s in data["symbols"]} == found  # the re-indexed KB: the same answer
