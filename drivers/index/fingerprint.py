"""What an index run's output depends on besides the files' contents (kept in the stat cache, `cra.drivers.kb.stat_cache`,
and in each KB's metadata): the index code itself (`code_digest`) and a run's options, git HEAD and walk
(`index_fingerprint`). A change to any of them means the tree must be re-indexed. Light to import (no pandas)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from cra.drivers.common.shipped import shipped_path
from cra.drivers.index.git_history import git_head
from cra.drivers.kb.stat_cache import CACHE_FORMAT

if TYPE_CHECKING:  # (the type only: the walk's modules are not loaded to check a fingerprint)
    from cra.drivers.index.sources import SourcePaths

# the code and tables an index run's output depends on (modules and packages by import name, shipped data folders):
# a change to any of them means the tree must be re-indexed
_CODE = (
    "cra.dataflows.index",
    "cra.dataflows.lexical",
    "cra.dataflows.text",
    "cra.dataflows.retrieval.vocabulary",
    "cra.dataflows.retrieval.word_tables",
    "cra.drivers.index.sources",
    "cra.drivers.index.repo_config",
    "cra.dataflows.path_globs",
    "cra.drivers.index.indexer",
    "cra.drivers.index.dag",
    "cra.drivers.kb.store",
    "cra.drivers.kb.mapped",
    "cra.drivers.kb.check",
    "cra.drivers.kb.word_cache",
)
_DATA = ("conventions",)


@lru_cache(maxsize=1)
def code_digest() -> str:
    """sha1 of every file in _CODE (the index code) and _DATA (the convention tables), in a fixed order."""
    digest = hashlib.sha1()
    named = [(name, _source_root(name)) for name in _CODE] + [(name, shipped_path(name)) for name in _DATA]
    for name, path in named:
        files = sorted(p for p in path.rglob("*") if p.suffix in (".py", ".toml")) if path.is_dir() else [path]
        for file in (f for f in files if f.is_file()):
            relative = file.relative_to(path).as_posix() if path.is_dir() else ""
            digest.update(f"{name}/{relative}".encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def _source_root(module: str) -> Path:
    """A package's folder or a module's file, found without importing it."""
    spec = importlib.util.find_spec(module)
    return Path(next(iter(spec.submodule_search_locations))) if spec.submodule_search_locations else Path(spec.origin)


def index_fingerprint(repo: Path, walk: SourcePaths, history: int, max_file_bytes: int) -> str:
    """What an index run's output depends on besides the files' contents: options, git HEAD (when history is read),
    the tracked paths, the walk's ignored / unlistable counts, `.cra.toml`'s patterns, and the index code itself."""
    facts = {
        "format": CACHE_FORMAT,
        "history": history,
        "max_file_bytes": max_file_bytes,
        "head": git_head(repo) if history > 0 else None,
        "tracked": hashlib.sha1("\0".join(walk.tracked).encode()).hexdigest(),
        "n_ignored": walk.n_ignored,
        "unreadable": sorted(map(list, walk.unreadable)),
        **({"config": walk.config_digest} if walk.config_digest else {}),
    }
    return hashlib.sha1(json.dumps({**facts, "code": code_digest()}, sort_keys=True).encode()).hexdigest()
