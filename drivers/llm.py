"""A local Ollama server as a plain callable (prompt -> text), or None when no server answers."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request

DEFAULT_HOST = "http://127.0.0.1:11434"


def ollama_client(model: str, host: str | None = None, timeout: float = 60.0):
    """A callable asking `model` on the local Ollama server, or None (with a warning) if it is not reachable."""
    host = (host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST).rstrip("/")
    if not host.startswith("http"):
        host = "http://" + host
    try:
        urllib.request.urlopen(f"{host}/api/tags", timeout=1.0).read()
    except (urllib.error.URLError, OSError):
        print(f"warning: no Ollama server at {host}; continuing without the LLM", file=sys.stderr)
        return None

    def ask(prompt: str) -> str:
        body = json.dumps({"model": model, "prompt": prompt, "stream": False, "format": "json"}).encode()
        request = urllib.request.Request(f"{host}/api/generate", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())["response"]

    return ask
