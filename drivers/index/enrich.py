"""`cra enrich`: let a local Ollama model rewrite each file's `domain` and `concepts` (optional, offline).

Without a reachable server it says so and changes nothing. The KB is rewritten as a new version, so an
interrupted run leaves the previous KB live.
"""

from __future__ import annotations

import json
from pathlib import Path

from cra.dataflows.index.schema import TABLES
from cra.drivers.common.errors import CraError
from cra.drivers.common.llm import ollama_client, ollama_host
from cra.drivers.common.progress import Progress
from cra.drivers.kb.store import default_kb_dir, read_metadata, read_tables, write_kb

PROMPT = """You label source files for a code search engine.
File: {path}
Definitions: {symbols}
Answer with JSON only: {{"domain": "<one word: the area of the system>", "concepts": ["<3 to 8 lower-case terms>"]}}"""


def file_labels(answer: str) -> tuple[str, list[str]] | None:
    """(domain, concepts) from a model answer, or None when it is not the JSON asked for."""
    try:
        data = json.loads(answer)
    except ValueError:
        return None
    domain, concepts = (
        data.get("domain") if isinstance(data, dict) else None,
        data.get("concepts") if isinstance(data, dict) else None,
    )
    if not isinstance(domain, str) or not isinstance(concepts, list):
        return None
    return domain.strip().lower(), [str(c).strip().lower() for c in concepts if str(c).strip()][:10]


def enrich(
    repo: Path,
    kb_dir: Path | None,
    model: str,
    limit: int | None = None,
    host: str | None = None,
    verbose: bool = False,
) -> dict:
    """Ask the model about each non-test source file; returns counts of labelled and rejected answers."""
    kb_dir = Path(kb_dir) if kb_dir else default_kb_dir(Path(repo))
    metadata = read_metadata(kb_dir)
    ask = ollama_client(model, host, warn=False)
    if ask is None:
        raise CraError(
            f"No Ollama server answers at {ollama_host(host)}, so nothing was changed. Start `ollama serve` "
            "(or pass --host / set OLLAMA_HOST) and retry."
        )
    tables = read_tables(kb_dir, TABLES)
    files, symbols = tables["files"], tables["symbols"]
    names = symbols[symbols["parent_id"].isna()].groupby("file_id")["name"].agg(lambda s: ", ".join(s.head(30)))
    todo = files[~files["is_test"] & files["file_id"].isin(names.index)]
    if limit:
        todo = todo.head(limit)
    progress = Progress("enriching", enabled=verbose)
    labelled = rejected = 0
    for done, (idx, row) in enumerate(todo.iterrows(), start=1):
        labels = file_labels(ask(PROMPT.format(path=row["path"], symbols=names[row["file_id"]])))
        if labels is None:
            rejected += 1
        else:
            files.at[idx, "domain"], files.at[idx, "concepts"] = labels[0], labels[1]
            labelled += 1
        progress.update(done, len(todo))
    progress.close()
    write_kb(kb_dir, tables, {**metadata, "enriched_with": model})
    return {"labelled": labelled, "rejected": rejected, "model": model}
