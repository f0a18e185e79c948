"""A repository's checked-in index settings, `.cra.toml` at its root: what never to index beyond `.gitignore`.

    [index]
    include = ["services/api/**", "libs"]       # only these subtrees (default: everything)
    exclude = ["**/generated/**", "vendor/**"]  # never these, whatever include says

Patterns are `cra.dataflows.path_globs` globs (the meaning `cra retrieve --path` gives them). They apply to tracked
files too: that is their point (vendored or generated code checked in). A malformed file or an unknown key is one
CraError naming the file, the key and the fix. Light to import (no pandas)."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from cra.dataflows.path_globs import glob_regex, normalised_pattern
from cra.drivers.common.errors import CraError

CONFIG_FILE = ".cra.toml"
_KEYS = {"index": ("include", "exclude")}
_EXAMPLE = 'a table [index] with include = ["services/api/**"] and exclude = ["vendor/**"]'


@dataclass(frozen=True)
class RepoConfig:
    """The include and exclude globs of a repository's `.cra.toml` (none when it has no such file)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @property
    def digest(self) -> str | None:
        """What an index run's output depends on in it (None without patterns: a KB indexed before is still fresh)."""
        if not self.include and not self.exclude:
            return None
        text = json.dumps({"include": self.include, "exclude": self.exclude})
        return hashlib.sha1(text.encode()).hexdigest()

    def keeps(self):
        """A function path -> whether the index may read it (included, and not excluded)."""
        include = _compiled(self.include)
        exclude = _compiled(self.exclude)
        return lambda rel: (
            (include is None or include.match(rel) is not None) and (exclude is None or exclude.match(rel) is None)
        )


def _compiled(patterns: tuple[str, ...]):
    if not patterns:
        return None
    return re.compile("^(?:" + "|".join(f"(?:{glob_regex(p)})" for p in patterns) + ")$")


def read_repo_config(root: Path) -> RepoConfig:
    """The root's `.cra.toml` (an empty RepoConfig when there is none); CraError when it cannot be used."""
    path = Path(root) / CONFIG_FILE
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return RepoConfig()
    except (OSError, UnicodeDecodeError) as exc:
        raise CraError(f"Cannot read {path} ({exc}). Fix or remove it; it holds e.g. {_EXAMPLE}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CraError(f"{path} is not valid TOML ({exc}). Fix it; it holds e.g. {_EXAMPLE}") from None
    for table, value in data.items():
        if table in _KEYS["index"]:
            raise CraError(f"{path}: '{table}' must go under the table [index]: write [index] on the line above it.")
        if table not in _KEYS:
            raise CraError(
                f"{path}: unknown key '{table}'. The only table is [index] (keys: include, exclude); "
                f"remove it or fix its name ({_EXAMPLE})."
            )
        if not isinstance(value, dict):
            raise CraError(f"{path}: '{table}' must be a table, written [{table}] ({_EXAMPLE}).")
        for key in value:
            if key not in _KEYS[table]:
                raise CraError(
                    f"{path}: unknown key '{table}.{key}'. [{table}] takes {' and '.join(_KEYS[table])}; remove it "
                    f"or fix its name ({_EXAMPLE})."
                )
    index = data.get("index", {})
    return RepoConfig(_patterns(index, "include", path), _patterns(index, "exclude", path))


def _patterns(table: dict, key: str, path: Path) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CraError(
            f"{path}: 'index.{key}' must be a list of path globs, e.g. {key} = [\"vendor/**\"] (got {value!r})."
        )
    try:
        return tuple(dict.fromkeys(normalised_pattern(v) for v in value))
    except ValueError as exc:
        raise CraError(f"{path}: 'index.{key}': {exc}.") from None
