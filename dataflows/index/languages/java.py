"""Java: the tree-sitter walker's `java_spec`; an import names a class by package.Class (`file_facts` gives each
file that module name from its `package` line) or, with `.*`, every class of a package."""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict

from cra.dataflows.index.languages.common import RepositoryFiles
from cra.dataflows.index.parsers.ts_java import java_spec

LANGUAGES = frozenset({"java"})
CONVENTIONS = "java"  # data/conventions/java.toml (also Kotlin's table; Kotlin is indexed as text)
SPECS = {"java": java_spec}
# the files of one directory (package) share one namespace: a name defined in one is used in the others unimported
PACKAGE_SCOPE = frozenset({"java", "kotlin"})
_JAVA_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.MULTILINE)


def grammar(language: str):
    """The tree-sitter grammar of Java."""
    import tree_sitter_java as grammar

    return grammar.language()


def module_name(path: str, text: str, package_dirs: frozenset[str]) -> str:
    """package.Class: the file's `package` line and its stem (the stem alone without one)."""
    found = _JAVA_PACKAGE.search(text)
    stem = posixpath.basename(path).rsplit(".", 1)[0]
    return f"{found.group(1)}.{stem}" if found else stem


class Resolver:
    """Java `import a.b.C;`, `import static a.b.C.m;`, `import a.b.*;`."""

    def __init__(self, repo: RepositoryFiles):
        self.java_modules: dict[str, int] = {}
        self.java_packages: dict[str, list[int]] = defaultdict(list)
        for fid, _, module, _ in repo.rows(LANGUAGES):
            self.java_modules.setdefault(module, fid)
            self.java_packages[module.rpartition(".")[0]].append(fid)

    @staticmethod
    def question(path: str, module: str, package: str, target: str, names: tuple[str, ...], level: int) -> tuple:
        """What `resolve` reads of an import row: its target and names."""
        return target, names

    def resolve(self, path: str, module: str, package: str, target: str, names: list[str], level: int):
        if target.endswith("*") or "*" in names:
            return [(dst, None, None) for dst in self.java_packages.get(target.rstrip(".*"), [])]
        for candidate in (target, target.rpartition(".")[0]):
            if candidate in self.java_modules:
                cls = candidate.rpartition(".")[2]
                return [(self.java_modules[candidate], cls, cls)]
        return []
