"""`cra enrich`: label files' domain and concepts with a local Ollama model (a command of `cra.drivers.cli.main`'s
table). Imports stay light until run."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `cra enrich`."""
    parser.add_argument("path", nargs="?", default=".", help="repository root (default .)")
    parser.add_argument("--model", required=True, help="Ollama model name, e.g. qwen2.5-coder:7b")
    parser.add_argument("--kb", help="KB directory (default PATH/.cra)")
    parser.add_argument("--limit", type=int, help="label at most N files")
    parser.add_argument("--host", help="Ollama address (default OLLAMA_HOST or 127.0.0.1:11434)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show progress")


def run(args) -> int:
    """Label the KB's files; say how many and how many answers were rejected."""
    from cra.drivers.index.enrich import enrich
    from cra.drivers.kb.location import repo_dir

    result = enrich(
        repo_dir(Path(args.path), "Repository"),
        Path(args.kb) if args.kb else None,
        args.model,
        args.limit,
        args.host,
        args.verbose,
    )
    print(
        f"enriched {result['labelled']} files with {result['model']} ({result['rejected']} answers rejected as malformed)"
    )
    return 0
