"""Load the per-language convention tables (`data/conventions/*.toml`) for the index and retrieval
dataflows."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.common.shipped import shipped_path


@lru_cache(maxsize=8)
def load_conventions(directory: Path | None = None) -> dict[str, dict]:
    """language -> its convention table, from every TOML file in `directory` (default: the shipped tables; a table
    names its `languages`)."""
    directory = shipped_path("conventions") if directory is None else directory
    tables: dict[str, dict] = {}
    for path in sorted(Path(directory).glob("*.toml")):
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise CraError(f"Convention table {path} cannot be read ({exc}). Fix or remove that file.") from None
        for language in table.get("languages", [path.stem]):
            tables[language] = table
    return tables
