"""`cra serve`'s `scope` argument (monorepo scoping) on the tools that rank files, through the SDK's own MCP client."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mcp")
from tests.fixture_repo import make_repo  # noqa: E402
from tests.test_serve import session, text  # noqa: E402

TASK = "fix the login password validation: short passwords should return an error"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-scope")
    repo = make_repo(root / "demo")
    with session(root / "home", repo, "--repo", str(repo)) as s:
        yield s


def test_get_context_with_a_scope_ranks_only_that_subtree(served):
    whole = json.loads(text(served.call("get_context", task=TASK, format="json", budget=4000)))
    assert any(r["path"].startswith("app/auth/") for r in whole["provenance"]["scope"])
    doc = json.loads(text(served.call("get_context", task=TASK, format="json", budget=4000, scope=["web", "server"])))
    ranked = [r["path"] for r in doc["provenance"]["scope"]]
    assert ranked and all(p.startswith(("web/", "server/")) for p in ranked), ranked
    assert doc["provenance"]["path_scope"]["paths"] == ["web", "server"]
    assert any("out of scope were not ranked" in w for w in doc["provenance"]["warnings"])


def test_search_symbols_and_explain_file_keep_to_the_scope(served):
    everywhere = served.data("search_symbols", query="validate")
    assert any(s["path"] == "app/auth/handler.py" for s in everywhere["symbols"])
    scoped = served.data("search_symbols", query="validate", scope=["app/auth/ldap.py"])
    assert [s["path"] for s in scoped["symbols"]] == ["app/auth/ldap.py"] and scoped["scope"] == ["app/auth/ldap.py"]
    out = served.data("explain_file", task=TASK, path="app/auth/handler.py", scope=["web"])
    assert out["indexed"] is True and out["in_package"] is False and "outside the path scope (web)" in out["verdict"]


def test_a_scope_naming_nothing_indexed_is_a_tool_error(served):
    for tool, arguments in (
        ("get_context", {"task": TASK}),
        ("search_symbols", {"query": "validate"}),
        ("explain_file", {"task": TASK, "path": "app/utils.py"}),
    ):
        result = served.call(tool, scope=["nowhere/at/all"], **arguments)
        assert result.is_error and "'nowhere/at/all' matches no indexed file" in text(result), tool
    assert not served.call("get_context", task=TASK, scope=["app"]).is_error  # the server keeps answering
