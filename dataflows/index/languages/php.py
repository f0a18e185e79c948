"""PHP: the tree-sitter walker's `php_spec`; `require_once "x.php"` names a file (see `paths`), `use A\\B\\C`
a namespaced class (see `namespaces`)."""

from __future__ import annotations

import posixpath

from cra.dataflows.index.languages import namespaces, paths
from cra.dataflows.index.languages.common import RepositoryFiles
from cra.dataflows.index.parsers.ts_php import php_spec

LANGUAGES = frozenset({"php"})
CONVENTIONS = "php"  # data/conventions/php.toml
SPECS = {"php": php_spec}
PATH_IMPORTS = True  # its imports name files: its paths join the suffix table
NAMESPACE_IMPORTS = True  # its imports name namespaced classes: its top-level symbols join the namespace table


def grammar(language: str):
    """The tree-sitter grammar of PHP."""
    import tree_sitter_php as grammar

    return grammar.language_php()


class Resolver:
    """PHP `require`/`include` rows (a level, or a target ending .php / .inc) by path, `use` rows by namespace."""

    def __init__(self, repo: RepositoryFiles):
        self.repo = repo

    @staticmethod
    def question(path: str, module: str, package: str, target: str, names: tuple[str, ...], level: int) -> tuple:
        """What `resolve` reads of an import row: a path import: the importer's directory, the target and the level; a `use`: the target and names."""
        return (
            (posixpath.dirname(path), target, level) if level or target.endswith((".php", ".inc")) else (target, names)
        )

    def resolve(self, path: str, module: str, package: str, target: str, names: list[str], level: int):
        if level or target.endswith((".php", ".inc")):
            return paths.file_path(self.repo, path, target, level, ())
        return namespaces.namespaced(self.repo, target, names)
