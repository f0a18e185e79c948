"""`cra enrich` against a fake Ollama server on loopback, and without one."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from cra.drivers.cli.main import main
from cra.drivers.kb.store import read_tables
from tests.fixture_repo import make_repo


class _FakeOllama(BaseHTTPRequestHandler):
    def do_GET(self):  # /api/tags: the liveness probe
        self._reply({"models": []})

    def do_POST(self):  # /api/generate
        prompt = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["prompt"]
        answer = (
            "not json" if "invoice" in prompt else json.dumps({"domain": "Security", "concepts": ["Login", "tokens"]})
        )
        self._reply({"response": answer})

    def _reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture()
def indexed(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    assert main(["index", str(repo)]) == 0
    return repo


def test_enrich_overwrites_domain_and_concepts(indexed, capsys):
    server = HTTPServer(("127.0.0.1", 0), _FakeOllama)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        code = main(["enrich", str(indexed), "--model", "m", "--host", f"127.0.0.1:{server.server_port}"])
    finally:
        server.shutdown()
    assert code == 0
    assert "answers rejected" in capsys.readouterr().out
    files = read_tables(indexed / ".cra", ["files"])["files"].set_index("path")
    assert files.loc["app/auth/handler.py", "domain"] == "security"
    assert list(files.loc["app/auth/handler.py", "concepts"]) == ["login", "tokens"]
    assert files.loc["app/billing/invoice.py", "domain"] != "security"  # malformed answer: left as it was

    handler = indexed / "app" / "auth" / "handler.py"
    handler.write_text(handler.read_text() + "\n\ndef logout():\n    return None\n")
    assert main(["index", str(indexed)]) == 0  # labels of unchanged files survive; a changed file is re-derived
    files = read_tables(indexed / ".cra", ["files"])["files"].set_index("path")
    enriched = files[files["domain"] == "security"].index
    assert len(enriched) >= 1 and "app/auth/handler.py" not in enriched
    assert all(list(files.loc[p, "concepts"]) == ["login", "tokens"] for p in enriched)


def test_enrich_without_server_changes_nothing(indexed, capsys):
    before = read_tables(indexed / ".cra", ["files"])["files"]
    assert main(["enrich", str(indexed), "--model", "m", "--host", "127.0.0.1:9"]) == 2
    assert "nothing was changed" in capsys.readouterr().err
    after = read_tables(indexed / ".cra", ["files"])["files"]
    assert before["domain"].tolist() == after["domain"].tolist()


class _FakeOllamaHints(_FakeOllama):
    def do_POST(self):  # answers task analysis with hints naming the billing code
        self.rfile.read(int(self.headers["Content-Length"]))
        self._reply({"response": json.dumps({"keywords": ["invoice", "total"], "symbol_hints": ["total_amount"]})})


def test_llm_assist_enriches_a_vague_task_and_degrades_without_a_server(indexed, capsys, monkeypatch):
    vague = "make it faster"
    server = HTTPServer(("127.0.0.1", 0), _FakeOllamaHints)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{server.server_port}")
    try:
        assert main(["retrieve", vague, "--repo", str(indexed), "--llm-assist", "--format", "json"]) == 0
    finally:
        server.shutdown()
    doc = json.loads(capsys.readouterr().out)
    assert "total_amount" in doc["task"]["symbol_hints"]
    assert doc["files"][0]["path"] == "app/billing/invoice.py"
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")
    assert main(["retrieve", vague, "--repo", str(indexed), "--llm-assist", "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "no Ollama server" in out.err
    assert any("LLM" in w for w in json.loads(out.out)["provenance"]["warnings"])
