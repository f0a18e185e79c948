"""Go: the tree-sitter walker's `go_spec`; an import path is a module path (the `module` line of a go.mod) plus the
directory of a package, every non-test file of which it binds under the package's name."""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict

import pandas as pd

from cra.dataflows.index.languages.common import RepositoryFiles
from cra.dataflows.index.parsers.ts_go import go_spec

LANGUAGES = frozenset({"go"})
CONVENTIONS = "go"  # data/conventions/go.toml
SPECS = {"go": go_spec}
# the files of one directory share one namespace: a name defined in one is used in the others unimported
PACKAGE_SCOPE = frozenset({"go"})
MANIFESTS = ("go.mod",)  # read even without convention tables: no Go import resolves without it
_GO_MODULE = re.compile(r"^\s*module\s+(\S+)", re.MULTILINE)


def grammar(language: str):
    """The tree-sitter grammar of Go."""
    import tree_sitter_go as grammar

    return grammar.language()


def module_directories(manifest_texts: pd.DataFrame) -> dict[str, str]:
    """Go module path -> directory of its go.mod, from the (path, text) rows of the manifests."""
    mods = manifest_texts[manifest_texts["path"].str.rsplit("/", n=1).str[-1] == "go.mod"]
    out = {}
    for path, text in zip(mods["path"], mods["text"]):
        found = _GO_MODULE.search(text)
        if found:
            out[found.group(1)] = posixpath.dirname(path)
    return out


def module_name(path: str, text: str, package_dirs: frozenset[str]) -> str:
    """The package directory: Go imports name directories, not files."""
    return posixpath.dirname(path)


class Resolver:
    """Go `import "module/path/pkg"` (aliased, `_` or `.`): the package directory's files under the module."""

    def __init__(self, repo: RepositoryFiles):
        self.go_modules: dict[str, str] = repo.roots.get("go_modules", {})
        self.go_dirs: dict[str, list[int]] = defaultdict(list)
        for fid, path, _, package in repo.rows(LANGUAGES):
            if not path.endswith("_test.go"):
                self.go_dirs[package].append(fid)

    @staticmethod
    def question(path: str, module: str, package: str, target: str, names: tuple[str, ...], level: int) -> tuple:
        """What `resolve` reads of an import row: its target and names (the module prefixes are the repository's)."""
        return target, names

    def resolve(self, path: str, module: str, package: str, target: str, names: list[str], level: int):
        for prefix, directory in self.go_modules.items():
            if target == prefix or target.startswith(prefix + "/"):
                rel = target[len(prefix) + 1 :]
                dsts = self.go_dirs.get(posixpath.join(directory, rel) if directory else rel, [])
                alias = names[0] if names and names[0] not in ("_", ".") else target.rpartition("/")[2]
                return [(dst, alias, None) for dst in dsts]
        return []
