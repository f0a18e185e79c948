"""Ruby: the tree-sitter walker's `ruby_spec`; `require` / `require_relative` name a file, `.rb` optional (see
`paths`)."""

from __future__ import annotations

import posixpath

from cra.dataflows.index.languages import paths
from cra.dataflows.index.languages.common import RepositoryFiles
from cra.dataflows.index.parsers.ts_ruby import ruby_spec

LANGUAGES = frozenset({"ruby"})
CONVENTIONS = "ruby"  # data/conventions/ruby.toml
SPECS = {"ruby": ruby_spec}
PATH_IMPORTS = True  # its imports name files: its paths join the suffix table


def grammar(language: str):
    """The tree-sitter grammar of Ruby."""
    import tree_sitter_ruby as grammar

    return grammar.language()


class Resolver:
    """Ruby `require "x"` (level 0: also by suffix anywhere) and `require_relative "x"` (level 1)."""

    def __init__(self, repo: RepositoryFiles):
        self.repo = repo

    @staticmethod
    def question(path: str, module: str, package: str, target: str, names: tuple[str, ...], level: int) -> tuple:
        """What `resolve` reads of an import row: the importer's directory, the target and the level."""
        return posixpath.dirname(path), target, level

    def resolve(self, path: str, module: str, package: str, target: str, names: list[str], level: int):
        return paths.file_path(self.repo, path, target, level, (".rb",))
