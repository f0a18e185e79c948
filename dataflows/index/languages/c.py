"""C and C++: the tree-sitter walker's `c_spec` / `cpp_spec` (a `.h` whose text is C++ is C++, see
`parsers.header_language`); `#include "x.h"` names a file (see `paths`)."""

from __future__ import annotations

import posixpath

from cra.dataflows.index.languages import paths
from cra.dataflows.index.languages.common import RepositoryFiles
from cra.dataflows.index.parsers.ts_c import c_spec, cpp_spec

LANGUAGES = frozenset({"c", "cpp"})
CONVENTIONS = "c"  # data/conventions/c.toml (C and C++)
SPECS = {"c": c_spec, "cpp": cpp_spec}
PATH_IMPORTS = True  # its imports name files: its paths join the suffix table


def grammar(language: str):
    """The tree-sitter grammar of C or C++."""
    if language == "c":
        import tree_sitter_c as grammar

        return grammar.language()
    import tree_sitter_cpp as grammar

    return grammar.language()


class Resolver:
    """C / C++ `#include "x.h"` (angle-bracket includes are not imports of the repository)."""

    def __init__(self, repo: RepositoryFiles):
        self.repo = repo

    @staticmethod
    def question(path: str, module: str, package: str, target: str, names: tuple[str, ...], level: int) -> tuple:
        """What `resolve` reads of an import row: the importer's directory, the target and the level."""
        return posixpath.dirname(path), target, level

    def resolve(self, path: str, module: str, package: str, target: str, names: list[str], level: int):
        return paths.file_path(self.repo, path, target, level, ())
