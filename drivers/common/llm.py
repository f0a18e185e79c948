"""A local Ollama server as a plain callable (prompt -> text), or None when no server answers."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request

DEFAULT_HOST = "http://127.0.0.1:11434"


def ollama_host(host: str | None = None) -> str:
    """The server's address: the given one, else OLLAMA_HOST, else the local default; with a scheme."""
    host = (host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST).rstrip("/")
    return host if host.startswith("http") else "http://" + host


def ollama_client(model: str, host: str | None = None, timeout: float = 60.0, warn: bool = True):
    """A callable asking `model` on the local Ollama server, or None if it is not reachable (with a warning that
    the caller goes on without it, unless `warn` is off: a caller that cannot go on says so itself)."""
    host = ollama_host(host)
    try:
        urllib.request.urlopen(f"{host}/api/tags", timeout=1.0).read()
    except (urllib.error.URLError, OSError):
        if warn:
            print(f"warning: no Ollama server at {host}; continuing without the LLM", file=sys.stderr)
        return None

    def ask(prompt: str) -> str:
        body = json.dumps({"model": model, "prompt": prompt, "stream": False, "format": "json"}).encode()
        request = urllib.request.Request(
            f"{host}/api/generate", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())["response"]

    return ask
