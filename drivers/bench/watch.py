"""Benchmark of `cra serve --watch`: how soon an edit is visible to requests, and what a request costs meanwhile.

    python -m cra.drivers.bench.watch [--repo DIR] [--kb DIR] [--edits 5] [--file REL] [--poll 0.1]
                                      [--tool search_symbols|get_context]

Starts the installed `cra serve --watch` on the repository (default Django's sdist, as `make bench` caches it) and
drives it with the SDK's client. After the first requests (KB built or loaded, lexicons warm), each edit appends a
function with a new name to one file and then asks --tool about that name every --poll seconds (a request competes
with the re-index for the interpreter: polling much faster slows what it measures): the edit is visible when the
answer holds the name (read from the file itself while the re-index runs: `search_symbols`' symbols,
`get_context`'s "Edited since the index" section), and in the re-indexed KB once the answer has no `index` note. Reported: edit -> visible and edit -> re-indexed (median and
each), and the requests made meanwhile (they answer from the last good KB with an `index` note instead of waiting
for the re-index). The file is restored afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import anyio

from cra.drivers.bench.scale import EDITABLE, added_function


async def _session(repo: Path, kb: Path | None, edits: int, rel: str, poll: float, tool: str) -> dict:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    args = ["serve", "--repo", str(repo), "--watch", *(["--kb", str(kb)] if kb else [])]
    params = StdioServerParameters(command=str(Path(sys.executable).with_name("cra")), args=args)
    path = repo / rel
    original = path.read_text()
    out: dict = {"visible_s": [], "indexed_s": [], "during_s": [], "notes": 0}

    async def ask(name: str) -> tuple[bool, bool, float]:
        """(the answer holds the name, it has the staleness note, seconds it took)."""
        t0 = time.perf_counter()
        task = f"where is {name} defined"
        arguments = {"query": name, "limit": 1} if tool == "search_symbols" else {"task": task}
        result = await client.call_tool(tool, arguments)
        if result.is_error:
            raise RuntimeError(result.content[0].text)
        data = result.structured_content or {}
        found = (
            bool(data.get("symbols")) if tool == "search_symbols" else name in result.content[0].text.replace(task, "")
        )
        return found, "index" in data, time.perf_counter() - t0

    with open(os.devnull, "w") as err:
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=1800) as client:
            t0 = time.perf_counter()
            await client.call_tool("get_context", {"task": "warm up: load the knowledge base"})
            out["first_s"] = time.perf_counter() - t0
            try:
                for i in range(edits):
                    name = f"cra_watch_probe_{os.getpid()}_{i}"
                    path.write_text(original + added_function(path, name))
                    edited, visible = time.perf_counter(), None
                    while True:
                        found, noted, seconds = await ask(name)
                        if found and visible is None:
                            visible = time.perf_counter() - edited
                            out["visible_s"].append(visible)
                        if found and not noted:  # the re-indexed KB has it
                            out["indexed_s"].append(time.perf_counter() - edited)
                            break
                        out["during_s"].append(seconds)
                        out["notes"] += noted
                        if time.perf_counter() - edited > 120:
                            raise RuntimeError(f"edit {i} not re-indexed after 120 s")
                        await anyio.sleep(poll)
                    await anyio.sleep(1.0)  # (settled before the next edit)
            finally:
                path.write_text(original)
                await anyio.sleep(2.0)  # the watcher re-indexes the restore, so the KB left matches the tree
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m cra.drivers.bench.watch", description=__doc__.splitlines()[0])
    parser.add_argument("--repo", help="repository to serve (default Django's sdist from the bench cache)")
    parser.add_argument("--kb", help="KB directory (default REPO/.cra)")
    parser.add_argument("--edits", type=int, default=5, help="edits measured (default 5)")
    parser.add_argument("--file", default="django/utils/text.py", help="file edited, relative to the repository")
    parser.add_argument("--poll", type=float, default=0.1, help="seconds between requests after an edit (default 0.1)")
    parser.add_argument(
        "--tool", choices=("search_symbols", "get_context"), default="search_symbols", help="the request polled"
    )
    args = parser.parse_args(argv)
    if args.repo:
        repo = Path(args.repo).resolve()
    else:
        from cra.drivers.bench.speed import django_source

        repo = django_source()
    if Path(args.file).suffix not in EDITABLE or not (repo / args.file).is_file():
        sys.exit(f"error: --file {args.file}: pick a source file of {repo} ending in {', '.join(EDITABLE)}")
    out = anyio.run(_session, repo, Path(args.kb) if args.kb else None, args.edits, args.file, args.poll, args.tool)
    ms = lambda s: f"{1000 * s:.0f}"  # noqa: E731
    during = out["during_s"]
    print(f"cra serve --watch on {repo}, {args.edits} edits of {args.file}")
    print(f"first request (KB built or loaded, lexicons warmed): {out['first_s']:.2f} s")
    print(
        f"edit -> visible to {args.tool}: median {ms(statistics.median(out['visible_s']))} ms "
        f"(each: {', '.join(ms(s) for s in out['visible_s'])} ms)"
    )
    print(
        f"edit -> in the re-indexed KB: median {ms(statistics.median(out['indexed_s']))} ms "
        f"(each: {', '.join(ms(s) for s in out['indexed_s'])} ms)"
    )
    if during:
        print(
            f"requests while re-indexing: {len(during)}, median {ms(statistics.median(during))} ms, "
            f"max {ms(max(during))} ms, {out['notes']} with the staleness note"
        )


if __name__ == "__main__":
    main()
